//! The 32-byte completion entry (`spec/registers.md`, "Completion entry").

use super::desc::{put_u32, put_u64, u32_at, u64_at, zero};
use super::error::CmdError;
use crate::types::NodeId;
use std::fmt;

/// Size of one completion queue entry in bytes.
pub const COMPLETION_BYTES: usize = 32;

/// Bit 0 of byte 31 of a completion entry.
const PHASE: u8 = 1;

/// The outcome of a command, byte 4 of its completion entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Status {
    /// Completed.
    Ok = 0,
    /// Unknown opcode, or a continuation slot where a descriptor must start.
    BadOpcode = 1,
    /// Undefined flag bits, or flags not allowed for the opcode.
    BadFlags = 2,
    /// A reserved byte is not zero.
    ReservedNonZero = 3,
    /// A length over its limit, or a Short AM with a payload.
    BadLength = 4,
    /// Unknown AMO op or width, or a 32-bit operand with upper bits set.
    BadAmo = 5,
    /// An atomic's remote offset is not aligned to its width.
    Misaligned = 6,
    /// More than 16 AM arguments.
    BadArgs = 7,
    /// CHAIN flag inconsistent with the argument count, or a missing or
    /// malformed continuation slot.
    BadChain = 8,
    /// AM handler index 0.
    BadHandler = 9,
    /// Target node not below `NODE_COUNT`.
    BadTarget = 10,
    /// A local or remote range outside its segment.
    OutOfRange = 11,
    /// A feature the board lacks (e.g. IOVA without `caps::HOST_DMA`).
    Unsupported = 12,
    /// The target rejected the request (its status in `detail`).
    RemoteError = 13,
    /// The target did not answer within the retransmit limit.
    Timeout = 14,
    /// A host DMA transfer failed.
    DmaError = 15,
    /// The command was in flight when the queue was reset or disabled.
    Aborted = 16,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 17] = [
        Status::Ok,
        Status::BadOpcode,
        Status::BadFlags,
        Status::ReservedNonZero,
        Status::BadLength,
        Status::BadAmo,
        Status::Misaligned,
        Status::BadArgs,
        Status::BadChain,
        Status::BadHandler,
        Status::BadTarget,
        Status::OutOfRange,
        Status::Unsupported,
        Status::RemoteError,
        Status::Timeout,
        Status::DmaError,
        Status::Aborted,
    ];

    /// Decodes a status code; `None` for codes this version does not define.
    pub fn from_code(code: u8) -> Option<Status> {
        Status::ALL.get(code as usize).copied()
    }

    /// The code carried in a completion entry.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Whether the command succeeded.
    pub fn is_ok(self) -> bool {
        self == Status::Ok
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?} ({})", self.code())
    }
}

/// One completion queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Completion {
    /// The descriptor's tag.
    pub tag: u32,
    /// The outcome.
    pub status: Status,
    /// The descriptor's opcode byte, as read (even if unknown).
    pub opcode: u8,
    /// The descriptor's target node (0 for Nop and Fence).
    pub target: NodeId,
    /// Atomics: the fetched value, zero-extended (0 for non-fetching ops).
    /// Otherwise 0.
    pub value: u64,
    /// Bytes moved: Put/Get length, AM payload length; 0 otherwise and on error.
    pub bytes: u32,
    /// Errors: [`CmdError::detail`] of a malformed descriptor, or the
    /// offending value of a board-side check. 0 on success.
    pub detail: u32,
    /// Command queue slot the descriptor (its head) occupied.
    pub sq_index: u16,
    /// The phase bit: the host owns the entry when it equals the host's
    /// expected phase (1 on the first pass of the ring after reset).
    pub phase: bool,
}

impl Completion {
    /// The entry a board writes for a descriptor rejected by the decoder.
    pub fn rejected(head: &[u8], sq_index: u16, phase: bool, err: &CmdError) -> Completion {
        let byte = |i: usize| head.get(i).copied().unwrap_or(0);
        let tag = u32::from_le_bytes([byte(4), byte(5), byte(6), byte(7)]);
        Completion {
            tag,
            status: err.status(),
            opcode: byte(0),
            target: u16::from_le_bytes([byte(2), byte(3)]),
            value: 0,
            bytes: 0,
            detail: err.detail(),
            sq_index,
            phase,
        }
    }

    /// Encodes the entry.
    pub fn encode(&self) -> [u8; COMPLETION_BYTES] {
        let mut b = [0; COMPLETION_BYTES];
        put_u32(&mut b, 0, self.tag);
        b[4] = self.status.code();
        b[5] = self.opcode;
        b[6..8].copy_from_slice(&self.target.to_le_bytes());
        put_u64(&mut b, 8, self.value);
        put_u32(&mut b, 16, self.bytes);
        put_u32(&mut b, 20, self.detail);
        b[24..26].copy_from_slice(&self.sq_index.to_le_bytes());
        if self.phase {
            b[31] = PHASE;
        }
        b
    }

    /// Decodes an entry from the first [`COMPLETION_BYTES`] of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Completion, CmdError> {
        if bytes.len() < COMPLETION_BYTES {
            return Err(CmdError::Truncated {
                needed: COMPLETION_BYTES,
                got: bytes.len(),
            });
        }
        let b = &bytes[..COMPLETION_BYTES];
        let status = Status::from_code(b[4]).ok_or(CmdError::UnknownStatus(b[4]))?;
        zero(b, 26, 31, 0)?;
        if b[31] & !PHASE != 0 {
            return Err(CmdError::ReservedNonZero {
                offset: 31,
                value: b[31],
            });
        }
        Ok(Completion {
            tag: u32_at(b, 0),
            status,
            opcode: b[5],
            target: u16::from_le_bytes([b[6], b[7]]),
            value: u64_at(b, 8),
            bytes: u32_at(b, 16),
            detail: u32_at(b, 20),
            sq_index: u16::from_le_bytes([b[24], b[25]]),
            phase: b[31] & PHASE != 0,
        })
    }
}
