//! The protocol of a board's compute core: requests to handlers
//! [`handlers::FIRST_COMPUTE`]`..=255` (224..=255) that a board with
//! `CAPS.COMPUTE` (`spec/registers.md` §4.1) runs on the board instead of
//! delivering them to its host. A host (or a peer board) only needs this
//! module to use the core; the board model implements it.
//!
//! # GEMM with Automatic Result Transfer
//!
//! FSHMEM's case study: a GEMM tile engine that, while a tile is being
//! computed, sends every `art_every` results to a peer board with puts, so
//! the product streams to its consumer during the computation instead of
//! after it.
//!
//! Matrices are `f64`, row-major, in the board's segment (a host or a peer
//! puts them there first). One Short request runs one tile:
//!
//! | handler | args |
//! |---|---|
//! | [`GEMM_RUN`] (224) | `a, b, c, m, n, k, art_every, art_peer, art_dst, done_handler, job` ([`GEMM_ARGS`] of them) |
//!
//! It computes `C[m×n] = A[m×k] × B[k×n]` with A at segment offset `a`,
//! B at `b` and C written at `c` (offsets are 32-bit). With `art_every > 0`
//! and `art_peer !=` [`ART_NONE`], each run of `art_every` consecutive
//! results (row-major order; the last run may be shorter) is put to board
//! `art_peer` at segment offset `art_dst + 8 × index` as soon as it is
//! computed. When every result is computed and every ART put acknowledged,
//! the core replies to the requester with a Short reply to `done_handler`
//! carrying `[job, status, results]` (`status` [`GEMM_OK`], [`GEMM_BAD`] for
//! a bad range or shape, [`GEMM_ART_FAILED`] when an ART put failed). Tiles
//! queue and run one after another.
//!
//! # Requests the core cannot run
//!
//! A request the core cannot answer — to a compute handler it does not
//! implement, with other than [`GEMM_ARGS`] arguments, or naming a
//! `done_handler` that is not a user handler below 224 — is dropped and
//! reported by the board: `ERR_STATUS.COMPUTE` (`spec/registers.md` §4.4,
//! interface 1.2), `ERR_INFO` describing it as [`Rejected::info`] encodes
//! it. (A request it can answer but not run, a bad range or shape, gets a
//! [`GEMM_BAD`] reply instead.) A host that sees the bit ends the job
//! naming the sender and the handler; nothing is dropped silently.
//!
//! [`handlers::FIRST_COMPUTE`]: crate::handlers::FIRST_COMPUTE

use crate::handlers::{FIRST_COMPUTE, FIRST_USER};
use crate::types::NodeId;
use std::fmt;

/// Handler index of a GEMM tile request.
pub const GEMM_RUN: u8 = FIRST_COMPUTE;
/// Arguments of a [`GEMM_RUN`] request.
pub const GEMM_ARGS: usize = 11;
/// `art_peer` value meaning "no automatic result transfer".
pub const ART_NONE: u32 = u32::MAX;
/// Reply status: the tile was computed (and every ART put acknowledged).
pub const GEMM_OK: u32 = 0;
/// Reply status: a matrix lies outside the segment, or a shape overflows.
pub const GEMM_BAD: u32 = 1;
/// Reply status: an ART put failed.
pub const GEMM_ART_FAILED: u32 = 2;

/// Why a compute core dropped a request (bits 31:29 of `ERR_INFO` with
/// `ERR_STATUS.COMPUTE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reject {
    /// The core implements no handler at that index (GEMM has only
    /// [`GEMM_RUN`]). Code 1.
    NoSuchHandler,
    /// The number of arguments is not the protocol's ([`GEMM_ARGS`] for
    /// [`GEMM_RUN`]). Code 2.
    Arguments,
    /// The `done_handler` argument is not a user handler the host can run
    /// (`FIRST_USER..FIRST_COMPUTE`, 64..=223). Code 3.
    ReplyHandler,
    /// A code this build does not know (0, or 4..=7: another kernel's).
    Other(u8),
}

