//! Bytes to packets and back: the header peek a stream transport needs,
//! the full decode of untrusted bytes (never a panic) and the encode that
//! refuses exactly what the decode rejects.

use super::*;

fn be16(buf: &[u8], at: usize) -> Option<u16> {
    let b = buf.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes(b.try_into().ok()?))
}

fn be32(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

fn be64(buf: &[u8], at: usize) -> Option<u64> {
    let b = buf.get(at..at.checked_add(8)?)?;
    Some(u64::from_be_bytes(b.try_into().ok()?))
}

fn byte(buf: &[u8], at: usize) -> Option<u8> {
    buf.get(at).copied()
}

/// Zero bytes written after the arguments and after the payload.
const PAD: [u8; 4] = [0; 4];

/// Reads and checks the fixed header at the start of `buf`, without looking
/// at the arguments, payload or CRC. Needs only [`HEADER_LEN`] bytes: a
/// stream transport reads the header, then [`Header::packet_len`] bytes in
/// all, then calls [`decode`]. The CRC is not checked, so a header that
/// passes may still belong to a corrupt packet.
///
/// ```
/// use gasnet_core::wire::{self, Packet};
/// let bytes = wire::encode(&Packet::ack(3, 4, 99)).unwrap();
/// let h = wire::peek_header(&bytes[..wire::HEADER_LEN]).unwrap();
/// assert_eq!((h.src, h.dst, h.ack), (3, 4, 99));
/// assert_eq!(h.packet_len(), bytes.len());
/// ```
pub fn peek_header(buf: &[u8]) -> Result<Header, DecodeError> {
    let truncated = DecodeError::Truncated {
        need: HEADER_LEN,
        have: buf.len(),
    };
    let version = byte(buf, off::VERSION).ok_or(truncated)?;
    if version != WIRE_VERSION {
        return Err(DecodeError::BadVersion {
            got: version,
            expected: WIRE_VERSION,
        });
    }
    if buf.len() < HEADER_LEN {
        return Err(truncated);
    }
    let code = byte(buf, off::TYPE).ok_or(truncated)?;
    let ptype = PacketType::from_code(code).ok_or(DecodeError::UnknownType(code))?;
    for at in off::RESERVED..off::PAYLOAD_LEN {
        let value = byte(buf, at).ok_or(truncated)?;
        if value != 0 {
            return Err(DecodeError::ReservedNotZero { at, value });
        }
    }
    let h = Header {
        ptype,
        flags: byte(buf, off::FLAGS).ok_or(truncated)?,
        handler: byte(buf, off::HANDLER).ok_or(truncated)?,
        src: be16(buf, off::SRC).ok_or(truncated)?,
        dst: be16(buf, off::DST).ok_or(truncated)?,
        nargs: byte(buf, off::NARGS).ok_or(truncated)?,
        payload_len: be32(buf, off::PAYLOAD_LEN).ok_or(truncated)?,
        seq: be32(buf, off::SEQ).ok_or(truncated)?,
        ack: be32(buf, off::ACK).ok_or(truncated)?,
        frag_offset: be32(buf, off::FRAG_OFFSET).ok_or(truncated)?,
        total_len: be32(buf, off::TOTAL_LEN).ok_or(truncated)?,
        offset: be64(buf, off::OFFSET).ok_or(truncated)?,
    };
    h.check()?;
    Ok(h)
}

/// Decodes one packet that fills `buf` exactly, checking every rule of
/// `spec/wire.md`. Never panics, whatever the bytes.
///
/// ```
/// use gasnet_core::wire::{self, DecodeError};
/// assert_eq!(
///     wire::decode(&[7]),
///     Err(DecodeError::BadVersion { got: 7, expected: wire::WIRE_VERSION })
/// );
/// ```
pub fn decode(buf: &[u8]) -> Result<Packet, DecodeError> {
    let h = peek_header(buf)?;
    let need = h.packet_len();
    if buf.len() < need {
        return Err(DecodeError::Truncated {
            need,
            have: buf.len(),
        });
    }
    if buf.len() > need {
        return Err(DecodeError::TrailingBytes {
            expected: need,
            have: buf.len(),
        });
    }
    let truncated = DecodeError::Truncated {
        need,
        have: buf.len(),
    };
    let body_len = need.checked_sub(TRAILER_LEN).ok_or(truncated)?;
    let body = buf.get(..body_len).ok_or(truncated)?;
    let stored = be32(buf, body_len).ok_or(truncated)?;
    let computed = crc::crc32c(body);
    if computed != stored {
        return Err(DecodeError::CrcMismatch { computed, stored });
    }

    let nargs = usize::from(h.nargs);
    let mut args = Vec::with_capacity(nargs);
    let mut at = HEADER_LEN;
    for _ in 0..nargs {
        args.push(be32(buf, at).ok_or(truncated)?);
        at = at.checked_add(4).ok_or(truncated)?;
    }
    let payload_start = h.payload_start();
    check_zero(buf, at, payload_start)?;
    let payload_len = h.payload_len as usize;
    let payload_end = payload_start.checked_add(payload_len).ok_or(truncated)?;
    let payload = crate::pool::copy_of(buf.get(payload_start..payload_end).ok_or(truncated)?);
    check_zero(buf, payload_end, body_len)?;
    if h.ptype == PacketType::Nack {
        check_nack_bitmap(&payload)?;
    }
    Ok(Packet {
        ptype: h.ptype,
        src: h.src,
        dst: h.dst,
        flags: h.flags,
        handler: h.handler,
        args,
        offset: h.offset,
        seq: h.seq,
        ack: h.ack,
        frag_offset: h.frag_offset,
        total_len: h.total_len,
        payload,
    })
}

/// Checks that `buf[from..to]` (padding) is all zero.
fn check_zero(buf: &[u8], from: usize, to: usize) -> Result<(), DecodeError> {
    for at in from..to {
        let value = byte(buf, at).ok_or(DecodeError::Truncated {
            need: to,
            have: buf.len(),
        })?;
        if value != 0 {
            return Err(DecodeError::ReservedNotZero { at, value });
        }
    }
    Ok(())
}

/// The rules on a NACK's bitmap bytes beyond what the header check covers.
fn check_nack_bitmap(payload: &[u8]) -> Result<(), DecodeError> {
    let len = payload.len();
    if len == 0 || !len.is_multiple_of(4) || len > NACK_MAX_BYTES {
        return Err(DecodeError::BadNackLength(
            u32::try_from(len).unwrap_or(u32::MAX),
        ));
    }
    let last = be32(payload, len.saturating_sub(4)).unwrap_or(0);
    if last == 0 {
        return Err(DecodeError::NackLastWordZero);
    }
    Ok(())
}

/// Encodes `p` into a new buffer of exactly [`Packet::encoded_len`] bytes.
///
/// ```
/// use gasnet_core::wire::{self, EncodeError, DecodeError, Packet};
/// use gasnet_core::Direction;
/// let bad = Packet::short(Direction::Request, 0, 1, 0, &[]);
/// assert_eq!(wire::encode(&bad), Err(EncodeError::Invalid(DecodeError::ZeroHandler)));
/// ```
pub fn encode(p: &Packet) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    encode_into(p, &mut out)?;
    Ok(out)
}

