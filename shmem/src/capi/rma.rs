//! RMA: put, get, p, g, iput, iget, ibput, ibget, the non-blocking and
//! context forms, and put-with-signal, for every standard type, the sized
//! forms and `mem`.

use super::{CTX_DEFAULT, CtxH, ctx_op, fail, for_rma_types, for_sized_types, nbytes, ok, rt};
use crate::error::Result;
use crate::runtime::Runtime;
use conduits::prelude::*;

use std::ffi::{c_int, c_void};

/// The default context, as a handle.
const DEFAULT: CtxH = CTX_DEFAULT as CtxH;

/// `SHMEM_SIGNAL_SET`.
pub(crate) const SIGNAL_SET: c_int = 0;
/// `SHMEM_SIGNAL_ADD`.
pub(crate) const SIGNAL_ADD: c_int = 1;

/// Puts `len` bytes from `src` to symmetric `dest` on context `ctx`'s PE
/// `pe` (non-blocking when `nbi`).
///
/// # Safety
/// `src..src+len` must be readable (and, when `nbi`, stay unmodified until
/// the next quiet).
#[inline(always)]
pub(crate) unsafe fn put_bytes(
    call: &'static str,
    ctx: CtxH,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    nbi: bool,
) {
    let rt = rt(call);
    let pe = pe as usize;
    let r = (|| -> Result<()> {
        let op = ctx_op(rt, call, ctx)?;
        if len == 0 {
            return op.target(call, pe, true).map(drop);
        }
        let off = rt.sym_offset(call, dest as usize, len)?;
        if nbi {
            // A symmetric source is named by its address in the segment's
            // own mapping (the same bytes), where the conduit can read it
            // as the put is issued instead of copying it at the call.
            let src = rt
                .segment_alias(src as usize, len)
                .map_or(src.cast::<u8>(), |a| a as *const u8);
            // SAFETY: the caller keeps `src` valid and unmodified until the
            // next quiet (the C contract of the nbi routines); its alias in
            // the segment is the same bytes, mapped for the whole job.
            unsafe { op.put_nbi(call, pe, off, src, len) }
        } else {
            // SAFETY: the caller passes `len` readable bytes at `src` (the
            // C contract); they are read by address, never referenced
            // (they may be symmetric memory).
            unsafe { op.put_from(call, pe, off, src.cast(), len) }
        }
    })();
    ok(r)
}

/// Gets `len` bytes from symmetric `src` on context `ctx`'s PE `pe` into
/// `dest` (non-blocking when `nbi`).
///
/// # Safety
/// `dest..dest+len` must be writable (and, when `nbi`, untouched by the
/// program until the next quiet).
#[inline(always)]
pub(crate) unsafe fn get_bytes(
    call: &'static str,
    ctx: CtxH,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    pe: c_int,
    nbi: bool,
) {
    let rt = rt(call);
    let pe = pe as usize;
    let r = (|| -> Result<()> {
        let op = ctx_op(rt, call, ctx)?;
        if len == 0 {
            return op.target(call, pe, false).map(drop);
        }
        let off = rt.sym_offset(call, src as usize, len)?;
        // A symmetric destination is named by its address in the segment's
        // own mapping (the same bytes), where the conduit lands the data
        // as it arrives instead of copying it there from a buffer.
        let dest = rt
            .segment_alias(dest as usize, len)
            .map_or(dest.cast::<u8>(), |a| a as *mut u8);
        if nbi {
            // SAFETY: the caller keeps `dest` valid and untouched until the
            // next quiet; its alias in the segment is the same bytes,
            // mapped for the whole job.
            unsafe { op.get_nbi(call, pe, off, dest, len) }
        } else {
            // SAFETY: the caller passes `len` writable bytes at `dest` (the
            // C contract), or their alias in the segment; they are written
            // by address, never referenced (they may be symmetric memory).
            unsafe { op.get_into(call, pe, off, dest, len) }
        }
    })();
    ok(r)
}

