//! First light: one board executes a Nop, puts, gets and an atomic on its
//! own segment.
#![cfg(feature = "verilator")]

mod common;

use common::{Host, Net};
use fshmem_hw::BoardConfig;
use gasnet_core::cmd::{self, Common, Descriptor, Inline, Local, PutSource, Status};
use gasnet_core::{AmoOp, AmoWidth};

fn c(tag: u32) -> Common {
    Common {
        tag,
        completion: true,
        fence_before: false,
    }
}

#[test]
fn nop_completes() {
    let mut h = Host::new(0, 1, BoardConfig::default());
    h.submit(&[cmd::encode(&Descriptor::Nop { common: c(7) })]);
    let mut done = None;
    for _ in 0..200 {
        h.board.cycle();
        if let Some(cq) = h.poll_cq() {
            done = Some(cq);
            break;
        }
    }
    let cq = done.expect("completion");
    assert_eq!(
        (cq.tag, cq.status, cq.opcode, cq.sq_index),
        (7, Status::Ok, 1, 0)
    );
}

#[test]
fn put_get_amo_on_own_segment() {
    let mut net = Net::new(1, BoardConfig::default(), 10);
    let h = &mut net.hosts[0];
    h.seg_write(0x100, b"hello, board");
    let put = Descriptor::Put {
        common: c(1),
        target: 0,
        remote: 0x1000,
        source: PutSource::Local {
            addr: Local::Segment(0x100),
            len: 12,
        },
    };
    h.submit(&[cmd::encode(&put)]);
    let inl = Descriptor::Put {
        common: c(2),
        target: 0,
        remote: 0x2003,
        source: PutSource::Inline(Inline::new(&[9, 8, 7]).unwrap()),
    };
    h.submit(&[cmd::encode(&inl)]);
    net.settle(100_000);
    let h = &mut net.hosts[0];
    let mut got = Vec::new();
    while let Some(cq) = h.poll_cq() {
        got.push((cq.tag, cq.status.code(), cq.bytes));
    }
    got.sort();
    assert_eq!(got, vec![(1, 0, 12), (2, 0, 3)]);
    assert_eq!(h.seg(0x1000, 12), b"hello, board");
    assert_eq!(h.seg(0x2003, 3), &[9, 8, 7]);

    let get = Descriptor::Get {
        common: c(3),
        target: 0,
        remote: 0x1000,
        local: Local::Segment(0x3005),
        len: 12,
    };
    h.submit(&[cmd::encode(&get)]);
    h.seg_write(0x4000, &41u64.to_le_bytes());
    let amo = Descriptor::Amo {
        common: c(4),
        target: 0,
        op: AmoOp::FetchAdd,
        width: AmoWidth::W64,
        remote: 0x4000,
        operand: 1,
        compare: 0,
    };
    h.submit(&[cmd::encode(&amo)]);
    net.settle(100_000);
    let h = &mut net.hosts[0];
    let mut got = Vec::new();
    while let Some(cq) = h.poll_cq() {
        got.push((cq.tag, cq.status.code(), cq.value));
    }
    got.sort();
    assert_eq!(got, vec![(3, 0, 0), (4, 0, 41)]);
    assert_eq!(h.seg(0x3005, 12), b"hello, board");
    assert_eq!(h.seg(0x4000, 8), &42u64.to_le_bytes());
}
