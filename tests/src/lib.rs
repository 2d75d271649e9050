//! Multi-process integration tests for fshmem live in `tests/`: each launches
//! a real job through `oshrun`.
//!
//! This library holds what those tests share: finding the binaries of the
//! build being tested (`oshrun`, and the conduit test programs built as
//! cargo examples), running a command with a timeout, and looking for
//! shared-memory files a job left behind.
//!
//! Build everything first, as the README's test command does
//! (`bash scripts/test.sh`; `cargo test` builds the examples).

pub mod hung;
pub mod slurm;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A test that cannot run here says why and returns, unless
/// `FSHMEM_TESTS_STRICT=1` (set by `scripts/test.sh` when it runs as root,
/// where every package and capability the tests use is there): then what
/// would have been skipped fails the test, so a green suite means the test
/// ran.
pub fn skip(why: &str) {
    if std::env::var("FSHMEM_TESTS_STRICT").is_ok_and(|v| v == "1") {
        panic!("cannot run here, and FSHMEM_TESTS_STRICT=1 forbids skipping: {why}");
    }
    println!("skipping: {why}");
}

/// How long a test job may run before it is killed and the test fails.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(60);

/// The profile directory of the running test binary: `target/<profile>/`
/// (the test runs as `target/<profile>/deps/<name>-<hash>`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("path of the test executable");
    let deps = exe.parent().expect("test executable has a directory");
    if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps has a parent").to_path_buf()
    } else {
        deps.to_path_buf()
    }
}

fn existing(path: PathBuf, how: &str) -> PathBuf {
    assert!(
        path.is_file(),
        "{} does not exist; build it first ({how})",
        path.display()
    );
    path
}

/// A binary target of the workspace (e.g. `oshrun`), built in this profile.
pub fn bin(name: &str) -> PathBuf {
    existing(
        profile_dir().join(name),
        "cargo build --release --workspace",
    )
}

/// A cargo example of the workspace (e.g. `smp_check`), built in this profile.
pub fn example(name: &str) -> PathBuf {
    existing(
        profile_dir().join("examples").join(name),
        "cargo test builds examples; or cargo build --release --workspace --examples",
    )
}

/// What a finished command produced.
#[derive(Debug)]
pub struct RunOutput {
    /// How it ended.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl RunOutput {
    /// The exit code (`None` when killed by a signal).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// A command started by [`spawn`]: its output is collected as it comes, a
/// test may wait for a line of it ([`Running::wait_line`]), and whatever
/// happens to the test — a timeout, a failed assertion, a panic — the
/// command and every process it started are stopped: dropping a `Running`
/// that has not finished sends SIGTERM to its process group (oshrun then
/// stops its PEs and removes the job's files), and SIGKILL to the group if
/// it is still there 2 s later. No test leaves a job running.
pub struct Running {
    child: Child,
    /// Lines of stdout as the reader thread receives them.
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line of stdout taken from `lines` so far.
    stdout: String,
    stdout_reader: Option<std::thread::JoinHandle<()>>,
    stderr_reader: Option<std::thread::JoinHandle<String>>,
    start: Instant,
    done: bool,
    /// The command line, for messages.
    command: String,
}

/// Starts `cmd` in a process group of its own, with stdout and stderr
/// captured. Should the test process itself be killed (so that no `Drop`
/// runs), the command gets SIGTERM (`PR_SET_PDEATHSIG`); that signal is tied
/// to the spawning *thread*, so spawn and [`finish`] a command on the same
/// thread.
pub fn spawn(cmd: &mut Command) -> Running {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes the async-signal-safe prctl system call.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let command = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let (tx, lines) = std::sync::mpsc::channel();
    let out = child.stdout.take().expect("stdout is piped");
    let stdout_reader = std::thread::spawn(move || {
        let mut r = std::io::BufReader::new(out);
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx
                        .send(String::from_utf8_lossy(&line).into_owned())
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    let mut err = child.stderr.take().expect("stderr is piped");
    let stderr_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    Running {
        child,
        lines,
        stdout: String::new(),
        stdout_reader: Some(stdout_reader),
        stderr_reader: Some(stderr_reader),
        start: Instant::now(),
        done: false,
        command,
    }
}

impl Running {
    /// The process id of the command (its process group id too).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the command prints a line of stdout for which `want`
    /// holds (without its newline) and returns it; `None` if the command
    /// closes stdout or `timeout` passes first. Lines read on the way are
    /// kept for [`finish`].
    pub fn wait_line(&mut self, timeout: Duration, want: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stdout.push_str(&line);
                    let l = line.trim_end_matches('\n');
                    if want(l) {
                        return Some(l.to_string());
                    }
                }
                Err(_) => return None,
            }
        }
    }

