//! `oshrun`: starts an fshmem job of N processing elements on this host.
//!
//! Each PE is a child process running the same program with `FSHMEM_RANK`,
//! `FSHMEM_SIZE`, `FSHMEM_JOB_ID` and `FSHMEM_CONDUIT` set. oshrun pins PE
//! `r` to the `r mod ncpus`-th CPU it may use, forwards output (optionally
//! prefixed with `[pe r] `), exits with the status of the first PE that
//! fails and stops the others, stops the job on SIGINT/SIGTERM/SIGHUP, and
//! removes the job's shared memory however the job ends. A PE that leaves
//! because another PE failed names that PE on a pipe (`FSHMEM_LAUNCHER_FD`),
//! so oshrun's message names the PE that failed first even when another
//! ended before it.
//!
//! With `--conduit ipv6` (or `ofi`) oshrun also runs the job's rendezvous
//! bootstrap server on `[::1]` (an ephemeral port) and passes its address
//! to every PE in `FSHMEM_BOOTSTRAP`; the PEs then talk UDP over IPv6
//! loopback, each PE a host of its own (`FSHMEM_HOST_KEY`). `--hosts H`
//! models H hosts instead: the PEs of a host share memory, the hosts talk
//! over the network conduit, each in a network namespace of its own when
//! oshrun may create them (see the `hosts` module).
//!
//! Signals are handled without handlers: oshrun blocks SIGINT, SIGTERM,
//! SIGHUP and SIGCHLD before starting anything and collects them with
//! `sigtimedwait`, so a signal can never be lost between two checks. The
//! children get an empty signal mask, and `PR_SET_PDEATHSIG(SIGKILL)` so
//! that a job never outlives a killed oshrun.

#[path = "oshrun/hosts.rs"]
mod hosts;

use clap::{Parser, ValueEnum};
use conduits::ConduitKind;
use conduits::bootstrap::rendezvous::Server;
use conduits::smp::remove_job_files;
use hosts::HostNet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Most PEs oshrun starts.
const MAX_PES: u32 = conduits::smp::MAX_PES as u32;
/// How long the PEs of an ipv6 job have to reach the bootstrap server.
const BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long stopped PEs get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(400);

const ENV_HELP: &str = "\
Environment set for every PE:
  FSHMEM_RANK      the PE's rank, 0..N-1
  FSHMEM_SIZE      the number of PEs, N
  FSHMEM_JOB_ID    the job id (names the job's shared memory,
                   /dev/shm/fshmem-<job>-*)
  FSHMEM_CONDUIT   the conduit (smp, ipv6, fpga or ofi)
  FSHMEM_BOOTSTRAP with --conduit ipv6 or ofi: the [::1]:port of the rendezvous
                   server oshrun runs for the job ([fd00:f5::ffff]:port, the
                   hub, with --hosts in network namespaces)
  FSHMEM_HOST_KEY  with --conduit ipv6 or ofi: the PE's host, <job>.h<k>
                   (every PE its own host unless --hosts groups them)
  FSHMEM_FPGA_DEVICE  fpga: the PE's devsim board directory
                   (/dev/shm/fshmem-<job>-board<rank>/, removed at the end)
  FSHMEM_LAUNCHER_FD  a pipe on which a PE that leaves because another PE
                   failed names that PE, so that oshrun's message blames
                   the PE that failed first (\"... after PE 1 failed\")

Environment read by the PEs (passed through unchanged):
  SHMEM_SYMMETRIC_SIZE  size of each PE's symmetric heap (e.g. 64M, 1G)
  SHMEM_DEBUG           print debugging output when set to 1
  SHMEM_INFO            print the library's configuration at start-up
  SHMEM_VERSION         print the library version at start-up
  FSHMEM_PEER_TIMEOUT   ipv6, fpga board links: silence before a peer is
                        declared failed (10s)
  FSHMEM_FPGA_WINDOW    fpga: each devsim board's DDR window (default 1G)
  FSHMEM_DEVSIM_IMPAIR  fpga, testing: loss=5,dup=1,reorder=10 (percent of
                        the board link datagrams dropped/duplicated/delayed)

Exit status: 0 when every PE exits 0; otherwise the status of the first PE
that failed (128+signal for a PE killed by a signal), after stopping the
others; 130 (143 for SIGTERM, 129 for SIGHUP) when oshrun is interrupted;
127 when the program cannot be started; 2 for usage errors.

Examples:
  oshrun -n 4 ./matmul
  oshrun -np 8 --prefix ./hello --verbose
  oshrun -n 4 --conduit ipv6 ./matmul
  oshrun -n 6 --hosts 2 ./matmul      # 2 hosts of 3 PEs: smp within, ipv6 between";

/// How PEs are pinned to CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Bind {
    /// PE r runs on the (r mod ncpus)-th CPU oshrun may use.
    Core,
    /// No pinning: the scheduler places PEs.
    None,
}

