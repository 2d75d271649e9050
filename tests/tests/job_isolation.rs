//! A job's memory is really there and its own: the symmetric heap is
//! reserved at start-up, so a `/dev/shm` too small for it is one line at
//! init instead of a SIGBUS later (tested in a private mount namespace with
//! a small tmpfs on `/dev/shm`, which needs root); and a second job started
//! with a job id in use is refused before it starts, leaving the first
//! job's data intact. Every case runs real jobs through `oshrun`.
//!
//! Needs `oshcc`, `oshrun` and `libshmem.so` built in this profile
//! (`cargo build --release --workspace`) and a C compiler.

#[path = "support/capi.rs"]
mod capi;

use capi::{compile, lines_with};
use fshmem_tests::{
    JOB_TIMEOUT, RunOutput, Running, bin, finish, oshrun_cmd, run, shm_files, spawn,
};
use std::path::Path;
use std::process::Command;

/// Runs `oshrun args...` in a private mount namespace whose `/dev/shm` is
/// a fresh tmpfs of `size` (e.g. `48m`), with `env`; after the job, the
/// script prints what is left in that `/dev/shm` on a line of its own.
fn in_small_shm(size: &str, args: &[&str], env: &[(&str, &str)]) -> RunOutput {
    let script = format!(
        "mount -t tmpfs -o size={size} fshmem-test /dev/shm || exit 99; \
         \"$@\"; s=$?; echo \"left in /dev/shm: [$(ls -A /dev/shm)]\"; exit $s"
    );
    let mut cmd = Command::new("unshare");
    cmd.args([
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        &script,
        "sh",
    ])
    .arg(bin("oshrun"))
    .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, JOB_TIMEOUT);
    assert_ne!(
        out.code(),
        Some(99),
        "cannot mount a tmpfs in a private mount namespace (the test needs root): {out:?}"
    );
    assert!(
        out.stdout.contains("left in /dev/shm: []"),
        "the job left files in /dev/shm: {out:?}"
    );
    out
}

/// A heap that the small `/dev/shm` cannot back: every PE that cannot
/// reserve its segment says so in one line naming `SHMEM_SYMMETRIC_SIZE`,
/// the size asked and the space free; the job fails at init, no PE dies of
/// SIGBUS, nothing is left. A heap that fits is touched whole.
#[test]
fn a_heap_that_cannot_be_backed_is_refused_at_init() {
    let exe = compile("heap_backing", &[]);
    let exe = exe.to_str().expect("utf-8 path");
    for n in [1, 2, 3, 4] {
        let np = n.to_string();
        // 40 MiB of /dev/shm; PEs of a 16 MiB heap need about 19 MiB each.
        let out = in_small_shm("40m", &["-n", &np, exe], &[("SHMEM_SYMMETRIC_SIZE", "16M")]);
        let what = format!("{n} PEs: {out:?}");
        if n <= 2 {
            assert_touched(&out, n, &what);
            continue;
        }
        assert_refused(&out, "16M", " in /dev/shm/fshmem-", &what);
    }
    // A heap larger than the whole of /dev/shm fails on every PE count.
    for n in [1, 2] {
        let out = in_small_shm(
            "40m",
            &["-n", &n.to_string(), exe],
            &[("SHMEM_SYMMETRIC_SIZE", "64M")],
        );
        assert_eq!(out.code(), Some(1), "{n} PEs: {out:?}");
        assert!(
            out.stderr
                .contains("bytes for the symmetric heap (SHMEM_SYMMETRIC_SIZE=64M)"),
            "{n} PEs: {out:?}"
        );
    }
}

/// `out` is a job of `n` PEs whose 16 MiB heaps were backed: it succeeded
/// and each PE touched its whole heap once.
fn assert_touched(out: &RunOutput, n: usize, what: &str) {
    assert_eq!(out.code(), Some(0), "{what}");
    for pe in 0..n {
        let line = format!("PE {pe}: touched 16 MiB of the heap");
        assert_eq!(lines_with(&out.stdout, &line).len(), 1, "{what}");
    }
}

