//! The 128-byte receive entry (`spec/registers.md`, "Receive entry"): an
//! incoming active message the board hands to a host handler.

use super::desc::{Args, put_u32, put_u64, u32_at, u64_at, zero};
use super::error::CmdError;
use crate::types::{Category, Direction, MAX_ARGS, MAX_LONG, MAX_MEDIUM, NodeId, handlers};

/// Size of one receive queue entry in bytes.
pub const RX_ENTRY_BYTES: usize = 128;

/// Bit 0 of byte 1 of a receive entry.
const PHASE: u8 = 1;

/// One receive queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RxEntry {
    /// The sending node (for a request, where its reply goes).
    pub src: NodeId,
    /// Request or reply.
    pub direction: Direction,
    /// Short, Medium or Long.
    pub category: Category,
    /// Handler index (1..=255).
    pub handler: u8,
    /// Arguments.
    pub args: Args,
    /// Payload length (0 for Short).
    pub len: u32,
    /// Medium: BAR2 offset of this slot's bounce buffer holding the payload.
    /// Long: segment offset the payload was written at. Short: 0.
    pub addr: u64,
    /// The phase bit, as for completion entries.
    pub phase: bool,
}

fn kind(direction: Direction, category: Category) -> u8 {
    let r = if direction == Direction::Reply { 8 } else { 0 };
    let c = match category {
        Category::Short => 0,
        Category::Medium => 1,
        Category::Long => 2,
    };
    super::opcode::AM | r | c
}

impl RxEntry {
    /// Encodes the entry.
    pub fn encode(&self) -> [u8; RX_ENTRY_BYTES] {
        let mut b = [0; RX_ENTRY_BYTES];
        b[0] = kind(self.direction, self.category);
        b[1] = if self.phase { PHASE } else { 0 };
        b[2..4].copy_from_slice(&self.src.to_le_bytes());
        b[4] = self.handler;
        b[5] = self.args.len() as u8;
        put_u32(&mut b, 8, self.len);
        put_u64(&mut b, 16, self.addr);
        for (i, &v) in self.args.as_slice().iter().enumerate() {
            put_u32(&mut b, 32 + 4 * i, v);
        }
        b
    }

    /// Decodes an entry from the first [`RX_ENTRY_BYTES`] of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<RxEntry, CmdError> {
        if bytes.len() < RX_ENTRY_BYTES {
            return Err(CmdError::Truncated {
                needed: RX_ENTRY_BYTES,
                got: bytes.len(),
            });
        }
        let b = &bytes[..RX_ENTRY_BYTES];
        let (direction, category) = match b[0] {
            0x10 => (Direction::Request, Category::Short),
            0x11 => (Direction::Request, Category::Medium),
            0x12 => (Direction::Request, Category::Long),
            0x18 => (Direction::Reply, Category::Short),
            0x19 => (Direction::Reply, Category::Medium),
            0x1A => (Direction::Reply, Category::Long),
            k => return Err(CmdError::BadRxKind(k)),
        };
        if b[1] & !PHASE != 0 {
            return Err(CmdError::BadFlags {
                opcode: b[0],
                flags: b[1] & !PHASE,
            });
        }
        let handler = b[4];
        if handler == handlers::INVALID {
            return Err(CmdError::InvalidHandler(handler));
        }
        let nargs = b[5];
        if nargs as usize > MAX_ARGS {
            return Err(CmdError::TooManyArgs(nargs));
        }
        zero(b, 6, 8, 0)?;
        let len = u32_at(b, 8);
        let max = match category {
            Category::Short => {
                if len != 0 {
                    return Err(CmdError::ShortWithPayload(len));
                }
                zero(b, 16, 24, 0)?;
                0
            }
            Category::Medium => MAX_MEDIUM as u32,
            Category::Long => MAX_LONG as u32,
        };
        if len > max {
            return Err(CmdError::LengthTooLong {
                opcode: b[0],
                len,
                max,
            });
        }
        zero(b, 12, 16, 0)?;
        zero(b, 24, 32, 0)?;
        let mut vals = [0u32; MAX_ARGS];
        for (i, v) in vals.iter_mut().enumerate().take(nargs as usize) {
            *v = u32_at(b, 32 + 4 * i);
        }
        zero(b, 32 + 4 * nargs as usize, RX_ENTRY_BYTES, 0)?;
        Ok(RxEntry {
            src: u16::from_le_bytes([b[2], b[3]]),
            direction,
            category,
            handler,
            args: Args::new(&vals[..nargs as usize])?,
            len,
            addr: u64_at(b, 16),
            phase: b[1] & PHASE != 0,
        })
    }
}