/// Strided transfer of `nblocks` blocks of `bsize` elements of `es` bytes:
/// block `k` goes from `src + k * sst` elements to `dest + k * dst`
/// elements (`iput`/`iget` are `bsize == 1`).
///
/// # Safety
/// Every local block must be readable (put) or writable (get).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn strided(
    call: &'static str,
    ctx: CtxH,
    put: bool,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    bsize: usize,
    nblocks: usize,
    es: usize,
    pe: c_int,
) {
    let rt = rt(call);
    let pe = pe as usize;
    let r = (|| -> Result<()> {
        let op = ctx_op(rt, call, ctx)?;
        op.target(call, pe, put)?;
        let blen = nbytes(rt, call, bsize, es)?;
        if blen == 0 {
            return Ok(());
        }
        let step = |base: usize, stride: isize, k: usize| {
            base.wrapping_add((stride.wrapping_mul(k as isize) as usize).wrapping_mul(es))
        };
        for k in 0..nblocks {
            let d = step(dest as usize, dst, k);
            let s = step(src as usize, sst, k);
            if put {
                let off = rt.sym_offset(call, d, blen)?;
                // SAFETY: the caller passes readable local blocks (the C
                // contract), read by address only.
                unsafe { op.put_from(call, pe, off, s as *const u8, blen) }?;
            } else {
                let off = rt.sym_offset(call, s, blen)?;
                // SAFETY: the caller passes writable local blocks (the C
                // contract), written by address only.
                unsafe { op.get_into(call, pe, off, d as *mut u8, blen) }?;
            }
        }
        Ok(())
    })();
    ok(r)
}

/// Put-with-signal of `len` bytes, then the 64-bit signal at `sig` updated
/// with `sig_op`.
///
/// # Safety
/// `src..src+len` must be readable.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn put_signal(
    call: &'static str,
    ctx: CtxH,
    dest: *mut c_void,
    src: *const c_void,
    len: usize,
    sig: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) {
    let rt = rt(call);
    let pe = pe as usize;
    let r = (|| -> Result<()> {
        let ctx = ctx_op(rt, call, ctx)?;
        let op = signal_op(rt, call, sig_op)?;
        let sig_off = rt.sym_offset(call, sig as usize, 8)?;
        let off = if len == 0 {
            0
        } else {
            rt.sym_offset(call, dest as usize, len)?
        };
        // SAFETY: the caller passes `len` readable bytes at `src` (the C
        // contract), read by address only.
        unsafe { ctx.put_signal_from(call, pe, off, src.cast(), len, sig_off, op, signal) }
    })();
    ok(r)
}

/// The signal operation `SHMEM_SIGNAL_SET` or `SHMEM_SIGNAL_ADD`.
pub(crate) fn signal_op(rt: &Runtime, call: &'static str, op: c_int) -> Result<SignalOp> {
    match op {
        SIGNAL_SET => Ok(SignalOp::Set),
        SIGNAL_ADD => Ok(SignalOp::Add),
        _ => Err(super::invalid(
            rt,
            call,
            format!("signal operation {op} is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD"),
        )),
    }
}

