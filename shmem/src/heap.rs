//! Symmetric allocation: the collective steps that allocate, free and
//! resize heap blocks on every PE ([`crate::alloc`] is the allocator of one
//! PE), and the checks that every PE made the same call (always on: a tag
//! compared on PE 0; with `SHMEM_DEBUG`: the whole call, against PE 0's).
//! Each step ends with a world barrier ([`crate::collective`]).

use crate::error::{Result, ShmemError, call_code, call_name};
use crate::pod::bytes_of_mut;
use crate::runtime::{Runtime, layout};
use conduits::prelude::*;
use conduits::{AmoOp, AmoWidth};
use std::sync::atomic::{AtomicU64, Ordering};

/// Proof of [`Runtime::collective_begin`], consumed by
/// [`Runtime::collective_end`] after the step's barrier.
#[must_use]
pub(crate) struct CollectiveStep {
    step: u64,
}

/// Collective allocation steps this process took ([`Runtime::collective_begin`]).
static ALLOC_STEP: AtomicU64 = AtomicU64::new(0);

impl Runtime {
    /// Allocates `bytes` bytes aligned to `align` on the heap of every PE
    /// (collective: the allocation check with `SHMEM_DEBUG`, then a
    /// barrier); zeroes them if `zero`. Returns the segment offset.
    pub(crate) fn alloc_bytes(
        &self,
        call: &'static str,
        bytes: usize,
        align: usize,
        zero: bool,
        what: &str,
    ) -> Result<usize> {
        let alloc = self
            .heap()
            .alloc(bytes, align)
            .map_err(|source| ShmemError::Alloc {
                pe: self.my_pe(),
                call,
                source,
            });
        let step = match self.collective_begin(call, bytes as u64, align as u64) {
            Ok(s) => s,
            Err(e) => {
                if let Ok(off) = alloc {
                    let _ = self.heap().free(off);
                }
                return Err(e);
            }
        };
        let heap_off = match alloc {
            Ok(off) => off,
            Err(e) => {
                // Still collective: the other PEs may have succeeded (with
                // another size), and wait in the barrier.
                self.barrier_all(call)?;
                self.collective_end(call, step)?;
                return Err(e);
            }
        };
        let off = layout::HEAP + heap_off;
        if zero {
            // SAFETY: the block `off..off+bytes` lies in this PE's heap, was
            // just allocated and is reached by raw pointer only; the stores
            // are relaxed atomics (`segmem`), so no access of this process
            // races with them, and no peer writes the block before the
            // barrier below, which every PE passes only after allocating it.
            unsafe { conduits::segmem::zero(self.local_addr(off), bytes) };
        }
        if self.config().debug {
            conduits::report!(
                "PE {}: {call}: {what} ({bytes} bytes, align {align}) at heap offset {heap_off:#x}",
                self.my_pe()
            );
        }
        // Every PE passes the final barrier, also when the debug check fails
        // on some of them.
        let checked = self.check_collective(call, [call_code(call), bytes as u64, heap_off as u64]);
        let barrier = self.barrier_all(call);
        let same = barrier.and_then(|()| self.collective_end(call, step));
        match same.and(checked) {
            Ok(()) => Ok(off),
            Err(e) => {
                let _ = self.heap().free(heap_off);
                Err(e)
            }
        }
    }

    /// Frees the heap block at segment offset `off` of `bytes` bytes
    /// (collective: a barrier first, then the `SHMEM_DEBUG` check).
    pub(crate) fn free_bytes(&self, call: &'static str, off: usize, bytes: usize) -> Result<()> {
        let heap_off = off.wrapping_sub(layout::HEAP);
        let step = self.collective_begin(call, bytes as u64, heap_off as u64)?;
        self.barrier_all(call)?;
        self.collective_end(call, step)?;
        self.check_collective(call, [call_code(call), bytes as u64, heap_off as u64])?;
        self.heap()
            .free(heap_off)
            .map_err(|source| ShmemError::Alloc {
                pe: self.my_pe(),
                call,
                source,
            })?;
        if self.config().debug {
            conduits::report!("PE {}: {call}: heap offset {heap_off:#x}", self.my_pe());
        }
        Ok(())
    }

