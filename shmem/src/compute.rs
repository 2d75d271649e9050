//! The fpga boards' compute core from a shmem program: the GEMM tile
//! engine with Automatic Result Transfer (ART), FSHMEM's case study.
//!
//! A compute request is an active message to a handler the board runs
//! itself (`gasnet_core::compute`): `C[m×n] = A[m×k] × B[k×n]` over `f64`
//! matrices held in symmetric objects on the board's PE, with every
//! `every` results put to a symmetric object on another PE *while* the
//! tile is computed. [`Shmem::compute`] (collective) registers the handler
//! the board's "tile done" reply names; [`Compute::gemm`] runs one tile and
//! waits for it, [`Compute::gemm_start`] and [`Compute::wait`] overlap
//! tiles with other work. Only the `fpga` conduit has a compute core;
//! elsewhere, and on boards without one (`CAPS.COMPUTE` 0, devsim's
//! `FSHMEM_DEVSIM_COMPUTE=0`), [`Shmem::compute`] fails naming the PE.
//!
//! The core's handlers, 224..=255, are never user handlers: registration
//! never hands them out, the C calls `shmemx_am_*` refuse them (naming the
//! PE, the call and the number, and pointing here), and a request the
//! board's core cannot parse — which only a program below this layer can
//! send — is reported by the board (`ERR_STATUS.COMPUTE`,
//! `spec/registers.md` §4.4.1) and fails the receiving PE's next call,
//! naming the sender and the handler.
//!
//! ```no_run
//! use shmem::compute::{Art, Gemm};
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), 8);
//! let a = sh.calloc::<f64>(n * n)?;
//! let b = sh.calloc::<f64>(n * n)?;
//! let c = sh.calloc::<f64>(n * n)?;
//! let full = sh.calloc::<f64>(n * n)?;
//! a.fill(1.0);
//! b.fill(2.0);
//! let core = sh.compute()?;
//! let tile = Gemm { a: (&a, 0), b: (&b, 0), c: (&c, 0), m: n, n, k: n,
//!                   art: Some(Art { pe: 0, dst: (&full, 0), every: 16 }) };
//! core.gemm(me, &tile)?;              // on this PE's board
//! assert_eq!(c.read(0), 2.0 * n as f64);
//! # Ok::<(), shmem::ShmemError>(())
//! ```

use crate::Shmem;
use crate::am::{AmHandler, Message, Token};
use crate::error::{Result, ShmemError};
use crate::runtime::Runtime;
use crate::sym::SymVec;
use conduits::{ActiveMessages, ConduitKind};
use gasnet_core::compute::{ART_NONE, GEMM_ART_FAILED, GEMM_BAD, GEMM_OK, GEMM_RUN};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// One GEMM tile: `C = A × B`, each matrix an `f64` symmetric object and
/// the element where the matrix starts (row-major), on the board's PE.
#[derive(Clone, Copy, Debug)]
pub struct Gemm<'a> {
    /// `A` (`m × k`).
    pub a: (&'a SymVec<'a, f64>, usize),
    /// `B` (`k × n`).
    pub b: (&'a SymVec<'a, f64>, usize),
    /// `C` (`m × n`), written by the board.
    pub c: (&'a SymVec<'a, f64>, usize),
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
    /// Columns of `A`, rows of `B`.
    pub k: usize,
    /// Where results stream during the computation, if anywhere.
    pub art: Option<Art<'a>>,
}

/// Automatic Result Transfer: every `every` results of `C` (row-major) are
/// put to PE `pe`'s copy of `dst.0` from element `dst.1` on, as they are
/// computed.
#[derive(Clone, Copy, Debug)]
pub struct Art<'a> {
    /// The PE whose copy receives the results.
    pub pe: usize,
    /// The object and first element receiving `C`.
    pub dst: (&'a SymVec<'a, f64>, usize),
    /// Results per transfer (at least 1).
    pub every: usize,
}

/// A started tile, to [`Compute::wait`] for.
#[derive(Debug, PartialEq, Eq, Hash)]
#[must_use = "wait for the tile with Compute::wait"]
pub struct Ticket(u32);

/// Replies of tiles by job number: `(status, results)`.
#[derive(Default)]
struct Done {
    next: AtomicU32,
    replies: Mutex<HashMap<u32, (u32, u32)>>,
}

/// The compute cores of the job's boards, made by [`Shmem::compute`].
pub struct Compute<'s> {
    rt: &'s Runtime,
    done: AmHandler,
    state: Arc<Done>,
}

impl std::fmt::Debug for Compute<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compute")
            .field("done_handler", &self.done)
            .finish()
    }
}

