//! Telling a live peer from a dead one, and naming the PE that failed first:
//! the rules every conduit uses (`spec/conduit.md` §7), written once.
//!
//! - [`process_alive`]: whether a process of this host still runs. A zombie
//!   (exited, not yet reaped by its parent, typically `oshrun`) has exited:
//!   it is dead. A PE whose process is gone without having finalized has
//!   failed.
//! - [`process_stopped`]: whether it is stopped (SIGSTOP): alive, silent.
//! - [`root_of`]: a PE that leaves because it saw another PE fail records
//!   that PE ([`Cause`]); following the records leads to the PE that
//!   failed first, which is the one every message names.
//! - [`host_name`]: which host a PE runs on, for the checks above (process
//!   ids mean something only on their own host).

/// Whether process `pid` of this host exists and has not exited. A zombie
/// counts as exited; a pid that does not fit `pid_t` does not exist.
///
/// This sits on the wait path of every conduit (a waiting PE checks its
/// peers every so many polls), so it is one system call per check: the
/// first check of a pid opens a pidfd for it (kept for the life of the
/// process), which becomes readable when the process exits, zombie or
/// reaped; later checks poll it without waiting. Kernels without pidfds
/// (before 5.3) fall back to `kill(pid, 0)` and the process's `/proc` state.
///
/// ```
/// use conduits::liveness::process_alive;
/// assert!(process_alive(std::process::id() as u64));
/// assert!(!process_alive(u64::MAX));
/// ```
pub fn process_alive(pid: u64) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if p <= 0 {
        return false;
    }
    match pidfd_alive(p) {
        Some(alive) => alive,
        None => proc_alive(p),
    }
}

/// pidfds opened by [`process_alive`], by pid: a job has few peers per
/// host, so a short list scanned under an uncontended lock.
static PIDFDS: std::sync::Mutex<Vec<(libc::pid_t, std::os::fd::OwnedFd)>> =
    std::sync::Mutex::new(Vec::new());

/// Whether `p` runs, told by its pidfd; `None` when this kernel offers no
/// pidfds (or no more file descriptors), so the caller asks another way.
fn pidfd_alive(p: libc::pid_t) -> Option<bool> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let mut fds = PIDFDS.lock().unwrap_or_else(|e| e.into_inner());
    let fd = match fds.iter().find(|(q, _)| *q == p) {
        Some((_, fd)) => fd.as_raw_fd(),
        None => {
            // SAFETY: pidfd_open takes a pid and flags and returns a new
            // descriptor or -1; it touches no memory of ours.
            let r = unsafe { libc::syscall(libc::SYS_pidfd_open, p, 0) };
            if r < 0 {
                return match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::ESRCH) => Some(false),
                    _ => None,
                };
            }
            let raw = r as std::os::fd::RawFd;
            // SAFETY: `raw` is a descriptor pidfd_open just returned to us
            // and nothing else owns it.
            fds.push((p, unsafe { OwnedFd::from_raw_fd(raw) }));
            raw
        }
    };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid pollfd that poll may write; timeout 0.
    let r = unsafe { libc::poll(&mut pfd, 1, 0) };
    if r < 0 {
        return None;
    }
    let alive = pfd.revents & libc::POLLIN == 0;
    if !alive {
        // Forget it: should the pid be used again, the next check opens
        // the new process's pidfd (as `kill` would see it).
        fds.retain(|(q, _)| *q != p);
    }
    Some(alive)
}

/// `kill(p, 0)` and the `/proc` state: the way without pidfds.
fn proc_alive(p: libc::pid_t) -> bool {
    // SAFETY: kill with signal 0 only checks existence and permission; it
    // has no memory-safety preconditions.
    let r = unsafe { libc::kill(p, 0) };
    if r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    // A zombie has exited; its parent has not collected it yet.
    match std::fs::read_to_string(format!("/proc/{p}/stat")) {
        Ok(st) => st
            .rsplit_once(')')
            .is_none_or(|(_, rest)| rest.trim_start().as_bytes().first() != Some(&b'Z')),
        Err(_) => r == 0,
    }
}

/// Whether process `pid` of this host is stopped (SIGSTOP or a tracer:
/// state `T` or `t` in `/proc/PID/stat`): alive, but not running.
///
/// ```
/// use conduits::liveness::process_stopped;
/// assert!(!process_stopped(std::process::id() as u64));
/// assert!(!process_stopped(u64::MAX));
/// ```
pub fn process_stopped(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
        st.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().as_bytes().first().copied())
            .is_some_and(|c| c == b'T' || c == b't')
    })
}

