//! # conduits
//!
//! The transports of fshmem behind one contract (`spec/conduit.md`):
//!
//! - [`smp`]: the shared-memory emulator — each PE a process, every PE's
//!   segment in POSIX shared memory mapped by all, puts as memcpy, atomics as
//!   CPU atomics. The default.
//! - [`ipv6`]: the UDP/IPv6 bridge carrying `spec/wire.md` packets over a
//!   reliable per-peer transport, with a progress thread per PE; spans
//!   hosts, bootstrapped by [`bootstrap`] (rendezvous, PMI-1, Slurm).
//! - [`fpga`]: a BAR-mapped board, or its software model (the `devsim`
//!   crate and program, which this crate does not contain) whose BARs are
//!   files.
//! - [`ofi`]: libfabric (loaded at run time): the provider's RMA and
//!   atomics, active messages as fabric messages.
//! - [`route`]: a job whose PEs span hosts, routed by target PE: smp
//!   between PEs of one host, a network conduit (ipv6, ofi) between hosts.
//!
//! Each conduit sits behind a cargo feature of the same name (all on by
//! default). The contract (`spec/conduit.md`, version 2) is a few narrow
//! traits ([`contract`]); [`AnyConduit`] puts the built conduits behind one
//! type dispatched statically, generated from the one list in the
//! `registry` module. Every setting arrives typed ([`config::Settings`]);
//! conduits do not read the environment. [`wait::Backoff`] is the
//! spin-then-yield step every wait of the runtime uses.

pub mod aligned;
#[cfg(any(feature = "smp", feature = "ipv6", feature = "ofi", feature = "fpga"))]
mod backing;
pub mod bootstrap;
pub mod config;
pub mod contract;
#[cfg(any(feature = "smp", feature = "ipv6", feature = "ofi"))]
mod cpu_amo;
#[cfg(any(feature = "ipv6", feature = "ofi", feature = "fpga"))]
mod ctxq;
pub mod error;
#[cfg(feature = "fpga")]
pub mod fpga;
#[cfg(feature = "ipv6")]
pub mod ipv6;
pub mod job;
pub mod job_lock;
mod kinds;
pub mod liveness;
#[cfg(feature = "ofi")]
pub mod ofi;
mod registry;
pub mod route;
pub mod segmem;
#[cfg(any(feature = "ipv6", feature = "ofi"))]
mod segment;
#[cfg(feature = "smp")]
pub mod smp;
pub mod wait;

pub use aligned::SEGMENT_ALIGN;
pub use config::Settings;
pub use contract::{
    ActiveMessages, Conduit, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest,
    Segments, SignalOp,
};
pub use error::{ConduitError, Result};
#[cfg(feature = "fpga")]
pub use fpga::FpgaConduit;
pub use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};
#[cfg(feature = "ipv6")]
pub use ipv6::Ipv6Conduit;
pub use job::JobEnv;
pub use kinds::ConduitKind;
#[cfg(feature = "ofi")]
pub use ofi::OfiConduit;
pub use registry::AnyConduit;
#[cfg(feature = "smp")]
pub use smp::SmpConduit;

/// The contract's traits, for `use conduits::prelude::*`: calling a
/// conduit's methods needs the trait that declares them in scope.
pub mod prelude {
    pub use crate::contract::{
        ActiveMessages, Conduit, CtxId, JobBootstrap, Lifecycle, Rma, Segments, SignalOp,
    };
}

/// Writes `line` and a newline to standard error with a single `write(2)`, so
/// lines from PEs sharing one stderr never interleave (a write of at most
/// `PIPE_BUF` bytes to a pipe is atomic). Use through [`report!`].
pub fn report_line(line: &str) {
    use std::io::Write;
    // A PE the launcher is stopping reports nothing it finds from then on
    // (see `wait::hold_if_stopping`).
    wait::hold_if_stopping();
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    // Nothing useful can be done if stderr is gone.
    let _ = std::io::stderr().lock().write_all(buf.as_bytes());
}

/// Like `eprintln!`, but the whole line reaches stderr in one write; every
/// diagnostic a PE or the launcher prints goes through it.
///
/// ```
/// conduits::report!("PE {}: shmem_put: target PE {} out of range", 0, 9);
/// ```
#[macro_export]
macro_rules! report {
    ($($arg:tt)*) => {
        $crate::report_line(&::std::format!($($arg)*))
    };
}
