//! Loads, stores and copies of segment memory: the one way the runtime's
//! Rust code touches the bytes of a symmetric segment.
//!
//! # The model
//!
//! A segment is memory shared with other processes (the PEs of a host map
//! each other's segments on `smp`, and a routed job's network conduit
//! serves the same file) and with devices (a board's DMA), which Rust's
//! abstract machine does not model: to it, the bytes of a mapping can
//! change between two reads of this process without any write of this
//! process. Rust code can still use such memory soundly on two
//! conditions, which this module keeps:
//!
//! 1. **No references.** A `&T` or `&mut T` promises the compiler that
//!    nothing else writes (or, for `&mut`, reads) the memory while it
//!    lives, which another PE, a progress thread or the program's own
//!    later put can break at any moment. Segment memory is reached only
//!    through raw pointers; every function here takes them.
//! 2. **No data races within the process.** Two threads of one process
//!    that touch the same bytes at once, at least one writing, race, and
//!    a race between accesses that are not all atomic is undefined
//!    behaviour whatever the bytes (Rust's memory model is C++20's:
//!    "every bit pattern is a valid `T`" does not help). So every access
//!    here is a *relaxed atomic* load or store. Relaxed atomics order
//!    nothing, and cost nothing on the CPUs fshmem runs on: an aligned
//!    8-byte relaxed store is the same `mov` a plain store is; what a
//!    program needs ordered it orders with the runtime's synchronization
//!    (quiet, barriers, waits, signals), whose atomics and fences are
//!    acquire/release.
//!
//! How wide each access is matters too: a race between an atomic *write*
//! and another atomic access of a different size is not allowed by the
//! model either. So an element of a type whose size is 1, 2, 4 or 8 bytes
//! and which is aligned to its size is always accessed whole, at its own
//! width ([`load`], [`store`], [`load_elems`], [`store_elems`]): the same
//! single instruction a plain access compiles to, and the same width on
//! every path of the typed API, so that two threads reading and writing
//! elements of one object never race. Other types (`u128`, arrays,
//! complex numbers) and untyped byte ranges ([`copy_out`], [`copy_in`],
//! [`copy_shared`]) move as 8-byte words aligned to 8 in the segment,
//! with single bytes at the edges; words always fall on the same
//! boundaries, so two such copies of one range use the same sizes.
//!
//! # Who uses it
//!
//! The Rust API's local accesses (`shmem::SymVec::read`, `write` and the
//! bulk copies), the collective engine's reads and writes of this PE's
//! segment and its copies into peers' mapped segments, the allocator,
//! the C ABI's copies of its arguments, and, in the conduits, every
//! transfer into or out of *this PE's own* segment: `smp` and `ofi` to
//! themselves, the `ipv6` and `ofi` engines (`SegMemory`, run by a
//! progress thread), `smp`'s Long active-message payloads. So on `smp`,
//! `ipv6` and `ofi` every access this process makes to its own segment is
//! atomic.
//!
//! # What stays outside Rust's guarantees
//!
//! Said plainly, so that nobody reads more into the above than it holds:
//!
//! - Other processes (PEs on `smp`, a routed job's peers) and devices
//!   (an fpga board) write segments without Rust's knowledge. Their
//!   accesses are not part of this process's execution in Rust's model;
//!   atomics and raw pointers are the recognised way of sharing memory
//!   with them (as with any shared-memory IPC), and the hardware keeps
//!   aligned accesses of up to 8 bytes whole.
//! - C code (the C ABI's callers) accesses its symmetric variables with
//!   C's plain loads and stores; C's rules, not Rust's, govern what it
//!   may race with.
//! - The `smp` conduit's puts and gets to *other* PEs copy with `memcpy`
//!   (vector instructions: word-by-word atomics cost about a third of a
//!   64 KiB put's bandwidth). That memory is the peer's; but this
//!   process maps it too, so two threads of this process whose transfers
//!   touch the same bytes of a peer at the same moment race in Rust's
//!   model, as they race in OpenSHMEM's, which calls the result
//!   unspecified.
//! - A byte range copied as words that overlaps, at the same moment, an
//!   element access of a narrower type from another thread (a `u32`
//!   element read while the progress thread writes a peer's put into the
//!   same bytes) is a race of atomics of different sizes, which Rust's
//!   model leaves undefined and x86-64 and AArch64 perform as the
//!   individual whole accesses. OpenSHMEM already calls such a program's
//!   result unspecified (a local access concurrent with a put to the same
//!   bytes); the runtime's own paths never do it.
//! - Transfers a conduit hands to hardware or to a library (a NIC's RDMA
//!   through libfabric, a board's DMA) access the memory as devices do.
//!   The `fpga` conduit's segment is its board's memory, seen through a
//!   mapped window that the conduit's host copies to and from with plain
//!   copies (device memory, also for its own PE).

