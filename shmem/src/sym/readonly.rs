//! Read-only symmetric objects: the safe zero-copy view.
//!
//! A [`SymVec`]'s memory may be written at any time (see
//! [`SymVec::as_slice`]), so safe code reads it by copying. Converting the
//! object with [`SymVec::into_read_only`], collectively, gives a
//! [`SymReadOnly`]: while it lives no PE can write the object, so it hands
//! out `&[T]` over this PE's copy ([`SymReadOnly::as_slice`], and `Deref`),
//! reads peers' copies ([`SymReadOnly::get`], [`SymReadOnly::g`]) and is
//! the source of collectives. [`SymReadOnly::into_mut`] converts it back.
//!
//! # Why no PE can write a read-only object
//!
//! Every write into symmetric memory names an offset range that belongs to
//! a live object of the PE that issues it (or to the runtime's own
//! regions): a [`SymVec`] is the only handle through which safe code puts,
//! updates atomically, puts with a signal (the signal word too), names a
//! collective's destination, sends a Long active message or replies with
//! one, or names a compute tile's output, on any context. Live objects of
//! one PE never overlap (its allocator), and a read-only object keeps its
//! block allocated. The
//! conversion:
//!
//! 1. takes the [`SymVec`] by value on every PE: no handle through which
//!    this PE could write the object survives, no borrow of it is live in
//!    any thread (a `&SymVec` held by another thread, a `Ctx` call, a
//!    non-blocking scope, a collective or a realloc in progress would keep
//!    the move from compiling), and every earlier use of it by another
//!    thread happens before the move;
//! 2. completes everything this PE issued that could still be writing:
//!    the operations of the default context and of every other live
//!    context (a blocking put on a [`crate::Ctx`] is complete at its
//!    target only at that context's quiet; the contexts of other threads
//!    and of the C ABI are quieted too), the Long active messages it sent,
//!    requests and replies (a round trip to each PE it sent one to, since
//!    active messages complete when sent), and the compute tiles it
//!    started on boards ([`crate::compute`]: a board writes `C` and
//!    streams results after `gemm_start` returned, until the tile's
//!    reply); a collective whose destination was the object returned only
//!    once every write into this PE's copy had arrived;
//! 3. syncs the world team, each PE naming the object (segment offset and
//!    length): no PE returns before every PE has done steps 1 and 2, and
//!    every PE fails if two PEs name different objects.
//!
//! So when it returns, no PE holds a handle that can write the object
//! (each converted the same offset range, and no other object of theirs
//! overlaps it), and nothing any PE issued before is still on its way
//! into it. What a conduit's progress thread or a board applies at this PE
//! later can only come from operations issued later, which name other
//! objects.
//!
//! [`SymReadOnly::into_mut`] syncs the team before any PE gets a writable
//! handle back, after every PE gave up its read-only one (by value: its
//! slices are gone) and finished its reads (gets and collectives return
//! when their data is in hand); dropping a read-only object frees it
//! collectively with the same check, before the memory can be reused.
//!
//! # What remains the program's to keep
//!
//! - Every PE makes its collective calls in the same order. This cannot be
//!   checked completely; what is checked: a conversion meeting on another
//!   PE a conversion of another object, the other conversion, the free of
//!   a read-only object or a data collective makes every PE fail with
//!   [`crate::ShmemError::CollectiveMismatch`] naming two PEs and their
//!   calls. A conversion meeting a collective without that check (a
//!   barrier, an allocation, the free of a [`SymVec`]) makes the PEs in
//!   the conversion fail, with the same error once the other PE has made
//!   two more collective calls (their error path syncs twice; until then
//!   they wait), while the other PE is not told: they find the check word
//!   the other PE left for an earlier call, and a conversion's word names
//!   the team's count of checked calls, so an old one never matches it
//!   (short of a 64-bit hash collision). A PE whose conversion fails keeps
//!   no handle to the object (its memory stays allocated and is never
//!   reused), so a failed conversion never leaves one PE writing while
//!   another reads.
//! - Unsafe code keeps to the rules of its own calls: writes through
//!   [`SymVec::ptr`] or [`SymVec::local_ptr`], and C code given the
//!   object's address, are not excluded by the conversion.
//!
//! The conversion relies on the conduits for one ordering the contract
//! states (`spec/conduit.md` section 5): a PE's Long payloads to one
//! target land in the order of its messages, so that a Short round trip
//! after them tells it they have landed. Quieting other threads' contexts
//! takes their first error of a non-blocking operation, if any: the
//! conversion fails with it, and their own next quiet no longer reports
//! it.

use super::{SymVec, byte_len};
use crate::collective::Kind;
use crate::error::Result;
use crate::pod::Pod;
use crate::runtime::Runtime;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;

