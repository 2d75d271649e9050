//! Typed symmetric objects: allocation, local access, RMA, atomics, waits
//! and signals.
//!
//! A [`SymVec<T>`] is `len` elements of `T` at the same offset of every PE's
//! symmetric heap. It is created collectively by [`Shmem::malloc`],
//! [`Shmem::calloc`] or [`Shmem::align`], resized collectively by
//! [`SymVec::realloc`] and freed collectively when dropped (or by
//! [`SymVec::free`]). It borrows the [`Shmem`] handle, so the runtime cannot
//! be finalized while an object is alive.
//!
//! Remote calls name elements by index: `x.put(start, src, pe)` writes
//! `src` over elements `start..start + src.len()` of `pe`'s copy of `x`.
//!
//! A [`SymReadOnly<T>`] is such an object made read-only on every PE
//! ([`SymVec::into_read_only`]): no PE can write it while it lives, so it
//! hands out `&[T]` over this PE's copy ([`readonly`]).

use crate::Shmem;
use crate::error::{Result, ShmemError};
use crate::op::Op;
use crate::pod::{Pod, bytes_of, bytes_of_mut};
use crate::runtime::Runtime;
use conduits::SignalOp;
use conduits::prelude::*;
use conduits::segmem;
use std::marker::PhantomData;

mod atomic;
pub mod readonly;

pub use readonly::{Readable, SymReadOnly};

/// A symmetric array of `len` elements of `T`, one copy on every PE.
///
/// ```no_run
/// let sh = shmem::init()?;
/// let (me, n) = (sh.my_pe(), sh.n_pes());
/// let x = sh.calloc::<u64>(4)?;              // collective
/// x.p(0, me as u64, (me + 1) % n)?;          // write element 0 on the next PE
/// sh.barrier_all()?;
/// assert_eq!(x.read(0), ((me + n - 1) % n) as u64);
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub struct SymVec<'s, T: Pod> {
    rt: &'s Runtime,
    /// Segment offset of element 0.
    off: usize,
    len: usize,
    align: usize,
    _t: PhantomData<T>,
}

// SAFETY: a SymVec is an offset and a length into memory the runtime owns;
// sharing or sending it across threads shares `&Runtime` (which is Sync) and
// accesses `T` values (which are Send + Sync as Pod).
unsafe impl<T: Pod> Send for SymVec<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Pod> Sync for SymVec<'_, T> {}

impl<T: Pod> std::fmt::Debug for SymVec<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymVec")
            .field("type", &std::any::type_name::<T>())
            .field("offset", &self.off)
            .field("len", &self.len)
            .finish()
    }
}

fn byte_len<T>(rt: &Runtime, call: &'static str, count: usize) -> Result<usize> {
    count
        .checked_mul(size_of::<T>())
        .ok_or(ShmemError::SizeOverflow {
            pe: rt.my_pe(),
            call,
            count,
            elem_size: size_of::<T>(),
        })
}

