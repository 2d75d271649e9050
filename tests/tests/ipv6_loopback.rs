//! The ipv6 conduit on one host: real jobs through `oshrun --conduit ipv6`
//! (UDP over `[::1]`, rendezvous bootstrap run by oshrun) at 2, 4 and 5
//! PEs — the conduit check, shmem's api_check and the examples must give
//! exact results — plus failure handling: a silent peer is reported by
//! name and the job ends non-zero, `global_exit` ends every PE.

use fshmem_tests::{Job, any_bin, example, ipv6_job, skip};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(40);
const SIZES: [usize; 3] = [2, 4, 5];

fn ok(j: &Job, line_prefix: &str, count: usize) {
    assert_eq!(j.out.code(), Some(0), "{j:?}");
    assert_eq!(j.lines_starting(line_prefix).len(), count, "{j:?}");
}

#[test]
fn conduit_check_at_2_4_5_pes() {
    for n in SIZES {
        let j = ipv6_job(n, &example("smp_check"), &["20"], &[], TIMEOUT);
        ok(&j, "smp_check: PE", n);
    }
}

#[test]
fn api_check_at_2_4_5_pes() {
    let p = any_bin("api_check");
    for n in SIZES {
        let j = ipv6_job(n, &p, &[] as &[&str], &[], TIMEOUT);
        assert_eq!(j.out.code(), Some(0), "{j:?}");
        let tail = format!("checks on each of {n} PEs passed");
        let l = j.lines_starting("api_check:");
        assert!(l.len() == 1 && l[0].ends_with(&tail), "{j:?}");
    }
}

#[test]
fn examples_at_2_4_5_pes() {
    for (name, want) in [
        ("hello", "hello: "),
        ("ring", "ring: token made"),
        ("matmul", "matmul n=96"),
        ("histogram", "histogram: every bin matches"),
    ] {
        let p = any_bin(name);
        for n in SIZES {
            let j = ipv6_job(n, &p, &[] as &[&str], &[], TIMEOUT);
            assert_eq!(j.out.code(), Some(0), "{name} at {n}: {j:?}");
            let lines = j.lines_starting(want);
            assert_eq!(lines.len(), 1, "{name} at {n}: {j:?}");
            assert!(lines[0].ends_with("OK"), "{name} at {n}: {j:?}");
        }
    }
}

#[test]
fn silent_peer_fails_the_job_by_name() {
    let j = ipv6_job(
        3,
        &example("ipv6_fail"),
        &[] as &[&str],
        &[("FSHMEM_PEER_TIMEOUT", "1s")],
        TIMEOUT,
    );
    assert_eq!(j.out.code(), Some(3), "{j:?}");
    let l = j.lines_starting("ipv6_fail: PE 1 failed after");
    assert_eq!(l.len(), 1, "{j:?}");
    assert!(j.out.elapsed < Duration::from_secs(10), "{j:?}");
}

#[test]
fn vanished_pe_is_detected_and_global_exit_ends_the_job() {
    let j = ipv6_job(3, &example("smp_fail"), &["detect"], &[], TIMEOUT);
    assert_eq!(j.out.code(), Some(0), "{j:?}");
    assert_eq!(j.lines_starting("detected: PE 1 failed").len(), 2, "{j:?}");
    let j = ipv6_job(3, &example("smp_fail"), &["global-exit", "7"], &[], TIMEOUT);
    assert_eq!(j.out.code(), Some(7), "{j:?}");
}

/// MPICH's Hydra launcher bootstraps the job over PMI-1 (no oshrun).
#[test]
fn mpich_hydra_launches_over_pmi() {
    let hydra = std::path::Path::new("/usr/bin/mpiexec.hydra");
    if !hydra.is_file() {
        skip("/usr/bin/mpiexec.hydra is absent (apt-get install mpich)");
        return;
    }
    for (prog, args, want) in [
        (example("smp_check"), vec!["10"], "smp_check: PE"),
        (example("api_check"), vec![], "api_check: "),
    ] {
        let mut cmd = std::process::Command::new(hydra);
        cmd.args(["-n", "3"]).arg(&prog).args(&args);
        let out = fshmem_tests::run(&mut cmd, TIMEOUT);
        assert_eq!(out.code(), Some(0), "{out:?}");
        assert!(out.stdout.contains(want), "{out:?}");
    }
}

/// `shmem_global_exit(0)` from one PE ends every PE with 0: the peers
/// that the exit request ends are not reported as having exited without
/// finalizing.
#[test]
fn shmem_global_exit_0_ends_the_job_with_0() {
    for status in [0, 5] {
        let s = status.to_string();
        let j = ipv6_job(4, &example("fault"), &["global-exit", &s], &[], TIMEOUT);
        assert_eq!(j.out.code(), Some(status), "{j:?}");
        assert!(!j.out.stderr.contains("without calling"), "{j:?}");
        assert!(!j.out.stdout.contains("wait_until returned"), "{j:?}");
    }
}

/// A conduit wait (here a blocking get from a stopped PE) honours
/// `FSHMEM_WAIT_TIMEOUT` when it is shorter than the peer timeout, and
/// says what it waited for.
#[test]
fn conduit_waits_honour_the_wait_timeout() {
    let j = ipv6_job(
        2,
        &example("ipv6_fail"),
        &[] as &[&str],
        &[
            ("FSHMEM_PEER_TIMEOUT", "30s"),
            ("FSHMEM_WAIT_TIMEOUT", "0.5"),
        ],
        TIMEOUT,
    );
    assert_eq!(j.out.code(), Some(4), "{j:?}");
    let l = j.lines_starting("ipv6_fail: PE 0: no progress for ");
    assert_eq!(l.len(), 1, "{j:?}");
    assert!(
        l[0].contains("waiting for the data of a blocking get from PE 1"),
        "{j:?}"
    );
    assert!(j.out.elapsed < Duration::from_secs(10), "{j:?}");
}