use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering::Relaxed};

/// The width a `T` is accessed at whole: its size when that is 1, 2, 4 or
/// 8 bytes and `T` is aligned to it, else `None` (moved as words).
const fn whole<T>() -> Option<usize> {
    let n = size_of::<T>();
    match n {
        1 | 2 | 4 | 8 if align_of::<T>() >= n => Some(n),
        _ => None,
    }
}

/// Loads the `T` at `p` with relaxed atomic accesses: one access of its
/// own width when `T` is 1, 2, 4 or 8 bytes and aligned to that, else
/// words with byte edges (see the module documentation).
///
/// # Safety
/// `p` is aligned for `T` and valid for reads of `size_of::<T>()` bytes
/// for the call, no Rust reference covers them, and every bit pattern of
/// that size is a valid `T`.
#[inline(always)]
pub unsafe fn load<T: Copy>(p: *const T) -> T {
    // SAFETY: (every arm) the caller's contract; `whole` checked that `T`
    // is aligned to the width, so the atomic's alignment holds, and the
    // loaded integer has `T`'s size, whose every bit pattern is a `T`.
    unsafe {
        match whole::<T>() {
            Some(1) => std::mem::transmute_copy(&AtomicU8::from_ptr(p as *mut u8).load(Relaxed)),
            Some(2) => std::mem::transmute_copy(&AtomicU16::from_ptr(p as *mut u16).load(Relaxed)),
            Some(4) => std::mem::transmute_copy(&AtomicU32::from_ptr(p as *mut u32).load(Relaxed)),
            Some(8) => std::mem::transmute_copy(&AtomicU64::from_ptr(p as *mut u64).load(Relaxed)),
            _ => {
                let mut v = std::mem::MaybeUninit::<T>::uninit();
                copy_out(p.cast(), v.as_mut_ptr().cast(), size_of::<T>());
                v.assume_init()
            }
        }
    }
}

/// Stores `v` at `p` with relaxed atomic accesses, as [`load`] reads.
///
/// # Safety
/// `p` is aligned for `T` and valid for writes of `size_of::<T>()` bytes
/// for the call, and no Rust reference covers them.
#[inline(always)]
pub unsafe fn store<T: Copy>(p: *mut T, v: T) {
    // SAFETY: (every arm) the caller's contract; `whole` checked the
    // alignment; the integer stored has `T`'s size and holds `v`'s bytes.
    unsafe {
        match whole::<T>() {
            Some(1) => AtomicU8::from_ptr(p.cast()).store(std::mem::transmute_copy(&v), Relaxed),
            Some(2) => AtomicU16::from_ptr(p.cast()).store(std::mem::transmute_copy(&v), Relaxed),
            Some(4) => AtomicU32::from_ptr(p.cast()).store(std::mem::transmute_copy(&v), Relaxed),
            Some(8) => AtomicU64::from_ptr(p.cast()).store(std::mem::transmute_copy(&v), Relaxed),
            _ => copy_in((&raw const v).cast(), p.cast(), size_of::<T>()),
        }
    }
}

