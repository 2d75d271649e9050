//! Property and malformation tests of the wire packet (`spec/wire.md`).

use gasnet_core::wire::{
    self, DecodeError, EncodeError, FLAG_ACK, FLAG_ACK_NOW, FLAG_SEQ, HEADER_LEN, NACK_MAX_WORDS,
    Packet, PacketType, decode, encode, encode_into, nack_missing, peek_header,
};
use gasnet_core::{Category, Direction, MAX_LONG, MAX_MEDIUM, crc};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// An independent writer of the layout, field by field, used to build both
// valid and deliberately malformed packets.
// ---------------------------------------------------------------------------

/// Every byte-level field of a packet, including the ones a `Packet` cannot
/// express (version, reserved bytes, padding, the CRC itself).
#[derive(Clone, Debug)]
struct Raw {
    version: u8,
    ptype: u8,
    flags: u8,
    handler: u8,
    src: u16,
    dst: u16,
    nargs: u8,
    reserved: [u8; 3],
    payload_len: u32,
    seq: u32,
    ack: u32,
    frag_offset: u32,
    total_len: u32,
    offset: u64,
    args: Vec<u32>,
    arg_pad: u8,
    payload: Vec<u8>,
    payload_pad: u8,
    /// `None`: the correct CRC-32C.
    crc: Option<u32>,
}

impl Raw {
    fn from_packet(p: &Packet) -> Raw {
        Raw {
            version: 1,
            ptype: p.ptype.code(),
            flags: p.flags,
            handler: p.handler,
            src: p.src,
            dst: p.dst,
            nargs: p.args.len() as u8,
            reserved: [0; 3],
            payload_len: p.payload.len() as u32,
            seq: p.seq,
            ack: p.ack,
            frag_offset: p.frag_offset,
            total_len: p.total_len,
            offset: p.offset,
            args: p.args.clone(),
            arg_pad: 0,
            payload: p.payload.clone(),
            payload_pad: 0,
            crc: None,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut b = vec![self.version, self.ptype, self.flags, self.handler];
        b.extend(self.src.to_be_bytes());
        b.extend(self.dst.to_be_bytes());
        b.push(self.nargs);
        b.extend(self.reserved);
        for v in [
            self.payload_len,
            self.seq,
            self.ack,
            self.frag_offset,
            self.total_len,
        ] {
            b.extend(v.to_be_bytes());
        }
        b.extend(self.offset.to_be_bytes());
        assert_eq!(b.len(), 40);
        for a in &self.args {
            b.extend(a.to_be_bytes());
        }
        if self.args.len() % 2 == 1 {
            b.extend([self.arg_pad, 0, 0, 0]);
        }
        b.extend(&self.payload);
        while b.len() % 4 != 0 {
            b.push(self.payload_pad);
        }
        let crc = self.crc.unwrap_or_else(|| crc::crc32c(&b));
        b.extend(crc.to_be_bytes());
        b
    }
}

/// Rewrites the trailer of an encoded packet so that its CRC matches.
fn fix_crc(b: &mut [u8]) {
    let n = b.len() - 4;
    let c = crc::crc32c(&b[..n]);
    b[n..].copy_from_slice(&c.to_be_bytes());
}

// ---------------------------------------------------------------------------
// Strategies for valid packets.
// ---------------------------------------------------------------------------

fn am_type() -> impl Strategy<Value = (Category, Direction)> {
    (
        prop_oneof![
            Just(Category::Short),
            Just(Category::Medium),
            Just(Category::Long)
        ],
        prop_oneof![Just(Direction::Request), Just(Direction::Reply)],
    )
}

/// `(total_len, frag_offset, payload_len)` obeying the fragment rules for a
/// whole payload of at most `max` bytes.
fn fragment(max: usize) -> impl Strategy<Value = (u32, u32, u32)> {
    (
        0..=max,
        any::<bool>(),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(total, whole, a, b)| {
            if total == 0 || whole {
                return (total as u32, 0, total as u32);
            }
            let start = 8 * a.index(total.div_ceil(8));
            let rest = total - start;
            // Either the last fragment, or a multiple of 8 no longer than the rest.
            let blocks = rest / 8;
            let len = if blocks == 0 || b.index(2) == 0 {
                rest
            } else {
                8 * (1 + b.index(blocks))
            };
            (total as u32, start as u32, len as u32)
        })
}

fn seq_ack() -> impl Strategy<Value = (u8, u32, u32)> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(s, a, now, seq, ack)| {
            let mut flags = 0;
            if s {
                flags |= FLAG_SEQ;
            }
            if a {
                flags |= FLAG_ACK;
            }
            if now {
                flags |= FLAG_ACK_NOW;
            }
            (flags, if s { seq } else { 0 }, if a { ack } else { 0 })
        })
}

