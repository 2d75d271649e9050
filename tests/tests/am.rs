//! User active messages end to end, through `oshrun`: the distributed
//! hash table example (`examples/src/bin/dht.rs`, typed AMs) at 1, 2, 3
//! and 5 PEs on the smp, ipv6 and fpga conduits, a wrong value it must
//! catch, the Rust AM checks (`shmem/examples/am_check.rs`: Short, Medium,
//! Long, typed, the enforced handler rules) and the C API (`tests/c/am.c`,
//! `shmemx_am_*`; a handler run inside `shmem_finalize` replies,
//! `tests/c/am_finalize.c`), and the boards' compute cores through `shmem::compute`
//! (`examples/src/bin/matmul_fpga.rs`). A C program that names a handler
//! number `shmemx_am_register` never returns (224, a compute core's on the
//! fpga conduit; 223, unregistered) ends the job naming the PE, the call
//! and the number on every conduit (`tests/c/am_compute_index.c`); a C
//! handler that waits, tests or takes a lock ends the job naming the PE
//! and the call (`tests/c/am_handler_waits.c`); and `shmem::compute` on
//! boards without a compute core fails naming the PE.

#[path = "support/capi.rs"]
mod capi;
#[path = "support/compute.rs"]
mod compute;

use fshmem_tests::{JOB_TIMEOUT, Job, bin, example, fpga_job, ipv6_job, job};

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

/// A handler that a peer's request runs inside `shmem_finalize` may reply
/// (`tests/c/am_finalize.c`): the runtime stays initialized through the
/// call's barrier, and the request is served before the call returns.
#[test]
fn c_handlers_run_in_shmem_finalize_may_reply() {
    let exe = capi::compile("am_finalize", &[]);
    for conduit in ["smp", "ipv6", "fpga"] {
        let j = capi::job_on(conduit, 2, &exe, &[], &[], JOB_TIMEOUT);
        j.assert_ok_with("am_finalize: PE 0 served 1 request(s) in shmem_finalize");
        assert!(j.out.stderr.is_empty(), "{conduit}: {j:?}");
    }
}

