//! Several PEs in one process (one thread each) on `tcp;ofi_rxm` over the
//! loopback interface, bootstrapped through an in-process rendezvous
//! server: contexts track their own completions, and a non-default
//! context's put path never waits for the core's lock another thread
//! holds.

use super::*;
use crate::bootstrap::rendezvous::{Client, Server};

/// Runs `body` as every PE of an `n`-PE job on threads; each body also
/// gets a barrier of the threads (outside the conduit) for choreography.
fn job(n: usize, body: impl Fn(OfiConduit, &std::sync::Barrier) + Send + Sync + 'static) {
    job_with(n, Atomics::Auto, body)
}

/// [`job`] with atomics as `atomics` says (`Am`: engine commands).
fn job_with(
    n: usize,
    atomics: Atomics,
    body: impl Fn(OfiConduit, &std::sync::Barrier) + Send + Sync + 'static,
) {
    let server = Server::start("[::1]:0".parse().unwrap(), n, Duration::from_secs(30)).unwrap();
    let addr = server.addr().to_string();
    let settings = Settings {
        ofi_provider: Some("tcp;ofi_rxm".to_string()),
        ofi_domain: Some("lo".to_string()),
        ofi_atomics: atomics,
        ..Settings::default()
    };
    let sync = Arc::new(std::sync::Barrier::new(n));
    let body = Arc::new(body);
    let hs: Vec<_> = (0..n)
        .map(|r| {
            let (addr, body, settings, sync) =
                (addr.clone(), body.clone(), settings.clone(), sync.clone());
            std::thread::spawn(move || {
                let boot = Client::join(&addr, r, n, Duration::from_secs(30)).unwrap();
                let c = OfiConduit::attach_with(
                    r,
                    n,
                    SegmentRequest::Own(1 << 20),
                    Box::new(boot),
                    &settings,
                )
                .unwrap();
                body(c, &sync);
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

#[test]
fn a_contexts_quiet_returns_while_another_waits_for_a_slow_target() {
    job(3, |c, sync| {
        let me = c.rank();
        // Longer than ofi_rxm's eager limit (so the put completes only
        // when the target's provider has taken it), short enough to be
        // copied and left to complete at quiet.
        let big: Vec<u8> = (0..BOUNCE_MAX as u32 - 1000)
            .map(|i| (i * 7 + 3) as u8)
            .collect();
        // ofi_rxm connects to a peer on first use, which needs the peer's
        // progress: PE 0 reaches both peers while they progress.
        if me == 0 {
            for pe in [1, 2] {
                c.put(CtxId::DEFAULT, pe, 0, &[1; 8]).unwrap();
            }
            c.quiet(CtxId::DEFAULT).unwrap();
        }
        c.barrier().unwrap();
        if me == 1 {
            // A slow target: PE 1's core is held, so neither its progress
            // thread nor anything else drives its endpoint (the provider
            // progresses manually) until it lets go.
            let held = c.lock();
            sync.wait(); // 1: PE 1 is not progressing
            sync.wait(); // 2: PE 0 checked the fast context
            drop(held);
        } else if me == 0 {
            sync.wait(); // 1
            let (slow, fast) = (c.ctx_create().unwrap(), c.ctx_create().unwrap());
            assert_ne!(slow, fast);
            c.put(slow, 1, 4096, &big).unwrap();
            c.atomic(slow, 1, 128, AmoOp::Add, AmoWidth::W64, 5, 0)
                .unwrap();
            c.put(fast, 2, 4096, &big[..30_000]).unwrap();
            c.atomic(fast, 2, 128, AmoOp::Add, AmoWidth::W64, 9, 0)
                .unwrap();
            c.quiet(fast).unwrap();
            assert_eq!(c.outstanding(fast).unwrap(), 0);
            let stuck = c.outstanding(slow).unwrap();
            assert_eq!(
                stuck, 2,
                "the slow context's put and atomic are outstanding"
            );
            let mut back = vec![0u8; 30_000];
            c.get(fast, 2, 4096, &mut back).unwrap();
            assert!(back == big[..30_000], "the fast context's put is complete");
            assert_eq!(
                c.atomic(fast, 2, 128, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                    .unwrap(),
                9
            );
            // A fence orders the fast context's puts without waiting for
            // the slow one; so does its quiet.
            c.put(fast, 2, 0, &[7; 8]).unwrap();
            c.fence(fast).unwrap();
            c.put(fast, 2, 0, &[8; 8]).unwrap();
            c.quiet(fast).unwrap();
            assert_eq!(c.outstanding(fast).unwrap(), 0);
            assert_eq!(c.outstanding(slow).unwrap(), 2);
            let mut w = [0u8; 8];
            c.get(fast, 2, 0, &mut w).unwrap();
            assert_eq!(w, [8; 8], "the put after the fence landed last");
            sync.wait(); // 2
            c.quiet(slow).unwrap();
            assert_eq!(c.outstanding(slow).unwrap(), 0);
            let mut back = vec![0u8; big.len()];
            c.get(slow, 1, 4096, &mut back).unwrap();
            assert!(back == big, "the slow context's put arrived whole");
            c.ctx_destroy(slow).unwrap();
            assert!(matches!(
                c.put(slow, 1, 0, &[1]),
                Err(ConduitError::NoContext { .. })
            ));
            assert!(matches!(c.quiet(slow), Err(ConduitError::NoContext { .. })));
            assert!(c.ctx_destroy(CtxId::DEFAULT).is_err());
            c.ctx_destroy(fast).unwrap();
        } else {
            sync.wait(); // 1
            sync.wait(); // 2
        }
        c.barrier().unwrap();
        let mut word = [0u8; 8];
        c.get(CtxId::DEFAULT, me, 128, &mut word).unwrap();
        let want = [0, 5, 9][me];
        assert_eq!(u64::from_ne_bytes(word), want, "PE {me}'s word");
        c.barrier().unwrap();
        c.finalize().unwrap();
    });
}

/// Loading libfabric (whose Debian build pulls in libinfinipath, which
/// installs `exit(1)` handlers at load) leaves the process's signal
/// dispositions as they were: no handler of the library's is left on
/// SIGTERM, SIGINT, SIGILL or SIGABRT. The test harness installs none, so
/// each is the default action, or ignored where the suite was started in
/// the background by a shell without job control (which ignores SIGINT in
/// such commands).
#[test]
fn loading_libfabric_leaves_signal_handlers_alone() {
    api::api().expect("libfabric is installed for the tests");
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGILL, libc::SIGABRT] {
        // SAFETY: `sigaction` is plain old data, valid when zeroed.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a NULL new action only reads the current one.
        let r = unsafe { libc::sigaction(sig, std::ptr::null(), &mut now) };
        assert_eq!(r, 0);
        assert!(
            now.sa_sigaction == libc::SIG_DFL || now.sa_sigaction == libc::SIG_IGN,
            "signal {sig} has a handler installed: {:#x}",
            now.sa_sigaction
        );
    }
}

/// `spec/conduit.md` §3: a put (short, and longer than [`BOUNCE_MAX`]),
/// put_nbi, non-fetching atomic, put-with-signal and fence on a context
/// other than the default one return while another thread holds the core's
/// lock (they wait in the context's queue); the thread that lets go of the
/// lock issues them, the progress thread completes them with nobody calling
/// quiet (the fences' later items included), and a blocking get on another
/// context issued after them sees their data.
#[test]
fn a_contexts_puts_return_while_another_thread_holds_the_engine() {
    job(2, |c, _| {
        if c.rank() == 0 {
            // ofi_rxm connects on first use, with the peer progressing.
            c.put(CtxId::DEFAULT, 1, 0, &[1; 8]).unwrap();
            c.quiet(CtxId::DEFAULT).unwrap();
            let ctx = c.ctx_create().unwrap();
            let big: Vec<u8> = (0..150_000u32).map(|i| (i * 11 + 5) as u8).collect();
            let (tx, rx) = std::sync::mpsc::channel();
            let held = c.lock();
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
                    // Waits for the lock; issued after the queued puts.
                    let mut b = [0u8; 8];
                    c.get(CtxId::DEFAULT, 1, 64, &mut b).unwrap();
                    b
                });
                let returned = rx.recv_timeout(Duration::from_secs(20));
                let queued = c.sh.queued.load(Ordering::SeqCst);
                let held_bytes = c.sh.held.load(Ordering::SeqCst);
                drop(held);
                assert!(
                    returned.is_ok(),
                    "the context's operations waited for the lock another thread held"
                );
                // Three puts, a put_nbi, two atomics, two fences.
                assert!(queued >= 8, "{queued} items queued while the lock was held");
                assert_eq!(held_bytes, 8 + 150_000 + 3000, "the puts' copies are held");
                assert_eq!(
                    c.sh.queued.load(Ordering::SeqCst),
                    0,
                    "the holder took every queued item as it let go"
                );
                let b = issuer.join().unwrap();
                assert_eq!(b, [0xa5; 8], "a later get on another context saw the put");
            });
            // Issued when the lock was let go: the progress thread
            // completes them (and what the fences held back).
            let start = Instant::now();
            while c.outstanding(ctx).unwrap() > 0 {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "the context's queued operations were not completed after the lock was let \
                     go ({} outstanding)",
                    c.outstanding(ctx).unwrap()
                );
                std::thread::yield_now();
            }
            assert_eq!(c.sh.held.load(Ordering::SeqCst), 0, "the copies were freed");
            c.quiet(ctx).unwrap();
            let mut back = vec![0u8; big.len()];
            c.get(ctx, 1, 8192, &mut back).unwrap();
            assert!(back == big, "the long put arrived exactly");
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

/// The window the look after unlocking closes: a put queued after the
/// holder's last drain, while it still holds the lock (the sender's
/// try_lock fails), is issued by the holder once it lets go, before its
/// drop returns. PE 0's progress thread is stopped, so that nobody else can
/// take the lock and issue it.
#[test]
fn a_command_queued_while_the_holder_lets_go_is_sent_by_the_holder() {
    job(2, |c, _| {
        if c.rank() == 0 {
            c.put(CtxId::DEFAULT, 1, 0, &[1; 8]).unwrap();
            c.quiet(CtxId::DEFAULT).unwrap();
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
                let held = c.lock();
                crate::ctxq::BEFORE_UNLOCK.with_borrow_mut(|f| {
                    *f = Some(Box::new(move || {
                        go_tx.send(()).unwrap();
                        done_rx
                            .recv_timeout(Duration::from_secs(20))
                            .expect("the put returned while the lock was held");
                    }))
                });
                drop(held);
                assert_eq!(
                    c.sh.queued.load(Ordering::SeqCst),
                    0,
                    "the put queued in the holder's last moment was left in its queue"
                );
                assert_eq!(
                    c.core.lock().unwrap().ctx(ctx.0).unwrap().pending(),
                    1,
                    "the holder took the put into the core"
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
/// issue puts, atomics and fences at once, contending for the core's lock.
/// Once they have all returned nothing stays queued (the progress thread
/// may hold the lock a moment longer, so this is awaited, bounded, without
/// calling the conduit), and after each context's quiet every byte and
/// count is exact; a context's put after its fence lands after the one
/// before. With the provider's atomics and with atomics as engine
/// commands.
#[test]
fn threads_on_their_own_contexts_leave_nothing_queued_and_land_exactly() {
    for atomics in [Atomics::Auto, Atomics::Am] {
        job_with(2, atomics, threads_on_their_own_contexts);
    }
}

fn threads_on_their_own_contexts(c: OfiConduit, _: &std::sync::Barrier) {
    const THREADS: usize = 4;
    const ROUNDS: usize = 300;
    let value = |t: usize, i: usize| ((t as u64) << 32) | i as u64;
    let big =
        |t: usize, i: usize| -> Vec<u8> { (0..2000).map(|k| (k + 7 * i + t) as u8).collect() };
    if c.rank() == 0 {
        c.put(CtxId::DEFAULT, 1, 0, &[1; 8]).unwrap();
        c.quiet(CtxId::DEFAULT).unwrap();
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
        while c.sh.queued.load(Ordering::SeqCst) != 0 {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{} items were left in the contexts' queues",
                c.sh.queued.load(Ordering::SeqCst)
            );
            std::thread::yield_now();
        }
        for &ctx in &ctxs {
            c.quiet(ctx).unwrap();
            assert_eq!(c.outstanding(ctx).unwrap(), 0);
        }
        assert_eq!(c.sh.held.load(Ordering::SeqCst), 0, "the copies were freed");
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
            assert_eq!(n, ROUNDS as u64, "thread {t}'s atomics");
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
}

/// Back-pressure (`spec/conduit.md` §3): while another thread holds the
/// core's lock, a context's puts are queued with their copies until the
/// bytes held reach [`queue::HELD_BYTES_MAX`]; the next put waits for the
/// lock and goes as a default context's does, after the queued ones.
#[test]
fn past_the_bound_on_held_copies_a_contexts_put_waits_for_the_lock() {
    job(2, |c, _| {
        if c.rank() == 0 {
            c.put(CtxId::DEFAULT, 1, 0, &[1; 8]).unwrap();
            c.quiet(CtxId::DEFAULT).unwrap();
            let ctx = c.ctx_create().unwrap();
            let piece = 64 << 10;
            let fill = (queue::HELD_BYTES_MAX / piece as u64) as usize;
            let (tx, rx) = std::sync::mpsc::channel();
            let held = c.lock();
            std::thread::scope(|s| {
                let c = &c;
                let issuer = s.spawn(move || {
                    for i in 0..fill {
                        c.put(ctx, 1, 0, &vec![i as u8; piece]).unwrap();
                    }
                    tx.send("filled").unwrap();
                    c.put(ctx, 1, 512 << 10, &[0x5a; 4096]).unwrap();
                    tx.send("past the bound").unwrap();
                });
                let filled = rx.recv_timeout(Duration::from_secs(20));
                let (queued, bytes) = (
                    c.sh.queued.load(Ordering::SeqCst),
                    c.sh.held.load(Ordering::SeqCst),
                );
                // Bounded: a put that does not wait returns at once.
                let early = rx.recv_timeout(Duration::from_millis(300));
                drop(held);
                assert_eq!(
                    filled,
                    Ok("filled"),
                    "the puts within the bound were queued"
                );
                assert_eq!(queued, fill as i64);
                assert_eq!(bytes, queue::HELD_BYTES_MAX);
                assert!(
                    early.is_err(),
                    "the put past the bound returned while another thread held the lock"
                );
                assert_eq!(
                    rx.recv_timeout(Duration::from_secs(20)),
                    Ok("past the bound")
                );
                issuer.join().unwrap();
            });
            c.quiet(ctx).unwrap();
            assert_eq!(c.sh.held.load(Ordering::SeqCst), 0, "the copies were freed");
            let mut b = vec![0u8; 4096];
            c.get(ctx, 1, 512 << 10, &mut b).unwrap();
            assert!(b.iter().all(|&x| x == 0x5a));
            c.ctx_destroy(ctx).unwrap();
        }
        c.barrier().unwrap();
        c.finalize().unwrap();
    });
}
