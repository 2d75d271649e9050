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
                let c = Ipv6Conduit::attach_with(r, n, 1 << 20, Box::new(boot), settings).unwrap();
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
    c.put(next, 4096, &big).unwrap();
    for _ in 0..100 {
        c.atomic(0, 0, AmoOp::Add, AmoWidth::W64, 1, 0).unwrap();
        c.atomic(next, 8, AmoOp::FetchAdd, AmoWidth::W32, 1, 0)
            .unwrap();
    }
    c.barrier().unwrap();
    let prev = (me + n - 1) % n;
    let mut got = vec![0u8; 200_000];
    c.get(me, 4096, &mut got).unwrap();
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, &b)| b == (i * 13 + prev) as u8)
    );
    let mut remote = vec![0u8; 200_000];
    c.get(next, 4096, &mut remote).unwrap();
    assert!(
        remote
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i * 13 + me) as u8)
    );
    let total = c.atomic(0, 0, AmoOp::Fetch, AmoWidth::W64, 0, 0).unwrap();
    assert_eq!(total, 100 * n as u64);
    let mine = c.atomic(me, 8, AmoOp::Fetch, AmoWidth::W32, 0, 0).unwrap();
    assert_eq!(mine, 100);
    // Non-blocking get into a private buffer, and into the segment.
    let mut nb = vec![0u8; 10_000];
    // SAFETY: `nb` outlives the quiet below and is not touched before it.
    unsafe { c.get_nbi(next, 4096, nb.as_mut_ptr(), nb.len()).unwrap() };
    // SAFETY: the destination lies in our own segment, unused otherwise.
    unsafe {
        c.get_nbi(next, 4096, c.local_segment().add(600_000), 10_000)
            .unwrap()
    };
    c.quiet().unwrap();
    assert_eq!(&nb[..], &big[..10_000]);
    // SAFETY: 10_000 bytes of our segment at 600_000, written by the get.
    let seg = unsafe { std::slice::from_raw_parts(c.local_segment().add(600_000), 10_000) };
    assert_eq!(seg, &big[..10_000]);
    // Put-with-signal: data visible once the signal is.
    c.put_signal(next, 300_000, &[7u8; 5000], 16, SignalOp::Add, 1)
        .unwrap();
    let mut b = Backoff::new();
    while c.atomic(me, 16, AmoOp::Fetch, AmoWidth::W64, 0, 0).unwrap() == 0 {
        b.snooze();
    }
    let mut d = vec![0u8; 5000];
    c.get(me, 300_000, &mut d).unwrap();
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
    c.quiet().unwrap();
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
        mtu: Some(1500),
        impair: Some(Impair {
            loss: 5.0,
            dup: 1.0,
            reorder: 10.0,
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
        peer_timeout: Some(Duration::from_millis(300)),
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
        let e = c.get(1, 0, &mut buf).unwrap_err();
        assert!(matches!(e, ConduitError::PeerFailed { pe: 1, .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert!(c.quiet().is_err());
        done.0.lock().unwrap().send(()).unwrap();
        std::mem::forget(c);
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
    assert_eq!(s.addr, Some(Ipv6Addr::LOCALHOST));
    assert_eq!(s.mtu, Some(1500));
    assert_eq!(s.peer_timeout, Some(Duration::from_secs(2)));
    assert_eq!(
        s.impair,
        Some(Impair {
            loss: 5.0,
            dup: 1.0,
            reorder: 3.0
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
