//! CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the integrity check
//! of `spec/wire.md`: initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF.
//!
//! [`update`] uses the processor's `crc32` instruction where there is one
//! (x86-64 with SSE4.2, detected at run time), which computes exactly this
//! CRC, in three interleaved streams joined by a table-driven shift, and
//! slicing-by-8 tables elsewhere. [`update_bytewise`], the plain
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

/// Bytes in each of the three streams [`update_sse42`] runs side by side.
#[cfg(target_arch = "x86_64")]
const LANE: usize = 512;

/// `SHIFT[k][b]` is the raw CRC state `b << 8k` carried through [`LANE`]
/// zero bytes. The state's advance over zero bytes is linear over GF(2),
/// so [`shift_lane`] advances any state by XORing four entries.
#[cfg(target_arch = "x86_64")]
static SHIFT: std::sync::OnceLock<[[u32; 256]; 4]> = std::sync::OnceLock::new();

/// Advances the raw state `crc` through [`LANE`] zero bytes.
#[cfg(target_arch = "x86_64")]
fn shift_lane(crc: u32) -> u32 {
    let t = SHIFT.get_or_init(|| {
        // The advance of each of the 32 single-bit states, through the
        // reference loop; every other state is an XOR of these.
        let zeros = [0u8; LANE];
        let bit: Vec<u32> = (0..32).map(|i| update_sliced(1 << i, &zeros)).collect();
        let mut t = [[0u32; 256]; 4];
        for (k, row) in t.iter_mut().enumerate() {
            for (b, e) in row.iter_mut().enumerate() {
                *e = (0..8)
                    .filter(|j| b >> j & 1 != 0)
                    .fold(0, |acc, j| acc ^ bit[8 * k + j]);
            }
        }
        t
    });
    t[0][(crc & 0xff) as usize]
        ^ t[1][((crc >> 8) & 0xff) as usize]
        ^ t[2][((crc >> 16) & 0xff) as usize]
        ^ t[3][(crc >> 24) as usize]
}

/// [`update`] with the SSE4.2 `crc32` instruction.
///
/// One `crc32` takes three cycles before the next one on the same state can
/// start, but the processor starts one every cycle: so blocks of
/// `3 * LANE` bytes run as three independent states (the first carries
/// `crc`, the other two start at zero), joined after the block. Over raw
/// states, `update(c, A ++ B) = shift(update(c, A), |B|) ^ update(0, B)`.
///
/// # Safety
/// The processor must support SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn update_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u8, _mm_crc32_u64};
    fn word(b: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[..8]);
        u64::from_le_bytes(w)
    }
    let mut c = crc;
    let mut blocks = data.chunks_exact(3 * LANE);
    for block in &mut blocks {
        let (a, rest) = block.split_at(LANE);
        let (b, d) = rest.split_at(LANE);
        let (mut x, mut y, mut z) = (c as u64, 0u64, 0u64);
        for i in (0..LANE).step_by(8) {
            x = _mm_crc32_u64(x, word(&a[i..]));
            y = _mm_crc32_u64(y, word(&b[i..]));
            z = _mm_crc32_u64(z, word(&d[i..]));
        }
        c = shift_lane(shift_lane(x as u32) ^ y as u32) ^ z as u32;
    }
    let mut c = c as u64;
    let mut words = blocks.remainder().chunks_exact(8);
    for w in &mut words {
        c = _mm_crc32_u64(c, word(w));
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
            for len in (0..300).chain([1000, 1535, 1536, 1537, 3072, 4095, 4096, 4991 - start]) {
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
