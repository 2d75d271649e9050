//! First light: one board executes a Nop, puts, gets and an atomic on its
//! own segment.
#![cfg(feature = "verilator")]

mod common;

use common::{Host, Net};
use fshmem_hw::BoardConfig;
use gasnet_core::cmd::{self, Common, Descriptor, Inline, Local, PutSource, Status};
use gasnet_core::{AmoOp, AmoWidth, Direction};

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
fn uptime_counts_microseconds_from_reset() {
    // 250 cycles a microsecond (BoardConfig::default).
    let mut h = Host::new(0, 1, BoardConfig::default());
    let before = h.board.read64(cmd::regs::UPTIME_LO);
    h.run(250 * 40);
    let after = h.board.read64(cmd::regs::UPTIME_LO);
    assert!(
        (39..=41).contains(&(after - before)),
        "UPTIME went from {before} to {after} in 40 us"
    );
    assert_eq!(h.board.read32(cmd::regs::VERSION), cmd::VERSION);
    // A soft reset starts it again.
    h.board.write32(cmd::regs::CTRL, cmd::ctrl::RESET);
    while h.board.read32(cmd::regs::CTRL) & cmd::ctrl::RESET != 0 {}
    let fresh = h.board.read64(cmd::regs::UPTIME_LO);
    assert!(fresh < 5, "UPTIME {fresh} just after a soft reset");
}

