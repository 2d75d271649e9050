//! User active messages end to end, through `oshrun`: the distributed
//! hash table example (`examples/src/bin/dht.rs`, typed AMs) at 1, 2, 3
//! and 5 PEs on the smp, ipv6 and fpga conduits, a wrong value it must
//! catch, the Rust AM checks (`shmem/examples/am_check.rs`: Short, Medium,
//! Long, typed, the enforced handler rules) and the C API (`tests/c/am.c`,
//! `shmemx_am_*`).

#[path = "support/capi.rs"]
mod capi;

use fshmem_tests::{JOB_TIMEOUT, bin, example, fpga_job, ipv6_job, job};

fn dht_line(n: usize) -> String {
    format!(
        "dht: {n} PEs inserted {keys} keys; shards hold {keys}; every lookup exact OK",
        keys = 1000 * n
    )
}

#[test]
fn dht_on_smp() {
    for n in [1, 2, 3, 5] {
        job(n, &bin("dht"), &[] as &[&str], JOB_TIMEOUT).assert_ok_with(&dht_line(n));
    }
}

#[test]
fn dht_on_ipv6() {
    for n in [1, 2, 3, 5] {
        ipv6_job(n, &bin("dht"), &[] as &[&str], &[], JOB_TIMEOUT).assert_ok_with(&dht_line(n));
    }
}

#[test]
fn dht_on_fpga() {
    for n in [1, 2, 3, 5] {
        fpga_job(n, &bin("dht"), &["--keys", "300"], JOB_TIMEOUT).assert_ok_with(&format!(
            "dht: {n} PEs inserted {keys} keys; shards hold {keys}; every lookup exact OK",
            keys = 300 * n
        ));
    }
}

#[test]
fn dht_catches_a_wrong_value() {
    let j = job(3, &bin("dht"), &["--inject-error"], JOB_TIMEOUT);
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
