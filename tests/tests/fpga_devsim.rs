//! Jobs on the fpga conduit against devsim boards, through
//! `oshrun --conduit fpga` at 2 and 4 PEs: shmem's api_check, the example
//! programs, and the matrix-multiply case study on the boards' GEMM
//! compute cores with Automatic Result Transfer. Every job must exit 0 with
//! its checkable result and leave no board files behind. (The unit-level
//! devsim tests — descriptor edge cases, back-pressure, identity checks,
//! health-check faults, the compute core — are in `conduits`.)

use fshmem_tests::{JOB_TIMEOUT, bin, example, fpga_job};

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
