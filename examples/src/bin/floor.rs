//! The hardware floors fshmem's smp numbers are compared against, measured
//! on this machine:
//!
//! - the half round trip of one cache line bounced between two threads on two
//!   cores (what an 8-byte put + flag handoff between PEs cannot beat);
//! - a local 64-bit fetch-add on an uncontended line;
//! - `memcpy` bandwidth at 1 MiB (what a 1 MiB put cannot beat).
//!
//! ```sh
//! target/release/floor            # table
//! target/release/floor --csv      # machine-readable
//! ```

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

fn main() {
    let csv = std::env::args().any(|a| a == "--csv");
    let rtt = median((0..7).map(|_| pingpong_half_rtt(100_000)).collect());
    let fadd = median((0..7).map(|_| local_fetch_add(2_000_000)).collect());
    let bw = median((0..7).map(|_| memcpy_bw(1 << 20, 2000)).collect());
    if csv {
        println!("metric,value,unit");
        println!("cacheline_half_rtt,{rtt:.4},ns");
        println!("local_fetch_add,{fadd:.4},ns");
        println!("memcpy_1MiB,{bw:.1},MB/s");
    } else {
        println!("{:<42} {:>12}", "floor (median of 7 runs)", "value");
        println!(
            "{:<42} {:>9.1} ns",
            "cache-line half round trip, 2 cores", rtt
        );
        println!("{:<42} {:>9.1} ns", "local 64-bit fetch-add", fadd);
        println!("{:<42} {:>7.0} MB/s", "memcpy 1 MiB", bw);
    }
}
