//! Reduction operators and the element types each one accepts.
//!
//! An operator is a marker type ([`Sum`], [`Prod`], [`Max`], [`Min`],
//! [`And`], [`Or`], [`Xor`]); a type `T` supports operator `O` when
//! `T: Reducible<O>`. The sets are OpenSHMEM's:
//!
//! | types | operators |
//! |---|---|
//! | `i8 i16 i32 i64 isize u8 u16 u32 u64 usize` (C `char`, `schar`, `short`, `int`, `long`, `longlong`, `ptrdiff_t`, the unsigned ones, `int8_t`..`uint64_t`, `size_t`) | all seven |
//! | `f32 f64` (C `float`, `double`; `long double` is reduced as `f64`: its extra precision is not kept) | sum, prod, max, min |
//! | [`Complex32`] [`Complex64`] (C `float _Complex`, `double _Complex`) | sum, prod |
//!
//! Integer arithmetic wraps. `max`/`min` of floats follow `f64::max`/`min`
//! (a NaN operand yields the other operand).
//!
//! ```
//! use shmem::coll::ops::{Reducible, Sum, Max, Complex64};
//! assert_eq!(<i8 as Reducible<Sum>>::combine(127, 1), -128);
//! assert_eq!(<f64 as Reducible<Max>>::identity(), f64::NEG_INFINITY);
//! let z = <Complex64 as Reducible<Sum>>::combine(Complex64::new(1.0, 2.0), Complex64::new(3.0, 4.0));
//! assert_eq!(z, Complex64::new(4.0, 6.0));
//! ```

use crate::pod::Pod;

/// A reduction operator (a marker type).
pub trait ReduceOp: Copy + Send + Sync + 'static {
    /// The OpenSHMEM name (`sum`, `prod`, `max`, `min`, `and`, `or`, `xor`).
    const NAME: &'static str;
}

macro_rules! ops {
    ($($(#[$d:meta])* $t:ident $n:literal),*) => {$(
        $(#[$d])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $t;
        impl ReduceOp for $t {
            const NAME: &'static str = $n;
        }
    )*};
}
ops!(
    /// Sum (`shmem_*_sum_reduce`, `_sum_inscan`, `_sum_exscan`).
    Sum "sum",
    /// Product.
    Prod "prod",
    /// Maximum.
    Max "max",
    /// Minimum.
    Min "min",
    /// Bitwise and (integers only).
    And "and",
    /// Bitwise or (integers only).
    Or "or",
    /// Bitwise exclusive or (integers only).
    Xor "xor"
);

/// A type that operator `O` reduces.
pub trait Reducible<O: ReduceOp>: Pod {
    /// `a O b`.
    fn combine(a: Self, b: Self) -> Self;
    /// The value `e` with `e O x == x` (the result of an exclusive scan on
    /// team PE 0).
    fn identity() -> Self;
}

/// `acc[i] = acc[i] O inc[i]` for every `i`.
#[inline]
pub(crate) fn combine_into<O: ReduceOp, T: Reducible<O>>(acc: &mut [T], inc: &[T]) {
    for (a, b) in acc.iter_mut().zip(inc) {
        *a = T::combine(*a, *b);
    }
}

macro_rules! int_ops {
    ($($t:ty),*) => {$(
        impl Reducible<Sum> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            #[inline(always)]
            fn identity() -> Self { 0 }
        }
        impl Reducible<Prod> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            #[inline(always)]
            fn identity() -> Self { 1 }
        }
        impl Reducible<Max> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a.max(b) }
            #[inline(always)]
            fn identity() -> Self { <$t>::MIN }
        }
        impl Reducible<Min> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a.min(b) }
            #[inline(always)]
            fn identity() -> Self { <$t>::MAX }
        }
        impl Reducible<And> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a & b }
            #[inline(always)]
            fn identity() -> Self { !0 }
        }
        impl Reducible<Or> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a | b }
            #[inline(always)]
            fn identity() -> Self { 0 }
        }
        impl Reducible<Xor> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a ^ b }
            #[inline(always)]
            fn identity() -> Self { 0 }
        }
    )*};
}
int_ops!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

macro_rules! float_ops {
    ($($t:ty),*) => {$(
        impl Reducible<Sum> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a + b }
            #[inline(always)]
            fn identity() -> Self { 0.0 }
        }
        impl Reducible<Prod> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a * b }
            #[inline(always)]
            fn identity() -> Self { 1.0 }
        }
        impl Reducible<Max> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a.max(b) }
            #[inline(always)]
            fn identity() -> Self { <$t>::NEG_INFINITY }
        }
        impl Reducible<Min> for $t {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { a.min(b) }
            #[inline(always)]
            fn identity() -> Self { <$t>::INFINITY }
        }
    )*};
}
float_ops!(f32, f64);

/// A complex number laid out as C's `_Complex` (real part, then imaginary).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Complex<F> {
    /// Real part.
    pub re: F,
    /// Imaginary part.
    pub im: F,
}

