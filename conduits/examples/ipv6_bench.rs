//! Latency and bandwidth of put and get between PE 0 and PE 1 on any
//! conduit, run as `oshrun -n 2 --conduit ipv6 ipv6_bench`; the same
//! measurements as `bench/ipv6/osh_bench.c` for other OpenSHMEMs. Prints
//! `op size usec_per_op MB_per_s` lines.

use conduits::{AnyConduit, Conduit, JobEnv};
use std::time::Instant;

fn main() {
    let job = JobEnv::from_env().expect("job environment");
    let max = 1usize << 20;
    let c = AnyConduit::attach(&job, 2 * max).expect("attach");
    c.barrier().expect("barrier");
    if c.rank() == 0 {
        let local = vec![1u8; max];
        let mut back = vec![0u8; max];
        let mut n = 8;
        while n <= max {
            let iters = if n <= 4096 { 2000 } else { 200 };
            let t = Instant::now();
            for _ in 0..iters {
                c.put(1, 0, &local[..n]).expect("put");
                c.quiet().expect("quiet");
            }
            report("put_lat", n, t, iters);
            let t = Instant::now();
            for _ in 0..iters {
                c.get(1, 0, &mut back[..n]).expect("get");
            }
            report("get_lat", n, t, iters);
            let t = Instant::now();
            for _ in 0..iters {
                c.put(1, 0, &local[..n]).expect("put");
            }
            c.quiet().expect("quiet");
            report("put_bw", n, t, iters);
            n *= 8;
        }
    }
    c.barrier().expect("barrier");
    c.finalize().expect("finalize");
}

fn report(op: &str, n: usize, t: Instant, iters: usize) {
    let per = t.elapsed().as_secs_f64() / iters as f64;
    println!("{op} {n} {:.2} {:.1}", per * 1e6, n as f64 / per / 1e6);
}