impl Reject {
    /// The 3-bit code.
    pub fn code(self) -> u8 {
        match self {
            Reject::NoSuchHandler => 1,
            Reject::Arguments => 2,
            Reject::ReplyHandler => 3,
            Reject::Other(c) => c & 7,
        }
    }

    /// The reason of a 3-bit code (higher bits ignored).
    pub fn from_code(c: u8) -> Reject {
        match c & 7 {
            1 => Reject::NoSuchHandler,
            2 => Reject::Arguments,
            3 => Reject::ReplyHandler,
            o => Reject::Other(o),
        }
    }
}

/// A request a compute core dropped, as `ERR_INFO` carries it with
/// `ERR_STATUS.COMPUTE`: bits 15:0 the sending node, 23:16 the handler,
/// 28:24 the number of arguments, 31:29 the [`Reject`] code.
///
/// ```
/// use gasnet_core::compute::{Reject, Rejected};
/// let r = Rejected { src: 3, handler: 224, nargs: 1, reason: Reject::Arguments };
/// assert_eq!(r.info(), 0x41E0_0003);
/// assert_eq!(Rejected::from_info(r.info()), r);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rejected {
    /// The node that sent the request.
    pub src: NodeId,
    /// The handler it named (224..=255).
    pub handler: u8,
    /// How many arguments it carried (0..=16).
    pub nargs: u8,
    /// Why the core could not run it.
    pub reason: Reject,
}

impl Rejected {
    /// The `ERR_INFO` word (a count of arguments above 31 is stored as 31).
    pub fn info(&self) -> u32 {
        self.src as u32
            | (self.handler as u32) << 16
            | (self.nargs.min(31) as u32) << 24
            | (self.reason.code() as u32) << 29
    }

    /// Decodes an `ERR_INFO` word (every value decodes).
    pub fn from_info(info: u32) -> Rejected {
        Rejected {
            src: info as u16,
            handler: (info >> 16) as u8,
            nargs: ((info >> 24) & 31) as u8,
            reason: Reject::from_code((info >> 29) as u8),
        }
    }

    /// "1 argument", "11 arguments".
    pub fn arguments(&self) -> String {
        match self.nargs {
            1 => "1 argument".to_string(),
            n => format!("{n} arguments"),
        }
    }

    /// The reason in words, for the GEMM core of this module.
    pub fn why(&self) -> String {
        match self.reason {
            Reject::NoSuchHandler => format!(
                "the compute core implements only handler {GEMM_RUN} (a GEMM tile), not {}",
                self.handler
            ),
            Reject::Arguments => format!(
                "a GEMM tile request (handler {GEMM_RUN}) takes {GEMM_ARGS} arguments, this one had {}",
                self.nargs
            ),
            Reject::ReplyHandler => format!(
                "its reply handler (argument 9) is not a user handler ({FIRST_USER}..={})",
                FIRST_COMPUTE - 1
            ),
            Reject::Other(c) => format!("reason code {c}"),
        }
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a request from node {} to compute handler {} ({}): {}",
            self.src,
            self.handler,
            self.arguments(),
            self.why()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_info_word_decodes_and_round_trips_its_fields() {
        for info in [0u32, u32::MAX, 0x2000_0000, 0xE0FF_FFFF, 0x1234_5678] {
            let r = Rejected::from_info(info);
            assert_eq!(Rejected::from_info(r.info()), r, "{info:#x}");
            assert!(!r.why().is_empty());
        }
        let r = Rejected {
            src: 65535,
            handler: 255,
            nargs: 16,
            reason: Reject::ReplyHandler,
        };
        assert_eq!(Rejected::from_info(r.info()), r);
        assert!(r.to_string().contains("node 65535") && r.to_string().contains("handler 255"));
    }
}
