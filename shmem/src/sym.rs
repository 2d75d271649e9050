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

use crate::Shmem;
use crate::error::{Result, ShmemError};
use crate::pod::{AmoElem, AmoInt, Pod, bytes_of, bytes_of_mut};
use crate::runtime::Runtime;
use crate::wait::Cmp;
use conduits::prelude::*;
use conduits::{AmoOp, SignalOp};
use std::marker::PhantomData;

/// A symmetric array of `len` elements of `T`, one copy on every PE.
///
/// ```no_run
/// let sh = shmem::init()?;
/// let (me, n) = (sh.my_pe(), sh.n_pes());
/// let x = sh.calloc::<u64>(4)?;              // collective
/// x.p(0, me as u64, (me + 1) % n)?;          // write element 0 on the next PE
/// sh.barrier_all()?;
/// assert_eq!(x.as_slice()[0], ((me + n - 1) % n) as u64);
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
    /// (zero for never-used memory, old data for reused memory), but always
    /// valid `T` values.
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
    /// assert!(c.as_slice().iter().all(|&v| v == 0));
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

    /// This PE's copy, read-only.
    ///
    /// Other PEs may write this memory at any time with puts and atomics.
    /// The values seen through the slice are those of the last
    /// synchronization (barrier, quiet + flag, [`SymVec::wait_until`],
    /// signal wait): a concurrent remote write yields unspecified but valid
    /// values, and a loop polling the slice may never see an update. Poll
    /// with [`SymVec::wait_until`] or [`SymVec::test`] instead.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<i32>(3)?;
    /// assert_eq!(x.as_slice(), &[0, 0, 0]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `off..off+len*size_of::<T>()` is a live allocation in this
        // PE's segment, aligned for `T`, mapped for as long as the runtime
        // (which `'s` borrows) lives; the bytes are always initialized (the
        // segment starts zeroed and is only written with `T` values or
        // bytes), and every bit pattern is a valid `T`.
        unsafe { std::slice::from_raw_parts(self.local_ptr(), self.len) }
    }

    /// This PE's copy, writable. Same rules as [`SymVec::as_slice`] for
    /// remote writes: write what remote PEs do not write concurrently, and
    /// synchronize (barrier, signal) before they read it.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let mut x = sh.malloc::<u16>(4)?;
    /// x.as_mut_slice().copy_from_slice(&[1, 2, 3, 4]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only view
        // created through this handle, and distinct SymVecs never overlap
        // (the allocator guarantees it).
        unsafe { std::slice::from_raw_parts_mut(self.local_ptr(), self.len) }
    }

    /// `shmem_ptr`: the address at which this process can load and store
    /// `pe`'s copy directly, where the conduit maps peers' segments (smp);
    /// `None` where it does not (ipv6, fpga) or when `pe` is out of range.
    /// Accesses through the pointer follow the same rules as local access.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u64>(1)?;
    /// if let Some(p) = x.ptr((sh.my_pe() + 1) % sh.n_pes()) {
    ///     // SAFETY: p points at a live u64 of the peer's heap.
    ///     let v = unsafe { p.read_volatile() };
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
    /// the call.
    #[inline(always)]
    fn range(&self, start: usize, count: usize, call: &'static str) -> Result<usize> {
        if start <= self.len && count <= self.len - start {
            Ok(self.off + start * size_of::<T>())
        } else {
            Err(self.range_error(start, count, call))
        }
    }

    #[cold]
    fn range_error(&self, start: usize, count: usize, call: &'static str) -> ShmemError {
        ShmemError::OutOfBounds {
            pe: self.rt.my_pe(),
            call,
            start,
            count,
            len: self.len,
        }
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
        self.rt.check_pe(pe, CALL)?;
        let off = self.range(start, src.len(), CALL)?;
        self.rt
            .conduit
            .put(CtxId::DEFAULT, pe, off, bytes_of(src))
            .map_err(|e| self.rt.err(CALL, e))
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
        const CALL: &str = "shmem_get";
        self.rt.check_pe(pe, CALL)?;
        let off = self.range(start, dst.len(), CALL)?;
        self.rt
            .conduit
            .get(CtxId::DEFAULT, pe, off, bytes_of_mut(dst))
            .map_err(|e| self.rt.err(CALL, e))
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
        self.rt.check_pe(pe, CALL)?;
        let off = self.range(index, 1, CALL)?;
        self.rt
            .conduit
            .put(
                CtxId::DEFAULT,
                pe,
                off,
                bytes_of(std::slice::from_ref(&value)),
            )
            .map_err(|e| self.rt.err(CALL, e))
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
        const CALL: &str = "shmem_g";
        self.rt.check_pe(pe, CALL)?;
        let off = self.range(index, 1, CALL)?;
        // SAFETY: all-zero bytes are a valid `T` (every bit pattern is).
        let mut v: T = unsafe { std::mem::zeroed() };
        self.rt
            .conduit
            .get(
                CtxId::DEFAULT,
                pe,
                off,
                bytes_of_mut(std::slice::from_mut(&mut v)),
            )
            .map_err(|e| self.rt.err(CALL, e))?;
        Ok(v)
    }

    /// Checks the range `start..start+count` and `pe` for a non-blocking
    /// call; returns the segment offset.
    #[inline]
    pub(crate) fn nbi_target(
        &self,
        start: usize,
        count: usize,
        pe: usize,
        call: &'static str,
    ) -> Result<usize> {
        self.rt.check_pe(pe, call)?;
        self.range(start, count, call)
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
    ///     assert_eq!(&data.as_slice()[..5], b"hello");
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
        self.rt.check_pe(pe, CALL)?;
        let off = self.range(start, src.len(), CALL)?;
        let sig_off = sig.range(sig_index, 1, CALL)?;
        self.rt
            .conduit
            .put_signal(CtxId::DEFAULT, pe, off, bytes_of(src), sig_off, op, value)
            .map_err(|e| self.rt.err(CALL, e))
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
    /// v.as_mut_slice().copy_from_slice(&[1, 2]);
    /// v.realloc(1000)?;
    /// assert_eq!(&v.as_slice()[..2], &[1, 2]);
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

impl<T: AmoElem> SymVec<'_, T> {
    #[inline(always)]
    fn amo(
        &self,
        index: usize,
        pe: usize,
        op: AmoOp,
        operand: T,
        compare: T,
        call: &'static str,
    ) -> Result<T> {
        self.rt.check_pe(pe, call)?;
        let off = self.range(index, 1, call)?;
        self.rt
            .conduit
            .atomic(
                CtxId::DEFAULT,
                pe,
                off,
                op,
                T::WIDTH,
                operand.to_bits(),
                compare.to_bits(),
            )
            .map(T::from_bits)
            .map_err(|e| self.rt.err(call, e))
    }

    /// `shmem_atomic_fetch`: atomically reads element `index` of `pe`'s copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<f64>(1)?;
    /// let v = x.atomic_fetch(0, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_fetch(&self, index: usize, pe: usize) -> Result<T> {
        let z = T::from_bits(0);
        self.amo(index, pe, AmoOp::Fetch, z, z, "shmem_atomic_fetch")
    }

    /// `shmem_atomic_set`: atomically writes `value`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<f32>(1)?;
    /// x.atomic_set(0, 1.5, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_set(&self, index: usize, value: T, pe: usize) -> Result<()> {
        let z = T::from_bits(0);
        self.amo(index, pe, AmoOp::Set, value, z, "shmem_atomic_set")
            .map(drop)
    }

    /// `shmem_atomic_swap`: atomically writes `value`, returns the old value.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u64>(1)?;
    /// let old = x.atomic_swap(0, 9, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_swap(&self, index: usize, value: T, pe: usize) -> Result<T> {
        let z = T::from_bits(0);
        self.amo(index, pe, AmoOp::Swap, value, z, "shmem_atomic_swap")
    }
}

