//! The errors of the command encodings.

use super::Status;
use std::fmt;

/// Why bytes are not a valid descriptor, completion or receive entry (or why
/// a descriptor value cannot be encoded as a valid one).
///
/// Each variant names what is wrong and carries the offending value;
/// [`CmdError::status`] is the completion status a board reports for it and
/// [`CmdError::detail`] the value it puts in the completion's `detail` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmdError {
    /// Fewer bytes than the encoding needs.
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// Byte 0 is not an opcode this version defines.
    UnknownOpcode(u8),
    /// A continuation slot (opcode 0x1F) where a descriptor must start.
    OrphanContinuation,
    /// Flag bits that are undefined, or not allowed for this opcode.
    BadFlags {
        /// The descriptor's opcode.
        opcode: u8,
        /// The offending bits only.
        flags: u8,
    },
    /// A byte that must be zero is not.
    ReservedNonZero {
        /// Offset of the first such byte within the encoding.
        offset: usize,
        /// Its value.
        value: u8,
    },
    /// An AMO op code outside 0..=11.
    BadAmoOp(u8),
    /// An AMO width code other than 4 or 8.
    BadAmoWidth(u8),
    /// A 32-bit atomic whose operand or compare value has upper bits set.
    OperandTooWide {
        /// Offset of the 8-byte field within the descriptor (32 or 40).
        offset: usize,
        /// Its value.
        value: u64,
    },
    /// An atomic's remote offset not aligned to its width.
    Misaligned {
        /// The remote offset.
        offset: u64,
        /// The required alignment in bytes.
        align: u8,
    },
    /// A length over the limit of its kind (transfer, inline, Medium, Long).
    LengthTooLong {
        /// The descriptor's opcode.
        opcode: u8,
        /// The length given.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// A Short AM with a non-zero payload length.
    ShortWithPayload(u32),
    /// An argument count above 16.
    TooManyArgs(u8),
    /// An AM naming handler 0 (`handlers::INVALID`).
    InvalidHandler(u8),
    /// An AM with more than 8 arguments whose CHAIN flag is clear.
    ChainMissing {
        /// The argument count.
        nargs: u8,
    },
    /// An AM with CHAIN set but at most 8 arguments.
    ChainUnexpected {
        /// The argument count.
        nargs: u8,
    },
    /// The slot after a chained AM is not a continuation.
    BadContinuation {
        /// The opcode found instead of 0x1F.
        opcode: u8,
    },
    /// The continuation's tag differs from its head's.
    ContinuationTagMismatch {
        /// The head descriptor's tag.
        head: u32,
        /// The continuation's tag.
        continuation: u32,
    },
    /// A completion status code this version does not define.
    UnknownStatus(u8),
    /// A receive entry kind that is not an AM opcode.
    BadRxKind(u8),
}

impl CmdError {
    /// The completion status a board writes for a descriptor rejected with
    /// this error.
    pub fn status(&self) -> Status {
        match self {
            CmdError::Truncated { .. } | CmdError::BadContinuation { .. } => Status::BadChain,
            CmdError::UnknownOpcode(_) | CmdError::OrphanContinuation => Status::BadOpcode,
            CmdError::BadFlags { .. } => Status::BadFlags,
            CmdError::ReservedNonZero { .. } => Status::ReservedNonZero,
            CmdError::BadAmoOp(_) | CmdError::BadAmoWidth(_) | CmdError::OperandTooWide { .. } => {
                Status::BadAmo
            }
            CmdError::Misaligned { .. } => Status::Misaligned,
            CmdError::LengthTooLong { .. } | CmdError::ShortWithPayload(_) => Status::BadLength,
            CmdError::TooManyArgs(_) => Status::BadArgs,
            CmdError::InvalidHandler(_) => Status::BadHandler,
            CmdError::ChainMissing { .. }
            | CmdError::ChainUnexpected { .. }
            | CmdError::ContinuationTagMismatch { .. } => Status::BadChain,
            CmdError::UnknownStatus(_) | CmdError::BadRxKind(_) => Status::BadOpcode,
        }
    }

