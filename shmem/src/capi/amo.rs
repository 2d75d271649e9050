//! Atomic memory operations: the standard, extended and bitwise types,
//! their non-blocking fetching forms, the context forms and the deprecated
//! names (`shmem_int_finc`, `shmem_long_cswap`, `shmem_swap`...).
//!
//! Each routine checks the PE and that the word is symmetric and naturally
//! aligned, then runs the conduit's atomic (a CPU atomic on `smp`). The
//! non-blocking fetching forms complete before returning.

use super::{CTX_DEFAULT, CtxH, ctx_op, ok, rt};
use crate::error::Result;
use crate::pod::AmoElem;
use conduits::AmoOp;
use std::ffi::c_int;

const DEFAULT: CtxH = CTX_DEFAULT as CtxH;

/// Runs `op` on the `T` at symmetric `dest` on context `ctx`'s PE `pe`;
/// returns the old value.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn amo<T: AmoElem>(
    call: &'static str,
    ctx: CtxH,
    dest: *const T,
    op: AmoOp,
    operand: T,
    compare: T,
    pe: c_int,
    store: bool,
) -> T {
    let rt = rt(call);
    let r = (|| -> Result<T> {
        let op_ = ctx_op(rt, call, ctx)?;
        let off = rt.sym_offset(call, dest as usize, size_of::<T>())?;
        op_.atomic(
            call,
            pe as usize,
            off,
            op,
            T::WIDTH,
            operand.to_bits(),
            compare.to_bits(),
            store,
        )
        .map(T::from_bits)
    })();
    ok(r)
}

/// Stores `v` at `fetch`, the result of a non-blocking fetching atomic.
///
/// # Safety
/// `fetch` must be writable and aligned for `T`.
#[inline(always)]
unsafe fn store<T>(fetch: *mut T, v: T) {
    // SAFETY: the caller's contract.
    unsafe { fetch.write(v) }
}

