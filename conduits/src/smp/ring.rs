//! The bounded, lock-free, multi-producer single-consumer message ring that
//! carries active messages between processes.
//!
//! A ring lives in the job control block: a 128-byte header (the enqueue
//! position on one cache line, the dequeue position on the next) followed by
//! `capacity` slots of [`SLOT_BYTES`]. Every slot carries a sequence word
//! (Vyukov's bounded queue): producers claim a position with a CAS on the
//! enqueue position, fill the slot, then publish it with a Release store of
//! the sequence; the single consumer reads the slot after an Acquire load of
//! the sequence and hands the slot back by advancing it a lap.
//!
//! The sequence is stored relative to the slot index (`stored = seq - index`)
//! so that the zero bytes of a freshly `ftruncate`d file are an empty ring
//! and no initialisation pass is needed.
//!
//! Slot layout (bytes):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | sequence (atomic) |
//! | 8 | 4 | source rank |
//! | 12 | 1 | handler index |
//! | 13 | 1 | category: 0 Short, 1 Medium, 2 Long |
//! | 14 | 1 | direction: 0 request, 1 reply |
//! | 15 | 1 | argument count (≤ 16) |
//! | 16 | 4 | payload length |
//! | 24 | 8 | Long: segment offset of the payload |
//! | 64 | 64 | sixteen 32-bit arguments |
//! | 128 | 4096 | Medium payload |

use gasnet_core::{Category, Direction, MAX_ARGS, MAX_MEDIUM};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of a ring header.
pub(crate) const RING_HEADER_BYTES: usize = 128;
/// Bytes of one slot: 64 of header, 64 of arguments, a Medium payload.
pub(crate) const SLOT_BYTES: usize = 128 + MAX_MEDIUM;
const ARGS_AT: usize = 64;
const PAYLOAD_AT: usize = 128;

/// The fixed part of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) src: u32,
    pub(crate) handler: u8,
    pub(crate) category: Category,
    pub(crate) direction: Direction,
    /// Medium: bytes in the slot; Long: bytes at `offset` in the segment.
    pub(crate) len: u32,
    pub(crate) offset: u64,
}

/// A message as the consumer sees it, borrowed from its slot.
pub(crate) struct Received<'a> {
    pub(crate) header: Header,
    pub(crate) args: &'a [u32],
    /// Medium payload (empty otherwise).
    pub(crate) medium: &'a [u8],
}

/// A view of one ring inside a mapping that outlives it.
#[derive(Clone, Copy)]
pub(crate) struct Ring {
    base: *mut u8,
    mask: u64,
}

// SAFETY: a Ring is a pair of plain values naming shared memory whose every
// cross-thread access goes through atomics (positions, sequences) or is
// ordered by them (slot contents).
unsafe impl Send for Ring {}
// SAFETY: as for Send.
unsafe impl Sync for Ring {}

/// Bytes a ring of `capacity` slots occupies.
pub(crate) const fn ring_bytes(capacity: usize) -> usize {
    RING_HEADER_BYTES + capacity * SLOT_BYTES
}

impl Ring {
    /// A view of the ring at `base`.
    ///
    /// # Safety
    /// `base` must be 64-byte aligned and point to [`ring_bytes`]`(capacity)`
    /// bytes of shared memory that stay mapped while the view is used, laid
    /// out as this module describes (all zeros is an empty ring), and
    /// `capacity` must be a power of two.
    pub(crate) unsafe fn at(base: *mut u8, capacity: usize) -> Ring {
        debug_assert!(capacity.is_power_of_two());
        debug_assert_eq!(base as usize % 64, 0);
        Ring {
            base,
            mask: capacity as u64 - 1,
        }
    }

    #[inline]
    fn enq(&self) -> &AtomicU64 {
        // SAFETY: the header's first word is an aligned u64 inside the
        // mapping (contract of `at`); it is only accessed atomically.
        unsafe { AtomicU64::from_ptr(self.base as *mut u64) }
    }

    #[inline]
    fn deq(&self) -> &AtomicU64 {
        // SAFETY: as for `enq`, 64 bytes further.
        unsafe { AtomicU64::from_ptr(self.base.add(64) as *mut u64) }
    }