#[test]
fn a_burst_of_loads_reads_what_single_loads_read() {
    let mut h = Host::new(0, 1, BoardConfig::default());
    h.submit(&[cmd::encode(&Descriptor::Nop { common: c(3) })]);
    h.settle(10_000);
    let regs = cmd::regs::CQ_RING;
    let offs = [
        cmd::regs::MAGIC,
        cmd::regs::NODE_COUNT,
        cmd::regs::SQ_HEAD,
        cmd::regs::CQ_TAIL,
        cmd::regs::STATUS,
        regs,
        regs + 28,
        cmd::regs::SEG_SIZE_LO,
    ];
    let single: Vec<u32> = offs.iter().map(|&o| h.board.read32(o)).collect();
    let mut burst = [0u32; 8];
    let before = h.board.cycles();
    h.board.read_burst(&offs, &mut burst);
    assert_eq!(h.board.cycles() - before, offs.len() as u64 + 1);
    assert_eq!(burst.to_vec(), single);
    assert_eq!(single[0], cmd::MAGIC);
    assert_eq!(single[3], 1, "one completion written");
    assert_eq!(single[6] >> 24 & 1, 1, "its phase bit");
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

/// Every frame a board sent decodes under spec/wire.md's rules.
fn frames_decode(net: &Net) -> usize {
    for (s, f) in &net.sent {
        if let Err(e) = gasnet_core::wire::decode(f) {
            panic!("board {s} sent an undecodable frame ({e}): {f:02x?}");
        }
    }
    net.sent.len()
}

#[test]
fn two_nodes_put_get_amo_am() {
    let mut net = Net::new(2, BoardConfig::default(), 20);
    net.keep_sent = true;
    let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 3) as u8).collect();
    net.hosts[0].seg_write(0x10, &data);
    net.hosts[1].seg_write(0x8000, &7u32.to_le_bytes());
    let h = &mut net.hosts[0];
    h.submit(&[cmd::encode(&Descriptor::Put {
        common: c(1),
        target: 1,
        remote: 0x20001,
        source: PutSource::Local {
            addr: Local::Segment(0x10),
            len: data.len() as u32,
        },
    })]);
    h.submit(&[cmd::encode(&Descriptor::Get {
        common: c(2),
        target: 1,
        remote: 0x20001,
        local: Local::Segment(0x40003),
        len: data.len() as u32,
    })]);
    h.submit(&[cmd::encode(&Descriptor::Amo {
        common: c(3),
        target: 1,
        op: AmoOp::CompareSwap,
        width: AmoWidth::W32,
        remote: 0x8000,
        operand: 9,
        compare: 7,
    })]);
    h.seg_write(0x60000, b"medium payload!");
    let am = Descriptor::Am {
        common: c(4),
        target: 1,
        direction: gasnet_core::Direction::Request,
        handler: 70,
        args: cmd::Args::new(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap(),
        body: cmd::AmBody::Medium {
            local: Local::Segment(0x60000),
            len: 15,
        },
    };
    h.submit(cmd::encode_slots(&am).as_slots());
    let cycles = net.settle(1_000_000);
    let n = frames_decode(&net);
    let h = &mut net.hosts[0];
    let mut got = Vec::new();
    while let Some(cq) = h.poll_cq() {
        got.push((cq.tag, cq.status.code(), cq.value, cq.bytes));
    }
    got.sort();
    assert_eq!(
        got,
        vec![
            (1, 0, 0, 10_000),
            (2, 0, 0, 10_000),
            (3, 0, 7, 0),
            (4, 0, 0, 15)
        ],
        "after {cycles} cycles, {n} frames"
    );
    assert_eq!(h.seg(0x40003, data.len()), &data[..]);
    assert_eq!(net.hosts[1].seg(0x20001, data.len()), &data[..]);
    assert_eq!(net.hosts[1].seg(0x8000, 4), &9u32.to_le_bytes());
    let (slot, rx) = net.hosts[1].poll_rq().expect("receive entry");
    assert_eq!(slot, 0);
    assert_eq!((rx.src, rx.handler, rx.len), (0, 70, 15));
    assert_eq!(rx.args.as_slice(), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    let b = &net.hosts[1].board.dram()[rx.addr as usize..rx.addr as usize + 15];
    assert_eq!(b, b"medium payload!");
}

#[test]
fn lossy_links_still_deliver_everything() {
    let mut net = Net::new(3, BoardConfig::default(), 30);
    net.keep_sent = true;
    net.impair = common::Impair {
        loss: 10,
        dup: 5,
        reorder: 10,
        reorder_cycles: 300,
    };
    let mut expect = Vec::new();
    for i in 0..3usize {
        let data: Vec<u8> = (0..6000u32)
            .map(|j| (j as usize * 13 + i * 31) as u8)
            .collect();
        net.hosts[i].seg_write(0x1000, &data);
        expect.push(data);
    }
    for i in 0..3usize {
        for k in 0..4u32 {
            let dst = ((i + 1 + k as usize % 2) % 3) as u16;
            let h = &mut net.hosts[i];
            h.submit(&[cmd::encode(&Descriptor::Put {
                common: c(k),
                target: dst,
                remote: 0x10000 * (k as u64 + 1) + i as u64 * 0x2000,
                source: PutSource::Local {
                    addr: Local::Segment(0x1000),
                    len: 6000,
                },
            })]);
        }
    }
    net.settle(5_000_000);
    frames_decode(&net);
    for (i, sent) in expect.iter().enumerate() {
        let mut n = 0;
        while let Some(cq) = net.hosts[i].poll_cq() {
            assert_eq!(cq.status, Status::Ok, "board {i} tag {}", cq.tag);
            n += 1;
        }
        assert_eq!(n, 4, "board {i}");
        for k in 0..4usize {
            let dst = (i + 1 + k % 2) % 3;
            let at = 0x10000 * (k as u64 + 1) + i as u64 * 0x2000;
            assert_eq!(
                net.hosts[dst].seg(at, 6000),
                &sent[..],
                "put {k} of board {i}"
            );
        }
    }
    let rtx: u64 = (0..3)
        .map(|i| net.hosts[i].board.read64(cmd::regs::CNT_RETRANSMITS))
        .sum();
    assert!(rtx > 0, "a lossy network needed no retransmission");
}

#[test]
fn fragmented_long_am_reaches_the_host() {
    let mut net = Net::new(2, BoardConfig::default(), 20);
    net.keep_sent = true;
    let data: Vec<u8> = (0..10_629u32).map(|i| (i * 11 + 5) as u8).collect();
    net.hosts[0].seg_write(0x1000, &data);
    let am = Descriptor::Am {
        common: c(9),
        target: 1,
        direction: gasnet_core::Direction::Request,
        handler: 240,
        args: cmd::Args::new(&[1, 2, 3]).unwrap(),
        body: cmd::AmBody::Long {
            local: Local::Segment(0x1000),
            len: 10_629,
            remote: 0x42540,
        },
    };
    net.hosts[0].submit(cmd::encode_slots(&am).as_slots());
    net.settle(1_000_000);
    frames_decode(&net);
    let cq = net.hosts[0].poll_cq().expect("completion");
    assert_eq!((cq.tag, cq.status, cq.bytes), (9, Status::Ok, 10_629));
    let (_, rx) = net.hosts[1].poll_rq().expect("receive entry");
    assert_eq!(
        (rx.src, rx.handler, rx.len, rx.addr),
        (0, 240, 10_629, 0x42540)
    );
    assert_eq!(net.hosts[1].seg(0x42540, data.len()), data);
}

/// spec/registers.md 4.2: a board that is not enabled takes nothing from
/// its links. Board 1 is reset and left disabled (its segment size 0), as a
/// board is while its host is still bringing it up; a put from board 0
/// must neither land nor fail, and must land once board 1 is reset again
/// and enabled (its peer's retransmission brings it).
#[test]
fn a_disabled_board_takes_no_frame_until_enabled() {
    use gasnet_core::cmd::{ctrl, regs};
    let mut net = Net::new(2, BoardConfig::default(), 20);
    let b = &mut net.hosts[1].board;
    b.write32(regs::CTRL, ctrl::RESET);
    while b.read32(regs::CTRL) & ctrl::RESET != 0 {}
    assert_eq!(b.read32(regs::CTRL) & ctrl::ENABLE, 0);
    net.hosts[0].submit(&[cmd::encode(&Descriptor::Put {
        common: c(1),
        target: 1,
        remote: 0x100,
        source: PutSource::Inline(Inline::new(&[0xA5; 8]).unwrap()),
    })]);
    // Long enough for the frame and several retransmissions (a 20 us first
    // timeout at 250 cycles a microsecond).
    for _ in 0..100_000 {
        net.cycle();
    }
    assert_eq!(
        net.hosts[0].poll_cq(),
        None,
        "the put completed at a disabled board"
    );
    assert_eq!(net.hosts[1].seg(0x100, 8), vec![0; 8]);
    // Its host resets it once more and enables it: the put arrives whole.
    net.hosts[1].bring_up(1, 2, common::RX_BOUNCE);
    let cycles = net.settle(5_000_000);
    let done = net.hosts[0].poll_cq().expect("the put completes");
    assert_eq!(
        (done.tag, done.status),
        (1, Status::Ok),
        "after {cycles} cycles"
    );
    assert_eq!(net.hosts[1].seg(0x100, 8), vec![0xA5; 8]);
}

/// Clocks `h`'s board alone for at most 5,000 cycles, until it has sent a
/// frame and has no work left; returns the frames it sent.
fn send_alone(h: &mut Host) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    for _ in 0..5_000 {
        h.board.cycle();
        frames.extend(h.sent());
        if !frames.is_empty() && !h.board.working() {
            break;
        }
    }
    assert!(!frames.is_empty(), "no frame in 5,000 cycles");
    frames
}

