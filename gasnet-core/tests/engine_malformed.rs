//! Hostile and malformed packets: the engine answers what it can attribute
//! with an error status, drops the rest, and never panics.

use gasnet_core::engine::layout::{AmoArgs, GetArgs, join};
use gasnet_core::engine::{Command, Engine, GetInto, PutSource, Status};
use gasnet_core::wire::{Packet, PacketType};
use gasnet_core::{AmoOp, AmoWidth, Category, Direction, MAX_MEDIUM, NodeId, handlers};
use std::sync::{Arc, Mutex};

fn packet(
    src: NodeId,
    dst: NodeId,
    category: Category,
    direction: Direction,
    handler: u8,
    args: Vec<u32>,
    payload: Vec<u8>,
) -> Packet {
    Packet {
        ptype: PacketType::Am {
            category,
            direction,
        },
        src,
        dst,
        flags: 0,
        handler,
        args,
        offset: 0,
        seq: 0,
        ack: 0,
        frag_offset: 0,
        total_len: payload.len() as u32,
        payload,
    }
}

fn request(category: Category, handler: u8, args: Vec<u32>, payload: Vec<u8>) -> Packet {
    packet(0, 1, category, Direction::Request, handler, args, payload)
}

fn reply(category: Category, handler: u8, args: Vec<u32>, payload: Vec<u8>) -> Packet {
    packet(1, 0, category, Direction::Reply, handler, args, payload)
}

fn target() -> Engine<Vec<u8>> {
    Engine::new(1, 2, vec![0u8; 4096])
}

/// The only packet `e` has to send.
fn only_outgoing(e: &mut Engine<Vec<u8>>) -> Packet {
    let p = e.next_outgoing().expect("a response");
    assert!(e.next_outgoing().is_none(), "exactly one response");
    p
}

fn assert_ack(p: &Packet, token: u32, status: Status) {
    assert_eq!(p.handler, handlers::ACK);
    assert_eq!(
        p.ptype,
        PacketType::Am {
            category: Category::Short,
            direction: Direction::Reply
        }
    );
    assert_eq!((p.src, p.dst), (1, 0));
    assert_eq!(p.args, vec![token, status.code()]);
}

#[test]
fn packets_that_cannot_be_attributed_are_dropped() {
    let mut e = target();
    let mut wrong_dst = request(Category::Long, handlers::PUT, vec![5], vec![1]);
    wrong_dst.dst = 0;
    let mut wrong_src = request(Category::Long, handlers::PUT, vec![5], vec![1]);
    wrong_src.src = 9;
    let mut transport_ack = request(Category::Short, 0, vec![], vec![]);
    transport_ack.ptype = PacketType::Ack;
    let mut transport_nack = transport_ack.clone();
    transport_nack.ptype = PacketType::Nack;
    let dropped = [
        wrong_dst,
        wrong_src,
        transport_ack,
        transport_nack,
        // System requests without a usable token.
        request(Category::Long, handlers::PUT, vec![0], vec![1]),
        request(Category::Short, handlers::GET, vec![], vec![]),
        // Requests naming reply handlers, or the invalid handler.
        request(Category::Short, handlers::ACK, vec![1, 0], vec![]),
        request(Category::Medium, handlers::GET_REPLY, vec![1], vec![2]),
        request(Category::Short, handlers::INVALID, vec![], vec![]),
        // Replies nobody asked for.
        packet(
            0,
            1,
            Category::Short,
            Direction::Reply,
            handlers::ACK,
            vec![77, 0],
            vec![],
        ),
        packet(
            0,
            1,
            Category::Short,
            Direction::Reply,
            handlers::ACK,
            vec![0, 0],
            vec![],
        ),
        packet(
            0,
            1,
            Category::Short,
            Direction::Reply,
            handlers::AMO_REPLY,
            vec![3, 1, 2],
            vec![],
        ),
        packet(0, 1, Category::Short, Direction::Reply, 64, vec![], vec![]),
    ];
    let n = dropped.len() as u64;
    for p in dropped {
        e.receive(p);
    }
    assert!(e.next_outgoing().is_none());
    assert_eq!(e.counters().dropped, n);
    assert_eq!(e.counters().packets_received, n);
    assert_eq!(e.memory()[..8], [0; 8]);
}