/// One atomic routine in its default and context forms. Shapes:
/// `f1` (dest, pe) -> T, `f2` (dest, value, pe) -> T, `p1` (dest, pe),
/// `p2` (dest, value, pe), `cs` (dest, cond, value, pe) -> T, `n1` (fetch,
/// dest, pe), `n2` (fetch, dest, value, pe), `ncs` (fetch, dest, cond,
/// value, pe).
macro_rules! amo_fn {
    ($n:literal $f:ident $cf:ident $op:literal f1 $aop:ident $operand:expr, $store:expr) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub extern "C" fn $f(dest: *mut T, pe: c_int) -> T {
            amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::$aop,
                $operand,
                Z,
                pe,
                $store,
            )
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub extern "C" fn $cf(ctx: CtxH, dest: *mut T, pe: c_int) -> T {
            amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::$aop,
                $operand,
                Z,
                pe,
                $store,
            )
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
    ($n:literal $f:ident $cf:ident $op:literal f2 $aop:ident) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub extern "C" fn $f(dest: *mut T, value: T, pe: c_int) -> T {
            amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::$aop,
                value,
                Z,
                pe,
                true,
            )
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub extern "C" fn $cf(ctx: CtxH, dest: *mut T, value: T, pe: c_int) -> T {
            amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::$aop,
                value,
                Z,
                pe,
                true,
            )
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
    ($n:literal $f:ident $cf:ident $op:literal p1 $aop:ident $operand:expr) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub extern "C" fn $f(dest: *mut T, pe: c_int) {
            amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::$aop,
                $operand,
                Z,
                pe,
                true,
            );
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub extern "C" fn $cf(ctx: CtxH, dest: *mut T, pe: c_int) {
            amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::$aop,
                $operand,
                Z,
                pe,
                true,
            );
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
    ($n:literal $f:ident $cf:ident $op:literal p2 $aop:ident) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub extern "C" fn $f(dest: *mut T, value: T, pe: c_int) {
            amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::$aop,
                value,
                Z,
                pe,
                true,
            );
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub extern "C" fn $cf(ctx: CtxH, dest: *mut T, value: T, pe: c_int) {
            amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::$aop,
                value,
                Z,
                pe,
                true,
            );
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
    ($n:literal $f:ident $cf:ident $op:literal cs) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub extern "C" fn $f(dest: *mut T, cond: T, value: T, pe: c_int) -> T {
            amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::CompareSwap,
                value,
                cond,
                pe,
                true,
            )
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub extern "C" fn $cf(ctx: CtxH, dest: *mut T, cond: T, value: T, pe: c_int) -> T {
            amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::CompareSwap,
                value,
                cond,
                pe,
                true,
            )
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
    ($n:literal $f:ident $cf:ident $op:literal n1 $aop:ident $operand:expr, $store:expr) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub unsafe extern "C" fn $f(fetch: *mut T, dest: *const T, pe: c_int) {
            let v = amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::$aop,
                $operand,
                Z,
                pe,
                $store,
            );
            // SAFETY: the C contract: `fetch` is a writable, aligned `T`.
            unsafe { store(fetch, v) }
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub unsafe extern "C" fn $cf(ctx: CtxH, fetch: *mut T, dest: *const T, pe: c_int) {
            let v = amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::$aop,
                $operand,
                Z,
                pe,
                $store,
            );
            // SAFETY: the C contract: `fetch` is a writable, aligned `T`.
            unsafe { store(fetch, v) }
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
    ($n:literal $f:ident $cf:ident $op:literal n2 $aop:ident) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub unsafe extern "C" fn $f(fetch: *mut T, dest: *mut T, value: T, pe: c_int) {
            let v = amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::$aop,
                value,
                Z,
                pe,
                true,
            );
            // SAFETY: the C contract: `fetch` is a writable, aligned `T`.
            unsafe { store(fetch, v) }
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub unsafe extern "C" fn $cf(ctx: CtxH, fetch: *mut T, dest: *mut T, value: T, pe: c_int) {
            let v = amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::$aop,
                value,
                Z,
                pe,
                true,
            );
            // SAFETY: the C contract: `fetch` is a writable, aligned `T`.
            unsafe { store(fetch, v) }
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
    ($n:literal $f:ident $cf:ident $op:literal ncs) => {
        #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_", $op)))]
        pub unsafe extern "C" fn $f(fetch: *mut T, dest: *mut T, cond: T, value: T, pe: c_int) {
            let v = amo(
                concat!("shmem_", $n, "_atomic_", $op),
                DEFAULT,
                dest,
                AmoOp::CompareSwap,
                value,
                cond,
                pe,
                true,
            );
            // SAFETY: the C contract: `fetch` is a writable, aligned `T`.
            unsafe { store(fetch, v) }
        }
        weak_alias!(concat!("shmem_", $n, "_atomic_", $op));
        #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_", $op)))]
        pub unsafe extern "C" fn $cf(
            ctx: CtxH,
            fetch: *mut T,
            dest: *mut T,
            cond: T,
            value: T,
            pe: c_int,
        ) {
            let v = amo(
                concat!("shmem_ctx_", $n, "_atomic_", $op),
                ctx,
                dest,
                AmoOp::CompareSwap,
                value,
                cond,
                pe,
                true,
            );
            // SAFETY: the C contract: `fetch` is a writable, aligned `T`.
            unsafe { store(fetch, v) }
        }
        weak_alias!(concat!("shmem_ctx_", $n, "_atomic_", $op));
    };
}

/// The extended AMO routines (fetch, set, swap): every AMO type, floats
/// included.
macro_rules! amo_extended {
    ($(($m:ident $n:literal $t:ty))*) => {$(
        pub mod $m {
            use super::*;
            type T = $t;
            const Z: T = 0 as T;
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_atomic_fetch")))]
            pub extern "C" fn fetch(source: *const T, pe: c_int) -> T {
                amo(concat!("shmem_", $n, "_atomic_fetch"), DEFAULT, source, AmoOp::Fetch, Z, Z, pe, false)
            }
            weak_alias!(concat!("shmem_", $n, "_atomic_fetch"));
            #[unsafe(export_name = concat!("p", concat!("shmem_ctx_", $n, "_atomic_fetch")))]
            pub extern "C" fn ctx_fetch(ctx: CtxH, source: *const T, pe: c_int) -> T {
                amo(concat!("shmem_ctx_", $n, "_atomic_fetch"), ctx, source, AmoOp::Fetch, Z, Z, pe, false)
            }
            weak_alias!(concat!("shmem_ctx_", $n, "_atomic_fetch"));
            amo_fn!($n set ctx_set "set" p2 Set);
            amo_fn!($n swap ctx_swap "swap" f2 Swap);
            amo_fn!($n fetch_nbi ctx_fetch_nbi "fetch_nbi" n1 Fetch Z, false);
            amo_fn!($n swap_nbi ctx_swap_nbi "swap_nbi" n2 Swap);
        }
    )*};
}

