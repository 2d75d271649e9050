//! Every worked example of spec/registers.md and spec/wire.md, driven
//! through the RTL core.
//!
//! - Each descriptor example is submitted to a board of a seven-board
//!   network; its completion, the packets it puts on the wire and its
//!   effects must equal those of the reference board (gasnet-core's engine
//!   with the board rules).
//! - The completion and receive-entry examples are reproduced byte for byte
//!   (same slot, same pass of the ring).
//! - Each packet example is fed, as its exact bytes, to a board that is its
//!   destination, with the link state the example implies, and must have
//!   its effect; with any one of its bytes altered it must be dropped and
//!   counted as a CRC error.
#![cfg(feature = "verilator")]

mod common;

use common::reference::{Delivered, RefNet};
use common::{Host, Net, SEG_SIZE, Sparse, frames};
use fshmem_hw::BoardConfig;
use gasnet_core::cmd::{
    self, Common, Completion, Descriptor, Inline, Local, PutSource, Status, regs,
};
use gasnet_core::wire::{self, Packet, PacketType};
use gasnet_core::{AmoOp, AmoWidth, Category, Direction, handlers, spec_examples};
use std::collections::BTreeMap;

fn spec(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/");
    std::fs::read_to_string(format!("{path}{name}")).expect("spec readable")
}

fn reg_examples() -> BTreeMap<String, Vec<u8>> {
    spec_examples::register_examples(&spec("registers.md")).expect("registers.md examples")
}

fn wire_examples() -> Vec<(Packet, Vec<u8>)> {
    spec_examples::wire_examples(&spec("wire.md")).expect("wire.md examples")
}

/// Retransmission so late it never happens in these tests. (A board whose
/// scripted peer never acknowledges stays busy, so those tests run a fixed
/// number of cycles instead of waiting for quiet.)
fn cfg() -> BoardConfig {
    BoardConfig {
        rto_ticks: 1 << 30,
        rto_max_ticks: 1 << 30,
        ..BoardConfig::default()
    }
}

fn slots(bytes: &[u8]) -> Vec<[u8; 64]> {
    bytes
        .chunks(64)
        .map(|c| c.try_into().expect("whole slots"))
        .collect()
}

fn pattern(node: usize) -> Vec<u8> {
    (0..SEG_SIZE as usize)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8 ^ node as u8)
        .collect()
}

fn no_phase(mut c: Completion) -> Completion {
    c.phase = false;
    c
}

/// A board's receive entries as the reference reports them.
fn delivered<D: fshmem_hw::Dram>(h: &mut Host<D>) -> Vec<Delivered> {
    let mut v = Vec::new();
    while let Some((_, raw)) = h.rq_next() {
        let e = cmd::RxEntry::decode(&raw).expect("receive entry decodes");
        let payload = if e.category == Category::Medium {
            h.bar2(e.addr, e.len as usize)
        } else {
            Vec::new()
        };
        h.rq_free();
        v.push(Delivered {
            src: e.src,
            kind: e.encode()[0],
            handler: e.handler,
            args: e.args.as_slice().to_vec(),
            len: e.len,
            offset: if e.category == Category::Long {
                e.addr
            } else {
                0
            },
            payload,
        });
    }
    v
}

#[test]
fn descriptor_examples_match_the_reference() {
    const NODES: usize = 7;
    let examples = reg_examples();
    let mut net = Net::new(NODES, cfg(), 20);
    net.keep_sent = true;
    let segs: Vec<Vec<u8>> = (0..NODES).map(pattern).collect();
    for (i, s) in segs.iter().enumerate() {
        net.hosts[i].seg_write(0, s);
    }
    let mut refnet = RefNet::new(segs);
    let mut ran = 0;
    for (name, bytes) in &examples {
        if name.starts_with("completion-") || name.starts_with("rx-") {
            continue;
        }
        ran += 1;
        let s = slots(bytes);
        let sq = net.hosts[0].sq_tail as u16;
        refnet.boards[0].submit(&s[0], s.get(1), sq);
        refnet.pump();
        net.hosts[0].submit(&s);
        net.settle(2_000_000);

        let mut rtl: Vec<Completion> = std::iter::from_fn(|| net.hosts[0].poll_cq())
            .map(no_phase)
            .collect();
        let mut want: Vec<Completion> = refnet.boards[0].completions.drain(..).collect();
        rtl.sort_by_key(|c| c.tag);
        want.sort_by_key(|c| c.tag);
        assert_eq!(rtl, want, "completions of example {name}");
        assert_eq!(rtl.len(), 1, "example {name} completes once");

        let key = |p: &Packet| (p.src, p.dst, wire::encode(p).expect("encodes"));
        let mut got: Vec<_> = frames::logical(&std::mem::take(&mut net.sent))
            .iter()
            .map(key)
            .collect();
        let mut exp: Vec<_> = refnet
            .wire
            .drain(..)
            .filter(|p| p.src != p.dst)
            .map(|p| key(&p))
            .collect();
        got.sort();
        exp.sort();
        assert_eq!(got, exp, "packets of example {name}");
    }
    assert_eq!(ran, 18, "descriptor examples in spec/registers.md");
    for i in 0..NODES {
        assert!(
            net.hosts[i].seg(0, SEG_SIZE as usize) == refnet.boards[i].segment(),
            "segment of node {i}"
        );
        let mut got = delivered(&mut net.hosts[i]);
        let mut exp = refnet.boards[i].delivered.clone();
        got.sort();
        exp.sort();
        assert_eq!(got, exp, "receive entries of node {i}");
    }
}