    /// Resizes the heap block at segment offset `off` (`old_bytes` long) to
    /// `bytes`, keeping `align`: a barrier, the resize (moving and copying
    /// when it cannot grow in place), the `SHMEM_DEBUG` check and a
    /// barrier. Returns the new segment offset; on error nothing changed.
    pub(crate) fn realloc_bytes(
        &self,
        call: &'static str,
        off: usize,
        old_bytes: usize,
        bytes: usize,
        align: usize,
    ) -> Result<usize> {
        let heap_off = off.wrapping_sub(layout::HEAP);
        let step = self.collective_begin(call, bytes as u64, heap_off as u64)?;
        self.barrier_all(call)?;
        self.collective_end(call, step)?;
        let r = self
            .heap()
            .realloc(heap_off, bytes, align)
            .map_err(|source| ShmemError::Alloc {
                pe: self.my_pe(),
                call,
                source,
            })?;
        let new_off = layout::HEAP + r.offset;
        if r.moved {
            let keep = old_bytes.min(bytes);
            // SAFETY: both blocks lie in this PE's heap and are disjoint (the
            // new block was allocated while the old one was live), reached
            // by raw pointer only and copied with relaxed atomics
            // (`segmem`); the old one is free now but untouched until the
            // next allocation, and no other PE writes either block until
            // the barrier below.
            unsafe {
                conduits::segmem::copy_shared(self.local_addr(off), self.local_addr(new_off), keep)
            };
        }
        if self.config().debug {
            conduits::report!(
                "PE {}: {call}: {old_bytes} -> {bytes} bytes, heap offset {heap_off:#x} -> {:#x}",
                self.my_pe(),
                r.offset
            );
        }
        let checked = self.check_collective(call, [call_code(call), bytes as u64, r.offset as u64]);
        self.barrier_all(call)?;
        checked.map(|()| new_off)
    }

    /// The always-on check that a collective allocation step (`call` with
    /// `bytes`, and `extra`: the alignment, or the offset freed or resized)
    /// is the same on every PE; before the step's barrier. Each PE records
    /// its request locally and compare-and-swaps a tag of it into PE 0's
    /// word for this step: the first tag stays, a PE whose tag differs
    /// raises PE 0's report word. After the barrier
    /// ([`Runtime::collective_end`]) every PE reads the report word, so all
    /// of them see a mismatch. Costs two small atomics on PE 0 per step.
    ///
    /// Three step slots rotate: PE 0 clears slot `k+1` at step `k`, which
    /// every PE finished reading before it reached the barrier of step
    /// `k-1`, and which no PE uses before the barrier of step `k`.
    pub(crate) fn collective_begin(
        &self,
        call: &'static str,
        bytes: u64,
        extra: u64,
    ) -> Result<CollectiveStep> {
        let step = ALLOC_STEP.fetch_add(1, Ordering::Relaxed);
        if self.n_pes() == 1 {
            return Ok(CollectiveStep { step });
        }
        let slot = (step % 3) as usize;
        let code = call_code(call);
        let rec = self.local_addr(alloc_record(slot)).cast::<u64>();
        for (i, w) in [code, bytes, step, extra].into_iter().enumerate() {
            // SAFETY: the record lies in this PE's runtime region, 8-byte
            // aligned, reached by raw pointer only and stored atomically;
            // peers read it only after the step's barrier, and it is
            // rewritten three steps later.
            unsafe { conduits::segmem::store(rec.add(i), w) };
        }
        if self.my_pe() == 0 {
            let next = ((step + 1) % 3) as usize;
            for off in [alloc_tag(next), alloc_report(next)] {
                // SAFETY: an 8-byte aligned word of this PE's runtime region,
                // only accessed atomically.
                unsafe { AtomicU64::from_ptr(self.local_addr(off).cast()) }
                    .store(0, Ordering::Release);
            }
        }
        let h = gasnet_core::hash::fnv1a_words(&[code, bytes, step, extra]);
        let tag = (h << 16) | (1 << 16) | ((self.my_pe() as u64 + 1) & 0xffff);
        let amo = |off, op, operand, compare| {
            self.conduit
                .atomic(CtxId::DEFAULT, 0, off, op, AmoWidth::W64, operand, compare)
                .map_err(|e| self.err(call, e))
        };
        let old = amo(alloc_tag(slot), AmoOp::CompareSwap, tag, 0)?;
        if old != 0 && old >> 16 != tag >> 16 {
            let report = (old & 0xffff) << 16 | ((self.my_pe() as u64 + 1) & 0xffff);
            amo(alloc_report(slot), AmoOp::CompareSwap, report, 0)?;
        }
        Ok(CollectiveStep { step })
    }

