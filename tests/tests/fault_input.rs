//! Bad input gives typed errors naming the PE, the call and the value:
//! the Rust API (`fault input`) and the conduit API (`fault_conduit`) on
//! smp, ipv6 and fpga, a collective allocation with different sizes (every PE
//! reports it, the job stays usable), invalid environment values, and
//! oshrun misuse.

use fshmem_tests::{example, oshrun, oshrun_cmd, run, shm_files, unique_job_id};
use std::time::Duration;

const API_CHECKS: [&str; 12] = [
    "pe-out-of-range",
    "pe-out-of-range-get",
    "pe-out-of-range-atomic",
    "index-outside-object",
    "length-overruns-object",
    "length-overflows",
    "wait-outside-object",
    "heap-exhausted",
    "size-overflow",
    "bad-alignment",
    "double-free",
    "foreign-free",
];

const CONDUIT_CHECKS: [&str; 10] = [
    "put-pe-out-of-range",
    "get-pe-out-of-range",
    "atomic-pe-out-of-range",
    "am-pe-out-of-range",
    "put-past-end",
    "get-overflowing-length",
    "atomic-past-end",
    "atomic64-misaligned",
    "atomic32-misaligned",
    "signal-misaligned",
];

fn job(
    conduit: &str,
    n: usize,
    prog: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> fshmem_tests::RunOutput {
    let id = unique_job_id("in");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", conduit, "--job-id", &id]);
    cmd.arg(example(prog)).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, Duration::from_secs(30));
    assert!(shm_files(&id).is_empty());
    out
}

#[test]
fn api_and_conduit_refuse_bad_arguments_with_typed_errors() {
    for conduit in ["smp", "ipv6", "fpga"] {
        let out = job(conduit, 4, "fault", &["input"], &[]);
        assert_eq!(out.code(), Some(0), "{conduit}: {out:?}");
        for c in API_CHECKS {
            assert!(
                out.stdout.contains(&format!("ok {c}: PE 0: shmem_")),
                "{conduit}: {c}: {out:?}"
            );
        }
        assert!(
            out.stdout
                .contains("target PE 4 out of range (job has 4 PEs)")
        );
        let out = job(conduit, 3, "fault_conduit", &[], &[]);
        assert_eq!(out.code(), Some(0), "{conduit}: {out:?}");
        for c in CONDUIT_CHECKS {
            assert!(
                out.stdout.contains(&format!("ok {c}: ")),
                "{conduit}: {c}: {out:?}"
            );
        }
    }
}

#[test]
fn collective_allocation_with_different_sizes_is_caught_on_every_pe() {
    for conduit in ["smp", "ipv6", "fpga"] {
        let out = job(conduit, 4, "fault", &["mismatch"], &[]);
        assert_ne!(out.code(), Some(0), "{conduit}: {out:?}");
        let reports: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.contains("shmem_malloc: not the same on every PE"))
            .collect();
        assert_eq!(reports.len(), 4, "{conduit}: {out:?}");
        for r in reports {
            assert!(
                r.contains("PE 1 called shmem_malloc with 128 bytes")
                    && r.contains("called shmem_malloc with 64 bytes"),
                "{conduit}: {r}"
            );
        }
        assert!(!out.stdout.contains("succeeded"), "{conduit}: {out:?}");
    }
}

#[test]
fn invalid_environment_values_name_the_variable() {
    for (var, bad) in [
        ("SHMEM_SYMMETRIC_SIZE", "abc"),
        ("SHMEM_SYMMETRIC_SIZE", "-5"),
        ("SHMEM_SYMMETRIC_SIZE", "1e99"),
        ("SHMEM_SYMMETRIC_SIZE", "99999999T"),
        ("FSHMEM_TEAMS_MAX", "-3"),
        ("FSHMEM_COLL_SCRATCH", "lots"),
        ("SHMEM_DEBUG", "maybe"),
    ] {
        let out = job("smp", 2, "fault", &["input"], &[(var, bad)]);
        assert_ne!(out.code(), Some(0), "{var}={bad}: {out:?}");
        assert!(
            out.stderr.contains(&format!("{var}={bad:?} is not valid")),
            "{var}={bad}: {out:?}"
        );
    }
}

#[test]
fn oshrun_misuse_is_a_usage_error() {
    for args in [
        &["-n", "0", "true"][..],
        &["-n", "-3", "true"],
        &["-n", "2"],
        &["-n", "x", "true"],
    ] {
        let out = oshrun(args);
        assert_eq!(out.code(), Some(2), "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
    let mut cmd = oshrun_cmd(&["-n", "2", "/nonexistent/fshmem-program"]);
    let out = run(&mut cmd, Duration::from_secs(30));
    assert_eq!(out.code(), Some(127), "{out:?}");
    assert!(out.stderr.contains("cannot start PE 0"), "{out:?}");
}