fn nop(completion: bool) -> [u8; 64] {
    cmd::encode(&Descriptor::Nop {
        common: Common {
            tag: 0xAAAA,
            completion,
            fence_before: false,
        },
    })
}

#[test]
fn completion_amo_example_is_reproduced_exactly() {
    let ex = &reg_examples()["completion-amo"];
    let add = &reg_examples()["amo-fetch-add-w64"];
    let mut net = Net::new(3, cfg(), 20);
    net.hosts[2].seg_write(0x100, &41u64.to_le_bytes());
    for _ in 0..17 {
        net.hosts[0].write_slot(&nop(false));
    }
    net.hosts[0].submit(&slots(add));
    net.settle(1_000_000);
    let got = net.hosts[0].poll_cq_raw().expect("completion");
    assert_eq!(&got[..], &ex[..], "completion of the FetchAdd in slot 17");
    assert_eq!(net.hosts[2].seg(0x100, 8), 42u64.to_le_bytes());
}

#[test]
fn completion_error_example_is_reproduced_exactly() {
    let ex = &reg_examples()["completion-error"];
    let bad = &reg_examples()["bad-medium-length"];
    let mut h = Host::new(0, 4, cfg());
    // A first pass of the completion ring: 256 completions, drained.
    let mut seen = 0;
    for _ in 0..4 {
        for _ in 0..64 {
            h.write_slot(&nop(true));
        }
        h.doorbell();
        h.settle(100_000);
        while let Some(c) = h.poll_cq() {
            assert_eq!((c.status, c.phase), (Status::Ok, true));
            seen += 1;
        }
    }
    assert_eq!(seen, 256);
    // The malformed descriptor lands in command slot 255.
    for _ in 0..255 {
        h.write_slot(&nop(false));
    }
    h.doorbell();
    h.settle(100_000);
    h.submit(&slots(bad));
    h.settle(100_000);
    let got = h.poll_cq_raw().expect("error completion");
    assert_eq!(&got[..], &ex[..], "error completion, slot 255, second pass");
    assert_eq!(h.board.read64(regs::CNT_ERRORS), 1);
}

#[test]
fn receive_entry_example_is_reproduced_exactly() {
    let ex = &reg_examples()["rx-medium-request"];
    const BOUNCE: u64 = 0x3FC0_0000;
    let mut h = Host::with_memory(0, 4, cfg(), Sparse::new(1 << 30), BOUNCE);
    let payload: Vec<u8> = (0..100u8).map(|i| i ^ 0x5A).collect();
    let first = Packet::short(Direction::Request, 3, 0, 64, &[]).with_seq(0);
    let second = Packet::short(Direction::Request, 3, 0, 64, &[]).with_seq(1);
    let third =
        Packet::medium(Direction::Request, 3, 0, 65, &[0xDEAD_BEEF, 2], &payload).with_seq(2);
    for p in [first, second, third] {
        h.board.push_frame(1, wire::encode(&p).unwrap());
    }
    h.settle(100_000);
    assert!(h.poll_rq_raw().is_some() && h.poll_rq_raw().is_some());
    let (slot, got) = h.poll_rq_raw().expect("third receive entry");
    assert_eq!(slot, 2);
    assert_eq!(&got[..], &ex[..], "receive entry in slot 2");
    assert_eq!(h.bar2(0x3FC0_2000, 100), payload);
}

