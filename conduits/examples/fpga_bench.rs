//! Host-side and end-to-end costs of the fpga conduit on devsim boards.
//!
//! ```sh
//! target/release/oshrun -n 2 --conduit fpga target/release/examples/fpga_bench
//! ```
//!
//! PE 0 measures, against PE 1's board:
//! - submit: host nanoseconds to issue one small (8-byte, inline) put —
//!   descriptor stores, `sfence`, doorbell — in batches that fit the ring;
//! - reap: host nanoseconds to consume one completion entry;
//! - latency: a blocking 8-byte put followed by quiet, and a blocking
//!   8-byte get, end to end through both devsim boards and their link;
//! - bandwidth: non-blocking puts of each size, then quiet.
//!
//! The closing note sets the host cost beside FSHMEM's hardware figures
//! (0.35 us put, 0.59 us get, 3813 MB/s on a Stratix-10 board).

use conduits::fpga::FpgaConduit;
use conduits::prelude::*;
use conduits::{AnyConduit, JobEnv, SegmentRequest, Settings};
use gasnet_core::cmd::{Common, Descriptor, Inline, PutSource};
use std::time::{Duration, Instant};

const BATCH: usize = 128;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn submit_cost(f: &FpgaConduit, rounds: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let data = 42u64.to_le_bytes();
    let mut per = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let t = Instant::now();
        for i in 0..BATCH {
            f.put(CtxId::DEFAULT, 1, 64 + 8 * (i % 8), &data)?;
        }
        per.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        f.quiet(CtxId::DEFAULT)?;
    }
    Ok(median(per))
}

fn reap_cost(f: &FpgaConduit, rounds: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let mut per = Vec::with_capacity(rounds);
    for r in 0..rounds {
        for i in 0..BATCH {
            let d = Descriptor::Put {
                common: Common {
                    tag: 0x8000_0000 | (r * BATCH + i) as u32,
                    completion: true,
                    fence_before: false,
                },
                target: 1,
                remote: 128,
                source: PutSource::Inline(Inline::new(&[1u8; 8])?),
            };
            f.submit_descriptor(&d)?;
        }
        // Let the board write every completion, then time only the reaping.
        std::thread::sleep(Duration::from_millis(3));
        let t = Instant::now();
        let mut n = f.reap_completions();
        let dt = t.elapsed();
        while n < BATCH {
            n += f.reap_completions();
        }
        if n > 0 {
            per.push(dt.as_nanos() as f64 / n.min(BATCH) as f64);
        }
    }
    Ok(median(per))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let job = JobEnv::from_env()?;
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(16 << 20), &settings)?;
    let AnyConduit::Fpga(f) = &c else {
        return Err("run with oshrun --conduit fpga".into());
    };
    if c.size() < 2 {
        return Err("needs 2 PEs".into());
    }
    if c.rank() == 0 {
        let submit = submit_cost(f, 200)?;
        let reap = reap_cost(f, 50)?;
        let mut put_lat = Vec::new();
        let mut get_lat = Vec::new();
        let mut buf = [0u8; 8];
        for i in 0..2000u64 {
            let t = Instant::now();
            f.put(CtxId::DEFAULT, 1, 256, &i.to_le_bytes())?;
            f.quiet(CtxId::DEFAULT)?;
            put_lat.push(t.elapsed().as_nanos() as f64 / 1e3);
            let t = Instant::now();
            f.get(CtxId::DEFAULT, 1, 256, &mut buf)?;
            get_lat.push(t.elapsed().as_nanos() as f64 / 1e3);
        }
        let (put_us, get_us) = (median(put_lat), median(get_lat));
        println!("fpga conduit on devsim, 2 boards (loopback UDP links)");
        println!("host submit, 8-byte inline put  : {submit:8.1} ns");
        println!("host reap, one completion entry  : {reap:8.1} ns");
        println!("latency, put + quiet (8 B)       : {put_us:8.2} us");
        println!("latency, blocking get (8 B)      : {get_us:8.2} us");
        println!("bandwidth, put_nbi then quiet:");
        println!("{:>10} {:>12} {:>10}", "bytes", "MB/s", "us/op");
        let src = vec![7u8; 4 << 20];
        let mut best_bw = 0.0f64;
        for size in [8usize, 64, 512, 4096, 32768, 262_144, 1 << 20, 4 << 20] {
            let reps = ((16 << 20) / size).clamp(4, 2000);
            let t = Instant::now();
            for _ in 0..reps {
                // SAFETY: `src` outlives the quiet below and is not modified.
                unsafe { f.put_nbi(CtxId::DEFAULT, 1, 4096, src.as_ptr(), size)? };
            }
            f.quiet(CtxId::DEFAULT)?;
            let dt = t.elapsed().as_secs_f64();
            let mbs = (size * reps) as f64 / dt / 1e6;
            best_bw = best_bw.max(mbs);
            println!("{size:>10} {mbs:>12.1} {:>10.2}", dt * 1e6 / reps as f64);
        }
        println!();
        println!(
            "note: the host spends {submit:.0} ns to submit a small put (target < 100 ns) and \
             {reap:.0} ns to reap a completion; FSHMEM's hardware core adds 0.35 us per put, \
             0.59 us per get and streams 3813 MB/s, so on a board the host cost is {:.0}% of \
             a put's latency. Through devsim (a software core and UDP links on loopback) the \
             end-to-end figures are {put_us:.1} us per put, {get_us:.1} us per get and \
             {best_bw:.0} MB/s at best: the model's cost, not the interface's.",
            100.0 * submit / (submit + 350.0)
        );
    }
    c.barrier()?;
    c.finalize()?;
    Ok(())
}
