//! The packet that travels between cores — over a board link or the IPv6
//! bridge — exactly as `spec/wire.md` specifies it.
//!
//! A packet is a fixed 40-byte header, the AM arguments (padded to a multiple
//! of 8 bytes), the payload (padded to a multiple of 4 bytes) and a CRC-32C
//! trailer. Every multi-byte field is big-endian (network byte order).
//!
//! [`decode`] takes untrusted bytes: every malformed input is a
//! [`DecodeError`], never a panic. [`encode`] refuses exactly the packets
//! [`decode`] would reject, so whatever encodes also decodes to itself.
//!
//! ```
//! use gasnet_core::wire::{self, Packet};
//! use gasnet_core::{Direction, handlers};
//!
//! let p = Packet::medium(Direction::Request, 1, 2, handlers::EXCHANGE, &[7], b"hello")
//!     .with_seq(42)
//!     .with_ack(17);
//! let bytes = wire::encode(&p).unwrap();
//! assert_eq!(bytes.len(), wire::packet_len(1, 5));
//! assert_eq!(wire::decode(&bytes).unwrap(), p);
//! ```

// The decoder takes untrusted input: forbid every construct that can panic.
#![deny(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use crate::crc;
use crate::types::{Category, Direction, MAX_ARGS, MAX_LONG, MAX_MEDIUM, NodeId};
use std::fmt;

mod codec;
mod error;

pub use codec::{Tail, decode, encode, encode_gather, encode_into, nack_missing, peek_header};
pub use error::{DecodeError, EncodeError};

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// An active message.
    Am {
        /// Short, Medium or Long.
        category: Category,
        /// Request or reply.
        direction: Direction,
    },
    /// A transport-level acknowledgement: `ack` is cumulative (every
    /// sequence number below it has arrived). Carries no AM.
    Ack,
    /// A transport-level selective negative acknowledgement: `ack` is
    /// cumulative as for [`PacketType::Ack`] and the payload names the
    /// missing sequence numbers (see `spec/wire.md`).
    Nack,
}

/// A decoded wire packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// What the packet is.
    pub ptype: PacketType,
    /// Sending node.
    pub src: NodeId,
    /// Receiving node.
    pub dst: NodeId,
    /// Transport flags (`spec/wire.md`).
    pub flags: u8,
    /// AM handler index (0 for Ack/Nack).
    pub handler: u8,
    /// AM arguments, at most [`crate::MAX_ARGS`].
    pub args: Vec<u32>,
    /// Long: segment offset the whole AM payload is written at. Else 0.
    pub offset: u64,
    /// Sender's per-destination sequence number (reliable transports; 0 on
    /// links that are reliable by construction).
    pub seq: u32,
    /// Cumulative acknowledgement piggy-backed for the reverse direction.
    pub ack: u32,
    /// Byte offset of this packet's payload within the whole AM payload
    /// (fragmentation to a path MTU); 0 when unfragmented.
    pub frag_offset: u32,
    /// Length of the whole AM payload this packet is a fragment of; equals
    /// `payload.len()` when unfragmented.
    pub total_len: u32,
    /// This packet's payload bytes.
    pub payload: Vec<u8>,
}

/// The wire format version this code speaks (byte 0 of every packet).
pub const WIRE_VERSION: u8 = 1;

/// Length of the fixed header in bytes; the arguments start here.
pub const HEADER_LEN: usize = 40;

/// Length of the CRC-32C trailer in bytes.
pub const TRAILER_LEN: usize = 4;

/// Largest encoded packet: a Long AM with [`MAX_ARGS`] arguments carrying a
/// whole [`MAX_LONG`] payload unfragmented (65 644 bytes). It exceeds the
/// 65 527-byte payload of a UDP/IPv6 datagram, so the IPv6 bridge always
/// fragments such an AM (see [`max_fragment_payload`]).
pub const MAX_PACKET: usize = packet_len(MAX_ARGS, MAX_LONG);

/// Largest UDP payload of a (non-jumbo) IPv6 datagram: 65 535 − 8.
pub const MAX_UDP6_PAYLOAD: usize = 65_527;

/// Largest NACK bitmap, in 32-bit words (1024 sequence numbers after `ack`).
pub const NACK_MAX_WORDS: usize = 32;

/// Largest NACK payload in bytes (`4 * NACK_MAX_WORDS`).
pub const NACK_MAX_BYTES: usize = 4 * NACK_MAX_WORDS;

/// Flag bit: `seq` is a reliable-transport sequence number the receiver
/// acknowledges. Clear means the link is reliable by construction and `seq`
/// is 0.
pub const FLAG_SEQ: u8 = 0x01;