fn am_packet(medium_max: usize, long_max: usize) -> impl Strategy<Value = Packet> {
    (
        am_type(),
        any::<u16>(),
        any::<u16>(),
        1..=255u8,
        prop::collection::vec(any::<u32>(), 0..=16),
        seq_ack(),
        fragment(medium_max),
        fragment(long_max),
        any::<u64>(),
        any::<u8>(),
    )
        .prop_map(
            move |(
                (category, direction),
                src,
                dst,
                handler,
                args,
                (flags, seq, ack),
                mf,
                lf,
                off,
                fill,
            )| {
                let (total_len, frag_offset, payload_len) = match category {
                    Category::Short => (0, 0, 0),
                    Category::Medium => mf,
                    Category::Long => lf,
                };
                let offset = match category {
                    Category::Long => off.min(u64::MAX - u64::from(total_len)),
                    _ => 0,
                };
                let payload = (0..payload_len)
                    .map(|i| (i as u8).wrapping_mul(31).wrapping_add(fill))
                    .collect();
                Packet {
                    ptype: PacketType::Am {
                        category,
                        direction,
                    },
                    src,
                    dst,
                    flags,
                    handler,
                    args,
                    offset,
                    seq,
                    ack,
                    frag_offset,
                    total_len,
                    payload,
                }
            },
        )
}

fn control_packet() -> impl Strategy<Value = Packet> {
    prop_oneof![
        (any::<u16>(), any::<u16>(), any::<u32>()).prop_map(|(s, d, a)| Packet::ack(s, d, a)),
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            prop::collection::vec(0..1024u32, 1..40)
        )
            .prop_map(|(s, d, a, miss)| {
                let seqs: Vec<u32> = miss.iter().map(|m| a.wrapping_add(*m)).collect();
                Packet::nack(s, d, a, &seqs).unwrap()
            }),
    ]
}

/// Any valid packet; payloads kept small enough for many cases.
fn packet() -> impl Strategy<Value = Packet> {
    prop_oneof![4 => am_packet(300, 300), 1 => control_packet()]
}

/// Any valid packet, payloads up to the category limits.
fn big_packet() -> impl Strategy<Value = Packet> {
    am_packet(MAX_MEDIUM, MAX_LONG)
}

// ---------------------------------------------------------------------------
// Properties.
// ---------------------------------------------------------------------------

