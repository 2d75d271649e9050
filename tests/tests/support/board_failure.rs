//! A board that fails under a running job: the stress mix runs on `n`
//! boards and board 1 gets a signal (SIGSTOP: it stops answering; SIGKILL:
//! it dies). The other PEs must report PE 1 and the job must end non-zero
//! within its bound, leaving no board files. Shared by the engine's and the
//! RTL core's tests.

use fshmem_tests::{
    example, finish, oshrun_cmd, send_signal, shm_files, spawn, unique_job_id, wait_board_pid,
};
use std::time::Duration;

/// Runs `stress stress_args` on `n` boards with `env` added
/// (`FSHMEM_PEER_TIMEOUT=1`), sends board 1 `sig` once PE 0 prints that it
/// runs, and checks that the job ends non-zero within 15 s of the signal,
/// its output saying `PE 1 failed` and `expect`, with no board files left.
pub fn board_fails(n: usize, stress_args: &[&str], env: &[(&str, &str)], sig: i32, expect: &str) {
    let id = unique_job_id("fb");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", "fpga", "--job-id", &id]);
    cmd.arg(example("stress"))
        .args(stress_args)
        .env("FSHMEM_PEER_TIMEOUT", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = spawn(&mut cmd);
    let pid = wait_board_pid(&id, 1, Duration::from_secs(30));
    assert!(
        child
            .wait_line(Duration::from_secs(60), |l| l == "stress: PE 0: running")
            .is_some(),
        "the job never ran: {}",
        child.stdout_so_far()
    );
    let signalled = std::time::Instant::now();
    send_signal(pid, sig).expect("the signal to board 1");
    let out = finish(child, Duration::from_secs(60));
    let took = signalled.elapsed();
    eprintln!("{id}: board 1 of {n} got signal {sig}; the job ended {took:?} later");
    let all = format!("{}{}", out.stdout, out.stderr);
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        all.contains("PE 1 failed") && all.contains(expect),
        "{expect}: {out:?}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}: {out:?}");
    assert!(shm_files(&id).is_empty(), "{:?}", shm_files(&id));
}
