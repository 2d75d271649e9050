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
//! - [`fpga`]: a BAR-mapped board, or its software model `devsim`
//!   ([`fpga::devsim`]) whose BARs are files.
//! - [`ofi`]: libfabric (loaded at run time): the provider's RMA and
//!   atomics, active messages as fabric messages.
//!
//! Hot paths dispatch statically through [`AnyConduit`]; the [`Conduit`]
//! trait states the contract each transport implements. [`wait::Backoff`]
//! is the spin-then-yield step every wait of the runtime uses.

pub mod aligned;
pub mod bootstrap;
mod cpu_amo;
pub mod error;
pub mod fpga;
pub mod ipv6;
pub mod job;
pub mod ofi;
pub mod smp;
pub mod wait;

pub use aligned::SEGMENT_ALIGN;
pub use error::{ConduitError, Result};
pub use fpga::FpgaConduit;
pub use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};
pub use ipv6::Ipv6Conduit;
pub use job::{ConduitKind, JobEnv};
pub use ofi::OfiConduit;
pub use smp::SmpConduit;

/// How a put-with-signal updates the signal word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalOp {
    /// Store the value.
    Set,
    /// Add the value atomically.
    Add,
}

/// Where a conduit's local segment lives in a file the process can map
/// again: `len` bytes of the segment are the bytes of `fd` from `offset`
/// on (page-aligned). Mapping a page-aligned range of it `MAP_SHARED`
/// elsewhere in the process yields a second view of the same segment
/// bytes: what peers put there appears at both addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentBacking {
    /// An open descriptor of the backing file, owned by the conduit (valid
    /// while it lives; do not close it).
    pub fd: std::os::fd::RawFd,
    /// File offset of segment byte 0 (a multiple of the page size).
    pub offset: u64,
    /// Length of the segment in the file.
    pub len: usize,
}

/// The contract every conduit meets. Offsets are byte offsets into the
/// target PE's segment; every PE's segment has the same length.
///
/// Ordering, completion and progress rules are those of `spec/conduit.md`:
/// - operations from one PE to one target are applied in issue order only
///   across a [`Conduit::fence`]; [`Conduit::quiet`] waits for remote
///   completion of everything issued before it;
/// - blocking `put` returns when the source may be reused, blocking `get`
///   and `atomic` when the result is in hand;
/// - the conduit serves incoming requests whenever the PE is inside the
///   runtime (every call polls); conduits with a progress thread also serve
///   them while the application computes.
pub trait Conduit {
    /// This PE's rank, `0..size()`.
    fn rank(&self) -> usize;

    /// Number of PEs in the job.
    fn size(&self) -> usize;

    /// Length in bytes of every PE's segment.
    fn segment_len(&self) -> usize;

    /// Base address of this PE's own segment in this process.
    fn local_segment(&self) -> *mut u8;

    /// Base address at which this process can load and store `pe`'s segment
    /// directly, where the transport allows it (smp: yes; ipv6, fpga: no).
    fn peer_segment(&self, pe: usize) -> Option<*mut u8>;

    /// Copies `src` into `pe`'s segment at `offset`; returns when `src` may
    /// be reused (not necessarily remotely complete: see `quiet`).
    fn put(&self, pe: usize, offset: usize, src: &[u8]) -> Result<()>;

    /// Starts a put whose completion `quiet` waits for.
    ///
    /// # Safety
    /// `src..src+len` must stay valid and unmodified until the next
    /// [`Conduit::quiet`] returns.
    unsafe fn put_nbi(&self, pe: usize, offset: usize, src: *const u8, len: usize) -> Result<()>;

    /// Copies `dst.len()` bytes from `pe`'s segment at `offset` into `dst`.
    fn get(&self, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()>;

    /// Starts a get whose completion `quiet` waits for.
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid, and must not be read or written by
    /// anyone else, until the next [`Conduit::quiet`] returns.
    unsafe fn get_nbi(&self, pe: usize, offset: usize, dst: *mut u8, len: usize) -> Result<()>;

    /// Performs an atomic on the `width`-wide word at `offset` in `pe`'s
    /// segment and returns the old value (for non-fetching ops the return
    /// value is unspecified). Atomic with respect to every other atomic on
    /// that word from any PE.
    fn atomic(
        &self,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64>;

    /// Puts `src` at `offset` on `pe`, then updates the 64-bit signal word at
    /// `sig_offset` on `pe` so that a PE that observes the signal also
    /// observes the data.
    fn put_signal(
        &self,
        pe: usize,
        offset: usize,
        src: &[u8],
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()>;

    /// Orders: puts and atomics issued before the fence to a given PE are
    /// applied before those issued after it to the same PE.
    fn fence(&self) -> Result<()>;

    /// Waits until every put, get and atomic issued by this PE is complete
    /// at its target.
    fn quiet(&self) -> Result<()>;

    /// Sends an active-message request to `pe`. For Long, `payload` is
    /// written at `offset` in `pe`'s segment before the handler runs.
    fn am_request(
        &self,
        pe: usize,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: usize,
    ) -> Result<()>;

    /// Registers a user AM handler (`gasnet_core::handlers::FIRST_USER..`).
    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()>;

    /// Serves pending incoming messages and checks peer liveness.
    fn poll(&self) -> Result<()>;

    /// The bootstrap barrier over all PEs (not the collective one).
    fn barrier(&self) -> Result<()>;

    /// The bootstrap all-gather: every PE contributes `mine` (at most
    /// 1 KiB) and receives every PE's contribution, indexed by rank.
    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;

    /// Ends the whole job with `status`, from any PE, without a collective.
    fn global_exit(&self, status: i32) -> !;

    /// The file behind this PE's own segment, for a layer that maps part of
    /// it a second time (the C ABI maps the program's static data onto a
    /// region of the segment, see `shmem::static_data`). `None` (the
    /// default) when the segment is not file-backed: such conduits cannot
    /// make static data symmetric.
    fn segment_backing(&self) -> Option<SegmentBacking> {
        None
    }
}

/// Every conduit behind one type, dispatched statically by `match` so that
/// hot paths inline.
// One AnyConduit exists per process; its size does not matter, the
// indirection a Box would add on every call does.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum AnyConduit {
    /// The shared-memory emulator.
    Smp(SmpConduit),
    /// The UDP/IPv6 bridge.
    Ipv6(Ipv6Conduit),
    /// A board (or devsim) reached through its BARs.
    Fpga(FpgaConduit),
    /// libfabric.
    Ofi(OfiConduit),
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyConduit::Smp($c) => $e,
            AnyConduit::Ipv6($c) => $e,
            AnyConduit::Fpga($c) => $e,
            AnyConduit::Ofi($c) => $e,
        }
    };
}

