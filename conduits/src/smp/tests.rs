//! In-process tests: several PEs of one job as threads of this process.

use super::*;
use gasnet_core::handlers::FIRST_USER;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn job(rank: usize, size: usize, id: &str) -> JobEnv {
    JobEnv {
        rank,
        size,
        job_id: id.to_string(),
        conduit: crate::kinds::ConduitKind::Smp,
        bootstrap: crate::bootstrap::Service::Missing,
    }
}

fn unique_id(tag: &str) -> String {
    format!(
        "t{}x{}{tag}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs `f` on `n` PEs (threads) of one fresh job.
fn run_job<T: Send>(n: usize, seg: usize, f: impl Fn(&SmpConduit) -> T + Sync) -> Vec<T> {
    let id = unique_id("j");
    let out = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|r| {
                let (id, f) = (&id, &f);
                s.spawn(move || {
                    let c = SmpConduit::attach_len(&job(r, n, id), seg).unwrap();
                    let v = f(&c);
                    c.finalize().unwrap();
                    v
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        job_files(&id).is_empty(),
        "job files left: {:?}",
        job_files(&id)
    );
    out
}

#[test]
fn singleton_put_get_atomic() {
    run_job(1, 4096, |c| {
        assert_eq!((c.rank(), c.size(), c.segment_len()), (0, 1, 4096));
        c.put(CtxId::DEFAULT, 0, 8, &[1, 2, 3]).unwrap();
        let mut b = [0u8; 3];
        c.get(CtxId::DEFAULT, 0, 8, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3]);
        assert_eq!(
            c.atomic(CtxId::DEFAULT, 0, 16, AmoOp::FetchAdd, AmoWidth::W64, 5, 0)
                .unwrap(),
            0
        );
        assert_eq!(
            c.atomic(CtxId::DEFAULT, 0, 16, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                .unwrap(),
            5
        );
        assert!(matches!(
            c.atomic(CtxId::DEFAULT, 0, 18, AmoOp::Fetch, AmoWidth::W32, 0, 0),
            Err(ConduitError::Misaligned { align: 4, .. })
        ));
        assert!(matches!(
            c.put(CtxId::DEFAULT, 0, 4090, &[0; 8]),
            Err(ConduitError::OutOfSegment { .. })
        ));
        assert!(matches!(
            c.put(CtxId::DEFAULT, 1, 0, &[0]),
            Err(ConduitError::PeOutOfRange { .. })
        ));
        assert_eq!(c.exchange(b"solo").unwrap(), vec![b"solo".to_vec()]);
    });
}

#[test]
fn all_pairs_puts_atomics_exchange() {
    const N: usize = 4;
    let res = run_job(N, 1 << 16, |c| {
        let me = c.rank();
        for pe in 0..N {
            c.put(CtxId::DEFAULT, pe, 64 * me, &[me as u8 + 1; 64])
                .unwrap();
            c.atomic(
                CtxId::DEFAULT,
                pe,
                8192,
                AmoOp::Add,
                AmoWidth::W64,
                1 << me,
                0,
            )
            .unwrap();
            c.atomic(
                CtxId::DEFAULT,
                pe,
                8200,
                AmoOp::FetchAdd,
                AmoWidth::W32,
                1,
                0,
            )
            .unwrap();
        }
        c.barrier().unwrap();
        for src in 0..N {
            let mut b = [0u8; 64];
            c.get(CtxId::DEFAULT, me, 64 * src, &mut b).unwrap();
            assert_eq!(b, [src as u8 + 1; 64]);
        }
        let all = c.exchange(format!("pe{me}").as_bytes()).unwrap();
        (
            c.atomic(CtxId::DEFAULT, me, 8192, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                .unwrap(),
            c.atomic(CtxId::DEFAULT, me, 8200, AmoOp::Fetch, AmoWidth::W32, 0, 0)
                .unwrap(),
            all,
        )
    });
    for (sum, cnt, all) in res {
        assert_eq!(sum, (1 << N) - 1);
        assert_eq!(cnt, N as u64);
        assert_eq!(
            all,
            (0..N)
                .map(|r| format!("pe{r}").into_bytes())
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn am_request_reply_storm_does_not_deadlock() {
    // Every PE floods every PE (itself included) with more requests than a
    // ring holds; each request is answered; all replies must arrive.
    const N: usize = 3;
    const PER: u32 = 200;
    run_job(N, 1 << 16, |c| {
        let got = Arc::new(AtomicUsize::new(0));
        let sum = Arc::new(AtomicUsize::new(0));
        c.register_handler(
            FIRST_USER,
            Arc::new(|tok, m| {
                let s: u32 = m.payload.iter().map(|&b| b as u32).sum();
                tok.reply_short(FIRST_USER + 1, &[m.args[0], s]).unwrap();
            }),
        )
        .unwrap();
        let (g, s) = (got.clone(), sum.clone());
        c.register_handler(
            FIRST_USER + 1,
            Arc::new(move |_tok, m| {
                g.fetch_add(1, Ordering::Relaxed);
                s.fetch_add(m.args[1] as usize, Ordering::Relaxed);
            }),
        )
        .unwrap();
        c.barrier().unwrap();
        for i in 0..PER {
            for pe in 0..N {
                c.am_request(pe, Category::Medium, FIRST_USER, &[i], &[1, 2, 3], 0)
                    .unwrap();
            }
        }
        let mut b = Backoff::new();
        while got.load(Ordering::Relaxed) < N * PER as usize {
            c.poll().unwrap();
            b.snooze();
        }
        assert_eq!(sum.load(Ordering::Relaxed), 6 * N * PER as usize);
        c.barrier().unwrap();
    });
}

#[test]
fn long_am_lands_in_segment() {
    run_job(2, 1 << 17, |c| {
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        c.register_handler(
            FIRST_USER,
            Arc::new(move |_t, m| {
                assert_eq!(m.offset, 4096);
                assert!(m.payload.iter().all(|&b| b == 0xab));
                s.store(m.payload.len(), Ordering::Release);
            }),
        )
        .unwrap();
        c.barrier().unwrap();
        let peer = 1 - c.rank();
        c.am_request(peer, Category::Long, FIRST_USER, &[], &[0xab; 65536], 4096)
            .unwrap();
        let mut b = Backoff::new();
        while seen.load(Ordering::Acquire) == 0 {
            c.poll().unwrap();
            b.snooze();
        }
        assert_eq!(seen.load(Ordering::Acquire), 65536);
        c.barrier().unwrap();
    });
}

#[test]
fn put_signal_orders_data_before_signal() {
    run_job(2, 1 << 16, |c| {
        if c.rank() == 0 {
            for round in 1..=200u64 {
                c.put_signal(
                    CtxId::DEFAULT,
                    1,
                    0,
                    &round.to_le_bytes().repeat(64),
                    4096,
                    SignalOp::Set,
                    round,
                )
                .unwrap();
                // Wait for the ack before the next round.
                let mut b = Backoff::new();
                while c
                    .atomic(CtxId::DEFAULT, 0, 8192, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                    .unwrap()
                    != round
                {
                    b.snooze();
                }
            }
        } else {
            for round in 1..=200u64 {
                let mut b = Backoff::new();
                while c
                    .atomic(CtxId::DEFAULT, 1, 4096, AmoOp::Fetch, AmoWidth::W64, 0, 0)
                    .unwrap()
                    != round
                {
                    b.snooze();
                }
                let mut buf = [0u8; 512];
                c.get(CtxId::DEFAULT, 1, 0, &mut buf).unwrap();
                assert_eq!(buf.to_vec(), round.to_le_bytes().repeat(64));
                c.atomic(CtxId::DEFAULT, 0, 8192, AmoOp::Set, AmoWidth::W64, round, 0)
                    .unwrap();
            }
        }
        c.barrier().unwrap();
    });
}

#[test]
fn mismatched_segment_len_is_refused() {
    let id = unique_id("m");
    std::thread::scope(|s| {
        let a = s.spawn(|| SmpConduit::attach_len(&job(0, 2, &id), 4096).map(|_| ()));
        let b = s.spawn(|| SmpConduit::attach_len(&job(1, 2, &id), 8192).map(|_| ()));
        let e = b.join().unwrap().unwrap_err().to_string();
        assert!(e.contains("8192") && e.contains("4096"), "{e}");
        // PE 0 waits for PE 1, which gave up: it must report PE 1.
        match a.join().unwrap() {
            Err(ConduitError::PeerFailed { pe: 1, .. }) => {}
            other => panic!("expected PE 1 to be reported, got {other:?}"),
        }
    });
    remove_job_files(&id);
}

#[test]
fn peer_that_left_fails_the_barrier() {
    let id = unique_id("f");
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|r| {
                let id = &id;
                s.spawn(move || {
                    let c = SmpConduit::attach_len(&job(r, 2, id), 4096)?;
                    if r == 1 {
                        drop(c); // leaves without finalize
                        return Ok(());
                    }
                    c.barrier()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results[1].is_ok());
    match &results[0] {
        Err(ConduitError::PeerFailed { pe: 1, .. }) => {}
        other => panic!("expected PE 1 to be reported, got {other:?}"),
    }
    assert!(job_files(&id).is_empty());
}

/// PE 2 leaves because a PE of another host (job rank 9 of a routed job)
/// failed; PE 1 finds it gone, records the same PE and leaves; PE 0 finds
/// PE 1 gone and names it (as its record holds PE 9, the router's `lift`
/// then names PE 9) and records PE 9 too.
#[test]
fn a_pe_of_another_host_recorded_as_a_cause_is_followed_and_passed_on() {
    let id = unique_id("o");
    let results: Vec<(Result<()>, Option<usize>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|r| {
                let id = &id;
                s.spawn(move || {
                    let c = SmpConduit::attach_len(&job(r, 3, id), 4096).unwrap();
                    if r == 2 {
                        c.note_cause(Cause::OffNode(9));
                        c.note_cause(Cause::OffNode(8));
                        return (Ok(()), c.off_node_cause(2));
                    }
                    if r == 0 {
                        // Once PE 1 has left too.
                        while c.ctl.state(1).load(Ordering::Acquire) == state::ATTACHED {
                            std::thread::yield_now();
                        }
                    }
                    let e = c.barrier();
                    let named = match &e {
                        Err(ConduitError::PeerFailed { pe, .. }) => c.off_node_cause(*pe),
                        _ => None,
                    };
                    let mine = c.ctl.cause(r);
                    (e, named.filter(|_| mine == Some(Cause::OffNode(9))))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results[2], (Ok(()), Some(9)), "the first cause stays");
    assert!(
        matches!(
            results[1],
            (Err(ConduitError::PeerFailed { pe: 2, .. }), Some(9))
        ),
        "{:?}",
        results[1]
    );
    assert!(
        matches!(
            results[0],
            (Err(ConduitError::PeerFailed { pe: 1, .. }), Some(9))
        ),
        "{:?}",
        results[0]
    );
    assert!(job_files(&id).is_empty());
}

#[test]
fn stale_files_give_a_clear_error() {
    let id = unique_id("s");
    let path = job_file(&id, "ctl");
    std::fs::write(&path, b"x").unwrap();
    let e = SmpConduit::attach_len(&job(0, 1, &id), 64)
        .unwrap_err()
        .to_string();
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(remove_job_files(&id), 1);
}

#[test]
fn job_files_match_only_this_job() {
    let id = unique_id("k");
    let other = format!("{id}-1");
    let mine = [job_file(&id, "3"), job_file(&id, "ctl")];
    let theirs = [job_file(&other, "ctl"), job_file(&other, "0")];
    for p in mine.iter().chain(&theirs) {
        std::fs::write(p, b"").unwrap();
    }
    assert_eq!(job_files(&id), mine.to_vec());
    assert_eq!(remove_job_files(&id), 2);
    assert_eq!(remove_job_files(&other), 2);
}

#[test]
fn a_pe_whose_process_ended_before_it_attached_is_named_at_once() {
    let id = unique_id("d");
    // A pid that no process has any more: a child that has been reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id() as u64;
    child.wait().unwrap();
    let started = Instant::now();
    let r = std::thread::scope(|s| {
        let pe0 = s.spawn(|| SmpConduit::attach_len(&job(0, 2, &id), 4096).map(|_| ()));
        // PE 1 maps the control block and records its pid, as a process
        // does before it attaches, and then its process is gone.
        let layout = Layout::new(2);
        let region = join::open_published_ctl(
            &job_file(&id, "ctl"),
            layout,
            Instant::now() + BOOTSTRAP_TIMEOUT,
        )
        .unwrap();
        // SAFETY: the mapping is page aligned, `layout.total` long, and
        // outlives the view (both end with this closure).
        let c = unsafe { Ctl::at(region.ptr(), layout) };
        c.pid(1).store(dead, Ordering::Relaxed);
        pe0.join().unwrap()
    });
    match r {
        Err(ConduitError::PeerFailed { pe: 1, reason }) => {
            assert!(reason.contains("ended before it attached"), "{reason}");
        }
        other => panic!("expected PE 1 to be reported, got {other:?}"),
    }
    assert!(
        started.elapsed() < BOOTSTRAP_TIMEOUT / 2,
        "found only after {:?}",
        started.elapsed()
    );
    remove_job_files(&id);
}
