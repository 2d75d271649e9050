//! C programs get what the OpenSHMEM specification promises, and misuse
//! is reported instead of silently going wrong: allocation returns NULL
//! when the heap cannot satisfy it; collectives whose arguments differ
//! between PEs are reported on every PE; a program that leaves `main`
//! without `shmem_finalize` finalizes; the library initializes again
//! after a finalize; the profiling interface (`pshmem_*`) lets a tool
//! count calls. Every case runs real jobs through `oshrun`.
//!
//! Needs `oshcc`, `oshrun` and `libshmem.so` built in this profile
//! (`cargo build --release --workspace`) and a C compiler.

#[path = "support/capi.rs"]
mod capi;

use capi::{compile, job_env, lines_with};

/// Allocation that the heap cannot satisfy returns NULL on every PE and
/// the program runs on; probing the heap until NULL finds its size.
#[test]
fn allocation_returns_null_when_the_heap_cannot_satisfy_it() {
    let exe = compile("alloc_null", &[]);
    for n in [1, 2, 4, 5] {
        let j = job_env(n, &exe, &[], &[("SHMEM_SYMMETRIC_SIZE", "16M")]);
        j.assert_ok_with(&format!("alloc_null: ok on {n} PEs"));
        j.assert_line("alloc_null: probe ran to the end");
        assert!(j.out.stderr.is_empty(), "{j:?}");
    }
    // Under SHMEM_DEBUG each refusal is one line naming the PE, the call
    // and the request.
    let j = job_env(
        2,
        &exe,
        &[],
        &[("SHMEM_SYMMETRIC_SIZE", "16M"), ("SHMEM_DEBUG", "1")],
    );
    j.assert_ok_with("alloc_null: ok on 2 PEs");
    for pe in 0..2 {
        let refusals = lines_with(
            &j.out.stderr,
            &format!(
                "PE {pe}: shmem_malloc: symmetric heap exhausted: requested 1125899906842624 bytes"
            ),
        );
        assert_eq!(refusals.len(), 1, "{j:?}");
        let align = lines_with(
            &j.out.stderr,
            &format!("PE {pe}: shmem_align: alignment 3 is not a power of two"),
        );
        assert_eq!(align.len(), 1, "{j:?}");
    }
}

/// What PE 0 and the last PE called in each case of `coll_agree`.
fn disagreement(case: &str, n: usize) -> (String, String) {
    let last = n - 1;
    let pair =
        |call: &str, a: &str, b: &str| (format!("{call} with {a}"), format!("{call} with {b}"));
    match case {
        "bcast_root" => pair(
            "shmem_int_broadcast",
            "root 0, 10 elements of 4 bytes",
            "root 1, 10 elements of 4 bytes",
        ),
        "bcast_count" => pair(
            "shmem_int_broadcast",
            "root 0, 10 elements of 4 bytes",
            "root 0, 20 elements of 4 bytes",
        ),
        "reduce_count" => pair(
            "shmem_int_sum_reduce",
            "4 elements of 4 bytes",
            "5 elements of 4 bytes",
        ),
        "reduce_zero" => pair(
            "shmem_int_sum_reduce",
            "4 elements of 4 bytes",
            "0 elements of 4 bytes",
        ),
        "reduce_op" => (
            "shmem_int_sum_reduce with 4 elements of 4 bytes".to_string(),
            "shmem_int_max_reduce with 4 elements of 4 bytes".to_string(),
        ),
        "fcollect_count" => pair(
            "shmem_int_fcollect",
            "2 elements of 4 bytes",
            "3 elements of 4 bytes",
        ),
        "alltoall_block" => pair(
            "shmem_int_alltoall",
            "blocks of 1 elements of 4 bytes",
            "blocks of 2 elements of 4 bytes",
        ),
        "to_all" => pair(
            "shmem_long_sum_to_all",
            "2 elements of 8 bytes",
            "3 elements of 8 bytes",
        ),
        other => panic!("no case {other} (last PE {last})"),
    }
}

/// A collective whose arguments differ between PEs ends the job with
/// status 1 after every PE has printed one line naming both PEs and both
/// calls; no PE returns from the collective.
#[test]
fn collectives_report_arguments_that_differ_between_pes() {
    let exe = compile("coll_agree", &[]);
    let cases = [
        "bcast_root",
        "bcast_count",
        "reduce_count",
        "reduce_zero",
        "reduce_op",
        "fcollect_count",
        "alltoall_block",
        "to_all",
    ];
    let runs: Vec<(usize, &[(&str, &str)])> = vec![
        (2, &[]),
        (4, &[]),
        (5, &[]),
        (5, &[("FSHMEM_BARRIER_ALGO", "tree")]),
    ];
    for (n, env) in runs {
        for case in cases {
            let j = job_env(n, &exe, &[case], env);
            assert_eq!(j.out.code(), Some(1), "{case}: {j:?}");
            assert!(!j.out.stdout.contains("returned"), "{case}: {j:?}");
            let (first, other) = disagreement(case, n);
            for pe in 0..n {
                // Each PE names its own call.
                let mine = if pe == n - 1 { &other } else { &first };
                let call = mine.split(' ').next().unwrap_or("");
                let want = format!(
                    "PE {pe}: {call}: the PEs disagree: PE 0 called {first}, PE {} called {other}",
                    n - 1
                );
                assert_eq!(
                    lines_with(&j.out.stderr, &want).len(),
                    1,
                    "{case} on {n} PEs {env:?}: missing {want:?} in {j:?}"
                );
            }
        }
    }
    // Arguments that agree pass, also when PEs name the same type
    // differently (int and int32_t).
    for n in [1, 2, 4, 5] {
        let j = job_env(n, &exe, &["ok"], &[]);
        j.assert_ok_with(&format!("coll_agree: ok on {n} PEs"));
    }
}

/// The argument check on the ipv6 and fpga conduits at 2 and 4 PEs.
#[test]
fn collectives_report_differing_arguments_on_ipv6_and_fpga() {
    let exe = compile("coll_agree", &[]);
    for conduit in ["ipv6", "fpga"] {
        for n in [2, 4] {
            let j = capi::job_on(
                conduit,
                n,
                &exe,
                &["bcast_root"],
                &[],
                fshmem_tests::JOB_TIMEOUT,
            );
            assert_eq!(j.out.code(), Some(1), "{conduit}: {j:?}");
            let (first, other) = disagreement("bcast_root", n);
            for pe in 0..n {
                let want = format!(
                    "PE {pe}: shmem_int_broadcast: the PEs disagree: PE 0 called {first}, PE {} called {other}",
                    n - 1
                );
                assert_eq!(
                    lines_with(&j.out.stderr, &want).len(),
                    1,
                    "{conduit}: {j:?}"
                );
            }
            let j = capi::job_on(conduit, n, &exe, &["ok"], &[], fshmem_tests::JOB_TIMEOUT);
            j.assert_ok_with(&format!("coll_agree: ok on {n} PEs"));
        }
    }
}