impl AnyConduit {
    /// Attaches to the job `job` describes with a segment of `segment_len`
    /// bytes on every PE, through the conduit `job.conduit` names.
    /// Collective over the job.
    pub fn attach(job: &JobEnv, segment_len: usize) -> Result<AnyConduit> {
        match job.conduit {
            ConduitKind::Smp => Ok(AnyConduit::Smp(SmpConduit::attach(job, segment_len)?)),
            ConduitKind::Ipv6 => Ok(AnyConduit::Ipv6(Ipv6Conduit::attach(job, segment_len)?)),
            ConduitKind::Fpga => Ok(AnyConduit::Fpga(FpgaConduit::attach(job, segment_len)?)),
            ConduitKind::Ofi => Ok(AnyConduit::Ofi(OfiConduit::attach(job, segment_len)?)),
        }
    }

    /// Which conduit this is.
    pub fn kind(&self) -> ConduitKind {
        match self {
            AnyConduit::Smp(_) => ConduitKind::Smp,
            AnyConduit::Ipv6(_) => ConduitKind::Ipv6,
            AnyConduit::Fpga(_) => ConduitKind::Fpga,
            AnyConduit::Ofi(_) => ConduitKind::Ofi,
        }
    }

    /// Leaves the job: a barrier with every PE, then this PE is marked as
    /// finalized. Collective; calling it again does nothing.
    pub fn finalize(&self) -> Result<()> {
        dispatch!(self, c => c.finalize())
    }

    /// Registers a system handler (`1..FIRST_USER`) for the runtime layers.
    pub fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        dispatch!(self, c => c.register_system_handler(index, f))
    }
}

impl Conduit for AnyConduit {
    #[inline]
    fn rank(&self) -> usize {
        dispatch!(self, c => c.rank())
    }
    #[inline]
    fn size(&self) -> usize {
        dispatch!(self, c => c.size())
    }
    #[inline]
    fn segment_len(&self) -> usize {
        dispatch!(self, c => c.segment_len())
    }
    #[inline]
    fn local_segment(&self) -> *mut u8 {
        dispatch!(self, c => c.local_segment())
    }
    #[inline]
    fn peer_segment(&self, pe: usize) -> Option<*mut u8> {
        dispatch!(self, c => c.peer_segment(pe))
    }
    #[inline]
    fn put(&self, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        dispatch!(self, c => c.put(pe, offset, src))
    }
    #[inline]
    unsafe fn put_nbi(&self, pe: usize, offset: usize, src: *const u8, len: usize) -> Result<()> {
        // SAFETY: the caller upholds put_nbi's contract, passed on unchanged.
        dispatch!(self, c => unsafe { c.put_nbi(pe, offset, src, len) })
    }
    #[inline]
    fn get(&self, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        dispatch!(self, c => c.get(pe, offset, dst))
    }
    #[inline]
    unsafe fn get_nbi(&self, pe: usize, offset: usize, dst: *mut u8, len: usize) -> Result<()> {
        // SAFETY: the caller upholds get_nbi's contract, passed on unchanged.
        dispatch!(self, c => unsafe { c.get_nbi(pe, offset, dst, len) })
    }
    #[inline]
    fn atomic(
        &self,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        dispatch!(self, c => c.atomic(pe, offset, op, width, operand, compare))
    }
    #[inline]
    fn put_signal(
        &self,
        pe: usize,
        offset: usize,
        src: &[u8],
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        dispatch!(self, c => c.put_signal(pe, offset, src, sig_offset, sig_op, sig_value))
    }
    #[inline]
    fn fence(&self) -> Result<()> {
        dispatch!(self, c => c.fence())
    }
    #[inline]
    fn quiet(&self) -> Result<()> {
        dispatch!(self, c => c.quiet())
    }
    fn am_request(
        &self,
        pe: usize,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: usize,
    ) -> Result<()> {
        dispatch!(self, c => c.am_request(pe, category, handler, args, payload, offset))
    }
    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        dispatch!(self, c => c.register_handler(index, f))
    }
    fn poll(&self) -> Result<()> {
        dispatch!(self, c => c.poll())
    }
    fn barrier(&self) -> Result<()> {
        dispatch!(self, c => c.barrier())
    }
    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        dispatch!(self, c => c.exchange(mine))
    }
    fn global_exit(&self, status: i32) -> ! {
        dispatch!(self, c => c.global_exit(status))
    }
    fn segment_backing(&self) -> Option<SegmentBacking> {
        dispatch!(self, c => c.segment_backing())
    }
}

/// Writes `line` and a newline to standard error with a single `write(2)`, so
/// lines from PEs sharing one stderr never interleave (a write of at most
/// `PIPE_BUF` bytes to a pipe is atomic). Use through [`report!`].
pub fn report_line(line: &str) {
    use std::io::Write;
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
