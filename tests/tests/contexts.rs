//! Contexts are real: a context's quiet returns while another context
//! still has operations outstanding to a target that cannot answer, and
//! both contexts' results are exact. `shmem/examples/ctx_quiet.rs` at 3
//! PEs on the fpga conduit; this test stops PE 1's devsim board (SIGSTOP)
//! before PE 0 issues anything and resumes it (SIGCONT) only after PE 0
//! reports that its other context's quiet returned, so that quiet cannot
//! have waited for the stopped board.
//!
//! A context has the calls of the default one: non-blocking puts and gets
//! in its own scope, put-with-signal, team numbering and its rules
//! (`shmem/examples/ctx_ops.rs`), at 1, 2, 3 and 4 PEs on smp and at 2 and
//! 3 on ipv6 and fpga.

use fshmem_tests::{
    JOB_TIMEOUT, example, finish, fpga_job, ipv6_job, job, oshrun_cmd, send_signal, shm_files,
    spawn, unique_job_id, wait_board_pid,
};
use std::time::Duration;

#[test]
fn a_contexts_quiet_returns_while_another_waits_for_a_stopped_board() {
    let id = unique_job_id("ctxq");
    let dir = std::env::temp_dir().join(&id);
    std::fs::create_dir_all(&dir).unwrap();
    let (go1, go2) = (dir.join("go1"), dir.join("go2"));
    let mut cmd = oshrun_cmd(&["-n", "3", "--conduit", "fpga", "--job-id", &id]);
    cmd.arg(example("ctx_quiet"))
        .arg(&go1)
        .arg(&go2)
        // The stopped board must not be declared dead while it is stopped.
        .env("FSHMEM_PEER_TIMEOUT", "60");
    let mut job = spawn(&mut cmd);
    let pid = wait_board_pid(&id, 1, Duration::from_secs(30));
    assert!(
        job.wait_line(Duration::from_secs(60), |l| l == "ctx_quiet: PE 0: ready")
            .is_some(),
        "PE 0 never got ready: {}",
        job.stdout_so_far()
    );
    send_signal(pid, libc::SIGSTOP).expect("SIGSTOP to board 1");
    std::fs::write(&go1, b"").unwrap();
    let returned = job.wait_line(Duration::from_secs(60), |l| {
        l == "ctx_quiet: PE 0: fast quiet returned"
    });
    send_signal(pid, libc::SIGCONT).expect("SIGCONT to board 1");
    assert!(
        returned.is_some(),
        "the fast context's quiet waited for the stopped board: {}",
        job.stdout_so_far()
    );
    std::fs::write(&go2, b"").unwrap();
    let out = finish(job, Duration::from_secs(60));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(out.stdout.lines().any(|l| l == "ctx_quiet: ok"), "{out:?}");
    assert!(shm_files(&id).is_empty(), "{:?}", shm_files(&id));
}

#[test]
fn contexts_have_nonblocking_scopes_and_put_with_signal() {
    let exe = example("ctx_ops");
    for n in [1, 2, 3, 4] {
        job(n, &exe, &[] as &[&str], JOB_TIMEOUT)
            .assert_ok_with(&format!("ctx_ops: ok on {n} PEs"));
    }
    for n in [2, 3] {
        ipv6_job(n, &exe, &[] as &[&str], &[], JOB_TIMEOUT)
            .assert_ok_with(&format!("ctx_ops: ok on {n} PEs"));
        fpga_job(n, &exe, &[] as &[&str], JOB_TIMEOUT)
            .assert_ok_with(&format!("ctx_ops: ok on {n} PEs"));
    }
}