/// A symmetric object no PE can write while it lives: `&[T]` over this
/// PE's copy without copying, reads of peers' copies, and the source of
/// collectives. Made collectively by [`SymVec::into_read_only`]; see the
/// [module](crate::sym::readonly) documentation for why it excludes every
/// writer.
///
/// ```no_run
/// let sh = shmem::init()?;
/// let (me, n) = (sh.my_pe(), sh.n_pes());
/// let x = sh.malloc::<u64>(4)?;
/// x.fill(me as u64);
/// let x = x.into_read_only()?;                  // collective
/// let mine: u64 = x.iter().sum();               // a plain slice
/// assert_eq!(mine, 4 * me as u64);
/// assert_eq!(x.g(0, (me + 1) % n)?, ((me + 1) % n) as u64); // a peer's copy
/// let x = x.into_mut()?;                        // writable again
/// x.p(0, 7, (me + 1) % n)?;
/// # Ok::<(), shmem::ShmemError>(())
/// ```
///
/// A read-only object has no writes; this does not compile:
///
/// ```compile_fail,E0599
/// let sh = shmem::init()?;
/// let x = sh.calloc::<u64>(4)?.into_read_only()?;
/// x.p(0, 1, 0)?; // no `p` on a read-only object
/// # Ok::<(), shmem::ShmemError>(())
/// ```
///
/// Nor does holding its slice across the conversion back, after which
/// peers may write it:
///
/// ```compile_fail,E0505
/// let sh = shmem::init()?;
/// let x = sh.calloc::<u64>(4)?.into_read_only()?;
/// let s: &[u64] = &x;
/// let x = x.into_mut()?; // `x` is moved while `s` borrows it
/// assert_eq!(s[0], 0);
/// # Ok::<(), shmem::ShmemError>(())
/// ```
///
/// Nor is it a collective's destination:
///
/// ```compile_fail,E0308
/// let sh = shmem::init()?;
/// let src = sh.calloc::<u64>(4)?;
/// let x = sh.calloc::<u64>(4)?.into_read_only()?;
/// sh.team_world().broadcast(&x, &src, 4, 0)?;
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub struct SymReadOnly<'s, T: Pod> {
    rt: &'s Runtime,
    /// Segment offset of element 0.
    off: usize,
    len: usize,
    align: usize,
    _t: PhantomData<T>,
}

// SAFETY: as for `SymVec`: an offset and a length into memory the runtime
// owns; moving or sharing it moves or shares `&Runtime` (Sync) and gives
// access to `T` values (Send + Sync as Pod). Shared `&[T]` views from
// several threads only read.
unsafe impl<T: Pod> Send for SymReadOnly<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Pod> Sync for SymReadOnly<'_, T> {}

impl<T: Pod> std::fmt::Debug for SymReadOnly<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymReadOnly")
            .field("type", &std::any::type_name::<T>())
            .field("offset", &self.off)
            .field("len", &self.len)
            .finish()
    }
}

impl<'s, T: Pod> SymVec<'s, T> {
    /// Makes the object read-only on every PE, for a zero-copy view of it:
    /// see [`SymReadOnly`].
    ///
    /// Collective over all PEs, each converting the same object: it takes
    /// the object by value, completes every put, atomic and
    /// put-with-signal this PE issued on any context and every Long active
    /// message it sent, then syncs the PEs (a barrier that also checks that
    /// every PE names the same object, as data collectives check their
    /// arguments). When it returns, no PE can write the object until it is
    /// converted back with [`SymReadOnly::into_mut`] or freed.
    ///
    /// On error ([`ShmemError::CollectiveMismatch`] on every PE when PEs
    /// convert different objects; a conduit error) the object is gone from
    /// this PE without being freed: its memory stays allocated, since this
    /// PE cannot know what its peers hold.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let (me, n) = (sh.my_pe(), sh.n_pes());
    /// let x = sh.calloc::<u32>(n)?;
    /// for pe in 0..n {
    ///     x.p(me, me as u32, pe)?; // every PE's element `me`, on every PE
    /// }
    /// let x = x.into_read_only()?; // the puts are complete: no barrier needed
    /// assert!(x.iter().enumerate().all(|(i, &v)| v == i as u32));
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    ///
    /// [`ShmemError::CollectiveMismatch`]: crate::ShmemError::CollectiveMismatch
    pub fn into_read_only(self) -> Result<SymReadOnly<'s, T>> {
        const CALL: &str = "SymVec::into_read_only";
        let x = ManuallyDrop::new(self);
        let (rt, off, len, align) = (x.rt, x.off, x.len, x.align);
        let bytes = byte_len::<T>(rt, CALL, len)?;
        rt.convert_sync(CALL, Kind::ReadOnly, off, bytes, size_of::<T>(), true)?;
        Ok(SymReadOnly {
            rt,
            off,
            len,
            align,
            _t: PhantomData,
        })
    }
}

impl<'s, T: Pod> SymReadOnly<'s, T> {
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
    pub fn local_ptr(&self) -> *const T {
        self.rt.local_addr(self.off).cast_const().cast()
    }