/// Appends the encoding of `p` to `out`. Reserves the exact length once and
/// allocates nothing else; on error `out` is left unchanged.
pub fn encode_into(p: &Packet, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let h = checked_header(p)?;
    out.reserve(h.packet_len());
    let start = out.len();
    write_head(&h, p, out);
    out.extend_from_slice(&p.payload);
    let tail = p.payload.len().wrapping_neg() & 3;
    out.extend_from_slice(PAD.get(..tail).unwrap_or(&[]));
    let crc = crc::crc32c(out.get(start..).unwrap_or(&[]));
    out.extend_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// `p`'s header, checked against every rule an encoding must keep.
fn checked_header(p: &Packet) -> Result<Header, EncodeError> {
    let h = p.header()?;
    if p.ptype == PacketType::Nack {
        check_nack_bitmap(&p.payload)?;
    }
    Ok(h)
}

/// Appends what precedes the payload: the header `h` of `p`, and `p`'s
/// arguments padded to 8 bytes.
fn write_head(h: &Header, p: &Packet, out: &mut Vec<u8>) {
    h.write(out);
    for a in &p.args {
        out.extend_from_slice(&a.to_be_bytes());
    }
    if p.args.len() % 2 == 1 {
        out.extend_from_slice(&PAD);
    }
}

/// The end of a packet's encoding that follows its payload: the payload's
/// padding to 4 bytes and the CRC-32C ([`encode_gather`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tail {
    bytes: [u8; 7],
    len: u8,
}

