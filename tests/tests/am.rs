//! User active messages end to end, through `oshrun`: the distributed
//! hash table example (`examples/src/bin/dht.rs`, typed AMs) at 1, 2, 3
//! and 5 PEs on the smp, ipv6 and fpga conduits, a wrong value it must
//! catch, the Rust AM checks (`shmem/examples/am_check.rs`: Short, Medium,
//! Long, typed, the enforced handler rules) and the C API (`tests/c/am.c`,
//! `shmemx_am_*`), and the boards' compute cores through `shmem::compute`
//! (`examples/src/bin/matmul_fpga.rs`).

#[path = "support/capi.rs"]
mod capi;

use fshmem_tests::{JOB_TIMEOUT, bin, example, fpga_job, ipv6_job, job};

/// Keys each PE inserts in the tests: enough to spread over every PE's
/// shard, few enough that 5 PEs of round trips stay quick on a loaded
/// 2-core machine.
const KEYS: usize = 200;

fn dht_line(n: usize, keys: usize) -> String {
    format!(
        "dht: {n} PEs inserted {total} keys; shards hold {total}; every lookup exact OK",
        total = keys * n
    )
}

#[test]
fn dht_on_smp() {
    for n in [1, 2, 3, 5] {
        job(n, &bin("dht"), &["--keys", "200"], JOB_TIMEOUT).assert_ok_with(&dht_line(n, KEYS));
    }
}

#[test]
fn dht_on_ipv6() {
    for n in [1, 2, 3, 5] {
        ipv6_job(n, &bin("dht"), &["--keys", "200"], &[], JOB_TIMEOUT)
            .assert_ok_with(&dht_line(n, KEYS));
    }
}

#[test]
fn dht_on_fpga() {
    for n in [1, 2, 3, 5] {
        fpga_job(n, &bin("dht"), &["--keys", "100"], JOB_TIMEOUT).assert_ok_with(&dht_line(n, 100));
    }
}

#[test]
fn dht_catches_a_wrong_value() {
    let j = job(
        3,
        &bin("dht"),
        &["--keys", "100", "--inject-error"],
        JOB_TIMEOUT,
    );
    assert_eq!(j.out.code(), Some(1), "{j:?}");
    assert!(j.out.stderr.contains("dht: PE 2: key"), "{j:?}");
}

#[test]
fn rust_am_api_and_handler_rules() {
    let exe = example("am_check");
    for n in [1, 2, 4, 5] {
        job(n, &exe, &[] as &[&str], JOB_TIMEOUT)
            .assert_ok_with(&format!("am_check: ok on {n} PEs"));
    }
    for n in [2, 3] {
        ipv6_job(n, &exe, &[] as &[&str], &[], JOB_TIMEOUT)
            .assert_ok_with(&format!("am_check: ok on {n} PEs"));
        fpga_job(n, &exe, &[] as &[&str], JOB_TIMEOUT)
            .assert_ok_with(&format!("am_check: ok on {n} PEs"));
    }
}

#[test]
fn c_am_api() {
    let exe = capi::compile("am", &[]);
    for n in [1, 2, 4, 5] {
        let j = job(n, &exe, &[] as &[&str], JOB_TIMEOUT);
        j.assert_ok_with(&format!("am: ok on {n} PEs"));
        assert!(j.out.stderr.is_empty(), "{j:?}");
    }
    for n in [2, 3] {
        ipv6_job(n, &exe, &[] as &[&str], &[], JOB_TIMEOUT)
            .assert_ok_with(&format!("am: ok on {n} PEs"));
        fpga_job(n, &exe, &[] as &[&str], JOB_TIMEOUT)
            .assert_ok_with(&format!("am: ok on {n} PEs"));
    }
}

/// FSHMEM's case study as a shmem program: GEMM tiles on the boards'
/// compute cores with ART, exact; a clear error off the fpga conduit.
#[test]
fn matmul_on_the_compute_cores() {
    for n in [1, 2] {
        let j = fpga_job(n, &bin("matmul_fpga"), &[] as &[&str], JOB_TIMEOUT);
        assert_eq!(j.out.code(), Some(0), "{j:?}");
        let want = format!(
            "matmul_fpga n=64 PEs={n} ART every 16 results: trace(C) = 763, max |error| = 0 OK ("
        );
        assert_eq!(j.lines_starting(&want).len(), 1, "{j:?}");
    }
    let j = job(2, &bin("matmul_fpga"), &[] as &[&str], JOB_TIMEOUT);
    assert_eq!(j.out.code(), Some(1), "{j:?}");
    assert!(
        j.out
            .stderr
            .contains("shmem::compute: the smp conduit has no compute cores"),
        "{j:?}"
    );
}
