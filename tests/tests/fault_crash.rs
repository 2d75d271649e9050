//! A PE that crashes — abort, SIGKILL from outside, a Rust panic, exit(3)
//! without finalize — at 4 PEs on smp, ipv6, fpga (devsim boards) and 2
//! hosts x 2 PEs (`oshrun --hosts 2`): oshrun exits non-zero, a message
//! names PE 1, the other PEs stop within 2 s of the failure, and no shared
//! memory, board file, PE or devsim process of the job is left. A PE that
//! vanishes with `_exit(0)` (which oshrun sees as a success) is detected by
//! the others' own liveness checks on every conduit. `exit(0)` without
//! finalize is a normal ending (the PE finalizes at exit, as under Sandia
//! OpenSHMEM): while the others wait for what it never sent, it waits for
//! them, says so, and the wait timeout ends the job. On 2 and 3 hosts, a
//! PE that learns of an off-node failure only from a PE of its own host,
//! which left because of it, names the PE of the other host.

use fshmem_tests::{
    example, finish, oshrun_cmd, pe_pids, send_signal, shm_files, spawn, unique_job_id, wait_for,
};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The bound on "the others stop within 2 s". The job ends by design well
/// inside it: oshrun collects a failed PE's exit status at once (SIGCHLD
/// through `sigtimedwait`), SIGTERMs the others (SIGKILL 400 ms later), and
/// a PE that sees a peer of its host vanish leaves naming it; no path waits
/// for a network timeout. Measured on 2 loaded cores: 17-120 ms from
/// SIGKILL to oshrun's exit at 2 hosts x 2 PEs; a panic with
/// `RUST_BACKTRACE=1` takes 0.2-0.7 s, most of it symbolising the trace.
const STOP_BOUND_MS: u128 = 2_000;

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn crash(conduit: &str, kind: &str) {
    crash_with(conduit, &[], kind);
}

/// [`crash`] with more oshrun options (`--hosts 2`: PE 1 shares its host
/// with PE 0, PEs 2 and 3 are on the other host).
fn crash_with(conduit: &str, oshrun_args: &[&str], kind: &str) {
    let id = unique_job_id("cr");
    let prog = example("fault");
    let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", conduit, "--job-id", &id]);
    // The bound is the job's, not a backtrace's: symbolising one took
    // 20 s once on the loaded machine, whatever the shell's setting.
    cmd.args(oshrun_args)
        .arg(&prog)
        .args(["crash", kind])
        .env("RUST_BACKTRACE", "0");
    let mut child = spawn(&mut cmd);
    let mut failed_at = None;
    if kind == "kill" {
        // Find PE 1 through the job's environment, let the job reach its
        // wait, then kill PE 1 from outside.
        let mut pid = Vec::new();
        assert!(
            wait_for(Duration::from_secs(20), || {
                pid = pe_pids(&id, Some(1));
                !pid.is_empty() && pe_pids(&id, None).len() >= 4
            }),
            "{conduit}: the job's PEs never all started"
        );
        // Every PE says so when its next runtime call is the wait (all
        // are past the barrier, which would fail on a dead PE).
        let mut waiting = [false; 4];
        while !waiting.iter().all(|&w| w) {
            let line = child.wait_line(Duration::from_secs(20), |l| {
                l.starts_with("fault: PE ") && l.ends_with(" waiting")
            });
            let Some(line) = line else {
                panic!(
                    "{conduit}: not every PE reached its wait: {}",
                    child.stdout_so_far()
                );
            };
            let pe: usize = line["fault: PE ".len()..line.len() - " waiting".len()]
                .parse()
                .expect("a PE number");
            waiting[pe] = true;
        }
        let now = now_ms();
        send_signal(pid[0] as i32, libc::SIGKILL).expect("SIGKILL to PE 1");
        failed_at = Some(now);
    }
    let out = finish(child, Duration::from_secs(30));
    let ended = now_ms();
    let ctx = format!("{conduit} {oshrun_args:?} {kind}: {out:?}");
    assert_ne!(out.code(), Some(0), "{ctx}");
    let failed_at = failed_at.unwrap_or_else(|| {
        out.stdout
            .lines()
            .find_map(|l| l.strip_prefix("fault: PE 1 failing at "))
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("no failure time: {ctx}"))
    });
    let took = ended.saturating_sub(failed_at);
    eprintln!("{conduit} {oshrun_args:?} {kind}: the job ended {took} ms after the failure");
    assert!(
        took < STOP_BOUND_MS,
        "{ctx}: the job ended {took} ms after the failure"
    );
    // The PEs that noticed name PE 1 (never a PE that left because of it),
    // and so does oshrun, whichever PE ended first.
    let detections: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains(" detected at "))
        .collect();
    for d in &detections {
        assert!(d.contains("PE 1 failed"), "{d:?} blames another PE: {ctx}");
    }
    assert!(
        out.stderr.contains("oshrun: PE 1 (pid") || out.stderr.contains("after PE 1 failed"),
        "oshrun does not name PE 1: {ctx}"
    );
    let pids: Vec<u32> = out
        .stdout
        .lines()
        .filter_map(|l| l.split(" pid ").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(pids.len(), 4, "{ctx}");
    for p in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{p}")).exists(),
            "{ctx}: process {p} is left"
        );
    }
    assert!(pe_pids(&id, None).is_empty(), "{ctx}: processes left");
    assert!(shm_files(&id).is_empty(), "{ctx}: {:?}", shm_files(&id));
    assert!(
        devsim_pids(&id).is_empty(),
        "{ctx}: devsim processes left: {:?}",
        devsim_pids(&id)
    );
}

