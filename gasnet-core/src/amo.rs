//! Remote atomic operations: the op codes shared by the wire format, the
//! command descriptor and every conduit, and their reference semantics.

/// An atomic operation on a 32- or 64-bit word.
///
/// Fetching ops return the value before the update; non-fetching ops return
/// nothing to the caller but are still acknowledged for `quiet`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AmoOp {
    /// Read the word.
    Fetch = 0,
    /// Write `operand`.
    Set = 1,
    /// Write `operand`, return the old value.
    Swap = 2,
    /// If the word equals `compare`, write `operand`; return the old value.
    CompareSwap = 3,
    /// Add `operand` (wrapping), return the old value.
    FetchAdd = 4,
    /// AND with `operand`, return the old value.
    FetchAnd = 5,
    /// OR with `operand`, return the old value.
    FetchOr = 6,
    /// XOR with `operand`, return the old value.
    FetchXor = 7,
    /// Add `operand` (wrapping).
    Add = 8,
    /// AND with `operand`.
    And = 9,
    /// OR with `operand`.
    Or = 10,
    /// XOR with `operand`.
    Xor = 11,
}

impl AmoOp {
    /// Every op, in code order.
    pub const ALL: [AmoOp; 12] = [
        AmoOp::Fetch,
        AmoOp::Set,
        AmoOp::Swap,
        AmoOp::CompareSwap,
        AmoOp::FetchAdd,
        AmoOp::FetchAnd,
        AmoOp::FetchOr,
        AmoOp::FetchXor,
        AmoOp::Add,
        AmoOp::And,
        AmoOp::Or,
        AmoOp::Xor,
    ];

    /// Decodes an op code; `None` for codes this version does not define.
    pub fn from_code(code: u8) -> Option<AmoOp> {
        AmoOp::ALL.get(code as usize).copied()
    }

    /// The op code carried on the wire and in descriptors.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Whether the caller receives the old value.
    pub fn fetches(self) -> bool {
        !matches!(
            self,
            AmoOp::Set | AmoOp::Add | AmoOp::And | AmoOp::Or | AmoOp::Xor
        )
    }

    /// The new value of a word holding `old` after this op; `width` masks the
    /// result. This is the reference semantics every implementation matches.
    ///
    /// ```
    /// use gasnet_core::{AmoOp, AmoWidth};
    /// assert_eq!(AmoOp::FetchAdd.apply(AmoWidth::W32, u32::MAX as u64, 2, 0), 1);
    /// assert_eq!(AmoOp::CompareSwap.apply(AmoWidth::W64, 5, 9, 5), 9);
    /// assert_eq!(AmoOp::CompareSwap.apply(AmoWidth::W64, 5, 9, 4), 5);
    /// ```
    pub fn apply(self, width: AmoWidth, old: u64, operand: u64, compare: u64) -> u64 {
        let m = width.mask();
        let (old, operand, compare) = (old & m, operand & m, compare & m);
        let new = match self {
            AmoOp::Fetch => old,
            AmoOp::Set | AmoOp::Swap => operand,
            AmoOp::CompareSwap => {
                if old == compare {
                    operand
                } else {
                    old
                }
            }
            AmoOp::FetchAdd | AmoOp::Add => old.wrapping_add(operand),
            AmoOp::FetchAnd | AmoOp::And => old & operand,
            AmoOp::FetchOr | AmoOp::Or => old | operand,
            AmoOp::FetchXor | AmoOp::Xor => old ^ operand,
        };
        new & m
    }
}

/// Width of an atomic word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AmoWidth {
    /// 32-bit word, 4-byte aligned.
    W32 = 4,
    /// 64-bit word, 8-byte aligned.
    W64 = 8,
}

impl AmoWidth {
    /// Size in bytes (also the required alignment).
    pub fn bytes(self) -> usize {
        self as usize
    }

    /// Decodes a width from its size in bytes.
    pub fn from_bytes(n: u8) -> Option<AmoWidth> {
        match n {
            4 => Some(AmoWidth::W32),
            8 => Some(AmoWidth::W64),
            _ => None,
        }
    }

    /// Mask of the bits this width keeps.
    pub fn mask(self) -> u64 {
        match self {
            AmoWidth::W32 => u32::MAX as u64,
            AmoWidth::W64 => u64::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_codes_are_none() {
        for op in AmoOp::ALL {
            assert_eq!(AmoOp::from_code(op.code()), Some(op));
        }
        assert_eq!(AmoOp::from_code(12), None);
        assert_eq!(AmoWidth::from_bytes(2), None);
    }

    #[test]
    fn non_fetching_ops_are_marked() {
        assert!(!AmoOp::Add.fetches());
        assert!(AmoOp::FetchXor.fetches());
        assert!(AmoOp::Fetch.fetches());
    }

    #[test]
    fn width_masks_results() {
        assert_eq!(AmoOp::Add.apply(AmoWidth::W32, 0xffff_ffff, 1, 0), 0);
        assert_eq!(AmoOp::Add.apply(AmoWidth::W64, 0xffff_ffff, 1, 0), 1 << 32);
        assert_eq!(AmoOp::Xor.apply(AmoWidth::W64, 0b1010, 0b0110, 0), 0b1100);
    }
}
