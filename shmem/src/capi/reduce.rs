//! Reductions and scans in C: `shmem_<type>_<op>_reduce` on teams and
//! `shmem_<type>_<op>_to_all` on active sets for every type and operator
//! of the specification's tables, and the 1.6 scans
//! (`shmem_<type>_sum_inscan`/`_exscan`, and the products).

use super::TeamH;
use super::active::active_call;
use super::coll::{reduce, scan, team_call};
use crate::coll::ops::{And, Complex32, Complex64, Max, Min, Or, Prod, Sum, Xor};
use std::ffi::{c_int, c_long};

/// `shmem_<type>_<op>_reduce` (team) and `shmem_<type>_<op>_to_all`
/// (active set) for one operator over a type list.
macro_rules! reduce_op {
    ($op:ident $opn:literal; $(($m:ident $n:literal $t:ty))*) => {$(
        mod $m {
            use super::*;
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_", $opn, "_reduce")))]
            pub extern "C" fn reduce_(team: TeamH, dest: *mut $t, src: *const $t, nreduce: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_reduce");
                team_call(CALL, team, |rt, t| reduce::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce))
            }
            weak_alias!(concat!("shmem_", $n, "_", $opn, "_reduce"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_", $opn, "_to_all")))]
            #[allow(clippy::too_many_arguments)]
            pub extern "C" fn to_all(dest: *mut $t, src: *const $t, nreduce: c_int, start: c_int, log: c_int, size: c_int, _pwrk: *mut $t, _psync: *mut c_long) {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_to_all");
                active_call(CALL, start, log, size, |rt, t| reduce::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce.max(0) as usize))
            }
            weak_alias!(concat!("shmem_", $n, "_", $opn, "_to_all"));
        }
    )*};
}

/// `shmem_<type>_<op>_inscan` / `_exscan` (1.6) for sum and prod... the
/// standard has sum scans; the other operators come cheap.
macro_rules! scan_op {
    ($op:ident $opn:literal; $(($m:ident $n:literal $t:ty))*) => {$(
        mod $m {
            use super::*;
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_", $opn, "_inscan")))]
            pub extern "C" fn inscan(team: TeamH, dest: *mut $t, src: *const $t, nreduce: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_inscan");
                team_call(CALL, team, |rt, t| scan::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce, false))
            }
            weak_alias!(concat!("shmem_", $n, "_", $opn, "_inscan"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_", $opn, "_exscan")))]
            pub extern "C" fn exscan(team: TeamH, dest: *mut $t, src: *const $t, nreduce: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_exscan");
                team_call(CALL, team, |rt, t| scan::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce, true))
            }
            weak_alias!(concat!("shmem_", $n, "_", $opn, "_exscan"));
        }
    )*};
}

/// The integer types of the bitwise reductions.
macro_rules! bitwise_types {
    ($m:ident $op:ident $opn:literal) => {
        $m! { $op $opn;
            (t_uchar "uchar" u8) (t_ushort "ushort" u16) (t_uint "uint" u32)
            (t_ulong "ulong" u64) (t_ulonglong "ulonglong" u64)
            (t_int8 "int8" i8) (t_int16 "int16" i16) (t_int32 "int32" i32) (t_int64 "int64" i64)
            (t_uint8 "uint8" u8) (t_uint16 "uint16" u16) (t_uint32 "uint32" u32) (t_uint64 "uint64" u64)
            (t_size "size" usize)
            (t_short "short" i16) (t_int "int" i32) (t_long "long" i64) (t_longlong "longlong" i64)
        }
    };
}

/// The integer and floating types of max, min, sum and prod.
macro_rules! arith_types {
    ($m:ident $op:ident $opn:literal $(, $($extra:tt)*)?) => {
        $m! { $op $opn;
            (t_char "char" std::ffi::c_char) (t_schar "schar" i8) (t_short "short" i16)
            (t_int "int" i32) (t_long "long" i64) (t_longlong "longlong" i64)
            (t_ptrdiff "ptrdiff" isize)
            (t_uchar "uchar" u8) (t_ushort "ushort" u16) (t_uint "uint" u32)
            (t_ulong "ulong" u64) (t_ulonglong "ulonglong" u64)
            (t_int8 "int8" i8) (t_int16 "int16" i16) (t_int32 "int32" i32) (t_int64 "int64" i64)
            (t_uint8 "uint8" u8) (t_uint16 "uint16" u16) (t_uint32 "uint32" u32) (t_uint64 "uint64" u64)
            (t_size "size" usize)
            (t_float "float" f32) (t_double "double" f64)
            (t_longdouble "longdouble" crate::coll::ops::LongDouble)
            $($($extra)*)?
        }
    };
}

mod red_and {
    use super::*;
    bitwise_types!(reduce_op And "and");
}
mod red_or {
    use super::*;
    bitwise_types!(reduce_op Or "or");
}
mod red_xor {
    use super::*;
    bitwise_types!(reduce_op Xor "xor");
}
mod red_max {
    use super::*;
    arith_types!(reduce_op Max "max");
}
mod red_min {
    use super::*;
    arith_types!(reduce_op Min "min");
}
mod red_sum {
    use super::*;
    arith_types!(reduce_op Sum "sum", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
mod red_prod {
    use super::*;
    arith_types!(reduce_op Prod "prod", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
mod scan_sum {
    use super::*;
    arith_types!(scan_op Sum "sum", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
mod scan_prod {
    use super::*;
    arith_types!(scan_op Prod "prod", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
