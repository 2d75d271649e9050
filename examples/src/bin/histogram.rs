//! A distributed histogram filled with remote atomics.
//!
//! Every PE draws `--keys` pseudo-random keys in `0..bins` (a fixed stream
//! per PE, triangular in shape) and counts each one with an atomic
//! increment of its bin, wherever it lives: bin b is element b / N of PE
//! b % N's copy of the counts. A second atomic adds each PE's key count to
//! a total on PE 0. After a barrier every PE regenerates all PEs' keys,
//! builds the histogram serially and checks its own bins exactly; PE 0
//! gathers every bin, checks them all and that they sum to the total, and
//! prints the histogram. The job exits with status 1 on any mismatch.
//!
//! ```sh
//! target/release/oshrun -n 4 target/release/histogram
//! # histogram: 40000 keys from 4 PEs in 64 bins: total 40000, bins sum to 40000, ...
//! # (a chart of the bins)
//! # histogram: every bin matches the serial histogram OK
//! ```

use examples::{SplitMix64, block};
use std::process::ExitCode;

/// The key stream of PE `pe`.
fn keys(pe: usize, count: usize, bins: u64) -> impl Iterator<Item = usize> {
    let mut rng = SplitMix64::new(0x4849_5354 + pe as u64);
    // The mean of two uniform draws: a triangle peaking in the middle.
    (0..count).map(move |_| ((rng.below(bins) + rng.below(bins)) / 2) as usize)
}

fn main() -> ExitCode {
    let opts = examples::Options::from_env(
        "histogram",
        &[
            ("--keys", 10_000, "keys each PE draws"),
            ("--bins", 64, "bins of the histogram"),
        ],
        &[(
            "--inject-error",
            "count one key twice (to see the check fail)",
        )],
    );
    let (count, bins) = (opts.value("--keys"), opts.value("--bins"));
    if bins == 0 {
        shmem::report!("histogram: --bins must be at least 1");
        return ExitCode::from(2);
    }
    examples::run("histogram", |sh| {
        let (me, np) = (sh.my_pe(), sh.n_pes());
        let per_pe = bins.div_ceil(np);
        let counts = sh.calloc::<u64>(per_pe)?;
        let total = sh.calloc::<u64>(1)?;

        for key in keys(me, count, bins as u64) {
            counts.atomic_inc(key / np, key % np)?;
        }
        if opts.flag("--inject-error") && me == np - 1 {
            counts.atomic_inc(0, 0)?;
        }
        total.atomic_add(0, count as u64, 0)?;
        sh.barrier_all()?;

        // The serial histogram, from every PE's key stream.
        let mut serial = vec![0u64; bins];
        for pe in 0..np {
            for key in keys(pe, count, bins as u64) {
                serial[key] += 1;
            }
        }
        let mine = counts.to_vec();
        let mut ok = (me..bins).step_by(np).all(|b| mine[b / np] == serial[b]);

        if me == 0 {
            let mut hist = vec![0u64; bins];
            let mut theirs = vec![0u64; per_pe];
            for q in 0..np {
                counts.get(0, &mut theirs, q)?;
                for b in (q..bins).step_by(np) {
                    hist[b] = theirs[b / np];
                }
            }
            let keys_total = total.atomic_fetch(0, 0)?;
            let sum: u64 = hist.iter().sum();
            let (min_b, max_b) = (0..bins).fold((0, 0), |(lo, hi), b| {
                (
                    if hist[b] < hist[lo] { b } else { lo },
                    if hist[b] > hist[hi] { b } else { hi },
                )
            });
            println!(
                "histogram: {} keys from {np} PEs in {bins} bins: total {keys_total}, \
                 bins sum to {sum}, min {} (bin {min_b}), max {} (bin {max_b})",
                count * np,
                hist[min_b],
                hist[max_b]
            );
            // A chart of at most 16 rows of neighbouring bins.
            let rows = bins.min(16);
            let row_sums: Vec<u64> = (0..rows)
                .map(|r| hist[block(bins, rows, r)].iter().sum())
                .collect();
            let widest = row_sums.iter().copied().max().unwrap_or(0).max(1);
            for (r, s) in row_sums.iter().enumerate() {
                let range = block(bins, rows, r);
                println!(
                    "  bins {:>4}..{:<4} {:>9} {}",
                    range.start,
                    range.end,
                    s,
                    "#".repeat((s * 50 / widest) as usize)
                );
            }
            let bad = (0..bins).filter(|&b| hist[b] != serial[b]).count();
            let good = bad == 0 && sum == keys_total && keys_total == (count * np) as u64;
            ok &= good;
            if good {
                println!("histogram: every bin matches the serial histogram OK");
            } else {
                println!("histogram: {bad} bins differ from the serial histogram FAILED");
            }
        }
        examples::all_ok(sh, ok)
    })
}
