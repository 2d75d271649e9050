//! # devsim
//!
//! A software fshmem board whose BARs are files: one devsim process models
//! one board (one node of the job). Its BARs are two files in the board's
//! directory, `bar0` (64 KiB: registers and rings, `spec/registers.md`
//! §3–4) and `bar2` (the DDR window, sparse, sized by `WINDOW_SIZE`); a host
//! maps them exactly as it maps a PCI device's `resource0` /
//! `resource2_wc`, so the `fpga` conduit cannot tell them apart, and it
//! learns everything it knows of the board — failures included — from
//! those registers, as it would from a real board. Its core is the
//! reference engine of `gasnet-core` ([`gasnet_core::engine::Engine`]) over
//! a [`window::Window`] on the segment, and its two link ports carry
//! `spec/wire.md` packets to the other boards over the reliable transport
//! of `gasnet-core` ([`link`]).
//!
//! This crate depends on `gasnet-core` only: the host runtime (`conduits`,
//! `shmem`, `libshmem.so`) does not contain the board model.
//!
//! | module | what |
//! |---|---|
//! | [`board`] | the board: registers, the board loop, command, completion and receive queues |
//! | [`window`] | the segment as the engine sees it |
//! | [`bar`] | the board side of the BAR files |
//! | [`link`] | board links: sockets under the reliable transport |
//! | [`compute`] | the on-board compute core (GEMM with Automatic Result Transfer) |
//! | [`launch`] | `devsim board` and `devsim launch`, the processes `oshrun` starts |

pub mod bar;
pub mod board;
pub mod compute;
pub mod launch;
pub mod link;
pub mod window;

pub use board::{BoardModel, DEFAULT_WINDOW, Fault};

/// Writes `line` and a newline to standard error with a single `write(2)`,
/// so lines from several boards sharing one stderr never interleave.
pub fn report(line: &str) {
    use std::io::Write;
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    // Nothing useful can be done if stderr is gone.
    let _ = std::io::stderr().lock().write_all(buf.as_bytes());
}