#[test]
fn malformed_system_requests_get_an_error_ack() {
    let cases = [
        // GET: wrong argument count, over-long Medium reply, not Short.
        request(Category::Short, handlers::GET, vec![11, 0, 0], vec![]),
        request(
            Category::Short,
            handlers::GET,
            GetArgs {
                token: 11,
                offset: 0,
                len: MAX_MEDIUM as u32 + 1,
                reply_at: None,
            }
            .encode(),
            vec![],
        ),
        request(Category::Medium, handlers::GET, vec![11, 0, 0, 4], vec![1]),
        // PUT as a Medium, PUT with extra args.
        request(Category::Medium, handlers::PUT, vec![11], vec![1, 2]),
        request(Category::Long, handlers::PUT, vec![11, 4], vec![1, 2]),
        // AMO with an unknown op, an unknown width, too few args.
        request(
            Category::Short,
            handlers::AMO,
            vec![11, 12 | 8 << 8, 0, 0, 0, 0, 0, 0],
            vec![],
        ),
        request(
            Category::Short,
            handlers::AMO,
            vec![11, 4 | 3 << 8, 0, 0, 0, 0, 0, 0],
            vec![],
        ),
        request(Category::Short, handlers::AMO, vec![11, 4 | 8 << 8], vec![]),
        // A Short carrying a payload, and a fragment the transport should
        // have reassembled.
        request(Category::Short, handlers::PING, vec![11], vec![1]),
        {
            let mut p = request(Category::Long, handlers::PUT, vec![11], vec![1, 2]);
            p.frag_offset = 2;
            p.total_len = 4;
            p
        },
    ];
    for (i, p) in cases.into_iter().enumerate() {
        let mut e = target();
        e.receive(p);
        assert_ack(&only_outgoing(&mut e), 11, Status::Malformed);
        assert_eq!(e.memory()[..8], [0; 8], "case {i}");
        assert_eq!(e.counters().error_replies, 1);
    }
}

#[test]
fn malformed_am_requests_get_an_in_order_error_ack() {
    let mut e = target();
    let ran = Arc::new(Mutex::new(false));
    let r = ran.clone();
    e.handlers_mut()
        .register_user(64, Arc::new(move |_, _| *r.lock().unwrap() = true))
        .unwrap();
    e.receive(request(Category::Short, 64, vec![], vec![1, 2]));
    assert_ack(&only_outgoing(&mut e), 0, Status::Malformed);
    e.receive(request(Category::Short, 64, vec![0; 17], vec![]));
    assert_ack(&only_outgoing(&mut e), 0, Status::Malformed);
    assert!(!*ran.lock().unwrap());
}

#[test]
fn ping_is_acknowledged() {
    let mut e = target();
    e.receive(request(Category::Short, handlers::PING, vec![42], vec![]));
    assert_ack(&only_outgoing(&mut e), 42, Status::Ok);
    assert_eq!(e.counters().requests_served, 1);
}

