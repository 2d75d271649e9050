//! The symmetric-heap allocator: pure bookkeeping over byte offsets, with no
//! memory access and no I/O.
//!
//! Symmetric allocation is collective: every PE makes the same calls with the
//! same arguments in the same order. The allocator is deterministic — its
//! answers depend only on that sequence — so every PE's copy of it hands out
//! the same offsets and an object lives at the same offset in every PE's heap.
//!
//! The policy is address-ordered first fit over a free list of disjoint,
//! coalesced extents:
//!
//! - every size is rounded up to [`GRANULE`] bytes and every offset is a
//!   multiple of [`GRANULE`], so 8- and 16-byte words are always aligned;
//! - an alignment (a power of two) is honoured by starting the block at the
//!   first aligned offset inside a free extent; the gap before it stays free;
//! - freeing merges the extent with its free neighbours, so after freeing
//!   everything the heap is one extent again;
//! - `realloc` shrinks in place, grows in place when the following extent is
//!   free and large enough, and otherwise moves (the caller copies).
//!
//! ```
//! use shmem::alloc::HeapAllocator;
//! let mut h = HeapAllocator::new(1024);
//! let a = h.alloc(100, 16).unwrap();
//! let b = h.alloc(8, 256).unwrap();
//! assert_eq!((a, b), (0, 256));
//! h.free(a).unwrap();
//! assert_eq!(h.alloc(64, 16).unwrap(), 0); // reused
//! ```

use std::collections::BTreeMap;
use std::fmt;

/// Allocation granule and minimum alignment, in bytes.
pub const GRANULE: usize = 16;

/// Why an allocator call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// No free extent can hold the request.
    Exhausted {
        /// Bytes asked for.
        requested: usize,
        /// Alignment asked for.
        align: usize,
        /// Total free bytes in the heap.
        free: usize,
        /// The largest free extent.
        largest: usize,
        /// The heap size.
        heap: usize,
    },
    /// The alignment is zero or not a power of two.
    BadAlign(usize),
    /// The offset is not the start of a live allocation (never allocated, or
    /// already freed).
    NotAllocated(usize),
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::Exhausted {
                requested,
                align,
                free,
                largest,
                heap,
            } => write!(
                f,
                "symmetric heap exhausted: requested {requested} bytes (alignment {align}), \
                 {free} of {heap} bytes free, largest free block {largest} bytes \
                 (raise SHMEM_SYMMETRIC_SIZE)"
            ),
            AllocError::BadAlign(a) => write!(f, "alignment {a} is not a power of two"),
            AllocError::NotAllocated(o) => write!(
                f,
                "heap offset {o:#x} is not a live symmetric allocation (double free?)"
            ),
        }
    }
}

impl std::error::Error for AllocError {}

/// The outcome of [`HeapAllocator::realloc`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Realloc {
    /// Offset of the block now.
    pub offset: usize,
    /// Whether the block moved; if so the caller copies
    /// `min(old_len, new_len)` bytes from the old offset, which is free now
    /// but untouched until the next allocation.
    pub moved: bool,
    /// Rounded length of the block before the call.
    pub old_len: usize,
}

/// Deterministic first-fit allocator over `0..size` byte offsets.
#[derive(Clone, Debug)]
pub struct HeapAllocator {
    size: usize,
    /// Free extents: offset -> length; disjoint, non-adjacent, non-empty.
    free: BTreeMap<usize, usize>,
    /// Live allocations: offset -> rounded length.
    live: BTreeMap<usize, usize>,
    free_bytes: usize,
    /// What offset 0 is relative to the alignment origin (the heap's
    /// offset in a segment whose base is aligned): a block aligned to `a`
    /// has `(origin + offset) % a == 0`.
    origin: usize,
}

fn round_up(n: usize, to: usize) -> Option<usize> {
    debug_assert!(to.is_power_of_two());
    n.checked_add(to - 1).map(|x| x & !(to - 1))
}

impl HeapAllocator {
    /// An allocator for a heap of `size` bytes (rounded down to [`GRANULE`]).
    pub fn new(size: usize) -> HeapAllocator {
        let size = size & !(GRANULE - 1);
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        HeapAllocator {
            size,
            free,
            live: BTreeMap::new(),
            free_bytes: size,
            origin: 0,
        }
    }

    /// As [`HeapAllocator::new`], aligning blocks relative to `origin`:
    /// `origin + offset` is a multiple of the requested alignment (the
    /// runtime passes the heap's segment offset, so that with an aligned
    /// segment base the block's address is aligned).
    pub fn with_origin(size: usize, origin: usize) -> HeapAllocator {
        HeapAllocator {
            origin,
            ..HeapAllocator::new(size)
        }
    }

    /// Heap size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Free bytes in total.
    pub fn free_bytes(&self) -> usize {
        self.free_bytes
    }

    /// Length of the largest free extent.
    pub fn largest_free(&self) -> usize {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// Number of live allocations.
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Rounded length of the live allocation at `offset`.
    pub fn len_of(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).copied()
    }

    /// Live allocations as `(offset, rounded length)` in offset order.
    pub fn live(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.live.iter().map(|(&o, &l)| (o, l))
    }

    /// Free extents as `(offset, length)` in offset order.
    pub fn free_extents(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.free.iter().map(|(&o, &l)| (o, l))
    }

    fn exhausted(&self, requested: usize, align: usize) -> AllocError {
        AllocError::Exhausted {
            requested,
            align,
            free: self.free_bytes,
            largest: self.largest_free(),
            heap: self.size,
        }
    }