/// Copies `count` elements of segment memory at `src` into `dst`, each as
/// [`load`] reads it (a `src` that is not aligned for `T` moves as words).
///
/// # Safety
/// `src` is valid for reads of `count` elements for the call and covered
/// by no Rust reference; `dst` is aligned for `T`, valid for writes of
/// `count` elements and does not overlap `src`; every bit pattern is a
/// valid `T`.
#[inline]
pub unsafe fn load_elems<T: Copy>(src: *const T, dst: *mut T, count: usize) {
    if whole::<T>().is_some() && src.is_aligned() {
        for k in 0..count {
            // SAFETY: element `k < count` of both ranges (the contract).
            unsafe { dst.add(k).write(load(src.add(k))) };
        }
    } else {
        // SAFETY: the contract, in bytes.
        unsafe { copy_out(src.cast(), dst.cast(), count * size_of::<T>()) };
    }
}

/// Copies `count` elements at `src` into segment memory at `dst`, each as
/// [`store`] writes it (a `dst` that is not aligned for `T` moves as
/// words).
///
/// # Safety
/// `dst` is valid for writes of `count` elements for the call and covered
/// by no Rust reference; `src` is aligned for `T`, valid for reads of
/// `count` elements and does not overlap `dst`.
#[inline]
pub unsafe fn store_elems<T: Copy>(src: *const T, dst: *mut T, count: usize) {
    if whole::<T>().is_some() && dst.is_aligned() {
        for k in 0..count {
            // SAFETY: element `k < count` of both ranges (the contract).
            unsafe { store(dst.add(k), src.add(k).read()) };
        }
    } else {
        // SAFETY: the contract, in bytes.
        unsafe { copy_in(src.cast(), dst.cast(), count * size_of::<T>()) };
    }
}

/// Bytes before the first 8-aligned address at or after `p`, at most
/// `len`.
#[inline(always)]
fn head(p: *const u8, len: usize) -> usize {
    ((p as usize).wrapping_neg() % 8).min(len)
}

/// Copies `len` bytes of segment memory at `src` into private memory at
/// `dst`: relaxed atomic 8-byte loads at 8-aligned addresses of `src`,
/// single bytes at the edges.
///
/// # Safety
/// `src` is valid for reads of `len` bytes for the call and covered by no
/// Rust reference; `dst` is valid for writes of `len` bytes, and no other
/// thread accesses it during the call; the ranges do not overlap.
#[inline]
pub unsafe fn copy_out(src: *const u8, dst: *mut u8, len: usize) {
    let h = head(src, len);
    let words = (len - h) / 8;
    // SAFETY: (every block) offsets stay below `len`; the word loads are at
    // 8-aligned addresses of `src`; `dst` is written unaligned.
    unsafe {
        for i in 0..h {
            dst.add(i)
                .write(AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed));
        }
        for w in 0..words {
            let at = h + 8 * w;
            let v = AtomicU64::from_ptr(src.add(at).cast_mut().cast()).load(Relaxed);
            dst.add(at).cast::<u64>().write_unaligned(v);
        }
        for i in h + 8 * words..len {
            dst.add(i)
                .write(AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed));
        }
    }
}

/// Copies `len` bytes of private memory at `src` into segment memory at
/// `dst`: relaxed atomic 8-byte stores at 8-aligned addresses of `dst`,
/// single bytes at the edges.
///
/// # Safety
/// `dst` is valid for writes of `len` bytes for the call and covered by no
/// Rust reference; `src` is valid for reads of `len` bytes and no other
/// thread writes it during the call; the ranges do not overlap.
#[inline]
pub unsafe fn copy_in(src: *const u8, dst: *mut u8, len: usize) {
    let h = head(dst, len);
    let words = (len - h) / 8;
    // SAFETY: (every block) as in `copy_out`, with the aligned side `dst`.
    unsafe {
        for i in 0..h {
            AtomicU8::from_ptr(dst.add(i)).store(src.add(i).read(), Relaxed);
        }
        for w in 0..words {
            let at = h + 8 * w;
            let v = src.add(at).cast::<u64>().read_unaligned();
            AtomicU64::from_ptr(dst.add(at).cast()).store(v, Relaxed);
        }
        for i in h + 8 * words..len {
            AtomicU8::from_ptr(dst.add(i)).store(src.add(i).read(), Relaxed);
        }
    }
}

