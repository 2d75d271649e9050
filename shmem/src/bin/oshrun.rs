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

#[path = "oshrun/cli.rs"]
mod cli;
#[path = "oshrun/cpus.rs"]
mod cpus;
#[path = "oshrun/hosts.rs"]
mod hosts;
#[path = "oshrun/pes.rs"]
mod pes;

use clap::Parser;
use cli::{Bind, Cli, preprocess};
use conduits::ConduitKind;
use conduits::bootstrap::rendezvous::Server;
use conduits::smp::remove_job_files;
use hosts::HostNet;
use pes::{
    CausePipe, Outcome, Pe, SignalSet, child_setup, describe, forward, kill_all, reap, signal_name,
    stop,
};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// How long the PEs of an ipv6 job have to reach the bootstrap server.
const BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long stopped PEs get between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(400);

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
        Bind::Core => cpus::cpu_order(),
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

fn default_job_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64 ^ d.as_secs().rotate_left(32))
        .unwrap_or(0);
    format!("j{:x}x{:x}", std::process::id(), nanos)
}
