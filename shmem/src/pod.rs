//! The types that may live in the symmetric heap and cross PEs.
//!
//! - [`Pod`]: plain data — copyable, no pointers, no padding, every bit
//!   pattern valid — so bytes written by another process are always a valid
//!   value.
//! - [`AmoElem`]: the types OpenSHMEM's "standard" atomics (fetch, set,
//!   swap) work on: 32- and 64-bit integers and `f32`/`f64` (moved as bits).
//! - [`AmoInt`]: the 32- and 64-bit integers, which add compare-swap,
//!   arithmetic and bitwise atomics, and point-to-point waits.

use conduits::AmoWidth;

/// Plain old data: safe to copy byte-for-byte between PEs.
///
/// # Safety
/// Implementors must be `Copy`, contain no pointers or references, have no
/// padding bytes and accept every bit pattern as a valid value.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),*) => {$(
        // SAFETY: primitive numbers have no padding and every bit pattern is
        // a valid value.
        unsafe impl Pod for $t {}
    )*};
}
pod!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64
);

// SAFETY: an array of `Pod` has no padding between elements (size is a
// multiple of alignment) and every bit pattern of each element is valid.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

mod sealed {
    pub trait Sealed {}
}

/// A type the standard atomics (fetch, set, swap) act on: 32/64-bit
/// integers, `f32` and `f64`. Sealed.
pub trait AmoElem: Pod + sealed::Sealed {
    /// The width of the word.
    const WIDTH: AmoWidth;
    /// The value's bits, zero-extended to 64.
    fn to_bits(self) -> u64;
    /// The value whose bits are the low `WIDTH` bits of `bits`.
    fn from_bits(bits: u64) -> Self;
}

/// An integer the extended atomics (compare-swap, add, inc, and/or/xor) and
/// the point-to-point waits act on: 32/64-bit signed and unsigned integers.
/// Sealed.
pub trait AmoInt: AmoElem + Ord + std::fmt::Debug {
    /// One, for inc.
    const ONE: Self;
}

macro_rules! amo_int {
    ($($t:ty => $w:ident, $u:ty);*) => {$(
        impl sealed::Sealed for $t {}
        impl AmoElem for $t {
            const WIDTH: AmoWidth = AmoWidth::$w;
            #[inline(always)]
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> Self {
                bits as $u as $t
            }
        }
        impl AmoInt for $t {
            const ONE: Self = 1;
        }
    )*};
}
amo_int!(
    u32 => W32, u32; i32 => W32, u32; u64 => W64, u64; i64 => W64, u64;
    usize => W64, u64; isize => W64, u64
);

const _: () = assert!(size_of::<usize>() == 8, "fshmem needs a 64-bit target");

impl sealed::Sealed for f32 {}
impl AmoElem for f32 {
    const WIDTH: AmoWidth = AmoWidth::W32;
    #[inline(always)]
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl sealed::Sealed for f64 {}
impl AmoElem for f64 {
    const WIDTH: AmoWidth = AmoWidth::W64;
    #[inline(always)]
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

/// The bytes of a `Pod` slice.
#[inline(always)]
pub(crate) fn bytes_of<T: Pod>(s: &[T]) -> &[u8] {
    // SAFETY: `T: Pod` has no padding, so every byte of the slice is
    // initialized; the length is the slice's size in bytes and u8 has
    // alignment 1.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), size_of_val(s)) }
}

/// The bytes of a `Pod` slice, writable.
#[inline(always)]
pub(crate) fn bytes_of_mut<T: Pod>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `bytes_of`; in addition every bit pattern is a valid `T`,
    // so any bytes written through the result leave valid values.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), size_of_val(s)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_sign_extension() {
        assert_eq!((-1i32).to_bits(), 0xffff_ffff);
        assert_eq!(<i32 as AmoElem>::from_bits(0xffff_ffff), -1);
        assert_eq!(<i64 as AmoElem>::from_bits(u64::MAX), -1);
        assert_eq!(<f32 as AmoElem>::from_bits(AmoElem::to_bits(1.5f32)), 1.5);
        assert_eq!(AmoElem::to_bits(-2.0f64), (-2.0f64).to_bits());
        assert_eq!(<u32 as AmoElem>::WIDTH, AmoWidth::W32);
        assert_eq!(<f64 as AmoElem>::WIDTH, AmoWidth::W64);
    }

    #[test]
    fn byte_views() {
        let mut v = [1u32, 2];
        assert_eq!(bytes_of(&v).len(), 8);
        bytes_of_mut(&mut v)[4] = 7;
        assert_eq!(v[1], 7);
    }
}
