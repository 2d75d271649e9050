//! The host side of the three rings (`spec/registers.md` §6).
//!
//! - Command queue: the host keeps its own tail and a cached copy of
//!   `SQ_HEAD`, refreshed only when the cached copy says the ring is full.
//!   A descriptor's slots are written with 64-bit stores, then a store
//!   fence (`sfence` on x86_64, a Release fence elsewhere), then the new
//!   tail goes to `DOORBELL`. [`Rings::try_submit`] never overwrites a slot
//!   the board has not consumed: when there is no room it returns `false`
//!   and the caller applies back-pressure (reaps completions and retries).
//! - Completion and receive queues: the host keeps its head and expected
//!   phase, reads an entry's phase byte first (Acquire) and only then the
//!   rest, and hands the entry back by writing `CQ_HEAD` / `RQ_HEAD`.

use super::bar::Bar;
use gasnet_core::cmd::{
    self, COMPLETION_BYTES, CmdError, Completion, RX_ENTRY_BYTES, RxEntry, SLOT_BYTES, regs,
};
use std::sync::atomic::{AtomicU32, Ordering};

/// The store fence between descriptor stores and the doorbell: `sfence` on
/// x86_64 (it also drains write-combining buffers), a Release fence
/// elsewhere.
#[inline(always)]
pub fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` only orders stores; SSE is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(Ordering::Release);
}

/// Host-side ring state of one board. Not shared: the conduit keeps it
/// behind a lock.
#[derive(Debug)]
pub struct Rings {
    sq_size: u32,
    sq_tail: u32,
    sq_head: u32,
    cq_size: u32,
    cq_head: u32,
    cq_phase: bool,
    rq_size: u32,
    rq_head: u32,
    rq_phase: bool,
}

impl Rings {
    /// Ring state matching a board just reset (every index 0, phase 1),
    /// with the sizes its registers report.
    pub fn after_reset(bar0: &Bar) -> Rings {
        Rings {
            sq_size: bar0.read32(regs::SQ_SIZE).max(2),
            sq_tail: 0,
            sq_head: 0,
            cq_size: bar0.read32(regs::CQ_SIZE).max(2),
            cq_head: 0,
            cq_phase: true,
            rq_size: bar0.read32(regs::RQ_SIZE).max(2),
            rq_head: 0,
            rq_phase: true,
        }
    }

    /// Command slots free according to the cached head (`k` slots fit when
    /// this is at least `k`).
    #[inline(always)]
    fn free(&self) -> u32 {
        (self.sq_head + self.sq_size - self.sq_tail - 1) % self.sq_size
    }

    /// Command slots free now (rereads `SQ_HEAD`).
    pub fn free_slots(&mut self, bar0: &Bar) -> u32 {
        self.sq_head = bar0.read32(regs::SQ_HEAD) % self.sq_size;
        self.free()
    }

    /// Commands submitted and not yet consumed by the board (rereads
    /// `SQ_HEAD`).
    pub fn unconsumed(&mut self, bar0: &Bar) -> u32 {
        self.sq_size - 1 - self.free_slots(bar0)
    }

    /// Writes one descriptor (one or two slots), fences and rings the
    /// doorbell. Returns `false`, writing nothing, when the ring lacks room.
    #[inline]
    pub fn try_submit(&mut self, bar0: &Bar, slots: &[[u8; SLOT_BYTES]]) -> bool {
        let k = slots.len() as u32;
        if self.free() < k && self.free_slots(bar0) < k {
            return false;
        }
        for s in slots {
            let at = regs::SQ_RING + SLOT_BYTES * self.sq_tail as usize;
            // SAFETY: `at..at+64` lies inside BAR0's command ring (the tail
            // is below SQ_SIZE and BAR0 is at least BAR0_SIZE bytes, checked
            // at open); the slot is between our tail and the board's head,
            // so the board does not read it until the doorbell below.
            unsafe {
                let dst = bar0.ptr().add(at).cast::<u64>();
                for (i, w) in s.chunks_exact(8).enumerate() {
                    let v = u64::from_le_bytes(w.try_into().unwrap_or_default());
                    dst.add(i).write_volatile(v);
                }
            }
            self.sq_tail = (self.sq_tail + 1) % self.sq_size;
        }
        store_fence();
        bar0.write32(regs::DOORBELL, self.sq_tail);
        true
    }

    fn phase_cell(bar0: &Bar, at: usize) -> &AtomicU32 {
        bar0.reg(at)
    }

    /// The next completion entry, if the board has written one; frees it.
    /// A malformed entry is returned as an error (and freed).
    #[inline]
    pub fn poll_cq(&mut self, bar0: &Bar) -> Option<Result<Completion, CmdError>> {
        let at = regs::CQ_RING + COMPLETION_BYTES * self.cq_head as usize;
        let word = Self::phase_cell(bar0, at + 28).load(Ordering::Acquire);
        if ((word >> 24) & 1 != 0) != self.cq_phase {
            return None;
        }
        let mut b = [0u8; COMPLETION_BYTES];
        // SAFETY: the entry lies inside BAR0's completion ring; the board
        // wrote it completely before its phase byte (Acquire above) and will
        // not rewrite it until we advance CQ_HEAD.
        unsafe {
            std::ptr::copy_nonoverlapping(bar0.ptr().add(at), b.as_mut_ptr(), COMPLETION_BYTES)
        };
        self.cq_head += 1;
        if self.cq_head == self.cq_size {
            self.cq_head = 0;
            self.cq_phase = !self.cq_phase;
        }
        bar0.write32(regs::CQ_HEAD, self.cq_head);
        Some(Completion::decode(&b))
    }

    /// The next receive entry and its slot index, if the board has written
    /// one. The entry (and a Medium payload in the slot's bounce buffer)
    /// stays the host's until [`Rings::free_rq`].
    pub fn peek_rq(&mut self, bar0: &Bar) -> Option<(u32, Result<RxEntry, CmdError>)> {
        let at = regs::RQ_RING + RX_ENTRY_BYTES * self.rq_head as usize;
        let word = Self::phase_cell(bar0, at).load(Ordering::Acquire);
        if ((word >> 8) & 1 != 0) != self.rq_phase {
            return None;
        }
        let mut b = [0u8; RX_ENTRY_BYTES];
        // SAFETY: as in poll_cq, for the receive ring.
        unsafe {
            std::ptr::copy_nonoverlapping(bar0.ptr().add(at), b.as_mut_ptr(), RX_ENTRY_BYTES)
        };
        Some((self.rq_head, RxEntry::decode(&b)))
    }

    /// Gives the entry [`Rings::peek_rq`] returned back to the board.
    pub fn free_rq(&mut self, bar0: &Bar) {
        self.rq_head += 1;
        if self.rq_head == self.rq_size {
            self.rq_head = 0;
            self.rq_phase = !self.rq_phase;
        }
        bar0.write32(regs::RQ_HEAD, self.rq_head);
    }
}

/// Encodes a descriptor into its slots, as [`Rings::try_submit`] takes them.
pub fn slots(d: &cmd::Descriptor) -> cmd::Encoded {
    cmd::encode_slots(d)
}
