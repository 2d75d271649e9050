//! Starting and stopping a job's devsim boards.
//!
//! `oshrun --conduit fpga -n N` calls [`Boards::start`], which runs one
//! *keeper* process (`devsim launch`) with the board settings as flags
//! (`--window`, `--peer-timeout`, `--impair`, `--fault`, from the
//! `FSHMEM_FPGA_WINDOW`, `FSHMEM_PEER_TIMEOUT`, `FSHMEM_DEVSIM_IMPAIR` and
//! `FSHMEM_DEVSIM_FAULT` settings: devsim reads no environment); the keeper
//! starts N board processes (`devsim board`), one per node, with the same
//! flags, each in its directory
//! `/dev/shm/fshmem-<job>-board<n>/` (`bar0`, `bar2`, `ports`, `pid`,
//! `ready`). It collects every board's two UDP ports into the job-wide
//! table, writes it to each board (`peers`), waits until every board is
//! ready and reports the directories on its stdout. PE `n` then runs with
//! `FSHMEM_FPGA_DEVICE` naming board `n`'s directory.
//!
//! Stopping is closing the keeper's stdin: it stops the boards (SIGTERM),
//! waits for them and removes their directories. The keeper and the boards
//! also stop on SIGTERM/SIGINT/SIGHUP and when their parent dies
//! (`PR_SET_PDEATHSIG`), removing their files, and [`remove_job_boards`]
//! removes whatever a killed job left.

use super::devsim::compute::GemmCore;
use super::devsim::link::ReliableLink;
use super::devsim::{BoardModel, DEFAULT_WINDOW, Fault};
use crate::Settings;
use gasnet_core::config::{ConfigValue, format_duration, format_size};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Board `n`'s directory for job `job`.
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
/// to this program, else `devsim` on `PATH`.
pub fn devsim_path(settings: &Settings) -> PathBuf {
    if let Some(p) = &settings.devsim {
        return p.clone();
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("devsim")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("devsim"))
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
        let exe = devsim_path(settings);
        let mut cmd = Command::new(&exe);
        cmd.args(["launch", "--job", job, "--nodes", &n.to_string()])
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
                "cannot start the devsim board simulator {}: {e} (build it with `cargo build \
                 --release -p devsim`, or name it with FSHMEM_DEVSIM)",
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

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_stop_handlers() {
    // SAFETY: the handler only stores to an atomic (async-signal-safe);
    // unblocking signals affects only this process.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(sig, on_signal as *const () as libc::sighandler_t);
        }
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|s| s.as_str())
}

/// Parses flag `name`'s value with `T`'s configuration syntax.
fn parse_flag<T: ConfigValue>(args: &[String], name: &str) -> Result<Option<T>, String> {
    flag(args, name)
        .map(|v| T::parse_value(v.trim()).map_err(|e| format!("{name} {v:?}: expected {e}")))
        .transpose()
}

