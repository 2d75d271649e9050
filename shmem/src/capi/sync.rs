//! Point-to-point synchronization: `wait_until` and `test` with their
//! `_all`, `_any`, `_some` and `_vector` forms, the deprecated `wait`,
//! `shmem_signal_wait_until` and `shmem_signal_fetch`, and locks.
//!
//! Waits read the local word with acquire atomics and serve the conduit
//! between reads, spinning briefly and then yielding (the runtime's
//! [`Backoff`]), exactly as the Rust waits do.

use super::{fail, invalid, ok, rt};
use crate::op::{Op, WordAt, check_aligned};
use crate::runtime::Runtime;
use crate::wait::Cmp;
use conduits::prelude::*;
use conduits::wait::Backoff;
use conduits::{AmoOp, AmoWidth};
use std::ffi::c_int;
use std::sync::atomic::Ordering;

/// `SHMEM_CMP_EQ`..`SHMEM_CMP_LE` as in `shmem.h`.
pub(crate) fn cmp_of(rt: &Runtime, call: &'static str, cmp: c_int) -> Cmp {
    match cmp {
        0 => Cmp::Eq,
        1 => Cmp::Ne,
        2 => Cmp::Gt,
        3 => Cmp::Ge,
        4 => Cmp::Lt,
        5 => Cmp::Le,
        _ => fail(invalid(
            rt,
            call,
            format!("comparison {cmp} is not one of SHMEM_CMP_EQ..SHMEM_CMP_LE"),
        )),
    }
}

/// A word a wait reads atomically.
pub(crate) trait Word: Copy + Ord {
    /// Loads `*p` with acquire ordering.
    ///
    /// # Safety
    /// `p` must be valid and aligned for the type.
    unsafe fn load(p: *const Self) -> Self;
}

macro_rules! word {
    ($($t:ty => $a:ty),*) => {$(
        impl Word for $t {
            #[inline(always)]
            unsafe fn load(p: *const Self) -> Self {
                // SAFETY: the caller passes a valid, aligned word, reached by
                // raw pointer only; the load is atomic, so the runtime's own
                // accesses (atomics, `segmem` copies) do not race with it.
                // The C program's plain stores to it are governed by C's
                // rules, other processes' by no Rust rule.
                unsafe { <$a>::from_ptr(p as *mut _) }.load(Ordering::Acquire) as $t
            }
        }
    )*};
}
word!(
    i16 => std::sync::atomic::AtomicU16, u16 => std::sync::atomic::AtomicU16,
    i32 => std::sync::atomic::AtomicU32, u32 => std::sync::atomic::AtomicU32,
    i64 => std::sync::atomic::AtomicU64, u64 => std::sync::atomic::AtomicU64,
    isize => std::sync::atomic::AtomicUsize, usize => std::sync::atomic::AtomicUsize
);

/// Serves the conduit once (a failed peer or a global exit ends the job);
/// returns whether it served anything (see `ActiveMessages::poll_served`).
#[inline]
fn progress(rt: &Runtime, call: &'static str) -> bool {
    match rt.conduit.poll_served() {
        Ok(served) => served,
        Err(e) => fail(rt.err(call, e)),
    }
}

/// Checks that `p` is a word aligned for `T` (a C program's misaligned
/// wait word is reported, not read): the operation layer's one check.
#[inline]
fn aligned<T>(rt: &Runtime, call: &'static str, p: *const T) {
    ok(check_aligned(
        rt,
        call,
        WordAt::Addr(p as usize),
        align_of::<T>(),
    ))
}

/// Which elements a multi-element wait considers.
#[inline]
fn active(status: *const c_int, i: usize) -> bool {
    // SAFETY: when not null, `status` has the `nelems` entries the C
    // contract requires, and `i < nelems`.
    status.is_null() || unsafe { *status.add(i) } == 0
}

/// The shape of a multi-element wait or test.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    All,
    Any,
    Some,
}

