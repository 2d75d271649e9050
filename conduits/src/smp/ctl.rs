//! The job control block: one shared file per job, `fshmem-<job>-ctl`,
//! created and published by rank 0 and mapped by every PE.
//!
//! Layout (byte offsets; `n` is the job size; every part 64-byte aligned):
//!
//! | offset | size | content |
//! |---|---|---|
//! | 0 | 4096 | header: magic (published last), layout version, job size, segment length, total bytes, creator pid; the bootstrap barrier's arrival count and generation and the global-exit word, each on its own cache line |
//! | 4096 | 64 n | per PE: pid, state (0 absent, 1 attached, 2 finalized, 3 failed), cause (why it leaves: see [`Ctl::cause`]) |
//! | … | 1088 n | exchange slots: length word, then up to 1 KiB |
//! | … | n ring_bytes(REQUEST_SLOTS) | each PE's inbound request ring |
//! | … | n ring_bytes(REPLY_SLOTS) | each PE's inbound reply ring |
//!
//! Requests and replies travel in separate rings so that replies can always
//! be drained (reply handlers never send), which rules out the deadlock of
//! two PEs each blocked replying into the other's full ring.

use super::ring::{Ring, ring_bytes};
use crate::liveness::Cause;
use std::sync::atomic::{AtomicU64, Ordering};

/// "FSHMEMC" + layout version 1; written last by rank 0 to publish the block.
pub(crate) const MAGIC: u64 = 0x4653_484d_454d_4301;
/// Slots in each PE's inbound request ring.
pub(crate) const REQUEST_SLOTS: usize = 32;
/// Slots in each PE's inbound reply ring.
pub(crate) const REPLY_SLOTS: usize = 32;
/// Largest contribution to `exchange`.
pub(crate) const EXCHANGE_BYTES: usize = 1024;

const HEADER_BYTES: usize = 4096;
const PE_BYTES: usize = 64;
const XCHG_SLOT_BYTES: usize = 64 + EXCHANGE_BYTES;

/// PE states kept in the control block.
pub(crate) mod state {
    /// Not attached yet.
    pub(crate) const ABSENT: u64 = 0;
    /// Attached and running.
    pub(crate) const ATTACHED: u64 = 1;
    /// Finalized (left the job normally).
    pub(crate) const FINALIZED: u64 = 2;
    /// Failed (panicked with the conduit alive).
    pub(crate) const FAILED: u64 = 3;
}

/// Bit 63 of a cause word: the rest is the job rank of a PE of another
/// host ([`Cause::OffNode`]), not a local rank plus one.
const CAUSE_OFF_NODE: u64 = 1 << 63;

/// Word indices (u64) into the header.
mod hdr {
    pub(super) const MAGIC: usize = 0;
    pub(super) const SIZE: usize = 1;
    pub(super) const SEGMENT_LEN: usize = 2;
    pub(super) const TOTAL: usize = 3;
    pub(super) const CREATOR: usize = 4;
    pub(super) const BAR_COUNT: usize = 8;
    pub(super) const BAR_GEN: usize = 16;
    pub(super) const GLOBAL_EXIT: usize = 24;
}

/// Offsets of the parts of a control block for `n` PEs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    n: usize,
    pes: usize,
    xchg: usize,
    requests: usize,
    replies: usize,
    /// Total bytes.
    pub(crate) total: usize,
}

impl Layout {
    pub(crate) fn new(n: usize) -> Layout {
        let pes = HEADER_BYTES;
        let xchg = pes + PE_BYTES * n;
        let requests = xchg + XCHG_SLOT_BYTES * n;
        let replies = requests + ring_bytes(REQUEST_SLOTS) * n;
        let total = replies + ring_bytes(REPLY_SLOTS) * n;
        Layout {
            n,
            pes,
            xchg,
            requests,
            replies,
            total,
        }
    }
}

/// A typed view of a mapped control block.
#[derive(Clone, Copy)]
pub(crate) struct Ctl {
    base: *mut u8,
    layout: Layout,
}

// SAFETY: the view names shared memory accessed only through atomics or
// through slots whose ownership the atomics hand over.
unsafe impl Send for Ctl {}
// SAFETY: as for Send.
unsafe impl Sync for Ctl {}

impl Ctl {
    /// A view of the control block mapped at `base`.
    ///
    /// # Safety
    /// `base` must be page aligned and point to `layout.total` bytes of
    /// shared memory that stay mapped while the view (or anything derived
    /// from it) is used.
    pub(crate) unsafe fn at(base: *mut u8, layout: Layout) -> Ctl {
        Ctl { base, layout }
    }

    #[inline]
    fn word(&self, byte_offset: usize) -> &AtomicU64 {
        debug_assert!(byte_offset.is_multiple_of(8) && byte_offset + 8 <= self.layout.total);
        // SAFETY: every caller passes an 8-aligned offset inside the block
        // (contract of `at`), and these words are only accessed atomically.
        unsafe { AtomicU64::from_ptr(self.base.add(byte_offset) as *mut u64) }
    }

    #[inline]
    fn hdr(&self, i: usize) -> &AtomicU64 {
        self.word(i * 8)
    }