    /// This PE's copy, without copying. Also what `Deref` gives: `&x[..]`,
    /// `x[i]`, `x.iter()` (except `get`, which reads a peer's copy here;
    /// the slice's is `x.as_slice().get(i)`).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<f64>(3)?.into_read_only()?;
    /// let s: &[f64] = x.as_slice();
    /// assert_eq!(s, &[0.0; 3]);
    /// assert_eq!(x[2], 0.0);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `off..off + len * size_of::<T>()` is this object's live
        // allocation in this PE's segment (the read-only object keeps it
        // allocated), aligned for `T`, mapped while `'s` borrows the
        // runtime, initialized (the segment starts zeroed and is written
        // only with whole bytes) and every bit pattern is a valid `T`.
        // Nothing writes it while the slice lives, which borrows `self`:
        // the conversion that made `self` excluded every writer (the
        // module documentation), and only consuming `self` (`into_mut`,
        // `free`, drop) ends that, which the borrow forbids until the
        // slice is gone.
        unsafe { std::slice::from_raw_parts(self.local_ptr(), self.len) }
    }

    /// `shmem_get`: copies elements `start..start + dst.len()` of `pe`'s
    /// copy into `dst`; returns when they are in `dst`. Every PE's copy is
    /// read-only too, so this reads what `pe` held at the conversion.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u32>(4)?.into_read_only()?;
    /// let mut two = [9u32; 2];
    /// x.get(2, &mut two, 0)?;
    /// assert_eq!(two, [0, 0]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn get(&self, start: usize, dst: &mut [T], pe: usize) -> Result<()> {
        super::get_elems(self.rt, self.off, self.len, start, dst, pe)
    }

    /// `shmem_g`: element `index` of `pe`'s copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<i64>(1)?.into_read_only()?;
    /// assert_eq!(x.g(0, sh.n_pes() - 1)?, 0);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn g(&self, index: usize, pe: usize) -> Result<T> {
        super::g_elem(self.rt, self.off, self.len, index, pe)
    }

    /// Makes the object writable again on every PE: the [`SymVec`] back.
    /// Collective over all PEs, each converting the same object: a sync
    /// with the same check as [`SymVec::into_read_only`], so that no PE
    /// can write before every PE has given up its read-only object (and
    /// with it every slice of it). On error the object is gone from this
    /// PE without being freed.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u8>(8)?.into_read_only()?;
    /// let first = x[0];
    /// let x = x.into_mut()?;
    /// x.write(0, first + 1);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn into_mut(self) -> Result<SymVec<'s, T>> {
        const CALL: &str = "SymReadOnly::into_mut";
        let x = ManuallyDrop::new(self);
        let (rt, off, len, align) = (x.rt, x.off, x.len, x.align);
        rt.convert_sync(
            CALL,
            Kind::Writable,
            off,
            len * size_of::<T>(),
            size_of::<T>(),
            false,
        )?;
        Ok(SymVec {
            rt,
            off,
            len,
            align,
            _t: PhantomData,
        })
    }

    /// `shmem_free` of a read-only object, reporting errors (drop does the
    /// same but can only print them). Collective: a sync with the check of
    /// [`SymVec::into_read_only`] (every PE frees the same read-only
    /// object, so none can allocate and write its memory while another
    /// still reads it), then the free of [`SymVec::free`]. On error
    /// nothing is freed.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.malloc::<u8>(10)?.into_read_only()?;
    /// x.free()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn free(self) -> Result<()> {
        ManuallyDrop::new(self).release()
    }

    fn release(&self) -> Result<()> {
        let bytes = self.len * size_of::<T>();
        self.rt.convert_sync(
            "SymReadOnly::free",
            Kind::FreeReadOnly,
            self.off,
            bytes,
            size_of::<T>(),
            false,
        )?;
        self.rt.free_bytes("shmem_free", self.off, bytes)
    }
}

impl<T: Pod> std::ops::Deref for SymReadOnly<'_, T> {
    type Target = [T];

    /// [`SymReadOnly::as_slice`].
    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Pod> AsRef<[T]> for SymReadOnly<'_, T> {
    #[inline]
    fn as_ref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<'a, T: Pod> IntoIterator for &'a SymReadOnly<'_, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> std::slice::Iter<'a, T> {
        self.as_slice().iter()
    }
}

impl<T: Pod> Drop for SymReadOnly<'_, T> {
    /// Frees the object collectively (see [`SymReadOnly::free`]); an error
    /// is printed to stderr. While the thread panics nothing is freed (the
    /// other PEs are not taking part).
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Err(e) = self.release() {
            conduits::report!("{e}");
        }
    }
}

/// A symmetric object whose copies a collective may read: [`SymVec`] or
/// [`SymReadOnly`] (the `source` of [`crate::Team`]'s collectives). Sealed.
pub trait Readable<T: Pod>: sealed::Sealed {
    /// Segment offset of element 0.
    fn segment_offset(&self) -> usize;
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether the object has no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T: crate::Pod> Sealed for crate::SymVec<'_, T> {}
    impl<T: crate::Pod> Sealed for super::SymReadOnly<'_, T> {}
}

impl<T: Pod> Readable<T> for SymVec<'_, T> {
    fn segment_offset(&self) -> usize {
        self.off
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl<T: Pod> Readable<T> for SymReadOnly<'_, T> {
    fn segment_offset(&self) -> usize {
        self.off
    }
    fn len(&self) -> usize {
        self.len
    }
}