/// What process `pid` of this host is doing, for messages: `running`,
/// `sleeping in <kernel function>`, `stopped`, ... from the state letter
/// of `/proc/PID/stat` and `/proc/PID/wchan`; `None` when there is no
/// such process (or it is a zombie: it has ended).
///
/// ```
/// use conduits::liveness::process_activity;
/// assert_eq!(process_activity(std::process::id() as u64).as_deref(), Some("running"));
/// assert_eq!(process_activity(u64::MAX), None);
/// ```
pub fn process_activity(pid: u64) -> Option<String> {
    let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = st.rsplit_once(')')?.1.trim_start().chars().next()?;
    let what = match state {
        'R' => return Some("running".to_string()),
        'S' => "sleeping",
        'D' => "in an uninterruptible wait",
        'T' | 't' => return Some("stopped (SIGSTOP or a tracer)".to_string()),
        'Z' | 'X' => return None,
        other => return Some(format!("in state {other}")),
    };
    match std::fs::read_to_string(format!("/proc/{pid}/wchan")) {
        Ok(w) if !w.is_empty() && w != "0" => Some(format!("{what} in {}", w.trim())),
        _ => Some(what.to_string()),
    }
}

/// This host's name (whitespace replaced), or an empty string when the
/// system will not say.
pub fn host_name() -> String {
    let mut b = [0u8; 256];
    // SAFETY: gethostname writes at most `b.len()` bytes into `b`.
    let r = unsafe { libc::gethostname(b.as_mut_ptr().cast(), b.len()) };
    if r != 0 {
        return String::new();
    }
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..n]).replace(char::is_whitespace, "_")
}

/// The PE a PE recorded as the reason it leaves the job: the PE whose
/// failure it found. The PEs of a host read each other's records (smp's
/// control block), and name only PEs of their host by local rank, so a
/// routed job's PE that learnt of the failure through the off-node
/// conduit (`spec/conduit.md` §10.4) names a PE of another host by its
/// job rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A PE of this host, by its local rank (its rank, in a job of one
    /// host).
    OnNode(usize),
    /// A PE of another host, by its rank in the whole job.
    OffNode(usize),
}

/// The PE that failed first, found from PE `pe`, which failed or left:
/// `cause(q)` is the PE that PE `q` recorded as the reason it left, if any.
/// Follows the records (at most one step per PE) until a PE recorded none,
/// or named itself, this PE (`me`) or a PE outside the job.
///
/// ```
/// use conduits::liveness::root_of;
/// // PE 0 left because of PE 2, PE 2 because of PE 1, PE 1 failed itself.
/// let causes = [Some(2), None, Some(1), None];
/// assert_eq!(root_of(0, 3, 4, |q| causes[q]), 1);
/// assert_eq!(root_of(1, 3, 4, |q| causes[q]), 1);
/// // A record naming the caller or a PE outside the job is not followed.
/// assert_eq!(root_of(0, 2, 4, |q| causes[q]), 0);
/// assert_eq!(root_of(3, 0, 4, |_| Some(9)), 3);
/// ```
pub fn root_of(pe: usize, me: usize, size: usize, cause: impl Fn(usize) -> Option<usize>) -> usize {
    let mut root = pe;
    for _ in 0..size {
        match cause(root) {
            Some(next) if next != root && next != me && next < size => root = next,
            _ => break,
        }
    }
    root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_seen_alive_is_dead_once_it_exits() {
        let mut pipe = [0; 2];
        // SAFETY: pipe writes two descriptors into the array.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        // SAFETY: fork in a test process; the child only reads and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let mut b = [0u8; 1];
            // SAFETY: the child blocks until the parent closes the pipe,
            // reading at most one byte into `b`, then ends at once.
            unsafe {
                libc::close(pipe[1]);
                libc::read(pipe[0], b.as_mut_ptr().cast(), 1);
                libc::_exit(0);
            }
        }
        // SAFETY: closes our read end; the child holds its own.
        unsafe { libc::close(pipe[0]) };
        assert!(process_alive(pid as u64), "a running child is alive");
        assert!(process_alive(pid as u64), "and stays so on the cached path");
        // SAFETY: closing the write end lets the child's read return.
        unsafe { libc::close(pipe[1]) };
        // SAFETY: siginfo_t is plain data; waitid writes only into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, leaving it unreaped (WNOWAIT).
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        assert_eq!(r, 0);
        assert!(!process_alive(pid as u64), "exited (a zombie) is dead");
        // SAFETY: reaps our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        assert!(!process_alive(pid as u64), "reaped is dead");
    }

    #[test]
    fn a_zombie_is_not_alive() {
        // SAFETY: fork in a test process; the child only calls _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: ends the child at once, running nothing of the parent.
            unsafe { libc::_exit(0) };
        }
        // Wait for it to exit without reaping it: it stays a zombie.
        // SAFETY: siginfo_t is plain data; waitid writes only into it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, leaving it unreaped (WNOWAIT).
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        assert_eq!(r, 0);
        assert!(!process_alive(pid as u64), "a zombie counts as exited");
        assert!(!proc_alive(pid), "without pidfds too");
        // SAFETY: reaps our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        assert!(!process_alive(pid as u64));
    }
}