proptest! {
    #[test]
    fn round_trip(p in packet()) {
        let b = encode(&p).unwrap();
        prop_assert_eq!(b.len(), p.encoded_len());
        prop_assert_eq!(b.len() % 4, 0);
        prop_assert!(b.len() <= wire::MAX_PACKET);
        prop_assert_eq!(&b, &Raw::from_packet(&p).bytes(), "layout differs from the spec's");
        prop_assert_eq!(decode(&b), Ok(p.clone()));

        let h = peek_header(&b[..HEADER_LEN]).unwrap();
        prop_assert_eq!(h, p.header().unwrap());
        prop_assert_eq!(h.packet_len(), b.len());
        prop_assert_eq!(&b[h.payload_start()..h.payload_start() + p.payload.len()], &p.payload[..]);

        // encode_into appends after whatever the buffer holds.
        let mut out = vec![0xEE; 3];
        encode_into(&p, &mut out).unwrap();
        prop_assert_eq!(&out[..3], &[0xEE; 3]);
        prop_assert_eq!(&out[3..], &b[..]);
    }

    #[test]
    fn round_trip_full_size(p in big_packet()) {
        let b = encode(&p).unwrap();
        prop_assert_eq!(decode(&b), Ok(p));
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode(&b);
        let _ = peek_header(&b);
    }

    #[test]
    fn arbitrary_large_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 200..70_000)) {
        let _ = decode(&b);
        let _ = peek_header(&b);
    }

    /// Random bytes shaped like a packet (right version, a known type, a
    /// length that matches the header, a matching CRC), so decoding goes past
    /// the cheap checks. Whatever decodes must re-encode to the very same
    /// bytes: the encoding is canonical.
    #[test]
    fn plausible_bytes_never_panic_and_are_canonical(
        fill in prop::collection::vec(any::<u8>(), wire::packet_len(17, 200)),
        code in prop::sample::select(vec![0x01u8, 0x02, 0x03, 0x11, 0x12, 0x13, 0x20, 0x21]),
        nargs in 0..=17usize,
        len in 0..200u32,
        tidy in any::<bool>(),
    ) {
        let t = PacketType::from_code(code).unwrap();
        let nargs = if t.is_control() { 0 } else { nargs };
        let len = match t {
            PacketType::Am { category: Category::Short, .. } | PacketType::Ack => 0,
            PacketType::Nack => len % 32 * 4 + 4,
            _ => len,
        };
        let mut b = fill;
        b.truncate(wire::packet_len(nargs, len as usize));
        b[0] = 1;
        b[1] = code;
        b[8] = nargs as u8;
        b[9..12].fill(0);
        b[12..16].copy_from_slice(&len.to_be_bytes());
        b[24..28].fill(0);
        b[28..32].copy_from_slice(&len.to_be_bytes());
        if tidy {
            // Valid flags and handler, zero padding and (non-Long) offset.
            b[2] = if t.is_control() { FLAG_ACK } else { b[2] & 7 | FLAG_SEQ | FLAG_ACK };
            if t.is_control() {
                b[3] = 0;
                b[16..20].fill(0);
            } else {
                b[3] |= 1;
            }
            if !matches!(t, PacketType::Am { category: Category::Long, .. }) {
                b[32..40].fill(0);
            }
            b[32] &= 0x7F;
            let arg_end = HEADER_LEN + 4 * nargs;
            let payload_start = wire::packet_len(nargs, 0) - 4;
            b[arg_end..payload_start].fill(0);
            let payload_end = payload_start + len as usize;
            let n = b.len();
            b[payload_end..n - 4].fill(0);
            if t == PacketType::Nack {
                b[payload_end - 1] |= 1;
            }
        }
        fix_crc(&mut b);
        match decode(&b) {
            Ok(p) => {
                // Untidied random bytes may still form a valid packet (the
                // fill can happen to hold legal flags, handler and padding);
                // whatever decodes must be canonical.
                prop_assert!(nargs <= 16);
                prop_assert_eq!(encode(&p).unwrap(), b);
            }
            Err(e) => prop_assert!(!tidy || nargs > 16, "{:?}", e),
        }
    }

    #[test]
    fn mutated_valid_packets_never_panic(p in packet(), at in any::<prop::sample::Index>(), v in any::<u8>()) {
        let mut b = encode(&p).unwrap();
        let i = at.index(b.len());
        b[i] = v;
        fix_crc(&mut b);
        if let Ok(q) = decode(&b) {
            prop_assert_eq!(encode(&q).unwrap(), b);
        }
    }

    #[test]
    fn every_truncation_is_rejected(p in packet()) {
        let b = encode(&p).unwrap();
        for len in 0..b.len() {
            let need = if len < HEADER_LEN { HEADER_LEN } else { b.len() };
            prop_assert_eq!(decode(&b[..len]), Err(DecodeError::Truncated { need, have: len }));
        }
    }

    #[test]
    fn trailing_bytes_are_rejected(p in packet(), extra in prop::collection::vec(any::<u8>(), 1..16)) {
        let mut b = encode(&p).unwrap();
        let expected = b.len();
        b.extend(&extra);
        prop_assert_eq!(decode(&b), Err(DecodeError::TrailingBytes { expected, have: b.len() }));
    }

    #[test]
    fn any_single_byte_error_is_rejected(p in packet(), at in any::<prop::sample::Index>(), x in 1..=255u8) {
        let mut b = encode(&p).unwrap();
        let i = at.index(b.len());
        b[i] ^= x;
        prop_assert!(decode(&b).is_err(), "byte {} ^ {:#04x} accepted", i, x);
    }

    #[test]
    fn payload_corruption_is_a_crc_mismatch(p in am_packet(300, 300), at in any::<prop::sample::Index>(), x in 1..=255u8) {
        prop_assume!(!p.payload.is_empty());
        let mut b = encode(&p).unwrap();
        let i = p.header().unwrap().payload_start() + at.index(p.payload.len());
        b[i] ^= x;
        let stored = u32::from_be_bytes(b[b.len() - 4..].try_into().unwrap());
        let computed = crc::crc32c(&b[..b.len() - 4]);
        prop_assert_ne!(computed, stored);
        prop_assert_eq!(decode(&b), Err(DecodeError::CrcMismatch { computed, stored }));
    }

    #[test]
    fn nack_names_exactly_the_missing(ack in any::<u32>(), miss in prop::collection::btree_set(0..1024u32, 1..60)) {
        let seqs: Vec<u32> = miss.iter().map(|m| ack.wrapping_add(*m)).collect();
        let n = Packet::nack(3, 4, ack, &seqs).unwrap();
        let words = (*miss.iter().next_back().unwrap() / 32 + 1) as usize;
        prop_assert_eq!(n.payload.len(), 4 * words);
        prop_assert_eq!(n.ack, ack);
        prop_assert_eq!(nack_missing(&n).unwrap(), seqs.clone());
        let back = decode(&encode(&n).unwrap()).unwrap();
        prop_assert_eq!(nack_missing(&back).unwrap(), seqs);
    }

    #[test]
    fn nack_refuses_outside_its_window(ack in any::<u32>(), d in 1024u32..=u32::MAX) {
        let seq = ack.wrapping_add(d);
        prop_assert_eq!(Packet::nack(0, 1, ack, &[ack, seq]), Err(EncodeError::NackOutOfWindow { seq, ack }));
    }

    #[test]
    fn fragments_reassemble(p in am_packet(MAX_MEDIUM, 20_000), max in 1usize..3000) {
        let whole = Packet { frag_offset: 0, total_len: p.payload.len() as u32, ..p };
        let frags = whole.fragments(max);
        let mut joined: Vec<u8> = Vec::new();
        for f in &frags {
            prop_assert_eq!(f.frag_offset as usize, joined.len());
            if frags.len() > 1 {
                prop_assert!(f.payload.len() <= max);
            }
            prop_assert_eq!(decode(&encode(f).unwrap()), Ok(f.clone()));
            prop_assert_eq!((f.ptype, f.handler, &f.args, f.offset, f.total_len),
                            (whole.ptype, whole.handler, &whole.args, whole.offset, whole.total_len));
            joined.extend(&f.payload);
        }
        prop_assert_eq!(joined, whole.payload);
    }

    #[test]
    fn fragment_size_fits_the_datagram(nargs in 0usize..=16, dgram in 44usize..70_000) {
        let m = wire::max_fragment_payload(dgram, nargs);
        prop_assert_eq!(m % 8, 0);
        if m > 0 {
            prop_assert!(wire::packet_len(nargs, m) <= dgram);
        }
        prop_assert!(wire::packet_len(nargs, m + 8) > dgram);
    }
}