/// Flag bit: `ack` carries a cumulative acknowledgement. Clear means `ack`
/// is 0. Always set on ACK and NACK packets.
pub const FLAG_ACK: u8 = 0x02;

/// Flag bit: the sender asks for an acknowledgement without delay (for
/// example the last packet of a send window). Valid on AM packets only.
pub const FLAG_ACK_NOW: u8 = 0x04;

/// The flag bits defined by this version; the others are reserved and zero.
pub const FLAGS_DEFINED: u8 = FLAG_SEQ | FLAG_ACK | FLAG_ACK_NOW;

/// Type code of an AM Short request; see [`PacketType::code`].
pub const TYPE_SHORT_REQUEST: u8 = 0x01;
/// Type code of an AM Medium request.
pub const TYPE_MEDIUM_REQUEST: u8 = 0x02;
/// Type code of an AM Long request.
pub const TYPE_LONG_REQUEST: u8 = 0x03;
/// Type code of an AM Short reply.
pub const TYPE_SHORT_REPLY: u8 = 0x11;
/// Type code of an AM Medium reply.
pub const TYPE_MEDIUM_REPLY: u8 = 0x12;
/// Type code of an AM Long reply.
pub const TYPE_LONG_REPLY: u8 = 0x13;
/// Type code of an ACK.
pub const TYPE_ACK: u8 = 0x20;
/// Type code of a NACK.
pub const TYPE_NACK: u8 = 0x21;

/// Byte offsets of the header fields (see the table in `spec/wire.md`).
mod off {
    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    pub const FLAGS: usize = 2;
    pub const HANDLER: usize = 3;
    pub const SRC: usize = 4;
    pub const DST: usize = 6;
    pub const NARGS: usize = 8;
    pub const RESERVED: usize = 9;
    pub const PAYLOAD_LEN: usize = 12;
    pub const SEQ: usize = 16;
    pub const ACK: usize = 20;
    pub const FRAG_OFFSET: usize = 24;
    pub const TOTAL_LEN: usize = 28;
    pub const OFFSET: usize = 32;
}

/// Encoded length of a packet with `nargs` arguments and a `payload_len`-byte
/// payload: header, arguments padded to 8 bytes, payload padded to 4 bytes,
/// trailer. Saturates instead of overflowing for absurd inputs.
///
/// ```
/// use gasnet_core::wire::packet_len;
/// assert_eq!(packet_len(0, 0), 44);
/// assert_eq!(packet_len(1, 5), 40 + 8 + 8 + 4);
/// ```
pub const fn packet_len(nargs: usize, payload_len: usize) -> usize {
    let args = nargs.saturating_add(1) / 2;
    let args = args.saturating_mul(8);
    let payload = payload_len.saturating_add(3) / 4;
    let payload = payload.saturating_mul(4);
    HEADER_LEN
        .saturating_add(args)
        .saturating_add(payload)
        .saturating_add(TRAILER_LEN)
}

/// The largest fragment payload that keeps a packet with `nargs` arguments
/// within `datagram` bytes, rounded down to a multiple of 8 so that every
/// fragment's `frag_offset` stays 8-byte aligned. 0 when not even an
/// 8-byte fragment fits.
///
/// ```
/// use gasnet_core::wire::{max_fragment_payload, MAX_UDP6_PAYLOAD};
/// // IPv6's minimum MTU (1280) less the IPv6 and UDP headers.
/// assert_eq!(max_fragment_payload(1232, 16), 1120);
/// assert_eq!(max_fragment_payload(MAX_UDP6_PAYLOAD, 16), 65416);
/// ```
pub const fn max_fragment_payload(datagram: usize, nargs: usize) -> usize {
    let fixed = packet_len(nargs, 0);
    if datagram < fixed {
        return 0;
    }
    let room = datagram.saturating_sub(fixed);
    room & !7
}

impl PacketType {
    /// The type byte that encodes this packet type.
    ///
    /// ```
    /// use gasnet_core::wire::PacketType;
    /// use gasnet_core::{Category, Direction};
    /// let t = PacketType::Am { category: Category::Long, direction: Direction::Reply };
    /// assert_eq!(t.code(), 0x13);
    /// assert_eq!(PacketType::from_code(0x13), Some(t));
    /// ```
    pub const fn code(self) -> u8 {
        match self {
            PacketType::Am {
                category,
                direction,
            } => {
                let c = match category {
                    Category::Short => 1,
                    Category::Medium => 2,
                    Category::Long => 3,
                };
                match direction {
                    Direction::Request => c,
                    Direction::Reply => 0x10 | c,
                }
            }
            PacketType::Ack => TYPE_ACK,
            PacketType::Nack => TYPE_NACK,
        }
    }