impl<F> Complex<F> {
    /// `re + im i`.
    pub const fn new(re: F, im: F) -> Self {
        Complex { re, im }
    }
}

/// C `float _Complex`.
pub type Complex32 = Complex<f32>;
/// C `double _Complex`.
pub type Complex64 = Complex<f64>;

// SAFETY: two floats of the same type under repr(C): no padding, and every
// bit pattern is a valid value.
unsafe impl Pod for Complex<f32> {}
// SAFETY: as above.
unsafe impl Pod for Complex<f64> {}

macro_rules! complex_ops {
    ($($f:ty),*) => {$(
        impl Reducible<Sum> for Complex<$f> {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self { Complex::new(a.re + b.re, a.im + b.im) }
            #[inline(always)]
            fn identity() -> Self { Complex::new(0.0, 0.0) }
        }
        impl Reducible<Prod> for Complex<$f> {
            #[inline(always)]
            fn combine(a: Self, b: Self) -> Self {
                Complex::new(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
            }
            #[inline(always)]
            fn identity() -> Self { Complex::new(1.0, 0.0) }
        }
    )*};
}
complex_ops!(f32, f64);

/// C `long double` on x86-64: the 80-bit extended format in 16 bytes
/// (64-bit significand with explicit integer bit, then sign and 15-bit
/// exponent, then 6 bytes of padding). Reductions compute in `f64` (the
/// extra precision is not kept); RMA moves the 16 bytes unchanged.
///
/// ```
/// use shmem::coll::ops::{LongDouble, Reducible, Sum};
/// let a = LongDouble::from_f64(1.5);
/// assert_eq!(a.to_f64(), 1.5);
/// assert_eq!(<LongDouble as Reducible<Sum>>::combine(a, a).to_f64(), 3.0);
/// ```
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LongDouble(pub [u8; 16]);

// SAFETY: sixteen bytes under repr(C): no padding, every bit pattern is a
// valid value.
unsafe impl Pod for LongDouble {}

/// `x * 2^k` without intermediate overflow or underflow.
fn scale(mut x: f64, mut k: i32) -> f64 {
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    x * 2f64.powi(k)
}

impl LongDouble {
    /// The value, rounded to `f64`.
    pub fn to_f64(self) -> f64 {
        let b = self.0;
        let mant = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        let se = u16::from_le_bytes([b[8], b[9]]);
        let neg = se & 0x8000 != 0;
        let exp = (se & 0x7fff) as i32;
        let mag = if exp == 0x7fff {
            if mant << 1 == 0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else if exp == 0 && mant == 0 {
            0.0
        } else {
            scale(mant as f64, exp.max(1) - 16383 - 63)
        };
        if neg { -mag } else { mag }
    }

    /// The exact extended value of `x`.
    pub fn from_f64(x: f64) -> LongDouble {
        let bits = x.to_bits();
        let neg = bits >> 63 != 0;
        let e = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        let (exp, mant): (i32, u64) = if e == 0x7ff {
            (
                0x7fff,
                if frac == 0 {
                    1 << 63
                } else {
                    0xc000_0000_0000_0000
                },
            )
        } else if e == 0 && frac == 0 {
            (0, 0)
        } else if e == 0 {
            let lz = frac.leading_zeros() as i32;
            (-1074 - lz + 63 + 16383, frac << lz)
        } else {
            (e - 1023 + 16383, ((1u64 << 52) | frac) << 11)
        };
        let se = (exp as u16) | if neg { 0x8000 } else { 0 };
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&mant.to_le_bytes());
        out[8..10].copy_from_slice(&se.to_le_bytes());
        LongDouble(out)
    }
}

macro_rules! long_double_ops {
    ($($op:ident $id:expr, |$a:ident, $b:ident| $e:expr;)*) => {$(
        impl Reducible<$op> for LongDouble {
            #[inline]
            fn combine(a: Self, b: Self) -> Self {
                let ($a, $b) = (a.to_f64(), b.to_f64());
                LongDouble::from_f64($e)
            }
            #[inline]
            fn identity() -> Self {
                LongDouble::from_f64($id)
            }
        }
    )*};
}
long_double_ops!(
    Sum 0.0, |a, b| a + b;
    Prod 1.0, |a, b| a * b;
    Max f64::NEG_INFINITY, |a, b| a.max(b);
    Min f64::INFINITY, |a, b| a.min(b);
);

#[cfg(test)]
mod long_double_tests {
    use super::LongDouble;

    #[test]
    fn round_trips() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            1e300,
            -1e-300,
            5e-324,
            f64::INFINITY,
            3.0e-310,
        ] {
            let y = LongDouble::from_f64(x).to_f64();
            assert_eq!(x.to_bits(), y.to_bits(), "{x}");
        }
        assert!(LongDouble::from_f64(f64::NAN).to_f64().is_nan());
        // 1.0L as x86 stores it.
        let one = LongDouble::from_f64(1.0).0;
        assert_eq!(&one[..10], &[0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f]);
    }
}
