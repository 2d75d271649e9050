//! shmem's API self-check (`shmem/examples/api_check.rs`, built by `cargo
//! test` as `target/<profile>/examples/api_check`) as real jobs through
//! `oshrun` on the smp conduit at 1, 2, 4, 5 and 8 PEs (8 is more PEs than
//! this machine's cores).

use fshmem_tests::{JOB_TIMEOUT, Job, example, job};
use std::time::Duration;

/// How long an oversubscribed job may take: far more than a job whose
/// waits yield needs, far less than [`JOB_TIMEOUT`].
const PROMPT: Duration = Duration::from_secs(20);

fn api_check(n: usize, args: &[&str]) -> Job {
    let timeout = if n > 4 { PROMPT } else { JOB_TIMEOUT };
    job(n, &example("api_check"), args, timeout)
}

/// Runs every check on `n` PEs: exit 0 and PE 0's report that all passed.
fn passes(n: usize) {
    let j = api_check(n, &[]);
    assert_eq!(j.out.code(), Some(0), "{j:?}");
    let report = j.lines_starting("api_check: ");
    assert_eq!(report.len(), 1, "{j:?}");
    let checks: usize = report[0]
        .strip_prefix("api_check: ")
        .and_then(|r| r.strip_suffix(&format!(" checks on each of {n} PEs passed")))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("unexpected report {:?}", report[0]));
    assert!(checks > 0, "{j:?}");
    assert!(j.out.stderr.is_empty(), "{j:?}");
}

#[test]
fn one_pe() {
    passes(1);
}

#[test]
fn two_pes() {
    passes(2);
}

#[test]
fn four_pes() {
    passes(4);
}

#[test]
fn five_pes() {
    passes(5);
}

#[test]
fn eight_pes_oversubscribed_finish_promptly() {
    passes(8);
}

#[test]
fn global_exit_ends_every_pe_with_its_status() {
    for n in [1, 3, 8] {
        let j = api_check(n, &["global_exit"]);
        assert_eq!(j.out.code(), Some(7), "{j:?}");
        assert!(
            !j.out.stderr.contains("instead of the job exiting"),
            "{j:?}"
        );
    }
}
