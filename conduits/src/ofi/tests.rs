//! Several PEs in one process (one thread each) on `tcp;ofi_rxm` over the
//! loopback interface, bootstrapped through an in-process rendezvous
//! server: contexts track their own completions.

use super::*;
use crate::bootstrap::rendezvous::{Client, Server};

/// Runs `body` as every PE of an `n`-PE job on threads; each body also
/// gets a barrier of the threads (outside the conduit) for choreography.
fn job(n: usize, body: impl Fn(OfiConduit, &std::sync::Barrier) + Send + Sync + 'static) {
    let server = Server::start("[::1]:0".parse().unwrap(), n, Duration::from_secs(30)).unwrap();
    let addr = server.addr().to_string();
    let settings = Settings {
        ofi_provider: Some("tcp;ofi_rxm".to_string()),
        ofi_domain: Some("lo".to_string()),
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
            let held = lock(&c.core);
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
            // A fence is its context's quiet, and also leaves the slow one.
            c.put(fast, 2, 0, &[7; 8]).unwrap();
            c.fence(fast).unwrap();
            assert_eq!(c.outstanding(fast).unwrap(), 0);
            assert_eq!(c.outstanding(slow).unwrap(), 2);
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