    /// Stdout so far (the lines [`Running::wait_line`] has read).
    pub fn stdout_so_far(&self) -> &str {
        &self.stdout
    }

    /// Stops the command's process group: SIGTERM, then SIGKILL if it has
    /// not ended within 2 s.
    fn stop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill has no memory preconditions; the group is the one
        // this child leads (spawned with process_group(0)).
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // The leader may be gone while PEs it started linger: kill the
        // whole group regardless (an empty group is ESRCH, harmless).
        // SAFETY: as above.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.done {
            self.stop();
        }
    }
}

/// Waits for `job` (started by [`spawn`]) to end and collects its output;
/// stops it (its whole process group) and panics if it runs longer than
/// `timeout` from its start.
pub fn finish(mut job: Running, timeout: Duration) -> RunOutput {
    let status = loop {
        if let Some(st) = job.child.try_wait().expect("wait for child") {
            break st;
        }
        if job.start.elapsed() > timeout {
            let state = hung::describe_group(job.child.id() as i32);
            job.stop();
            job.done = true;
            let err = job
                .stderr_reader
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_default();
            panic!(
                "timed out after {timeout:?}: {}\nstdout so far:\n{}{}\nstderr:\n{err}\n\
                 what the job was doing:\n{state}",
                job.command,
                job.stdout,
                job.lines.try_iter().collect::<String>()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    job.done = true;
    let elapsed = job.start.elapsed();
    if let Some(h) = job.stdout_reader.take() {
        let _ = h.join();
    }
    let rest: String = job.lines.try_iter().collect();
    job.stdout.push_str(&rest);
    let stderr = job
        .stderr_reader
        .take()
        .and_then(|h| h.join().ok())
        .unwrap_or_default();
    RunOutput {
        status,
        stdout: std::mem::take(&mut job.stdout),
        stderr,
        elapsed,
    }
}

/// Runs `cmd` to completion within `timeout`.
pub fn run(cmd: &mut Command, timeout: Duration) -> RunOutput {
    finish(spawn(cmd), timeout)
}

/// A command running `oshrun` with `args`.
pub fn oshrun_cmd<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Command {
    let mut c = Command::new(bin("oshrun"));
    c.args(args);
    c
}

/// Runs `oshrun args...` within [`JOB_TIMEOUT`].
pub fn oshrun<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> RunOutput {
    run(&mut oshrun_cmd(args), JOB_TIMEOUT)
}

/// A job id no other test (or test run) uses.
pub fn unique_job_id(tag: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t{tag}{}x{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Files of job `job_id` present in `/dev/shm` (`fshmem-<job>-*`, and
/// `fshmem-<job>.h<host>-*` of the hosts of an `oshrun --hosts` job).
pub fn shm_files(job_id: &str) -> Vec<PathBuf> {
    let prefix = format!("fshmem-{job_id}-");
    let hosts = format!("fshmem-{job_id}.h");
    std::fs::read_dir(Path::new("/dev/shm"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.starts_with(&prefix) || name.starts_with(&hosts)
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `cond` holds, for at most `timeout`; whether it held.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Sends signal `sig` (`libc::SIGKILL`, ...) to process `pid`, which must
/// be a single process (`pid > 0`: never a group, nor every process).
pub fn send_signal(pid: i32, sig: libc::c_int) -> std::io::Result<()> {
    if pid <= 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("no signal to pid {pid}: not a single process"),
        ));
    }
    // SAFETY: kill has no memory preconditions.
    match unsafe { libc::kill(pid, sig) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// The pid of devsim board `board` of job `id`, once the board has written
/// it (`/dev/shm/fshmem-ID-boardN/pid`).
pub fn board_pid(id: &str, board: usize) -> Option<i32> {
    std::fs::read_to_string(format!("/dev/shm/fshmem-{id}-board{board}/pid"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&p: &i32| p > 0)
}

/// Waits at most `timeout` for devsim board `board` of job `id` to start
/// ([`board_pid`]); its pid. Panics naming the board if it never does.
pub fn wait_board_pid(id: &str, board: usize, timeout: Duration) -> i32 {
    let mut pid = None;
    let started = wait_for(timeout, || {
        pid = board_pid(id, board);
        pid.is_some()
    });
    assert!(started, "board {board} of job {id} never started");
    pid.unwrap_or_default()
}

/// What [`job`] ran and how it ended.
#[derive(Debug)]
pub struct Job {
    /// The number of PEs.
    pub n: usize,
    /// The job id it ran under.
    pub id: String,
    /// What it produced.
    pub out: RunOutput,
}

impl Job {
    /// The lines of stdout that start with `prefix`.
    pub fn lines_starting(&self, prefix: &str) -> Vec<&str> {
        self.out
            .stdout
            .lines()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }

    /// Panics unless the job exited with status 0 and stdout has `line` as
    /// one whole line.
    pub fn assert_ok_with(&self, line: &str) {
        assert_eq!(self.out.code(), Some(0), "{self:?}");
        self.assert_line(line);
    }

    /// Panics unless stdout has `line` as one whole line.
    pub fn assert_line(&self, line: &str) {
        assert!(
            self.out.stdout.lines().any(|l| l == line),
            "missing line {line:?} in {self:?}"
        );
    }
}

/// Runs `prog args...` on `n` PEs through `oshrun` under a fresh job id,
/// killing it (and failing) after `timeout`; checks the job left no shared
/// memory behind.
pub fn job<S: AsRef<std::ffi::OsStr>>(n: usize, prog: &Path, args: &[S], timeout: Duration) -> Job {
    let id = unique_job_id("job");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--job-id", &id]);
    cmd.arg(prog).args(args);
    let out = run(&mut cmd, timeout);
    let left = shm_files(&id);
    assert!(left.is_empty(), "job {id} left behind {left:?}");
    Job { n, id, out }
}

/// A binary of this profile: `target/<profile>/<name>` (a workspace binary)
/// or `target/<profile>/examples/<name>` (a cargo example). Fails the test
/// when neither was built.
pub fn any_bin(name: &str) -> PathBuf {
    let dir = profile_dir();
    let found = [dir.join(name), dir.join("examples").join(name)]
        .into_iter()
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!(
            "{name} is not built in {} (cargo build --release --workspace, then cargo test builds the examples)",
            dir.display()
        )
    })
}

/// As [`job`], on the ipv6 conduit (`oshrun --conduit ipv6`, loopback),
/// with extra environment `env` for every PE.
pub fn ipv6_job<S: AsRef<std::ffi::OsStr>>(
    n: usize,
    prog: &Path,
    args: &[S],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Job {
    let id = unique_job_id("v6");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", "ipv6", "--job-id", &id]);
    cmd.arg(prog).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, timeout);
    Job { n, id, out }
}

/// Like [`job`], on the fpga conduit: `oshrun --conduit fpga` starts one
/// devsim board per PE; checks that no board files (nor shared memory)
/// are left behind.
pub fn fpga_job<S: AsRef<std::ffi::OsStr>>(
    n: usize,
    prog: &Path,
    args: &[S],
    timeout: Duration,
) -> Job {
    let id = unique_job_id("fpga");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", "fpga", "--job-id", &id]);
    cmd.arg(prog).args(args);
    let out = run(&mut cmd, timeout);
    let left = shm_files(&id);
    assert!(left.is_empty(), "fpga job {id} left behind {left:?}");
    Job { n, id, out }
}

/// The pids of the running processes of job `id` with rank `rank`.
pub fn pe_pids(id: &str, rank: Option<usize>) -> Vec<u32> {
    let want_job = format!("FSHMEM_JOB_ID={id}");
    let want_rank = rank.map(|r| format!("FSHMEM_RANK={r}"));
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        let vars: Vec<&[u8]> = env.split(|&b| b == 0).collect();
        let has = |s: &str| vars.contains(&s.as_bytes());
        if has(&want_job) && want_rank.as_deref().is_none_or(has) {
            pids.push(pid);
        }
    }
    pids
}