/// `out` is a job that failed at init because a PE could not reserve its
/// heap of `size` (`SHMEM_SYMMETRIC_SIZE`) in a backing whose name starts
/// with `backing`: one line per refusing PE naming the variable, the size
/// asked and the space free; no PE got to touch its heap or died of
/// SIGBUS; oshrun names a PE that was refused.
fn assert_refused(out: &RunOutput, size: &str, backing: &str, what: &str) {
    assert_eq!(out.code(), Some(1), "{what}");
    assert!(!out.stdout.contains("touched"), "{what}");
    assert!(!out.stderr.contains("SIGBUS"), "{what}");
    let refusals: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| {
            l.contains(": shmem_init: cannot reserve ")
                && l.contains(&format!(
                    " bytes for the symmetric heap (SHMEM_SYMMETRIC_SIZE={size}){backing}"
                ))
                && l.contains(" bytes are free there")
        })
        .collect();
    assert!(!refusals.is_empty(), "{what}");
    // oshrun names a PE that could not reserve its heap (several may
    // fail; the one whose exit it sees first is named).
    let refused: Vec<String> = refusals
        .iter()
        .filter_map(|l| l.strip_prefix("PE ")?.split(':').next())
        .map(|pe| format!("oshrun: PE {pe} (pid "))
        .collect();
    let oshrun = lines_with(&out.stderr, "oshrun: PE ");
    assert!(
        oshrun.len() == 1
            && (refused.iter().any(|p| oshrun[0].starts_with(p.as_str()))
                || oshrun[0].contains(" after PE ")),
        "{what}"
    );
}

/// The devsim boards of `--conduit fpga` keep their DDR in sparse files of
/// `/dev/shm`: each PE reserves the part of it its segment uses, so a
/// `/dev/shm` too small for the heaps is the same line at init as on smp,
/// never a SIGBUS in a PE or a board. A heap that fits is touched whole.
#[test]
fn an_fpga_heap_that_cannot_be_backed_is_refused_at_init() {
    let exe = compile("heap_backing", &[]);
    let exe = exe.to_str().expect("utf-8 path");
    for n in [1, 2, 3, 4] {
        let np = n.to_string();
        // 48 MiB of /dev/shm; a PE of a 16 MiB heap reserves about 20 MiB
        // of its board's window.
        let out = in_small_shm(
            "48m",
            &["-n", &np, "--conduit", "fpga", exe],
            &[("SHMEM_SYMMETRIC_SIZE", "16M")],
        );
        let what = format!("fpga, {n} PEs: {out:?}");
        if n <= 2 {
            assert_touched(&out, n, &what);
            continue;
        }
        assert_refused(&out, "16M", " in /dev/shm/fshmem-", &what);
        assert!(out.stderr.contains("/bar2: only "), "{what}");
    }
}

/// Bytes of memory and swap of this machine (`/proc/meminfo`).
fn memory_and_swap() -> u64 {
    let info = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    let field = |k: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix(':'))
            .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {k} in /proc/meminfo"))
            * 1024
    };
    field("MemTotal") + field("SwapTotal")
}

/// The ipv6 and ofi segments are memfds, which no mounted file system
/// limits: memory does. A heap larger than the machine's memory and swap
/// is refused at init with the same line (the space free being memory),
/// before any of it is taken, never an out-of-memory kill later; a heap
/// that fits is reserved and touched whole.
#[test]
fn a_memfd_heap_beyond_memory_is_refused_at_init() {
    let exe = compile("heap_backing", &[]);
    let exe = exe.to_str().expect("utf-8 path");
    let huge = format!("{}G", (2 * memory_and_swap()).div_ceil(1 << 30));
    let ofi: &[(&str, &str)] = &[
        ("FSHMEM_OFI_PROVIDER", "tcp;ofi_rxm"),
        ("FSHMEM_OFI_DOMAIN", "lo"),
    ];
    for (conduit, env) in [("ipv6", &[][..]), ("ofi", ofi)] {
        for n in [1, 2, 3, 4] {
            let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", conduit, exe]);
            cmd.envs(env.iter().copied())
                .env("SHMEM_SYMMETRIC_SIZE", &huge);
            let out = run(&mut cmd, JOB_TIMEOUT);
            let what = format!("{conduit}, {n} PEs, heap {huge}: {out:?}");
            assert_refused(&out, &huge, " in memory (a memfd", &what);
        }
        let mut cmd = oshrun_cmd(&["-n", "2", "--conduit", conduit, exe]);
        cmd.envs(env.iter().copied())
            .env("SHMEM_SYMMETRIC_SIZE", "16M");
        let out = run(&mut cmd, JOB_TIMEOUT);
        assert_touched(&out, 2, &format!("{conduit}: {out:?}"));
    }
}

/// The file whose creation lets the `job_hold` job of id `id` go on.
fn go_file(id: &str) -> std::path::PathBuf {
    let go = std::env::temp_dir().join(format!("fshmem-{id}-go"));
    let _ = std::fs::remove_file(&go);
    go
}

