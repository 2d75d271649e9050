//! Liveness on the link conduits (`spec/conduit.md` §7.1), in one test so
//! that its phases do not overlap: never blaming a live peer, and naming
//! a dead or stopped one within `FSHMEM_PEER_TIMEOUT` + 1 s.
//!
//! 1. 4 PEs on fpga under 20 % loss, 5 % duplication and 30 %
//!    reordering of the datagrams, with a CPU hog on one core and the
//!    default peer timeout (10 s, probed every 500 ms), run the stress mix
//!    exactly and report no failure (2 runs of 2 s each;
//!    `scripts/liveness.sh stress` runs the 20-run campaigns of 10 s).
//! 2. With `FSHMEM_PEER_TIMEOUT=1s`, a PE whose process is SIGKILLed or
//!    SIGSTOPped, and on fpga a board SIGSTOPped, is named by the job
//!    within 2 s of the signal (`scripts/liveness.sh detect` repeats it).
//! 3. With `FSHMEM_PEER_TIMEOUT=1s`, a PE (ipv6) or board (fpga) that is
//!    alive but cut off from the others (the impairment's `cut=1@S`) is
//!    named within the timeout + 1 s of the cut, by every side.

use fshmem_tests::{
    board_pid, example, finish, oshrun_cmd, pe_pids, run, send_signal, shm_files, spawn,
    unique_job_id, wait_for,
};
use std::time::{Duration, Instant, SystemTime};

/// A busy loop pinned to CPU 0, killed and reaped on drop.
struct Hog(std::process::Child);

