//! Several PEs in one process (one thread each) over real UDP sockets on
//! `[::1]`, bootstrapped through an in-process rendezvous server.

use super::*;
use crate::bootstrap::rendezvous::{Client, Server};
use gasnet_core::handlers::FIRST_USER;

fn job(n: usize, settings: Settings, body: impl Fn(Ipv6Conduit) + Send + Sync + 'static) {
    let server = Server::start("[::1]:0".parse().unwrap(), n, Duration::from_secs(20)).unwrap();
    let addr = server.addr().to_string();
    let body = Arc::new(body);
    let hs: Vec<_> = (0..n)
        .map(|r| {
            let (addr, body, settings) = (addr.clone(), body.clone(), settings.clone());
            std::thread::spawn(move || {
                let boot = Client::join(&addr, r, n, Duration::from_secs(20)).unwrap();
                let c = Ipv6Conduit::attach_with(
                    r,
                    n,
                    SegmentRequest::Own(1 << 20),
                    Box::new(boot),
                    &settings,
                )
                .unwrap();
                body(c);
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

fn exercise(c: Ipv6Conduit) {
    let (me, n) = (c.rank(), c.size());
    // Large puts (fragmented at a small MTU) and gets back.
    let big: Vec<u8> = (0..200_000).map(|i| (i * 13 + me) as u8).collect();
    let next = (me + 1) % n;
    c.put(CtxId::DEFAULT, next, 4096, &big).unwrap();
    for _ in 0..100 {
        c.atomic(CtxId::DEFAULT, 0, 0, AmoOp::Add, AmoWidth::W64, 1, 0)
            .unwrap();
        c.atomic(
            CtxId::DEFAULT,
            next,
            8,
            AmoOp::FetchAdd,
            AmoWidth::W32,
            1,
            0,
        )
        .unwrap();
    }
    c.barrier().unwrap();
    let prev = (me + n - 1) % n;
    let mut got = vec![0u8; 200_000];
    c.get(CtxId::DEFAULT, me, 4096, &mut got).unwrap();
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, &b)| b == (i * 13 + prev) as u8)
    );
    let mut remote = vec![0u8; 200_000];
    c.get(CtxId::DEFAULT, next, 4096, &mut remote).unwrap();
    assert!(
        remote
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i * 13 + me) as u8)
    );
    let total = c
        .atomic(CtxId::DEFAULT, 0, 0, AmoOp::Fetch, AmoWidth::W64, 0, 0)
        .unwrap();
    assert_eq!(total, 100 * n as u64);
    let mine = c
        .atomic(CtxId::DEFAULT, me, 8, AmoOp::Fetch, AmoWidth::W32, 0, 0)
        .unwrap();
    assert_eq!(mine, 100);
    // Non-blocking gets of several pieces into a private buffer, and into
    // the segment.
    let mut nb = vec![0u8; 150_000];
    // SAFETY: `nb` outlives the quiet below and is not touched before it.
    unsafe {
        c.get_nbi(CtxId::DEFAULT, next, 4096, nb.as_mut_ptr(), nb.len())
            .unwrap()
    };
    // SAFETY: the destination lies in our own segment, unused otherwise.
    unsafe {
        c.get_nbi(
            CtxId::DEFAULT,
            next,
            4096,
            c.local_segment().add(600_000),
            150_000,
        )
        .unwrap()
    };
    c.quiet(CtxId::DEFAULT).unwrap();
    assert_eq!(&nb[..], &big[..150_000]);
    // SAFETY: 150_000 bytes of our segment at 600_000, written by the get.
    let seg = unsafe { std::slice::from_raw_parts(c.local_segment().add(600_000), 150_000) };
    assert_eq!(seg, &big[..150_000]);
    // A non-blocking put whose source lies in this PE's segment (read as
    // each piece is issued, not copied at the call): the bytes just got
    // from `next` (this PE's own `big`) go back to it, so each PE finds
    // `prev`'s.
    c.barrier().unwrap();
    // SAFETY: the source lies in our segment and nothing writes it before
    // the quiet below.
    unsafe {
        c.put_nbi(
            CtxId::DEFAULT,
            next,
            800_000,
            c.local_segment().add(600_000),
            150_000,
        )
        .unwrap()
    };
    c.quiet(CtxId::DEFAULT).unwrap();
    c.barrier().unwrap();
    // SAFETY: 150_000 bytes of our segment at 800_000, written by prev's
    // put before the barrier.
    let back = unsafe { std::slice::from_raw_parts(c.local_segment().add(800_000), 150_000) };
    assert!(
        back.iter()
            .enumerate()
            .all(|(i, &b)| b == (i * 13 + prev) as u8),
        "PE {me}: a put from the segment landed other bytes than PE {prev}'s"
    );
    // Put-with-signal: data visible once the signal is.
    c.put_signal(
        CtxId::DEFAULT,
        next,
        300_000,
        &[7u8; 5000],
        16,
        SignalOp::Add,
        1,
    )
    .unwrap();
    let mut b = Backoff::new();
    while c
        .atomic(CtxId::DEFAULT, me, 16, AmoOp::Fetch, AmoWidth::W64, 0, 0)
        .unwrap()
        == 0
    {
        b.snooze();
    }
    let mut d = vec![0u8; 5000];
    c.get(CtxId::DEFAULT, me, 300_000, &mut d).unwrap();
    assert!(d.iter().all(|&x| x == 7));
    // Active messages with replies, served by the progress thread.
    let sum = Arc::new(AtomicU64::new(0));
    c.register_handler(
        FIRST_USER,
        Arc::new(|tok, m| {
            tok.reply_short(FIRST_USER + 1, &[m.args[0] + m.payload.len() as u32])
                .unwrap();
        }),
    )
    .unwrap();
    let s2 = sum.clone();
    c.register_handler(
        FIRST_USER + 1,
        Arc::new(move |_tok, m| {
            s2.fetch_add(m.args[0] as u64, Ordering::Relaxed);
        }),
    )
    .unwrap();
    c.barrier().unwrap();
    for i in 0..50u32 {
        c.am_request(next, Category::Medium, FIRST_USER, &[i], &[0; 100], 0)
            .unwrap();
    }
    c.quiet(CtxId::DEFAULT).unwrap();
    assert_eq!(
        sum.load(Ordering::Relaxed),
        (0..50).map(|i| i + 100).sum::<u64>()
    );
    let all = c.exchange(&[me as u8; 3]).unwrap();
    assert_eq!(all, (0..n).map(|p| vec![p as u8; 3]).collect::<Vec<_>>());
    c.finalize().unwrap();
}

