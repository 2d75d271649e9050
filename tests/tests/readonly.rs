//! Read-only symmetric objects (`SymVec::into_read_only`, the safe
//! zero-copy view) on real jobs through `oshrun`, with `shmem`'s
//! `ro_check` example:
//!
//! - rounds of writes through every writer there is (default-context and
//!   other threads' contexts left unquieted, non-blocking scopes, Long
//!   requests and Long replies, put-with-signal, an fcollect), each ended
//!   by the conversion alone, then exact checks of this PE's slice, every
//!   peer's copy, and the object as a collective's source — at 1 to 4 PEs
//!   on smp, and at 2, 3 and 4 PEs on ipv6 and fpga (devsim boards), with
//!   and without lost, duplicated and reordered datagrams;
//! - the same with (nearly) every write made one way, on 4 PEs over lossy
//!   links, so that no other operation to the same target completes them
//!   on the way and writes are still in flight when the conversion starts
//!   (on 2 or 3 PEs every PE hears from every other directly in the
//!   conversion's sync, which carries them along): without the quiet of
//!   every context (`ctx`, ipv6) or the delivery check of Long messages
//!   (`long`, fpga), these fail within a few rounds;
//! - GEMM tiles started on the boards' compute cores (fpga) and not
//!   waited for: converting their output and their ART destination waits
//!   for them, and both hold the whole result;
//! - PE 0 converting another object than the others: every PE fails
//!   naming both PEs, the job ends non-zero, leaves nothing behind;
//! - PE 0 making a barrier while the others convert the object it had
//!   converted before: the converting PEs fail instead of taking the
//!   barrier for agreement (dissemination and tree barriers, and the
//!   two-level sync of a job over two hosts).

use fshmem_tests::{RunOutput, example, oshrun_cmd, run, shm_files, unique_job_id};
use std::time::Duration;

const IMPAIR: &str = "loss=5,dup=2,reorder=10";

fn ro_check(n: usize, conduit: &str, args: &[&str], impair: Option<&str>) -> RunOutput {
    ro_check_with(n, &["--conduit", conduit], args, impair, &[])
}

/// `oshrun -n N OSHRUN_ARGS ro_check ARGS` with the impairment and the
/// environment `env`.
fn ro_check_with(
    n: usize,
    oshrun_args: &[&str],
    args: &[&str],
    impair: Option<&str>,
    env: &[(&str, &str)],
) -> RunOutput {
    let conduit = oshrun_args.join(" ");
    let id = unique_job_id("ro");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--job-id", &id]);
    cmd.args(oshrun_args).arg(example("ro_check")).args(args);
    if let Some(i) = impair {
        cmd.env("FSHMEM_IPV6_IMPAIR", i);
        cmd.env("FSHMEM_DEVSIM_IMPAIR", i);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, Duration::from_secs(90));
    let left = shm_files(&id);
    assert!(left.is_empty(), "{conduit}, {n} PEs: left behind {left:?}");
    out
}

fn rounds_exact(n: usize, conduit: &str, ways: &str, impair: Option<&str>) {
    let out = ro_check(n, conduit, &["6", ways, "256"], impair);
    let what = format!("{conduit}, {n} PEs, {ways}, {impair:?}: {out:?}");
    assert_eq!(out.code(), Some(0), "{what}");
    for pe in 0..n {
        let line = format!("ro_check: PE {pe} of {n} ok");
        assert!(
            out.stdout.lines().any(|l| l == line),
            "missing {line:?}: {what}"
        );
    }
    assert!(!out.stderr.contains("FAILED"), "{what}");
}

fn mismatch_fails_everywhere(n: usize, conduit: &str) {
    let out = ro_check(n, conduit, &["mismatch"], None);
    let what = format!("{conduit}, {n} PEs: {out:?}");
    assert_ne!(out.code(), Some(0), "{what}");
    for pe in 0..n {
        let prefix = format!("ro_check: PE {pe}: SymVec::into_read_only: the PEs disagree: ");
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("PE {pe} reported no mismatch: {what}"));
        assert!(
            line.contains("PE 0 called SymVec::into_read_only with the object at segment offset")
                && line.contains(
                    "PE 1 called SymVec::into_read_only with the object at segment offset"
                ),
            "{line}: {what}"
        );
    }
    assert!(!out.stdout.contains("no mismatch found"), "{what}");
    assert!(out.elapsed < Duration::from_secs(30), "{what}");
}

