//! Keeps `spec/wire.md` and the code in step: every worked example in the
//! spec must decode to the packet the spec states, and that packet must
//! encode to exactly the spec's bytes.

use gasnet_core::wire::{self, Packet, PacketType};
use gasnet_core::{Category, Direction, crc};
use std::collections::HashMap;
use std::path::PathBuf;

fn spec_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../spec/wire.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The fenced blocks of a markdown text: (info string, body).
fn fenced_blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((info.trim().to_string(), String::new()));
                }
            }
            Some((info, mut body)) => {
                if trimmed.starts_with("```") {
                    blocks.push((info, body));
                } else {
                    body.push_str(line);
                    body.push('\n');
                    open = Some((info, body));
                }
            }
        }
    }
    assert!(open.is_none(), "unterminated fenced block in spec/wire.md");
    blocks
}

fn parse_hex_bytes(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|t| u8::from_str_radix(t, 16).unwrap_or_else(|_| panic!("bad hex byte {t:?}")))
        .collect()
}

fn parse_hex_block(body: &str) -> Vec<u8> {
    body.lines()
        .flat_map(|l| parse_hex_bytes(l.split('#').next().unwrap_or("")))
        .collect()
}

fn parse_int(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .unwrap_or_else(|_| panic!("bad integer {s:?}"))
}

fn parse_type(s: &str) -> PacketType {
    use Category::*;
    use Direction::*;
    let am = |category, direction| PacketType::Am {
        category,
        direction,
    };
    match s {
        "am-short-request" => am(Short, Request),
        "am-medium-request" => am(Medium, Request),
        "am-long-request" => am(Long, Request),
        "am-short-reply" => am(Short, Reply),
        "am-medium-reply" => am(Medium, Reply),
        "am-long-reply" => am(Long, Reply),
        "ack" => PacketType::Ack,
        "nack" => PacketType::Nack,
        _ => panic!("unknown type {s:?}"),
    }
}

fn list(s: &str) -> &str {
    s.trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or_else(|| panic!("expected [..], got {s:?}"))
}

fn parse_packet_block(body: &str) -> Packet {
    let mut fields = HashMap::new();
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let (k, v) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("expected key = value: {line:?}"));
        assert!(
            fields.insert(k.trim(), v.trim()).is_none(),
            "duplicate key {k:?}"
        );
    }
    let mut take = |k: &str| {
        fields
            .remove(k)
            .unwrap_or_else(|| panic!("packet block lacks {k:?}"))
    };
    let p = Packet {
        ptype: parse_type(take("type")),
        flags: parse_int(take("flags")) as u8,
        handler: parse_int(take("handler")) as u8,
        src: parse_int(take("src")) as u16,
        dst: parse_int(take("dst")) as u16,
        seq: parse_int(take("seq")) as u32,
        ack: parse_int(take("ack")) as u32,
        frag_offset: parse_int(take("frag_offset")) as u32,
        total_len: parse_int(take("total_len")) as u32,
        offset: parse_int(take("offset")),
        args: list(take("args"))
            .split(',')
            .filter(|a| !a.trim().is_empty())
            .map(|a| parse_int(a) as u32)
            .collect(),
        payload: parse_hex_bytes(list(take("payload"))),
    };
    assert!(fields.is_empty(), "unknown keys {:?}", fields.keys());
    p
}

/// The (packet, bytes) examples of the spec, in order.
fn examples() -> Vec<(Packet, Vec<u8>)> {
    let blocks = fenced_blocks(&spec_text());
    let mut out = Vec::new();
    let mut iter = blocks.iter().peekable();
    while let Some((info, body)) = iter.next() {
        match info.as_str() {
            "packet" => {
                let (next_info, hex) = iter.next().expect("packet block at end of spec");
                assert_eq!(
                    next_info, "hex",
                    "a packet block must be followed by a hex block"
                );
                out.push((parse_packet_block(body), parse_hex_block(hex)));
            }
            "hex" => panic!("hex block without a packet block before it:\n{body}"),
            _ => {}
        }
    }
    out
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
