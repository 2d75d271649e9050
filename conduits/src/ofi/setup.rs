//! What an ofi PE tells the others (its address card, in the bootstrap
//! all-gather), and the provider's names for the contract's atomics. Its
//! settings are the `FSHMEM_OFI_*` rows of [`crate::config::Settings`].

use super::MAX_NAME;
use super::sys::*;
use crate::error::{ConduitError, Result};
use gasnet_core::{AmoOp, AmoWidth};

/// Providers whose atomics `auto` does not use although `fi_query_atomic`
/// offers them: with Debian's libfabric 1.17, shm's gave wrong values in
/// `api_check` and ofi_rxd's crashed the process in `fi_cq_read`. Their
/// RMA and messages pass every test; atomics then travel as AMs.
pub const UNTRUSTED_ATOMICS: [&str; 2] = ["shm", "ofi_rxd"];

/// The provider's form of `op` on `width`: (datatype, op, flags kind).
pub(crate) fn fi_amo(op: AmoOp, width: AmoWidth) -> (fi_datatype, fi_op, u64) {
    let dt = match width {
        AmoWidth::W32 => FI_UINT32,
        AmoWidth::W64 => FI_UINT64,
    };
    let (o, flags) = match op {
        AmoOp::Fetch => (FI_ATOMIC_READ, FI_FETCH_ATOMIC),
        AmoOp::Set => (FI_ATOMIC_WRITE, 0),
        AmoOp::Swap => (FI_ATOMIC_WRITE, FI_FETCH_ATOMIC),
        AmoOp::CompareSwap => (FI_CSWAP, FI_COMPARE_ATOMIC),
        AmoOp::FetchAdd => (FI_SUM, FI_FETCH_ATOMIC),
        AmoOp::FetchAnd => (FI_BAND, FI_FETCH_ATOMIC),
        AmoOp::FetchOr => (FI_BOR, FI_FETCH_ATOMIC),
        AmoOp::FetchXor => (FI_BXOR, FI_FETCH_ATOMIC),
        AmoOp::Add => (FI_SUM, 0),
        AmoOp::And => (FI_BAND, 0),
        AmoOp::Or => (FI_BOR, 0),
        AmoOp::Xor => (FI_BXOR, 0),
    };
    (dt, o, flags)
}

/// What one PE publishes in the bootstrap all-gather.
#[derive(Debug)]
pub(crate) struct Card {
    pub(crate) name: Vec<u8>,
    pub(crate) base: u64,
    pub(crate) key: u64,
    pub(crate) segment_len: u64,
    pub(crate) atomics: bool,
}

impl Card {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(27 + self.name.len());
        v.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        v.extend_from_slice(&self.name);
        v.extend_from_slice(&self.base.to_le_bytes());
        v.extend_from_slice(&self.key.to_le_bytes());
        v.extend_from_slice(&self.segment_len.to_le_bytes());
        v.push(self.atomics as u8);
        v
    }

    /// Decodes PE `pe`'s card; malformed bytes are an error naming it.
    pub(crate) fn decode(pe: usize, b: &[u8]) -> Result<Card> {
        let bad = || ConduitError::Bootstrap(format!("ofi: PE {pe} sent a malformed address card"));
        let n =
            u16::from_le_bytes(b.get(..2).ok_or_else(bad)?.try_into().map_err(|_| bad())?) as usize;
        if n == 0 || n > MAX_NAME || b.len() != 2 + n + 25 {
            return Err(bad());
        }
        let word = |at: usize| -> Result<u64> {
            Ok(u64::from_le_bytes(
                b[at..at + 8].try_into().map_err(|_| bad())?,
            ))
        };
        Ok(Card {
            name: b[2..2 + n].to_vec(),
            base: word(2 + n)?,
            key: word(10 + n)?,
            segment_len: word(18 + n)?,
            atomics: match b[26 + n] {
                0 => false,
                1 => true,
                _ => return Err(bad()),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_round_trip_and_bad_ones_are_errors() {
        let c = Card {
            name: vec![1, 2, 3],
            base: 0x7f00_0000_0000,
            key: 42,
            segment_len: 1 << 20,
            atomics: true,
        };
        let b = c.encode();
        let d = Card::decode(3, &b).unwrap();
        assert_eq!(
            (d.name, d.base, d.key, d.segment_len, d.atomics),
            (c.name, c.base, c.key, c.segment_len, true)
        );
        for cut in 0..b.len() {
            assert!(Card::decode(3, &b[..cut]).is_err());
        }
        let mut bad = b.clone();
        *bad.last_mut().unwrap() = 7;
        let e = Card::decode(3, &bad).unwrap_err().to_string();
        assert!(e.contains("PE 3"), "{e}");
    }

    #[test]
    fn every_amo_has_a_provider_form() {
        for op in AmoOp::ALL {
            let (_, _, flags) = fi_amo(op, AmoWidth::W64);
            assert_eq!(flags != 0, op.fetches(), "{op:?}");
        }
    }
}
