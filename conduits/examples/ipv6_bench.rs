//! Latency and bandwidth of put and get between PE 0 and PE 1 on any
//! conduit, run as `oshrun -n 2 --conduit ipv6 ipv6_bench`; the same
//! measurements, in the same order and with the same counts, as
//! `bench/ipv6/osh_bench.c` for other OpenSHMEMs (see `bench/ipv6/`).
//!
//! - `put_lat`: a put then a quiet, per operation (µs), 8 B to 64 KiB;
//! - `get_lat`: a blocking get into a private buffer, per operation (µs);
//! - `put_bw`: a stream of non-blocking puts then one quiet (MB/s, 10^6
//!   bytes per second), 4 KiB to 4 MiB;
//! - `get_bw`: a stream of non-blocking gets into a private buffer then
//!   one quiet (MB/s).
//!
//! Every point is the median of `FSHMEM_BENCH_TRIALS` (default 5) timed
//! trials after one untimed warm-up trial. Prints `op size usec_per_op
//! MB_per_s` lines. `FSHMEM_BENCH_ONLY=put_bw` (an operation name, or a
//! comma-separated list) runs only those, for profiling.

use conduits::prelude::*;
use conduits::{AnyConduit, JobEnv, SegmentRequest, Settings};
use std::time::Instant;

const LAT_MAX: usize = 64 << 10;
const BW_MIN: usize = 4 << 10;
const BW_MAX: usize = 4 << 20;

fn main() {
    let job = JobEnv::from_env().expect("job environment");
    let trials: usize = std::env::var("FSHMEM_BENCH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(5);
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(BW_MAX), &settings).expect("attach");
    c.barrier().expect("barrier");
    if c.rank() == 0 {
        let local = vec![1u8; BW_MAX];
        let mut back = vec![0u8; BW_MAX];
        let mut n = 8;
        while n <= LAT_MAX {
            let iters = lat_iters(n);
            point("put_lat", n, iters, trials, || {
                for _ in 0..iters {
                    c.put(CtxId::DEFAULT, 1, 0, &local[..n]).expect("put");
                    c.quiet(CtxId::DEFAULT).expect("quiet");
                }
            });
            point("get_lat", n, iters, trials, || {
                for _ in 0..iters {
                    c.get(CtxId::DEFAULT, 1, 0, &mut back[..n]).expect("get");
                }
            });
            n *= 2;
        }
        let mut n = BW_MIN;
        while n <= BW_MAX {
            let iters = bw_iters(n);
            point("put_bw", n, iters, trials, || {
                for _ in 0..iters {
                    // SAFETY: `local` outlives the quiet below and is not
                    // written meanwhile.
                    unsafe {
                        c.put_nbi(CtxId::DEFAULT, 1, 0, local.as_ptr(), n)
                            .expect("put_nbi")
                    };
                }
                c.quiet(CtxId::DEFAULT).expect("quiet");
            });
            point("get_bw", n, iters, trials, || {
                for _ in 0..iters {
                    // SAFETY: `back` outlives the quiet below and is not
                    // touched meanwhile (every get writes the same bytes).
                    unsafe {
                        c.get_nbi(CtxId::DEFAULT, 1, 0, back.as_mut_ptr(), n)
                            .expect("get_nbi")
                    };
                }
                c.quiet(CtxId::DEFAULT).expect("quiet");
            });
            n *= 4;
        }
    }
    c.barrier().expect("barrier");
    c.finalize().expect("finalize");
}

/// Operations per latency trial: about 1 MiB moved, at least 200.
fn lat_iters(n: usize) -> usize {
    ((1 << 20) / n).clamp(200, 1000)
}

/// Operations per bandwidth trial: 16 MiB moved, at least 4.
fn bw_iters(n: usize) -> usize {
    ((16 << 20) / n).max(4)
}

/// Runs `body` (which does `iters` operations of `n` bytes) once untimed
/// and `trials` times timed, and prints the median trial.
fn point(op: &str, n: usize, iters: usize, trials: usize, mut body: impl FnMut()) {
    if let Ok(only) = std::env::var("FSHMEM_BENCH_ONLY")
        && !only.split(',').any(|o| o.trim() == op)
    {
        return;
    }
    body();
    let mut t: Vec<f64> = (0..trials)
        .map(|_| {
            let s = Instant::now();
            body();
            s.elapsed().as_secs_f64() / iters as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    let per = t[t.len() / 2];
    println!("{op} {n} {:.2} {:.1}", per * 1e6, n as f64 / per / 1e6);
}
