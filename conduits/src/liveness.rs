//! Telling a live peer from a dead one, and naming the PE that failed first:
//! the rules every conduit uses (`spec/conduit.md` §7), written once.
//!
//! - [`process_alive`]: whether a process of this host still runs. A zombie
//!   (exited, not yet reaped by its parent, typically `oshrun`) has exited:
//!   it is dead. A PE whose process is gone without having finalized has
//!   failed.
//! - [`root_of`]: a PE that leaves because it saw another PE fail records
//!   that PE; following the records leads to the PE that failed first,
//!   which is the one every message names.
//! - [`host_name`]: which host a PE runs on, for the checks above (process
//!   ids mean something only on their own host).

/// Whether process `pid` of this host exists and has not exited. A zombie
/// counts as exited; a pid that does not fit `pid_t` does not exist.
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
    // SAFETY: kill with signal 0 only checks existence and permission; it
    // has no memory-safety preconditions.
    let r = unsafe { libc::kill(p, 0) };
    if r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    // A zombie has exited; its parent has not collected it yet.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(st) => st
            .rsplit_once(')')
            .is_none_or(|(_, rest)| rest.trim_start().as_bytes().first() != Some(&b'Z')),
        Err(_) => r == 0,
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
        // SAFETY: reaps our own child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        assert!(!process_alive(pid as u64));
    }
}