    /// The value a board reports in the completion's `detail` field: the
    /// offending value (truncated to 32 bits), or the byte offset for
    /// [`CmdError::ReservedNonZero`].
    pub fn detail(&self) -> u32 {
        match *self {
            CmdError::Truncated { got, .. } => got as u32,
            CmdError::UnknownOpcode(v)
            | CmdError::BadAmoOp(v)
            | CmdError::BadAmoWidth(v)
            | CmdError::TooManyArgs(v)
            | CmdError::InvalidHandler(v)
            | CmdError::UnknownStatus(v)
            | CmdError::BadRxKind(v) => v as u32,
            CmdError::OrphanContinuation => super::opcode::AM_CONTINUATION as u32,
            CmdError::BadFlags { flags, .. } => flags as u32,
            CmdError::ReservedNonZero { offset, .. } => offset as u32,
            CmdError::OperandTooWide { offset, .. } => offset as u32,
            CmdError::Misaligned { offset, .. } => offset as u32,
            CmdError::LengthTooLong { len, .. } | CmdError::ShortWithPayload(len) => len,
            CmdError::ChainMissing { nargs } | CmdError::ChainUnexpected { nargs } => nargs as u32,
            CmdError::BadContinuation { opcode } => opcode as u32,
            CmdError::ContinuationTagMismatch { continuation, .. } => continuation,
        }
    }
}

impl fmt::Display for CmdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CmdError::Truncated { needed, got } => {
                write!(f, "truncated: {got} bytes given, {needed} needed")
            }
            CmdError::UnknownOpcode(op) => write!(f, "unknown opcode {op:#04x}"),
            CmdError::OrphanContinuation => {
                write!(
                    f,
                    "continuation slot (opcode 0x1f) without a chained AM before it"
                )
            }
            CmdError::BadFlags { opcode, flags } => {
                write!(
                    f,
                    "flag bits {flags:#04x} not allowed for opcode {opcode:#04x}"
                )
            }
            CmdError::ReservedNonZero { offset, value } => {
                write!(f, "reserved byte {offset} is {value:#04x}, must be zero")
            }
            CmdError::BadAmoOp(code) => write!(f, "unknown atomic op code {code}"),
            CmdError::BadAmoWidth(code) => {
                write!(f, "atomic width code {code} (must be 4 or 8)")
            }
            CmdError::OperandTooWide { offset, value } => write!(
                f,
                "32-bit atomic has value {value:#x} with upper bits set in the field at byte {offset}"
            ),
            CmdError::Misaligned { offset, align } => write!(
                f,
                "atomic remote offset {offset:#x} is not {align}-byte aligned"
            ),
            CmdError::LengthTooLong { opcode, len, max } => write!(
                f,
                "length {len} exceeds the limit {max} of opcode {opcode:#04x}"
            ),
            CmdError::ShortWithPayload(len) => {
                write!(f, "Short AM with payload length {len} (must be 0)")
            }
            CmdError::TooManyArgs(n) => write!(f, "{n} AM arguments, at most 16"),
            CmdError::InvalidHandler(h) => write!(f, "AM handler index {h} is invalid"),
            CmdError::ChainMissing { nargs } => {
                write!(f, "AM with {nargs} arguments needs the CHAIN flag")
            }
            CmdError::ChainUnexpected { nargs } => {
                write!(f, "AM with {nargs} arguments must not set the CHAIN flag")
            }
            CmdError::BadContinuation { opcode } => write!(
                f,
                "slot after a chained AM has opcode {opcode:#04x}, expected 0x1f"
            ),
            CmdError::ContinuationTagMismatch { head, continuation } => write!(
                f,
                "continuation tag {continuation:#x} differs from its head's {head:#x}"
            ),
            CmdError::UnknownStatus(s) => write!(f, "unknown completion status {s}"),
            CmdError::BadRxKind(k) => write!(f, "receive entry kind {k:#04x} is not an AM"),
        }
    }
}

impl std::error::Error for CmdError {}
