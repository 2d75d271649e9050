//! Jobs on the fpga conduit against devsim boards, through
//! `oshrun --conduit fpga` at 2 and 4 PEs: shmem's api_check, the example
//! programs, and the matrix-multiply case study on the boards' GEMM
//! compute cores with Automatic Result Transfer. Every job must exit 0 with
//! its checkable result and leave no board files behind. The board links
//! are reliable: api_check and the stress mix stay exact with 5 % of the
//! link datagrams lost, 2 % duplicated and 10 % reordered
//! (`FSHMEM_DEVSIM_IMPAIR`), and a board that stops answering (SIGSTOP) or
//! dies (SIGKILL) is reported naming its PE, ending the job non-zero. A
//! burst of a million 8-byte puts meets back-pressure, never an error.
//! A request the compute core can neither run nor answer, sent below
//! shmem (`conduits/examples/compute_reject.rs`), is reported by the
//! board (`ERR_STATUS.COMPUTE`) and ends the job naming the sender and the
//! handler. (The unit-level
//! devsim tests — descriptor edge cases, back-pressure, identity checks,
//! health-check faults, the compute core — are in `conduits`.)

#[path = "support/board_failure.rs"]
mod board_failure;
#[path = "support/compute.rs"]
mod compute;

use board_failure::board_fails;
use fshmem_tests::{
    JOB_TIMEOUT, bin, example, fpga_job, oshrun_cmd, run, shm_files, unique_job_id,
};
use std::time::Duration;

fn api_check(n: usize) {
    let j = fpga_job(n, &example("api_check"), &[] as &[&str], JOB_TIMEOUT);
    assert_eq!(j.out.code(), Some(0), "{j:?}");
    assert_eq!(j.lines_starting("api_check: ").len(), 1, "{j:?}");
    assert!(j.out.stdout.contains("passed"), "{j:?}");
}

fn examples(n: usize) {
    let j = fpga_job(n, &bin("hello"), &[] as &[&str], JOB_TIMEOUT);
    let sum = n * (n - 1) / 2;
    let ranks: Vec<usize> = (0..n).collect();
    j.assert_ok_with(&format!(
        "hello: {n} PEs, ranks {ranks:?}, sum {sum} by puts, {sum} by atomics, expected {sum} OK"
    ));
    let j = fpga_job(n, &bin("ring"), &[] as &[&str], JOB_TIMEOUT);
    let sum = n * n * (n - 1) / 2;
    j.assert_ok_with(&format!(
        "ring: token made {n} laps of {n} PEs: {} hops, sum {sum}, expected {sum} OK",
        n * n
    ));
    let j = fpga_job(n, &bin("matmul"), &[] as &[&str], JOB_TIMEOUT);
    j.assert_ok_with(&format!(
        "matmul n=96 PEs={n}: trace(C) = -139, sum(C) = 7505, max |error| = 0 OK"
    ));
    let j = fpga_job(n, &bin("histogram"), &[] as &[&str], JOB_TIMEOUT);
    j.assert_ok_with("histogram: every bin matches the serial histogram OK");
}

fn compute_core_matmul(n: usize) {
    let j = fpga_job(
        n,
        &example("fpga_matmul"),
        &["--n", "48", "--art", "8"],
        JOB_TIMEOUT,
    );
    assert_eq!(j.out.code(), Some(0), "{j:?}");
    let line = j.lines_starting("fpga_matmul n=48 ");
    assert_eq!(line.len(), 1, "{j:?}");
    assert!(
        line[0].contains(&format!("PEs={n} ART every 8 results"))
            && line[0].contains("max |error| = 0 OK"),
        "{j:?}"
    );
}

#[test]
fn api_check_on_2_and_4_boards() {
    api_check(2);
    api_check(4);
}

#[test]
fn examples_on_2_and_4_boards() {
    examples(2);
    examples(4);
}

#[test]
fn compute_core_matmul_with_art_on_2_and_4_boards() {
    compute_core_matmul(2);
    compute_core_matmul(4);
}

