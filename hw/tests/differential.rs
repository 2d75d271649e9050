//! Differential test: random command streams run through the RTL core and
//! through the reference board (gasnet-core's engine with the board rules),
//! on two and three boards, and every outcome compared: each board's
//! completions, its whole segment, its receive entries, and the packets
//! that crossed the network (per sender, receiver and kind, in order).
//!
//! The streams are random but race-free, so both must agree exactly: put
//! sources and AM payloads come from a region no one writes; a board puts
//! only into its own region of each target; gets land in a slot of their
//! own and read either the static region or the reader's own region of the
//! target; atomics hit words that only their issuer touches. Malformed
//! descriptors are random corruptions of valid ones that the decoder must
//! reject, plus valid ones the board must refuse (target, range, IOVA).
#![cfg(feature = "verilator")]

mod common;

use common::reference::{Delivered, RefNet};
use common::{Net, SEG_SIZE, frames};
use fshmem_hw::BoardConfig;
use gasnet_core::cmd::{
    self, AmBody, Args, Common, Completion, Descriptor, Inline, Local, PutSource,
};
use gasnet_core::engine::layout::engine_owned;
use gasnet_core::wire::{Packet, PacketType};
use gasnet_core::{AmoOp, AmoWidth, Direction};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use std::collections::BTreeMap;

/// Segment map (offsets): static bytes, then one 64 KiB region per writer,
/// get landing slots, atomic words per issuer.
const STATIC: u64 = 0;
const STATIC_LEN: u64 = 256 << 10;
const REGION: u64 = 256 << 10;
const REGION_LEN: u64 = 64 << 10;
const LANDING: u64 = 512 << 10;
const SLOT: u64 = 8 << 10;
const ATOMICS: u64 = 896 << 10;