/// Where the next `_any` scan starts.
static ANY_NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One scan of `ivars`: for `All`, whether every active element holds;
/// for `Any`, the index of one that holds; for `Some`, the indices of all
/// that hold (written to `indices`), counted.
///
/// # Safety
/// `ivars` (and `values`, `indices`, `status` when used) must have
/// `nelems` valid entries.
#[allow(clippy::too_many_arguments)]
unsafe fn scan<T: Word>(
    ivars: *const T,
    nelems: usize,
    status: *const c_int,
    cmp: Cmp,
    value: T,
    values: *const T,
    indices: *mut usize,
    mode: Mode,
) -> (bool, usize) {
    let mut count = 0;
    let mut any_active = false;
    // `_any` starts after the index it returned last, so that repeated
    // calls visit every satisfied element (the standard's fairness).
    let first = if mode == Mode::Any && nelems > 0 {
        ANY_NEXT.load(std::sync::atomic::Ordering::Relaxed) % nelems
    } else {
        0
    };
    for j in 0..nelems {
        let i = (first + j) % nelems.max(1);
        if !active(status, i) {
            continue;
        }
        any_active = true;
        // SAFETY: `i < nelems` entries (caller contract).
        let w = unsafe { T::load(ivars.add(i)) };
        let v = if values.is_null() {
            value
        } else {
            // SAFETY: `values` has `nelems` entries (caller contract).
            unsafe { *values.add(i) }
        };
        let holds = cmp.holds(w, v);
        match mode {
            Mode::All if !holds => return (false, 0),
            Mode::Any if holds => {
                ANY_NEXT.store(i + 1, std::sync::atomic::Ordering::Relaxed);
                return (true, i);
            }
            Mode::Some if holds => {
                // SAFETY: `indices` has `nelems` entries and `count <= i`.
                unsafe { *indices.add(count) = i };
                count += 1;
            }
            _ => {}
        }
    }
    match mode {
        Mode::All => (true, 0),
        Mode::Any => (!any_active, usize::MAX),
        Mode::Some => (count > 0 || !any_active, count),
    }
}

/// A multi-element wait (`block`) or test: returns the scan's answer
/// (`All`: 1/0, `Any`: index or `SIZE_MAX`, `Some`: count).
///
/// # Safety
/// As for [`scan`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn multi<T: Word>(
    call: &'static str,
    ivars: *const T,
    nelems: usize,
    status: *const c_int,
    cmp: c_int,
    value: T,
    values: *const T,
    indices: *mut usize,
    mode: Mode,
    block: bool,
) -> usize {
    let rt = rt(call);
    // A wait could spin for progress that only this thread makes; a test
    // polls, which would run handlers inside a handler: neither is a
    // reply (the handler rule of `shmemx.h`).
    ok(rt.not_in_handler(call));
    let cmp = cmp_of(rt, call, cmp);
    if nelems > 0 {
        aligned(rt, call, ivars);
    }
    let mut backoff = Backoff::new();
    loop {
        // SAFETY: the caller's contract.
        let (done, r) = unsafe { scan(ivars, nelems, status, cmp, value, values, indices, mode) };
        if done || !block {
            return match mode {
                Mode::All => done as usize,
                Mode::Any => {
                    if done {
                        r
                    } else {
                        usize::MAX
                    }
                }
                Mode::Some => r,
            };
        }
        if progress(rt, call) {
            backoff.respin();
        }
        backoff.snooze();
    }
}