    /// The packet type a type byte names, if it names one.
    pub const fn from_code(code: u8) -> Option<PacketType> {
        let direction = if code & 0x10 == 0 {
            Direction::Request
        } else {
            Direction::Reply
        };
        let category = match code {
            TYPE_SHORT_REQUEST | TYPE_SHORT_REPLY => Category::Short,
            TYPE_MEDIUM_REQUEST | TYPE_MEDIUM_REPLY => Category::Medium,
            TYPE_LONG_REQUEST | TYPE_LONG_REPLY => Category::Long,
            TYPE_ACK => return Some(PacketType::Ack),
            TYPE_NACK => return Some(PacketType::Nack),
            _ => return None,
        };
        Some(PacketType::Am {
            category,
            direction,
        })
    }

    /// Whether this is an ACK or a NACK (a transport control packet).
    pub const fn is_control(self) -> bool {
        matches!(self, PacketType::Ack | PacketType::Nack)
    }

    /// The largest whole payload (`total_len`) this type may carry.
    pub const fn max_total_len(self) -> usize {
        match self {
            PacketType::Am {
                category: Category::Short,
                ..
            }
            | PacketType::Ack => 0,
            PacketType::Am {
                category: Category::Medium,
                ..
            } => MAX_MEDIUM,
            PacketType::Am {
                category: Category::Long,
                ..
            } => MAX_LONG,
            PacketType::Nack => NACK_MAX_BYTES,
        }
    }
}

/// The fixed 40-byte header of a packet, as [`peek_header`] reads it without
/// touching the arguments, payload or CRC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// What the packet is.
    pub ptype: PacketType,
    /// Transport flags.
    pub flags: u8,
    /// AM handler index (0 for ACK/NACK).
    pub handler: u8,
    /// Sending node.
    pub src: NodeId,
    /// Receiving node.
    pub dst: NodeId,
    /// Number of 32-bit arguments, `0..=16`.
    pub nargs: u8,
    /// Bytes of payload in this packet.
    pub payload_len: u32,
    /// Sequence number (see [`FLAG_SEQ`]).
    pub seq: u32,
    /// Cumulative acknowledgement (see [`FLAG_ACK`]).
    pub ack: u32,
    /// Offset of this packet's payload within the whole AM payload.
    pub frag_offset: u32,
    /// Length of the whole AM payload.
    pub total_len: u32,
    /// Long: segment offset of the whole AM payload. Else 0.
    pub offset: u64,
}

impl Header {
    /// The encoded length of the whole packet this header starts.
    pub const fn packet_len(&self) -> usize {
        packet_len(self.nargs as usize, self.payload_len as usize)
    }

    /// Byte offset at which this packet's payload starts.
    pub const fn payload_start(&self) -> usize {
        packet_len(self.nargs as usize, 0).saturating_sub(TRAILER_LEN)
    }

    /// Whether this packet is one fragment of a larger AM payload rather
    /// than the whole of it.
    pub const fn is_fragment(&self) -> bool {
        self.frag_offset != 0 || self.payload_len != self.total_len
    }

