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
//! [`handlers::FIRST_COMPUTE`]: crate::handlers::FIRST_COMPUTE

use crate::handlers::FIRST_COMPUTE;

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
