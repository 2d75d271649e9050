//! Teams, collectives and contexts on real smp jobs through `oshrun`:
//! `coll_check` (a `shmem` example) at 1 to 9 PEs with the automatic
//! algorithm choice, then once per forced algorithm at 3, 4 and 7 PEs
//! (odd, power of two, and neither). The jobs run one at a time so that
//! 9 PEs share the cores with nobody else.

use fshmem_tests::{example, oshrun_cmd, run, shm_files, unique_job_id};
use std::sync::Mutex;
use std::time::Duration;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn coll_check(n: usize, env: Option<(&str, &str)>, quick: bool) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let job = unique_job_id("coll");
    let prog = example("coll_check");
    let mut cmd = oshrun_cmd(&[
        "-n".as_ref(),
        n.to_string().as_ref(),
        "--job-id".as_ref(),
        job.as_ref(),
        prog.as_os_str(),
    ]);
    if quick {
        cmd.arg("quick");
    }
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, Duration::from_secs(60));
    assert_eq!(out.code(), Some(0), "{n} PEs, {env:?}: {out:?}");
    for r in 0..n {
        let line = format!("coll_check: PE {r} of {n} ok");
        assert!(out.stdout.contains(&line), "missing {line:?} in {out:?}");
    }
    assert!(
        shm_files(&job).is_empty(),
        "left behind: {:?}",
        shm_files(&job)
    );
}

#[test]
fn pes_1_to_9_automatic_choice() {
    for n in 1..=9 {
        coll_check(n, None, n != 1 && n != 4 && n != 7 && n != 9);
    }
}

fn forced(var: &str, algos: &[&str], quick: bool) {
    for a in algos {
        for n in [3, 4, 7] {
            coll_check(n, Some((var, a)), quick);
        }
    }
}

#[test]
fn barrier_algorithms() {
    forced("FSHMEM_BARRIER_ALGO", &["dissemination", "tree"], true);
}

#[test]
fn broadcast_algorithms() {
    forced(
        "FSHMEM_BCAST_ALGO",
        &["binomial", "scatter_allgather"],
        true,
    );
}

#[test]
fn reduction_algorithms_every_op_and_type() {
    forced(
        "FSHMEM_REDUCE_ALGO",
        &["recursive_doubling", "rabenseifner", "ring"],
        false,
    );
}

#[test]
fn fcollect_algorithms() {
    forced(
        "FSHMEM_FCOLLECT_ALGO",
        &["ring", "bruck", "recursive_doubling"],
        true,
    );
}

#[test]
fn alltoall_algorithms() {
    forced("FSHMEM_ALLTOALL_ALGO", &["pairwise", "linear"], true);
}

/// The two-level collectives forced on one host run their host level
/// alone (every PE reports to the leader, which combines and answers).
#[test]
fn hierarchy_forced_on_one_host() {
    forced("FSHMEM_COLL_HIER", &["on"], false);
}

#[test]
fn bad_algorithm_name_is_an_error_naming_the_variable() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let prog = example("coll_check");
    let mut cmd = oshrun_cmd(&["-n".as_ref(), "2".as_ref(), prog.as_os_str()]);
    cmd.env("FSHMEM_REDUCE_ALGO", "fastest");
    let out = run(&mut cmd, Duration::from_secs(60));
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.contains("FSHMEM_REDUCE_ALGO=\"fastest\""),
        "{out:?}"
    );
}

#[test]
fn shmem_info_lists_the_collective_variables() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let prog = example("coll_check");
    let mut cmd = oshrun_cmd(&[
        "-n".as_ref(),
        "1".as_ref(),
        prog.as_os_str(),
        "quick".as_ref(),
    ]);
    cmd.env("SHMEM_INFO", "1")
        .env("FSHMEM_BCAST_ALGO", "binomial");
    let out = run(&mut cmd, Duration::from_secs(60));
    assert_eq!(out.code(), Some(0), "{out:?}");
    for v in [
        "FSHMEM_BARRIER_ALGO",
        "FSHMEM_BCAST_ALGO",
        "FSHMEM_BCAST_LARGE",
        "FSHMEM_REDUCE_ALGO",
        "FSHMEM_REDUCE_LARGE",
        "FSHMEM_FCOLLECT_ALGO",
        "FSHMEM_ALLTOALL_ALGO",
        "FSHMEM_COLL_HIER",
        "FSHMEM_TEAMS_MAX",
        "FSHMEM_COLL_SCRATCH",
    ] {
        assert!(out.stdout.contains(v), "{v} missing: {out:?}");
    }
    assert!(out.stdout.contains("binomial"), "{out:?}");
}

/// The Rust API's side of the argument check (`coll_agree`): mismatched
/// roots (one out of range on one PE), counts, strides and operators
/// return the same error on every PE, write nothing, and leave the team
/// usable; at 1, 2, 4 and 5 PEs and with the tree barrier.
#[test]
fn mismatched_arguments_are_errors_on_every_pe() {
    let runs: [(usize, Option<(&str, &str)>); 5] = [
        (1, None),
        (2, None),
        (4, None),
        (5, None),
        (5, Some(("FSHMEM_BARRIER_ALGO", "tree"))),
    ];
    for (n, env) in runs {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let job = unique_job_id("agree");
        let prog = example("coll_agree");
        let mut cmd = oshrun_cmd(&[
            "-n".as_ref(),
            n.to_string().as_ref(),
            "--job-id".as_ref(),
            job.as_ref(),
            prog.as_os_str(),
        ]);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = run(&mut cmd, Duration::from_secs(60));
        assert_eq!(out.code(), Some(0), "{n} PEs, {env:?}: {out:?}");
        let line = format!("coll_agree: ok on {n} PEs");
        assert!(
            out.stdout.lines().any(|l| l == line),
            "missing {line:?} in {out:?}"
        );
        let reports = out.stdout.matches("the PEs disagree").count();
        assert_eq!(reports, if n == 1 { 0 } else { 9 * n }, "{out:?}");
    }
}