/// Starts `cmd`, a `job_hold` job of `n` PEs waiting for `go`, and waits
/// until every PE has its data in place.
fn start_holding(cmd: &mut Command, n: usize, go: &Path, what: &str) -> Running {
    assert!(!go.exists(), "{what}: {} exists", go.display());
    let mut first = spawn(cmd);
    for _ in 0..n {
        assert!(
            first
                .wait_line(JOB_TIMEOUT, |l| l.ends_with(": holding"))
                .is_some(),
            "{what}: the first job never held: {}",
            first.stdout_so_far()
        );
    }
    first
}

/// Lets the held job `first` of id `id` go on and checks that it ends
/// well with every PE's data intact and nothing of it left in /dev/shm.
fn held_intact(first: Running, n: usize, id: &str, go: &Path, what: &str) {
    std::fs::write(go, b"go").expect("create the go file");
    let out = finish(first, JOB_TIMEOUT);
    let _ = std::fs::remove_file(go);
    let what = format!("{what}: first job: {out:?}");
    assert_eq!(out.code(), Some(0), "{what}");
    for pe in 0..n {
        let line = format!("PE {pe}: 0 words differ");
        assert_eq!(lines_with(&out.stdout, &line).len(), 1, "{what}");
    }
    let left = shm_files(id);
    assert!(left.is_empty(), "{what}: left in /dev/shm: {left:?}");
}

/// Runs `job_hold` on `n` PEs of `conduit` under job id `id`.
fn hold_cmd(conduit: &str, n: usize, id: &str, exe: &Path, file: &Path) -> Command {
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", conduit, "--job-id", id]);
    cmd.arg(exe).arg(file);
    cmd
}

/// `oshrun --job-id X` while a job X runs: refused at once with one line,
/// before any PE (or board) of it starts; the running job's data stays
/// intact, and the id is free again once that job ended.
#[test]
fn a_job_id_in_use_is_refused_at_start() {
    let exe = compile("job_hold", &[]);
    for (conduit, n) in [("smp", 2), ("smp", 4), ("ipv6", 3), ("fpga", 2)] {
        let id = fshmem_tests::unique_job_id("dup");
        let go = go_file(&id);
        let first = start_holding(&mut hold_cmd(conduit, n, &id, &exe, &go), n, &go, conduit);
        for m in [1, n, n + 1] {
            let second = run(&mut hold_cmd(conduit, m, &id, &exe, &go), JOB_TIMEOUT);
            let what = format!("{conduit}: second job of {m} PEs: {second:?}");
            assert_eq!(second.code(), Some(2), "{what}");
            assert!(second.stdout.is_empty(), "{what}");
            let refusal = format!("oshrun: job id {id} is in use by another job (oshrun pid ");
            assert_eq!(lines_with(&second.stderr, &refusal).len(), 1, "{what}");
            assert_eq!(second.stderr.lines().count(), 1, "{what}");
        }
        held_intact(first, n, &id, &go, conduit);
        // The id is free again.
        std::fs::write(&go, b"go").expect("create the go file");
        let again = run(&mut hold_cmd(conduit, n, &id, &exe, &go), JOB_TIMEOUT);
        let _ = std::fs::remove_file(&go);
        assert_eq!(again.code(), Some(0), "{conduit}: reused id: {again:?}");
        assert!(shm_files(&id).is_empty(), "{conduit}: {again:?}");
    }
}

/// A launcher, as the job-id test starts it: `n` PEs of `exe file` on the
/// smp conduit (whose memory is named by the job id) under job id `id`.
fn launch(launcher: &str, n: usize, id: &str, exe: &Path, file: &Path) -> Command {
    if launcher == "oshrun" {
        return hold_cmd("smp", n, id, exe, file);
    }
    let mut cmd = match launcher {
        "mpiexec.hydra" => Command::new("/usr/bin/mpiexec.hydra"),
        _ => {
            let mut c = Command::new("/usr/bin/mpirun.openmpi");
            c.args([
                "--allow-run-as-root",
                "--oversubscribe",
                "--bind-to",
                "none",
            ]);
            c
        }
    };
    cmd.args(["-n", &n.to_string()])
        .arg(exe)
        .arg(file)
        .env("FSHMEM_JOB_ID", id)
        .env("FSHMEM_CONDUIT", "smp");
    cmd
}

/// How a refusal names the job that holds the id, by its launcher.
fn holder(launcher: &str) -> &'static str {
    match launcher {
        "oshrun" => "(oshrun pid ",
        "mpiexec.hydra" => "(the job whose PMI server is pid ",
        _ => "(PMIx namespace ",
    }
}

