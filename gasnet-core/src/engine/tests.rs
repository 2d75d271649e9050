//! Unit tests of the engine's internals (the behaviour between engines is
//! tested in `tests/engine_pair.rs`).

use super::*;

fn assert_send<T: Send>() {}

#[test]
fn engine_can_move_to_a_progress_thread() {
    assert_send::<Engine<Vec<u8>>>();
}

#[test]
fn tokens_wrap_around_and_never_use_the_am_token() {
    let mut e = Engine::new(0, 2, vec![0u8; 64]);
    e.next_token = u32::MAX - 1;
    for tag in 0..3 {
        let source = PutSource::Bytes(vec![1]);
        e.submit(
            tag,
            Command::Put {
                dst: 1,
                offset: 0,
                source,
            },
        )
        .unwrap();
    }
    let tokens: Vec<u32> = std::iter::from_fn(|| e.next_outgoing())
        .map(|p| p.args[0])
        .collect();
    assert_eq!(tokens, vec![u32::MAX, 1, 2]);
    assert_eq!(e.in_flight, 3);
}

#[test]
fn malformed_replies_to_outstanding_requests_fail_them() {
    let mut e = Engine::new(0, 2, vec![0u8; 64]);
    let cmd = Command::Get {
        dst: 1,
        offset: 0,
        len: 8,
        into: GetInto::Buffer,
    };
    e.submit(5, cmd).unwrap();
    let req = e.next_outgoing().unwrap();
    // A fragment of the reply: the transport should have reassembled it.
    let mut frag = am_packet(
        1,
        0,
        Category::Medium,
        Direction::Reply,
        handlers::GET_REPLY,
        vec![req.args[0]],
        vec![0; 4],
        0,
    );
    frag.total_len = 8;
    e.receive(frag);
    let c = e.poll_completion().unwrap();
    assert_eq!((c.tag, c.status), (5, Status::Malformed));
    assert_eq!((e.outstanding(), e.in_flight), (0, 0));

    let cmd = Command::AmRequest {
        dst: 1,
        category: Category::Short,
        handler: 64,
        args: vec![],
        payload: vec![],
        offset: 0,
    };
    e.submit(6, cmd).unwrap();
    e.next_outgoing().unwrap();
    let short_ack = am_packet(
        1,
        0,
        Category::Short,
        Direction::Reply,
        handlers::ACK,
        vec![AM_TOKEN],
        vec![],
        0,
    );
    e.receive(short_ack);
    let c = e.poll_completion().unwrap();
    assert_eq!((c.tag, c.status), (6, Status::Malformed));
    assert_eq!((e.outstanding(), e.in_flight), (0, 0));
    assert_eq!(e.counters().dropped, 0);
}