#[test]
fn smp_rounds_at_1_to_4_pes_are_exact() {
    for n in 1..=4 {
        rounds_exact(n, "smp", "all", None);
    }
}

#[test]
fn ipv6_rounds_at_2_to_4_pes_are_exact_with_and_without_lossy_links() {
    for n in [2, 3, 4] {
        rounds_exact(n, "ipv6", "all", None);
        rounds_exact(n, "ipv6", "all", Some(IMPAIR));
    }
}

#[test]
fn fpga_rounds_at_2_to_4_boards_are_exact_with_and_without_lossy_links() {
    for n in [2, 3, 4] {
        rounds_exact(n, "fpga", "all", None);
        rounds_exact(n, "fpga", "all", Some(IMPAIR));
    }
}

#[test]
fn writes_of_one_way_still_in_flight_are_completed_by_the_conversion() {
    for conduit in ["ipv6", "fpga"] {
        for ways in ["default", "ctx", "long"] {
            rounds_exact(4, conduit, ways, Some(IMPAIR));
        }
    }
}

#[test]
fn fpga_compute_tiles_still_running_are_waited_for() {
    for n in [2, 3] {
        let out = ro_check(n, "fpga", &["gemm"], None);
        assert_eq!(out.code(), Some(0), "{n} boards: {out:?}");
        for pe in 0..n {
            let line = format!("ro_check: PE {pe} of {n} ok");
            assert!(out.stdout.lines().any(|l| l == line), "{n} boards: {out:?}");
        }
    }
}

#[test]
fn converting_different_objects_fails_on_every_pe_naming_both() {
    for n in [2, 3, 4] {
        mismatch_fails_everywhere(n, "smp");
    }
    mismatch_fails_everywhere(3, "ipv6");
    mismatch_fails_everywhere(2, "fpga");
}

/// PEs, oshrun's arguments, the environment.
type Case = (
    usize,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

#[test]
fn a_barrier_is_not_taken_for_a_conversion() {
    // Dissemination on one host; the tree barrier; two hosts, where the
    // sync runs in two levels (a host's members hear from their leader).
    let cases: [Case; 5] = [
        (2, &[], &[]),
        (3, &[], &[]),
        (4, &[], &[]),
        (5, &[], &[("FSHMEM_BARRIER_ALGO", "tree")]),
        (4, &["--hosts", "2"], &[]),
    ];
    for (n, oshrun_args, env) in cases {
        let out = ro_check_with(n, oshrun_args, &["barrier"], None, env);
        let what = format!("{n} PEs, {oshrun_args:?} {env:?}: {out:?}");
        assert_ne!(out.code(), Some(0), "{what}");
        assert!(
            out.stdout
                .lines()
                .any(|l| l == "ro_check: PE 0: made a barrier"),
            "{what}"
        );
        for pe in 1..n {
            let prefix = format!("ro_check: PE {pe}: SymVec::into_read_only: the PEs disagree: ");
            assert!(
                out.stdout.lines().any(|l| l.starts_with(&prefix)),
                "PE {pe} did not fail: {what}"
            );
        }
        assert!(!out.stdout.contains("converted while"), "{what}");
    }
}

#[test]
fn two_hosts_rounds_are_exact_and_mismatches_found() {
    for ways in ["all", "long"] {
        let out = ro_check_with(4, &["--hosts", "2"], &["4", ways, "64"], None, &[]);
        assert_eq!(out.code(), Some(0), "{ways}: {out:?}");
        for pe in 0..4 {
            let line = format!("ro_check: PE {pe} of 4 ok");
            assert!(out.stdout.lines().any(|l| l == line), "{ways}: {out:?}");
        }
    }
    let out = ro_check_with(4, &["--hosts", "2"], &["mismatch"], None, &[]);
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.contains("SymVec::into_read_only: the PEs disagree: PE 0 called"))
            .count(),
        4,
        "{out:?}"
    );
}