    /// Checks every rule of `spec/wire.md` that concerns the header alone.
    fn check(&self) -> Result<(), DecodeError> {
        let nargs = self.nargs as usize;
        if nargs > MAX_ARGS {
            return Err(DecodeError::TooManyArgs(nargs));
        }
        if self.flags & !FLAGS_DEFINED != 0 {
            return Err(DecodeError::ReservedFlags(self.flags));
        }
        if self.ptype.is_control() {
            if self.handler != 0 {
                return Err(DecodeError::ControlWithHandler(self.handler));
            }
            if nargs != 0 {
                return Err(DecodeError::ControlWithArgs(nargs));
            }
            if self.flags != FLAG_ACK {
                return Err(DecodeError::ControlFlags(self.flags));
            }
        } else if self.handler == 0 {
            return Err(DecodeError::ZeroHandler);
        }
        if self.flags & FLAG_SEQ == 0 && self.seq != 0 {
            return Err(DecodeError::SeqWithoutFlag(self.seq));
        }
        if self.flags & FLAG_ACK == 0 && self.ack != 0 {
            return Err(DecodeError::AckWithoutFlag(self.ack));
        }
        if let PacketType::Am {
            category: Category::Short,
            ..
        } = self.ptype
            && (self.payload_len != 0 || self.total_len != 0)
        {
            return Err(DecodeError::ShortWithPayload {
                payload_len: self.payload_len,
                total_len: self.total_len,
            });
        }
        let max = self.ptype.max_total_len();
        if self.total_len as usize > max {
            return Err(DecodeError::PayloadTooLong {
                ptype: self.ptype,
                len: self.total_len as usize,
                max,
            });
        }
        let end = u64::from(self.frag_offset).saturating_add(u64::from(self.payload_len));
        let empty_fragment = self.payload_len == 0 && self.total_len != 0;
        let split_nack = self.ptype == PacketType::Nack && self.is_fragment();
        let misaligned = !self.frag_offset.is_multiple_of(8)
            || (end < u64::from(self.total_len) && !self.payload_len.is_multiple_of(8));
        if end > u64::from(self.total_len) || empty_fragment || split_nack || misaligned {
            return Err(DecodeError::BadFragment {
                frag_offset: self.frag_offset,
                payload_len: self.payload_len,
                total_len: self.total_len,
            });
        }
        if self.ptype == PacketType::Nack
            && (self.total_len == 0 || !self.total_len.is_multiple_of(4))
        {
            return Err(DecodeError::BadNackLength(self.total_len));
        }
        match self.ptype {
            PacketType::Am {
                category: Category::Long,
                ..
            } => {
                if self.offset.checked_add(u64::from(self.total_len)).is_none() {
                    return Err(DecodeError::OffsetOverflow {
                        offset: self.offset,
                        total_len: self.total_len,
                    });
                }
            }
            _ => {
                if self.offset != 0 {
                    return Err(DecodeError::OffsetNotZero(self.offset));
                }
            }
        }
        Ok(())
    }

    /// Writes the 40 header bytes.
    fn write(&self, out: &mut Vec<u8>) {
        out.push(WIRE_VERSION);
        out.push(self.ptype.code());
        out.push(self.flags);
        out.push(self.handler);
        out.extend_from_slice(&self.src.to_be_bytes());
        out.extend_from_slice(&self.dst.to_be_bytes());
        out.push(self.nargs);
        out.extend_from_slice(&[0, 0, 0]);
        out.extend_from_slice(&self.payload_len.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.ack.to_be_bytes());
        out.extend_from_slice(&self.frag_offset.to_be_bytes());
        out.extend_from_slice(&self.total_len.to_be_bytes());
        out.extend_from_slice(&self.offset.to_be_bytes());
    }
}

impl Packet {
    fn am(
        category: Category,
        direction: Direction,
        src: NodeId,
        dst: NodeId,
        handler: u8,
        args: &[u32],
        payload: &[u8],
    ) -> Packet {
        Packet {
            ptype: PacketType::Am {
                category,
                direction,
            },
            src,
            dst,
            flags: 0,
            handler,
            args: args.to_vec(),
            offset: 0,
            seq: 0,
            ack: 0,
            frag_offset: 0,
            total_len: u32::try_from(payload.len()).unwrap_or(u32::MAX),
            payload: payload.to_vec(),
        }
    }

    /// An unfragmented, unsequenced Short AM. Limits are checked by
    /// [`encode`].
    pub fn short(
        direction: Direction,
        src: NodeId,
        dst: NodeId,
        handler: u8,
        args: &[u32],
    ) -> Packet {
        Packet::am(Category::Short, direction, src, dst, handler, args, &[])
    }

    /// An unfragmented, unsequenced Medium AM.
    pub fn medium(
        direction: Direction,
        src: NodeId,
        dst: NodeId,
        handler: u8,
        args: &[u32],
        payload: &[u8],
    ) -> Packet {
        Packet::am(
            Category::Medium,
            direction,
            src,
            dst,
            handler,
            args,
            payload,
        )
    }

