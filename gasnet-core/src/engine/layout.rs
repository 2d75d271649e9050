//! Argument layouts of the system handlers the engine serves, and the status
//! codes their replies carry.
//!
//! Every argument is a `u32`; a 64-bit value travels as two arguments, low
//! word first (`lo`, `hi`). A *token* is the requester's name for one
//! outstanding request; the responder copies it into the reply unchanged.
//! Token 0 ([`AM_TOKEN`]) is never given to a system request: an [`ACK`]
//! carrying it answers the oldest unanswered AM request (a request to a
//! handler the engine does not serve itself) from that responder.
//!
//! | handler     | category     | direction | args                                                        | payload / offset                    |
//! |-------------|--------------|-----------|-------------------------------------------------------------|-------------------------------------|
//! | [`PUT`]     | Long         | request   | `[token]`                                                   | bytes, written at `offset`          |
//! | [`GET`]     | Short        | request   | `[token, off lo, off hi, len]` → Medium reply               | —                                   |
//! | [`GET`]     | Short        | request   | `[token, off lo, off hi, len, dst lo, dst hi]` → Long reply | —                                   |
//! | [`GET_REPLY`] | Medium/Long | reply    | `[token]`                                                   | the bytes (Long: at `dst`)          |
//! | [`AMO`]     | Short        | request   | `[token, op \| width << 8, off lo, off hi, operand lo, operand hi, compare lo, compare hi]` | — |
//! | [`AMO_REPLY`] | Short      | reply     | `[token, old lo, old hi]` (fetching ops)                    | —                                   |
//! | [`ACK`]     | Short        | reply     | `[token, status]`                                           | —                                   |
//! | [`PING`]    | Short        | request   | `[token]` → `ACK [token, 0]`                                | —                                   |
//!
//! `op` is [`AmoOp::code`] and `width` is [`AmoWidth::bytes`] (4 or 8); for
//! 32-bit atomics the `hi` words are 0 and ignored. A Medium [`GET`] reply
//! carries at most [`MAX_MEDIUM`] bytes, a Long one at most [`MAX_LONG`].
//! The responder only echoes `dst`: what the requester does with a Long
//! reply's payload is its own affair (a board core writes it at `dst`; the
//! reference engine, asked for [`GetInto::BufferLong`], copies it into the
//! completion's buffer).
//! Non-fetching atomics and puts are answered with `ACK [token, 0]`. Any
//! system request that fails is answered with `ACK [token, status]` where
//! `status` is a nonzero [`Status`] code, instead of its usual reply.
//!
//! [`PUT`]: handlers::PUT
//! [`GET`]: handlers::GET
//! [`GET_REPLY`]: handlers::GET_REPLY
//! [`AMO`]: handlers::AMO
//! [`AMO_REPLY`]: handlers::AMO_REPLY
//! [`ACK`]: handlers::ACK
//! [`PING`]: handlers::PING

use crate::amo::{AmoOp, AmoWidth};
#[cfg(doc)]
use crate::engine::GetInto;
use crate::types::handlers;
#[cfg(doc)]
use crate::types::{MAX_LONG, MAX_MEDIUM};
use std::fmt;

use super::memory::MemError;

/// The token of AM requests (handlers the engine does not serve itself),
/// which are answered in order rather than by token.
pub const AM_TOKEN: u32 = 0;

/// Splits a 64-bit value into `(lo, hi)` argument words.
pub fn split(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

/// Joins `(lo, hi)` argument words into a 64-bit value.
pub fn join(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

/// Whether the engine serves `handler` itself (so it may not be named by an
/// AM request, nor by a reply a user handler sends).
pub fn engine_owned(handler: u8) -> bool {
    matches!(
        handler,
        handlers::INVALID
            | handlers::PUT
            | handlers::GET
            | handlers::GET_REPLY
            | handlers::AMO
            | handlers::AMO_REPLY
            | handlers::ACK
            | handlers::PING
    )
}

/// Outcome of a request, as carried in an [`ACK`](handlers::ACK) and
/// reported in a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Done. Code 0.
    Ok,
    /// The addressed bytes lie outside the segment. Code 1.
    OutOfRange,
    /// An atomic on a misaligned word. Code 2.
    Misaligned,
    /// No handler is registered at the index named. Code 3.
    NoHandler,
    /// The request or reply was not well formed (wrong category, argument
    /// count, unknown atomic op or width, payload length, or an unknown
    /// status code). Code 4.
    Malformed,
}

impl Status {
    /// The code carried on the wire.
    pub fn code(self) -> u32 {
        match self {
            Status::Ok => 0,
            Status::OutOfRange => 1,
            Status::Misaligned => 2,
            Status::NoHandler => 3,
            Status::Malformed => 4,
        }
    }

    /// Decodes a wire code; unknown codes decode as [`Status::Malformed`].
    pub fn from_code(code: u32) -> Status {
        match code {
            0 => Status::Ok,
            1 => Status::OutOfRange,
            2 => Status::Misaligned,
            3 => Status::NoHandler,
            _ => Status::Malformed,
        }
    }

    /// Whether this is [`Status::Ok`].
    pub fn is_ok(self) -> bool {
        self == Status::Ok
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::OutOfRange => "offset out of range",
            Status::Misaligned => "misaligned atomic",
            Status::NoHandler => "no handler registered",
            Status::Malformed => "malformed message",
        })
    }
}

