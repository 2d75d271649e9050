//! The hardware floors fshmem's smp numbers are compared against, measured
//! on this machine:
//!
//! - the half round trip of one cache line bounced between two threads on two
//!   cores (what an 8-byte put + flag handoff between PEs cannot beat);
//! - a local 64-bit fetch-add on an uncontended line;
//! - `memcpy` bandwidth at 1 MiB (what a 1 MiB put cannot beat);
//!
//! and the floors of the ipv6 conduit (module `udp`): the half round trip
//! of 8 bytes between two processes busy-polling UDP sockets over `[::1]`,
//! and the one-way UDP stream bandwidth between them.
//!
//! ```sh
//! target/release/floor            # table
//! target/release/floor --csv      # machine-readable
//! target/release/floor --udp      # the UDP floor at every size, as bench lines
//! ```
//!
//! `--udp` prints `op size usec_per_op MB_per_s` lines in the format of
//! `conduits/examples/ipv6_bench.rs` and `bench/ipv6/osh_bench.c`, so that
//! `bench-report` sets every benchmark figure beside its floor:
//! `put_lat`/`get_lat` at `size` are both the round trip of `size` bytes
//! out and 8 bytes back (what a put + quiet or a get of `size` bytes cannot
//! beat), `put_bw`/`get_bw` are both the one-way stream in datagrams of
//! `min(size, 8 KiB)` bytes. Sizes and trial counts are those of the
//! benchmarks (`FSHMEM_BENCH_TRIALS`, default 5; the median is printed).

mod udp;

use clap::Parser;

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[repr(align(128))]
struct Line(AtomicU64);