#[derive(Clone, Debug)]
enum Op {
    Put {
        tgt: u8,
        at: u32,
        len: u32,
        src: u32,
        inline: bool,
    },
    Get {
        tgt: u8,
        mine: bool,
        at: u32,
        len: u32,
    },
    Amo {
        tgt: u8,
        op: u8,
        w64: bool,
        word: u8,
        operand: u64,
        compare: u64,
    },
    Am {
        tgt: u8,
        reply: bool,
        cat: u8,
        handler: u8,
        args: Vec<u32>,
        len: u32,
        src: u32,
        at: u32,
    },
    Nop {
        fence: bool,
    },
    Refused {
        kind: u8,
        tgt: u8,
    },
    Corrupt {
        base: Box<Op>,
        byte: u8,
        value: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let leaf = prop_oneof![
        4 => (any::<u8>(), 0u32..60_000, prop_oneof![0u32..64, 0u32..5000, 60_000u32..70_000], 0u32..250_000, any::<bool>())
            .prop_map(|(tgt, at, len, src, inline)| Op::Put { tgt, at, len, src, inline }),
        3 => (any::<u8>(), any::<bool>(), 0u32..60_000, prop_oneof![1u32..64, 1u32..8192])
            .prop_map(|(tgt, mine, at, len)| Op::Get { tgt, mine, at, len }),
        3 => (any::<u8>(), 0u8..12, any::<bool>(), 0u8..32, any::<u64>(), any::<u64>())
            .prop_map(|(tgt, op, w64, word, operand, compare)| Op::Amo { tgt, op, w64, word, operand, compare }),
        3 => (any::<u8>(), any::<bool>(), 0u8..3, any::<u8>(), prop::collection::vec(any::<u32>(), 0..=16),
              prop_oneof![0u32..100, 0u32..4097, 4097u32..20_000], 0u32..180_000, 0u32..40_000)
            .prop_map(|(tgt, reply, cat, handler, args, len, src, at)| Op::Am { tgt, reply, cat, handler, args, len, src, at }),
        1 => any::<bool>().prop_map(|fence| Op::Nop { fence }),
        1 => (0u8..5, any::<u8>()).prop_map(|(kind, tgt)| Op::Refused { kind, tgt }),
    ];
    prop_oneof![
        9 => leaf.clone(),
        1 => (leaf, 0u8..128, any::<u8>()).prop_map(|(b, byte, value)| Op::Corrupt { base: Box::new(b), byte, value }),
    ]
}

/// The descriptor slots of `op` issued by `me` of `n` boards with tag `tag`.
fn slots(op: &Op, me: usize, n: usize, tag: u32, fence: bool) -> Vec<[u8; 64]> {
    let common = Common {
        tag,
        completion: tag % 7 != 3,
        fence_before: fence,
    };
    // A board writes only its own region of each target.
    let region = REGION + me as u64 * REGION_LEN;
    let d = match *op {
        Op::Put {
            tgt,
            at,
            len,
            src,
            inline,
        } => {
            let tgt = tgt as u16 % n as u16;
            let remote = region + (at as u64 % REGION_LEN);
            let len = len.min((REGION_LEN - (remote - region)) as u32);
            let source = if inline && len <= 32 {
                let mut b = vec![0u8; len as usize];
                for (i, x) in b.iter_mut().enumerate() {
                    *x = (src as usize + i) as u8;
                }
                PutSource::Inline(Inline::new(&b).unwrap())
            } else {
                PutSource::Local {
                    addr: Local::Segment(STATIC + src as u64 % (STATIC_LEN - 70_000)),
                    len,
                }
            };
            Descriptor::Put {
                common,
                target: tgt,
                remote,
                source,
            }
        }
        Op::Get { tgt, mine, at, len } => {
            let tgt = tgt as u16 % n as u16;
            let remote = if mine {
                region + at as u64 % (REGION_LEN - 8192)
            } else {
                STATIC + at as u64
            };
            Descriptor::Get {
                common,
                target: tgt,
                remote,
                local: Local::Segment(LANDING + (tag as u64 % 48) * SLOT),
                len,
            }
        }
        Op::Amo {
            tgt,
            op,
            w64,
            word,
            operand,
            compare,
        } => {
            let tgt = tgt as u16 % n as u16;
            let width = if w64 { AmoWidth::W64 } else { AmoWidth::W32 };
            let op = AmoOp::from_code(op).unwrap();
            Descriptor::Amo {
                common,
                target: tgt,
                op,
                width,
                remote: ATOMICS + me as u64 * 1024 + word as u64 * 8,
                operand: if op == AmoOp::Fetch {
                    0
                } else {
                    operand & width.mask()
                },
                compare: if op == AmoOp::CompareSwap {
                    compare & width.mask()
                } else {
                    0
                },
            }
        }
        Op::Am {
            tgt,
            reply,
            cat,
            handler,
            ref args,
            len,
            src,
            at,
        } => {
            let tgt = tgt as u16 % n as u16;
            // Host handlers only: the system ones the core serves are never AM targets.
            let handler = if engine_owned(handler) {
                64 + handler
            } else {
                handler
            };
            let local = Local::Segment(STATIC + src as u64);
            let body = match cat {
                0 => AmBody::Short,
                1 => AmBody::Medium {
                    local,
                    len: len.min(4096),
                },
                _ => AmBody::Long {
                    local,
                    len: len.min(20_000),
                    remote: region + at as u64,
                },
            };
            Descriptor::Am {
                common,
                target: tgt,
                direction: if reply {
                    Direction::Reply
                } else {
                    Direction::Request
                },
                handler,
                args: Args::new(args).unwrap(),
                body,
            }
        }
        Op::Nop { fence: true } => Descriptor::Fence { common },
        Op::Nop { fence: false } => Descriptor::Nop { common },
        Op::Refused { kind, tgt } => {
            let valid = tgt as u16 % n as u16;
            match kind {
                0 => Descriptor::Nop {
                    common: Common {
                        completion: true,
                        ..common
                    },
                },
                1 => Descriptor::Put {
                    common,
                    target: n as u16 + tgt as u16 % 4,
                    remote: 0,
                    source: PutSource::Inline(Inline::new(&[1]).unwrap()),
                },
                2 => Descriptor::Get {
                    common,
                    target: valid,
                    remote: 0,
                    local: Local::Iova(0x1000),
                    len: 8,
                },
                3 => Descriptor::Put {
                    common,
                    target: valid,
                    remote: 0,
                    source: PutSource::Local {
                        addr: Local::Segment(SEG_SIZE - 4),
                        len: 8,
                    },
                },
                _ => Descriptor::Put {
                    common,
                    target: valid,
                    remote: SEG_SIZE + tgt as u64,
                    source: PutSource::Local {
                        addr: Local::Segment(STATIC),
                        len: 16,
                    },
                },
            }
        }
        Op::Corrupt {
            ref base,
            byte,
            value,
        } => {
            let mut s = slots(base, me, n, tag, fence);
            let i = byte as usize % (64 * s.len());
            let old = s[i / 64][i % 64];
            s[i / 64][i % 64] = if value == old { old ^ 0x80 } else { value };
            let next = s.get(1).map(|c| &c[..]);
            // Kept only if the decoder must reject it (a corruption that is
            // still a valid descriptor could write anywhere and race).
            if cmd::decode_chain(&s[0], next).is_err()
                && (s.len() == 1 || cmd::slot_count(&s[0]) == Ok(2))
            {
                return s;
            }
            return slots(base, me, n, tag, fence);
        }
    };
    cmd::encode_slots(&d).as_slots().to_vec()
}

fn pattern(node: usize) -> Vec<u8> {
    (0..SEG_SIZE as usize)
        .map(|i| (i.wrapping_mul(40503) >> 5) as u8 ^ (node as u8).wrapping_mul(37))
        .collect()
}

/// Packets grouped as their order is fixed: per sender, receiver, direction
/// and whether the core's system handlers sent it.
fn by_stream(ps: &[Packet]) -> BTreeMap<(u16, u16, bool, bool), Vec<Packet>> {
    let mut m: BTreeMap<_, Vec<Packet>> = BTreeMap::new();
    for p in ps.iter().filter(|p| p.src != p.dst) {
        let PacketType::Am { direction, .. } = p.ptype else {
            continue;
        };
        m.entry((
            p.src,
            p.dst,
            direction == Direction::Reply,
            engine_owned(p.handler),
        ))
        .or_default()
        .push(p.clone());
    }
    m
}

fn run(n: usize, streams: Vec<Vec<(Op, bool)>>, mem_stall: u32) -> Result<(), TestCaseError> {
    let cfg = BoardConfig {
        mem_stall_percent: mem_stall,
        ..BoardConfig::default()
    };
    let mut net = Net::new(n, cfg, 25);
    net.keep_sent = true;
    let segs: Vec<Vec<u8>> = (0..n).map(pattern).collect();
    for (i, s) in segs.iter().enumerate() {
        net.hosts[i].seg_write(0, s);
    }
    let mut rn = RefNet::new(segs);
    let mut rtl_cq: Vec<Vec<Completion>> = vec![Vec::new(); n];
    let mut rtl_rx: Vec<Vec<Delivered>> = vec![Vec::new(); n];
    let longest = streams.iter().map(Vec::len).max().unwrap_or(0);
    // In rounds of up to 16 descriptors per board, each round run to quiescence.
    for round in (0..longest).step_by(16) {
        for (me, stream) in streams.iter().enumerate() {
            for (k, (op, fence)) in stream.iter().enumerate().skip(round).take(16) {
                let s = slots(op, me, n, k as u32, *fence);
                let sq = net.hosts[me].sq_tail as u16;
                rn.boards[me].submit(&s[0], s.get(1), sq);
                rn.pump();
                for slot in &s {
                    net.hosts[me].write_slot(slot);
                }
            }
            net.hosts[me].doorbell();
        }
        let got = net.settle_draining(2_000_000);
        for (i, (cq, rq)) in got.into_iter().enumerate() {
            rtl_cq[i].extend(cq.iter().map(|e| {
                let mut c = Completion::decode(e).expect("completion decodes");
                c.phase = false;
                c
            }));
            for (_, e, payload) in rq {
                let r = cmd::RxEntry::decode(&e).expect("receive entry decodes");
                rtl_rx[i].push(Delivered {
                    src: r.src,
                    kind: e[0],
                    handler: r.handler,
                    args: r.args.as_slice().to_vec(),
                    len: r.len,
                    offset: if e[0] & 3 == 2 { r.addr } else { 0 },
                    payload,
                });
            }
        }
    }
    for i in 0..n {
        let mut got = rtl_cq[i].clone();
        let mut want = rn.boards[i].completions.clone();
        got.sort_by_key(|c| (c.tag, c.sq_index));
        want.sort_by_key(|c| (c.tag, c.sq_index));
        prop_assert_eq!(got, want, "completions of board {}", i);
        let mut got = rtl_rx[i].clone();
        let mut want = rn.boards[i].delivered.clone();
        got.sort();
        want.sort();
        prop_assert_eq!(got, want, "receive entries of board {}", i);
        let seg = net.hosts[i].seg(0, SEG_SIZE as usize);
        if seg != rn.boards[i].segment() {
            let at = seg
                .iter()
                .zip(rn.boards[i].segment())
                .position(|(a, b)| a != b)
                .unwrap();
            return Err(TestCaseError::fail(format!(
                "segment of board {i} differs first at {at:#x}"
            )));
        }
    }
    let rtl = by_stream(&frames::logical(&net.sent));
    let reference = by_stream(&rn.wire);
    prop_assert_eq!(
        rtl.keys().collect::<Vec<_>>(),
        reference.keys().collect::<Vec<_>>()
    );
    for (k, v) in &reference {
        prop_assert!(
            rtl[k] == *v,
            "packets from {} to {} (reply {}, system {}) differ",
            k.0,
            k.1,
            k.2,
            k.3
        );
    }
    Ok(())
}

fn streams(n: usize) -> impl Strategy<Value = Vec<Vec<(Op, bool)>>> {
    prop::collection::vec(
        prop::collection::vec((op(), prop::bool::weighted(0.1)), 1..40),
        n,
    )
}

/// Few cases from a fixed seed: each case simulates up to a few million
/// cycles per board, and the suite has a time budget. The saved failures in
/// `differential.proptest-regressions` run first, every time.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 6,
        max_shrink_iters: 64,
        rng_seed: RngSeed::Fixed(0x0F5E_4D15),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn two_boards_agree_with_the_reference(s in streams(2)) {
        run(2, s, 0)?;
    }

    #[test]
    fn three_boards_agree_with_the_reference(s in streams(3)) {
        run(3, s, 0)?;
    }

    #[test]
    fn a_stalling_memory_changes_nothing(s in streams(2)) {
        run(2, s, 20)?;
    }
}
