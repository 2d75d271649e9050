//! # gasnet-core
//!
//! The protocol layer of fshmem, with no I/O: the GASNet active-message model
//! (Short/Medium/Long × Request/Reply, a handler table indexed by opcode), the
//! two bit-exact encodings of `spec/` — the packet that travels between cores
//! ([`wire`]) and the command descriptor and completion entry a host exchanges
//! with a board ([`cmd`]) — and the reference core engine ([`engine`]), the
//! software twin of the hardware GASNet core that software conduits and the
//! board model share.
//!
//! Also the pieces of protocol logic every transport shares, still without
//! I/O: the reliable link's state machine ([`reliable`]: sequence numbers,
//! acknowledgements, retransmission), the test impairment of datagram
//! streams ([`impair`]), the protocol of a board's compute core
//! ([`compute`]) and the typed configuration tables of every layer
//! ([`config`]).
//!
//! Nothing here knows OpenSHMEM and nothing here performs I/O.

pub mod am;
pub mod amo;
pub mod cmd;
pub mod compute;
pub mod config;
pub mod crc;
pub mod engine;
pub mod hash;
pub mod impair;
pub mod pool;
pub mod reliable;
pub mod spec_examples;
pub mod types;
pub mod wire;

pub use am::{AmError, AmMessage, HandlerFn, HandlerTable, ReplySink, Token};
pub use amo::{AmoOp, AmoWidth};
pub use types::*;