/// The routines of one element type `T` whose C names are built by
/// `$name!(prefix, op)`.
macro_rules! rma_family {
    ($name:ident; $(($m:ident $n:literal $t:ty))*) => {$(
        mod $m {
            use super::*;
            type T = $t;
            const ES: usize = size_of::<T>();

            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "put", "")))]
            pub unsafe extern "C" fn put(dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_", $n, "put", "");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` readable elements at `source`.
                unsafe { put_bytes(CALL, DEFAULT, dest.cast(), source.cast(), len, pe, false) }
            }
            weak_alias!($name!("shmem_", $n, "put", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "put", "")))]
            pub unsafe extern "C" fn ctx_put(ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_ctx_", $n, "put", "");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` readable elements at `source`.
                unsafe { put_bytes(CALL, ctx, dest.cast(), source.cast(), len, pe, false) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "put", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "put", "_nbi")))]
            pub unsafe extern "C" fn put_nbi(dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_", $n, "put", "_nbi");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `source` stays valid until quiet.
                unsafe { put_bytes(CALL, DEFAULT, dest.cast(), source.cast(), len, pe, true) }
            }
            weak_alias!($name!("shmem_", $n, "put", "_nbi"));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "put", "_nbi")))]
            pub unsafe extern "C" fn ctx_put_nbi(ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_ctx_", $n, "put", "_nbi");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `source` stays valid until quiet.
                unsafe { put_bytes(CALL, ctx, dest.cast(), source.cast(), len, pe, true) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "put", "_nbi"));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "get", "")))]
            pub unsafe extern "C" fn get(dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_", $n, "get", "");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` writable elements at `dest`.
                unsafe { get_bytes(CALL, DEFAULT, dest.cast(), source.cast(), len, pe, false) }
            }
            weak_alias!($name!("shmem_", $n, "get", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "get", "")))]
            pub unsafe extern "C" fn ctx_get(ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_ctx_", $n, "get", "");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` writable elements at `dest`.
                unsafe { get_bytes(CALL, ctx, dest.cast(), source.cast(), len, pe, false) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "get", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "get", "_nbi")))]
            pub unsafe extern "C" fn get_nbi(dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_", $n, "get", "_nbi");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `dest` stays valid until quiet.
                unsafe { get_bytes(CALL, DEFAULT, dest.cast(), source.cast(), len, pe, true) }
            }
            weak_alias!($name!("shmem_", $n, "get", "_nbi"));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "get", "_nbi")))]
            pub unsafe extern "C" fn ctx_get_nbi(ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, pe: c_int) {
                const CALL: &str = $name!("shmem_ctx_", $n, "get", "_nbi");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `dest` stays valid until quiet.
                unsafe { get_bytes(CALL, ctx, dest.cast(), source.cast(), len, pe, true) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "get", "_nbi"));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "iput", "")))]
            pub unsafe extern "C" fn iput(dest: *mut T, source: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int) {
                // SAFETY: the C contract: the strided source elements are readable.
                unsafe { strided($name!("shmem_", $n, "iput", ""), DEFAULT, true, dest.cast(), source.cast(), dst, sst, 1, nelems, ES, pe) }
            }
            weak_alias!($name!("shmem_", $n, "iput", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "iput", "")))]
            pub unsafe extern "C" fn ctx_iput(ctx: CtxH, dest: *mut T, source: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int) {
                // SAFETY: the C contract: the strided source elements are readable.
                unsafe { strided($name!("shmem_ctx_", $n, "iput", ""), ctx, true, dest.cast(), source.cast(), dst, sst, 1, nelems, ES, pe) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "iput", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "iget", "")))]
            pub unsafe extern "C" fn iget(dest: *mut T, source: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int) {
                // SAFETY: the C contract: the strided destination elements are writable.
                unsafe { strided($name!("shmem_", $n, "iget", ""), DEFAULT, false, dest.cast(), source.cast(), dst, sst, 1, nelems, ES, pe) }
            }
            weak_alias!($name!("shmem_", $n, "iget", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "iget", "")))]
            pub unsafe extern "C" fn ctx_iget(ctx: CtxH, dest: *mut T, source: *const T, dst: isize, sst: isize, nelems: usize, pe: c_int) {
                // SAFETY: the C contract: the strided destination elements are writable.
                unsafe { strided($name!("shmem_ctx_", $n, "iget", ""), ctx, false, dest.cast(), source.cast(), dst, sst, 1, nelems, ES, pe) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "iget", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "ibput", "")))]
            pub unsafe extern "C" fn ibput(dest: *mut T, source: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int) {
                // SAFETY: the C contract: the source blocks are readable.
                unsafe { strided($name!("shmem_", $n, "ibput", ""), DEFAULT, true, dest.cast(), source.cast(), dst, sst, bsize, nblocks, ES, pe) }
            }
            weak_alias!($name!("shmem_", $n, "ibput", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "ibput", "")))]
            pub unsafe extern "C" fn ctx_ibput(ctx: CtxH, dest: *mut T, source: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int) {
                // SAFETY: the C contract: the source blocks are readable.
                unsafe { strided($name!("shmem_ctx_", $n, "ibput", ""), ctx, true, dest.cast(), source.cast(), dst, sst, bsize, nblocks, ES, pe) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "ibput", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "ibget", "")))]
            pub unsafe extern "C" fn ibget(dest: *mut T, source: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int) {
                // SAFETY: the C contract: the destination blocks are writable.
                unsafe { strided($name!("shmem_", $n, "ibget", ""), DEFAULT, false, dest.cast(), source.cast(), dst, sst, bsize, nblocks, ES, pe) }
            }
            weak_alias!($name!("shmem_", $n, "ibget", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "ibget", "")))]
            pub unsafe extern "C" fn ctx_ibget(ctx: CtxH, dest: *mut T, source: *const T, dst: isize, sst: isize, bsize: usize, nblocks: usize, pe: c_int) {
                // SAFETY: the C contract: the destination blocks are writable.
                unsafe { strided($name!("shmem_ctx_", $n, "ibget", ""), ctx, false, dest.cast(), source.cast(), dst, sst, bsize, nblocks, ES, pe) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "ibget", ""));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "put", "_signal")))]
            pub unsafe extern "C" fn put_signal_(dest: *mut T, source: *const T, nelems: usize, sig: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
                const CALL: &str = $name!("shmem_", $n, "put", "_signal");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` readable elements at `source`.
                unsafe { put_signal(CALL, DEFAULT, dest.cast(), source.cast(), len, sig, signal, sig_op, pe) }
            }
            weak_alias!($name!("shmem_", $n, "put", "_signal"));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "put", "_signal")))]
            pub unsafe extern "C" fn ctx_put_signal(ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, sig: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
                const CALL: &str = $name!("shmem_ctx_", $n, "put", "_signal");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` readable elements at `source`.
                unsafe { put_signal(CALL, ctx, dest.cast(), source.cast(), len, sig, signal, sig_op, pe) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "put", "_signal"));
            #[unsafe(export_name = concat!("p", $name!("shmem_", $n, "put", "_signal_nbi")))]
            pub unsafe extern "C" fn put_signal_nbi(dest: *mut T, source: *const T, nelems: usize, sig: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
                const CALL: &str = $name!("shmem_", $n, "put", "_signal_nbi");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` readable elements at `source` (completed before return).
                unsafe { put_signal(CALL, DEFAULT, dest.cast(), source.cast(), len, sig, signal, sig_op, pe) }
            }
            weak_alias!($name!("shmem_", $n, "put", "_signal_nbi"));
            #[unsafe(export_name = concat!("p", $name!("shmem_ctx_", $n, "put", "_signal_nbi")))]
            pub unsafe extern "C" fn ctx_put_signal_nbi(ctx: CtxH, dest: *mut T, source: *const T, nelems: usize, sig: *mut u64, signal: u64, sig_op: c_int, pe: c_int) {
                const CALL: &str = $name!("shmem_ctx_", $n, "put", "_signal_nbi");
                let len = ok(nbytes(rt(CALL), CALL, nelems, ES));
                // SAFETY: the C contract: `nelems` readable elements at `source` (completed before return).
                unsafe { put_signal(CALL, ctx, dest.cast(), source.cast(), len, sig, signal, sig_op, pe) }
            }
            weak_alias!($name!("shmem_ctx_", $n, "put", "_signal_nbi"));
        }
    )*};
}

/// `shmem_<prefix><type>_<op>` names.
macro_rules! typed_name {
    ($pre:literal, $n:literal, $op:literal, $suf:literal) => {
        concat!($pre, $n, "_", $op, $suf)
    };
}

/// `shmem_<prefix><op><size>` names.
macro_rules! sized_name {
    ($pre:literal, $n:literal, $op:literal, $suf:literal) => {
        concat!($pre, $op, $n, $suf)
    };
}

macro_rules! rma_typed {
    ($($row:tt)*) => { rma_family!(typed_name; $($row)*); };
}
macro_rules! rma_sized {
    ($($row:tt)*) => { rma_family!(sized_name; $($row)*); };
}

for_rma_types!(rma_typed);
for_sized_types!(rma_sized);
rma_family!(sized_name; (mem "mem" u8));

/// The single-element `p` and `g` routines.
macro_rules! rma_pg {
    ($(($m:ident $n:literal $t:ty))*) => {$(
        mod $m {
            use super::*;
            type T = $t;
            const ES: usize = size_of::<T>();

            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_p")))]
            pub unsafe extern "C" fn p(dest: *mut T, value: T, pe: c_int) {
                // SAFETY: `value` is a local of `ES` bytes.
                unsafe { put_bytes(concat!("shmem_", $n, "_p"), DEFAULT, dest.cast(), (&raw const value).cast(), ES, pe, false) }
            }
            weak_alias!(concat!("shmem_", $n, "_p"));
            #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_p")))]
            pub unsafe extern "C" fn ctx_p(ctx: CtxH, dest: *mut T, value: T, pe: c_int) {
                // SAFETY: `value` is a local of `ES` bytes.
                unsafe { put_bytes(concat!("shmem_ctx_", $n, "_p"), ctx, dest.cast(), (&raw const value).cast(), ES, pe, false) }
            }
            weak_alias!(concat!("shmem_ctx_", $n, "_p"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_g")))]
            pub unsafe extern "C" fn g(source: *const T, pe: c_int) -> T {
                let mut v = std::mem::MaybeUninit::<T>::zeroed();
                // SAFETY: `v` is a local of `ES` writable bytes.
                unsafe { get_bytes(concat!("shmem_", $n, "_g"), DEFAULT, v.as_mut_ptr().cast(), source.cast(), ES, pe, false) };
                // SAFETY: zero-initialized, then overwritten with a value's bytes; every bit pattern is a valid `T`.
                unsafe { v.assume_init() }
            }
            weak_alias!(concat!("shmem_", $n, "_g"));
            #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_g")))]
            pub unsafe extern "C" fn ctx_g(ctx: CtxH, source: *const T, pe: c_int) -> T {
                let mut v = std::mem::MaybeUninit::<T>::zeroed();
                // SAFETY: `v` is a local of `ES` writable bytes.
                unsafe { get_bytes(concat!("shmem_ctx_", $n, "_g"), ctx, v.as_mut_ptr().cast(), source.cast(), ES, pe, false) };
                // SAFETY: zero-initialized, then overwritten with a value's bytes; every bit pattern is a valid `T`.
                unsafe { v.assume_init() }
            }
            weak_alias!(concat!("shmem_ctx_", $n, "_g"));
        }
    )*};
}

/// `for_rma_types` without `long double`, whose by-value passing (x87
/// registers and memory) Rust cannot express: `shmem.h` defines
/// `shmem_longdouble_p` and `_g` inline over `shmem_putmem`/`getmem`.
macro_rules! pg_types {
    ($($row:tt)*) => { pg_filter!([] $($row)*); };
}
macro_rules! pg_filter {
    ([$($ok:tt)*]) => { rma_pg!($($ok)*); };
    ([$($ok:tt)*] (t_longdouble $n:literal $t:ty) $($rest:tt)*) => { pg_filter!([$($ok)*] $($rest)*); };
    ([$($ok:tt)*] $row:tt $($rest:tt)*) => { pg_filter!([$($ok)* $row] $($rest)*); };
}

mod pg {
    use super::*;
    for_rma_types!(pg_types);
}

/// `shmem_signal_add` / `shmem_signal_set` (1.6) and their ctx forms.
macro_rules! signal_update {
    ($($f:ident $cf:ident $name:literal $op:ident;)*) => {$(
        #[unsafe(export_name = concat!("p", concat!("shmem_", $name)))]
        unsafe extern "C" fn $f(sig: *mut u64, signal: u64, pe: c_int) {
            signal_amo(concat!("shmem_", $name), DEFAULT, sig, signal, conduits::AmoOp::$op, pe)
        }
        weak_alias!(concat!("shmem_", $name));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $name)))]
        unsafe extern "C" fn $cf(ctx: CtxH, sig: *mut u64, signal: u64, pe: c_int) {
            signal_amo(concat!("shmem_ctx_", $name), ctx, sig, signal, conduits::AmoOp::$op, pe)
        }
        weak_alias!(concat!("shmem_ctx_", $name));
    )*};
}
signal_update!(
    signal_add ctx_signal_add "signal_add" Add;
    signal_set ctx_signal_set "signal_set" Set;
);

fn signal_amo(
    call: &'static str,
    ctx: CtxH,
    sig: *mut u64,
    value: u64,
    op: conduits::AmoOp,
    pe: c_int,
) {
    let rt = rt(call);
    let r = (|| -> Result<()> {
        let ctx = ctx_op(rt, call, ctx)?;
        let off = rt.sym_offset(call, sig as usize, 8)?;
        ctx.atomic(
            call,
            pe as usize,
            off,
            op,
            conduits::AmoWidth::W64,
            value,
            0,
            true,
        )
        .map(drop)
    })();
    if let Err(e) = r {
        fail(e)
    }
}