macro_rules! fetching {
    ($(#[$doc:meta])* $name:ident, $op:ident, $call:literal) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&self, index: usize, value: T, pe: usize) -> Result<T> {
            self.amo(index, pe, AmoOp::$op, value, T::from_bits(0), $call)
        }
    };
}

macro_rules! non_fetching {
    ($(#[$doc:meta])* $name:ident, $op:ident, $call:literal) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&self, index: usize, value: T, pe: usize) -> Result<()> {
            self.amo(index, pe, AmoOp::$op, value, T::from_bits(0), $call)
                .map(drop)
        }
    };
}

impl<T: AmoInt> SymVec<'_, T> {
    /// `shmem_atomic_compare_swap`: if element `index` of `pe`'s copy
    /// equals `cond`, writes `value`; returns the old value either way.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let lock = sh.calloc::<u64>(1)?;
    /// let got = lock.atomic_compare_swap(0, 0, sh.my_pe() as u64 + 1, 0)? == 0;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_compare_swap(&self, index: usize, cond: T, value: T, pe: usize) -> Result<T> {
        self.amo(
            index,
            pe,
            AmoOp::CompareSwap,
            value,
            cond,
            "shmem_atomic_compare_swap",
        )
    }

    fetching!(
        /// `shmem_atomic_fetch_add`: adds `value` (wrapping), returns the
        /// old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let ctr = sh.calloc::<i64>(1)?;
        /// let ticket = ctr.atomic_fetch_add(0, 1, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_add, FetchAdd, "shmem_atomic_fetch_add"
    );
    non_fetching!(
        /// `shmem_atomic_add`: adds `value` (wrapping).
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let ctr = sh.calloc::<u32>(1)?;
        /// ctr.atomic_add(0, 5, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_add, Add, "shmem_atomic_add"
    );
    fetching!(
        /// `shmem_atomic_fetch_and`: ANDs `value`, returns the old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// let old = m.atomic_fetch_and(0, 0xff, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_and, FetchAnd, "shmem_atomic_fetch_and"
    );
    fetching!(
        /// `shmem_atomic_fetch_or`: ORs `value`, returns the old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u32>(1)?;
        /// let old = m.atomic_fetch_or(0, 1 << sh.my_pe(), 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_or, FetchOr, "shmem_atomic_fetch_or"
    );
    fetching!(
        /// `shmem_atomic_fetch_xor`: XORs `value`, returns the old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<i32>(1)?;
        /// let old = m.atomic_fetch_xor(0, -1, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_xor, FetchXor, "shmem_atomic_fetch_xor"
    );
    non_fetching!(
        /// `shmem_atomic_and`: ANDs `value`.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// m.atomic_and(0, 0, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_and, And, "shmem_atomic_and"
    );
    non_fetching!(
        /// `shmem_atomic_or`: ORs `value`.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// m.atomic_or(0, 4, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_or, Or, "shmem_atomic_or"
    );
    non_fetching!(
        /// `shmem_atomic_xor`: XORs `value`.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// m.atomic_xor(0, 4, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_xor, Xor, "shmem_atomic_xor"
    );

    /// `shmem_atomic_fetch_inc`: adds one, returns the old value.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let ctr = sh.calloc::<u64>(1)?;
    /// let mine = ctr.atomic_fetch_inc(0, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_fetch_inc(&self, index: usize, pe: usize) -> Result<T> {
        self.amo(
            index,
            pe,
            AmoOp::FetchAdd,
            T::ONE,
            T::from_bits(0),
            "shmem_atomic_fetch_inc",
        )
    }

    /// `shmem_atomic_inc`: adds one.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let ctr = sh.calloc::<u64>(1)?;
    /// ctr.atomic_inc(0, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_inc(&self, index: usize, pe: usize) -> Result<()> {
        self.amo(
            index,
            pe,
            AmoOp::Add,
            T::ONE,
            T::from_bits(0),
            "shmem_atomic_inc",
        )
        .map(drop)
    }

    /// `shmem_wait_until`: waits until element `index` of this PE's copy
    /// satisfies `word <cmp> value`, polling the conduit (spin briefly,
    /// then yield); returns the word that satisfied it.
    ///
    /// ```no_run
    /// use shmem::Cmp;
    /// let sh = shmem::init()?;
    /// let flag = sh.calloc::<i32>(1)?;
    /// if sh.my_pe() == 0 {
    ///     for pe in 1..sh.n_pes() { flag.atomic_add(0, 1, pe)?; }
    /// } else {
    ///     flag.wait_until(0, Cmp::Ge, 1)?;
    /// }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn wait_until(&self, index: usize, cmp: Cmp, value: T) -> Result<T> {
        const CALL: &str = "shmem_wait_until";
        let off = self.range(index, 1, CALL)?;
        self.rt
            .wait_word_for(
                off,
                T::WIDTH,
                CALL,
                |w| cmp.holds(T::from_bits(w), value),
                |w| {
                    format!(
                        "element {index} (offset {off:#x}) to become {} {value:?} (currently {:?})",
                        cmp.symbol(),
                        T::from_bits(w)
                    )
                },
            )
            .map(T::from_bits)
    }

    /// `shmem_test`: whether element `index` of this PE's copy satisfies
    /// `word <cmp> value` now (after serving pending messages once).
    ///
    /// ```no_run
    /// use shmem::Cmp;
    /// let sh = shmem::init()?;
    /// let flag = sh.calloc::<u64>(1)?;
    /// while !flag.test(0, Cmp::Ne, 0)? { /* compute */ break; }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn test(&self, index: usize, cmp: Cmp, value: T) -> Result<bool> {
        const CALL: &str = "shmem_test";
        let off = self.range(index, 1, CALL)?;
        self.rt.conduit.poll().map_err(|e| self.rt.err(CALL, e))?;
        Ok(cmp.holds(T::from_bits(self.rt.load_word(off, T::WIDTH)), value))
    }
}