impl Shmem {
    fn alloc_sym<T: Pod>(
        &self,
        call: &'static str,
        len: usize,
        align: usize,
        zero: bool,
    ) -> Result<SymVec<'_, T>> {
        let rt = self.rt();
        rt.not_in_handler(call)?;
        let bytes = byte_len::<T>(rt, call, len)?;
        let align = align.max(align_of::<T>());
        let what = format!("{len} x {}", std::any::type_name::<T>());
        let off = rt.alloc_bytes(call, bytes, align, zero, &what)?;
        Ok(SymVec {
            rt,
            off,
            len,
            align,
            _t: PhantomData,
        })
    }

    /// `shmem_malloc`: allocates `len` elements of `T` on every PE.
    /// Collective: every PE calls it with the same `len` in the same order
    /// of allocations; ends with a barrier. The contents are unspecified
    /// (zero for never-used memory, old data for reused memory): whatever
    /// bytes they are, they make `T` values, since every bit pattern is one
    /// (`Pod`).
    ///
    /// Errors with [`ShmemError::Alloc`] naming the request and the free
    /// space when the heap (`SHMEM_SYMMETRIC_SIZE`) cannot hold it.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let buf = sh.malloc::<f64>(1024)?;
    /// assert_eq!(buf.len(), 1024);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn malloc<T: Pod>(&self, len: usize) -> Result<SymVec<'_, T>> {
        self.alloc_sym("shmem_malloc", len, 0, false)
    }

    /// `shmem_calloc`: as [`Shmem::malloc`], with every byte zero.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let c = sh.calloc::<u32>(8)?;
    /// assert!(c.iter().all(|v| v == 0));
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn calloc<T: Pod>(&self, len: usize) -> Result<SymVec<'_, T>> {
        self.alloc_sym("shmem_calloc", len, 0, true)
    }

    /// `shmem_align`: as [`Shmem::malloc`], with element 0 at a heap offset
    /// whose address is a multiple of `alignment` (a power of two) on every
    /// PE, for alignments up to [`conduits::SEGMENT_ALIGN`] (1 GiB), the
    /// alignment of every conduit's segment base (beyond it only the
    /// segment offset is aligned).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let a = sh.align::<u8>(1 << 20, 100)?;
    /// assert_eq!(a.local_ptr() as usize % (1 << 20), 0);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn align<T: Pod>(&self, alignment: usize, len: usize) -> Result<SymVec<'_, T>> {
        if !alignment.is_power_of_two() {
            return Err(ShmemError::Alloc {
                pe: self.my_pe(),
                call: "shmem_align",
                source: crate::alloc::AllocError::BadAlign(alignment),
            });
        }
        self.alloc_sym("shmem_align", len, alignment, false)
    }
}

impl<'s, T: Pod> SymVec<'s, T> {
    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the object has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte offset of element 0 from the start of the symmetric segment
    /// (the same on every PE).
    #[inline]
    pub fn segment_offset(&self) -> usize {
        self.off
    }

    /// Address of element 0 of this PE's copy.
    #[inline]
    pub fn local_ptr(&self) -> *mut T {
        self.rt.local_addr(self.off).cast()
    }