/// The handler rule of `shmemx.h` for the calls that wait
/// (`tests/c/am_handler_waits.c`): PE 0's handler calls a wait, a test or
/// a lock routine that would return at once outside a handler; the job
/// ends with status 1 and one line naming PE 0, the call and the rule,
/// and the handler never returns. Every case on smp (the handler runs in
/// PE 0's barrier), two on ipv6 (on its progress thread).
#[test]
fn c_handlers_that_wait_or_lock_end_the_job_naming_the_pe_and_the_call() {
    let exe = capi::compile("am_handler_waits", &[]);
    let cases = [
        ("wait_until", "shmem_long_wait_until"),
        ("wait_until_any", "shmem_long_wait_until_any"),
        ("test", "shmem_long_test"),
        ("signal_wait_until", "shmem_signal_wait_until"),
        ("set_lock", "shmem_set_lock"),
        ("test_lock", "shmem_test_lock"),
        ("clear_lock", "shmem_clear_lock"),
    ];
    let runs = cases
        .iter()
        .map(|&(case, call)| ("smp", 2, case, call))
        .chain([
            ("smp", 3, "wait_until", "shmem_long_wait_until"),
            ("ipv6", 2, "wait_until", "shmem_long_wait_until"),
            ("ipv6", 2, "set_lock", "shmem_set_lock"),
        ]);
    for (conduit, n, case, call) in runs {
        let j = capi::job_on(conduit, n, &exe, &[case], &[], JOB_TIMEOUT);
        assert_eq!(j.out.code(), Some(1), "{conduit} {case}: {j:?}");
        let want = format!("PE 0: {call}: called from an active-message handler");
        assert!(
            j.out.stderr.lines().any(|l| l.starts_with(&want)),
            "{conduit} {case}: no line starting {want:?}: {j:?}"
        );
        assert!(
            !j.out.stdout.contains("the handler returned"),
            "{conduit} {case}: {j:?}"
        );
        for pe in 0..n {
            j.assert_line(&format!(
                "am_handler_waits: PE {pe} of {n} registered handler 64"
            ));
        }
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

/// Runs `am_compute_index case` on `n` PEs of `conduit` with `env`;
/// checks that it failed with status 1, that a line of stderr starts with
/// `want` and contains `also` (the line naming the PE, the call and the
/// number) and that every PE's first line arrived.
fn misuse(
    conduit: &str,
    n: usize,
    case: &str,
    env: &[(&str, &str)],
    want: &str,
    also: &str,
) -> Job {
    let exe = capi::compile("am_compute_index", &[]);
    let j = capi::job_on(conduit, n, &exe, &[case], env, JOB_TIMEOUT);
    assert_eq!(j.out.code(), Some(1), "{conduit} {case}: {j:?}");
    assert!(
        j.out
            .stderr
            .lines()
            .any(|l| l.starts_with(want) && l.contains(also)),
        "{conduit} {case}: no line starting {want:?} with {also:?}: {j:?}"
    );
    for pe in 0..n {
        j.assert_line(&format!(
            "am_compute_index: PE {pe} of {n} registered handler 64"
        ));
    }
    j
}

#[test]
fn c_requests_to_a_compute_handler_number_fail_naming_the_pe_the_call_and_the_number() {
    let compute = "is one of the board's compute handlers (224..=255, run by the compute core \
                   of PE";
    let never = "handler 224 was not returned by shmemx_am_register (it returns 64..=223; \
                 224..=255 are reserved for the compute cores of fpga boards)";
    // fpga boards with a compute core (devsim's GEMM engine): refused at
    // the caller, pointing at shmem::compute, before the board could take
    // the request.
    let j = misuse(
        "fpga",
        2,
        "short",
        &[],
        &format!("PE 1: shmemx_am_request_short: handler 224 {compute} 1's board"),
        "through shmem::compute",
    );
    compute::index_refused(&j);
    misuse(
        "fpga",
        3,
        "medium",
        &[],
        &format!("PE 2: shmemx_am_request_medium: handler 224 {compute} 2's board"),
        "",
    );
    misuse(
        "fpga",
        2,
        "reply",
        &[],
        &format!("PE 0: shmemx_am_reply_short: handler 224 {compute} 0's board"),
        "",
    );
    // Boards without a compute core, smp and ipv6: refused at the caller
    // as a number shmemx_am_register never returns.
    let none = [("FSHMEM_DEVSIM_COMPUTE", "0")];
    misuse(
        "fpga",
        2,
        "short",
        &none,
        &format!("PE 1: shmemx_am_request_short: {never}"),
        "",
    );
    for conduit in ["smp", "ipv6"] {
        let j = misuse(
            conduit,
            2,
            "short",
            &[],
            &format!("PE 1: shmemx_am_request_short: {never}"),
            "",
        );
        assert!(!j.out.stdout.contains("the short call returned"), "{j:?}");
    }
    // A number in the user range that no PE registered: the target fails
    // in the call that finds the message (a barrier, or finalize), on smp
    // and on fpga alike.
    for conduit in ["smp", "fpga"] {
        let j = misuse(
            conduit,
            2,
            "unregistered",
            &[],
            "PE 0: shmem_",
            ": active message: no handler registered at index 223",
        );
        j.assert_line("am_compute_index: PE 1: the unregistered call returned");
    }
}

/// `shmem::compute` on boards started without their compute core
/// (`FSHMEM_DEVSIM_COMPUTE=0`, `CAPS.COMPUTE` 0) fails naming the PE.
#[test]
fn compute_on_boards_without_a_compute_core_fails_naming_the_pe() {
    let j = capi::job_on(
        "fpga",
        2,
        &bin("matmul_fpga"),
        &[],
        &[("FSHMEM_DEVSIM_COMPUTE", "0")],
        JOB_TIMEOUT,
    );
    compute::no_core_refused(&j);
}