// ---- spec/wire.md ------------------------------------------------------------------

fn example_of(pred: impl Fn(&Packet) -> bool) -> (Packet, Vec<u8>) {
    wire_examples()
        .into_iter()
        .find(|(p, _)| pred(p))
        .expect("the example exists")
}

fn inject<D: fshmem_hw::Dram>(h: &mut Host<D>, p: &Packet) {
    h.board
        .push_frame(p.src as usize % 2, wire::encode(p).unwrap());
}

fn inject_raw<D: fshmem_hw::Dram>(h: &mut Host<D>, src: u16, bytes: &[u8]) {
    h.board.push_frame(src as usize % 2, bytes.to_vec());
}

fn sent_packets<D: fshmem_hw::Dram>(h: &mut Host<D>) -> Vec<Packet> {
    h.sent()
        .iter()
        .map(|f| wire::decode(f).expect("the core sends decodable frames"))
        .collect()
}

fn am_of(ps: &[Packet]) -> Vec<Packet> {
    ps.iter()
        .filter(|p| matches!(p.ptype, PacketType::Am { .. }))
        .map(|p| Packet {
            flags: 0,
            seq: 0,
            ack: 0,
            ..p.clone()
        })
        .collect()
}

/// The frame passed every check: nothing was counted against it.
fn clean<D: fshmem_hw::Dram>(h: &mut Host<D>) {
    for port in 0..2 {
        assert_eq!(
            h.board.read32(regs::link(port, regs::LINK_CRC_ERRORS)),
            0,
            "CRC errors on port {port}"
        );
    }
    assert_eq!(
        h.board.read32(regs::ERR_STATUS) & cmd::err::BAD_PACKET,
        0,
        "BAD_PACKET"
    );
}

fn ping(src: u16, dst: u16, token: u32, seq: u32) -> Packet {
    Packet::short(Direction::Request, src, dst, handlers::PING, &[token]).with_seq(seq)
}

fn ack_reply(src: u16, dst: u16, token: u32, seq: u32) -> Packet {
    Packet::short(Direction::Reply, src, dst, handlers::ACK, &[token, 0]).with_seq(seq)
}

fn one_byte_put(target: u16, tag: u32) -> [u8; 64] {
    cmd::encode(&Descriptor::Put {
        common: Common {
            tag,
            completion: true,
            fence_before: false,
        },
        target,
        remote: 0x500 + tag as u64,
        source: PutSource::Inline(Inline::new(&[tag as u8]).unwrap()),
    })
}

fn is_am(p: &Packet, category: Category, direction: Direction) -> bool {
    p.ptype
        == PacketType::Am {
            category,
            direction,
        }
}

#[test]
fn wire_short_request_example_is_served() {
    let (ex, bytes) = example_of(|p| is_am(p, Category::Short, Direction::Request));
    assert_eq!(
        (ex.src, ex.dst, ex.handler, ex.seq),
        (1, 2, handlers::GET, 5)
    );
    let mut h = Host::new(2, 5, cfg());
    for s in 0..5 {
        inject(&mut h, &ping(1, 2, 100 + s, s));
    }
    inject_raw(&mut h, 1, &bytes);
    h.run(30_000);
    clean(&mut h);
    let got = am_of(&sent_packets(&mut h));
    let data = h.seg(0x1000, 8);
    let mut want: Vec<Packet> = (0..5)
        .map(|s| Packet::short(Direction::Reply, 2, 1, handlers::ACK, &[100 + s, 0]))
        .collect();
    want.push(Packet::medium(
        Direction::Reply,
        2,
        1,
        handlers::GET_REPLY,
        &[7],
        &data,
    ));
    assert_eq!(got, want);
}