#[test]
fn every_single_byte_error_in_one_packet_is_rejected() {
    let p = Packet::long(Direction::Request, 5, 6, 1, &[1, 2, 3], b"abcdefghij", 64)
        .with_seq(9)
        .with_ack(2);
    let b = encode(&p).unwrap();
    for i in 0..b.len() {
        for x in 1..=255u8 {
            let mut c = b.clone();
            c[i] ^= x;
            assert!(decode(&c).is_err(), "byte {i} ^ {x:#04x} accepted");
        }
    }
}

// ---------------------------------------------------------------------------
// Each malformation names itself.
// ---------------------------------------------------------------------------

fn short_req() -> Packet {
    Packet::short(Direction::Request, 1, 2, 70, &[1, 2, 3])
}

fn medium_req(len: usize) -> Packet {
    Packet::medium(Direction::Request, 1, 2, 70, &[1], &vec![7; len])
}

fn long_req(len: usize) -> Packet {
    Packet::long(Direction::Reply, 1, 2, 70, &[], &vec![7; len], 0x40)
}

/// Checks that `raw` decodes to `err` and, when `p` is given, that encoding
/// `p` is refused with the same error.
fn rejects(raw: &Raw, err: DecodeError) {
    assert_eq!(decode(&raw.bytes()), Err(err), "{raw:?}");
}