/// The standard AMO routines (inc, add, compare-swap): the integer types.
macro_rules! amo_standard {
    ($(($m:ident $n:literal $t:ty))*) => {$(
        pub mod $m {
            use super::*;
            type T = $t;
            const Z: T = 0;
            amo_fn!($n fetch_inc ctx_fetch_inc "fetch_inc" f1 FetchAdd 1, true);
            amo_fn!($n inc ctx_inc "inc" p1 Add 1);
            amo_fn!($n fetch_add ctx_fetch_add "fetch_add" f2 FetchAdd);
            amo_fn!($n add ctx_add "add" p2 Add);
            amo_fn!($n compare_swap ctx_compare_swap "compare_swap" cs);
            amo_fn!($n fetch_inc_nbi ctx_fetch_inc_nbi "fetch_inc_nbi" n1 FetchAdd 1, true);
            amo_fn!($n fetch_add_nbi ctx_fetch_add_nbi "fetch_add_nbi" n2 FetchAdd);
            amo_fn!($n compare_swap_nbi ctx_compare_swap_nbi "compare_swap_nbi" ncs);
        }
    )*};
}

/// The bitwise AMO routines: the unsigned and fixed-width integer types.
macro_rules! amo_bitwise {
    ($(($m:ident $n:literal $t:ty))*) => {$(
        pub mod $m {
            use super::*;
            type T = $t;
            const Z: T = 0;
            amo_fn!($n fetch_and ctx_fetch_and "fetch_and" f2 FetchAnd);
            amo_fn!($n and ctx_and "and" p2 And);
            amo_fn!($n fetch_or ctx_fetch_or "fetch_or" f2 FetchOr);
            amo_fn!($n or ctx_or "or" p2 Or);
            amo_fn!($n fetch_xor ctx_fetch_xor "fetch_xor" f2 FetchXor);
            amo_fn!($n xor ctx_xor "xor" p2 Xor);
            amo_fn!($n fetch_and_nbi ctx_fetch_and_nbi "fetch_and_nbi" n2 FetchAnd);
            amo_fn!($n fetch_or_nbi ctx_fetch_or_nbi "fetch_or_nbi" n2 FetchOr);
            amo_fn!($n fetch_xor_nbi ctx_fetch_xor_nbi "fetch_xor_nbi" n2 FetchXor);
        }
    )*};
}

mod extended {
    use super::*;
    amo_extended! {
        (t_float "float" f32) (t_double "double" f64)
        (t_int "int" i32) (t_long "long" i64) (t_longlong "longlong" i64)
        (t_uint "uint" u32) (t_ulong "ulong" u64) (t_ulonglong "ulonglong" u64)
        (t_int32 "int32" i32) (t_int64 "int64" i64) (t_uint32 "uint32" u32)
        (t_uint64 "uint64" u64) (t_size "size" usize) (t_ptrdiff "ptrdiff" isize)
    }
}

mod standard {
    use super::*;
    amo_standard! {
        (t_int "int" i32) (t_long "long" i64) (t_longlong "longlong" i64)
        (t_uint "uint" u32) (t_ulong "ulong" u64) (t_ulonglong "ulonglong" u64)
        (t_int32 "int32" i32) (t_int64 "int64" i64) (t_uint32 "uint32" u32)
        (t_uint64 "uint64" u64) (t_size "size" usize) (t_ptrdiff "ptrdiff" isize)
    }
}

mod bitwise {
    use super::*;
    amo_bitwise! {
        (t_uint "uint" u32) (t_ulong "ulong" u64) (t_ulonglong "ulonglong" u64)
        (t_int32 "int32" i32) (t_int64 "int64" i64) (t_uint32 "uint32" u32)
        (t_uint64 "uint64" u64)
    }
}