#[test]
fn wire_short_reply_example_completes_an_atomic() {
    let (ex, bytes) = example_of(|p| is_am(p, Category::Short, Direction::Reply));
    assert_eq!(
        (ex.src, ex.dst, ex.handler, ex.args[0], ex.seq),
        (2, 1, handlers::AMO_REPLY, 7, 3)
    );
    let mut h = Host::new(1, 5, cfg());
    for tag in 1..=6 {
        h.submit(&[one_byte_put(2, tag)]);
    }
    h.submit(&[cmd::encode(&Descriptor::Amo {
        common: Common {
            tag: 7,
            completion: true,
            fence_before: false,
        },
        target: 2,
        op: AmoOp::FetchAdd,
        width: AmoWidth::W64,
        remote: 0x100,
        operand: 1,
        compare: 0,
    })]);
    h.run(20_000);
    for s in 0..3 {
        inject(&mut h, &ack_reply(2, 1, s + 1, s));
    }
    inject_raw(&mut h, 2, &bytes);
    h.run(20_000);
    clean(&mut h);
    let mut got: Vec<(u32, Status, u64)> = std::iter::from_fn(|| h.poll_cq())
        .map(|c| (c.tag, c.status, c.value))
        .collect();
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        vec![
            (1, Status::Ok, 0),
            (2, Status::Ok, 0),
            (3, Status::Ok, 0),
            (7, Status::Ok, 0xDEAD_BEEF)
        ]
    );
}

#[test]
fn wire_medium_request_example_is_delivered_unsequenced() {
    let (ex, bytes) = example_of(|p| is_am(p, Category::Medium, Direction::Request));
    assert_eq!(ex.flags, 0);
    let mut h = Host::new(ex.dst, 5, cfg());
    inject_raw(&mut h, ex.src, &bytes);
    h.settle(100_000);
    clean(&mut h);
    let d = delivered(&mut h);
    assert_eq!(
        d,
        vec![Delivered {
            src: ex.src,
            kind: 0x11,
            handler: ex.handler,
            args: ex.args.clone(),
            len: 6,
            offset: 0,
            payload: b"fshmem".to_vec(),
        }]
    );
}

#[test]
fn wire_medium_reply_example_is_a_duplicate_and_acknowledged() {
    let (ex, bytes) = example_of(|p| is_am(p, Category::Medium, Direction::Reply));
    assert_eq!(ex.seq, 0xFFFF_FFFE);
    let mut h = Host::new(ex.dst, 5, cfg());
    inject_raw(&mut h, ex.src, &bytes);
    h.settle(100_000);
    clean(&mut h);
    // Serially before the expected 0: a duplicate, answered by an ACK at once.
    assert_eq!(sent_packets(&mut h), vec![Packet::ack(ex.dst, ex.src, 0)]);
    assert!(h.poll_rq().is_none());
}

#[test]
fn wire_long_request_example_is_answered_out_of_range() {
    let (ex, bytes) = example_of(|p| is_am(p, Category::Long, Direction::Request));
    assert_eq!(
        (ex.src, ex.dst, ex.handler, ex.seq, ex.offset),
        (1, 4, handlers::PUT, 12, 0x1_0000_0040)
    );
    let mut h = Host::new(4, 5, cfg());
    for s in 0..12 {
        inject(&mut h, &ping(1, 4, 200 + s, s));
    }
    inject_raw(&mut h, 1, &bytes);
    h.run(30_000);
    clean(&mut h);
    let got = am_of(&sent_packets(&mut h));
    assert_eq!(got.len(), 13);
    // The segment is 1 MiB: the PUT's offset lies outside it.
    assert_eq!(
        got[12],
        Packet::short(Direction::Reply, 4, 1, handlers::ACK, &[9, 1])
    );
}

#[test]
fn wire_long_reply_example_completes_a_get() {
    let (ex, bytes) = example_of(|p| is_am(p, Category::Long, Direction::Reply));
    assert_eq!(
        (
            ex.src,
            ex.dst,
            ex.seq,
            ex.frag_offset,
            ex.total_len,
            ex.offset
        ),
        (4, 1, 41, 16, 24, 0x2000)
    );
    let mut h = Host::new(1, 5, cfg());
    for tag in 1..=6 {
        h.submit(&[one_byte_put(4, tag)]);
    }
    h.submit(&[cmd::encode(&Descriptor::Get {
        common: Common {
            tag: 7,
            completion: true,
            fence_before: false,
        },
        target: 4,
        remote: 0x9000,
        local: Local::Segment(0x2000),
        len: 24,
    })]);
    h.run(20_000);
    for s in 0..6 {
        inject(&mut h, &ack_reply(4, 1, s + 1, s));
    }
    // Paced as a peer would be: a board takes at most 16 frames per port
    // before its dispatcher has served them, and drops (for retransmission)
    // what does not fit, which this scripted peer would never resend.
    for s in 6..40 {
        inject(&mut h, &ping(4, 1, 1000 + s, s));
        h.run(200);
    }
    let first: Vec<u8> = (0..16).collect();
    let mut frag = Packet::long(
        Direction::Reply,
        4,
        1,
        handlers::GET_REPLY,
        &[7],
        &first,
        0x2000,
    )
    .with_seq(40);
    frag.total_len = 24;
    inject(&mut h, &frag);
    inject_raw(&mut h, 4, &bytes);
    h.run(40_000);
    clean(&mut h);
    let mut got: Vec<(u32, Status, u32)> = std::iter::from_fn(|| h.poll_cq())
        .map(|c| (c.tag, c.status, c.bytes))
        .collect();
    got.sort_by_key(|g| g.0);
    let mut want: Vec<(u32, Status, u32)> = (1..=6).map(|t| (t, Status::Ok, 1)).collect();
    want.push((7, Status::Ok, 24));
    assert_eq!(got, want);
    let mut expect = first;
    expect.extend_from_slice(&ex.payload);
    assert_eq!(h.seg(0x2000, 24), expect);
}

