//! What the compute-core tests of the engine and RTL boards share: the
//! checks of a job that misused the compute core's handlers.

#![allow(dead_code)]

use fshmem_tests::Job;

/// Checks a `compute_reject case` job on `n` boards: status 1, PE 0's line
/// naming the sending PE (the last) and the handler, every PE's first line.
pub fn reject_failed(j: &Job, case: &str) {
    let n = j.n;
    assert_eq!(j.out.code(), Some(1), "{case}: {j:?}");
    let (handler, why) = match case {
        "handler" => (225, "implements only handler 224"),
        "args" => (224, "takes 11 arguments, this one had 1"),
        _ => (224, "is not a user handler"),
    };
    let want = format!(
        "compute_reject: PE 0: active message: the board's compute core dropped a request \
         from PE {} to handler {handler} (",
        n - 1
    );
    assert!(
        j.out.stderr.lines().any(|l| l.starts_with(&want)
            && l.contains(why)
            && l.ends_with("(ERR_STATUS.COMPUTE)")),
        "{case}: no line {want:?}...{why:?}: {j:?}"
    );
    for pe in 0..n {
        j.assert_line(&format!("compute_reject: PE {pe} of {n} attached"));
    }
    assert!(!j.out.stdout.contains("PE 0 finalized"), "{j:?}");
}

/// Checks an `am_compute_index short` job (`tests/c/am_compute_index.c`)
/// on `n` boards with a compute core: status 1, the last PE's line naming
/// itself, the call and handler 224 as the board's, pointing at
/// shmem::compute; every PE's first line; the call did not return.
pub fn index_refused(j: &Job) {
    let n = j.n;
    assert_eq!(j.out.code(), Some(1), "{j:?}");
    let me = n - 1;
    let want = format!(
        "PE {me}: shmemx_am_request_short: handler 224 is one of the board's compute handlers \
         (224..=255, run by the compute core of PE {me}'s board, CAPS.COMPUTE)"
    );
    assert!(
        j.out
            .stderr
            .lines()
            .any(|l| l.starts_with(&want) && l.contains("shmem::compute")),
        "no line {want:?}: {j:?}"
    );
    for pe in 0..n {
        j.assert_line(&format!(
            "am_compute_index: PE {pe} of {n} registered handler 64"
        ));
    }
    assert!(!j.out.stdout.contains("the short call returned"), "{j:?}");
}

/// Checks a `matmul_fpga` job on boards without a compute core: status 1
/// and a PE's line saying its board has none.
pub fn no_core_refused(j: &Job) {
    assert_eq!(j.out.code(), Some(1), "{j:?}");
    let line = "shmem::compute: this PE's board has no compute core (its CAPS.COMPUTE is 0)";
    assert!(
        (0..j.n).any(|pe| j
            .out
            .stderr
            .contains(&format!("matmul_fpga: PE {pe}: {line}"))),
        "{j:?}"
    );
    assert!(j.lines_starting("matmul_fpga n=").is_empty(), "{j:?}");
}