/// Writes `len` zero bytes to segment memory at `dst`, as [`copy_in`]
/// writes (a zero-filled allocation).
///
/// # Safety
/// `dst` is valid for writes of `len` bytes for the call and covered by no
/// Rust reference.
#[inline]
pub unsafe fn zero(dst: *mut u8, len: usize) {
    let h = head(dst, len);
    let words = (len - h) / 8;
    // SAFETY: offsets stay below `len`; the words are 8-aligned.
    unsafe {
        for i in 0..h {
            AtomicU8::from_ptr(dst.add(i)).store(0, Relaxed);
        }
        for w in 0..words {
            AtomicU64::from_ptr(dst.add(h + 8 * w).cast()).store(0, Relaxed);
        }
        for i in h + 8 * words..len {
            AtomicU8::from_ptr(dst.add(i)).store(0, Relaxed);
        }
    }
}

/// Copies `len` bytes from `src` to `dst`, both possibly segment memory
/// (the C ABI's buffers, a collective's move within the segment), with
/// `memmove`'s semantics for overlapping ranges: relaxed atomic accesses
/// on both sides, 8-byte words where both are 8-aligned at the same
/// point, else through a buffer on the stack.
///
/// Out of line: the paths that use it (a put to this PE's own segment,
/// the C ABI's buffers) are not the ones whose every instruction counts,
/// and inlined its bounce buffer would enlarge their callers' frames.
///
/// # Safety
/// `src` is valid for reads and `dst` for writes of `len` bytes for the
/// call, and no Rust reference covers either.
#[inline(never)]
pub unsafe fn copy_shared(src: *const u8, dst: *mut u8, len: usize) {
    let (s, d) = (src as usize, dst as usize);
    let overlap_after = d > s && d < s.wrapping_add(len);
    if (s ^ d) % 8 == 0 && !overlap_after {
        // Forward, word for word: when `dst` starts before `src`, each
        // word is read before a store can reach it.
        let h = head(src, len);
        let words = (len - h) / 8;
        // SAFETY: (every block) offsets stay below `len`; `src + at` and
        // `dst + at` are both 8-aligned for the word accesses.
        unsafe {
            for i in 0..h {
                let b = AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed);
                AtomicU8::from_ptr(dst.add(i)).store(b, Relaxed);
            }
            for w in 0..words {
                let at = h + 8 * w;
                let v = AtomicU64::from_ptr(src.add(at).cast_mut().cast()).load(Relaxed);
                AtomicU64::from_ptr(dst.add(at).cast()).store(v, Relaxed);
            }
            for i in h + 8 * words..len {
                let b = AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed);
                AtomicU8::from_ptr(dst.add(i)).store(b, Relaxed);
            }
        }
        return;
    }
    // Through a private buffer, a chunk at a time: forward, or backward
    // when `dst` starts inside `src` (so no chunk is overwritten before it
    // is read).
    const CHUNK: usize = 2048;
    let mut buf = [0u8; CHUNK];
    let chunks = len.div_ceil(CHUNK);
    for k in 0..chunks {
        let k = if overlap_after { chunks - 1 - k } else { k };
        let at = k * CHUNK;
        let n = CHUNK.min(len - at);
        // SAFETY: `at + n <= len`; `buf` is private and holds `n` bytes.
        unsafe {
            copy_out(src.add(at), buf.as_mut_ptr(), n);
            copy_in(buf.as_ptr(), dst.add(at), n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_at_their_width() {
        let mut w = [0u64; 4];
        let p = w.as_mut_ptr().cast::<u8>();
        // SAFETY: every access lies in `w`, a local no reference covers
        // while the raw pointer is used.
        unsafe {
            store(p.add(8).cast::<u32>(), 0xdead_beef);
            assert_eq!(load(p.add(8).cast::<u32>()), 0xdead_beef);
            store(p.add(16).cast::<f64>(), 2.5);
            assert_eq!(load(p.add(16).cast::<f64>()), 2.5);
            // A 16-byte type moves as words; a 3-byte array as bytes.
            store(p.cast::<u128>(), u128::MAX - 7);
            assert_eq!(load(p.cast::<u128>()), u128::MAX - 7);
            store(p.add(25).cast::<[u8; 3]>(), [1, 2, 3]);
            assert_eq!(load(p.add(25).cast::<[u8; 3]>()), [1, 2, 3]);
        }
    }

    #[test]
    fn copies_handle_every_alignment_and_overlap() {
        let src: Vec<u8> = (0..200u8).collect();
        for off in 0..9 {
            for len in [0, 1, 7, 8, 9, 17, 64, 150] {
                let mut seg = [0u8; 200];
                let mut back = [0u8; 200];
                // SAFETY: all ranges lie in the locals; `seg` is reached
                // through its raw pointer only while copying.
                unsafe {
                    copy_in(src.as_ptr(), seg.as_mut_ptr().add(off), len);
                    copy_out(seg.as_ptr().add(off), back.as_mut_ptr(), len);
                }
                assert_eq!(back[..len], src[..len], "off {off} len {len}");
            }
        }
        // memmove semantics, both directions, same and different phase.
        for (s, d) in [(0usize, 8usize), (8, 0), (0, 3), (3, 0), (5, 100), (100, 5)] {
            let mut a: Vec<u8> = (0..=255u8).collect();
            let mut want = a.clone();
            want.copy_within(s..s + 120, d);
            // SAFETY: both ranges lie in `a`, reached by raw pointer only.
            unsafe {
                let p = a.as_mut_ptr();
                copy_shared(p.add(s), p.add(d), 120);
            }
            assert_eq!(a, want, "{s} -> {d}");
        }
        // A copy longer than the bounce buffer, overlapping forward.
        let mut a: Vec<u8> = (0..6000).map(|i| (i % 251) as u8).collect();
        let mut want = a.clone();
        want.copy_within(0..5000, 3);
        // SAFETY: as above.
        unsafe {
            let p = a.as_mut_ptr();
            copy_shared(p, p.add(3), 5000);
        }
        assert_eq!(a, want);
        let mut z = [0xffu8; 40];
        // SAFETY: the range lies in `z`.
        unsafe { zero(z.as_mut_ptr().add(3), 30) };
        assert!(z[3..33].iter().all(|&b| b == 0) && z[..3] == [0xff; 3] && z[33..] == [0xff; 7]);
    }

    #[test]
    fn typed_copies() {
        let src = [1u32, 2, 3, 4, 5];
        let mut seg = [0u32; 5];
        let mut back = [0u32; 5];
        // SAFETY: local arrays of 5 elements, no overlap.
        unsafe {
            store_elems(src.as_ptr(), seg.as_mut_ptr(), 5);
            load_elems(seg.as_ptr(), back.as_mut_ptr(), 5);
        }
        assert_eq!(back, src);
        let src = [[1u8, 2, 3], [4, 5, 6]];
        let mut seg = [[0u8; 3]; 2];
        let mut back = [[0u8; 3]; 2];
        // SAFETY: as above.
        unsafe {
            store_elems(src.as_ptr(), seg.as_mut_ptr(), 2);
            load_elems(seg.as_ptr(), back.as_mut_ptr(), 2);
        }
        assert_eq!(back, src);
    }
}