impl SymVec<'_, u64> {
    /// `shmem_signal_fetch`: atomically reads signal word `index` of this
    /// PE's copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let sig = sh.calloc::<u64>(1)?;
    /// assert_eq!(sig.signal_fetch(0)?, 0);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn signal_fetch(&self, index: usize) -> Result<u64> {
        let off = self.range(index, 1, "shmem_signal_fetch")?;
        Ok(self.rt.load_word(off, conduits::AmoWidth::W64))
    }

    /// `shmem_signal_wait_until`: waits until signal word `index` of this
    /// PE's copy satisfies `word <cmp> value`; returns the word. Data put
    /// with [`SymVec::put_signal`] before the signal is visible on return.
    ///
    /// ```no_run
    /// use shmem::Cmp;
    /// let sh = shmem::init()?;
    /// let sig = sh.calloc::<u64>(1)?;
    /// if sh.n_pes() > 1 {
    ///     if sh.my_pe() == 0 { sig.atomic_set(0, 3, 1)?; }
    ///     if sh.my_pe() == 1 { assert_eq!(sig.signal_wait_until(0, Cmp::Eq, 3)?, 3); }
    /// }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn signal_wait_until(&self, index: usize, cmp: Cmp, value: u64) -> Result<u64> {
        const CALL: &str = "shmem_signal_wait_until";
        let off = self.range(index, 1, CALL)?;
        self.rt.wait_word_for(
            off,
            conduits::AmoWidth::W64,
            CALL,
            |w| cmp.holds(w, value),
            |w| {
                format!(
                    "signal {index} (offset {off:#x}) to become {} {value} (currently {w})",
                    cmp.symbol()
                )
            },
        )
    }
}