/// Launch an fshmem OpenSHMEM job: N copies of PROGRAM, one per PE.
#[derive(Debug, Parser)]
#[command(
    name = "oshrun",
    version,
    after_help = ENV_HELP,
    override_usage = "oshrun -n N [OPTIONS] PROGRAM [ARGS]...\n       oshrun -np N [OPTIONS] PROGRAM [ARGS]..."
)]
struct Cli {
    /// Number of PEs to start, 1..=1024 (`-np N` is accepted too).
    #[arg(
        short = 'n',
        long = "np",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=MAX_PES as i64)
    )]
    np: u32,

    /// Transport the PEs use: smp, ipv6 over `[::1]`, fpga on devsim boards
    /// started for the job, or ofi (libfabric; FSHMEM_OFI_PROVIDER chooses
    /// the provider) (default: FSHMEM_CONDUIT, else smp).
    #[arg(long, value_name = "CONDUIT", value_parser = parse_conduit)]
    conduit: Option<ConduitKind>,

    /// Model H hosts on this machine (network conduits: ipv6, the default
    /// with --hosts, or ofi): PEs are placed on hosts in blocks, share
    /// memory within a host and use the network conduit between hosts
    /// (default: every PE a host of its own).
    #[arg(long, value_name = "H", value_parser = clap::value_parser!(u32).range(1..=MAX_PES as i64))]
    hosts: Option<u32>,

    /// How the hosts of --hosts are networked: netns (a network namespace
    /// per host, joined by a bridge; needs CAP_SYS_ADMIN and iproute2),
    /// loopback (every host on ::1), or auto (netns when oshrun may
    /// create namespaces).
    #[arg(long, value_enum, value_name = "NET", default_value_t = HostNet::Auto)]
    host_net: HostNet,

    /// Prefix every line a PE prints (stdout and stderr) with `[pe N] `.
    /// Without it, PEs write straight to oshrun's stdout and stderr.
    #[arg(long)]
    prefix: bool,

    /// Pin each PE to one CPU (core) or leave placement to the scheduler (none).
    #[arg(long, value_enum, default_value_t = Bind::Core)]
    bind: Bind,

    /// Job id naming the job's shared memory (1..=64 of [A-Za-z0-9_-]);
    /// default: unique per run. An id another running oshrun holds is
    /// refused before anything starts.
    #[arg(long, value_name = "ID", value_parser = parse_job_id)]
    job_id: Option<String>,

    /// The program every PE runs, followed by its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

fn parse_conduit(s: &str) -> Result<ConduitKind, String> {
    s.parse::<ConduitKind>()
        .map_err(|_| format!("expected {}", ConduitKind::names()))
}

fn parse_job_id(s: &str) -> Result<String, String> {
    if !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(s.to_string())
    } else {
        Err("a job id is 1 to 64 characters of [A-Za-z0-9_-]".to_string())
    }
}