/// What devsim needs to clock a waiting core only as its tick comes. A
/// get's requester has its command outstanding (working) but moves nothing
/// across its edges until the reply comes; the target, once its reply has
/// left, is `armed` (the reply awaits its acknowledgement) and not working.
/// Neither moves without a frame or a tick; each answer clears the state.
#[test]
fn a_core_waiting_for_its_peer_moves_nothing_and_is_armed_until_acknowledged() {
    // Ticks only when given: the retransmission timers stand still.
    let cfg = BoardConfig {
        cycles_per_tick: None,
        ..BoardConfig::default()
    };
    let mut net = Net::new(2, cfg, 20);
    net.hosts[1].seg_write(0x100, b"sixteen bytes!!!");
    let get = Descriptor::Get {
        common: c(1),
        target: 1,
        remote: 0x100,
        local: Local::Segment(0x10),
        len: 16,
    };
    net.hosts[0].submit(&[cmd::encode(&get)]);
    // The pair (0, 1) uses port 1 of board 0 and port 0 of board 1.
    let request = send_alone(&mut net.hosts[0]);
    assert_eq!(request.len(), 1, "{request:02x?}");
    let b0 = &mut net.hosts[0].board;
    assert!(
        b0.working() && b0.armed(),
        "the requester waits for its reply"
    );
    let moved = b0.activity();
    net.hosts[0].run(2_000);
    assert_eq!(net.hosts[0].board.activity(), moved, "the requester moved");

    net.hosts[1].board.push_frame(0, request[0].clone());
    let reply = send_alone(&mut net.hosts[1]);
    let b1 = &net.hosts[1].board;
    assert!(!reply.is_empty(), "no reply");
    assert!(b1.armed() && !b1.working(), "the reply awaits its ack");
    assert!(b1.busy(), "busy counts the armed state");
    let moved = b1.activity();
    net.hosts[1].run(2_000);
    assert_eq!(net.hosts[1].board.activity(), moved, "the target moved");

    for f in reply {
        net.hosts[0].board.push_frame(1, f);
    }
    net.settle(100_000);
    for (i, h) in net.hosts.iter().enumerate() {
        assert!(!h.board.armed() && !h.board.busy(), "board {i} at the end");
    }
    let cq = net.hosts[0].poll_cq().expect("the get completes");
    assert_eq!((cq.tag, cq.status), (1, Status::Ok));
    assert_eq!(net.hosts[0].seg(0x10, 16), b"sixteen bytes!!!");
}

