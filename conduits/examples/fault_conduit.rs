//! Bad input at the conduit level, on any conduit:
//! `oshrun -n N [--conduit C] fault_conduit`. Every PE checks that calls
//! naming a PE out of range, bytes outside the segment (also by overflow)
//! or a misaligned atomic word fail with the typed error and no effect;
//! PE 0 prints `ok NAME: error` per check.

use conduits::SignalOp;
use conduits::prelude::*;
use conduits::{
    AmoOp, AmoWidth, AnyConduit, Category, ConduitError, JobEnv, SegmentRequest, Settings,
};

const SEG: usize = 1 << 16;

fn main() {
    let job = JobEnv::from_env().expect("job environment");
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(SEG), &settings).unwrap_or_else(|e| {
        conduits::report!("fault_conduit: {e}");
        std::process::exit(2)
    });
    let (me, n) = (c.rank(), c.size());
    let peer = (me + 1) % n;
    let check = |name: &str, r: conduits::Result<u64>, ok: &dyn Fn(&ConduitError) -> bool| match r {
        Err(e) if ok(&e) => {
            if me == 0 {
                println!("ok {name}: {e}");
            }
        }
        other => {
            println!("FAIL {name}: PE {me}: {other:?}");
            std::process::exit(1);
        }
    };
    let range = |e: &ConduitError| matches!(e, ConduitError::PeOutOfRange { pe, size } if *pe >= n && *size == n);
    let outside = |e: &ConduitError| {
        matches!(
            e,
            ConduitError::OutOfSegment {
                segment_len: SEG,
                ..
            }
        )
    };
    let misaligned = |e: &ConduitError| matches!(e, ConduitError::Misaligned { .. });
    let buf = [7u8; 16];
    let mut dst = [0u8; 16];
    check(
        "put-pe-out-of-range",
        c.put(CtxId::DEFAULT, n, 0, &buf).map(|_| 0),
        &range,
    );
    check(
        "get-pe-out-of-range",
        c.get(CtxId::DEFAULT, n + 5, 0, &mut dst).map(|_| 0),
        &range,
    );
    let amo = |pe, off, w| c.atomic(CtxId::DEFAULT, pe, off, AmoOp::FetchAdd, w, 1, 0);
    check(
        "atomic-pe-out-of-range",
        amo(usize::MAX, 0, AmoWidth::W64),
        &range,
    );
    check(
        "am-pe-out-of-range",
        c.am_request(n, Category::Short, 64, &[], &[], 0).map(|_| 0),
        &range,
    );
    check(
        "put-past-end",
        c.put(CtxId::DEFAULT, peer, SEG - 8, &buf).map(|_| 0),
        &outside,
    );
    check(
        "get-overflowing-length",
        c.get(CtxId::DEFAULT, peer, usize::MAX - 4, &mut dst)
            .map(|_| 0),
        &outside,
    );
    check("atomic-past-end", amo(peer, SEG, AmoWidth::W64), &outside);
    check(
        "atomic64-misaligned",
        amo(peer, 12, AmoWidth::W64),
        &misaligned,
    );
    check(
        "atomic32-misaligned",
        amo(peer, 2, AmoWidth::W32),
        &misaligned,
    );
    check(
        "signal-misaligned",
        c.put_signal(CtxId::DEFAULT, peer, 0, &buf, 20, SignalOp::Set, 1)
            .map(|_| 0),
        &misaligned,
    );
    c.barrier().expect("barrier");
    // None of the refused calls had an effect: the segment is still zero.
    let mut all = vec![0u8; SEG];
    c.get(CtxId::DEFAULT, me, 0, &mut all)
        .expect("get own segment");
    if all.iter().any(|&b| b != 0) {
        println!("FAIL PE {me}: a refused call wrote the segment");
        std::process::exit(1);
    }
    c.barrier().expect("barrier");
    c.finalize().expect("finalize");
    if me == 0 {
        println!("fault_conduit: checks passed on {n} PEs");
    }
}