fn refuses(p: &Packet, err: DecodeError) {
    assert_eq!(encode(p), Err(EncodeError::Invalid(err)), "{p:?}");
    let mut out = vec![1, 2, 3];
    assert!(encode_into(p, &mut out).is_err());
    assert_eq!(
        out,
        [1, 2, 3],
        "a refused encode_into must leave the buffer alone"
    );
    // The same fields, written raw, are rejected by decode with the same error.
    assert_eq!(decode(&Raw::from_packet(p).bytes()), Err(err), "{p:?}");
}

#[test]
fn bad_version() {
    let mut r = Raw::from_packet(&short_req());
    r.version = 2;
    rejects(
        &r,
        DecodeError::BadVersion {
            got: 2,
            expected: 1,
        },
    );
    r.version = 0;
    rejects(
        &r,
        DecodeError::BadVersion {
            got: 0,
            expected: 1,
        },
    );
    assert_eq!(
        decode(&[2]),
        Err(DecodeError::BadVersion {
            got: 2,
            expected: 1
        })
    );
    assert_eq!(
        decode(&[]),
        Err(DecodeError::Truncated { need: 40, have: 0 })
    );
}

#[test]
fn unknown_type() {
    for code in [0x00u8, 0x04, 0x10, 0x14, 0x22, 0x31, 0xFF] {
        let mut r = Raw::from_packet(&short_req());
        r.ptype = code;
        rejects(&r, DecodeError::UnknownType(code));
        assert_eq!(PacketType::from_code(code), None);
    }
}

#[test]
fn too_many_args() {
    let mut p = short_req();
    p.args = vec![9; 17];
    refuses(&p, DecodeError::TooManyArgs(17));
    let mut r = Raw::from_packet(&short_req());
    r.nargs = 200;
    r.args = vec![0; 200];
    rejects(&r, DecodeError::TooManyArgs(200));
    p.args = vec![9; 16];
    assert!(encode(&p).is_ok());
    p.args.clear();
    assert!(encode(&p).is_ok(), "zero arguments are allowed");
}

#[test]
fn short_with_payload() {
    let mut p = short_req();
    p.payload = vec![1, 2];
    p.total_len = 2;
    refuses(
        &p,
        DecodeError::ShortWithPayload {
            payload_len: 2,
            total_len: 2,
        },
    );
    let mut p = short_req();
    p.total_len = 8;
    refuses(
        &p,
        DecodeError::ShortWithPayload {
            payload_len: 0,
            total_len: 8,
        },
    );
}

