//! The PEs as processes: what each child sets up before exec, forwarding
//! its output, reaping and stopping the PEs, the pipe on which they name
//! the PE that failed first, and the signals oshrun collects.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

/// What became of one PE.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Outcome {
    Running,
    Exited(i32),
    Signaled(i32),
}

pub(crate) struct Pe {
    pub(crate) pid: libc::pid_t,
    pub(crate) outcome: Outcome,
}

/// The read end of the pipe through which PEs name the PE whose failure
/// made them leave (see `conduits::job::tell_launcher_failed`): oshrun may
/// see such a PE end before the failed one and must not blame it.
pub(crate) struct CausePipe {
    read: std::fs::File,
    /// The write end, inherited by the PEs; closed in oshrun once they have
    /// it.
    write: Option<std::os::fd::OwnedFd>,
    buf: Vec<u8>,
    /// The first PE named.
    first: Option<usize>,
}

impl CausePipe {
    pub(crate) fn new() -> std::io::Result<CausePipe> {
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
    pub(crate) fn write_fd(&self) -> libc::c_int {
        use std::os::fd::AsRawFd;
        self.write.as_ref().map_or(-1, |w| w.as_raw_fd())
    }

    /// Closes oshrun's copy of the write end once every PE has its own.
    pub(crate) fn close_write(&mut self) {
        self.write = None;
    }

    /// Reads what the PEs wrote so far; returns the first PE named.
    pub(crate) fn poll(&mut self) -> Option<usize> {
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
    pub(crate) fn after(&mut self, rank: usize) -> String {
        match self.poll() {
            Some(r) if r != rank => format!(" after PE {r} failed"),
            _ => String::new(),
        }
    }
}

/// Runs in each child before exec: dies with oshrun, default signal mask,
/// CPU pinning.
pub(crate) fn child_setup(parent: libc::pid_t, cpu: Option<usize>, cause_fd: libc::c_int) {
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
pub(crate) fn forward(
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
pub(crate) fn reap(pes: &mut [Pe], mut ended: impl FnMut(usize, Outcome)) {
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
pub(crate) fn stop(pes: &[Pe]) -> Instant {
    kill_all(pes, libc::SIGTERM);
    Instant::now()
}

pub(crate) fn kill_all(pes: &[Pe], sig: i32) {
    for p in pes.iter().filter(|p| matches!(p.outcome, Outcome::Running)) {
        // SAFETY: the pid is our unreaped child, so it cannot have been reused.
        unsafe { libc::kill(p.pid, sig) };
    }
}

pub(crate) fn describe(o: Outcome) -> String {
    match o {
        Outcome::Exited(c) => format!("exited with status {c}"),
        Outcome::Signaled(s) => format!("was killed by signal {s} ({})", signal_name(s)),
        Outcome::Running => "is running".to_string(),
    }
}

pub(crate) fn signal_name(sig: i32) -> String {
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

/// The signals oshrun collects with `sigtimedwait`.
pub(crate) struct SignalSet(libc::sigset_t);

impl SignalSet {
    pub(crate) fn launcher() -> SignalSet {
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
    pub(crate) fn block(&self) {
        // SAFETY: the set is initialised; the old mask is not needed.
        unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &self.0, std::ptr::null_mut()) };
    }

    /// Waits up to `timeout` for a signal of the set; returns it.
    pub(crate) fn wait(&self, timeout: Duration) -> Option<i32> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the set is initialised and blocked; info may be null.
        let sig = unsafe { libc::sigtimedwait(&self.0, std::ptr::null_mut(), &ts) };
        (sig > 0).then_some(sig)
    }
}
