//! The area of the active-set announcements (C ABI only, after the
//! active-set slots): its layout in the segment, this PE's counts, and
//! what a finalizing PE publishes there. The announcements themselves, and
//! the report of a disagreement, are the collectives'
//! (`collective::active`); the runtime owns the area because it lays out
//! the segment and finalizes.
//!
//! | offset | content |
//! |---|---|
//! | 0 | notice: 1 when PE 0 holds a finding |
//! | 8 | PE 0 only: claim (finder + 1) |
//! | 16 | PE 0 only: the finding is complete |
//! | 24 | PE 0 only: PEs that reported it |
//! | 32 | this PE is finalizing |
//! | 64 | this PE's last active-set call (a record; written when finalizing) |
//! | 192 | PE 0 only: the finding, two records |
//! | 384 | announcements this PE sent to each PE, `n` words (written when finalizing) |
//! | cells | per sender: its message counter, then two record places used alternately |

use super::Runtime;
use crate::agree::{RECORD_LEN, Record};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const NOTICE: usize = 0;
pub(crate) const CLAIM: usize = 8;
pub(crate) const READY: usize = 16;
pub(crate) const REPORTED: usize = 24;
pub(crate) const FINALIZING: usize = 32;
pub(crate) const LAST: usize = 64;
pub(crate) const FINDING: usize = 192;
pub(crate) const SENT: usize = 384;
/// Bytes of a sender's cell: the counter and two record places.
pub(crate) const CELL: usize = 192;
const _: () = assert!(LAST + RECORD_LEN <= FINDING && FINDING + 2 * RECORD_LEN <= SENT);
const _: () = assert!(8 + 2 * RECORD_LEN <= CELL);

/// Bytes of the area in a job of `n` PEs (a multiple of 4 KiB).
pub(crate) fn area_len(n: usize) -> usize {
    (cells(n) + CELL * n).next_multiple_of(0x1000)
}

/// Offset of the cells within the area.
fn cells(n: usize) -> usize {
    (SENT + 8 * n).next_multiple_of(64)
}

/// This PE's side of the area: where it lives and what the PE counted.
#[derive(Debug)]
pub(crate) struct Area {
    /// Segment offset of the area.
    pub(crate) base: usize,
    pub(crate) state: Mutex<State>,
}

/// What this PE counted and holds, under the area's lock.
#[derive(Debug)]
pub(crate) struct State {
    /// Announcements waited for from each PE.
    pub(crate) expected: Vec<u64>,
    /// Announcements sent to each PE.
    pub(crate) sent: Vec<u64>,
    /// This PE's last active-set call.
    pub(crate) last: Option<Record>,
    /// The announcement in progress: the PEs still awaited (with the count
    /// that brings theirs), and the records that arrived.
    pub(crate) pending: Vec<(usize, u64)>,
    pub(crate) known: Vec<Record>,
}

impl Area {
    /// The area at segment offset `base` of a job of `n` PEs (zero-filled).
    pub(crate) fn new(base: usize, n: usize) -> Area {
        Area {
            base,
            state: Mutex::new(State {
                expected: vec![0; n],
                sent: vec![0; n],
                last: None,
                pending: Vec::new(),
                known: Vec::new(),
            }),
        }
    }

    /// Segment offset of the cell that PE `from` writes, in a job of `n`.
    pub(crate) fn cell(&self, n: usize, from: usize) -> usize {
        self.base + cells(n) + CELL * from
    }
}

/// Marks this PE finalizing (its last `shmem_finalize`, or the
/// finalization at exit): publishes its last active-set call and the
/// announcements it sent to each PE, then the flag, for PEs that may wait
/// for an announcement from it (`collective::active::announce`).
pub(crate) fn note_finalizing(rt: &Runtime) {
    let Some(area) = rt.active_area.as_ref() else {
        return;
    };
    // Another thread inside an announcement (the program exits while one
    // waits) holds the state: then nothing is published, and PEs waiting
    // for this one are not told (they wait, as before this check).
    let st = match area.state.try_lock() {
        Ok(st) => st,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    let mut words = Vec::with_capacity(st.sent.len());
    for s in &st.sent {
        words.extend_from_slice(&s.to_le_bytes());
    }
    let last = st.last.map(|r| r.encode());
    drop(st);
    let write = |off: usize, b: &[u8]| {
        // SAFETY: the range lies in this PE's area inside its segment (the
        // area holds `n` sent words and a record place); `b` is a local
        // buffer. The copy is made of relaxed atomic stores
        // (`conduits::segmem`), so it races with no access of this
        // process; peers only read it, after the release store below.
        unsafe { conduits::segmem::copy_in(b.as_ptr(), rt.local_addr(off), b.len()) };
    };
    write(area.base + SENT, &words);
    if let Some(b) = last {
        write(area.base + LAST, &b);
    }
    store_word(rt, area.base + FINALIZING, 1);
}

/// Stores `v` at `off` of this PE's segment with release ordering.
pub(crate) fn store_word(rt: &Runtime, off: usize, v: u64) {
    // SAFETY: an 8-byte aligned word of this PE's area, inside its
    // segment; peers and this PE access it only atomically.
    unsafe { AtomicU64::from_ptr(rt.local_addr(off).cast()) }.store(v, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_area_holds_every_cell_in_whole_pages() {
        for n in [1, 2, 5, 64, 1000] {
            assert!(area_len(n) >= cells(n) + CELL * n, "{n} PEs");
            assert_eq!(area_len(n) % 0x1000, 0);
            assert!(cells(n) >= SENT + 8 * n);
        }
    }
}