/// The pids of devsim processes (keeper or boards) of job `id`: their
/// command line names the job (`--job ID`, `--dir .../fshmem-ID-boardN`).
fn devsim_pids(id: &str) -> Vec<u32> {
    let board = format!("fshmem-{id}-board");
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmd
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let devsim = args.first().is_some_and(|a| a.ends_with("devsim"));
        let ours = args.iter().any(|a| a == id || a.contains(&board));
        if devsim && ours {
            pids.push(pid);
        }
    }
    pids
}

const KINDS: [&str; 4] = ["abort", "kill", "panic", "exit3"];

#[test]
fn smp_crashes_end_the_job() {
    for kind in KINDS {
        crash("smp", kind);
    }
}

#[test]
fn ipv6_crashes_end_the_job() {
    for kind in KINDS {
        crash("ipv6", kind);
    }
}

/// A job of 2 hosts x 2 PEs (smp within, ipv6 between, on `[::1]`): a
/// PE that crashes or is killed on one host ends the whole job, on both
/// hosts, within the bound, and is named.
#[test]
fn crashes_on_one_host_end_a_job_of_two_hosts() {
    for kind in KINDS {
        crash_with("ipv6", &["--hosts", "2", "--host-net", "loopback"], kind);
    }
}

#[test]
fn fpga_crashes_end_the_job() {
    for kind in KINDS {
        crash("fpga", kind);
    }
}

/// `_exit(0)` on `conduit`: oshrun sees a success, so the other PEs must
/// notice by themselves — within 2 s, naming PE 1 — and the job fails.
fn vanish(conduit: &str) {
    vanish_with(conduit, &[]);
}

