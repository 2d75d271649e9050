//! What a core sent, as the logical packets of the reference engine: frames
//! decoded, control frames (ACK, NACK) and retransmitted duplicates
//! dropped, transport fields cleared and fragments joined.

#![allow(dead_code)]

use gasnet_core::wire::{self, Packet, PacketType};
use std::collections::{HashMap, HashSet};

/// Logical packets from the frames `(source board, bytes)` in the order
/// sent. Panics on a frame that does not decode: every frame a core sends
/// must satisfy spec/wire.md.
pub fn logical(sent: &[(usize, Vec<u8>)]) -> Vec<Packet> {
    let mut seen: HashSet<(u16, u16, u32)> = HashSet::new();
    let mut partial: HashMap<(u16, u16), Packet> = HashMap::new();
    let mut out = Vec::new();
    for (s, f) in sent {
        let p = wire::decode(f)
            .unwrap_or_else(|e| panic!("board {s} sent a bad frame ({e}): {f:02x?}"));
        if !matches!(p.ptype, PacketType::Am { .. }) {
            continue;
        }
        if p.flags & wire::FLAG_SEQ != 0 && !seen.insert((p.src, p.dst, p.seq)) {
            continue;
        }
        let key = (p.src, p.dst);
        let mut p = Packet {
            flags: 0,
            seq: 0,
            ack: 0,
            ..p
        };
        if p.frag_offset != 0 || p.payload.len() != p.total_len as usize {
            let whole = match partial.remove(&key) {
                None => {
                    assert_eq!(p.frag_offset, 0, "a fragment without its start");
                    p
                }
                Some(mut w) => {
                    assert_eq!(
                        w.payload.len() as u32,
                        p.frag_offset,
                        "fragments out of order"
                    );
                    w.payload.extend_from_slice(&p.payload);
                    w
                }
            };
            if whole.payload.len() == whole.total_len as usize {
                p = Packet {
                    frag_offset: 0,
                    ..whole
                };
            } else {
                partial.insert(key, whole);
                continue;
            }
        }
        out.push(p);
    }
    assert!(
        partial.is_empty(),
        "incomplete fragmented packets: {partial:?}"
    );
    out
}