    /// Element `index` of this PE's copy, copied out.
    ///
    /// Other PEs (and this one, through puts, atomics and collectives, and
    /// other threads) may write this memory at any time, so no reference
    /// to it is handed out: the element is read with one relaxed atomic
    /// load of its own width when `T` is 1, 2, 4 or 8 bytes and aligned to
    /// that, else as words ([`crate::segmem`]). So a thread reading an
    /// element while another writes it reads the old or the new value,
    /// never undefined behaviour (a `T` wider than 8 bytes moves as
    /// several words, and may then combine words of both). What it reads
    /// is meaningful after a
    /// synchronization that orders the writes before it: a barrier,
    /// [`Shmem::quiet`] plus a flag, [`SymVec::wait_until`], a signal
    /// wait. Panics, naming the PE, when `index >= len()`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<i32>(3)?;
    /// assert_eq!(x.read(2), 0);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn read(&self, index: usize) -> T {
        let off = self.check_local(index, 1, "SymVec::read");
        // SAFETY: `off` is element `index < len` of this object's live
        // allocation in this PE's segment, aligned for `T` (allocations
        // are aligned for their type, the segment base beyond any type),
        // mapped while `'s` borrows the runtime and reached through a raw
        // pointer that no Rust reference covers; every bit pattern is a
        // valid `T` (`Pod`). `segmem::load` accesses it atomically, so a
        // concurrent write of this process is no data race.
        unsafe { segmem::load(self.rt.local_addr(off).cast::<T>()) }
    }

    /// Writes `value` to element `index` of this PE's copy (one relaxed
    /// atomic store of its width, as [`SymVec::read`] reads). Peers see it
    /// after a synchronization (a barrier, a signal). Panics when
    /// `index >= len()`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u16>(4)?;
    /// x.write(3, 7);
    /// assert_eq!(x.read(3), 7);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn write(&self, index: usize, value: T) {
        let off = self.check_local(index, 1, "SymVec::write");
        // SAFETY: as in `read`: a live, aligned element reached through a
        // raw pointer no Rust reference covers, stored atomically.
        unsafe { segmem::store(self.rt.local_addr(off).cast::<T>(), value) }
    }

    /// Copies `count` elements at segment offset `off` (checked by the
    /// caller) into a new `Vec`.
    fn load_vec(&self, off: usize, count: usize) -> Vec<T> {
        let mut v = Vec::<T>::with_capacity(count);
        // SAFETY: `off..` holds `count` live elements of this object (the
        // caller checked the range), aligned, reached by raw pointer only;
        // the vector's fresh buffer holds `count` elements and overlaps
        // nothing; every bit pattern is a valid `T`, so all `count` are
        // initialized after the copy.
        unsafe {
            segmem::load_elems(self.rt.local_addr(off).cast::<T>(), v.as_mut_ptr(), count);
            v.set_len(count);
        }
        v
    }

    /// Copies this PE's copy into a new `Vec` (element by element, as
    /// [`SymVec::read`] reads).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<i32>(3)?;
    /// assert_eq!(x.to_vec(), [0, 0, 0]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn to_vec(&self) -> Vec<T> {
        self.load_vec(self.off, self.len)
    }

    /// Copies elements `range` of this PE's copy into a new `Vec`. Panics
    /// when the range is not within `0..len()`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u8>(8)?;
    /// x.copy_from(2, b"abc");
    /// assert_eq!(x.read_range(2..5), b"abc");
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn read_range(&self, range: impl std::ops::RangeBounds<usize>) -> Vec<T> {
        use std::ops::Bound;
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len,
        };
        let count = end.saturating_sub(start);
        let off = self.check_local(start, count, "SymVec::read_range");
        self.load_vec(off, count)
    }

    /// Copies elements `start..start + dst.len()` of this PE's copy into
    /// `dst` (as [`SymVec::read`] reads). Panics when they are not within
    /// `0..len()`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u64>(4)?;
    /// let mut two = [9u64; 2];
    /// x.copy_to(2, &mut two);
    /// assert_eq!(two, [0, 0]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn copy_to(&self, start: usize, dst: &mut [T]) {
        let off = self.check_local(start, dst.len(), "SymVec::copy_to");
        // SAFETY: as in `load_vec`, into `dst`, which the caller holds
        // exclusively (so it cannot be segment memory: safe code has no
        // `&mut` over it) and which holds `dst.len()` elements.
        unsafe {
            segmem::load_elems(
                self.rt.local_addr(off).cast::<T>(),
                dst.as_mut_ptr(),
                dst.len(),
            )
        }
    }

    /// Copies `src` over elements `start..start + src.len()` of this PE's
    /// copy (as [`SymVec::write`] writes). Panics when they are not within
    /// `0..len()`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u16>(4)?;
    /// x.copy_from(0, &[1, 2, 3, 4]);
    /// assert_eq!(x.to_vec(), [1, 2, 3, 4]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn copy_from(&self, start: usize, src: &[T]) {
        let off = self.check_local(start, src.len(), "SymVec::copy_from");
        // SAFETY: `src.len()` live elements of this object at `off`
        // (checked), aligned, reached by raw pointer only and stored
        // atomically; `src` is a shared slice, which nothing writes while
        // it lives, and which cannot overlap this object's copy unless it
        // is a `SymReadOnly`'s, which is another object.
        unsafe { segmem::store_elems(src.as_ptr(), self.rt.local_addr(off).cast::<T>(), src.len()) }
    }

    /// Writes `value` to every element of this PE's copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.malloc::<i64>(3)?;
    /// x.fill(-1);
    /// assert!(x.iter().all(|v| v == -1));
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn fill(&self, value: T) {
        let base = self.rt.local_addr(self.off).cast::<T>();
        for k in 0..self.len {
            // SAFETY: as in `write`, for element `k < len`.
            unsafe { segmem::store(base.add(k), value) };
        }
    }

    /// An iterator over copies of this PE's elements, read one at a time
    /// when the iterator reaches them (see [`SymVec::read`]).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u32>(4)?;
    /// x.write(1, 5);
    /// assert_eq!(x.iter().sum::<u32>(), 5);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn iter(&self) -> Iter<'_, 's, T> {
        Iter {
            x: self,
            next: 0,
            end: self.len,
        }
    }

    /// This PE's copy as a slice, without copying.
    ///
    /// Safe code has no such view: other PEs, this PE's own puts, atomics
    /// and collectives, other threads and a conduit's progress thread may
    /// write this memory at any time, and a Rust reference promises that
    /// nothing does while it lives. Use [`SymVec::read`],
    /// [`SymVec::to_vec`], [`SymVec::copy_to`] or [`SymVec::iter`]
    /// instead, or, for a safe zero-copy view, make the object read-only
    /// on every PE ([`SymVec::into_read_only`]). This does not compile:
    ///
    /// ```compile_fail,E0133
    /// let sh = shmem::init()?;
    /// let (x, me) = (sh.calloc::<u64>(1)?, sh.my_pe());
    /// let s = x.as_slice();  // an unsafe fn: refused in safe code
    /// x.p(0, 1, me)?;        // would write under the live `&[u64]`
    /// assert_eq!(s[0], 1);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    ///
    /// # Safety
    /// While the returned slice lives, nothing may write this PE's copy:
    /// no PE (this one included) puts into it, updates it atomically or
    /// names it as the destination of a collective, no thread of this
    /// process writes it, and no earlier non-blocking or unquieted
    /// operation targeting it is still in flight. The usual way to know
    /// this is the program's own protocol: for example, between two
    /// barriers of a phase in which every PE only reads the object.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u64>(4)?;
    /// sh.barrier_all()?;
    /// // SAFETY: until the next barrier no PE writes `x` (this program's
    /// // protocol), and this PE issues nothing targeting it.
    /// let total: u64 = unsafe { x.as_slice() }.iter().sum();
    /// sh.barrier_all()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: `off..off+len*size_of::<T>()` is a live allocation in
        // this PE's segment, aligned for `T`, mapped while `'s` borrows the
        // runtime, its bytes initialized (the segment starts zeroed and is
        // written only with whole bytes) and every bit pattern a valid `T`;
        // the caller guarantees that nothing writes it while the slice
        // lives.
        unsafe { std::slice::from_raw_parts(self.local_ptr(), self.len) }
    }

    /// This PE's copy as a mutable slice, without copying.
    ///
    /// # Safety
    /// As [`SymVec::as_slice`], and moreover nothing else reads this PE's
    /// copy while the slice lives: no PE gets from it or fetches atomically
    /// from it, no collective sources it, no other thread reads it.
    #[inline]
    pub unsafe fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only view
        // made through this handle, distinct SymVecs never overlap (the
        // allocator guarantees it), and the caller guarantees no other
        // access to the memory while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(self.local_ptr(), self.len) }
    }

    /// Segment offset of elements `start..start + count` of this PE's copy;
    /// panics with the error of [`SymVec::range`] (naming the PE, the call
    /// and the range) when they are not within `0..len()`: local access
    /// has no error channel, and an index out of range is a bug, as for a
    /// slice.
    #[inline(always)]
    #[track_caller]
    fn check_local(&self, start: usize, count: usize, call: &'static str) -> usize {
        match self.range(start, count, call) {
            Ok(off) => off,
            Err(e) => local_range_panic(e),
        }
    }

    /// `shmem_ptr`: the address at which this process can load and store
    /// `pe`'s copy directly, where the conduit maps peers' segments (smp);
    /// `None` where it does not (ipv6, fpga) or when `pe` is out of range.
    /// Accesses through the pointer follow the same rules as local access:
    /// no references, atomic loads and stores ([`crate::segmem`]).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u64>(1)?;
    /// if let Some(p) = x.ptr((sh.my_pe() + 1) % sh.n_pes()) {
    ///     // SAFETY: p points at a live, aligned u64 of the peer's heap,
    ///     // which no reference covers.
    ///     let v = unsafe { shmem::segmem::load(p) };
    ///     println!("neighbour holds {v}");
    /// }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn ptr(&self, pe: usize) -> Option<*mut T> {
        if pe >= self.rt.n_pes() {
            return None;
        }
        if pe == self.rt.my_pe() {
            return Some(self.local_ptr());
        }
        self.rt
            .conduit
            .peer_segment(pe)
            .map(|b| b.wrapping_add(self.off).cast())
    }

    /// Segment offset of elements `start..start+count`, or an error naming
    /// the call (the one range check of every operation on the object).
    #[inline(always)]
    pub(crate) fn range(&self, start: usize, count: usize, call: &'static str) -> Result<usize> {
        crate::op::elem_range(
            self.rt,
            call,
            self.off,
            self.len,
            size_of::<T>(),
            start,
            count,
        )
    }

    /// `shmem_put`: copies `src` over elements `start..start + src.len()` of
    /// `pe`'s copy. Returns when `src` may be reused; the data is complete
    /// at `pe` after [`Shmem::quiet`] or a barrier.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u32>(4)?;
    /// x.put(1, &[7, 8], 0)?; // elements 1 and 2 on PE 0
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn put(&self, start: usize, src: &[T], pe: usize) -> Result<()> {
        const CALL: &str = "shmem_put";
        let off = self.range(start, src.len(), CALL)?;
        Op::default(self.rt).put(CALL, pe, off, bytes_of(src))
    }

    /// `shmem_get`: copies elements `start..start + dst.len()` of `pe`'s
    /// copy into `dst`; returns when they are in `dst`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u32>(4)?;
    /// let mut two = [0u32; 2];
    /// x.get(2, &mut two, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn get(&self, start: usize, dst: &mut [T], pe: usize) -> Result<()> {
        get_elems(self.rt, self.off, self.len, start, dst, pe)
    }

    /// `shmem_p`: writes `value` to element `index` of `pe`'s copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<f64>(1)?;
    /// x.p(0, 2.5, sh.n_pes() - 1)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn p(&self, index: usize, value: T, pe: usize) -> Result<()> {
        const CALL: &str = "shmem_p";
        let off = self.range(index, 1, CALL)?;
        Op::default(self.rt).put(CALL, pe, off, bytes_of(std::slice::from_ref(&value)))
    }

    /// `shmem_g`: reads element `index` of `pe`'s copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<i64>(1)?;
    /// let v: i64 = x.g(0, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn g(&self, index: usize, pe: usize) -> Result<T> {
        g_elem(self.rt, self.off, self.len, index, pe)
    }

    /// `shmem_put_signal`: puts `src` at elements `start..` of `pe`'s copy,
    /// then updates element `sig_index` of `pe`'s copy of `sig` with `op`
    /// and `value`, such that a PE that sees the signal sees the data.
    ///
    /// ```no_run
    /// use shmem::{Cmp, SignalOp};
    /// let sh = shmem::init()?;
    /// let data = sh.calloc::<u8>(64)?;
    /// let sig = sh.calloc::<u64>(1)?;
    /// if sh.my_pe() == 0 && sh.n_pes() > 1 {
    ///     data.put_signal(0, b"hello", &sig, 0, SignalOp::Set, 1, 1)?;
    /// } else if sh.my_pe() == 1 {
    ///     sig.signal_wait_until(0, Cmp::Eq, 1)?;
    ///     assert_eq!(data.read_range(..5), b"hello");
    /// }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn put_signal(
        &self,
        start: usize,
        src: &[T],
        sig: &SymVec<'_, u64>,
        sig_index: usize,
        op: SignalOp,
        value: u64,
        pe: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_put_signal";
        let off = self.range(start, src.len(), CALL)?;
        let sig_off = sig.range(sig_index, 1, CALL)?;
        Op::default(self.rt).put_signal(CALL, pe, off, bytes_of(src), sig_off, op, value)
    }

    /// `shmem_realloc`: resizes the object to `new_len` elements on every
    /// PE. Collective, with a barrier before (so no PE still accesses the
    /// old object) and after. The first `min(len, new_len)` elements keep
    /// their values on every PE; new elements are unspecified. On error
    /// (heap exhausted) the object is unchanged.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let mut v = sh.calloc::<u32>(2)?;
    /// v.copy_from(0, &[1, 2]);
    /// v.realloc(1000)?;
    /// assert_eq!(v.read_range(..2), [1, 2]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn realloc(&mut self, new_len: usize) -> Result<()> {
        const CALL: &str = "shmem_realloc";
        let rt = self.rt;
        let bytes = byte_len::<T>(rt, CALL, new_len)?;
        let old = self.len * size_of::<T>();
        self.off = rt.realloc_bytes(CALL, self.off, old, bytes, self.align)?;
        self.len = new_len;
        Ok(())
    }

    /// `shmem_free`: frees the object on every PE and reports errors (drop
    /// does the same but can only print them). Collective, with a barrier
    /// first so that no PE still accesses the object.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let v = sh.malloc::<u8>(10)?;
    /// v.free()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn free(self) -> Result<()> {
        let me = std::mem::ManuallyDrop::new(self);
        me.release()
    }

    fn release(&self) -> Result<()> {
        const CALL: &str = "shmem_free";
        let rt = self.rt;
        rt.free_bytes(CALL, self.off, self.len * size_of::<T>())
    }
}