/// [`vanish`] with more oshrun options.
fn vanish_with(conduit: &str, oshrun_args: &[&str]) {
    let id = unique_job_id("vx");
    let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", conduit, "--job-id", &id]);
    cmd.args(oshrun_args)
        .arg(example("fault"))
        .args(["crash", "raw-exit0"]);
    let out = finish(spawn(&mut cmd), Duration::from_secs(30));
    let ctx = format!("{conduit} {oshrun_args:?}: {out:?}");
    assert_ne!(out.code(), Some(0), "{ctx}");
    let failed_at: u128 = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("fault: PE 1 failing at "))
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no failure time: {ctx}"));
    let detected: Vec<(u128, &str)> = out
        .stdout
        .lines()
        .filter(|l| l.contains(" detected at "))
        .filter_map(|l| {
            let t = l.split(" detected at ").nth(1)?;
            let (ms, rest) = t.split_once(':')?;
            Some((ms.trim().parse().ok()?, rest))
        })
        .collect();
    assert!(!detected.is_empty(), "nobody detected the failure: {ctx}");
    // oshrun sees PE 1 succeed and another PE fail first, and says why.
    assert!(
        out.stderr.contains("after PE 1 failed"),
        "oshrun does not name PE 1: {ctx}"
    );
    for (at, msg) in &detected {
        eprintln!(
            "{conduit} {oshrun_args:?} vanish: detected {} ms after the failure",
            at.saturating_sub(failed_at)
        );
        assert!(msg.contains("PE 1 failed"), "{ctx}");
        assert!(
            at.saturating_sub(failed_at) < STOP_BOUND_MS,
            "{ctx}: detected {} ms after the failure",
            at - failed_at
        );
    }
    assert!(shm_files(&id).is_empty(), "{ctx}");
    assert!(devsim_pids(&id).is_empty(), "{ctx}");
    assert!(pe_pids(&id, None).is_empty(), "{ctx}");
}

#[test]
fn ipv6_and_fpga_peers_detect_a_pe_that_vanished_with_status_0() {
    vanish("ipv6");
    vanish("fpga");
}

/// 2 hosts x 2 PEs: PE 1's host neighbour PE 0 sees its process gone and
/// leaves naming it; oshrun then stops the other host's PEs.
#[test]
fn a_pe_that_vanished_with_status_0_ends_a_job_of_two_hosts() {
    vanish_with("ipv6", &["--hosts", "2", "--host-net", "loopback"]);
}

#[test]
fn smp_peers_detect_a_pe_that_vanished_with_status_0() {
    vanish("smp");
}

/// `exit(0)` without finalize while the others wait for a flag PE 1 never
/// sets: PE 1 finalizes at exit and so waits for the others, says so
/// naming itself, and `FSHMEM_WAIT_TIMEOUT` ends the job with status 124
/// instead of a hang; nothing of the job is left.
#[test]
fn exit0_while_peers_wait_is_named_and_ended_by_the_wait_timeout() {
    for conduit in ["smp", "ipv6", "fpga"] {
        let id = unique_job_id("x0");
        let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", conduit, "--job-id", &id]);
        cmd.arg(example("fault")).args(["crash", "exit0"]);
        cmd.env("FSHMEM_WAIT_TIMEOUT", "6");
        let out = finish(spawn(&mut cmd), Duration::from_secs(30));
        let ctx = format!("{conduit}: {out:?}");
        assert_eq!(out.code(), Some(124), "{ctx}");
        assert!(
            out.stderr.contains(
                "PE 1: left main (or called exit) without shmem_finalize; waiting at exit for the other PEs to finalize"
            ),
            "{ctx}"
        );
        assert!(shm_files(&id).is_empty(), "{ctx}");
        assert!(devsim_pids(&id).is_empty(), "{ctx}");
        assert!(pe_pids(&id, None).is_empty(), "{ctx}");
    }
}

/// Runs a PE's program (`"$@"`) and hands its exit status to oshrun only
/// once the test closes its end of the FIFO `$FAULT_HOLD`. oshrun stops
/// every PE as soon as one fails, so a PE that learns of a failure after
/// another PE left would be stopped before it said what it found. The
/// FIFO is opened (as descriptor 9, refused should it be oshrun's report
/// pipe) before the program starts, and the test holds it open for
/// writing, so that open does not block and no wrapper can wait for a
/// writer that has already gone.
const HOLD: &str = r#"[ "$FSHMEM_LAUNCHER_FD" != 9 ] || exit 99
exec 9<"$FAULT_HOLD"; "$@"; s=$?; read -r _ <&9; exit $s"#;

