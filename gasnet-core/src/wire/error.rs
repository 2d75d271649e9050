//! Why bytes are not a packet, and why a packet cannot be encoded.

use super::*;

/// Why bytes are not a valid packet. Each variant names the rule of
/// `spec/wire.md` that was broken and carries the offending values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the packet needs.
    Truncated {
        /// Bytes needed (the header, or the whole packet its header describes).
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// More bytes than the packet its header describes.
    TrailingBytes {
        /// The packet's encoded length.
        expected: usize,
        /// Bytes present.
        have: usize,
    },
    /// A version this code does not speak; the packet is dropped.
    BadVersion {
        /// The version byte found.
        got: u8,
        /// [`WIRE_VERSION`].
        expected: u8,
    },
    /// A type byte that names no packet type.
    UnknownType(u8),
    /// Flag bits outside [`FLAGS_DEFINED`] are set (the whole flags byte).
    ReservedFlags(u8),
    /// A reserved header byte or a padding byte is not zero.
    ReservedNotZero {
        /// Byte offset within the packet.
        at: usize,
        /// The byte found there.
        value: u8,
    },
    /// More than [`MAX_ARGS`] arguments.
    TooManyArgs(usize),
    /// An AM names handler 0, which is never valid.
    ZeroHandler,
    /// An ACK or NACK names a handler (it must be 0).
    ControlWithHandler(u8),
    /// An ACK or NACK carries arguments.
    ControlWithArgs(usize),
    /// An ACK or NACK whose flags are not exactly [`FLAG_ACK`].
    ControlFlags(u8),
    /// `seq` is non-zero but [`FLAG_SEQ`] is clear.
    SeqWithoutFlag(u32),
    /// `ack` is non-zero but [`FLAG_ACK`] is clear.
    AckWithoutFlag(u32),
    /// A Short AM with a payload.
    ShortWithPayload {
        /// `payload_len` found.
        payload_len: u32,
        /// `total_len` found.
        total_len: u32,
    },
    /// A whole payload longer than the packet type allows.
    PayloadTooLong {
        /// The packet type.
        ptype: PacketType,
        /// The length found (`total_len`, or the payload given to encode).
        len: usize,
        /// The type's maximum.
        max: usize,
    },
    /// Fragment fields that do not fit: `frag_offset + payload_len` exceeds
    /// `total_len`, an empty fragment of a non-empty payload, a `frag_offset`
    /// not a multiple of 8, a fragment other than the last whose length is
    /// not a multiple of 8, or a fragmented NACK.
    BadFragment {
        /// `frag_offset` found.
        frag_offset: u32,
        /// `payload_len` found.
        payload_len: u32,
        /// `total_len` found.
        total_len: u32,
    },
    /// A non-Long packet with a non-zero segment offset.
    OffsetNotZero(u64),
    /// A Long AM whose payload would run past the end of a 64-bit segment.
    OffsetOverflow {
        /// `offset` found.
        offset: u64,
        /// `total_len` found.
        total_len: u32,
    },
    /// A NACK payload that is not 1..=[`NACK_MAX_WORDS`] whole 32-bit words.
    BadNackLength(u32),
    /// A NACK bitmap whose last word is zero (the bitmap must be as short as
    /// possible, so it always names at least one sequence number).
    NackLastWordZero,
    /// The CRC-32C trailer does not match the packet.
    CrcMismatch {
        /// CRC-32C of the bytes received.
        computed: u32,
        /// The trailer received.
        stored: u32,
    },
    /// [`nack_missing`] was given a packet that is not a NACK.
    NotNack(PacketType),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DecodeError::*;
        match *self {
            Truncated { need, have } => {
                write!(f, "truncated packet: need {need} bytes, have {have}")
            }
            TrailingBytes { expected, have } => write!(
                f,
                "packet is {expected} bytes but {have} were given ({} trailing)",
                have.saturating_sub(expected)
            ),
            BadVersion { got, expected } => {
                write!(f, "wire version {got} not supported (expected {expected})")
            }
            UnknownType(t) => write!(f, "unknown packet type 0x{t:02x}"),
            ReservedFlags(fl) => write!(
                f,
                "reserved flag bits set: flags 0x{fl:02x}, defined 0x{FLAGS_DEFINED:02x}"
            ),
            ReservedNotZero { at, value } => {
                write!(
                    f,
                    "reserved/padding byte at offset {at} is 0x{value:02x}, not 0"
                )
            }
            TooManyArgs(n) => write!(f, "{n} AM arguments, at most {MAX_ARGS}"),
            ZeroHandler => write!(f, "AM names handler 0"),
            ControlWithHandler(h) => write!(f, "ACK/NACK names handler {h}, must be 0"),
            ControlWithArgs(n) => write!(f, "ACK/NACK carries {n} arguments, must be 0"),
            ControlFlags(fl) => write!(
                f,
                "ACK/NACK flags are 0x{fl:02x}, must be exactly 0x{FLAG_ACK:02x}"
            ),
            SeqWithoutFlag(s) => write!(f, "seq {s} given without the SEQ flag"),
            AckWithoutFlag(a) => write!(f, "ack {a} given without the ACK flag"),
            ShortWithPayload {
                payload_len,
                total_len,
            } => write!(
                f,
                "Short AM with payload_len {payload_len}, total_len {total_len} (must be 0)"
            ),
            PayloadTooLong { ptype, len, max } => {
                write!(f, "{ptype:?} payload of {len} bytes exceeds {max}")
            }
            BadFragment {
                frag_offset,
                payload_len,
                total_len,
            } => write!(
                f,
                "bad fragment: frag_offset {frag_offset} + payload_len {payload_len} \
                 against total_len {total_len}"
            ),
            OffsetNotZero(o) => write!(f, "segment offset {o:#x} on a non-Long packet"),
            OffsetOverflow { offset, total_len } => write!(
                f,
                "segment offset {offset:#x} + {total_len} bytes overflows 64 bits"
            ),
            BadNackLength(n) => write!(
                f,
                "NACK payload of {n} bytes is not 1..={NACK_MAX_WORDS} 32-bit words"
            ),
            NackLastWordZero => write!(f, "NACK bitmap ends in a zero word"),
            CrcMismatch { computed, stored } => write!(
                f,
                "CRC-32C mismatch: computed 0x{computed:08x}, stored 0x{stored:08x}"
            ),
            NotNack(t) => write!(f, "not a NACK but {t:?}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a packet cannot be encoded or constructed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The packet breaks a rule a receiver checks; the value is the error
    /// [`decode`] would report for it.
    Invalid(DecodeError),
    /// [`Packet::nack`] was asked to name a sequence number outside the
    /// 1024 that follow `ack` (serial arithmetic).
    NackOutOfWindow {
        /// The sequence number asked for.
        seq: u32,
        /// The NACK's cumulative acknowledgement.
        ack: u32,
    },
    /// [`Packet::nack`] was given no missing sequence number.
    EmptyNack,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::Invalid(e) => write!(f, "invalid packet: {e}"),
            EncodeError::NackOutOfWindow { seq, ack } => write!(
                f,
                "NACK cannot name seq {seq}: outside the {} after ack {ack}",
                NACK_MAX_WORDS * 32
            ),
            EncodeError::EmptyNack => write!(f, "NACK names no missing sequence number"),
        }
    }
}

impl std::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EncodeError::Invalid(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DecodeError> for EncodeError {
    fn from(e: DecodeError) -> Self {
        EncodeError::Invalid(e)
    }
}