fn data_seqs(ps: &[Packet]) -> Vec<u32> {
    ps.iter()
        .filter(|p| matches!(p.ptype, PacketType::Am { .. }))
        .map(|p| p.seq)
        .collect()
}

#[test]
fn wire_ack_example_leaves_only_the_unacknowledged_frame() {
    let (ex, bytes) = example_of(|p| p.ptype == PacketType::Ack);
    assert_eq!((ex.src, ex.dst, ex.ack), (2, 1, 6));
    let cfg = BoardConfig {
        rto_ticks: 40,
        rto_max_ticks: 1 << 20,
        ..cfg()
    };
    let mut h = Host::new(1, 5, cfg);
    for tag in 1..=7 {
        h.submit(&[one_byte_put(2, tag)]);
    }
    for _ in 0..2000 {
        h.board.cycle();
    }
    assert_eq!(data_seqs(&sent_packets(&mut h)), (0..7).collect::<Vec<_>>());
    inject_raw(&mut h, 2, &bytes);
    // One retransmission timeout (40 us at 250 cycles per us) and a margin,
    // but not a second one (80 us later).
    for _ in 0..(40 * 250 + 5000) {
        h.board.cycle();
    }
    clean(&mut h);
    assert_eq!(
        data_seqs(&sent_packets(&mut h)),
        vec![6],
        "only seq 6 is unacknowledged"
    );
    assert_eq!(h.board.read64(regs::CNT_RETRANSMITS), 1);
}

#[test]
fn wire_nack_example_retransmits_what_it_names() {
    let (ex, bytes) = example_of(|p| p.ptype == PacketType::Nack);
    assert_eq!(wire::nack_missing(&ex).unwrap(), vec![6, 8, 40]);
    let mut h = Host::new(1, 5, cfg());
    for k in 0..45u32 {
        h.submit(&[cmd::encode(&Descriptor::Am {
            common: Common {
                tag: k,
                completion: false,
                fence_before: false,
            },
            target: 2,
            direction: Direction::Request,
            handler: 64,
            args: cmd::Args::new(&[k]).unwrap(),
            body: cmd::AmBody::Short,
        })]);
    }
    h.run(60_000);
    assert_eq!(
        data_seqs(&sent_packets(&mut h)),
        (0..45).collect::<Vec<_>>()
    );
    inject_raw(&mut h, 2, &bytes);
    h.run(30_000);
    clean(&mut h);
    assert_eq!(data_seqs(&sent_packets(&mut h)), vec![6, 8, 40]);
    assert_eq!(h.board.read64(regs::CNT_RETRANSMITS), 3);
}

#[test]
fn wire_examples_with_any_byte_altered_are_dropped_as_crc_errors() {
    for (ex, bytes) in wire_examples() {
        let mut h = Host::new(ex.dst, 5, cfg());
        let port = ex.src as usize % 2;
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 1 << (i % 8);
            h.board.push_frame(port, b);
        }
        h.settle(200_000);
        let crc = h.board.read32(regs::link(port, regs::LINK_CRC_ERRORS));
        assert_eq!(
            crc as usize,
            bytes.len(),
            "{:?} from {}: every altered copy fails its CRC",
            ex.ptype,
            ex.src
        );
        assert_eq!(h.board.read32(regs::ERR_STATUS) & cmd::err::BAD_PACKET, 0);
        assert!(h.sent().is_empty(), "nothing answers a corrupted frame");
        assert!(h.poll_rq().is_none());
        assert_eq!(h.board.read64(regs::CNT_PACKETS_RX), 0);
    }
}