fn short_am(tag: u32, target: u16, direction: Direction, handler: u8, args: &[u32]) -> [u8; 64] {
    cmd::encode(&Descriptor::Am {
        common: c(tag),
        target,
        direction,
        handler,
        args: cmd::Args::new(args).unwrap(),
        body: cmd::AmBody::Short,
    })
}

#[test]
fn the_kernel_port_takes_compute_requests_and_issues_commands_of_its_own() {
    let cfg = BoardConfig {
        compute: true,
        ..BoardConfig::default()
    };
    let mut net = Net::new(2, cfg, 10);
    assert_eq!(
        net.hosts[1].board.read32(cmd::regs::CAPS) & cmd::caps::COMPUTE,
        cmd::caps::COMPUTE
    );
    // Host 0 asks board 1's kernel (handler 224) and host 1 (handler 100).
    let (h224, h100) = (gasnet_core::handlers::FIRST_COMPUTE, 100);
    net.hosts[0].submit(&[
        short_am(1, 1, Direction::Request, h224, &[10, 20, 30]),
        short_am(2, 1, Direction::Request, h100, &[5]),
    ]);
    net.settle(100_000);
    let req = net.hosts[1]
        .board
        .take_kernel_request()
        .expect("a kernel request");
    assert_eq!(
        (req.src, req.handler, req.args),
        (0, h224, vec![10, 20, 30])
    );
    assert_eq!(net.hosts[1].board.take_kernel_request(), None);
    let (_, e) = net.hosts[1]
        .poll_rq()
        .expect("handler 100 reaches the host");
    assert_eq!((e.handler, e.args.as_slice()), (h100, &[5u32][..]));
    net.hosts[1].rq_free();
    assert!(
        net.hosts[1].poll_rq().is_none(),
        "the compute request reached the host"
    );

    // The kernel answers: a put of its result from board 1's segment to
    // board 0, a reply to the requester, and a command the core refuses.
    net.hosts[1].seg_write(0x400, b"tile result");
    let put = Descriptor::Put {
        common: c(77),
        target: 0,
        remote: 0x3000,
        source: PutSource::Local {
            addr: Local::Segment(0x400),
            len: 11,
        },
    };
    let b = &mut net.hosts[1].board;
    b.submit_kernel(&cmd::encode(&put), None);
    b.submit_kernel(&short_am(78, 0, Direction::Reply, 200, &[7, 0, 11]), None);
    let bad = Descriptor::Nop { common: c(79) };
    let mut bad = cmd::encode(&bad);
    bad[0] = 0x7E;
    b.submit_kernel(&bad, None);
    net.settle(200_000);
    let b = &mut net.hosts[1].board;
    assert_eq!(b.kernel_commands_waiting(), 0);
    let mut done = Vec::new();
    while let Some(e) = b.take_kernel_completion() {
        let cq = cmd::Completion::decode(&e).expect("a kernel completion decodes");
        done.push((cq.tag, cq.status, cq.opcode, cq.bytes));
    }
    done.sort_by_key(|d| d.0);
    assert_eq!(
        done,
        vec![
            (77, Status::Ok, 0x08, 11),
            (78, Status::Ok, 0x18, 0),
            (79, Status::BadOpcode, 0x7E, 0)
        ]
    );
    assert!(
        net.hosts[1].poll_cq().is_none(),
        "a kernel command's completion reached the host's queue"
    );
    assert_eq!(net.hosts[0].seg(0x3000, 11), b"tile result");
    let (_, e) = net.hosts[0].poll_rq().expect("the kernel's reply");
    assert_eq!(
        (e.src, e.direction, e.handler, e.args.as_slice()),
        (1, Direction::Reply, 200, &[7u32, 0, 11][..])
    );
    // Host 0's own commands completed on its queue as before.
    let mut mine: Vec<u32> = std::iter::from_fn(|| net.hosts[0].poll_cq().map(|c| c.tag)).collect();
    mine.sort();
    assert_eq!(mine, vec![1, 2]);
}