const IMPAIR: &str = "loss=5,dup=2,reorder=10";

#[test]
fn api_check_and_stress_on_4_boards_with_lossy_links_are_exact() {
    let id = unique_job_id("fi");
    let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", "fpga", "--job-id", &id]);
    cmd.arg(example("api_check"))
        .env("FSHMEM_DEVSIM_IMPAIR", IMPAIR);
    let out = run(&mut cmd, JOB_TIMEOUT);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(out.stdout.contains("passed"), "{out:?}");
    assert!(shm_files(&id).is_empty());
    let id = unique_job_id("fs");
    let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", "fpga", "--job-id", &id]);
    cmd.arg(example("stress"))
        .args(["3", "1000000", "11"])
        .env("FSHMEM_DEVSIM_IMPAIR", IMPAIR);
    let out = run(&mut cmd, JOB_TIMEOUT);
    assert_eq!(out.code(), Some(0), "{out:?}");
    let ok = out
        .stdout
        .lines()
        .filter(|l| l.ends_with("on 4 PEs OK"))
        .count();
    assert_eq!(ok, 4, "{out:?}");
    assert!(shm_files(&id).is_empty());
}

#[test]
fn a_board_that_stops_answering_or_dies_ends_the_job_naming_its_pe() {
    let stress = ["20", "1000000", "5"];
    board_fails(4, &stress, &[], libc::SIGSTOP, "stopped answering");
    board_fails(4, &stress, &[], libc::SIGKILL, "its board");
}

/// A burst far beyond the board's 65,536 outstanding commands: a full
/// board is back-pressure on the host (the descriptor waits in the ring),
/// never an error completion; every word arrives. PE 0 issues `count`
/// puts, the others `others`. The peer timeout is long: this test is about
/// back-pressure, and a loaded machine may starve a board for seconds.
fn burst(n: usize, count: usize, mode: &str, others: usize) {
    let id = unique_job_id("fq");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", "fpga", "--job-id", &id]);
    cmd.arg(example("put_burst"))
        .args([count.to_string(), mode.to_string(), others.to_string()])
        .env("FSHMEM_PEER_TIMEOUT", "60s");
    let out = run(&mut cmd, Duration::from_secs(300));
    assert_eq!(out.code(), Some(0), "{out:?}");
    for pe in 0..n {
        let from = (pe + n - 1) % n;
        let k = if from == 0 { count } else { others };
        let line = format!("put_burst: PE {pe}: {k} {mode} puts from PE {from} checked OK");
        assert!(out.stdout.lines().any(|l| l == line), "{line}: {out:?}");
    }
    assert!(shm_files(&id).is_empty(), "{:?}", shm_files(&id));
}

#[test]
fn a_million_nonblocking_puts_on_2_and_4_boards_never_fail() {
    burst(2, 1_000_000, "nbi", 100_000);
    burst(4, 1_000_000, "nbi", 100_000);
}

#[test]
fn a_burst_of_blocking_puts_never_fails() {
    burst(2, 300_000, "blocking", 100_000);
}

#[test]
fn shmem_global_exit_0_ends_the_job_with_0() {
    for status in [0, 5] {
        let s = status.to_string();
        let j = fpga_job(4, &example("fault"), &["global-exit", &s], JOB_TIMEOUT);
        assert_eq!(j.out.code(), Some(status), "{j:?}");
        assert!(!j.out.stderr.contains("without calling"), "{j:?}");
        assert!(!j.out.stdout.contains("wait_until returned"), "{j:?}");
    }
}

#[test]
fn a_compute_request_the_board_cannot_run_ends_the_job_naming_sender_and_handler() {
    for (n, case) in [(2, "handler"), (2, "args"), (3, "reply")] {
        let j = fpga_job(n, &example("compute_reject"), &[case], JOB_TIMEOUT);
        compute::reject_failed(&j, case);
    }
}