/// The deprecated (pre-1.4) names: `shmem_<type>_{fetch,set,swap}` for
/// the extended AMO types and `shmem_<type>_{cswap,finc,inc,fadd,add}` for
/// the standard ones (the types of the 1.5 tables, as other libraries
/// provide them).
macro_rules! amo_deprecated {
    (ext: $(($m:ident $n:literal $t:ty))*; int: $(($mi:ident $ni:literal $ti:ty))*) => {
        $(
        mod $m {
            use super::*;
            type T = $t;
            const Z: T = 0 as T;
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_fetch")))]
            pub extern "C" fn fetch(source: *const T, pe: c_int) -> T {
                amo(concat!("shmem_", $n, "_fetch"), DEFAULT, source, AmoOp::Fetch, Z, Z, pe, false)
            }
            weak_alias!(concat!("shmem_", $n, "_fetch"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_set")))]
            pub extern "C" fn set(dest: *mut T, value: T, pe: c_int) {
                amo(concat!("shmem_", $n, "_set"), DEFAULT, dest, AmoOp::Set, value, Z, pe, true);
            }
            weak_alias!(concat!("shmem_", $n, "_set"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_swap")))]
            pub extern "C" fn swap(dest: *mut T, value: T, pe: c_int) -> T {
                amo(concat!("shmem_", $n, "_swap"), DEFAULT, dest, AmoOp::Swap, value, Z, pe, true)
            }
            weak_alias!(concat!("shmem_", $n, "_swap"));
        }
        )*
        $(
        mod $mi {
            use super::*;
            type T = $ti;
            const Z: T = 0;
            #[unsafe(export_name = concat!("p", concat!("shmem_", $ni, "_cswap")))]
            pub extern "C" fn cswap(dest: *mut T, cond: T, value: T, pe: c_int) -> T {
                amo(concat!("shmem_", $ni, "_cswap"), DEFAULT, dest, AmoOp::CompareSwap, value, cond, pe, true)
            }
            weak_alias!(concat!("shmem_", $ni, "_cswap"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $ni, "_finc")))]
            pub extern "C" fn finc(dest: *mut T, pe: c_int) -> T {
                amo(concat!("shmem_", $ni, "_finc"), DEFAULT, dest, AmoOp::FetchAdd, 1, Z, pe, true)
            }
            weak_alias!(concat!("shmem_", $ni, "_finc"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $ni, "_inc")))]
            pub extern "C" fn inc(dest: *mut T, pe: c_int) {
                amo(concat!("shmem_", $ni, "_inc"), DEFAULT, dest, AmoOp::Add, 1, Z, pe, true);
            }
            weak_alias!(concat!("shmem_", $ni, "_inc"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $ni, "_fadd")))]
            pub extern "C" fn fadd(dest: *mut T, value: T, pe: c_int) -> T {
                amo(concat!("shmem_", $ni, "_fadd"), DEFAULT, dest, AmoOp::FetchAdd, value, Z, pe, true)
            }
            weak_alias!(concat!("shmem_", $ni, "_fadd"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $ni, "_add")))]
            pub extern "C" fn add(dest: *mut T, value: T, pe: c_int) {
                amo(concat!("shmem_", $ni, "_add"), DEFAULT, dest, AmoOp::Add, value, Z, pe, true);
            }
            weak_alias!(concat!("shmem_", $ni, "_add"));
        }
        )*
    };
}

mod deprecated {
    use super::*;
    amo_deprecated! {
        ext: (d_float "float" f32) (d_double "double" f64) (d_int "int" i32)
             (d_long "long" i64) (d_longlong "longlong" i64) (d_uint "uint" u32)
             (d_ulong "ulong" u64) (d_ulonglong "ulonglong" u64) (d_int32 "int32" i32)
             (d_int64 "int64" i64) (d_uint32 "uint32" u32) (d_uint64 "uint64" u64)
             (d_size "size" usize) (d_ptrdiff "ptrdiff" isize);
        int: (i_int "int" i32) (i_long "long" i64) (i_longlong "longlong" i64)
             (i_uint "uint" u32) (i_ulong "ulong" u64) (i_ulonglong "ulonglong" u64)
             (i_int32 "int32" i32) (i_int64 "int64" i64) (i_uint32 "uint32" u32)
             (i_uint64 "uint64" u64) (i_size "size" usize) (i_ptrdiff "ptrdiff" isize)
    }

    /// `shmem_swap` (deprecated): swap on a `long`.
    #[unsafe(export_name = "pshmem_swap")]
    pub extern "C" fn shmem_swap(dest: *mut i64, value: i64, pe: c_int) -> i64 {
        amo("shmem_swap", DEFAULT, dest, AmoOp::Swap, value, 0, pe, true)
    }
    weak_alias!("shmem_swap");
}
