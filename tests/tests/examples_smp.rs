//! The example programs (`examples/src/bin`) run as real jobs through
//! `oshrun` on the smp conduit at 1, 2, 4, 5 and 8 PEs (8 is more PEs than
//! this machine's cores): each must exit 0 and print its checkable result,
//! and a wrong result (injected) must exit 1.

use fshmem_tests::{JOB_TIMEOUT, Job, bin, job};
use std::time::Duration;

/// How long a job of the oversubscribed kind may take: far more than a job
/// whose waits yield needs (milliseconds), far less than [`JOB_TIMEOUT`].
const PROMPT: Duration = Duration::from_secs(20);

fn run_example(name: &str, n: usize, args: &[&str]) -> Job {
    let timeout = if n > 4 { PROMPT } else { JOB_TIMEOUT };
    job(n, &bin(name), args, timeout)
}

fn check_hello(n: usize) {
    let j = run_example("hello", n, &[]);
    for r in 0..n {
        j.assert_ok_with(&format!("Hello from PE {r} of {n}"));
    }
    assert_eq!(j.lines_starting("Hello from PE").len(), n, "{j:?}");
    let ranks: Vec<usize> = (0..n).collect();
    let sum = n * (n - 1) / 2;
    j.assert_line(&format!(
        "hello: {n} PEs, ranks {ranks:?}, sum {sum} by puts, {sum} by atomics, expected {sum} OK"
    ));
}

fn check_ring(n: usize) {
    let j = run_example("ring", n, &[]);
    for r in 0..n {
        let left = (r + n - 1) % n;
        j.assert_ok_with(&format!(
            "ring: PE {r} received 1024 values from PE {left} OK"
        ));
    }
    let sum = n * n * (n - 1) / 2;
    j.assert_line(&format!(
        "ring: token made {n} laps of {n} PEs: {} hops, sum {sum}, expected {sum} OK",
        n * n
    ));
    assert_eq!(j.lines_starting("ring:").len(), n + 1, "{j:?}");
}

fn check_matmul(n: usize) {
    // The product does not depend on how it is distributed.
    let j = run_example("matmul", n, &[]);
    j.assert_ok_with(&format!(
        "matmul n=96 PEs={n}: trace(C) = -139, sum(C) = 7505, max |error| = 0 OK"
    ));
    assert_eq!(j.out.stdout.lines().count(), 1, "{j:?}");
}

fn check_histogram(n: usize) {
    let j = run_example("histogram", n, &[]);
    let keys = 10_000 * n;
    let summary = j.lines_starting("histogram: ");
    let want = format!(
        "histogram: {keys} keys from {n} PEs in 64 bins: total {keys}, bins sum to {keys}, "
    );
    assert!(
        summary.first().is_some_and(|l| l.starts_with(&want)),
        "{j:?}"
    );
    j.assert_ok_with("histogram: every bin matches the serial histogram OK");
    // The chart: 16 rows of 4 bins, adding up to every key.
    let chart = j.lines_starting("  bins ");
    assert_eq!(chart.len(), 16, "{j:?}");
    let charted: usize = chart
        .iter()
        .map(|l| {
            l.split_whitespace()
                .nth(2)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(charted, keys, "{j:?}");
}

macro_rules! at_every_pe_count {
    ($check:ident: $($name:ident = $n:expr),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $check($n);
            }
        )*
    };
}

mod hello {
    use super::*;
    at_every_pe_count!(check_hello: one = 1, two = 2, four = 4, five = 5, eight = 8);
}

mod ring {
    use super::*;
    at_every_pe_count!(check_ring: one = 1, two = 2, four = 4, five = 5, eight = 8);

    #[test]
    fn token_laps_oversubscribed_finish_promptly() {
        // 800 hops among 8 PEs on fewer cores: every hop needs the next PE
        // scheduled, which waits that spin without yielding would delay.
        let j = run_example("ring", 8, &["--laps", "100", "--len", "1"]);
        j.assert_ok_with(
            "ring: token made 100 laps of 8 PEs: 800 hops, sum 2800, expected 2800 OK",
        );
        assert!(j.out.elapsed < PROMPT, "took {:?}", j.out.elapsed);
    }
}

mod matmul {
    use super::*;
    at_every_pe_count!(check_matmul: one = 1, two = 2, four = 4, five = 5, eight = 8);

    #[test]
    fn uneven_blocks_and_more_pes_than_rows() {
        for (n, pes) in [(13, 5), (3, 5), (1, 2), (250, 7)] {
            let j = run_example("matmul", pes, &["--n", &n.to_string()]);
            let line = j.lines_starting("matmul ").concat();
            assert!(
                line.starts_with(&format!("matmul n={n} PEs={pes}: "))
                    && line.ends_with("max |error| = 0 OK"),
                "{j:?}"
            );
            assert_eq!(j.out.code(), Some(0), "{j:?}");
        }
    }

    #[test]
    fn a_wrong_product_fails_the_job() {
        let j = run_example("matmul", 4, &["--inject-error"]);
        assert_eq!(j.out.code(), Some(1), "{j:?}");
        j.assert_line("matmul n=96 PEs=4: trace(C) = -139, sum(C) = 7506, max |error| = 1 FAILED");
    }
}

mod histogram {
    use super::*;
    at_every_pe_count!(check_histogram: one = 1, two = 2, four = 4, five = 5, eight = 8);

    #[test]
    fn a_wrong_count_fails_the_job() {
        let j = run_example("histogram", 3, &["--inject-error"]);
        assert_eq!(j.out.code(), Some(1), "{j:?}");
        j.assert_line("histogram: 1 bins differ from the serial histogram FAILED");
    }
}

#[test]
fn bad_arguments_are_a_usage_error() {
    let j = run_example("matmul", 2, &["--n", "many"]);
    assert_eq!(j.out.code(), Some(2), "{j:?}");
    assert!(j.out.stderr.contains("usage: matmul"), "{j:?}");
}
