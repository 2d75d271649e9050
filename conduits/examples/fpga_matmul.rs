//! The FSHMEM case study on the board's compute core: C = A × B over N
//! boards, each computing a block of C's rows on its GEMM tile engine with
//! Automatic Result Transfer (ART) streaming every `--art` results to PE 0
//! with puts *during* the computation. PE 0 checks the gathered C against
//! the serial product.
//!
//! ```sh
//! target/release/oshrun -n 4 --conduit fpga target/release/examples/fpga_matmul -- --n 64 --art 16
//! ```
//!
//! Segment layout on every PE (f64, row-major): A's row block at 0, all of
//! B after it, the local C block after that, and on PE 0 the full C
//! (`n × n`) that ART fills.

use conduits::prelude::*;
use conduits::{AnyConduit, Category, JobEnv, SegmentRequest, Settings};
use gasnet_core::compute::GEMM_RUN;
use gasnet_core::handlers::FIRST_USER;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The host handler the compute core's "tile done" reply names.
const DONE: u8 = FIRST_USER;

fn a(i: usize, j: usize) -> f64 {
    ((i * 7 + j * 13 + i * j) % 17) as f64 - 8.0
}

fn b(i: usize, j: usize) -> f64 {
    ((i * 5 + j * 3 + 2 * i * j + 1) % 11) as f64 - 5.0
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            conduits::report!("fpga_matmul: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let n = arg("--n", 64);
    let art = arg("--art", 16);
    let job = JobEnv::from_env()?;
    let (me, np) = (job.rank, job.size);
    let rows = |p: usize| (p * n / np)..((p + 1) * n / np);
    let mine = rows(me);
    let m = mine.len();
    let off_b = (8 * n * n).next_multiple_of(4096);
    let off_c = off_b + (8 * n * n).next_multiple_of(4096);
    let off_full = off_c + (8 * n * n).next_multiple_of(4096);
    let seg = off_full + (8 * n * n).next_multiple_of(4096);
    if off_full as u64 + 8 * (n * n) as u64 >= u32::MAX as u64 {
        return Err("matrix too large for 32-bit tile offsets".into());
    }
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(seg), &settings)?;
    let done = Arc::new(AtomicU64::new(0));
    let d = done.clone();
    c.register_handler(
        DONE,
        Arc::new(move |_tok, msg| {
            // args: job, status, results
            let st = msg.args.get(1).copied().unwrap_or(9) as u64;
            d.store(1 | st << 8, Ordering::Release);
        }),
    )?;
    let a_blk: Vec<f64> = mine
        .clone()
        .flat_map(|i| (0..n).map(move |k| a(i, k)))
        .collect();
    let b_all: Vec<f64> = (0..n).flat_map(|k| (0..n).map(move |j| b(k, j))).collect();
    c.put(CtxId::DEFAULT, me, 0, &bytes(&a_blk))?;
    c.put(CtxId::DEFAULT, me, off_b, &bytes(&b_all))?;
    c.barrier()?;
    let t0 = std::time::Instant::now();
    let args = [
        0,
        off_b as u32,
        off_c as u32,
        m as u32,
        n as u32,
        n as u32,
        art as u32,
        0, // ART to PE 0
        (off_full + 8 * mine.start * n) as u32,
        DONE as u32,
        me as u32,
    ];
    c.am_request(me, Category::Short, GEMM_RUN, &args, &[], 0)?;
    let mut backoff = conduits::wait::Backoff::new();
    while done.load(Ordering::Acquire) == 0 {
        c.poll()?;
        backoff.snooze();
    }
    let status = done.load(Ordering::Acquire) >> 8;
    let elapsed = t0.elapsed();
    c.barrier()?;
    let mut ok = status == 0;
    if me == 0 {
        let mut full = vec![0u8; 8 * n * n];
        c.get(CtxId::DEFAULT, 0, off_full, &mut full)?;
        let got: Vec<f64> = full
            .chunks_exact(8)
            .map(|w| f64::from_le_bytes(w.try_into().unwrap_or_default()))
            .collect();
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
            "fpga_matmul n={n} PEs={np} ART every {art} results: trace(C) = {trace}, max |error| = {max_err} {} ({:.1} ms on the compute cores)",
            if ok { "OK" } else { "MISMATCH" },
            elapsed.as_secs_f64() * 1e3
        );
    }
    c.finalize()?;
    Ok(ok)
}