impl Tail {
    /// The padding and CRC bytes, in wire order.
    pub fn as_slice(&self) -> &[u8] {
        self.bytes.get(..self.len as usize).unwrap_or(&[])
    }
}

/// The encoding of `p` in three parts, for a send that gathers them
/// (`sendmsg(2)` with an iovec each) instead of copying a large payload:
/// the header and arguments, appended to `head`; the payload, which is
/// `p.payload` itself; and the returned [`Tail`]. Their concatenation is
/// [`encode`]'s bytes. On error `head` is left unchanged.
///
/// ```
/// use gasnet_core::wire::{self, Packet};
/// use gasnet_core::Direction;
/// // Three arguments (padded to four) and a payload of 4093 bytes (padded to 4096).
/// let p = Packet::medium(Direction::Request, 0, 1, 200, &[1, 2, 3], &[7; 4093]);
/// let mut head = Vec::new();
/// let tail = wire::encode_gather(&p, &mut head).unwrap();
/// let whole = [&head[..], &p.payload[..], tail.as_slice()].concat();
/// assert_eq!(whole, wire::encode(&p).unwrap());
/// ```
pub fn encode_gather(p: &Packet, head: &mut Vec<u8>) -> Result<Tail, EncodeError> {
    let h = checked_header(p)?;
    let start = head.len();
    write_head(&h, p, head);
    let pad = p.payload.len().wrapping_neg() & 3;
    let mut c = crc::update(0xFFFF_FFFF, head.get(start..).unwrap_or(&[]));
    c = crc::update(c, &p.payload);
    c = crc::update(c, PAD.get(..pad).unwrap_or(&[]));
    // `pad` is 0..=3: the CRC's 4 bytes follow it within the 7.
    let mut bytes = [0u8; 7];
    let end = pad.saturating_add(4);
    if let Some(b) = bytes.get_mut(pad..end) {
        b.copy_from_slice(&(c ^ 0xFFFF_FFFF).to_be_bytes());
    }
    Ok(Tail {
        bytes,
        len: end as u8,
    })
}

/// The sequence numbers a NACK names as missing, in increasing serial order
/// from `ack`.
///
/// ```
/// use gasnet_core::wire::{nack_missing, Packet};
/// let n = Packet::nack(1, 2, 100, &[100, 102, 140]).unwrap();
/// assert_eq!(nack_missing(&n).unwrap(), vec![100, 102, 140]);
/// ```
pub fn nack_missing(p: &Packet) -> Result<Vec<u32>, DecodeError> {
    if p.ptype != PacketType::Nack {
        return Err(DecodeError::NotNack(p.ptype));
    }
    check_nack_bitmap(&p.payload)?;
    let mut missing = Vec::new();
    let mut base = p.ack;
    for word in p.payload.chunks_exact(4) {
        let w = u32::from_be_bytes([
            byte(word, 0).unwrap_or(0),
            byte(word, 1).unwrap_or(0),
            byte(word, 2).unwrap_or(0),
            byte(word, 3).unwrap_or(0),
        ]);
        for bit in 0..32u32 {
            if w & (1 << bit) != 0 {
                missing.push(base.wrapping_add(bit));
            }
        }
        base = base.wrapping_add(32);
    }
    Ok(missing)
}
