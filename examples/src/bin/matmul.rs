//! The FSHMEM case study: C = A × B for n × n matrices over N PEs that
//! exchange partial sums with one-sided puts, checked against a serial
//! product.
//!
//! The inner dimension is cut into N blocks (uneven when N does not divide
//! n, so any PE count works). PE p owns block column p of A and block row p
//! of B, and computes the partial product P_p = A[:, K_p] × B[K_p, :], a
//! full n × n matrix of partial sums. The rows of C are cut into N blocks
//! too, and PE q owns C's block row q. Every PE p puts rows R_q of its
//! partial to PE q — into slot p of q's inbox, with a signal that counts
//! arrivals — and every owner waits for all N partials and adds them. No
//! PE ever reads another's memory: all traffic is puts.
//!
//! The entries of A and B are small integers held in `f64`, so every
//! product and sum is exact in any order and the check demands an error of
//! exactly zero. PE 0 gathers C (gets from the owners), compares it with
//! the serial product it computes itself, and prints the result; the job
//! exits with status 1 on a mismatch.
//!
//! ```sh
//! target/release/oshrun -n 4 target/release/matmul
//! # matmul n=96 PEs=4: trace(C) = ..., sum(C) = ..., max |error| = 0 OK
//! target/release/oshrun -n 5 target/release/matmul --n 250
//! ```

use examples::block;
use shmem::{Cmp, SignalOp};
use std::process::ExitCode;

/// Entry (i, j) of A: an integer in -8..=8, a fixed function of (i, j).
fn a(i: usize, j: usize) -> f64 {
    ((i * 7 + j * 13 + i * j) % 17) as f64 - 8.0
}

/// Entry (i, j) of B: an integer in -5..=5.
fn b(i: usize, j: usize) -> f64 {
    ((i * 5 + j * 3 + 2 * i * j + 1) % 11) as f64 - 5.0
}

/// The serial product A × B, row-major.
fn serial(n: usize) -> Vec<f64> {
    let bt: Vec<f64> = (0..n * n).map(|x| b(x % n, x / n)).collect(); // B transposed
    let mut c = Vec::with_capacity(n * n);
    for i in 0..n {
        let ai: Vec<f64> = (0..n).map(|k| a(i, k)).collect();
        for j in 0..n {
            c.push(
                ai.iter()
                    .zip(&bt[j * n..(j + 1) * n])
                    .map(|(x, y)| x * y)
                    .sum(),
            );
        }
    }
    c
}

fn main() -> ExitCode {
    let opts = examples::Options::from_env(
        "matmul",
        &[("--n", 96, "order of the matrices")],
        &[(
            "--inject-error",
            "corrupt one entry of C before the check (to see the check fail)",
        )],
    );
    let n = opts.value("--n");
    if n == 0 {
        shmem::report!("matmul: --n must be at least 1");
        return ExitCode::from(2);
    }
    examples::run("matmul", |sh| {
        let (me, np) = (sh.my_pe(), sh.n_pes());
        let max_rows = block(n, np, 0).len(); // the first block is a largest one

        // Inbox: slot p holds PE p's partial sums for my rows of C.
        let inbox = sh.calloc::<f64>(np * max_rows * n)?;
        let arrived = sh.calloc::<u64>(1)?;
        let c = sh.calloc::<f64>(max_rows * n)?;

        // My slice of the inner dimension: A[:, K] and B[K, :].
        let k = block(n, np, me);
        let a_cols: Vec<f64> = (0..n)
            .flat_map(|i| k.clone().map(move |kk| a(i, kk)))
            .collect();
        let b_rows: Vec<f64> = k
            .clone()
            .flat_map(|kk| (0..n).map(move |j| b(kk, j)))
            .collect();

        // Partial product P = A[:, K] × B[K, :], one owner's row block at a
        // time, each sent as soon as it is ready. Start with my right
        // neighbour's block so that the PEs do not all target PE 0 at once.
        let mut rows_buf = vec![0.0; max_rows * n];
        for step in 1..=np {
            let owner = (me + step) % np;
            let rows = block(n, np, owner);
            let part = &mut rows_buf[..rows.len() * n];
            part.fill(0.0);
            for (r, i) in rows.enumerate() {
                let out = &mut part[r * n..(r + 1) * n];
                for (kk, b_row) in b_rows.chunks_exact(n).enumerate() {
                    let aik = a_cols[i * k.len() + kk];
                    for (o, bv) in out.iter_mut().zip(b_row) {
                        *o += aik * bv;
                    }
                }
            }
            inbox.put_signal(
                me * max_rows * n,
                part,
                &arrived,
                0,
                SignalOp::Add,
                1,
                owner,
            )?;
        }

        // Sum the N partials of my rows, in slot order.
        arrived.signal_wait_until(0, Cmp::Eq, np as u64)?;
        let my_rows = block(n, np, me);
        let cells = my_rows.len() * n;
        // Every partial has arrived (the signal says so) and nothing
        // writes the inbox until the next barrier: copy it out, sum
        // privately, and publish the block into `c`.
        let mut c_mine = vec![0.0; cells];
        for slot in inbox.to_vec().chunks_exact(max_rows * n) {
            for (cv, pv) in c_mine.iter_mut().zip(&slot[..cells]) {
                *cv += pv;
            }
        }
        if opts.flag("--inject-error") && my_rows.contains(&(n / 2)) {
            c_mine[(n / 2 - my_rows.start) * n + n / 3] += 1.0;
        }
        c.copy_from(0, &c_mine);
        // Every owner's block is final before PE 0 reads it.
        sh.barrier_all()?;

        let mut ok = true;
        if me == 0 {
            let mut full = vec![0.0; n * n];
            for q in 0..np {
                let rows = block(n, np, q);
                c.get(0, &mut full[rows.start * n..rows.end * n], q)?;
            }
            let serial = serial(n);
            let max_err = full
                .iter()
                .zip(&serial)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            let trace: f64 = (0..n).map(|i| full[i * n + i]).sum();
            let sum: f64 = full.iter().sum();
            ok = max_err == 0.0;
            println!(
                "matmul n={n} PEs={np}: trace(C) = {trace}, sum(C) = {sum}, max |error| = {max_err} {}",
                if ok { "OK" } else { "FAILED" }
            );
        }
        examples::all_ok(sh, ok)
    })
}