impl Hog {
    fn start() -> Hog {
        Hog(std::process::Command::new("taskset")
            .args(["-c", "0", "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("start a CPU hog (taskset, from util-linux)"))
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn heavy(conduit: &str) {
    for seed in ["21", "22"] {
        let id = unique_job_id("lh");
        let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", conduit, "--job-id", &id]);
        cmd.arg(example("stress"))
            .args(["2", "1000000", seed])
            .env("FSHMEM_IPV6_IMPAIR", "loss=20,dup=5,reorder=30")
            .env("FSHMEM_DEVSIM_IMPAIR", "loss=20,dup=5,reorder=30");
        let out = run(&mut cmd, Duration::from_secs(90));
        let ctx = format!("{conduit} seed {seed}: {out:?}");
        assert_eq!(out.code(), Some(0), "{ctx}");
        let ok = out
            .stdout
            .lines()
            .filter(|l| l.ends_with("on 4 PEs OK"))
            .count();
        assert_eq!(ok, 4, "{ctx}");
        assert!(!out.stderr.contains("failed"), "{ctx}");
        assert!(shm_files(&id).is_empty());
    }
}

/// Runs the stress mix on 4 PEs with a 1 s peer timeout, sends `sig` to
/// PE 1's process (or to board 1 with `board`) once it runs, and checks
/// that the failure is reported naming PE 1 with `expect` within 2 s (a
/// `FAIL` line for a stopped process, the job's end for a killed one), and
/// that the job ends non-zero within 3 s.
fn detect(conduit: &str, sig: i32, board: bool, expect: &str) {
    let id = unique_job_id("ld");
    let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", conduit, "--job-id", &id]);
    cmd.arg(example("stress"))
        .args(["30", "100000000", "5"])
        .env("FSHMEM_PEER_TIMEOUT", "1s");
    let mut child = spawn(&mut cmd);
    assert!(
        child
            .wait_line(Duration::from_secs(30), |l| l == "stress: PE 1: running")
            .is_some(),
        "the job never ran: {}",
        child.stdout_so_far()
    );
    let mut pid = 0i32;
    assert!(
        wait_for(Duration::from_secs(10), || {
            pid = if board {
                board_pid(&id, 1).unwrap_or(0)
            } else {
                pe_pids(&id, Some(1)).first().map_or(0, |&p| p as i32)
            };
            pid > 0
        }),
        "no process for PE 1"
    );
    let t = Instant::now();
    send_signal(pid, sig).expect("the signal to PE 1 (its board)");
    // A stopped PE is reported by the PE that finds it (a `FAIL` line); a
    // killed one by oshrun, which then ends the job.
    let reported = (sig == libc::SIGSTOP)
        .then(|| child.wait_line(Duration::from_secs(30), |l| l.contains(": FAIL: ")))
        .flatten()
        .map(|_| t.elapsed());
    let out = finish(child, Duration::from_secs(30));
    let ended = t.elapsed();
    let took = reported.unwrap_or(ended);
    if sig == libc::SIGSTOP {
        // The stopped process must not outlive the test.
        let _ = send_signal(pid, libc::SIGKILL);
    }
    let all = format!("{}{}", out.stdout, out.stderr);
    let ctx = format!("{conduit} signal {sig} board {board}: {took:?} {out:?}");
    assert_ne!(out.code(), Some(0), "{ctx}");
    assert!(all.contains("PE 1") && all.contains(expect), "{ctx}");
    assert!(took <= Duration::from_secs(2), "{ctx}");
    // The job ends soon after: a stopped board or PE is not waited for
    // (the keeper wakes a stopped board with SIGCONT after its SIGTERM).
    assert!(
        ended <= Duration::from_secs(3),
        "ended {ended:?} after: {ctx}"
    );
    assert!(shm_files(&id).is_empty(), "{:?}", shm_files(&id));
}

/// Runs the stress mix on 4 PEs with a 1 s peer timeout and cuts PE 1
/// (board 1) off from the others, alive, 5 s after the launch (the
/// impairment's `cut=1@S`, the same instant for every process); the job
/// must be running by then, and a PE must name PE 1 as failed, with
/// `expect` in the output, within the timeout + 1 s of the cut; the job
/// ends non-zero.
fn detect_cut(conduit: &str, expect: &str) {
    let id = unique_job_id("lc");
    let cut = SystemTime::now() + Duration::from_secs(5);
    let at = cut
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let impair = format!("cut=1@{at:.6}");
    let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", conduit, "--job-id", &id]);
    cmd.arg(example("stress"))
        .args(["30", "100000000", "5"])
        .env("FSHMEM_PEER_TIMEOUT", "1s")
        .env("FSHMEM_IPV6_IMPAIR", &impair)
        .env("FSHMEM_DEVSIM_IMPAIR", &impair);
    let mut child = spawn(&mut cmd);
    assert!(
        child
            .wait_line(Duration::from_secs(30), |l| l == "stress: PE 1: running")
            .is_some(),
        "the job never ran: {}",
        child.stdout_so_far()
    );
    assert!(
        SystemTime::now() < cut,
        "the job started after the cut: {}",
        child.stdout_so_far()
    );
    let named = child.wait_line(Duration::from_secs(30), |l| {
        l.contains(": FAIL: ") && l.contains("PE 1 failed")
    });
    let took = SystemTime::now().duration_since(cut).unwrap_or_default();
    let out = finish(child, Duration::from_secs(30));
    let all = format!("{}{}", out.stdout, out.stderr);
    let ctx = format!("{conduit} cut: {named:?} {took:?} after the cut; {out:?}");
    assert!(named.is_some(), "no PE named PE 1: {ctx}");
    assert_ne!(out.code(), Some(0), "{ctx}");
    assert!(all.contains(expect), "{ctx}");
    assert!(took <= Duration::from_secs(2), "{ctx}");
    assert!(shm_files(&id).is_empty(), "{:?}", shm_files(&id));
}

#[test]
fn live_peers_are_never_blamed_and_dead_or_stopped_ones_are_named_in_time() {
    {
        let _hog = Hog::start();
        heavy("fpga");
    }
    detect("ipv6", libc::SIGKILL, false, "PE 1");
    detect("ipv6", libc::SIGSTOP, false, "no packet from it");
    detect("fpga", libc::SIGKILL, false, "PE 1");
    detect("fpga", libc::SIGSTOP, false, "has been stopped");
    detect("fpga", libc::SIGSTOP, true, "stopped answering");
    detect_cut("ipv6", "PE 1 failed");
    detect_cut("fpga", "PE 1 failed");
}
