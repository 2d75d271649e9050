//! FSHMEM's case study on the boards' compute cores, as a shmem program:
//! C = A × B over N PEs, each PE's board computing a block of C's rows on
//! its GEMM tile engine, with Automatic Result Transfer (ART) streaming
//! every `--art` results into PE 0's copy of the full C *during* the
//! computation. PE 0 checks the gathered C against the serial product.
//! Needs the fpga conduit (devsim boards):
//!
//! ```sh
//! target/release/oshrun -n 4 --conduit fpga target/release/matmul_fpga -- --n 64 --art 16
//! # matmul_fpga n=64 PEs=4 ART every 16 results: trace(C) = ..., max |error| = 0 OK
//! ```

use examples::block;
use shmem::compute::{Art, Gemm};
use std::process::ExitCode;

fn a(i: usize, j: usize) -> f64 {
    ((i * 7 + j * 13 + i * j) % 17) as f64 - 8.0
}

fn b(i: usize, j: usize) -> f64 {
    ((i * 5 + j * 3 + 2 * i * j + 1) % 11) as f64 - 5.0
}

fn main() -> ExitCode {
    let opts = examples::Options::from_env(
        "matmul_fpga",
        &[
            ("--n", 64, "matrix order"),
            ("--art", 16, "results per automatic result transfer"),
        ],
        &[],
    );
    let (n, art) = (opts.value("--n"), opts.value("--art"));
    examples::run("matmul_fpga", |sh| {
        let (me, np) = (sh.my_pe(), sh.n_pes());
        let max_rows = n.div_ceil(np);
        let mine = block(n, np, me);
        let m = mine.len();
        // Symmetric: my rows of A, all of B, my rows of C, and the full C
        // that ART fills on PE 0.
        let a_blk = sh.calloc::<f64>(max_rows * n)?;
        let b_all = sh.calloc::<f64>(n * n)?;
        let c_blk = sh.calloc::<f64>(max_rows * n)?;
        let full = sh.calloc::<f64>(n * n)?;
        let rows_a: Vec<f64> = mine
            .clone()
            .flat_map(|i| (0..n).map(move |k| a(i, k)))
            .collect();
        let all_b: Vec<f64> = (0..n).flat_map(|k| (0..n).map(move |j| b(k, j))).collect();
        a_blk.copy_from(0, &rows_a);
        b_all.copy_from(0, &all_b);
        let core = sh.compute()?;
        sh.barrier_all()?;
        let t0 = std::time::Instant::now();
        let tile = Gemm {
            a: (&a_blk, 0),
            b: (&b_all, 0),
            c: (&c_blk, 0),
            m,
            n,
            k: n,
            art: Some(Art {
                pe: 0,
                dst: (&full, mine.start * n),
                every: art.max(1),
            }),
        };
        let results = core.gemm(me, &tile)?;
        let elapsed = t0.elapsed();
        // My own block is in my C too.
        let mut ok = results == m * n
            && mine.clone().enumerate().all(|(r, i)| {
                (0..n).all(|j| {
                    c_blk.read(r * n + j) == (0..n).map(|k| a(i, k) * b(k, j)).sum::<f64>()
                })
            });
        sh.barrier_all()?;
        if me == 0 {
            let got = full.to_vec();
            let mut max_err = 0.0f64;
            for i in 0..n {
                for j in 0..n {
                    let s: f64 = (0..n).map(|k| a(i, k) * b(k, j)).sum();
                    max_err = max_err.max((s - got[i * n + j]).abs());
                }
            }
            let trace: f64 = (0..n).map(|i| got[i * n + i]).sum();
            ok &= max_err == 0.0;
            println!(
                "matmul_fpga n={n} PEs={np} ART every {art} results: trace(C) = {trace}, max |error| = {max_err} {} ({:.1} ms on the compute cores)",
                if ok { "OK" } else { "MISMATCH" },
                elapsed.as_secs_f64() * 1e3
            );
        }
        examples::all_ok(sh, ok)
    })
}