fn wait_file(path: &Path, timeout: Duration) -> Result<String, String> {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if s.ends_with('\n') {
                return Ok(s);
            }
        }
        if STOP.load(Ordering::Relaxed) {
            return Err("stopped".to_string());
        }
        if start.elapsed() > timeout {
            return Err(format!(
                "{} did not appear within {timeout:?}",
                path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(tmp, path)
}

/// `devsim board --dir D --node N --nodes M [--fault F]`: one board
/// process. Returns the exit status.
pub fn board_main(args: &[String]) -> Result<(), String> {
    install_stop_handlers();
    let dir = PathBuf::from(flag(args, "--dir").ok_or("--dir is required")?);
    let node: u16 = flag(args, "--node")
        .ok_or("--node is required")?
        .parse()
        .map_err(|_| "--node takes a node id")?;
    let nodes: u16 = flag(args, "--nodes")
        .ok_or("--nodes is required")?
        .parse()
        .map_err(|_| "--nodes takes a count")?;
    let window = match flag(args, "--window") {
        Some(w) => gasnet_core::config::parse_size(w)
            .map_err(|e| format!("--window {w:?}: expected {e}"))? as u64,
        None => DEFAULT_WINDOW,
    };
    let fault: Fault = flag(args, "--fault").unwrap_or("none").parse()?;
    let peer_timeout =
        parse_flag::<Duration>(args, "--peer-timeout")?.unwrap_or(Duration::from_secs(10));
    let impair = parse_flag::<gasnet_core::impair::Impair>(args, "--impair")?;
    let result = (|| -> Result<(), String> {
        let mut link = ReliableLink::bind(node, peer_timeout, impair)
            .map_err(|e| format!("cannot bind link ports: {e}"))?;
        let ports = link.local_ports().map_err(|e| e.to_string())?;
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        write_atomically(&dir.join("pid"), &format!("{}\n", std::process::id()))
            .map_err(|e| e.to_string())?;
        write_atomically(&dir.join("ports"), &format!("{} {}\n", ports[0], ports[1]))
            .map_err(|e| e.to_string())?;
        let table = wait_file(&dir.join("peers"), START_TIMEOUT)?;
        let peers = parse_peers(&table)?;
        if peers.len() != nodes as usize {
            return Err(format!(
                "peer table lists {} boards, expected {nodes}",
                peers.len()
            ));
        }
        link.set_peers(&peers);
        let mut board = BoardModel::create(
            &dir,
            node,
            nodes,
            window,
            Box::new(link),
            Box::new(GemmCore::new()),
            fault,
        )
        .map_err(|e| format!("cannot create board files in {}: {e}", dir.display()))?;
        write_atomically(&dir.join("ready"), "ready\n").map_err(|e| e.to_string())?;
        board.run(&STOP);
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn parse_peers(s: &str) -> Result<Vec<[u16; 2]>, String> {
    s.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<u16> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            match v[..] {
                [a, b] => Ok([a, b]),
                _ => Err(format!("bad peer table line {l:?}")),
            }
        })
        .collect()
}

/// `devsim launch --job J --nodes N`: the keeper. Prints `ready <dirs>`
/// (tab-separated) when every board is up, stops them when stdin closes.
pub fn keeper_main(args: &[String]) -> Result<(), String> {
    install_stop_handlers();
    let job = flag(args, "--job").ok_or("--job is required")?.to_string();
    let nodes: usize = flag(args, "--nodes")
        .ok_or("--nodes is required")?
        .parse()
        .map_err(|_| "--nodes takes a count")?;
    if nodes == 0 || nodes > u16::MAX as usize {
        return Err(format!("--nodes {nodes} out of range"));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dirs: Vec<PathBuf> = (0..nodes).map(|n| board_dir(&job, n)).collect();
    // The board settings go to every board unchanged.
    let mut passed = Vec::new();
    for name in ["--window", "--peer-timeout", "--impair", "--fault"] {
        if let Some(v) = flag(args, name) {
            passed.extend([name.to_string(), v.to_string()]);
        }
    }
    let mut children: Vec<Child> = Vec::new();
    let result = (|| -> Result<(), String> {
        for (n, d) in dirs.iter().enumerate() {
            let mut cmd = Command::new(&exe);
            cmd.arg("board")
                .arg("--dir")
                .arg(d)
                .args(["--node", &n.to_string(), "--nodes", &nodes.to_string()])
                .args(&passed)
                .stdin(Stdio::null());
            // SAFETY: the closure only makes async-signal-safe system calls.
            unsafe {
                cmd.pre_exec(|| {
                    child_setup(libc::SIGTERM);
                    Ok(())
                });
            }
            children.push(
                cmd.spawn()
                    .map_err(|e| format!("cannot start board {n}: {e}"))?,
            );
        }
        let mut table = String::new();
        for d in &dirs {
            table.push_str(&wait_file(&d.join("ports"), START_TIMEOUT)?);
        }
        for d in &dirs {
            write_atomically(&d.join("peers"), &table).map_err(|e| e.to_string())?;
        }
        for d in &dirs {
            wait_file(&d.join("ready"), START_TIMEOUT)?;
        }
        let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready {}", list.join("\t")).map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
        drop(out);
        // Wait for stdin to close or a stop signal. A board that dies is
        // reported but the others keep serving: the PEs' liveness checks
        // name the PE whose board is gone, and the launcher ends the job.
        let mut reported = vec![false; children.len()];
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let mut sink = [0u8; 64];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            let _ = tx.send(());
        });
        loop {
            if STOP.load(Ordering::Relaxed) {
                break;
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            for (n, c) in children.iter_mut().enumerate() {
                if reported[n] {
                    continue;
                }
                if let Ok(Some(st)) = c.try_wait() {
                    reported[n] = true;
                    crate::report!(
                        "devsim: board {n} (pid {}) stopped unexpectedly ({st})",
                        c.id()
                    );
                    let _ = std::fs::remove_dir_all(&dirs[n]);
                }
            }
        }
        Ok(())
    })();
    for c in &mut children {
        if matches!(c.try_wait(), Ok(None)) {
            // SAFETY: our unreaped child; signalling it cannot hit another process.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        }
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    for c in &mut children {
        while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if matches!(c.try_wait(), Ok(None)) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
    }
    if let Err(e) = &result {
        println!("error {e}");
    }
    result
}