/// How long a relay job may take to print the next line it must print
/// (its PEs once took 32 s to start on a loaded machine).
const LINE_WAIT: Duration = fshmem_tests::JOB_TIMEOUT;

/// A directory of its own for a test's FIFOs, removed when dropped.
struct FifoDir(std::path::PathBuf);

impl FifoDir {
    fn new(tag: &str) -> FifoDir {
        let dir = std::env::temp_dir().join(unique_job_id(tag));
        std::fs::create_dir(&dir).expect("a directory for the FIFOs");
        FifoDir(dir)
    }

    /// A new FIFO `name` in the directory.
    fn fifo(&self, name: &str) -> std::path::PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let p = self.0.join(name);
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).expect("no NUL in the path");
        // SAFETY: mkfifo reads the NUL-terminated path, which lives across
        // the call.
        let r = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(
            r,
            0,
            "mkfifo {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        );
        p
    }
}

impl Drop for FifoDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` PEs on `h` hosts of `conduit` (oshrun places PEs on hosts in
/// blocks, so PE 1 shares the first host with PE 0): PE 1 fails by `kind`
/// (`fault relay`). On every other host, the PEs that finalize learn of
/// the failure only from the first PE of their host, which waits and
/// leaves when it learns of it off-node. Every PE but PE 1 must say it
/// detected the failure of PE 1, within the bound, and blame no other
/// PE; those that finalized must have learnt of it there.
fn relay(conduit: &str, env: &[(&str, &str)], n: usize, h: usize, kind: &str) {
    let id = unique_job_id("rl");
    let what = format!("{conduit} {n} PEs on {h} hosts, PE 1 {kind}");
    let fifos = FifoDir::new("rl");
    let (hold, go) = (fifos.fifo("hold"), fifos.fifo("go"));
    let holding = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&hold)
        .expect("open the hold FIFO");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--hosts", &h.to_string()]);
    cmd.args([
        "--host-net",
        "loopback",
        "--conduit",
        conduit,
        "--job-id",
        &id,
    ]);
    cmd.args(["sh", "-c", HOLD, "sh"]).arg(example("fault"));
    cmd.arg("relay").arg(kind).arg(&go);
    // The bound is on detection, not on PE 1 symbolising its panic's
    // backtrace, which took 20 s once on a loaded machine.
    cmd.env("FAULT_HOLD", &hold).env("RUST_BACKTRACE", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = spawn(&mut cmd);
    // PE 1 is ready to fail, and every other PE is about to wait or to
    // finalize (the call that learns of the failure comes next).
    let mut pid1 = None;
    // Whether each PE waits (`true`) or finalizes.
    let mut waits: Vec<Option<bool>> = vec![None; n];
    waits[1] = Some(false);
    let mut ready = false;
    while !ready || waits.iter().any(Option::is_none) {
        let Some(l) = child.wait_line(LINE_WAIT, |l| l.starts_with("fault: PE ")) else {
            panic!("{what}: {:?}", finish(child, LINE_WAIT));
        };
        let rest = &l["fault: PE ".len()..];
        let (pe, rest) = rest.split_once(' ').expect("a PE number");
        let pe: usize = pe.parse().expect("a PE number");
        match rest {
            "waiting" => waits[pe] = Some(true),
            "finalizing" => waits[pe] = Some(false),
            "ready to fail" => ready = true,
            r if r.starts_with("pid ") && pe == 1 => {
                pid1 = r.split(' ').nth(1).and_then(|p| p.parse::<i32>().ok());
            }
            _ => {}
        }
    }
    let mut failed_at = now_ms();
    if kind == "kill" {
        let pid = pid1.expect("PE 1's pid");
        send_signal(pid, libc::SIGKILL).expect("SIGKILL to PE 1");
    } else {
        // Opening for writing meets PE 1's open for reading.
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .open(&go)
                .expect("open the go FIFO"),
        );
    }
    let mut detected = vec![false; n];
    detected[1] = true;
    while detected.iter().any(|&d| !d) {
        let Some(l) = child.wait_line(LINE_WAIT, |l| l.contains(" detected at ")) else {
            panic!("{what}: {:?}", finish(child, LINE_WAIT));
        };
        let pe: usize = l["fault: PE ".len()..]
            .split(' ')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a PE number");
        detected[pe] = true;
    }
    drop(holding);
    let out = finish(child, Duration::from_secs(30));
    let ctx = format!("{what}: {out:?}");
    assert_ne!(out.code(), Some(0), "{ctx}");
    if let Some(t) = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("fault: PE 1 failing at "))
    {
        failed_at = t.trim().parse().expect("a time");
    }
    for pe in (0..n).filter(|&p| p != 1) {
        let tag = format!("fault: PE {pe} detected at ");
        let lines: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with(&tag)).collect();
        assert_eq!(lines.len(), 1, "PE {pe}: {ctx}");
        let (at, msg) = lines[0][tag.len()..].split_once(':').expect("a time");
        let at: u128 = at.parse().expect("a time");
        // The PE that failed is named, and no other (not the PE of this
        // host that left because of it).
        assert_eq!(
            failed_pes(msg),
            [1],
            "PE {pe} blames another PE: {msg:?}: {ctx}"
        );
        if waits[pe] == Some(false) {
            assert!(msg.contains("shmem_finalize"), "PE {pe}: {msg:?}: {ctx}");
        }
        assert!(
            at.saturating_sub(failed_at) < STOP_BOUND_MS,
            "PE {pe} detected the failure {} ms after it: {ctx}",
            at.saturating_sub(failed_at)
        );
    }
    assert!(
        out.stderr.contains("oshrun: PE 1 (pid") || out.stderr.contains("after PE 1 failed"),
        "oshrun does not name PE 1: {ctx}"
    );
    assert!(pe_pids(&id, None).is_empty(), "{ctx}: processes left");
    assert!(shm_files(&id).is_empty(), "{ctx}: {:?}", shm_files(&id));
}

/// The PEs a message says failed (`PE r failed`), in order.
fn failed_pes(msg: &str) -> Vec<usize> {
    msg.match_indices("PE ")
        .filter_map(|(i, _)| {
            let rest = &msg[i + 3..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let pe = rest[..digits].parse().ok()?;
            rest[digits..].starts_with(" failed").then_some(pe)
        })
        .collect()
}

/// (PEs, hosts) of the relay jobs: every host holds a PE that waits and
/// at least one that finalizes.
const RELAY_SHAPES: [(usize, usize); 3] = [(4, 2), (6, 3), (6, 2)];

/// 2 and 3 hosts on ipv6 (`[::1]`): PE 1 crashes or is killed; the PEs of
/// the other hosts that learn of it through shared memory, from a PE of
/// their host that left because of it, name PE 1, not that PE.
#[test]
fn pes_that_learn_of_an_off_node_failure_from_their_host_name_the_failed_pe() {
    for (n, h) in RELAY_SHAPES {
        for kind in KINDS {
            relay("ipv6", &[], n, h, kind);
        }
    }
}

/// The same on ofi (libfabric's tcp provider over `lo`), whose jobs of
/// several hosts share the router with ipv6.
#[test]
fn pes_that_learn_of_an_off_node_failure_from_their_host_name_the_failed_pe_on_ofi() {
    let env = [
        ("FSHMEM_OFI_PROVIDER", "tcp;ofi_rxm"),
        ("FSHMEM_OFI_DOMAIN", "lo"),
    ];
    for (n, h) in RELAY_SHAPES {
        for kind in ["kill", "exit3"] {
            relay("ofi", &env, n, h, kind);
        }
    }
}