#[test]
fn served_requests_use_the_documented_layouts() {
    let mut e = target();
    let mut put = request(Category::Long, handlers::PUT, vec![3], vec![9, 8, 7, 6]);
    put.offset = 16;
    e.receive(put);
    assert_ack(&only_outgoing(&mut e), 3, Status::Ok);
    assert_eq!(e.memory()[16..20], [9, 8, 7, 6]);

    let g = GetArgs {
        token: 4,
        offset: 16,
        len: 4,
        reply_at: Some(0x1_0000_0000),
    };
    e.receive(request(Category::Short, handlers::GET, g.encode(), vec![]));
    let r = only_outgoing(&mut e);
    assert_eq!(
        (r.handler, r.args.clone(), r.payload.clone(), r.offset),
        (
            handlers::GET_REPLY,
            vec![4],
            vec![9, 8, 7, 6],
            0x1_0000_0000
        )
    );
    assert_eq!(
        r.ptype,
        PacketType::Am {
            category: Category::Long,
            direction: Direction::Reply
        }
    );

    let a = AmoArgs {
        token: 5,
        op: AmoOp::FetchAdd,
        width: AmoWidth::W32,
        offset: 16,
        operand: 1,
        compare: 0,
    };
    e.receive(request(Category::Short, handlers::AMO, a.encode(), vec![]));
    let r = only_outgoing(&mut e);
    assert_eq!(r.handler, handlers::AMO_REPLY);
    assert_eq!(r.args[0], 5);
    assert_eq!(join(r.args[1], r.args[2]), 0x0607_0809);
    assert_eq!(e.memory()[16..20], [10, 8, 7, 6]);
}

/// An engine at node 0 with one request outstanding to node 1; returns the
/// request packet.
fn requester(cmd: Command) -> (Engine<Vec<u8>>, Packet) {
    let mut e = Engine::new(0, 3, vec![0u8; 4096]);
    e.submit(1, cmd).unwrap();
    let p = e.next_outgoing().unwrap();
    (e, p)
}

#[test]
fn replies_from_the_wrong_peer_or_of_the_wrong_shape_do_not_land() {
    let (mut e, req) = requester(Command::Get {
        dst: 1,
        offset: 0,
        len: 4,
        into: GetInto::Segment(100),
    });
    let token = req.args[0];
    // Same token, but from node 2: dropped, the get stays outstanding.
    let mut forged = reply(Category::Long, handlers::GET_REPLY, vec![token], vec![1; 4]);
    forged.src = 2;
    forged.offset = 100;
    e.receive(forged);
    assert_eq!((e.outstanding(), e.counters().dropped), (1, 1));
    // From node 1, but aimed elsewhere in the segment: refused.
    let mut stray = reply(Category::Long, handlers::GET_REPLY, vec![token], vec![1; 4]);
    stray.offset = 0;
    e.receive(stray);
    let c = e.poll_completion().unwrap();
    assert_eq!((c.tag, c.status), (1, Status::Malformed));
    assert_eq!(e.memory()[..200], [0; 200]);

    // A Medium reply of the wrong length to a buffered get.
    let (mut e, req) = requester(Command::Get {
        dst: 1,
        offset: 0,
        len: 4,
        into: GetInto::Buffer,
    });
    e.receive(reply(
        Category::Medium,
        handlers::GET_REPLY,
        vec![req.args[0]],
        vec![1; 3],
    ));
    assert_eq!(e.poll_completion().unwrap().status, Status::Malformed);

    // An AMO_REPLY answering a put.
    let (mut e, req) = requester(Command::Put {
        dst: 1,
        offset: 0,
        source: PutSource::Bytes(vec![1]),
    });
    e.receive(reply(
        Category::Short,
        handlers::AMO_REPLY,
        vec![req.args[0], 1, 0],
        vec![],
    ));
    assert_eq!(e.poll_completion().unwrap().status, Status::Malformed);

    // An ACK with a status code this version does not know.
    let (mut e, req) = requester(Command::Amo {
        dst: 1,
        op: AmoOp::Add,
        width: AmoWidth::W64,
        offset: 0,
        operand: 1,
        compare: 0,
    });
    e.receive(reply(
        Category::Short,
        handlers::ACK,
        vec![req.args[0], 1000],
        vec![],
    ));
    let c = e.poll_completion().unwrap();
    assert_eq!(c.status, Status::Malformed);
    assert_eq!(e.outstanding(), 0);
    assert!(e.next_outgoing().is_none());
}
