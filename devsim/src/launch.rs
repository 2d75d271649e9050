//! `devsim board` and `devsim launch`: the processes that run a job's boards.
//!
//! The *keeper* (`devsim launch --job J --nodes N --dir PREFIX`) starts N
//! board processes (`devsim board`), board `n` in directory `PREFIX<n>`
//! (`bar0`, `bar2`, `ports`, `pid`, `ready`). It collects every board's two
//! UDP ports into the job-wide table, writes it to each board (`peers`),
//! waits until every board is ready and reports the directories on its
//! stdout (`ready DIR\tDIR...`). Closing its stdin stops the boards
//! (SIGTERM, then SIGCONT so that a stopped board takes it at once), waits
//! for them (3 s at most, then SIGKILL) and removes their directories. The
//! keeper and the boards also stop on SIGTERM/SIGINT/SIGHUP and when their
//! parent dies (`PR_SET_PDEATHSIG`), removing their files.
//!
//! The board settings arrive as flags, which the keeper passes to every
//! board unchanged: `--window SIZE` (the DDR window, default 1G, sparse),
//! `--peer-timeout DURATION` (a silent peer board's limit, default 10s),
//! `--impair loss=P,dup=P,reorder=P` (tests: impair the link datagrams a
//! board sends), `--fault KIND` (tests: none, get, inline-put,
//! segment-put, atomic) and `--compute 0|1` (whether the board has its
//! compute core, default 1). devsim reads no environment. The host never reads
//! the `ports`, `peers`, `pid` or `ready` files: it knows a board only by its
//! BARs.

use crate::board::{BoardModel, DEFAULT_WINDOW, Fault};
use crate::compute::{ComputeCore, GemmCore};
use crate::core::{BoardCore, CoreKind};
use crate::link::{ReliableLink, UdpLink};
use gasnet_core::config::ConfigValue;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long boards may take to come up.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The flags that carry board settings, passed from the keeper to boards.
pub const SETTING_FLAGS: &[&str] = &[
    "--window",
    "--peer-timeout",
    "--impair",
    "--fault",
    "--core",
    "--mem-latency",
    "--compute",
];

const USAGE: &str =
    "usage: devsim board --dir DIR --node N --nodes M [--window SIZE] [--peer-timeout D]
                    [--impair loss=P,dup=P,reorder=P] [--fault KIND]
                    [--core engine|rtl] [--mem-latency CYCLES] [--compute 0|1]
       devsim launch --job ID --nodes M --dir PREFIX [the same settings]";

/// The `devsim` program: `board` or `launch` (see the binary's docs).
pub fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("board") => board_main(&args[1..]),
        // The keeper's errors go to its stdout, where the launcher reads
        // them (one line, not two).
        Some("launch") => {
            return match keeper_main(&args[1..]) {
                Ok(()) => std::process::ExitCode::SUCCESS,
                Err(_) => std::process::ExitCode::from(1),
            };
        }
        _ => {
            crate::report(USAGE);
            return std::process::ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            crate::report(&format!("devsim: {e}"));
            std::process::ExitCode::from(1)
        }
    }
}

/// The core named by `--core` (default: the engine), checked to be built
/// into this devsim, and the settings that only one core takes.
fn core_flag(args: &[String]) -> Result<CoreKind, String> {
    let core: CoreKind = flag(args, "--core")
        .unwrap_or("engine")
        .parse()
        .map_err(|e| format!("--core: {e}"))?;
    core.check_available()?;
    if core == CoreKind::Rtl && flag(args, "--fault").is_some_and(|f| f != "none") {
        return Err("--fault injects faults into the engine core only (--core engine)".to_string());
    }
    Ok(core)
}

/// `--mem-latency` in cycles (default [`DEFAULT_MEM_LATENCY`]).
fn mem_latency_flag(args: &[String]) -> Result<u32, String> {
    match flag(args, "--mem-latency") {
        None => Ok(DEFAULT_MEM_LATENCY),
        Some(v) => match v.trim().parse::<u32>() {
            Ok(n) if (1..=100_000).contains(&n) => Ok(n),
            _ => Err(format!(
                "--mem-latency {v:?}: expected a count of cycles, 1 to 100000"
            )),
        },
    }
}

