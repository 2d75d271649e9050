//! Starting and stopping a job's devsim boards (the `devsim` program of the
//! `devsim` crate; this crate does not contain the board model).
//!
//! `oshrun --conduit fpga -n N` calls [`Boards::start`], which runs one
//! *keeper* process (`devsim launch --job J --nodes N --dir PREFIX`) with
//! the board settings as flags ([`board_flags`]: `--window`,
//! `--peer-timeout`, `--impair`, `--fault`, `--core`, `--mem-latency`,
//! `--compute`, from the `FSHMEM_FPGA_WINDOW`, `FSHMEM_PEER_TIMEOUT`,
//! `FSHMEM_DEVSIM_IMPAIR`, `FSHMEM_DEVSIM_FAULT`, `FSHMEM_DEVSIM_CORE`,
//! `FSHMEM_DEVSIM_MEM_LATENCY` and `FSHMEM_DEVSIM_COMPUTE` settings: devsim
//! reads no environment). The
//! keeper starts N boards, board `n` in `/dev/shm/fshmem-<job>-board<n>/`
//! ([`board_dir`]), and reports their directories on its stdout once they
//! are ready. PE `n` then runs with `FSHMEM_FPGA_DEVICE` naming board
//! `n`'s directory, and reaches its board only through the BAR files there.
//!
//! Stopping is closing the keeper's stdin: it stops the boards, waits for
//! them and removes their directories. The keeper and the boards also stop
//! on SIGTERM/SIGINT/SIGHUP and when their parent dies, removing their
//! files, and [`remove_job_boards`] removes whatever a killed job left.

use crate::config::Settings;
use gasnet_core::config::{ConfigValue, format_duration, format_size};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long boards may take to come up.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Where board directories are made: `/dev/shm` when present.
pub fn board_root() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Board `n`'s directory for job `job` (the keeper is given the prefix
/// `board_dir(job, n)` without `n`).
pub fn board_dir(job: &str, n: usize) -> PathBuf {
    board_root().join(format!("fshmem-{job}-board{n}"))
}

/// Removes every board directory of job `job`; returns how many.
pub fn remove_job_boards(job: &str) -> usize {
    let prefix = format!("fshmem-{job}-board");
    let Ok(dir) = std::fs::read_dir(board_root()) else {
        return 0;
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| std::fs::remove_dir_all(e.path()).is_ok())
        .count()
}

/// The devsim executable: the `FSHMEM_DEVSIM` setting, else `devsim` next
/// to this program (oshrun and devsim are built into one directory), else
/// `devsim` on `PATH`; an error naming every place looked at when there is
/// none.
pub fn devsim_path(settings: &Settings) -> Result<PathBuf, String> {
    if let Some(p) = &settings.devsim {
        return if p.is_file() {
            Ok(p.clone())
        } else {
            Err(format!(
                "FSHMEM_DEVSIM={} names no file (the devsim board simulator)",
                p.display()
            ))
        };
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("devsim")));
    if let Some(p) = beside.as_ref().filter(|p| p.is_file()) {
        return Ok(p.clone());
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
        .map(|d| d.join("devsim"))
        .find(|p| p.is_file());
    on_path.ok_or_else(|| {
        format!(
            "the devsim board simulator is missing: not beside this program ({}) nor on PATH; \
             build it with `cargo build --release -p devsim` or name it with FSHMEM_DEVSIM",
            beside.map_or_else(|| "?".to_string(), |p| p.display().to_string())
        )
    })
}

/// The flags that carry the board settings to `devsim launch` and
/// `devsim board`.
pub fn board_flags(settings: &Settings) -> Vec<String> {
    let mut v = vec![
        "--window".to_string(),
        format_size(settings.fpga_window),
        "--peer-timeout".to_string(),
        format_duration(settings.peer_timeout),
        "--fault".to_string(),
        settings.devsim_fault.clone(),
        "--core".to_string(),
        settings.devsim_core.clone(),
        "--mem-latency".to_string(),
        settings.devsim_mem_latency.to_string(),
        "--compute".to_string(),
        settings.devsim_compute.show_value(),
    ];
    if let Some(f) = settings.devsim_impair {
        v.push("--impair".to_string());
        v.push(f.show_value());
    }
    v
}

/// A running set of boards (the keeper process).
#[derive(Debug)]
pub struct Boards {
    job: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    dirs: Vec<PathBuf>,
    stopped: bool,
}

/// Called in a child between fork and exec: die with the parent, and start
/// with no signal blocked.
fn child_setup(sig: libc::c_int) {
    // SAFETY: async-signal-safe system calls on locals.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

impl Boards {
    /// Starts `n` devsim boards for job `job`, configured by `settings`
    /// ([`board_flags`]), and waits until they are ready.
    pub fn start(job: &str, n: usize, settings: &Settings) -> Result<Boards, String> {
        remove_job_boards(job);
        let exe = devsim_path(settings)?;
        let prefix = board_root().join(format!("fshmem-{job}-board"));
        let mut cmd = Command::new(&exe);
        cmd.args(["launch", "--job", job, "--nodes", &n.to_string()])
            .arg("--dir")
            .arg(&prefix)
            .args(board_flags(settings))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // SAFETY: the closure only makes async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(|| {
                child_setup(libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| {
            format!(
                "cannot start the devsim board simulator {}: {e}",
                exe.display()
            )
        })?;
        let stdin = child.stdin.take();
        let out = child.stdout.take().ok_or("no keeper stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut b = Boards {
            job: job.to_string(),
            child,
            stdin,
            lines,
            dirs: Vec::new(),
            stopped: false,
        };
        match b.lines.recv_timeout(START_TIMEOUT) {
            Ok(l) if l.starts_with("ready ") => {
                b.dirs = l["ready ".len()..].split('\t').map(PathBuf::from).collect();
                if b.dirs.len() != n {
                    b.stop();
                    return Err(format!(
                        "devsim reported {} boards, expected {n}",
                        b.dirs.len()
                    ));
                }
                Ok(b)
            }
            Ok(l) => {
                b.stop();
                Err(format!("devsim failed to start the boards: {l}"))
            }
            Err(_) => {
                b.stop();
                Err(format!(
                    "devsim boards were not ready within {START_TIMEOUT:?}"
                ))
            }
        }
    }

    /// Board `rank`'s directory (the value of `FSHMEM_FPGA_DEVICE`).
    pub fn device(&self, rank: usize) -> &Path {
        &self.dirs[rank]
    }

    /// Stops the boards and removes their files. Idempotent.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut eof = false;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    eof = true;
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
        if eof {
            // The keeper closed its stdout as it exited; collect it if no
            // one else has (a launcher reaping every child may have).
            let _ = self.child.try_wait();
        } else {
            // Still running, so not reaped: its pid is still ours.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        remove_job_boards(&self.job);
    }
}

impl Drop for Boards {
    fn drop(&mut self) {
        self.stop();
    }
}
