//! The fshmem GASNet core in RTL, and a safe Rust driver for its Verilator
//! model.
//!
//! `hw/rtl` is the synthesizable Verilog of the board core that
//! `spec/registers.md` and `spec/wire.md` specify (see `hw/README.md` for
//! its blocks, and `hw/scripts` for lint and synthesis). This crate drives a
//! Verilator model of its top, `fshmem_core`, cycle by cycle:
//!
//! - [`Inputs`] and [`Outputs`] are the top's ports for one clock cycle;
//! - [`memory::AxiMemory`] serves the AXI4 memory port from any [`Dram`]
//!   (a byte array, a board's BAR2 file) with a configurable latency;
//! - [`link`] turns the AXI4-Stream link ports into whole frames and back;
//! - `Board` (with the `verilator` feature) ties the model, its memory and
//!   its two ports together and offers BAR0 loads and stores as a host does;
//!   `sim` brings boards up as a host does and joins several into a network,
//!   for tests and benchmarks.
//!
//! The model itself is built only with the `verilator` feature (Verilator 5
//! and a C++ compiler); without it [`MODEL_AVAILABLE`] is false and the
//! crate holds only the model-independent parts, so the default workspace
//! build needs neither.

pub mod link;
pub mod memory;
mod signals;

#[cfg(feature = "verilator")]
mod board;
#[cfg(feature = "verilator")]
mod model;
#[cfg(feature = "verilator")]
pub mod sim;

#[cfg(feature = "verilator")]
pub use board::{Board, BoardConfig, Event, KernelRequest};
pub use memory::Dram;
#[cfg(feature = "verilator")]
pub use model::{Core, ModelError};
pub use signals::{BEAT, Inputs, Outputs};

/// Whether this build contains the Verilator model (the `verilator` feature).
pub const MODEL_AVAILABLE: bool = cfg!(feature = "verilator");

/// What to say when the model is asked for but was not built.
pub const MODEL_MISSING: &str = "the RTL core model was not built: build with the `verilator` \
     feature of fshmem-hw (needs Verilator 5 and a C++ compiler; Debian: apt-get install verilator)";