/// `--compute`: whether the board has its compute core (default yes).
fn compute_flag(args: &[String]) -> Result<bool, String> {
    Ok(parse_flag::<bool>(args, "--compute")?.unwrap_or(true))
}

/// Default `--mem-latency` of the RTL core: 30 cycles (120 ns at 250 MHz,
/// about a DDR4 read).
pub const DEFAULT_MEM_LATENCY: u32 = 30;

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
        if let Ok(s) = std::fs::read_to_string(path)
            && s.ends_with('\n')
        {
            return Ok(s);
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
    let core = core_flag(args)?;
    let mem_latency = mem_latency_flag(args)?;
    let compute = compute_flag(args)?;
    let result = (|| -> Result<(), String> {
        let bind_err = |e: std::io::Error| format!("cannot bind link ports: {e}");
        // The engine's packets travel over devsim's reliable transport; the
        // RTL core carries its own reliability layer, so its frames are
        // plain datagrams.
        let mut link = match core {
            CoreKind::Engine => Links::Reliable(Box::new(
                ReliableLink::bind(node, peer_timeout, impair).map_err(bind_err)?,
            )),
            CoreKind::Rtl => Links::Plain(UdpLink::bind(node).map_err(bind_err)?),
        };
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
        let mut board: Box<dyn BoardCore> = match link {
            Links::Reliable(link) => Box::new(
                BoardModel::create(&dir, node, nodes, window, link, compute.then(gemm), fault)
                    .map_err(|e| format!("cannot create board files in {}: {e}", dir.display()))?,
            ),
            Links::Plain(udp) => rtl_board(
                &dir,
                node,
                nodes,
                window,
                udp,
                peer_timeout,
                impair,
                mem_latency,
                compute,
            )?,
        };
        write_atomically(&dir.join("ready"), "ready\n").map_err(|e| e.to_string())?;
        crate::core::run(&mut *board, &STOP, &AtomicBool::new(false));
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A board's compute core: devsim's GEMM tile engine.
fn gemm() -> Box<dyn ComputeCore> {
    Box::new(GemmCore::new())
}

/// A board's links before its core exists.
enum Links {
    /// The engine's: devsim's reliable transport.
    Reliable(Box<ReliableLink>),
    /// The RTL core's: plain datagrams.
    Plain(UdpLink),
}

impl Links {
    fn local_ports(&self) -> std::io::Result<[u16; 2]> {
        match self {
            Links::Reliable(l) => l.local_ports(),
            Links::Plain(l) => l.local_ports(),
        }
    }

    fn set_peers(&mut self, ports: &[[u16; 2]]) {
        match self {
            Links::Reliable(l) => l.set_peers(ports),
            Links::Plain(l) => l.set_peers(ports),
        }
    }
}

/// The RTL core's board (the `rtl` feature).
#[cfg(feature = "rtl")]
#[allow(clippy::too_many_arguments)]
fn rtl_board(
    dir: &Path,
    node: u16,
    nodes: u16,
    window: u64,
    udp: UdpLink,
    peer_timeout: Duration,
    impair: Option<gasnet_core::impair::Impair>,
    mem_latency: u32,
    compute: bool,
) -> Result<Box<dyn BoardCore>, String> {
    let s = crate::rtl::RtlSettings {
        mem_latency,
        peer_timeout,
        impair,
    };
    Ok(Box::new(crate::rtl::RtlBoard::create(
        dir,
        node,
        nodes,
        window,
        udp,
        s,
        compute.then_some(gemm as fn() -> Box<dyn ComputeCore>),
    )?))
}

/// Without the `rtl` feature: what to build (never reached, as
/// `core_flag` refuses `--core rtl` first).
#[cfg(not(feature = "rtl"))]
#[allow(clippy::too_many_arguments)]
fn rtl_board(
    _dir: &Path,
    _node: u16,
    _nodes: u16,
    _window: u64,
    _udp: UdpLink,
    _peer_timeout: Duration,
    _impair: Option<gasnet_core::impair::Impair>,
    _mem_latency: u32,
    _compute: bool,
) -> Result<Box<dyn BoardCore>, String> {
    Err(crate::core::RTL_MISSING.to_string())
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

/// `devsim launch --job J --nodes N --dir PREFIX [settings]`: the keeper.
/// Prints `ready <dirs>` (tab-separated) when every board is up, stops
/// them when stdin closes.
/// Every error is also printed on stdout as `error <why>`, the one line the
/// launcher reports.
pub fn keeper_main(args: &[String]) -> Result<(), String> {
    let result = keeper(args);
    if let Err(e) = &result {
        println!("error {e}");
    }
    result
}

fn keeper(args: &[String]) -> Result<(), String> {
    install_stop_handlers();
    // The job id only names the keeper's processes (for people and tests).
    flag(args, "--job").ok_or("--job is required")?;
    let nodes: usize = flag(args, "--nodes")
        .ok_or("--nodes is required")?
        .parse()
        .map_err(|_| "--nodes takes a count")?;
    if nodes == 0 || nodes > u16::MAX as usize {
        return Err(format!("--nodes {nodes} out of range"));
    }

    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let prefix = flag(args, "--dir").ok_or("--dir is required")?;
    let dirs: Vec<PathBuf> = (0..nodes)
        .map(|n| PathBuf::from(format!("{prefix}{n}")))
        .collect();
    // The board settings go to every board unchanged.
    let mut passed = Vec::new();
    for &name in SETTING_FLAGS {
        if let Some(v) = flag(args, name) {
            passed.extend([name.to_string(), v.to_string()]);
        }
    }
    let mut children: Vec<Child> = Vec::new();
    let result = (|| -> Result<(), String> {
        // Refused here, at once, rather than by every board.
        core_flag(args)?;
        mem_latency_flag(args)?;
        compute_flag(args)?;
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
                    if STOP.load(Ordering::Relaxed) {
                        // A stop signal to the whole process group (a
                        // launcher ending the job) reached the board too:
                        // its exit is the stop, not a failure.
                        break;
                    }
                    reported[n] = true;
                    crate::report(&format!(
                        "devsim: board {n} (pid {}) stopped unexpectedly ({st})",
                        c.id()
                    ));
                    let _ = std::fs::remove_dir_all(&dirs[n]);
                }
            }
        }
        Ok(())
    })();
    for c in &mut children {
        if matches!(c.try_wait(), Ok(None)) {
            // SAFETY: our unreaped child; signalling it cannot hit another
            // process. SIGCONT lets a board that was stopped (SIGSTOP, a
            // test of silent boards) take the SIGTERM now rather than be
            // killed after the deadline.
            unsafe {
                libc::kill(c.id() as libc::pid_t, libc::SIGTERM);
                libc::kill(c.id() as libc::pid_t, libc::SIGCONT);
            }
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
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn core_and_memory_latency_flags() {
        assert_eq!(core_flag(&args(&[])), Ok(CoreKind::Engine));
        let e = core_flag(&args(&["--core", "gates"])).unwrap_err();
        assert!(e.contains("--core") && e.contains("\"gates\""), "{e}");
        let rtl = core_flag(&args(&["--core", "rtl"]));
        if crate::core::RTL_AVAILABLE {
            assert_eq!(rtl, Ok(CoreKind::Rtl));
            let e = core_flag(&args(&["--core", "rtl", "--fault", "get"])).unwrap_err();
            assert!(e.contains("--fault"), "{e}");
        } else {
            assert_eq!(rtl, Err(crate::core::RTL_MISSING.to_string()));
        }
        assert_eq!(mem_latency_flag(&args(&[])), Ok(DEFAULT_MEM_LATENCY));
        assert_eq!(mem_latency_flag(&args(&["--mem-latency", "7"])), Ok(7));
        for bad in ["0", "x", "1000001"] {
            let e = mem_latency_flag(&args(&["--mem-latency", bad])).unwrap_err();
            assert!(e.contains(bad), "{e}");
        }
        assert_eq!(compute_flag(&args(&[])), Ok(true));
        assert_eq!(compute_flag(&args(&["--compute", "0"])), Ok(false));
        assert_eq!(compute_flag(&args(&["--compute", "1"])), Ok(true));
        let e = compute_flag(&args(&["--compute", "maybe"])).unwrap_err();
        assert!(e.contains("--compute") && e.contains("maybe"), "{e}");
    }
}