/// `shmem_get` from the object of `len` elements of `T` at segment offset
/// `off` (a [`SymVec`] or a [`SymReadOnly`]): elements
/// `start..start + dst.len()` of `pe`'s copy into `dst`.
#[inline]
pub(crate) fn get_elems<T: Pod>(
    rt: &Runtime,
    off: usize,
    len: usize,
    start: usize,
    dst: &mut [T],
    pe: usize,
) -> Result<()> {
    const CALL: &str = "shmem_get";
    let at = crate::op::elem_range(rt, CALL, off, len, size_of::<T>(), start, dst.len())?;
    Op::default(rt).get(CALL, pe, at, bytes_of_mut(dst))
}

/// `shmem_g` from the object of `len` elements of `T` at segment offset
/// `off`: element `index` of `pe`'s copy.
#[inline]
pub(crate) fn g_elem<T: Pod>(
    rt: &Runtime,
    off: usize,
    len: usize,
    index: usize,
    pe: usize,
) -> Result<T> {
    const CALL: &str = "shmem_g";
    let at = crate::op::elem_range(rt, CALL, off, len, size_of::<T>(), index, 1)?;
    // SAFETY: all-zero bytes are a valid `T` (`Pod`: every bit pattern is).
    let mut v: T = unsafe { std::mem::zeroed() };
    Op::default(rt).get(CALL, pe, at, bytes_of_mut(std::slice::from_mut(&mut v)))?;
    Ok(v)
}