impl Shmem {
    /// Makes the boards' compute cores usable from this program:
    /// registers the handler their replies name. Collective, as
    /// [`Shmem::am_register`]. Errors on a conduit without compute cores
    /// (every conduit but `fpga`).
    pub fn compute(&self) -> Result<Compute<'_>> {
        const CALL: &str = "shmem::compute";
        let rt = self.rt();
        let kind = rt.conduit.kind();
        if kind != ConduitKind::Fpga {
            return Err(ShmemError::Invalid {
                pe: rt.my_pe(),
                call: CALL,
                reason: format!(
                    "the {} conduit has no compute cores (run with oshrun --conduit fpga)",
                    kind.name()
                ),
            });
        }
        if !rt.conduit.compute_cores() {
            return Err(ShmemError::Invalid {
                pe: rt.my_pe(),
                call: CALL,
                reason: "this PE's board has no compute core (its CAPS.COMPUTE is 0)".into(),
            });
        }
        let state = Arc::new(Done::default());
        let st = state.clone();
        let done = self.am_register(move |_t: &mut Token<'_, '_>, m: &Message<'_>| {
            // args: job, status, results
            if let [job, status, results, ..] = *m.args {
                st.replies
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(job, (status, results));
                crate::runtime::TILES_RUNNING.fetch_sub(1, Ordering::AcqRel);
            }
        })?;
        Ok(Compute { rt, done, state })
    }
}

impl Compute<'_> {
    fn bad(&self, call: &'static str, reason: String) -> ShmemError {
        ShmemError::Invalid {
            pe: self.rt.my_pe(),
            call,
            reason,
        }
    }

    /// A 32-bit segment offset, as the compute protocol carries them.
    fn off32(&self, call: &'static str, off: usize, what: &str) -> Result<u32> {
        u32::try_from(off).map_err(|_| {
            self.bad(
                call,
                format!("{what} lies at segment offset {off:#x}, beyond the compute core's 4 GiB"),
            )
        })
    }

    /// Starts tile `g` on PE `pe`'s board; returns at once.
    pub fn gemm_start(&self, pe: usize, g: &Gemm<'_>) -> Result<Ticket> {
        const CALL: &str = "shmem::compute gemm";
        let (m, n, k) = (g.m, g.n, g.k);
        let cells = |r: usize, c: usize| {
            r.checked_mul(c)
                .ok_or_else(|| self.bad(CALL, format!("a {r} x {c} matrix overflows")))
        };
        let a = g.a.0.range(g.a.1, cells(m, k)?, CALL)?;
        let b = g.b.0.range(g.b.1, cells(k, n)?, CALL)?;
        let c = g.c.0.range(g.c.1, cells(m, n)?, CALL)?;
        let (every, peer, dst) = match g.art {
            None => (0, ART_NONE, 0),
            Some(art) => {
                self.rt.check_pe(art.pe, CALL)?;
                if art.every == 0 {
                    return Err(self.bad(CALL, "ART every 0 results".to_string()));
                }
                let dst = art.dst.0.range(art.dst.1, cells(m, n)?, CALL)?;
                (art.every, art.pe as u32, dst)
            }
        };
        let dims = |v: usize, what: &str| {
            u32::try_from(v).map_err(|_| self.bad(CALL, format!("{what} = {v} exceeds 32 bits")))
        };
        let job = self.state.next.fetch_add(1, Ordering::Relaxed);
        let args = [
            self.off32(CALL, a, "A")?,
            self.off32(CALL, b, "B")?,
            self.off32(CALL, c, "C")?,
            dims(m, "m")?,
            dims(n, "n")?,
            dims(k, "k")?,
            dims(every, "ART every")?,
            peer,
            self.off32(CALL, dst, "the ART destination")?,
            u32::from(self.done.index()),
            job,
        ];
        // Counted before it can be replied to.
        crate::runtime::TILES_RUNNING.fetch_add(1, Ordering::AcqRel);
        if let Err(e) = crate::am::request(
            self.rt,
            CALL,
            pe,
            gasnet_core::Category::Short,
            crate::am::handler_from_index(GEMM_RUN),
            &args,
            &[],
            0,
        ) {
            crate::runtime::TILES_RUNNING.fetch_sub(1, Ordering::AcqRel);
            return Err(e);
        }
        Ok(Ticket(job))
    }

    /// Waits until tile `t` is computed and every ART put acknowledged;
    /// returns the number of results.
    pub fn wait(&self, t: Ticket) -> Result<usize> {
        const CALL: &str = "shmem::compute wait";
        let rt = self.rt;
        rt.not_in_handler(CALL)?;
        rt.poll_until(
            CALL,
            || {
                let got = self
                    .state
                    .replies
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&t.0);
                match got {
                    Some((GEMM_OK, results)) => Ok(Some(results as usize)),
                    Some((status, _)) => {
                        let why = match status {
                            GEMM_BAD => "a matrix lies outside the board's segment".to_string(),
                            GEMM_ART_FAILED => "an ART put failed".to_string(),
                            s => format!("status {s}"),
                        };
                        Err(self.bad(CALL, format!("tile {} failed: {why}", t.0)))
                    }
                    None => Ok(None),
                }
            },
            || format!("the compute core's reply to tile {}", t.0),
        )
    }

    /// Runs tile `g` on PE `pe`'s board and waits for it (results streamed
    /// by ART are complete at their PE on return); returns the number of
    /// results.
    pub fn gemm(&self, pe: usize, g: &Gemm<'_>) -> Result<usize> {
        let t = self.gemm_start(pe, g)?;
        self.wait(t)
    }
}
