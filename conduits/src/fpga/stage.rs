//! The staging ring: the area of the board's window past the symmetric
//! segment (`Layout::stage`, [`super::STAGE_BYTES`] bytes) into which the
//! bytes of a put are copied for the board to read, handed out by
//! [`Stage`]; and [`round_up`], which the window's layout uses too.

use std::collections::VecDeque;

pub(super) const fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// A ring allocator over the staging area: allocations are freed in any
/// order and reclaimed in allocation order.
#[derive(Debug)]
pub(super) struct Stage {
    pub(super) base: u64,
    pub(super) size: u64,
    pub(super) head: u64,
    pub(super) tail: u64,
    pub(super) allocs: VecDeque<(u64, u64, bool)>,
    pub(super) next_id: u64,
}

impl Stage {
    pub(super) fn new(base: u64, size: u64) -> Stage {
        Stage {
            base,
            size,
            head: 0,
            tail: 0,
            allocs: VecDeque::new(),
            next_id: 0,
        }
    }

    /// `(id, segment offset)` of `len` free bytes, or `None` for now.
    pub(super) fn alloc(&mut self, len: u64) -> Option<(u64, u64)> {
        let len = round_up(len.max(1), 64);
        let mut start = self.tail;
        let off = start % self.size;
        if off + len > self.size {
            start += self.size - off;
        }
        if start + len - self.head > self.size {
            return None;
        }
        self.next_id += 1;
        self.allocs.push_back((self.next_id, start + len, false));
        self.tail = start + len;
        Some((self.next_id, self.base + start % self.size))
    }

    pub(super) fn free(&mut self, id: u64) {
        if let Some(a) = self.allocs.iter_mut().find(|a| a.0 == id) {
            a.2 = true;
        }
        while let Some(&(_, end, true)) = self.allocs.front() {
            self.head = end;
            self.allocs.pop_front();
        }
        if self.allocs.is_empty() {
            self.head = self.tail;
        }
    }
}