    /// An unfragmented, unsequenced Long AM whose payload is written at
    /// segment offset `offset` on `dst`.
    pub fn long(
        direction: Direction,
        src: NodeId,
        dst: NodeId,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> Packet {
        let mut p = Packet::am(Category::Long, direction, src, dst, handler, args, payload);
        p.offset = offset;
        p
    }

    /// An ACK from `src` to `dst`: every sequence number serially below
    /// `ack` has arrived.
    pub fn ack(src: NodeId, dst: NodeId, ack: u32) -> Packet {
        Packet {
            ptype: PacketType::Ack,
            src,
            dst,
            flags: FLAG_ACK,
            handler: 0,
            args: Vec::new(),
            offset: 0,
            seq: 0,
            ack,
            frag_offset: 0,
            total_len: 0,
            payload: Vec::new(),
        }
    }

    /// A NACK from `src` to `dst`: cumulative acknowledgement `ack`, and
    /// `missing` (each within the 1024 sequence numbers from `ack` on,
    /// serially; order and duplicates do not matter) asked to be resent.
    pub fn nack(
        src: NodeId,
        dst: NodeId,
        ack: u32,
        missing: &[u32],
    ) -> Result<Packet, EncodeError> {
        let mut words = [0u32; NACK_MAX_WORDS];
        let mut used = 0usize;
        for &seq in missing {
            let distance = seq.wrapping_sub(ack) as usize;
            let word = distance / 32;
            let slot = words
                .get_mut(word)
                .ok_or(EncodeError::NackOutOfWindow { seq, ack })?;
            *slot |= 1 << (distance % 32);
            used = used.max(word.saturating_add(1));
        }
        if used == 0 {
            return Err(EncodeError::EmptyNack);
        }
        let mut payload = Vec::with_capacity(used.saturating_mul(4));
        for w in words.iter().take(used) {
            payload.extend_from_slice(&w.to_be_bytes());
        }
        let mut p = Packet::ack(src, dst, ack);
        p.ptype = PacketType::Nack;
        p.total_len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
        p.payload = payload;
        Ok(p)
    }

    /// Marks the packet as sequenced with `seq` (sets [`FLAG_SEQ`]).
    #[must_use]
    pub fn with_seq(mut self, seq: u32) -> Packet {
        self.seq = seq;
        self.flags |= FLAG_SEQ;
        self
    }

    /// Piggy-backs the cumulative acknowledgement `ack` (sets [`FLAG_ACK`]).
    #[must_use]
    pub fn with_ack(mut self, ack: u32) -> Packet {
        self.ack = ack;
        self.flags |= FLAG_ACK;
        self
    }

    /// The encoded length of this packet in bytes.
    pub fn encoded_len(&self) -> usize {
        packet_len(self.args.len(), self.payload.len())
    }

    /// The header this packet encodes with, checked against every header
    /// rule of `spec/wire.md`.
    pub fn header(&self) -> Result<Header, DecodeError> {
        let nargs = self.args.len();
        let nargs = u8::try_from(nargs)
            .ok()
            .filter(|&n| usize::from(n) <= MAX_ARGS)
            .ok_or(DecodeError::TooManyArgs(nargs))?;
        let payload_len =
            u32::try_from(self.payload.len()).map_err(|_| DecodeError::PayloadTooLong {
                ptype: self.ptype,
                len: self.payload.len(),
                max: self.ptype.max_total_len(),
            })?;
        let h = Header {
            ptype: self.ptype,
            flags: self.flags,
            handler: self.handler,
            src: self.src,
            dst: self.dst,
            nargs,
            payload_len,
            seq: self.seq,
            ack: self.ack,
            frag_offset: self.frag_offset,
            total_len: self.total_len,
            offset: self.offset,
        };
        h.check()?;
        Ok(h)
    }

    /// Splits an AM into fragments of at most `max_payload` bytes (see
    /// [`max_fragment_payload`]), each repeating the header and arguments
    /// with its own `frag_offset`; `seq` is copied and left to the
    /// transport. `max_payload` is rounded down to a multiple of 8, as
    /// `spec/wire.md` requires of every fragment but the last. A packet that
    /// already fits, or `max_payload < 8`, gives itself alone.
    ///
    /// ```
    /// use gasnet_core::wire::Packet;
    /// use gasnet_core::Direction;
    /// let p = Packet::long(Direction::Request, 0, 1, 1, &[], &[9u8; 20], 0x1000);
    /// let f = p.fragments(8);
    /// assert_eq!(f.iter().map(|f| f.frag_offset).collect::<Vec<_>>(), [0, 8, 16]);
    /// assert!(f.iter().all(|f| f.total_len == 20 && f.offset == 0x1000));
    /// ```
    pub fn fragments(&self, max_payload: usize) -> Vec<Packet> {
        let max_payload = max_payload & !7;
        if max_payload == 0 || self.payload.len() <= max_payload {
            return vec![self.clone()];
        }
        let mut out = Vec::with_capacity(self.payload.len().div_ceil(max_payload));
        let mut frag_offset = self.frag_offset;
        for chunk in self.payload.chunks(max_payload) {
            out.push(Packet {
                args: self.args.clone(),
                payload: chunk.to_vec(),
                frag_offset,
                ..*self
            });
            let step = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
            frag_offset = frag_offset.saturating_add(step);
        }
        out
    }
}