/// Rewrites `-np N` (and `-np=N`) among oshrun's own options as `--np`;
/// clap has no two-letter short options. Stops at the program name.
fn preprocess(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    out.extend(it.next());
    let mut expect_value = false;
    let mut in_options = true;
    for a in it {
        if !in_options {
            out.push(a);
            continue;
        }
        if expect_value {
            expect_value = false;
            out.push(a);
            continue;
        }
        let s = a.to_string_lossy();
        if s == "--" || !s.starts_with('-') {
            in_options = false;
            out.push(a);
        } else if s == "-np" {
            expect_value = true;
            out.push("--np".into());
        } else if let Some(v) = s.strip_prefix("-np=") {
            out.push(format!("--np={v}").into());
        } else {
            expect_value = matches!(
                &*s,
                "-n" | "--np" | "--conduit" | "--bind" | "--job-id" | "--hosts" | "--host-net"
            );
            out.push(a);
        }
    }
    out
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(preprocess(std::env::args_os().collect()));
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(msg) => {
            conduits::report!("oshrun: {msg}");
            ExitCode::from(2)
        }
    }
}

/// What became of one PE.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    Running,
    Exited(i32),
    Signaled(i32),
}

struct Pe {
    pid: libc::pid_t,
    outcome: Outcome,
}