    #[inline]
    fn slot(&self, pos: u64) -> *mut u8 {
        let i = (pos & self.mask) as usize;
        // SAFETY: i < capacity, so the slot lies inside the ring (contract of `at`).
        unsafe { self.base.add(RING_HEADER_BYTES + i * SLOT_BYTES) }
    }

    /// The logical sequence of the slot for `pos`.
    #[inline]
    fn seq(&self, slot: *mut u8, pos: u64, order: Ordering) -> u64 {
        // SAFETY: a slot starts with an aligned u64 that is only accessed atomically.
        let stored = unsafe { AtomicU64::from_ptr(slot as *mut u64) }.load(order);
        stored.wrapping_add(pos & self.mask)
    }

    #[inline]
    fn set_seq(&self, slot: *mut u8, pos: u64, seq: u64) {
        // SAFETY: as in `seq`.
        unsafe { AtomicU64::from_ptr(slot as *mut u64) }
            .store(seq.wrapping_sub(pos & self.mask), Ordering::Release);
    }

    /// Whether a message is waiting (a cheap check for the hot path).
    #[inline]
    pub(crate) fn has_message(&self) -> bool {
        let pos = self.deq().load(Ordering::Relaxed);
        self.seq(self.slot(pos), pos, Ordering::Relaxed) == pos.wrapping_add(1)
    }