fn pin(cpu: usize) {
    // Not available_parallelism(): it shrinks to 1 once this thread is pinned.
    // SAFETY: sysconf only reads a system value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set, CPU_SET writes
    // inside it, and sched_setaffinity(0, ..) only affects the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % n, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Nanoseconds per half round trip: two threads take turns incrementing one
/// cache-line-sized word.
fn pingpong_half_rtt(iters: u64) -> f64 {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let peer = {
        let line = line.clone();
        std::thread::spawn(move || {
            pin(1);
            for i in 0..iters {
                while line.0.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                line.0.store(2 * i + 2, Ordering::Release);
            }
        })
    };
    pin(0);
    let t0 = Instant::now();
    for i in 0..iters {
        line.0.store(2 * i + 1, Ordering::Release);
        while line.0.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let ns = t0.elapsed().as_nanos() as f64;
    peer.join().expect("ping-pong peer thread");
    ns / (2 * iters) as f64
}

fn local_fetch_add(iters: u64) -> f64 {
    pin(0);
    let w = Line(AtomicU64::new(0));
    let t0 = Instant::now();
    for _ in 0..iters {
        black_box(w.0.fetch_add(1, Ordering::SeqCst));
    }
    t0.elapsed().as_nanos() as f64 / iters as f64
}

/// MB/s (10^6 bytes per second) copying `size` bytes between two buffers.
fn memcpy_bw(size: usize, iters: u64) -> f64 {
    pin(0);
    let src = vec![1u8; size];
    let mut dst = vec![0u8; size];
    dst.copy_from_slice(&src); // fault the pages in
    let t0 = Instant::now();
    for _ in 0..iters {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    }
    (size as f64 * iters as f64) / t0.elapsed().as_secs_f64() / 1e6
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Floors of this machine for fshmem's benchmarks.
#[derive(Parser)]
#[command(about)]
struct Args {
    /// Print the table as CSV (`metric,value,unit`).
    #[arg(long)]
    csv: bool,
    /// Print only the UDP floor at every benchmark size, as
    /// `op size usec_per_op MB_per_s` lines.
    #[arg(long, conflicts_with = "csv")]
    udp: bool,
    /// Internal: run as the UDP peer of the process listening on PORT.
    #[arg(long, value_name = "PORT", hide = true)]
    udp_peer: Option<u16>,
}

/// Operations per latency trial, as in the benchmarks: about 1 MiB moved,
/// 200 to 1000 operations.
fn lat_iters(n: usize) -> usize {
    ((1 << 20) / n).clamp(200, 1000)
}

/// Bytes per bandwidth trial, as in the benchmarks: 16 MiB, at least 4
/// operations.
fn bw_bytes(n: usize) -> usize {
    ((16 << 20) / n).max(4) * n
}

/// Median seconds of `trials` timed runs after one untimed one.
fn trials_median(
    trials: usize,
    mut run: impl FnMut() -> std::io::Result<f64>,
) -> std::io::Result<f64> {
    run()?;
    let mut t = Vec::with_capacity(trials);
    for _ in 0..trials {
        t.push(run()?);
    }
    Ok(median(t))
}

/// The UDP floor at every size of the ipv6 benchmarks.
fn udp_lines(trials: usize) -> std::io::Result<()> {
    let mut f = udp::Floor::start()?;
    pin(0);
    let mut n = 8;
    while n <= 64 << 10 {
        let iters = lat_iters(n);
        let per = trials_median(trials, || f.round_trips(n, iters))? / iters as f64;
        for op in ["put_lat", "get_lat"] {
            // Six decimals: under load a round trip can take milliseconds,
            // and 8 bytes per millisecond would round to 0.0 MB/s.
            println!("{op} {n} {:.3} {:.6}", per * 1e6, n as f64 / per / 1e6);
        }
        n *= 2;
    }
    let mut n = 4 << 10;
    while n <= 4 << 20 {
        let total = bw_bytes(n);
        let secs = trials_median(trials, || f.stream(total, n.min(udp::STREAM_DGRAM)))?;
        let per = secs / (total / n) as f64;
        for op in ["put_bw", "get_bw"] {
            println!("{op} {n} {:.2} {:.1}", per * 1e6, n as f64 / per / 1e6);
        }
        n *= 4;
    }
    if f.retries > 0 {
        eprintln!(
            "floor: {} UDP trials stalled for 200 ms (a datagram lost, or a process not scheduled) and ran again",
            f.retries
        );
    }
    Ok(())
}

/// The summary UDP figures: 8-byte half round trip (ns), stream MB/s in
/// 8 KiB and in 64 KiB datagrams.
fn udp_summary() -> std::io::Result<(f64, f64, f64)> {
    let mut f = udp::Floor::start()?;
    pin(0);
    let half = trials_median(7, || f.round_trips(8, 20_000))? / 40_000.0 * 1e9;
    let total = 64 << 20;
    let s8 = total as f64 / trials_median(5, || f.stream(total, udp::STREAM_DGRAM))? / 1e6;
    let s64 = total as f64 / trials_median(5, || f.stream(total, udp::MAX_DGRAM))? / 1e6;
    Ok((half, s8, s64))
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let fail = |e: std::io::Error| {
        eprintln!("floor: UDP over [::1]: {e}");
        std::process::ExitCode::FAILURE
    };
    if let Some(port) = args.udp_peer {
        return match udp::peer(port) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => fail(e),
        };
    }
    if args.udp {
        let trials = std::env::var("FSHMEM_BENCH_TRIALS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&t: &usize| t > 0)
            .unwrap_or(5);
        return match udp_lines(trials) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => fail(e),
        };
    }
    let rtt = median((0..7).map(|_| pingpong_half_rtt(100_000)).collect());
    let fadd = median((0..7).map(|_| local_fetch_add(2_000_000)).collect());
    let bw = median((0..7).map(|_| memcpy_bw(1 << 20, 2000)).collect());
    let (udp_half, udp_s8, udp_s64) = match udp_summary() {
        Ok(v) => v,
        Err(e) => return fail(e),
    };
    if args.csv {
        println!("metric,value,unit");
        println!("cacheline_half_rtt,{rtt:.4},ns");
        println!("local_fetch_add,{fadd:.4},ns");
        println!("memcpy_1MiB,{bw:.1},MB/s");
        println!("udp_half_rtt_8B,{udp_half:.1},ns");
        println!("udp_stream_8KiB_datagrams,{udp_s8:.1},MB/s");
        println!("udp_stream_64KiB_datagrams,{udp_s64:.1},MB/s");
    } else {
        println!("{:<42} {:>12}", "floor (median of 7 runs)", "value");
        println!(
            "{:<42} {:>9.1} ns",
            "cache-line half round trip, 2 cores", rtt
        );
        println!("{:<42} {:>9.1} ns", "local 64-bit fetch-add", fadd);
        println!("{:<42} {:>7.0} MB/s", "memcpy 1 MiB", bw);
        println!(
            "{:<42} {:>9.1} ns",
            "UDP [::1] half round trip, 8 B", udp_half
        );
        println!(
            "{:<42} {:>7.0} MB/s",
            "UDP [::1] one-way stream, 8 KiB datagrams", udp_s8
        );
        println!(
            "{:<42} {:>7.0} MB/s",
            "UDP [::1] one-way stream, 64 KiB datagrams", udp_s64
        );
    }
    std::process::ExitCode::SUCCESS
}
