//! The local segment as the engine sees it.

use crate::amo::{AmoOp, AmoWidth};
use std::fmt;

/// Why a segment access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemError {
    /// `offset + len` lies beyond the segment (or overflows).
    OutOfRange {
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        len: u64,
        /// Length of the segment.
        segment: u64,
    },
    /// An atomic on a word not aligned to its width.
    Misaligned {
        /// The offset asked for.
        offset: u64,
        /// The required alignment in bytes.
        align: usize,
    },
}

impl fmt::Display for MemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemError::OutOfRange {
                offset,
                len,
                segment,
            } => write!(
                f,
                "{len} bytes at offset {offset} exceed the {segment}-byte segment"
            ),
            MemError::Misaligned { offset, align } => {
                write!(f, "offset {offset} is not {align}-byte aligned")
            }
        }
    }
}

impl std::error::Error for MemError {}

/// Checks that `len` bytes at `offset` lie within a segment of `segment`
/// bytes, without overflowing.
///
/// ```
/// use gasnet_core::engine::check_range;
/// assert!(check_range(16, 8, 8).is_ok());
/// assert!(check_range(16, 9, 8).is_err());
/// assert!(check_range(16, u64::MAX, 2).is_err());
/// ```
pub fn check_range(segment: u64, offset: u64, len: u64) -> Result<(), MemError> {
    match offset.checked_add(len) {
        Some(end) if end <= segment => Ok(()),
        _ => Err(MemError::OutOfRange {
            offset,
            len,
            segment,
        }),
    }
}

/// The local segment: the memory remote puts, gets and atomics address,
/// by byte offset from its start.
///
/// Implementations return [`MemError`] for accesses outside the segment or
/// misaligned atomics; they never panic on a bad offset, because offsets
/// arrive from the network. Atomic words are little-endian.
pub trait Memory {
    /// The segment length in bytes.
    fn len(&self) -> u64;

    /// Whether the segment is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `buf.len()` bytes at `offset` into `buf`.
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), MemError>;

    /// Copies `data` into the segment at `offset`.
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), MemError>;

    /// The `len` bytes at `offset` in a buffer of their own (a put's
    /// payload read as it is issued). The provided implementation reads
    /// them into a zeroed buffer of the payload pool ([`crate::pool`]); a
    /// memory that can fill one without zeroing it first overrides it.
    fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>, MemError> {
        let mut v = crate::pool::zeroed(len);
        self.read(offset, &mut v)?;
        Ok(v)
    }

    /// Applies `op` to the `width`-wide word at `offset` (which must be
    /// aligned to `width`) and returns the word's previous value. The new
    /// value is [`AmoOp::apply`]`(width, old, operand, compare)`.
    ///
    /// The provided implementation is a read-modify-write through
    /// [`Memory::read`] and [`Memory::write`]; it is atomic because the
    /// engine holds the memory exclusively. A segment other agents update
    /// concurrently (shared memory, a board's DDR) overrides it with real
    /// atomic instructions.
    fn atomic(
        &mut self,
        op: AmoOp,
        width: AmoWidth,
        offset: u64,
        operand: u64,
        compare: u64,
    ) -> Result<u64, MemError> {
        let n = width.bytes();
        if !offset.is_multiple_of(n as u64) {
            return Err(MemError::Misaligned { offset, align: n });
        }
        let mut word = [0u8; 8];
        self.read(offset, &mut word[..n])?;
        let old = u64::from_le_bytes(word);
        let new = op.apply(width, old, operand, compare);
        if new != old {
            self.write(offset, &new.to_le_bytes()[..n])?;
        }
        Ok(old)
    }
}

impl Memory for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), MemError> {
        check_range(Memory::len(self), offset, buf.len() as u64)?;
        let at = offset as usize;
        buf.copy_from_slice(&self[at..at + buf.len()]);
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), MemError> {
        check_range(Memory::len(self), offset, data.len() as u64)?;
        let at = offset as usize;
        self[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_memory_checks_bounds() {
        let mut m = vec![0u8; 16];
        assert!(m.write(12, &[1, 2, 3, 4]).is_ok());
        assert_eq!(
            m.write(13, &[1, 2, 3, 4]),
            Err(MemError::OutOfRange {
                offset: 13,
                len: 4,
                segment: 16
            })
        );
        let mut b = [0u8; 4];
        m.read(12, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        assert!(m.read(u64::MAX - 1, &mut b).is_err());
        assert!(m.read(16, &mut []).is_ok());
    }

    #[test]
    fn default_atomic_matches_reference_and_checks_alignment() {
        let mut m = vec![0u8; 16];
        m.write(8, &0x1_0000_0005u64.to_le_bytes()).unwrap();
        let old = m.atomic(AmoOp::FetchAdd, AmoWidth::W64, 8, 3, 0).unwrap();
        assert_eq!(old, 0x1_0000_0005);
        let old = m.atomic(AmoOp::Fetch, AmoWidth::W32, 8, 0, 0).unwrap();
        assert_eq!(old, 8);
        assert_eq!(
            m.atomic(AmoOp::Add, AmoWidth::W32, 6, 1, 0),
            Err(MemError::Misaligned {
                offset: 6,
                align: 4
            })
        );
        assert!(m.atomic(AmoOp::Add, AmoWidth::W64, 16, 1, 0).is_err());
    }
}