/// The wait and test routines of one type.
macro_rules! sync_family {
    ($(($m:ident $n:literal $t:ty))*) => {$(
        pub mod $m {
            use super::*;
            type T = $t;
            const NOV: *const T = std::ptr::null();
            const NOI: *mut usize = std::ptr::null_mut();

            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait_until")))]
            pub unsafe extern "C" fn wait_until(ivar: *mut T, cmp: c_int, value: T) {
                // SAFETY: the C contract: `ivar` is a valid word.
                unsafe { multi(concat!("shmem_", $n, "_wait_until"), ivar, 1, std::ptr::null(), cmp, value, NOV, NOI, Mode::All, true) };
            }
            weak_alias!(concat!("shmem_", $n, "_wait_until"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait")))]
            pub unsafe extern "C" fn wait(ivar: *mut T, value: T) {
                // SAFETY: the C contract: `ivar` is a valid word.
                unsafe { multi(concat!("shmem_", $n, "_wait"), ivar, 1, std::ptr::null(), 1, value, NOV, NOI, Mode::All, true) };
            }
            weak_alias!(concat!("shmem_", $n, "_wait"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_test")))]
            pub unsafe extern "C" fn test(ivar: *mut T, cmp: c_int, value: T) -> c_int {
                // SAFETY: the C contract: `ivar` is a valid word.
                unsafe { multi(concat!("shmem_", $n, "_test"), ivar, 1, std::ptr::null(), cmp, value, NOV, NOI, Mode::All, false) as c_int }
            }
            weak_alias!(concat!("shmem_", $n, "_test"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait_until_all")))]
            pub unsafe extern "C" fn wait_until_all(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, value: T) {
                // SAFETY: the C contract: `nelems` valid words and statuses.
                unsafe { multi(concat!("shmem_", $n, "_wait_until_all"), ivars, nelems, status, cmp, value, NOV, NOI, Mode::All, true) };
            }
            weak_alias!(concat!("shmem_", $n, "_wait_until_all"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait_until_any")))]
            pub unsafe extern "C" fn wait_until_any(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, value: T) -> usize {
                // SAFETY: the C contract: `nelems` valid words and statuses.
                unsafe { multi(concat!("shmem_", $n, "_wait_until_any"), ivars, nelems, status, cmp, value, NOV, NOI, Mode::Any, true) }
            }
            weak_alias!(concat!("shmem_", $n, "_wait_until_any"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait_until_some")))]
            pub unsafe extern "C" fn wait_until_some(ivars: *mut T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int, value: T) -> usize {
                // SAFETY: the C contract: `nelems` valid words, statuses and indices.
                unsafe { multi(concat!("shmem_", $n, "_wait_until_some"), ivars, nelems, status, cmp, value, NOV, indices, Mode::Some, true) }
            }
            weak_alias!(concat!("shmem_", $n, "_wait_until_some"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait_until_all_vector")))]
            pub unsafe extern "C" fn wait_until_all_vector(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T) {
                // SAFETY: the C contract: `nelems` valid words, statuses and values.
                unsafe { multi(concat!("shmem_", $n, "_wait_until_all_vector"), ivars, nelems, status, cmp, 0 as T, values, NOI, Mode::All, true) };
            }
            weak_alias!(concat!("shmem_", $n, "_wait_until_all_vector"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait_until_any_vector")))]
            pub unsafe extern "C" fn wait_until_any_vector(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T) -> usize {
                // SAFETY: the C contract: `nelems` valid words, statuses and values.
                unsafe { multi(concat!("shmem_", $n, "_wait_until_any_vector"), ivars, nelems, status, cmp, 0 as T, values, NOI, Mode::Any, true) }
            }
            weak_alias!(concat!("shmem_", $n, "_wait_until_any_vector"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_wait_until_some_vector")))]
            pub unsafe extern "C" fn wait_until_some_vector(ivars: *mut T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int, values: *const T) -> usize {
                // SAFETY: the C contract: `nelems` valid words, statuses, values and indices.
                unsafe { multi(concat!("shmem_", $n, "_wait_until_some_vector"), ivars, nelems, status, cmp, 0 as T, values, indices, Mode::Some, true) }
            }
            weak_alias!(concat!("shmem_", $n, "_wait_until_some_vector"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_test_all")))]
            pub unsafe extern "C" fn test_all(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, value: T) -> c_int {
                // SAFETY: the C contract: `nelems` valid words and statuses.
                unsafe { multi(concat!("shmem_", $n, "_test_all"), ivars, nelems, status, cmp, value, NOV, NOI, Mode::All, false) as c_int }
            }
            weak_alias!(concat!("shmem_", $n, "_test_all"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_test_any")))]
            pub unsafe extern "C" fn test_any(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, value: T) -> usize {
                // SAFETY: the C contract: `nelems` valid words and statuses.
                unsafe { multi(concat!("shmem_", $n, "_test_any"), ivars, nelems, status, cmp, value, NOV, NOI, Mode::Any, false) }
            }
            weak_alias!(concat!("shmem_", $n, "_test_any"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_test_some")))]
            pub unsafe extern "C" fn test_some(ivars: *mut T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int, value: T) -> usize {
                // SAFETY: the C contract: `nelems` valid words, statuses and indices.
                unsafe { multi(concat!("shmem_", $n, "_test_some"), ivars, nelems, status, cmp, value, NOV, indices, Mode::Some, false) }
            }
            weak_alias!(concat!("shmem_", $n, "_test_some"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_test_all_vector")))]
            pub unsafe extern "C" fn test_all_vector(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T) -> c_int {
                // SAFETY: the C contract: `nelems` valid words, statuses and values.
                unsafe { multi(concat!("shmem_", $n, "_test_all_vector"), ivars, nelems, status, cmp, 0 as T, values, NOI, Mode::All, false) as c_int }
            }
            weak_alias!(concat!("shmem_", $n, "_test_all_vector"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_test_any_vector")))]
            pub unsafe extern "C" fn test_any_vector(ivars: *mut T, nelems: usize, status: *const c_int, cmp: c_int, values: *const T) -> usize {
                // SAFETY: the C contract: `nelems` valid words, statuses and values.
                unsafe { multi(concat!("shmem_", $n, "_test_any_vector"), ivars, nelems, status, cmp, 0 as T, values, NOI, Mode::Any, false) }
            }
            weak_alias!(concat!("shmem_", $n, "_test_any_vector"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_test_some_vector")))]
            pub unsafe extern "C" fn test_some_vector(ivars: *mut T, nelems: usize, indices: *mut usize, status: *const c_int, cmp: c_int, values: *const T) -> usize {
                // SAFETY: the C contract: `nelems` valid words, statuses, values and indices.
                unsafe { multi(concat!("shmem_", $n, "_test_some_vector"), ivars, nelems, status, cmp, 0 as T, values, indices, Mode::Some, false) }
            }
            weak_alias!(concat!("shmem_", $n, "_test_some_vector"));
        }
    )*};
}

mod typed {
    use super::*;
    super::super::for_sync_types!(sync_family);
}

/// `shmem_wait` (deprecated): waits until the `long` at `ivar` differs from
/// `value`.
///
/// # Safety
/// `ivar` must be a valid, aligned `long`.
#[unsafe(export_name = "pshmem_wait")]
pub unsafe extern "C" fn shmem_wait(ivar: *mut i64, value: i64) {
    // SAFETY: the C contract.
    unsafe { typed::t_long::wait(ivar, value) }
}
weak_alias!("shmem_wait");

/// `shmem_signal_wait_until`: waits until the local signal word satisfies
/// `cmp`; returns its value.
///
/// # Safety
/// `sig_addr` must be a valid, aligned `uint64_t`.
#[unsafe(export_name = "pshmem_signal_wait_until")]
pub unsafe extern "C" fn shmem_signal_wait_until(
    sig_addr: *mut u64,
    cmp: c_int,
    value: u64,
) -> u64 {
    const CALL: &str = "shmem_signal_wait_until";
    // SAFETY: the C contract: a valid signal word.
    unsafe {
        multi(
            CALL,
            sig_addr,
            1,
            std::ptr::null(),
            cmp,
            value,
            std::ptr::null(),
            std::ptr::null_mut(),
            Mode::All,
            true,
        )
    };
    // SAFETY: as above.
    unsafe { u64::load(sig_addr) }
}
weak_alias!("shmem_signal_wait_until");

/// `shmem_signal_fetch`: the local signal word, read atomically.
///
/// # Safety
/// `sig_addr` must be a valid, aligned `uint64_t`.
#[unsafe(export_name = "pshmem_signal_fetch")]
pub unsafe extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    let rt = rt("shmem_signal_fetch");
    aligned(rt, "shmem_signal_fetch", sig_addr);
    // SAFETY: the C contract: a valid, aligned signal word (checked aligned).
    unsafe { u64::load(sig_addr) }
}
weak_alias!("shmem_signal_fetch");

// ----------------------------------------------------------------------
// Locks: a symmetric `long`, zero when free; the holder's PE number + 1 in
// PE 0's copy while held. Acquiring is a compare-and-swap on PE 0's copy,
// retried with the runtime's backoff while serving the conduit. Every
// access is an operation of the default context ([`Op`]): its checks
// (the handler rule, PE 0, the word's alignment) are the atomics'.

/// The lock word's segment offset.
fn lock_word(rt: &Runtime, call: &'static str, lock: *mut i64) -> usize {
    ok(rt.sym_offset(call, lock as usize, 8))
}

/// One compare-and-swap of the lock word on PE 0: whether it was free
/// (and is now this PE's).
fn try_lock(rt: &Runtime, call: &'static str, off: usize) -> bool {
    let me = rt.my_pe() as u64 + 1;
    ok(Op::default(rt).atomic(call, 0, off, AmoOp::CompareSwap, AmoWidth::W64, me, 0, true)) == 0
}

/// `shmem_set_lock`: waits until this PE holds the lock.
#[unsafe(export_name = "pshmem_set_lock")]
pub extern "C" fn shmem_set_lock(lock: *mut i64) {
    const CALL: &str = "shmem_set_lock";
    let rt = rt(CALL);
    let off = lock_word(rt, CALL, lock);
    let mut backoff = Backoff::new();
    while !try_lock(rt, CALL, off) {
        if progress(rt, CALL) {
            backoff.respin();
        }
        backoff.snooze();
    }
}
weak_alias!("shmem_set_lock");

/// `shmem_test_lock`: takes the lock if free; 0 when taken, 1 when another
/// PE holds it.
#[unsafe(export_name = "pshmem_test_lock")]
pub extern "C" fn shmem_test_lock(lock: *mut i64) -> c_int {
    const CALL: &str = "shmem_test_lock";
    let rt = rt(CALL);
    let off = lock_word(rt, CALL, lock);
    if try_lock(rt, CALL, off) { 0 } else { 1 }
}
weak_alias!("shmem_test_lock");

/// `shmem_clear_lock`: completes this PE's operations (quiet), then
/// releases the lock.
#[unsafe(export_name = "pshmem_clear_lock")]
pub extern "C" fn shmem_clear_lock(lock: *mut i64) {
    const CALL: &str = "shmem_clear_lock";
    let rt = rt(CALL);
    let off = lock_word(rt, CALL, lock);
    let op = Op::default(rt);
    ok(op.quiet(CALL));
    ok(op.atomic(CALL, 0, off, AmoOp::Set, AmoWidth::W64, 0, 0, true));
}
weak_alias!("shmem_clear_lock");