#[test]
fn payload_too_long() {
    assert!(encode(&medium_req(MAX_MEDIUM)).is_ok());
    let p = medium_req(MAX_MEDIUM + 1);
    refuses(
        &p,
        DecodeError::PayloadTooLong {
            ptype: p.ptype,
            len: MAX_MEDIUM + 1,
            max: MAX_MEDIUM,
        },
    );
    assert!(encode(&long_req(MAX_LONG)).is_ok());
    let p = long_req(MAX_LONG + 1);
    refuses(
        &p,
        DecodeError::PayloadTooLong {
            ptype: p.ptype,
            len: MAX_LONG + 1,
            max: MAX_LONG,
        },
    );
    // A fragment small enough to carry, of a whole payload that is too long.
    let mut p = medium_req(8);
    p.total_len = 5000;
    refuses(
        &p,
        DecodeError::PayloadTooLong {
            ptype: p.ptype,
            len: 5000,
            max: MAX_MEDIUM,
        },
    );
    let mut a = Packet::ack(1, 2, 3);
    a.payload = vec![0; 4];
    a.total_len = 4;
    refuses(
        &a,
        DecodeError::PayloadTooLong {
            ptype: PacketType::Ack,
            len: 4,
            max: 0,
        },
    );
}

#[test]
fn bad_fragments() {
    let bad = |frag_offset, payload_len: usize, total_len| {
        let mut p = long_req(payload_len);
        p.frag_offset = frag_offset;
        p.total_len = total_len;
        refuses(
            &p,
            DecodeError::BadFragment {
                frag_offset,
                payload_len: payload_len as u32,
                total_len,
            },
        );
    };
    bad(0, 16, 8); // longer than the whole
    bad(8, 16, 16); // runs past the end
    bad(u32::MAX - 7, 16, 100); // would overflow 32 bits
    bad(0, 0, 16); // empty fragment
    bad(4, 12, 16); // misaligned offset
    bad(0, 12, 16); // non-last fragment not a multiple of 8
    // The good neighbours of those.
    for (fo, pl, tl) in [(0usize, 8usize, 16u32), (8, 8, 16), (8, 5, 13), (0, 0, 0)] {
        let mut p = long_req(pl);
        p.frag_offset = fo as u32;
        p.total_len = tl;
        assert_eq!(decode(&encode(&p).unwrap()), Ok(p));
    }
    // A NACK is never fragmented.
    let mut n = Packet::nack(1, 2, 10, &[10, 50]).unwrap();
    n.total_len = 16;
    refuses(
        &n,
        DecodeError::BadFragment {
            frag_offset: 0,
            payload_len: 8,
            total_len: 16,
        },
    );
}

#[test]
fn handler_rules() {
    let mut p = short_req();
    p.handler = 0;
    refuses(&p, DecodeError::ZeroHandler);
    let mut a = Packet::ack(1, 2, 3);
    a.handler = 6;
    refuses(&a, DecodeError::ControlWithHandler(6));
    let mut a = Packet::ack(1, 2, 3);
    a.args = vec![1];
    refuses(&a, DecodeError::ControlWithArgs(1));
}

#[test]
fn flag_rules() {
    for bit in [0x08u8, 0x10, 0x20, 0x40, 0x80] {
        let mut p = short_req();
        p.flags |= bit;
        refuses(&p, DecodeError::ReservedFlags(bit));
    }
    let mut p = short_req();
    p.seq = 5;
    refuses(&p, DecodeError::SeqWithoutFlag(5));
    let mut p = short_req();
    p.ack = 6;
    refuses(&p, DecodeError::AckWithoutFlag(6));
    assert!(encode(&short_req().with_seq(5).with_ack(6)).is_ok());
    for flags in [0, FLAG_SEQ | FLAG_ACK, FLAG_ACK | FLAG_ACK_NOW] {
        let mut a = Packet::ack(1, 2, 3);
        a.flags = flags;
        refuses(&a, DecodeError::ControlFlags(flags));
    }
}

#[test]
fn offset_rules() {
    let mut p = medium_req(4);
    p.offset = 8;
    refuses(&p, DecodeError::OffsetNotZero(8));
    let mut a = Packet::ack(1, 2, 3);
    a.offset = 1;
    refuses(&a, DecodeError::OffsetNotZero(1));
    let mut p = long_req(16);
    p.offset = u64::MAX - 16;
    assert!(encode(&p).is_ok());
    p.offset = u64::MAX - 15;
    refuses(
        &p,
        DecodeError::OffsetOverflow {
            offset: u64::MAX - 15,
            total_len: 16,
        },
    );
}