fn run(cli: Cli) -> Result<u8, String> {
    let n = cli.np as usize;
    // The configuration every PE will read (every layer's table), checked
    // once here: a bad value stops the job before it starts, naming the
    // variable.
    let config =
        shmem::Config::from_lookup(|k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
    let settings = &config.conduit;
    let debug = config.debug;
    let conduit = match (cli.conduit, config.job.conduit) {
        (Some(k), _) | (None, Some(k)) => k,
        (None, None) if cli.hosts.is_some() => ConduitKind::Ipv6,
        (None, None) => ConduitKind::default(),
    };
    if !conduit.is_built() {
        return Err(format!(
            "the {conduit} conduit is not built in: rebuild with the cargo feature `conduits/{}`",
            conduit.feature()
        ));
    }
    let job_id = cli.job_id.clone().unwrap_or_else(default_job_id);
    // Before anything of the job exists: a second job with this id would
    // share (and at its end remove) this one's memory and boards.
    let instance = format!("oshrun pid {}", std::process::id());
    let _claim = conduits::job_lock::JobLock::claim(&job_id, &instance)
        .map_err(|e| format!("{e}; choose another --job-id"))?;
    // Hosts: a network conduit gives every PE a host key (every PE its own
    // host unless --hosts groups them); others run on one host.
    let nhosts = match (cli.hosts, conduit.routes()) {
        (Some(h), _) if h as usize > n => {
            return Err(format!("--hosts {h}: more hosts than the {n} PEs"));
        }
        (Some(h), false) if h > 1 => {
            return Err(format!(
                "--hosts {h} needs a network conduit between the hosts (--conduit ipv6 or ofi), \
                 not {conduit}"
            ));
        }
        (Some(h), true) => Some(h as usize),
        (None, true) => Some(n),
        (_, false) => None,
    };
    let fabric = match (cli.hosts, nhosts) {
        (Some(_), Some(h)) => match cli.host_net {
            HostNet::Loopback => None,
            HostNet::Netns => Some(hosts::Fabric::build(h)?),
            HostNet::Auto => match hosts::Fabric::build(h) {
                Ok(f) => Some(f),
                Err(e) => {
                    if debug {
                        conduits::report!("oshrun: {e}; the {h} hosts share [::1]");
                    }
                    None
                }
            },
        },
        _ => None,
    };
    let (program, args) = cli.command.split_first().expect("clap requires PROGRAM");
    // fpga: one devsim board per PE, stopped and removed when `boards` drops.
    let boards = match conduit {
        ConduitKind::Fpga => Some(conduits::fpga::launch::Boards::start(&job_id, n, settings)?),
        _ => None,
    };
    let cpus = match cli.bind {
        Bind::Core => cpu_order(),
        Bind::None => Vec::new(),
    };

    let signals = SignalSet::launcher();
    signals.block();
    // The ipv6 job's rendezvous server; it ends by itself once every PE
    // left (or one failed), and with oshrun in any case.
    let rendezvous = match (conduit, &fabric) {
        (ConduitKind::Ipv6 | ConduitKind::Ofi, None) => {
            let any: std::net::SocketAddr = "[::1]:0".parse().expect("literal address");
            let server = Server::start(any, n, BOOTSTRAP_TIMEOUT)
                .map_err(|e| format!("cannot start the ipv6 bootstrap server on [::1]: {e}"))?;
            Some(server)
        }
        (ConduitKind::Ipv6 | ConduitKind::Ofi, Some(f)) => {
            let hub = std::net::SocketAddr::from((hosts::HUB, 0));
            let server = f
                .in_hub(|| Server::start(hub, n, BOOTSTRAP_TIMEOUT))?
                .map_err(|e| format!("cannot start the bootstrap server on [{hub}]: {e}"))?;
            Some(server)
        }
        _ => None,
    };
    let conduit_name = conduit.name();
    let parent = std::process::id() as libc::pid_t;

    let mut pes: Vec<Pe> = Vec::with_capacity(n);
    let mut readers = Vec::new();
    let mut first_failure: Option<(usize, Outcome)> = None;
    let mut causes =
        CausePipe::new().map_err(|e| format!("cannot create the PEs' report pipe: {e}"))?;
    let cause_fd = causes.write_fd();
    let mut start_error = None;
    for rank in 0..n {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("FSHMEM_RANK", rank.to_string())
            .env("FSHMEM_SIZE", n.to_string())
            .env("FSHMEM_JOB_ID", &job_id)
            .env("FSHMEM_CONDUIT", conduit_name)
            .env(conduits::job::LAUNCHER_FD_VAR, cause_fd.to_string());
        if let Some(b) = &boards {
            cmd.env("FSHMEM_FPGA_DEVICE", b.device(rank));
        }
        if let Some(server) = &rendezvous {
            cmd.env("FSHMEM_BOOTSTRAP", server.addr().to_string());
        }
        let host = nhosts.map(|h| hosts::host_of(rank, n, h));
        if let Some(k) = host {
            cmd.env("FSHMEM_HOST_KEY", hosts::key(&job_id, k));
        }
        let netns = fabric.as_ref().zip(host).map(|(f, k)| f.host_ns(k));
        if cli.prefix {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        let cpu = (!cpus.is_empty()).then(|| cpus[rank % cpus.len()]);
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes async-signal-safe system calls (prctl, getppid, kill,
        // pthread_sigmask, sched_setaffinity, fcntl, setns) on values
        // prepared before the fork; it allocates nothing and takes no locks.
        unsafe {
            cmd.pre_exec(move || {
                child_setup(parent, cpu, cause_fd);
                if let Some(ns) = netns
                    && libc::setns(ns, libc::CLONE_NEWNET) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut child) => {
                if cli.prefix {
                    let out = child.stdout.take().map(|s| forward(rank, s, false));
                    let err = child.stderr.take().map(|s| forward(rank, s, true));
                    readers.extend(out.into_iter().chain(err));
                }
                pes.push(Pe {
                    pid: child.id() as libc::pid_t,
                    outcome: Outcome::Running,
                });
            }
            Err(e) => {
                start_error = Some(format!(
                    "cannot start PE {rank}: {}: {e}",
                    program.to_string_lossy()
                ));
                break;
            }
        }
    }

    causes.close_write();

    let mut interrupted: Option<i32> = None;
    let mut stopping: Option<Instant> = None;
    let mut killed = false;
    let mut reported = false;
    if start_error.is_some() {
        stopping = Some(stop(&pes));
    }
    loop {
        // Signals first: a Ctrl-C that also killed the PEs (same terminal
        // process group) is an interruption, not a PE failure.
        let mut timeout = if stopping.is_some() {
            Duration::from_millis(20)
        } else {
            Duration::from_millis(250)
        };
        while let Some(sig) = signals.wait(timeout) {
            timeout = Duration::ZERO;
            if sig == libc::SIGCHLD {
                continue;
            }
            if interrupted.is_none() {
                conduits::report!("oshrun: {}: stopping the job", signal_name(sig));
                interrupted = Some(sig);
                if stopping.is_none() {
                    stopping = Some(stop(&pes));
                }
            } else if !killed {
                kill_all(&pes, libc::SIGKILL);
                killed = true;
            }
        }
        reap(&mut pes, |rank, outcome| {
            let failed = !matches!(outcome, Outcome::Exited(0));
            if failed && first_failure.is_none() && stopping.is_none() && interrupted.is_none() {
                first_failure = Some((rank, outcome));
            }
        });
        let running = pes
            .iter()
            .filter(|p| matches!(p.outcome, Outcome::Running))
            .count();
        if running == 0 {
            break;
        }
        if stopping.is_none()
            && let Some((rank, outcome)) = first_failure
        {
            let after = causes.after(rank);
            conduits::report!(
                "oshrun: PE {rank} (pid {}) {}{after}; stopping the other {running} PE{}",
                pes[rank].pid,
                describe(outcome),
                if running == 1 { "" } else { "s" }
            );
            stopping = Some(stop(&pes));
            reported = true;
        }
        if let Some(t) = stopping
            && !killed
            && t.elapsed() >= GRACE
        {
            kill_all(&pes, libc::SIGKILL);
            killed = true;
        }
    }
    if let (Some((rank, outcome)), false) = (first_failure, reported) {
        let after = causes.after(rank);
        conduits::report!(
            "oshrun: PE {rank} (pid {}) {}{after}",
            pes[rank].pid,
            describe(outcome)
        );
    }
    for r in readers {
        let _ = r.join();
    }
    drop(boards);
    drop(fabric);
    let removed = remove_job_files(&job_id);
    if removed > 0 && debug {
        conduits::report!("oshrun: removed {removed} shared-memory files of job {job_id}");
    }

    if let Some(e) = start_error {
        conduits::report!("oshrun: {e}");
        return Ok(127);
    }
    if let Some(sig) = interrupted {
        return Ok((128 + sig) as u8);
    }
    // The job ends with the status of the PE that failed first: the one
    // the others named, when it failed by itself (a PE that saw it die may
    // have been reaped first), not by oshrun's SIGTERM or SIGKILL.
    let culprit = first_failure.map(|(rank, outcome)| match causes.poll() {
        Some(r) if r != rank && r < pes.len() => match pes[r].outcome {
            Outcome::Signaled(libc::SIGTERM) => outcome,
            Outcome::Signaled(libc::SIGKILL) if killed => outcome,
            o @ (Outcome::Signaled(_) | Outcome::Exited(1..)) => o,
            _ => outcome,
        },
        _ => outcome,
    });
    Ok(match culprit {
        None => 0,
        Some(Outcome::Exited(code)) => (code & 0xff) as u8,
        Some(Outcome::Signaled(sig)) => (128 + sig) as u8,
        Some(Outcome::Running) => 1,
    })
}

/// The read end of the pipe through which PEs name the PE whose failure
/// made them leave (see `conduits::job::tell_launcher_failed`): oshrun may
/// see such a PE end before the failed one and must not blame it.
struct CausePipe {
    read: std::fs::File,
    /// The write end, inherited by the PEs; closed in oshrun once they have
    /// it.
    write: Option<std::os::fd::OwnedFd>,
    buf: Vec<u8>,
    /// The first PE named.
    first: Option<usize>,
}

impl CausePipe {
    fn new() -> std::io::Result<CausePipe> {
        use std::os::fd::FromRawFd;
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors are new and owned by nothing else.
        let (read, write) = unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::os::fd::OwnedFd::from_raw_fd(fds[1]),
            )
        };
        Ok(CausePipe {
            read,
            write: Some(write),
            buf: Vec::new(),
            first: None,
        })
    }

    /// The write end's descriptor (-1 once closed).
    fn write_fd(&self) -> libc::c_int {
        use std::os::fd::AsRawFd;
        self.write.as_ref().map_or(-1, |w| w.as_raw_fd())
    }

    /// Closes oshrun's copy of the write end once every PE has its own.
    fn close_write(&mut self) {
        self.write = None;
    }

    /// Reads what the PEs wrote so far; returns the first PE named.
    fn poll(&mut self) -> Option<usize> {
        let mut chunk = [0u8; 512];
        while let Ok(k @ 1..) = self.read.read(&mut chunk) {
            if self.buf.len() < 64 * 1024 {
                self.buf.extend_from_slice(&chunk[..k]);
            }
        }
        if self.first.is_none() {
            self.first = self
                .buf
                .split(|&b| b == b'\n')
                .filter_map(|l| std::str::from_utf8(l).ok()?.strip_prefix("failed "))
                .find_map(|pe| pe.trim().parse().ok());
        }
        self.first
    }

    /// `" after PE r failed"` when a PE named `r`, not `rank`, as the PE
    /// that failed first; empty otherwise.
    fn after(&mut self, rank: usize) -> String {
        match self.poll() {
            Some(r) if r != rank => format!(" after PE {r} failed"),
            _ => String::new(),
        }
    }
}

/// Runs in each child before exec: dies with oshrun, default signal mask,
/// CPU pinning.
fn child_setup(parent: libc::pid_t, cpu: Option<usize>, cause_fd: libc::c_int) {
    // SAFETY: plain system calls on locals; async-signal-safe.
    unsafe {
        // The PE keeps the report pipe's write end across exec.
        libc::fcntl(cause_fd, libc::F_SETFD, 0);
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != parent {
            // oshrun died before the death signal was armed.
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        if let Some(cpu) = cpu {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            // Pinning is best effort: a refused mask leaves the PE unpinned.
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

/// Copies a PE's output stream to oshrun's, line by line, with a prefix.
fn forward(
    rank: usize,
    stream: impl Read + Send + 'static,
    stderr: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let prefix = format!("[pe {rank}] ");
        let mut input = BufReader::new(stream);
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if line.last() != Some(&b'\n') {
                        line.push(b'\n');
                    }
                    let mut buf = Vec::with_capacity(prefix.len() + line.len());
                    buf.extend_from_slice(prefix.as_bytes());
                    buf.extend_from_slice(&line);
                    // One write per line keeps lines of different PEs whole.
                    let _ = if stderr {
                        std::io::stderr().lock().write_all(&buf)
                    } else {
                        std::io::stdout().lock().write_all(&buf)
                    };
                }
            }
        }
    })
}

/// Collects every child that has ended, in the order the kernel reports them.
fn reap(pes: &mut [Pe], mut ended: impl FnMut(usize, Outcome)) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with WNOHANG writes only to `status`.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        let outcome = if libc::WIFSIGNALED(status) {
            Outcome::Signaled(libc::WTERMSIG(status))
        } else if libc::WIFEXITED(status) {
            Outcome::Exited(libc::WEXITSTATUS(status))
        } else {
            continue;
        };
        if let Some(rank) = pes.iter().position(|p| p.pid == pid) {
            pes[rank].outcome = outcome;
            ended(rank, outcome);
        }
    }
}

