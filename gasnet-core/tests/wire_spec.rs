//! Keeps `spec/wire.md` and the code in step: every worked example in the
//! spec must decode to the packet the spec states, and that packet must
//! encode to exactly the spec's bytes.

use gasnet_core::wire::{self, Packet, PacketType};
use gasnet_core::{crc, spec_examples};
use std::path::PathBuf;

fn spec_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../spec/wire.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The (packet, bytes) examples of the spec, in order.
fn examples() -> Vec<(Packet, Vec<u8>)> {
    spec_examples::wire_examples(&spec_text()).unwrap_or_else(|e| panic!("spec/wire.md: {e}"))
}

#[test]
fn spec_examples_decode_and_encode_exactly() {
    let ex = examples();
    assert!(!ex.is_empty());
    for (i, (packet, bytes)) in ex.iter().enumerate() {
        assert_eq!(
            wire::decode(bytes).as_ref(),
            Ok(packet),
            "example {i} ({:?}): hex does not decode to the packet block",
            packet.ptype
        );
        assert_eq!(
            &wire::encode(packet).unwrap(),
            bytes,
            "example {i} ({:?}): packet block does not encode to the hex",
            packet.ptype
        );
        assert_eq!(bytes.len(), packet.encoded_len());
        assert_eq!(bytes.len() % 4, 0);
    }
}

#[test]
fn spec_has_an_example_of_every_packet_type() {
    let types: Vec<PacketType> = examples().iter().map(|(p, _)| p.ptype).collect();
    let mut codes: Vec<u8> = types.iter().map(|t| t.code()).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes, [0x01, 0x02, 0x03, 0x11, 0x12, 0x13, 0x20, 0x21]);
}

#[test]
fn spec_examples_crc_is_independent_bitwise_crc32c() {
    // A bit-at-a-time CRC-32C, independent of the table in `crc.rs`.
    fn bitwise(data: &[u8]) -> u32 {
        let mut c = 0xFFFF_FFFFu32;
        for &b in data {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
            }
        }
        !c
    }
    assert_eq!(bitwise(b"123456789"), 0xE306_9283);
    for (_, bytes) in examples() {
        let (body, trailer) = bytes.split_at(bytes.len() - 4);
        assert_eq!(
            u32::from_be_bytes(trailer.try_into().unwrap()),
            bitwise(body)
        );
        assert_eq!(crc::crc32c(body), bitwise(body));
    }
}

#[test]
fn spec_nack_example_names_what_its_comment_says() {
    let (nack, _) = examples()
        .into_iter()
        .find(|(p, _)| p.ptype == PacketType::Nack)
        .unwrap();
    assert_eq!(wire::nack_missing(&nack).unwrap(), [6, 8, 40]);
}

// The largest packet does not fit one UDP/IPv6 datagram, as the spec says.
const _: () = assert!(wire::MAX_PACKET > wire::MAX_UDP6_PAYLOAD);

#[test]
fn spec_states_the_constants_the_code_uses() {
    let text = spec_text();
    assert!(text.contains(&format!("Version {}.", wire::WIRE_VERSION)));
    assert_eq!(wire::HEADER_LEN, 40);
    assert_eq!(wire::MAX_PACKET, 65_644);
    assert!(text.contains("65 644"));
    assert_eq!(wire::max_fragment_payload(1232, 16), 1120);
    assert_eq!(
        wire::max_fragment_payload(wire::MAX_UDP6_PAYLOAD, 16),
        65_416
    );
    assert!(text.contains("65 416") && text.contains("1120"));
}
