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