/// Asks every running PE to stop (SIGTERM); returns when that was.
fn stop(pes: &[Pe]) -> Instant {
    kill_all(pes, libc::SIGTERM);
    Instant::now()
}

fn kill_all(pes: &[Pe], sig: i32) {
    for p in pes.iter().filter(|p| matches!(p.outcome, Outcome::Running)) {
        // SAFETY: the pid is our unreaped child, so it cannot have been reused.
        unsafe { libc::kill(p.pid, sig) };
    }
}

fn describe(o: Outcome) -> String {
    match o {
        Outcome::Exited(c) => format!("exited with status {c}"),
        Outcome::Signaled(s) => format!("was killed by signal {s} ({})", signal_name(s)),
        Outcome::Running => "is running".to_string(),
    }
}

fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

fn default_job_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64 ^ d.as_secs().rotate_left(32))
        .unwrap_or(0);
    format!("j{:x}x{:x}", std::process::id(), nanos)
}

/// The CPUs oshrun may use, in the order PEs are placed on them.
fn cpu_order() -> Vec<usize> {
    let allowed = allowed_cpus();
    #[cfg(feature = "hwloc")]
    {
        let ordered = hwloc_order(&allowed);
        if !ordered.is_empty() {
            return ordered;
        }
    }
    allowed
}