    /// Allocates `size` bytes (at least one granule, so that distinct
    /// allocations have distinct offsets) aligned to `align` (a power of
    /// two; alignments below [`GRANULE`] are raised to it). Returns the
    /// offset.
    pub fn alloc(&mut self, size: usize, align: usize) -> Result<usize, AllocError> {
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlign(align));
        }
        let align = align.max(GRANULE);
        let len = match round_up(size.max(1), GRANULE) {
            Some(l) => l,
            None => return Err(self.exhausted(size, align)),
        };
        let mut found = None;
        for (&start, &ext) in &self.free {
            let Some(a) = start
                .checked_add(self.origin)
                .and_then(|x| round_up(x, align))
                .map(|x| x - self.origin)
            else {
                continue;
            };
            if a.checked_add(len).is_some_and(|end| end <= start + ext) {
                found = Some((start, ext, a));
                break;
            }
        }
        let Some((start, ext, a)) = found else {
            return Err(self.exhausted(size, align));
        };
        self.free.remove(&start);
        if a > start {
            self.free.insert(start, a - start);
        }
        let end = a + len;
        if end < start + ext {
            self.free.insert(end, start + ext - end);
        }
        self.live.insert(a, len);
        self.free_bytes -= len;
        Ok(a)
    }

    /// Frees the allocation at `offset`, merging it with free neighbours.
    pub fn free(&mut self, offset: usize) -> Result<(), AllocError> {
        let len = self
            .live
            .remove(&offset)
            .ok_or(AllocError::NotAllocated(offset))?;
        self.insert_free(offset, len);
        self.free_bytes += len;
        Ok(())
    }

    fn insert_free(&mut self, mut start: usize, mut len: usize) {
        if let Some((&p, &pl)) = self.free.range(..start).next_back()
            && p + pl == start
        {
            self.free.remove(&p);
            start = p;
            len += pl;
        }
        if let Some(&nl) = self.free.get(&(start + len)) {
            self.free.remove(&(start + len));
            len += nl;
        }
        self.free.insert(start, len);
    }

    /// Resizes the allocation at `offset` to `new_size` bytes keeping
    /// alignment `align`: in place if it shrinks or the following free
    /// extent is large enough, else by allocating a new block and freeing
    /// the old one. On error nothing changes.
    pub fn realloc(
        &mut self,
        offset: usize,
        new_size: usize,
        align: usize,
    ) -> Result<Realloc, AllocError> {
        if !align.is_power_of_two() {
            return Err(AllocError::BadAlign(align));
        }
        let old_len = *self
            .live
            .get(&offset)
            .ok_or(AllocError::NotAllocated(offset))?;
        let Some(new_len) = round_up(new_size.max(1), GRANULE) else {
            return Err(self.exhausted(new_size, align));
        };
        let in_place = Realloc {
            offset,
            moved: false,
            old_len,
        };
        if new_len <= old_len {
            if new_len < old_len {
                self.live.insert(offset, new_len);
                self.insert_free(offset + new_len, old_len - new_len);
                self.free_bytes += old_len - new_len;
            }
            return Ok(in_place);
        }
        let next = offset + old_len;
        let grow = new_len - old_len;
        if let Some(&nl) = self.free.get(&next)
            && nl >= grow
        {
            self.free.remove(&next);
            if nl > grow {
                self.free.insert(next + grow, nl - grow);
            }
            self.live.insert(offset, new_len);
            self.free_bytes -= grow;
            return Ok(in_place);
        }
        let new_off = self.alloc(new_size, align)?;
        self.free(offset)?;
        Ok(Realloc {
            offset: new_off,
            moved: true,
            old_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_reports_sizes() {
        let mut h = HeapAllocator::new(256);
        h.alloc(100, 16).unwrap();
        let e = h.alloc(200, 16).unwrap_err();
        assert_eq!(
            e,
            AllocError::Exhausted {
                requested: 200,
                align: 16,
                free: 144,
                largest: 144,
                heap: 256
            }
        );
        let s = e.to_string();
        assert!(s.contains("200") && s.contains("144"), "{s}");
    }

    #[test]
    fn bad_align_and_double_free() {
        let mut h = HeapAllocator::new(256);
        assert_eq!(h.alloc(8, 3), Err(AllocError::BadAlign(3)));
        let a = h.alloc(8, 8).unwrap();
        h.free(a).unwrap();
        assert_eq!(h.free(a), Err(AllocError::NotAllocated(a)));
    }

    #[test]
    fn realloc_grows_in_place_then_moves() {
        let mut h = HeapAllocator::new(1024);
        let a = h.alloc(32, 16).unwrap();
        let r = h.realloc(a, 64, 16).unwrap();
        assert_eq!((r.offset, r.moved), (a, false));
        let b = h.alloc(16, 16).unwrap();
        assert_eq!(b, 64);
        let r = h.realloc(a, 128, 16).unwrap();
        assert!(r.moved);
        assert_eq!(r.old_len, 64);
        assert_eq!(r.offset, 80);
        // The old block is free again and reusable.
        assert_eq!(h.alloc(64, 16).unwrap(), 0);
    }

    #[test]
    fn zero_heap_fails_cleanly() {
        let mut h = HeapAllocator::new(0);
        assert!(matches!(h.alloc(1, 1), Err(AllocError::Exhausted { .. })));
        assert!(matches!(
            h.alloc(usize::MAX, 1),
            Err(AllocError::Exhausted { .. })
        ));
    }
}
