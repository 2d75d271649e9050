//! A ring of PEs, each talking to its right neighbour `(me + 1) % N`.
//!
//! 1. Every PE puts a buffer stamped with its rank into its right
//!    neighbour's inbox; after a barrier each PE checks it holds its left
//!    neighbour's buffer.
//! 2. A token goes around the ring N times (`--laps` to change): each hop is
//!    one put-with-signal of the token to the right neighbour, which waits
//!    for the signal, adds its rank to the token and passes it on. The token
//!    ends on PE 0, which checks the number of hops and the sum it carries.
//!
//! ```sh
//! target/release/oshrun -n 4 target/release/ring
//! # ring: PE 1 received 1024 values from PE 0 OK   (one line per PE, any order)
//! # ...
//! # ring: token made 4 laps of 4 PEs: 16 hops, sum 24, expected 24 OK
//! ```

use shmem::{Cmp, SignalOp};
use std::process::ExitCode;

/// What PE `pe` writes at position `k` of the buffer it sends.
fn stamp(pe: usize, k: usize) -> u64 {
    (pe as u64) << 32 | k as u64
}

fn main() -> ExitCode {
    let opts = examples::Options::from_env(
        "ring",
        &[
            ("--len", 1024, "values each PE sends to its neighbour"),
            ("--laps", 0, "times the token goes around (0: one per PE)"),
        ],
        &[],
    );
    examples::run("ring", |sh| {
        let (me, n) = (sh.my_pe(), sh.n_pes());
        let (right, left) = ((me + 1) % n, (me + n - 1) % n);

        // 1. Neighbour exchange: one put, one barrier.
        let len = opts.value("--len");
        let inbox = sh.calloc::<u64>(len)?;
        let mine: Vec<u64> = (0..len).map(|k| stamp(me, k)).collect();
        inbox.put(0, &mine, right)?;
        sh.barrier_all()?;
        let bad = (0..len)
            .filter(|&k| inbox.read(k) != stamp(left, k))
            .count();
        let mut ok = bad == 0;
        if ok {
            println!("ring: PE {me} received {len} values from PE {left} OK");
        } else {
            println!("ring: PE {me}: {bad} of {len} values from PE {left} are wrong FAILED");
        }

        // 2. The token: [hop number, running sum]. Hop h (1-based) goes from
        // PE (h-1) % n to PE h % n and sets the receiver's signal to h, so a
        // PE waiting for hop h knows the token in its buffer is that hop's.
        let laps = match opts.value("--laps") {
            0 => n,
            l => l,
        };
        let hops = (laps * n) as u64;
        let token = sh.calloc::<u64>(2)?;
        let signal = sh.calloc::<u64>(1)?;
        if me == 0 {
            token.put_signal(0, &[1, 0], &signal, 0, SignalOp::Set, 1, right)?;
        }
        let mut last = [0u64; 2];
        for h in (1..=hops).filter(|h| h % n as u64 == me as u64) {
            signal.signal_wait_until(0, Cmp::Ge, h)?;
            let [hop, sum] = [token.read(0), token.read(1)];
            if hop != h {
                println!("ring: PE {me} expected hop {h}, got hop {hop} FAILED");
                ok = false;
            }
            last = [hop, sum + me as u64];
            if h < hops {
                token.put_signal(
                    0,
                    &[h + 1, last[1]],
                    &signal,
                    0,
                    SignalOp::Set,
                    h + 1,
                    right,
                )?;
            }
        }
        if me == 0 {
            // Every hop adds its receiver's rank: each lap adds 0 + 1 + ... + (n-1).
            let expected = (laps * n * (n - 1) / 2) as u64;
            let good = last == [hops, expected];
            ok &= good;
            println!(
                "ring: token made {laps} laps of {n} PEs: {} hops, sum {}, expected {expected} {}",
                last[0],
                last[1],
                if good { "OK" } else { "FAILED" }
            );
        }
        examples::all_ok(sh, ok)
    })
}
