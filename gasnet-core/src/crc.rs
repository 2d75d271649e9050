//! CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the integrity check
//! of `spec/wire.md`: initial value 0xFFFFFFFF, final XOR 0xFFFFFFFF.

const fn make_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static TABLE: [u32; 256] = make_table();

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
pub fn update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}