impl<T: Pod> Drop for SymVec<'_, T> {
    /// Frees the object collectively (see [`SymVec::free`]); an error is
    /// printed to stderr.
    /// While the thread panics nothing is freed: the free is collective
    /// and the other PEs are not taking part (the PE leaves the job).
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Err(e) = self.release() {
            conduits::report!("{e}");
        }
    }
}

/// An iterator over copies of a [`SymVec`]'s local elements, made by
/// [`SymVec::iter`].
#[derive(Debug)]
pub struct Iter<'a, 's, T: Pod> {
    x: &'a SymVec<'s, T>,
    next: usize,
    end: usize,
}

impl<T: Pod> Iterator for Iter<'_, '_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.next < self.end {
            let v = self.x.read(self.next);
            self.next += 1;
            Some(v)
        } else {
            None
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl<T: Pod> DoubleEndedIterator for Iter<'_, '_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<T> {
        if self.next < self.end {
            self.end -= 1;
            Some(self.x.read(self.end))
        } else {
            None
        }
    }
}

impl<T: Pod> ExactSizeIterator for Iter<'_, '_, T> {}

impl<'a, 's, T: Pod> IntoIterator for &'a SymVec<'s, T> {
    type Item = T;
    type IntoIter = Iter<'a, 's, T>;
    fn into_iter(self) -> Iter<'a, 's, T> {
        self.iter()
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn local_range_panic(e: ShmemError) -> ! {
    panic!("{e}")
}