/// The CPUs of oshrun's affinity mask, ascending.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// hwloc's order: the first hardware thread of every core, then the other
/// hardware threads, restricted to `allowed`.
#[cfg(feature = "hwloc")]
fn hwloc_order(allowed: &[usize]) -> Vec<usize> {
    use hwloc2::{ObjectType, Topology};
    let Some(topo) = Topology::new() else {
        return Vec::new();
    };
    let mut order: Vec<usize> = Vec::new();
    if let Ok(cores) = topo.objects_with_type(&ObjectType::Core) {
        for core in cores {
            let first = core
                .cpuset()
                .into_iter()
                .flat_map(|s| s.into_iter())
                .map(|c| c as usize)
                .find(|c| allowed.contains(c));
            order.extend(first);
        }
    }
    if let Ok(pus) = topo.objects_with_type(&ObjectType::PU) {
        for pu in pus {
            let c = pu.os_index() as usize;
            if allowed.contains(&c) && !order.contains(&c) {
                order.push(c);
            }
        }
    }
    order
}

/// The signals oshrun collects with `sigtimedwait`.
struct SignalSet(libc::sigset_t);

impl SignalSet {
    fn launcher() -> SignalSet {
        // SAFETY: sigemptyset/sigaddset initialise and modify the local set.
        unsafe {
            let mut s: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut s);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD] {
                libc::sigaddset(&mut s, sig);
            }
            SignalSet(s)
        }
    }

    /// Blocks the set in this thread (and so in threads it starts later).
    fn block(&self) {
        // SAFETY: the set is initialised; the old mask is not needed.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.0, std::ptr::null_mut()) };
    }

    /// Waits up to `timeout` for a signal of the set; returns it.
    fn wait(&self, timeout: Duration) -> Option<i32> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the set is initialised and blocked; info may be null.
        let sig = unsafe { libc::sigtimedwait(&self.0, std::ptr::null_mut(), &ts) };
        (sig > 0).then_some(sig)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn np_is_rewritten_only_among_own_options() {
        assert_eq!(
            preprocess(os(&["oshrun", "-np", "4", "prog", "-np", "2"])),
            os(&["oshrun", "--np", "4", "prog", "-np", "2"])
        );
        assert_eq!(
            preprocess(os(&["oshrun", "--prefix", "-np=3", "--bind", "none", "p"])),
            os(&["oshrun", "--prefix", "--np=3", "--bind", "none", "p"])
        );
        assert_eq!(
            preprocess(os(&["oshrun", "-n", "2", "p", "-np"])),
            os(&["oshrun", "-n", "2", "p", "-np"])
        );
    }

    #[test]
    fn cli_parses_and_rejects() {
        let c = Cli::try_parse_from(preprocess(os(&["oshrun", "-np", "5", "prog", "-x", "y"])))
            .unwrap();
        assert_eq!(c.np, 5);
        assert_eq!(c.command, os(&["prog", "-x", "y"]));
        assert_eq!(c.bind, Bind::Core);
        assert!(Cli::try_parse_from(os(&["oshrun", "-n", "0", "prog"])).is_err());
        assert!(Cli::try_parse_from(os(&["oshrun", "-n", "2"])).is_err());
        assert!(Cli::try_parse_from(os(&["oshrun", "-n", "2", "--job-id", "a/b", "p"])).is_err());
    }
}
