//! Collective latency benchmark: barrier, 8-byte broadcast, 8-byte and
//! 64 KiB sum reductions, 8-byte fcollect and alltoall on the world team.
//! PE 0 prints one row per collective: the algorithm the automatic choice
//! takes and the median, over batches, of the mean time per call on the
//! slowest PE.
//!
//! ```sh
//! for n in 2 4 8; do target/release/oshrun -n $n target/release/examples/coll_bench; done
//! ```
//!
//! An optional argument scales the iteration counts (`0.1` for a quick
//! look). `bench/coll/coll_bench.c` runs the same loops on any OpenSHMEM
//! 1.4 library (Open MPI's, for the comparison; see `bench/coll/README.md`).

use shmem::{Shmem, ShmemError};
use std::time::Instant;

const BATCHES: usize = 7;

/// Median over batches of the mean seconds per call of `f`.
fn time(
    sh: &Shmem,
    iters: usize,
    mut f: impl FnMut() -> Result<(), ShmemError>,
) -> Result<f64, ShmemError> {
    for _ in 0..iters / 10 + 1 {
        f()?;
    }
    let mut per = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        sh.barrier_all()?;
        let t = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        per.push(t.elapsed().as_secs_f64() / iters as f64);
    }
    sh.barrier_all()?;
    per.sort_by(f64::total_cmp);
    Ok(per[BATCHES / 2])
}

fn main() -> Result<(), ShmemError> {
    let sh = shmem::init()?;
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let w = sh.team_world();
    // An optional argument scales the iteration counts (default 1.0).
    let scale: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1.0);
    let it = |k: usize| ((k as f64 * scale) as usize).max(1);
    let worst = sh.calloc::<f64>(1)?;
    let small_src = sh.calloc::<i64>(n)?;
    let small_dst = sh.calloc::<i64>(n)?;
    let big_src = sh.calloc::<i64>(8192)?;
    let big_dst = sh.calloc::<i64>(8192)?;
    let algos = [
        format!("{:?}", w.barrier_algorithm()),
        format!("{:?}", w.broadcast_algorithm(8)),
        format!("{:?}", w.reduce_algorithm(8)),
        format!("{:?}", w.reduce_algorithm(64 << 10)),
        format!("{:?}", w.fcollect_algorithm(8 * n)),
        format!("{:?}", w.alltoall_algorithm(8)),
    ];
    let rows: Vec<(&str, f64)> = vec![
        ("barrier", time(&sh, it(5000), || w.barrier())?),
        (
            "broadcast 8 B",
            time(&sh, it(5000), || w.broadcast(&small_dst, &small_src, 1, 0))?,
        ),
        (
            "sum_reduce 8 B",
            time(&sh, it(5000), || w.sum_reduce(&small_dst, &small_src, 1))?,
        ),
        (
            "sum_reduce 64 KiB",
            time(&sh, it(300), || w.sum_reduce(&big_dst, &big_src, 8192))?,
        ),
        (
            "fcollect 8 B",
            time(&sh, it(5000), || w.fcollect(&small_dst, &small_src, 1))?,
        ),
        (
            "alltoall 8 B",
            time(&sh, it(5000), || w.alltoall(&small_dst, &small_src, 1))?,
        ),
    ];
    let mut rows = rows;
    for r in rows.iter_mut() {
        let s = sh.calloc::<f64>(1)?;
        s.write(0, r.1);
        w.max_reduce(&worst, &s, 1)?;
        r.1 = worst.read(0);
    }
    if me == 0 {
        println!(
            "coll_bench: {n} PEs, median of {BATCHES} batches, microseconds per call on the slowest PE"
        );
        println!("{:<20} {:<20} {:>10}", "collective", "algorithm", "us");
        for ((name, t), algo) in rows.into_iter().zip(algos) {
            println!("{name:<20} {algo:<20} {:>10.2}", t * 1e6);
        }
    }
    Ok(())
}
