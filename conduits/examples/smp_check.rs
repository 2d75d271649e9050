//! A conduit-level SPMD check, run by `oshrun -n N smp_check [rounds]`:
//! puts, gets, atomics, put-with-signal, active messages (Short, Medium,
//! Long, request and reply), barriers and exchange between all PEs, with
//! exact result checks. Prints `smp_check: PE r of n ok` and exits 0, or
//! names the first mismatch and exits 1.

use conduits::SignalOp;
use conduits::prelude::*;
use conduits::wait::Backoff;
use conduits::{AmoOp, AmoWidth, AnyConduit, Category, JobEnv, SegmentRequest, Settings};
use gasnet_core::handlers::FIRST_USER;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

const SEG: usize = 1 << 20;
// Segment map (byte offsets).
const PUT_AREA: usize = 0; // 64 bytes per source PE
const COUNTER: usize = 64 * 1024; // u64 on PE 0
const W32: usize = COUNTER + 8; // u32 on every PE
const SIGNAL: usize = COUNTER + 64; // u64 put-signal word
const SIG_DATA: usize = COUNTER + 128; // 256 bytes
const LONG_AREA: usize = 128 * 1024; // 4 KiB per source PE

fn fail(what: String) -> ! {
    conduits::report!("smp_check: MISMATCH: {what}");
    std::process::exit(1)
}

macro_rules! check {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            fail(format!($($fmt)*));
        }
    };
}

