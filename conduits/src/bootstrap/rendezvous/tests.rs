//! The rendezvous server and clients in one process: frames, collectives,
//! a vanished PE named to the others, and a server nobody runs.

use super::*;

fn local() -> SocketAddr {
    "[::1]:0".parse().unwrap()
}

#[test]
fn frames_round_trip_and_reject_garbage() {
    let frames = [
        Frame::Hello { rank: 3, size: 5 },
        Frame::Gather {
            round: 7,
            blob: vec![1, 2, 3],
        },
        Frame::Bye,
        Frame::Result {
            round: 1,
            blobs: vec![vec![], vec![9; 10]],
        },
        Frame::Fail {
            rank: 2,
            reason: "gone".into(),
        },
    ];
    for f in &frames {
        let b = f.encode();
        assert_eq!(Frame::from_bytes(&b).as_ref(), Ok(f));
        for cut in 0..b.len() {
            let _ = Frame::from_bytes(&b[..cut]);
        }
        let mut more = b.clone();
        more.push(0);
        assert!(Frame::from_bytes(&more).is_err());
    }
    assert_eq!(Frame::decode(99, &[]), Err(FrameError::UnknownType(99)));
    assert_eq!(
        Frame::decode(T_HELLO, b"XXXX\x01\0\0\0\0\0\0\0\0"),
        Err(FrameError::BadHello)
    );
    assert!(Frame::decode(T_RESULT, &[0, 0, 0, 0, 255, 255, 255, 255]).is_err());
    assert_eq!(
        Frame::decode(T_FAIL, &[0, 0, 0, 1, 0xff]),
        Err(FrameError::BadText)
    );
    // Arbitrary bytes never panic.
    let mut x = 0x1234_5678u32;
    for _ in 0..2000 {
        let mut b = Vec::new();
        for _ in 0..(x % 40) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b.push(x as u8);
        }
        let _ = Frame::decode(b.first().copied().unwrap_or(0) % 20, &b);
    }
}

#[test]
fn allgather_and_barrier_across_threads() {
    let server = Server::start(local(), 4, Duration::from_secs(10)).unwrap();
    let addr = server.addr().to_string();
    let handles: Vec<_> = (0..4)
        .map(|r| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = Client::join(&addr, r, 4, Duration::from_secs(10)).unwrap();
                for round in 0..5u8 {
                    let all = c.allgather(&[r as u8, round]).unwrap();
                    let want: Vec<Vec<u8>> = (0..4).map(|p| vec![p as u8, round]).collect();
                    assert_eq!(all, want);
                    c.barrier().unwrap();
                }
                assert!(c.local_addr().unwrap().is_ipv6());
                c.finalize().unwrap();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut server = server;
    assert!(matches!(server.wait(Duration::from_secs(5)), Some(Ok(()))));
}

#[test]
fn rank_zero_serves_when_it_can_bind() {
    // Find a free port, then let rank 0 serve it.
    let port = TcpListener::bind(local())
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("[::1]:{port}");
    let a2 = addr.clone();
    let other = std::thread::spawn(move || {
        let mut c = Client::join(&a2, 1, 2, Duration::from_secs(10)).unwrap();
        let all = c.allgather(b"one").unwrap();
        c.finalize().unwrap();
        all
    });
    let mut c = Client::join(&addr, 0, 2, Duration::from_secs(10)).unwrap();
    assert!(c.server.is_some());
    let all = c.allgather(b"zero").unwrap();
    c.finalize().unwrap();
    assert_eq!(all, vec![b"zero".to_vec(), b"one".to_vec()]);
    assert_eq!(other.join().unwrap(), all);
}

#[test]
fn a_vanished_pe_fails_the_round_by_name() {
    let server = Server::start(local(), 3, Duration::from_secs(10)).unwrap();
    let addr = server.addr().to_string();
    let quitter = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let c = Client::join(&addr, 2, 3, Duration::from_secs(10)).unwrap();
            std::thread::sleep(Duration::from_millis(100));
            drop(c);
        })
    };
    let waiters: Vec<_> = (0..2)
        .map(|r| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = Client::join(&addr, r, 3, Duration::from_secs(10)).unwrap();
                c.barrier()
            })
        })
        .collect();
    quitter.join().unwrap();
    for w in waiters {
        match w.join().unwrap() {
            Err(ConduitError::PeerFailed { pe: 2, reason }) => {
                assert!(reason.contains("closed"), "{reason}")
            }
            other => panic!("expected PE 2 to fail: {other:?}"),
        }
    }
}

#[test]
fn a_pe_vanishing_between_collectives_is_announced_to_the_others() {
    let server = Server::start(local(), 3, Duration::from_secs(10)).unwrap();
    let addr = server.addr().to_string();
    let mut clients: Vec<Client> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|r| {
                let addr = addr.clone();
                s.spawn(move || {
                    let mut c = Client::join(&addr, r, 3, Duration::from_secs(10)).unwrap();
                    c.barrier().unwrap();
                    c
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for c in &mut clients {
        assert!(c.check().is_ok());
    }
    // PE 2 vanishes without a goodbye, outside any collective.
    drop(clients.pop());
    let start = Instant::now();
    for c in &mut clients {
        let e = loop {
            match c.check() {
                Err(e) => break e,
                Ok(()) => {
                    assert!(start.elapsed() < Duration::from_secs(2), "not announced");
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        };
        match e {
            ConduitError::PeerFailed { pe: 2, reason } => {
                assert!(reason.contains("without finalizing"), "{reason}")
            }
            other => panic!("expected PE 2 to fail: {other:?}"),
        }
        // Later collectives fail the same way instead of hanging.
        assert!(matches!(
            c.barrier(),
            Err(ConduitError::PeerFailed { pe: 2, .. })
        ));
    }
}

#[test]
fn nobody_listening_times_out_with_a_clear_error() {
    let port = TcpListener::bind(local())
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = Client::join(&format!("[::1]:{port}"), 1, 2, Duration::from_millis(200))
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot reach"), "{e}");
    assert!(Client::join("no-port-here", 1, 2, Duration::from_millis(10)).is_err());
}