impl From<MemError> for Status {
    fn from(e: MemError) -> Status {
        match e {
            MemError::OutOfRange { .. } => Status::OutOfRange,
            MemError::Misaligned { .. } => Status::Misaligned,
        }
    }
}

/// A [`GET`](handlers::GET) request's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GetArgs {
    /// The requester's token.
    pub token: u32,
    /// Offset of the bytes in the responder's segment.
    pub offset: u64,
    /// How many bytes.
    pub len: u32,
    /// `Some(dst)`: reply Long, written at `dst` in the requester's
    /// segment. `None`: reply Medium.
    pub reply_at: Option<u64>,
}

impl GetArgs {
    /// The argument words.
    pub fn encode(&self) -> Vec<u32> {
        let (lo, hi) = split(self.offset);
        let mut v = vec![self.token, lo, hi, self.len];
        if let Some(dst) = self.reply_at {
            let (dlo, dhi) = split(dst);
            v.extend([dlo, dhi]);
        }
        v
    }

    /// Parses argument words; `None` unless there are 4 or 6.
    pub fn decode(args: &[u32]) -> Option<GetArgs> {
        let reply_at = match args.len() {
            4 => None,
            6 => Some(join(args[4], args[5])),
            _ => return None,
        };
        Some(GetArgs {
            token: args[0],
            offset: join(args[1], args[2]),
            len: args[3],
            reply_at,
        })
    }
}

/// An [`AMO`](handlers::AMO) request's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmoArgs {
    /// The requester's token.
    pub token: u32,
    /// The operation.
    pub op: AmoOp,
    /// The word width.
    pub width: AmoWidth,
    /// Offset of the word in the responder's segment.
    pub offset: u64,
    /// The operand (masked to `width` by the op).
    pub operand: u64,
    /// The comparand of [`AmoOp::CompareSwap`]; ignored otherwise.
    pub compare: u64,
}

impl AmoArgs {
    /// The argument words.
    pub fn encode(&self) -> Vec<u32> {
        let (olo, ohi) = split(self.offset);
        let (alo, ahi) = split(self.operand);
        let (clo, chi) = split(self.compare);
        let opw = self.op.code() as u32 | (self.width.bytes() as u32) << 8;
        vec![self.token, opw, olo, ohi, alo, ahi, clo, chi]
    }

    /// Parses argument words; `None` unless there are 8 with a known op
    /// code and width (and no other bits set in the op word).
    pub fn decode(args: &[u32]) -> Option<AmoArgs> {
        if args.len() != 8 || args[1] >> 16 != 0 {
            return None;
        }
        Some(AmoArgs {
            token: args[0],
            op: AmoOp::from_code(args[1] as u8)?,
            width: AmoWidth::from_bytes((args[1] >> 8) as u8)?,
            offset: join(args[2], args[3]),
            operand: join(args[4], args[5]),
            compare: join(args[6], args[7]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_and_join() {
        assert_eq!(split(0x1234_5678_9abc_def0), (0x9abc_def0, 0x1234_5678));
        assert_eq!(join(0x9abc_def0, 0x1234_5678), 0x1234_5678_9abc_def0);
    }

    #[test]
    fn get_args_round_trip_both_forms() {
        for reply_at in [None, Some(0x7_0000_0010)] {
            let g = GetArgs {
                token: 9,
                offset: 0x5_0000_0001,
                len: 77,
                reply_at,
            };
            let w = g.encode();
            assert_eq!(w.len(), if reply_at.is_some() { 6 } else { 4 });
            assert_eq!(GetArgs::decode(&w), Some(g));
        }
        assert_eq!(GetArgs::decode(&[1, 2, 3]), None);
        assert_eq!(GetArgs::decode(&[1, 2, 3, 4, 5]), None);
    }

    #[test]
    fn amo_args_round_trip_and_reject_bad_codes() {
        for op in AmoOp::ALL {
            for width in [AmoWidth::W32, AmoWidth::W64] {
                let a = AmoArgs {
                    token: 3,
                    op,
                    width,
                    offset: 0x1_0000_0008,
                    operand: u64::MAX - 5,
                    compare: 0xdead_beef_0000_0001,
                };
                assert_eq!(AmoArgs::decode(&a.encode()), Some(a));
            }
        }
        assert_eq!(AmoArgs::decode(&[1, 12 | 8 << 8, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(AmoArgs::decode(&[1, 4 | 2 << 8, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(AmoArgs::decode(&[1, 4 | 8 << 8, 0, 0, 0, 0, 0]), None);
        assert_eq!(
            AmoArgs::decode(&[1, 4 | 8 << 8 | 1 << 16, 0, 0, 0, 0, 0, 0]),
            None
        );
    }

    #[test]
    fn status_codes_round_trip() {
        for s in [
            Status::Ok,
            Status::OutOfRange,
            Status::Misaligned,
            Status::NoHandler,
            Status::Malformed,
        ] {
            assert_eq!(Status::from_code(s.code()), s);
        }
        assert_eq!(Status::from_code(99), Status::Malformed);
    }
}