fn main() {
    let rounds: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("rounds must be a number"))
        .unwrap_or(50);
    let job = JobEnv::from_env().unwrap_or_else(|e| fail(format!("{e}")));
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(SEG), &settings)
        .unwrap_or_else(|e| fail(format!("attach: {e}")));
    let (me, n) = (c.rank(), c.size());
    let ok = |r: conduits::Result<()>| r.unwrap_or_else(|e| fail(format!("PE {me}: {e}")));

    // Puts into every PE, then gets back.
    for pe in 0..n {
        let data: Vec<u8> = (0..64).map(|i| (me * 7 + pe + i) as u8).collect();
        ok(c.put(CtxId::DEFAULT, pe, PUT_AREA + 64 * me, &data));
    }
    ok(c.quiet(CtxId::DEFAULT));
    ok(c.barrier());
    for src in 0..n {
        let mut got = [0u8; 64];
        ok(c.get(CtxId::DEFAULT, me, PUT_AREA + 64 * src, &mut got));
        let want: Vec<u8> = (0..64).map(|i| (src * 7 + me + i) as u8).collect();
        check!(
            got[..] == want[..],
            "PE {me}: put from PE {src} reads {got:?}"
        );
        let peer = (me + 1) % n;
        ok(c.get(CtxId::DEFAULT, peer, PUT_AREA + 64 * src, &mut got));
        let want: Vec<u8> = (0..64).map(|i| (src * 7 + peer + i) as u8).collect();
        check!(
            got[..] == want[..],
            "PE {me}: get from PE {peer} of PE {src}'s put"
        );
    }

    // Atomics: a barrier-separated counter on PE 0, 32-bit adds on everyone.
    for round in 0..rounds {
        ok(
            c.atomic(CtxId::DEFAULT, 0, COUNTER, AmoOp::Add, AmoWidth::W64, 1, 0)
                .map(|_| ()),
        );
        for pe in 0..n {
            ok(c.atomic(
                CtxId::DEFAULT,
                pe,
                W32,
                AmoOp::FetchAdd,
                AmoWidth::W32,
                1,
                0,
            )
            .map(|_| ()));
        }
        ok(c.barrier());
        let v = c
            .atomic(
                CtxId::DEFAULT,
                0,
                COUNTER,
                AmoOp::Fetch,
                AmoWidth::W64,
                0,
                0,
            )
            .unwrap_or_else(|e| fail(e.to_string()));
        check!(
            v == n as u64 * (round + 1),
            "PE {me}: counter {v} after round {round}"
        );
        ok(c.barrier());
    }
    let w = c
        .atomic(CtxId::DEFAULT, me, W32, AmoOp::Fetch, AmoWidth::W32, 0, 0)
        .unwrap_or_else(|e| fail(e.to_string()));
    check!(w == n as u64 * rounds, "PE {me}: 32-bit counter {w}");
    // Compare-and-swap: exactly one PE wins.
    ok(c.barrier());
    let old = c
        .atomic(
            CtxId::DEFAULT,
            0,
            SIGNAL + 8,
            AmoOp::CompareSwap,
            AmoWidth::W64,
            me as u64 + 1,
            0,
        )
        .unwrap_or_else(|e| fail(e.to_string()));
    let winners = c
        .exchange(&[(old == 0) as u8])
        .unwrap_or_else(|e| fail(e.to_string()));
    let count = winners.iter().filter(|v| v[0] == 1).count();
    check!(count == 1, "PE {me}: {count} PEs won one compare-and-swap");

    // Put-with-signal around a ring: data must be visible once the signal is.
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    let payload = vec![me as u8 ^ 0x5a; 256];
    ok(c.put_signal(
        CtxId::DEFAULT,
        next,
        SIG_DATA,
        &payload,
        SIGNAL,
        SignalOp::Add,
        1,
    ));
    let mut b = Backoff::new();
    while c
        .atomic(
            CtxId::DEFAULT,
            me,
            SIGNAL,
            AmoOp::Fetch,
            AmoWidth::W64,
            0,
            0,
        )
        .unwrap_or_else(|e| fail(e.to_string()))
        == 0
    {
        ok(c.poll());
        b.snooze();
    }
    let mut got = vec![0u8; 256];
    ok(c.get(CtxId::DEFAULT, me, SIG_DATA, &mut got));
    check!(
        got.iter().all(|&x| x == prev as u8 ^ 0x5a),
        "PE {me}: signalled data"
    );

    // Active messages: Medium request -> Short reply with the sum; Long
    // request to the next PE.
    let replies = Arc::new(AtomicU64::new(0));
    let longs = Arc::new(AtomicU64::new(0));
    ok(c.register_handler(
        FIRST_USER,
        Arc::new(|tok, m| {
            let s: u32 = m.payload.iter().map(|&x| x as u32).sum();
            tok.reply_short(FIRST_USER + 1, &[m.args[0], s])
                .expect("reply");
        }),
    ));
    let r = replies.clone();
    ok(c.register_handler(
        FIRST_USER + 1,
        Arc::new(move |_tok, m| {
            r.fetch_add(m.args[1] as u64, Ordering::Relaxed);
        }),
    ));
    let l = longs.clone();
    ok(c.register_handler(
        FIRST_USER + 2,
        Arc::new(move |tok, m| {
            let src = tok.src() as usize;
            let good = m.offset == (LONG_AREA + 4096 * src) as u64
                && m.payload.len() == 4096
                && m.payload.iter().all(|&x| x == src as u8);
            l.fetch_add(if good { 1 } else { 1 << 32 }, Ordering::Relaxed);
        }),
    ));
    ok(c.barrier());
    const PER_PEER: u64 = 100;
    for i in 0..PER_PEER {
        for pe in 0..n {
            ok(c.am_request(
                pe,
                Category::Medium,
                FIRST_USER,
                &[i as u32],
                &[1, 2, 3, 4],
                0,
            ));
        }
    }
    ok(c.am_request(
        next,
        Category::Long,
        FIRST_USER + 2,
        &[],
        &[me as u8; 4096],
        LONG_AREA + 4096 * me,
    ));
    let mut b = Backoff::new();
    while replies.load(Ordering::Relaxed) < 10 * PER_PEER * n as u64
        || longs.load(Ordering::Relaxed) == 0
    {
        ok(c.poll());
        b.snooze();
    }
    check!(
        replies.load(Ordering::Relaxed) == 10 * PER_PEER * n as u64,
        "PE {me}: reply sum {}",
        replies.load(Ordering::Relaxed)
    );
    check!(
        longs.load(Ordering::Relaxed) == 1,
        "PE {me}: Long AM from PE {prev} was wrong"
    );
    // Keep serving until every PE got its replies.
    ok(c.barrier());

    // Exchange.
    let all = c
        .exchange(format!("hello from {me}").as_bytes())
        .unwrap_or_else(|e| fail(e.to_string()));
    for (pe, v) in all.iter().enumerate() {
        check!(
            *v == format!("hello from {pe}").into_bytes(),
            "PE {me}: exchange slot {pe}"
        );
    }

    ok(c.finalize());
    println!("smp_check: PE {me} of {n} ok");
}