/// The same under MPICH's Hydra and Open MPI's mpirun, where each PE
/// claims the id that `FSHMEM_JOB_ID` gives it, and across launchers: a
/// second job with an id in use, under any launcher, is refused at init
/// naming the job that holds it (its launcher's own name for it), and the
/// first job's data stays intact; the claim files go with the last PE.
#[test]
fn a_job_id_in_use_is_refused_under_every_launcher() {
    let exe = compile("job_hold", &[]);
    for l in ["/usr/bin/mpiexec.hydra", "/usr/bin/mpirun.openmpi"] {
        assert!(
            Path::new(l).is_file(),
            "{l} is missing: install Debian's mpich and openmpi-bin (scripts/test.sh does)"
        );
    }
    let cases = [
        ("mpiexec.hydra", 2, "mpiexec.hydra"),
        ("mpiexec.hydra", 3, "oshrun"),
        ("mpirun", 2, "mpiexec.hydra"),
        ("oshrun", 2, "mpirun"),
    ];
    for (first_by, n, second_by) in cases {
        let id = fshmem_tests::unique_job_id("dupl");
        let what = format!("{first_by} then {second_by}, {n} PEs");
        let go = go_file(&id);
        let first = start_holding(&mut launch(first_by, n, &id, &exe, &go), n, &go, &what);
        for launcher in [second_by, first_by] {
            let second = run(&mut launch(launcher, n, &id, &exe, &go), JOB_TIMEOUT);
            let what = format!("{what}: second job by {launcher}: {second:?}");
            assert_ne!(second.code(), Some(0), "{what}");
            assert!(!second.stdout.contains("holding"), "{what}");
            let refusal = format!("job id {id} is in use by another job {}", holder(first_by));
            let refused = lines_with(&second.stderr, &refusal);
            assert!(!refused.is_empty(), "{what}");
            let (who, hint) = match launcher {
                "oshrun" => ("oshrun: ", "choose another --job-id"),
                _ => ("PE ", "give this job another FSHMEM_JOB_ID"),
            };
            for r in &refused {
                assert!(r.starts_with(who) && r.ends_with(hint), "{what}");
            }
        }
        held_intact(first, n, &id, &go, &what);
    }
}

/// Under Slurm's `srun` (the one-node cluster of `fshmem_tests::slurm`,
/// PMIx): a job id that an srun job holds is refused to a second srun
/// job and to an oshrun job, naming the PMIx namespace that holds it; one
/// that an oshrun job holds is refused to an srun job. The first job's
/// data stays intact each time.
#[test]
fn a_job_id_in_use_is_refused_under_srun() {
    let exe = compile("job_hold", &[]);
    let slurm = fshmem_tests::slurm::Slurm::start("jobid");
    let srun = |n: usize, id: &str, file: &Path| {
        let mut cmd = slurm.srun(&[
            "-n".as_ref(),
            n.to_string().as_ref(),
            "--mpi=pmix".as_ref(),
            exe.as_os_str(),
            file.as_os_str(),
        ]);
        cmd.env("FSHMEM_JOB_ID", id).env("FSHMEM_CONDUIT", "smp");
        cmd
    };
    for (first_by, n) in [("srun", 2), ("oshrun", 3)] {
        let id = fshmem_tests::unique_job_id("dups");
        let go = go_file(&id);
        let what = format!("{first_by} first, {n} PEs");
        let mut first_cmd = match first_by {
            "srun" => srun(n, &id, &go),
            _ => hold_cmd("smp", n, &id, &exe, &go),
        };
        let first = start_holding(&mut first_cmd, n, &go, &what);
        let holder = match first_by {
            "srun" => "(PMIx namespace ",
            _ => "(oshrun pid ",
        };
        let seconds: &[&str] = if first_by == "srun" {
            &["srun", "oshrun"]
        } else {
            &["srun"]
        };
        for &launcher in seconds {
            let mut cmd = match launcher {
                "srun" => srun(n, &id, &go),
                _ => hold_cmd("smp", n, &id, &exe, &go),
            };
            let second = run(&mut cmd, JOB_TIMEOUT);
            let what = format!("{what}: second job by {launcher}: {second:?}");
            assert_ne!(second.code(), Some(0), "{what}");
            assert!(!second.stdout.contains("holding"), "{what}");
            let refusal = format!("job id {id} is in use by another job {holder}");
            let refused = lines_with(&second.stderr, &refusal);
            assert!(!refused.is_empty(), "{what}");
            let (who, hint) = match launcher {
                "oshrun" => ("oshrun: ", "choose another --job-id"),
                _ => ("PE ", "give this job another FSHMEM_JOB_ID"),
            };
            for r in &refused {
                assert!(r.starts_with(who) && r.ends_with(hint), "{what}: {r:?}");
            }
        }
        held_intact(first, n, &id, &go, &what);
    }
}