#[test]
fn three_pes_on_loopback() {
    job(3, Settings::default(), exercise);
}

#[test]
fn three_pes_small_mtu_with_loss_duplication_and_reordering() {
    let s = Settings {
        ipv6_mtu: Some(1500),
        ipv6_impair: Some(Impair {
            loss: 5.0,
            dup: 1.0,
            reorder: 10.0,
            cut: None,
        }),
        ..Settings::default()
    };
    job(3, s, exercise);
}

#[test]
fn a_silent_peer_is_reported_by_name() {
    // PE 1 stops serving, and only then does PE 0 ask it for something:
    // without that order PE 1's progress thread could still answer the get
    // (as it once did under load). Channels, not sleeps, order the two;
    // every wait is bounded.
    let s = Settings {
        peer_timeout: Duration::from_millis(300),
        ..Settings::default()
    };
    let (gone_tx, gone_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let gone = (Mutex::new(gone_tx), Mutex::new(gone_rx));
    let done = (Mutex::new(done_tx), Mutex::new(done_rx));
    let limit = Duration::from_secs(30);
    job(2, s, move |c| {
        if c.rank() == 1 {
            // Vanish: stop serving without a word, and stay vanished (with
            // the bootstrap connection open) until PE 0 has seen it.
            c.stop_thread();
            gone.0.lock().unwrap().send(()).unwrap();
            done.1.lock().unwrap().recv_timeout(limit).unwrap();
            std::mem::forget(c);
            return;
        }
        gone.1.lock().unwrap().recv_timeout(limit).unwrap();
        let t = Instant::now();
        let mut buf = [0u8; 8];
        let e = c.get(CtxId::DEFAULT, 1, 0, &mut buf).unwrap_err();
        assert!(matches!(e, ConduitError::PeerFailed { pe: 1, .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(c.quiet(CtxId::DEFAULT).is_err());
        done.0.lock().unwrap().send(()).unwrap();
        std::mem::forget(c);
    });
}

/// A PE whose application thread polled the core from a wait loop (the
/// progress thread then naps off the socket) and then stops calling the
/// library, as a PE that computes does, still has its segment served: the
/// progress thread takes the socket over and answers a peer's gets. Without
/// the takeover the gets would wait for PE 1's next call, which comes only
/// after PE 0 has its answers (a channel orders the two), and the test
/// fails on its bound.
#[test]
fn a_pe_that_stops_polling_is_served_by_its_progress_thread() {
    let (busy_tx, busy_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let busy = (Mutex::new(busy_tx), Mutex::new(busy_rx));
    let done = (Mutex::new(done_tx), Mutex::new(done_rx));
    let limit = Duration::from_secs(20);
    job(2, Settings::default(), move |c| {
        if c.rank() == 1 {
            c.put(CtxId::DEFAULT, 1, 64, &[0x5a; 8]).unwrap();
            c.barrier().unwrap();
            // Poll as a wait loop of the layers above does, then compute.
            for _ in 0..10_000 {
                c.poll().unwrap();
            }
            busy.0.lock().unwrap().send(()).unwrap();
            done.1.lock().unwrap().recv_timeout(limit).unwrap();
            c.finalize().unwrap();
            return;
        }
        c.barrier().unwrap();
        busy.1.lock().unwrap().recv_timeout(limit).unwrap();
        for _ in 0..100 {
            let mut buf = [0u8; 8];
            c.get(CtxId::DEFAULT, 1, 64, &mut buf).unwrap();
            assert_eq!(buf, [0x5a; 8]);
        }
        done.0.lock().unwrap().send(()).unwrap();
        c.finalize().unwrap();
    });
}

#[test]
fn settings_parse_and_reject() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(a, _)| *a == k)
                .map(|(_, b)| b.to_string())
        }
    };
    let s = Settings::from_lookup(env(&[
        ("FSHMEM_IPV6_ADDR", "::1"),
        ("FSHMEM_IPV6_MTU", "1500"),
        ("FSHMEM_PEER_TIMEOUT", "2s"),
        ("FSHMEM_IPV6_IMPAIR", "loss=5,dup=1%,reorder=3"),
    ]))
    .unwrap();
    assert_eq!(s.ipv6_addr, Some(Ipv6Addr::LOCALHOST));
    assert_eq!(s.ipv6_mtu, Some(1500));
    assert_eq!(s.peer_timeout, Duration::from_secs(2));
    assert_eq!(
        s.ipv6_impair,
        Some(Impair {
            loss: 5.0,
            dup: 1.0,
            reorder: 3.0,
            cut: None,
        })
    );
    for bad in [
        ("FSHMEM_IPV6_ADDR", "1.2.3.4"),
        ("FSHMEM_IPV6_MTU", "100"),
        ("FSHMEM_PEER_TIMEOUT", "never"),
        ("FSHMEM_IPV6_IMPAIR", "loss=90"),
        ("FSHMEM_IPV6_PREFIX", "fd00::/200"),
    ] {
        let e = Settings::from_lookup(move |k: &str| (k == bad.0).then(|| bad.1.to_string()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(bad.0), "{e}");
    }
}

/// Runs `body` as every PE of an `n`-PE job on threads; each body also
/// gets a barrier of the threads (outside the conduit) for choreography.
fn job_with_barrier(
    n: usize,
    body: impl Fn(Ipv6Conduit, &std::sync::Barrier) + Send + Sync + 'static,
) {
    let sync = Arc::new(std::sync::Barrier::new(n));
    let body = Arc::new(body);
    job(n, Settings::default(), move |c| body(c, &sync));
}

#[test]
fn a_contexts_quiet_returns_while_another_waits_for_a_slow_target() {
    job_with_barrier(3, |c, sync| {
        let me = c.rank();
        let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + 3) as u8).collect();
        if me == 1 {
            // A slow target: PE 1's protocol core is held, so nothing it is
            // sent is served or acknowledged until it lets go.
            let held = c.hold_engine();
            sync.wait(); // 1: PE 1 is not serving
            sync.wait(); // 2: PE 0 checked the fast context
            drop(held);
        } else if me == 0 {
            sync.wait(); // 1
            let (slow, fast) = (c.ctx_create().unwrap(), c.ctx_create().unwrap());
            c.put(slow, 1, 4096, &big).unwrap();
            c.atomic(slow, 1, 128, AmoOp::Add, AmoWidth::W64, 5, 0)
                .unwrap();
            c.put(fast, 2, 4096, &big[..50_000]).unwrap();
            c.atomic(fast, 2, 128, AmoOp::Add, AmoWidth::W64, 9, 0)
                .unwrap();
            c.quiet(fast).unwrap();
            assert_eq!(c.outstanding(fast).unwrap(), 0);
            let stuck = c.outstanding(slow).unwrap();
            assert!(
                stuck >= 2,
                "{stuck} operations of the slow context outstanding"
            );
            let mut back = vec![0u8; 50_000];
            c.get(fast, 2, 4096, &mut back).unwrap();
            assert!(back == big[..50_000], "the fast context's put is complete");
            assert_eq!(
                c.atomic(fast, 2, 128, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                    .unwrap(),
                9
            );
            sync.wait(); // 2
            c.quiet(slow).unwrap();
            assert_eq!(c.outstanding(slow).unwrap(), 0);
            let mut back = vec![0u8; 100_000];
            c.get(slow, 1, 4096, &mut back).unwrap();
            assert!(back == big, "the slow context's put arrived whole");
            c.ctx_destroy(slow).unwrap();
            assert!(matches!(
                c.put(slow, 1, 0, &[1]),
                Err(ConduitError::NoContext { .. })
            ));
            assert!(c.ctx_destroy(CtxId::DEFAULT).is_err());
            c.ctx_destroy(fast).unwrap();
        } else {
            sync.wait(); // 1
            sync.wait(); // 2
        }
        c.barrier().unwrap();
        if me == 1 {
            assert_eq!(
                c.atomic(CtxId::DEFAULT, 1, 128, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                    .unwrap(),
                5
            );
        }
        c.barrier().unwrap();
        c.finalize().unwrap();
    });
}

#[test]
fn attached_over_another_segment_remote_puts_land_in_it() {
    // Each PE's segment is a memfd the test allocates, mapped here as well:
    // the conduit serves it (SegmentRequest::Over), as the off-node conduit
    // of a routed job serves the segment the on-node one allocated.
    let server = Server::start("[::1]:0".parse().unwrap(), 2, Duration::from_secs(20)).unwrap();
    let addr = server.addr().to_string();
    let hs: Vec<_> = (0..2)
        .map(|r| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let other = Segment::new(1 << 16).unwrap();
                let (fd, offset, len) = other.backing();
                let boot = Client::join(&addr, r, 2, Duration::from_secs(20)).unwrap();
                let over = SegmentRequest::Over(SegmentBacking { fd, offset, len });
                let c = Ipv6Conduit::attach_with(r, 2, over, Box::new(boot), &Settings::default())
                    .unwrap();
                assert_eq!(c.segment_len(), 1 << 16);
                assert_ne!(c.local_segment(), other.base());
                c.put(CtxId::DEFAULT, 1 - r, 256, &[r as u8 + 1; 64])
                    .unwrap();
                c.atomic(CtxId::DEFAULT, 1 - r, 8, AmoOp::Add, AmoWidth::W64, 7, 0)
                    .unwrap();
                c.barrier().unwrap();
                // SAFETY: both views are live mappings of the segment file;
                // the peer's writes completed before the barrier.
                let seen = unsafe { std::slice::from_raw_parts(other.base().add(256), 64) };
                assert_eq!(seen, &[2 - r as u8; 64]);
                // SAFETY: an aligned word of the other mapping, only
                // accessed atomically.
                let w =
                    unsafe { std::sync::atomic::AtomicU64::from_ptr(other.base().add(8).cast()) };
                assert_eq!(w.load(Ordering::Acquire), 7);
                c.finalize().unwrap();
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

/// `spec/conduit.md` §3: a put, put_nbi, non-fetching atomic,
/// put-with-signal and fence on a context other than the default one
/// return while another thread holds the PE's protocol core (they wait in
/// the context's queue), the thread that lets go of the core sends them
/// without anyone calling quiet, and a blocking get on another context
/// issued after them sees their data.
#[test]
fn a_contexts_puts_return_while_another_thread_holds_the_engine() {
    job(2, Settings::default(), |c| {
        if c.rank() == 0 {
            let ctx = c.ctx_create().unwrap();
            let big: Vec<u8> = (0..150_000u32).map(|i| (i * 11 + 5) as u8).collect();
            let (tx, rx) = std::sync::mpsc::channel();
            let held = c.hold_engine();
            std::thread::scope(|s| {
                let (c, big) = (&c, &big);
                let issuer = s.spawn(move || {
                    c.put(ctx, 1, 64, &[0xa5; 8]).unwrap();
                    c.put(ctx, 1, 8192, big).unwrap();
                    // SAFETY: `big` outlives the quiet below, unmodified.
                    unsafe { c.put_nbi(ctx, 1, 4096, big.as_ptr(), 1000) }.unwrap();
                    c.atomic(ctx, 1, 128, AmoOp::Add, AmoWidth::W64, 5, 0)
                        .unwrap();
                    c.put_signal(ctx, 1, 200_000, &[7; 3000], 136, SignalOp::Set, 1)
                        .unwrap();
                    c.fence(ctx).unwrap();
                    tx.send(()).unwrap();
                    // Waits for the core; issued after the queued puts.
                    let mut b = [0u8; 8];
                    c.get(CtxId::DEFAULT, 1, 64, &mut b).unwrap();
                    b
                });
                let returned = rx.recv_timeout(Duration::from_secs(20));
                let queued = c.shared.queued.load(Ordering::SeqCst);
                let pending = c.outstanding(ctx).unwrap();
                drop(held);
                assert!(
                    returned.is_ok(),
                    "the context's operations waited for the core another thread held"
                );
                assert!(
                    queued >= 6,
                    "{queued} commands queued while the core was held"
                );
                assert!(
                    pending >= 6,
                    "{pending} commands outstanding while the core was held"
                );
                let b = issuer.join().unwrap();
                assert_eq!(b, [0xa5; 8], "a later get on another context saw the put");
            });
            // Sent when the core was let go: the progress thread completes
            // them with nobody calling quiet.
            let start = Instant::now();
            while c.outstanding(ctx).unwrap() > 0 {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "the context's queued commands were not completed after the core was let \
                     go ({} outstanding)",
                    c.outstanding(ctx).unwrap()
                );
                std::thread::yield_now();
            }
            assert_eq!(c.shared.queued.load(Ordering::SeqCst), 0);
            c.quiet(ctx).unwrap();
            let mut back = vec![0u8; big.len()];
            c.get(ctx, 1, 8192, &mut back).unwrap();
            assert!(back == big, "the large put arrived exactly");
            let mut nbi = vec![0u8; 1000];
            c.get(ctx, 1, 4096, &mut nbi).unwrap();
            assert_eq!(&nbi[..], &big[..1000]);
            let mut sig = vec![0u8; 3000];
            c.get(ctx, 1, 200_000, &mut sig).unwrap();
            assert!(sig.iter().all(|&x| x == 7));
            let w = |off| {
                c.atomic(ctx, 1, off, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                    .unwrap()
            };
            assert_eq!((w(128), w(136)), (5, 1));
            c.ctx_destroy(ctx).unwrap();
        }
        c.barrier().unwrap();
        c.finalize().unwrap();
    });
}

/// The window the check after unlocking closes: a command queued after the
/// holder's last drain, while it still holds the core (the sender's
/// try_lock fails), is sent by the holder once it lets go, before its drop
/// returns. PE 0's progress thread is stopped, so that nobody else can
/// take the core and send it.
#[test]
fn a_command_queued_while_the_holder_lets_go_is_sent_by_the_holder() {
    job(2, Settings::default(), |c| {
        if c.rank() == 0 {
            c.stop_thread();
            let ctx = c.ctx_create().unwrap();
            std::thread::scope(|s| {
                let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
                let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
                let c = &c;
                let issuer = s.spawn(move || {
                    go_rx.recv_timeout(Duration::from_secs(20)).unwrap();
                    c.put(ctx, 1, 64, &[0x3c; 8]).unwrap();
                    done_tx.send(()).unwrap();
                });
                let held = c.hold_engine();
                crate::ctxq::BEFORE_UNLOCK.with_borrow_mut(|f| {
                    *f = Some(Box::new(move || {
                        go_tx.send(()).unwrap();
                        done_rx
                            .recv_timeout(Duration::from_secs(20))
                            .expect("the put returned while the core was held");
                    }))
                });
                drop(held);
                assert_eq!(
                    c.shared.queued.load(Ordering::SeqCst),
                    0,
                    "the put queued in the holder's last moment was left in its queue"
                );
                issuer.join().unwrap();
            });
            c.quiet(ctx).unwrap();
            let mut b = [0u8; 8];
            c.get(ctx, 1, 64, &mut b).unwrap();
            assert_eq!(b, [0x3c; 8]);
            c.ctx_destroy(ctx).unwrap();
        }
        c.barrier().unwrap();
        c.finalize().unwrap();
    });
}

/// Threads each on their own context (and one on the default context)
/// issue puts and atomics at once, contending for the core. Once they have
/// all returned nothing stays queued (the progress thread may hold the
/// core a moment longer, so this is awaited, bounded, without calling the
/// conduit), and after each context's quiet every byte and count is exact.
#[test]
fn threads_on_their_own_contexts_leave_nothing_queued_and_land_exactly() {
    job(2, Settings::default(), |c| {
        const THREADS: usize = 4;
        const ROUNDS: usize = 300;
        let value = |t: usize, i: usize| ((t as u64) << 32) | i as u64;
        let big =
            |t: usize, i: usize| -> Vec<u8> { (0..2000).map(|k| (k + 7 * i + t) as u8).collect() };
        if c.rank() == 0 {
            let ctxs: Vec<CtxId> = (0..THREADS)
                .map(|t| {
                    if t == 0 {
                        CtxId::DEFAULT
                    } else {
                        c.ctx_create().unwrap()
                    }
                })
                .collect();
            std::thread::scope(|s| {
                for (t, &ctx) in ctxs.iter().enumerate() {
                    let c = &c;
                    s.spawn(move || {
                        for i in 0..ROUNDS {
                            let at = 8 * (t * ROUNDS + i);
                            c.put(ctx, 1, at, &value(t, i).to_le_bytes()).unwrap();
                            c.atomic(ctx, 1, 65536 + 8 * t, AmoOp::Add, AmoWidth::W64, 1, 0)
                                .unwrap();
                            if i % 10 == 0 {
                                c.put(ctx, 1, 131072 + 4096 * t, &big(t, i)).unwrap();
                                c.fence(ctx).unwrap();
                            }
                        }
                    });
                }
            });
            let start = Instant::now();
            while c.shared.queued.load(Ordering::SeqCst) != 0 {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "{} commands were left in the contexts' queues",
                    c.shared.queued.load(Ordering::SeqCst)
                );
                std::thread::yield_now();
            }
            for &ctx in &ctxs {
                c.quiet(ctx).unwrap();
                assert_eq!(c.outstanding(ctx).unwrap(), 0);
            }
            for t in 0..THREADS {
                let mut w = vec![0u8; 8 * ROUNDS];
                c.get(CtxId::DEFAULT, 1, 8 * t * ROUNDS, &mut w).unwrap();
                for i in 0..ROUNDS {
                    let got = u64::from_le_bytes(w[8 * i..8 * i + 8].try_into().unwrap());
                    assert_eq!(got, value(t, i), "thread {t}, put {i}");
                }
                let n = c
                    .atomic(
                        CtxId::DEFAULT,
                        1,
                        65536 + 8 * t,
                        AmoOp::Fetch,
                        AmoWidth::W64,
                        0,
                        0,
                    )
                    .unwrap();
                assert_eq!(n, ROUNDS as u64);
                let mut v = vec![0u8; 2000];
                c.get(CtxId::DEFAULT, 1, 131072 + 4096 * t, &mut v).unwrap();
                assert!(v == big(t, ROUNDS - 10), "thread {t}'s last large put won");
            }
            for &ctx in &ctxs[1..] {
                c.ctx_destroy(ctx).unwrap();
            }
        }
        c.barrier().unwrap();
        c.finalize().unwrap();
    });
}

#[test]
fn a_core_that_no_thread_steps_is_reported_by_its_progress_thread() {
    job(2, Settings::default(), |c| {
        // This thread holds the core and steps nothing: the progress
        // thread must say so (once) within STALL_REPORT and a little.
        let held = c.hold_engine();
        let start = Instant::now();
        while !c.shared.stall_reported.load(Ordering::Relaxed)
            && start.elapsed() < progress::STALL_REPORT * 3
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let waited = start.elapsed();
        // The report names the holder: this thread, and the call here.
        let text = progress::stall_text(&c.core, &c.shared, waited, waited);
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() };
        drop(held);
        assert!(
            text.contains(&format!("thread {me} ")) && text.contains("ipv6/tests.rs:"),
            "the report does not name the holder (thread {me}, here): {text}"
        );
        assert!(
            c.shared.stall_reported.load(Ordering::Relaxed),
            "PE {}: a core held for {waited:?} was not reported",
            c.rank()
        );
        assert!(
            waited >= progress::STALL_REPORT / 2,
            "reported after {waited:?}"
        );
        JobBootstrap::barrier(&c).unwrap();
    });
}

#[test]
fn a_wait_by_the_thread_that_holds_the_core_fails_at_once_instead_of_spinning() {
    job(2, Settings::default(), |c| {
        let me = c.rank();
        let other = 1 - me;
        let ctx = c.ctx_create().unwrap();
        let held = c.hold_engine();
        // A put on a context queues while the core is held (here, by this
        // very thread); its quiet needs the core stepped, which nothing
        // can do while this thread holds it.
        c.put(ctx, other, 0, &[1u8; 64]).unwrap();
        let start = Instant::now();
        let r = c.quiet(ctx);
        // So does a blocking get, which would wait for the lock itself.
        let mut v = [0u8; 8];
        let g = c.get(CtxId::DEFAULT, other, 0, &mut v);
        let took = start.elapsed();
        drop(held);
        for (what, r) in [("quiet", r), ("get", g)] {
            let e = r.expect_err("a wait by the core's holder returned");
            assert!(
                e.to_string().contains("while holding its progress engine"),
                "PE {me}: {what}: {e}"
            );
        }
        assert!(
            took < Duration::from_secs(1),
            "PE {me}: failed after {took:?}"
        );
        // Once let go, the same operations work.
        c.quiet(ctx).unwrap();
        c.get(CtxId::DEFAULT, other, 0, &mut v).unwrap();
        assert_eq!(v, [1u8; 8]);
        c.ctx_destroy(ctx).unwrap();
        JobBootstrap::barrier(&c).unwrap();
    });
}