    /// The second half of [`Runtime::collective_begin`], after the step's
    /// barrier: [`ShmemError::NotSymmetric`] on every PE if any PE's
    /// request differed.
    pub(crate) fn collective_end(&self, call: &'static str, s: CollectiveStep) -> Result<()> {
        if self.n_pes() == 1 {
            return Ok(());
        }
        let slot = (s.step % 3) as usize;
        let report = self
            .conduit
            .atomic(
                CtxId::DEFAULT,
                0,
                alloc_report(slot),
                AmoOp::Fetch,
                AmoWidth::W64,
                0,
                0,
            )
            .map_err(|e| self.err(call, e))?;
        if report == 0 {
            return Ok(());
        }
        let pe_of = |bits: u64| ((bits & 0xffff) as usize).wrapping_sub(1) % self.n_pes();
        let (first, other) = (pe_of(report >> 16), pe_of(report));
        let mut recs = [[0u64; 4]; 2];
        for (pe, r) in [first, other].into_iter().zip(recs.iter_mut()) {
            self.conduit
                .get(
                    CtxId::DEFAULT,
                    pe,
                    alloc_record(slot),
                    crate::pod::bytes_of_mut(&mut r[..]),
                )
                .map_err(|e| self.err(call, e))?;
        }
        Err(ShmemError::NotSymmetric {
            pe: self.my_pe(),
            call,
            step: s.step,
            first_pe: first,
            first_call: call_name(recs[0][0]),
            first_bytes: recs[0][1],
            other_pe: other,
            other_call: call_name(recs[1][0]),
            other_bytes: recs[1][1],
        })
    }

    /// With `SHMEM_DEBUG`: checks that this PE's allocation call `what`
    /// (call code, bytes, heap offset) matches PE 0's, i.e. that every PE
    /// made the same collective call. Two extra barriers; `SHMEM_DEBUG` must
    /// be set alike on every PE.
    pub(crate) fn check_collective(&self, call: &'static str, what: [u64; 3]) -> Result<()> {
        if !self.config().debug {
            return Ok(());
        }
        let base = self.local_addr(layout::COLLECTIVE_CHECK).cast::<u64>();
        for (i, w) in what.iter().enumerate() {
            // SAFETY: the check words lie in this PE's runtime region,
            // 8-byte aligned, reached by raw pointer only and stored
            // atomically; peers only read them between the two barriers.
            unsafe { conduits::segmem::store(base.add(i), *w) };
        }
        self.sync_all(call)?;
        let mut pe0 = [0u64; 3];
        self.conduit
            .get(
                CtxId::DEFAULT,
                0,
                layout::COLLECTIVE_CHECK,
                bytes_of_mut(&mut pe0),
            )
            .map_err(|e| self.err(call, e))?;
        self.sync_all(call)?;
        if pe0 == what {
            Ok(())
        } else {
            Err(ShmemError::NotCollective {
                pe: self.my_pe(),
                call,
                mine: what,
                pe0,
            })
        }
    }
}

/// Offset of PE 0's tag word for collective allocation slot `slot`.
const fn alloc_tag(slot: usize) -> usize {
    layout::ALLOC_CHECK + 8 * slot
}

/// Offset of PE 0's report word for slot `slot`.
const fn alloc_report(slot: usize) -> usize {
    layout::ALLOC_CHECK + 24 + 8 * slot
}

/// Offset of every PE's record for slot `slot` (four words).
const fn alloc_record(slot: usize) -> usize {
    layout::ALLOC_CHECK + 64 + 32 * slot
}
