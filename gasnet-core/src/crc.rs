//! CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the integrity check
//! of `spec/wire.md`: initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF.
//!
//! [`update`] uses the processor's `crc32` instruction where there is one
//! (x86-64 with SSE4.2, detected at run time), which computes exactly this
//! CRC, and slicing-by-8 tables elsewhere. [`update_bytewise`], the plain
//! one-table loop, is the reference both are tested against.

const POLY: u32 = 0x82F6_3B78;

const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

/// `TABLES[0]` is the classic byte table; `TABLES[s]` advances a byte
/// through `s` further zero bytes (slicing-by-8).
static TABLES: [[u32; 256]; 8] = make_tables();

/// CRC-32C of `data`.
///
/// ```
/// // The standard check value of CRC-32C.
/// assert_eq!(gasnet_core::crc::crc32c(b"123456789"), 0xE306_9283);
/// ```
pub fn crc32c(data: &[u8]) -> u32 {
    update(0xFFFF_FFFF, data) ^ 0xFFFF_FFFF
}

/// Continues a CRC-32C over more bytes. Start with `0xFFFF_FFFF` and XOR the
/// result with `0xFFFF_FFFF` at the end.
pub fn update(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the processor supports SSE4.2 (checked just above),
            // the only requirement of `update_sse42`.
            return unsafe { update_sse42(crc, data) };
        }
    }
    update_sliced(crc, data)
}

/// [`update`] one byte at a time with one table: the reference.
pub fn update_bytewise(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = TABLES[0][((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// [`update`] eight bytes at a time with eight tables.
pub fn update_sliced(mut crc: u32, data: &[u8]) -> u32 {
    let t = &TABLES;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let lo = crc ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        let hi = u32::from_le_bytes([w[4], w[5], w[6], w[7]]);
        crc = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    update_bytewise(crc, words.remainder())
}

/// [`update`] with the SSE4.2 `crc32` instruction, eight bytes at a time.
///
/// # Safety
/// The processor must support SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn update_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u64};
    let mut c = crc as u64;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        c = _mm_crc32_u64(c, v);
    }
    let mut c = c as u32;
    for &b in words.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_matches_the_reference() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let data: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for start in 0..9 {
            for len in (0..300).chain([1000, 4095, 4096, 4991 - start]) {
                let d = &data[start..start + len];
                for init in [0xFFFF_FFFF, 0, 0xDEAD_BEEF] {
                    let want = update_bytewise(init, d);
                    assert_eq!(update_sliced(init, d), want, "sliced {start} {len}");
                    assert_eq!(update(init, d), want, "dispatched {start} {len}");
                }
            }
        }
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(update_sliced(!0, b"123456789") ^ !0, 0xE306_9283);
    }
}