#[test]
fn without_a_kernel_compute_requests_reach_the_host() {
    let mut net = Net::new(2, BoardConfig::default(), 10);
    assert_eq!(
        net.hosts[1].board.read32(cmd::regs::CAPS) & cmd::caps::COMPUTE,
        0
    );
    let h224 = gasnet_core::handlers::FIRST_COMPUTE;
    net.hosts[0].submit(&[short_am(1, 1, Direction::Request, h224, &[4])]);
    net.settle(100_000);
    assert_eq!(net.hosts[1].board.take_kernel_request(), None);
    let (_, e) = net.hosts[1]
        .poll_rq()
        .expect("the host receives handler 224");
    assert_eq!((e.handler, e.args.as_slice()), (h224, &[4u32][..]));
}

#[test]
fn a_request_the_kernel_drops_is_reported_in_err_status() {
    use gasnet_core::compute::{Reject, Rejected};
    let cfg = BoardConfig {
        compute: true,
        ..BoardConfig::default()
    };
    let mut net = Net::new(2, cfg, 10);
    let h225 = gasnet_core::handlers::FIRST_COMPUTE + 1;
    net.hosts[0].submit(&[short_am(1, 1, Direction::Request, h225, &[1, 2])]);
    net.settle(100_000);
    let b = &mut net.hosts[1].board;
    let req = b.take_kernel_request().expect("a kernel request");
    assert_eq!(b.read32(cmd::regs::ERR_STATUS), 0);
    // The kernel cannot run handler 225: it says so on its error input.
    let r = Rejected {
        src: req.src,
        handler: req.handler,
        nargs: req.args.len() as u8,
        reason: Reject::NoSuchHandler,
    };
    b.kernel_error(r.info());
    for _ in 0..4 {
        b.cycle();
    }
    assert_eq!(b.read32(cmd::regs::ERR_STATUS), cmd::err::COMPUTE);
    let info = b.read32(cmd::regs::ERR_INFO);
    assert_eq!(Rejected::from_info(info), r, "ERR_INFO {info:#x}");
    assert_ne!(b.read32(cmd::regs::STATUS) & cmd::status::ERROR, 0);
    assert_ne!(b.read32(cmd::regs::IRQ_STATUS) & cmd::irq::ERROR, 0);
    assert_eq!(b.read32(cmd::regs::VERSION), cmd::VERSION);
    // Write 1 to clear.
    b.write32(cmd::regs::ERR_STATUS, cmd::err::COMPUTE);
    assert_eq!(b.read32(cmd::regs::ERR_STATUS), 0);
    // Without a kernel the input is ignored.
    let mut h = Host::new(0, 1, BoardConfig::default());
    h.board.kernel_error(r.info());
    h.run(8);
    assert_eq!(h.board.read32(cmd::regs::ERR_STATUS), 0);
}

#[test]
fn a_held_kernel_request_stops_the_core_until_the_kernel_accepts_it() {
    let cfg = BoardConfig {
        compute: true,
        ..BoardConfig::default()
    };
    let mut net = Net::new(2, cfg, 10);
    net.hosts[1].board.hold_kernel_requests(true);
    let h224 = gasnet_core::handlers::FIRST_COMPUTE;
    // A request for board 1's kernel, then a put behind it.
    net.hosts[0].submit(&[
        short_am(1, 1, Direction::Request, h224, &[3]),
        cmd::encode(&Descriptor::Put {
            common: c(2),
            target: 1,
            remote: 0x100,
            source: PutSource::Inline(Inline::new(&[0x5A; 8]).unwrap()),
        }),
    ]);
    for _ in 0..20_000 {
        net.cycle();
    }
    let req = net.hosts[1]
        .board
        .take_kernel_request()
        .expect("the kernel is given the request while it waits");
    assert_eq!((req.src, req.handler, req.args), (0, h224, vec![3]));
    assert_eq!(
        net.hosts[1].seg(0x100, 8),
        vec![0; 8],
        "the put landed before the kernel took the request"
    );
    assert_eq!(
        net.hosts[1].board.take_kernel_request(),
        None,
        "given twice"
    );
    net.hosts[1].board.accept_kernel_request();
    net.settle(200_000);
    assert_eq!(net.hosts[1].seg(0x100, 8), vec![0x5A; 8]);
    assert_eq!(net.hosts[1].board.take_kernel_request(), None);
}
