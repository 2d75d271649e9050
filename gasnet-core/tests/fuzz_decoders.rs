//! Fuzzing of every decoder of untrusted bytes in gasnet-core — wire
//! packets (`decode`, `peek_header`, `nack_missing`), command descriptors
//! (`decode`, `decode_chain`, `slot_count`), completion entries and receive
//! entries — with proptest, for a bounded number of cases
//! (`PROPTEST_CASES`, default 1500 per property): arbitrary bytes, and
//! structure-aware mutations of valid encodings (byte flips, truncations,
//! extensions) with the CRC recomputed so that the mutation reaches the
//! field checks behind it. A decoder may refuse; it must never panic.

use gasnet_core::cmd::{self, COMPLETION_BYTES, Completion, RX_ENTRY_BYTES, RxEntry, SLOT_BYTES};
use gasnet_core::wire::{self, Packet};
use gasnet_core::{Direction, crc};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500)
}

/// A valid packet of every kind, from a few random fields.
fn valid_packet() -> impl Strategy<Value = Packet> {
    (
        0u8..5,
        any::<bool>(),
        0u16..64,
        0u16..64,
        1u8..=255,
        prop::collection::vec(any::<u32>(), 0..=16),
        prop::collection::vec(any::<u8>(), 0..300),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(kind, req, src, dst, h, args, payload, seq, off)| {
            let dir = if req {
                Direction::Request
            } else {
                Direction::Reply
            };
            match kind {
                0 => Packet::short(dir, src, dst, h, &args).with_seq(seq),
                1 => Packet::medium(dir, src, dst, h, &args, &payload).with_seq(seq),
                2 => Packet::long(dir, src, dst, h, &args, &payload, off as u64).with_seq(seq),
                3 => Packet::ack(src, dst, seq),
                _ => {
                    let missing: Vec<u32> = args
                        .iter()
                        .map(|a| seq.wrapping_add(1 + a % 1000))
                        .collect();
                    if missing.is_empty() {
                        Packet::ack(src, dst, seq)
                    } else {
                        Packet::nack(src, dst, seq, &missing)
                            .unwrap_or_else(|_| Packet::ack(src, dst, seq))
                    }
                }
            }
        })
}

/// Mutations of a valid encoding.
#[derive(Clone, Debug)]
enum Mutation {
    Flip(prop::sample::Index, u8),
    Truncate(prop::sample::Index),
    Extend(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), 1..=255u8).prop_map(|(i, x)| Mutation::Flip(i, x)),
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        prop::collection::vec(any::<u8>(), 1..64).prop_map(Mutation::Extend),
    ]
}

fn mutate(mut b: Vec<u8>, ms: &[Mutation]) -> Vec<u8> {
    for m in ms {
        match m {
            Mutation::Flip(i, x) if !b.is_empty() => {
                let i = i.index(b.len());
                b[i] ^= x;
            }
            Mutation::Truncate(i) => {
                let n = i.index(b.len() + 1);
                b.truncate(n);
            }
            Mutation::Extend(v) => b.extend_from_slice(v),
            _ => {}
        }
    }
    b
}

fn exercise_wire(b: &[u8]) {
    let _ = wire::peek_header(b);
    if let Ok(p) = wire::decode(b) {
        let _ = wire::nack_missing(&p);
        // What decodes re-encodes (the decoder accepted a valid packet).
        let _ = wire::encode(&p);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn wire_arbitrary_bytes(b in prop::collection::vec(any::<u8>(), 0..400)) {
        exercise_wire(&b);
    }

    #[test]
    fn wire_mutated_valid_packets(p in valid_packet(), ms in prop::collection::vec(mutation(), 1..4), fix in any::<bool>()) {
        let enc = wire::encode(&p).expect("valid packet encodes");
        let mut b = mutate(enc, &ms);
        if fix && b.len() >= 4 {
            // Recompute the CRC so the mutation reaches the field checks.
            let n = b.len() - 4;
            let c = crc::crc32c(&b[..n]);
            b[n..].copy_from_slice(&c.to_be_bytes());
        }
        exercise_wire(&b);
    }

    #[test]
    fn descriptors_arbitrary_slots(
        op in prop_oneof![Just(0x01u8), Just(0x02), Just(0x08), Just(0x09), 0x10u8..0x20, Just(0x20), any::<u8>()],
        rest in prop::collection::vec(any::<u8>(), 2 * SLOT_BYTES - 1),
        cut in 0usize..=2 * SLOT_BYTES,
    ) {
        let mut b = vec![op];
        b.extend_from_slice(&rest);
        let head = &b[..cut.min(b.len())];
        let _ = cmd::slot_count(head);
        let _ = cmd::decode(head);
        let (h, next) = b.split_at(SLOT_BYTES);
        let _ = cmd::decode_chain(h, Some(next));
        let _ = cmd::decode_chain(h, None);
        let _ = cmd::decode_chain(&h[..cut.min(SLOT_BYTES)], Some(&next[..cut.min(SLOT_BYTES)]));
    }

    #[test]
    fn descriptors_mutated_valid(
        rest in prop::collection::vec(any::<u8>(), 2 * SLOT_BYTES - 1),
        op in prop_oneof![Just(0x01u8), Just(0x02), Just(0x08), Just(0x09), 0x10u8..0x20, Just(0x20)],
        ms in prop::collection::vec(mutation(), 1..4),
    ) {
        // Find a descriptor the decoder accepts, re-encode it, mutate it.
        let mut b = vec![op];
        b.extend_from_slice(&rest);
        let d = cmd::decode_chain(&b[..SLOT_BYTES], Some(&b[SLOT_BYTES..]))
            .or_else(|_| cmd::decode(&b[..SLOT_BYTES]));
        if let Ok(d) = d {
            let enc = cmd::encode_slots(&d);
            let flat: Vec<u8> = enc.as_slots().iter().flatten().copied().collect();
            let m = mutate(flat, &ms);
            let _ = cmd::slot_count(&m);
            let _ = cmd::decode(&m);
            if m.len() >= SLOT_BYTES {
                let (h, next) = m.split_at(SLOT_BYTES);
                let _ = cmd::decode_chain(h, Some(next));
            }
        }
    }

    #[test]
    fn completions_and_rx_entries(b in prop::collection::vec(any::<u8>(), 0..=2 * RX_ENTRY_BYTES.max(COMPLETION_BYTES))) {
        if let Ok(c) = Completion::decode(&b) {
            let again = Completion::decode(&c.encode());
            prop_assert!(again.is_ok());
        }
        if let Ok(r) = RxEntry::decode(&b) {
            let again = RxEntry::decode(&r.encode());
            prop_assert!(again.is_ok());
        }
        for n in [COMPLETION_BYTES, RX_ENTRY_BYTES] {
            let s = &b[..n.min(b.len())];
            let _ = Completion::decode(s);
            let _ = RxEntry::decode(s);
        }
    }
}
