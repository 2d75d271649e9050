//! FNV-1a, the one non-cryptographic hash of the runtime: tags and names
//! that every PE of a job computes alike (no per-process seed, unlike
//! `std`'s `RandomState`), so that PEs can compare them.
//!
//! ```
//! use gasnet_core::hash::{fnv1a, fnv1a_words};
//! assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
//! assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
//! assert_ne!(fnv1a_words(&[1, 2]), fnv1a_words(&[2, 1]));
//! ```

/// FNV-1a's 64-bit offset basis.
const BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a's 64-bit prime.
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_iter(bytes.iter().copied())
}

/// 64-bit FNV-1a of the bytes `bytes` yields.
pub fn fnv1a_iter(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes
        .into_iter()
        .fold(BASIS, |h, b| (h ^ b as u64).wrapping_mul(PRIME))
}

/// FNV-1a taken a 64-bit word at a time, each step followed by an
/// xor-shift so that the high bits of a word also reach the low 48 bits
/// of the result (a call's arguments hashed into a tag that keeps those).
pub fn fnv1a_words(words: &[u64]) -> u64 {
    words.iter().fold(BASIS, |h, &w| {
        let h = (h ^ w).wrapping_mul(PRIME);
        h ^ h >> 29
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_fnv1a_vectors_and_mixes_words() {
        // The FNV-1a 64-bit test vectors for "", "a" and "foobar".
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a_iter(*b"foobar"), fnv1a(b"foobar"));
        // The top bit of the last word changes the low 48 bits.
        let a = fnv1a_words(&[7, 1 << 63]);
        let b = fnv1a_words(&[7, 0]);
        assert_ne!(a << 16, b << 16);
    }
}