    /// Enqueues a message; `false` when the ring is full. `args` holds at
    /// most 16 words and `medium` at most 4096 bytes (checked by the caller).
    pub(crate) fn try_push(&self, h: &Header, args: &[u32], medium: &[u8]) -> bool {
        debug_assert!(args.len() <= MAX_ARGS && medium.len() <= MAX_MEDIUM);
        let mut pos = self.enq().load(Ordering::Relaxed);
        let slot = loop {
            let slot = self.slot(pos);
            let seq = self.seq(slot, pos, Ordering::Acquire);
            let diff = seq.wrapping_sub(pos) as i64;
            if diff == 0 {
                match self.enq().compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break slot,
                    Err(now) => pos = now,
                }
            } else if diff < 0 {
                return false;
            } else {
                pos = self.enq().load(Ordering::Relaxed);
            }
        };
        let category = match h.category {
            Category::Short => 0u8,
            Category::Medium => 1,
            Category::Long => 2,
        };
        let direction = match h.direction {
            Direction::Request => 0u8,
            Direction::Reply => 1,
        };
        // SAFETY: the CAS above gave this producer exclusive ownership of
        // the slot until its sequence is published below; every field lies
        // inside the slot and is written with unaligned-tolerant raw writes;
        // `args` and `medium` fit the reserved areas (checked by the caller).
        unsafe {
            ptr::write_unaligned(slot.add(8) as *mut u32, h.src);
            *slot.add(12) = h.handler;
            *slot.add(13) = category;
            *slot.add(14) = direction;
            *slot.add(15) = args.len() as u8;
            ptr::write_unaligned(slot.add(16) as *mut u32, h.len);
            ptr::write_unaligned(slot.add(24) as *mut u64, h.offset);
            ptr::copy_nonoverlapping(args.as_ptr(), slot.add(ARGS_AT) as *mut u32, args.len());
            ptr::copy_nonoverlapping(medium.as_ptr(), slot.add(PAYLOAD_AT), medium.len());
        }
        self.set_seq(slot, pos, pos.wrapping_add(1));
        true
    }

    /// Dequeues one message and runs `f` on it while it is still in its
    /// slot; `None` when the ring is empty.
    ///
    /// # Safety
    /// Only one thread of one process may consume a given ring at a time.
    pub(crate) unsafe fn pop_with<R>(
        &self,
        f: impl FnOnce(Option<Received<'_>>) -> R,
    ) -> Option<R> {
        let pos = self.deq().load(Ordering::Relaxed);
        let slot = self.slot(pos);
        if self.seq(slot, pos, Ordering::Acquire) != pos.wrapping_add(1) {
            return None;
        }
        // SAFETY: the Acquire load above saw the producer's Release
        // publication, so the slot's fields are fully written and no
        // producer touches the slot until we advance its sequence below;
        // lengths are clamped to the reserved areas before slicing.
        let r = unsafe {
            let src = ptr::read_unaligned(slot.add(8) as *const u32);
            let handler = *slot.add(12);
            let category = match *slot.add(13) {
                0 => Some(Category::Short),
                1 => Some(Category::Medium),
                2 => Some(Category::Long),
                _ => None,
            };
            let direction = match *slot.add(14) {
                0 => Some(Direction::Request),
                1 => Some(Direction::Reply),
                _ => None,
            };
            let nargs = (*slot.add(15) as usize).min(MAX_ARGS);
            let len = ptr::read_unaligned(slot.add(16) as *const u32);
            let offset = ptr::read_unaligned(slot.add(24) as *const u64);
            let received = match (category, direction) {
                (Some(category), Some(direction)) => {
                    let args = std::slice::from_raw_parts(slot.add(ARGS_AT) as *const u32, nargs);
                    let medium = if category == Category::Medium {
                        let n = (len as usize).min(MAX_MEDIUM);
                        std::slice::from_raw_parts(slot.add(PAYLOAD_AT) as *const u8, n)
                    } else {
                        &[]
                    };
                    Some(Received {
                        header: Header {
                            src,
                            handler,
                            category,
                            direction,
                            len,
                            offset,
                        },
                        args,
                        medium,
                    })
                }
                _ => None,
            };
            f(received)
        };
        self.deq().store(pos.wrapping_add(1), Ordering::Relaxed);
        self.set_seq(slot, pos, pos.wrapping_add(self.mask + 1));
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    struct Mem([u8; ring_bytes(4)]);

    fn header(i: u32) -> Header {
        Header {
            src: i,
            handler: 70,
            category: Category::Medium,
            direction: Direction::Request,
            len: 3,
            offset: 0,
        }
    }

    #[test]
    fn fifo_full_and_wraps() {
        let mut mem = Box::new(Mem([0; ring_bytes(4)]));
        // SAFETY: the boxed buffer is aligned, zeroed, big enough and outlives the ring.
        let ring = unsafe { Ring::at(mem.0.as_mut_ptr(), 4) };
        for lap in 0..3u32 {
            assert!(!ring.has_message());
            for i in 0..4 {
                assert!(ring.try_push(&header(lap * 10 + i), &[i, 7], &[1, 2, i as u8]));
            }
            assert!(!ring.try_push(&header(99), &[], &[]), "ring of 4 takes 4");
            assert!(ring.has_message());
            for i in 0..4 {
                // SAFETY: single consumer.
                let got = unsafe {
                    ring.pop_with(|m| {
                        let m = m.unwrap();
                        (m.header.src, m.args.to_vec(), m.medium.to_vec())
                    })
                };
                assert_eq!(got, Some((lap * 10 + i, vec![i, 7], vec![1, 2, i as u8])));
            }
            // SAFETY: single consumer.
            assert!(unsafe { ring.pop_with(|_| ()) }.is_none());
        }
    }

    #[test]
    fn many_producers_one_consumer() {
        let mut mem = Box::new(Mem([0; ring_bytes(4)]));
        // SAFETY: as above.
        let ring = unsafe { Ring::at(mem.0.as_mut_ptr(), 4) };
        const PER: u32 = 2000;
        let mut seen = [0u32; 3];
        std::thread::scope(|s| {
            for p in 0..3u32 {
                s.spawn(move || {
                    for i in 0..PER {
                        while !ring.try_push(&header(p), &[i], &[]) {
                            std::thread::yield_now();
                        }
                    }
                });
            }
            let mut total = 0;
            while total < 3 * PER {
                // SAFETY: this thread is the only consumer.
                match unsafe { ring.pop_with(|m| m.map(|m| (m.header.src, m.args[0]))) } {
                    Some(Some((p, i))) => {
                        assert_eq!(i, seen[p as usize], "per-producer FIFO");
                        seen[p as usize] += 1;
                        total += 1;
                    }
                    Some(None) => panic!("corrupt message"),
                    None => std::thread::yield_now(),
                }
            }
        });
        assert_eq!(seen, [PER; 3]);
    }
}