    pub(crate) fn magic(&self) -> &AtomicU64 {
        self.hdr(hdr::MAGIC)
    }
    pub(crate) fn size(&self) -> &AtomicU64 {
        self.hdr(hdr::SIZE)
    }
    pub(crate) fn segment_len(&self) -> &AtomicU64 {
        self.hdr(hdr::SEGMENT_LEN)
    }
    pub(crate) fn total(&self) -> &AtomicU64 {
        self.hdr(hdr::TOTAL)
    }
    pub(crate) fn creator(&self) -> &AtomicU64 {
        self.hdr(hdr::CREATOR)
    }
    #[inline]
    pub(crate) fn bar_count(&self) -> &AtomicU64 {
        self.hdr(hdr::BAR_COUNT)
    }
    #[inline]
    pub(crate) fn bar_gen(&self) -> &AtomicU64 {
        self.hdr(hdr::BAR_GEN)
    }
    /// Zero while the job runs; `1 << 32 | status as u32` once a PE called
    /// `global_exit(status)`.
    #[inline]
    pub(crate) fn global_exit(&self) -> &AtomicU64 {
        self.hdr(hdr::GLOBAL_EXIT)
    }

    pub(crate) fn pid(&self, pe: usize) -> &AtomicU64 {
        assert!(pe < self.layout.n);
        self.word(self.layout.pes + pe * PE_BYTES)
    }
    pub(crate) fn state(&self, pe: usize) -> &AtomicU64 {
        assert!(pe < self.layout.n);
        self.word(self.layout.pes + pe * PE_BYTES + 8)
    }
    /// `pe`'s cause word: zero, or what `pe` found failed before it left
    /// because of it, so that a PE that sees `pe` gone blames that PE, not
    /// `pe`: `root + 1` for PE `root` of this block's job (a local rank,
    /// in a routed job), or bit 63 and the job rank of a PE of another
    /// host, which the off-node conduit of a routed job found failed.
    fn cause_word(&self, pe: usize) -> &AtomicU64 {
        assert!(pe < self.layout.n);
        self.word(self.layout.pes + pe * PE_BYTES + 16)
    }

    /// What `pe` recorded as the reason it leaves (its cause word), if
    /// anything.
    pub(crate) fn cause(&self, pe: usize) -> Option<Cause> {
        match self.cause_word(pe).load(Ordering::Acquire) {
            0 => None,
            w if w & CAUSE_OFF_NODE != 0 => usize::try_from(w & !CAUSE_OFF_NODE)
                .ok()
                .map(Cause::OffNode),
            w => usize::try_from(w - 1).ok().map(Cause::OnNode),
        }
    }

    /// Records `cause` as the reason `pe` leaves, unless `pe` recorded
    /// one already (the first failure found is the one that counts).
    pub(crate) fn set_cause(&self, pe: usize, cause: Cause) {
        let w = match cause {
            Cause::OnNode(l) => l as u64 + 1,
            Cause::OffNode(j) => CAUSE_OFF_NODE | j as u64,
        };
        let _ = self
            .cause_word(pe)
            .compare_exchange(0, w, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Length word of `pe`'s exchange slot.
    pub(crate) fn xchg_len(&self, pe: usize) -> &AtomicU64 {
        assert!(pe < self.layout.n);
        self.word(self.layout.xchg + pe * XCHG_SLOT_BYTES)
    }

    /// The data bytes of `pe`'s exchange slot ([`EXCHANGE_BYTES`] long).
    /// Only written by `pe` between two barriers and read by others after.
    pub(crate) fn xchg_data(&self, pe: usize) -> *mut u8 {
        assert!(pe < self.layout.n);
        // SAFETY: the slot lies inside the block (layout arithmetic).
        unsafe { self.base.add(self.layout.xchg + pe * XCHG_SLOT_BYTES + 64) }
    }

    /// `pe`'s inbound request ring.
    pub(crate) fn requests(&self, pe: usize) -> Ring {
        assert!(pe < self.layout.n);
        // SAFETY: the ring lies inside the mapped block, 64-byte aligned
        // (page-aligned base, 64-multiple sizes), zero-initialised by
        // ftruncate, and REQUEST_SLOTS is a power of two.
        unsafe {
            Ring::at(
                self.base
                    .add(self.layout.requests + pe * ring_bytes(REQUEST_SLOTS)),
                REQUEST_SLOTS,
            )
        }
    }

    /// `pe`'s inbound reply ring.
    pub(crate) fn replies(&self, pe: usize) -> Ring {
        assert!(pe < self.layout.n);
        // SAFETY: as for `requests`.
        unsafe {
            Ring::at(
                self.base
                    .add(self.layout.replies + pe * ring_bytes(REPLY_SLOTS)),
                REPLY_SLOTS,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_recorded_once_on_node_or_off_node() {
        let layout = Layout::new(3);
        let mut block = memmap2::MmapMut::map_anon(layout.total).unwrap();
        // SAFETY: the mapping is page aligned, `layout.total` bytes long,
        // zeroed, and outlives the view.
        let c = unsafe { Ctl::at(block.as_mut_ptr(), layout) };
        assert_eq!(c.cause(0), None);
        c.set_cause(0, Cause::OnNode(0));
        c.set_cause(0, Cause::OnNode(2));
        assert_eq!(c.cause(0), Some(Cause::OnNode(0)), "the first one stays");
        let far = (1 << 40) + 5;
        c.set_cause(1, Cause::OffNode(far));
        c.set_cause(1, Cause::OnNode(0));
        assert_eq!(c.cause(1), Some(Cause::OffNode(far)));
        c.set_cause(2, Cause::OffNode(0));
        assert_eq!(c.cause(2), Some(Cause::OffNode(0)));
        drop(block);
    }

    #[test]
    fn parts_are_aligned_and_disjoint() {
        for n in [1, 2, 5, 8, 1024] {
            let l = Layout::new(n);
            for off in [l.pes, l.xchg, l.requests, l.replies, l.total] {
                assert_eq!(off % 64, 0, "n={n} off={off}");
            }
            assert!(l.pes < l.xchg && l.xchg < l.requests && l.requests < l.replies);
            assert!(l.replies < l.total);
        }
    }
}
