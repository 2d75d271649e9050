//! The Rust API's side of the collectives' argument check: the last PE
//! calls each collective with another root (one out of range too), count,
//! stride or operator than the others. Every PE gets the same error (naming both PEs and both calls),
//! nothing is written past what a PE asked for, and the team keeps
//! working: a correct collective after the failures gives the right
//! result. PE 0 prints `coll_agree: ok on N PEs` at the end.
//!
//! ```sh
//! target/release/oshrun -n 5 target/release/examples/coll_agree
//! ```

use shmem::coll::ops::{Max, Sum};
use shmem::{ShmemError, SymVec};

/// A value no collective here writes.
const GUARD: i64 = -7777;

fn main() -> Result<(), ShmemError> {
    let sh = shmem::init()?;
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let w = sh.team_world();
    let odd = me == n - 1;
    let src = sh.malloc::<i64>(16)?;
    let dst = sh.malloc::<i64>(16 * n)?;
    for i in 0..src.len() {
        src.write(i, (100 * me + i) as i64);
    }
    let mut failures = 0;
    let mut expect_err =
        |what: &str, dst: &SymVec<'_, i64>, asked: usize, r: Result<_, ShmemError>| {
            match r {
                Err(e @ ShmemError::CollectiveMismatch { .. }) => {
                    let s = e.to_string();
                    if n > 1
                        && !(s.contains("PE 0 called")
                            && s.contains(&format!("PE {} called", n - 1)))
                    {
                        println!("PE {me}: {what}: the error does not name both PEs: {s}");
                        failures += 1;
                    }
                    println!("PE {me}: {what}: {s}");
                }
                other => {
                    println!("PE {me}: {what}: expected a mismatch, got {other:?}");
                    failures += 1;
                }
            }
            // Nothing past what this PE asked for was written (nor, as nothing
            // moved, anything at all).
            if dst.iter().any(|x| x != GUARD) {
                println!("PE {me}: {what}: the destination was written ({asked} asked)");
                failures += 1;
            }
        };
    if n > 1 {
        dst.fill(GUARD);
        sh.barrier_all()?;
        let count = if odd { 8 } else { 4 };
        let r = w.broadcast(&dst, &src, count, 0);
        expect_err("broadcast count", &dst, count, r);
        let r = w.broadcast(&dst, &src, 4, if odd { 1 } else { 0 });
        expect_err("broadcast root", &dst, 4, r);
        let r = w.sum_reduce(&dst, &src, count);
        expect_err("reduce count", &dst, count, r);
        let r = if odd {
            w.reduce::<Max, _>(&dst, &src, 4)
        } else {
            w.reduce::<Sum, _>(&dst, &src, 4)
        };
        expect_err("reduce operator", &dst, 4, r);
        let r = w.fcollect(&dst, &src, count);
        expect_err("fcollect count", &dst, count, r);
        let r = w.alltoall(&dst, &src, if odd { 2 } else { 1 });
        expect_err("alltoall block", &dst, 2, r);
        // A root that only the last PE has out of range: the others hear
        // of it from the check, not from a hang.
        let r = w.broadcast(&dst, &src, 4, if odd { n } else { 0 });
        expect_err("broadcast root out of range", &dst, 4, r);
        let r = w.alltoalls(&dst, &src, if odd { 2 } else { 1 }, 1, 2);
        expect_err("alltoalls stride", &dst, 2, r);
        let r = w.sum_inscan(&dst, &src, count);
        expect_err("inscan count", &dst, count, r);
        // The team still works.
        w.sum_reduce(&dst, &src, 4)?;
        for i in 0..4 {
            let want = (100 * n * (n - 1) / 2 + n * i) as i64;
            if dst.read(i) != want {
                println!(
                    "PE {me}: reduce after the failures: {} != {want}",
                    dst.read(i)
                );
                failures += 1;
            }
        }
    }
    let fails = sh.calloc::<i64>(1)?;
    let total = sh.calloc::<i64>(1)?;
    fails.write(0, failures);
    w.sum_reduce(&total, &fails, 1)?;
    if total.read(0) == 0 && me == 0 {
        println!("coll_agree: ok on {n} PEs");
    }
    Ok(())
}