#[test]
fn reserved_and_padding_bytes() {
    for i in 0..3 {
        let mut r = Raw::from_packet(&short_req());
        r.reserved[i] = 0x5A;
        rejects(
            &r,
            DecodeError::ReservedNotZero {
                at: 9 + i,
                value: 0x5A,
            },
        );
    }
    let mut r = Raw::from_packet(&short_req()); // 3 args: padded
    r.arg_pad = 1;
    rejects(&r, DecodeError::ReservedNotZero { at: 52, value: 1 });
    let mut r = Raw::from_packet(&medium_req(5)); // 1 arg, 5 bytes: both padded
    r.payload_pad = 0x80;
    rejects(
        &r,
        DecodeError::ReservedNotZero {
            at: 48 + 5,
            value: 0x80,
        },
    );
}

#[test]
fn crc_mismatch() {
    let mut r = Raw::from_packet(&medium_req(10));
    let good = crc::crc32c(&r.bytes()[..r.bytes().len() - 4]);
    r.crc = Some(good ^ 1);
    rejects(
        &r,
        DecodeError::CrcMismatch {
            computed: good,
            stored: good ^ 1,
        },
    );
}

#[test]
fn nack_rules() {
    let n = Packet::nack(1, 2, 10, &[10]).unwrap();
    for len in [0usize, 3, 6, 4 * NACK_MAX_WORDS + 4] {
        let mut m = n.clone();
        m.payload = vec![0xFF; len];
        m.total_len = len as u32;
        let err = if len > 4 * NACK_MAX_WORDS {
            DecodeError::PayloadTooLong {
                ptype: PacketType::Nack,
                len,
                max: 4 * NACK_MAX_WORDS,
            }
        } else {
            DecodeError::BadNackLength(len as u32)
        };
        refuses(&m, err);
    }
    let mut m = n.clone();
    m.payload = vec![0, 0, 0, 1, 0, 0, 0, 0];
    m.total_len = 8;
    refuses(&m, DecodeError::NackLastWordZero);
    assert_eq!(Packet::nack(1, 2, 10, &[]), Err(EncodeError::EmptyNack));
    assert_eq!(
        nack_missing(&short_req()),
        Err(DecodeError::NotNack(short_req().ptype))
    );
    // Wrapping: the window runs across 2^32.
    let w = Packet::nack(0, 1, u32::MAX - 1, &[u32::MAX, 0, 3]).unwrap();
    assert_eq!(nack_missing(&w).unwrap(), [u32::MAX, 0, 3]);
}

#[test]
fn errors_display_their_values() {
    let e = DecodeError::CrcMismatch {
        computed: 0x1234_5678,
        stored: 0x9ABC_DEF0,
    };
    let s = e.to_string();
    assert!(s.contains("0x12345678") && s.contains("0x9abcdef0"), "{s}");
    let s = DecodeError::BadVersion {
        got: 9,
        expected: 1,
    }
    .to_string();
    assert!(s.contains('9') && s.contains('1'), "{s}");
    let e = EncodeError::Invalid(DecodeError::TooManyArgs(17));
    assert!(e.to_string().contains("17"));
    let dynerr: &dyn std::error::Error = &e;
    assert!(dynerr.source().is_some());
}

/// A Long reply whose untidied fill happens to be legal decodes, and
/// re-encodes to the same bytes (found by `plausible_bytes_never_panic_and_are_canonical`).
#[test]
fn untidied_but_legal_long_reply_is_canonical() {
    let nargs = 12;
    let len = 16u32;
    let mut b = vec![0u8; wire::packet_len(nargs, len as usize)];
    b[0] = 1;
    b[1] = 0x13;
    b[2] = FLAG_SEQ | FLAG_ACK;
    b[3] = 1;
    b[8] = nargs as u8;
    b[12..16].copy_from_slice(&len.to_be_bytes());
    b[28..32].copy_from_slice(&len.to_be_bytes());
    fix_crc(&mut b);
    let p = decode(&b).expect("a legal Long reply");
    assert_eq!(encode(&p).unwrap(), b);
}
