//! A burst of 8-byte puts far beyond any queue's depth, checked word by
//! word: `oshrun -n N --conduit C put_burst [COUNT] [nbi|blocking] [OTHERS]`.
//!
//! PE 0 puts COUNT (default 1,000,000) distinct 8-byte words into the
//! next PE's segment, and every other PE OTHERS (default COUNT), word `i` at offset `8 i`, without waiting between
//! them (`put_nbi`, one `quiet` at the end) or as blocking puts (each
//! complete locally when it returns). A full command queue or a full
//! board must hold the issuer back, never fail a put. After a barrier,
//! every PE reads its own segment and checks every word; it prints
//! `put_burst: PE r: K MODE puts from PE p checked OK` or names the
//! first wrong word and exits 1.

use conduits::prelude::*;
use conduits::{AnyConduit, JobEnv, SegmentRequest, Settings};

fn word(from: usize, i: usize) -> u64 {
    ((from as u64 + 1) << 40) ^ (i as u64).wrapping_mul(0x9e37_79b9)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args
        .next()
        .map(|s| s.parse().expect("COUNT: a number of puts"))
        .unwrap_or(1_000_000);
    let mode = args.next().unwrap_or_else(|| "nbi".into());
    if mode != "nbi" && mode != "blocking" {
        eprintln!("put_burst: MODE must be nbi or blocking, not {mode:?}");
        std::process::exit(2);
    }
    let others: usize = args
        .next()
        .map(|s| s.parse().expect("OTHERS: a number of puts"))
        .unwrap_or(count);
    let job = JobEnv::from_env().expect("job environment");
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let seg = 8 * count.max(others);
    let c = AnyConduit::attach(&job, SegmentRequest::Own(seg), &settings)
        .unwrap_or_else(|e| panic!("attach: {e}"));
    let (me, n) = (c.rank(), c.size());
    let next = (me + 1) % n;
    let issued = |pe: usize| if pe == 0 { count } else { others };
    let src: Vec<u64> = (0..issued(me)).map(|i| word(me, i)).collect();
    c.barrier().expect("barrier");
    for (i, w) in src.iter().enumerate() {
        let r = if mode == "nbi" {
            // SAFETY: `src` lives, unchanged, until after the quiet below.
            unsafe { c.put_nbi(CtxId::DEFAULT, next, 8 * i, (w as *const u64).cast(), 8) }
        } else {
            c.put(CtxId::DEFAULT, next, 8 * i, &w.to_ne_bytes())
        };
        if let Err(e) = r {
            eprintln!(
                "put_burst: PE {me}: put {i} of {} to PE {next}: {e}",
                src.len()
            );
            std::process::exit(1);
        }
    }
    c.quiet(CtxId::DEFAULT).expect("quiet");
    c.barrier().expect("barrier");
    let from = (me + n - 1) % n;
    let count = issued(from);
    let mut got = vec![0u8; 8 * count];
    c.get(CtxId::DEFAULT, me, 0, &mut got)
        .expect("get own segment");
    for (i, b) in got.chunks_exact(8).enumerate() {
        let v = u64::from_ne_bytes(b.try_into().expect("8 bytes"));
        if v != word(from, i) {
            eprintln!(
                "put_burst: PE {me}: word {i} from PE {from} is {v:#x}, expected {:#x}",
                word(from, i)
            );
            std::process::exit(1);
        }
    }
    println!("put_burst: PE {me}: {count} {mode} puts from PE {from} checked OK");
    c.barrier().expect("barrier");
    c.finalize().expect("finalize");
}
