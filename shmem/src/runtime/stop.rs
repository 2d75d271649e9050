//! Output survives the launcher's stop. When one PE fails, `oshrun` (and
//! Slurm, and Hydra) stops the others with SIGTERM. A PE's C `stdout` is
//! line-buffered once the library starts (`capi::setup`), but a line the
//! program has not ended yet (`printf` without a newline), a stream the
//! program made fully buffered (`setvbuf(stdout, ..., _IOFBF, ...)`) and
//! Rust's `stdout` buffer still hold text that the default action of the
//! signal would throw away.
//!
//! The flush cannot happen in the signal handler: `fflush` takes the
//! stream's lock and is not async-signal-safe (the signal may arrive while
//! the interrupted thread is inside `printf`, holding that very lock, or
//! in the middle of the allocator). Nor can it wait for the runtime's own
//! wait loops to notice a flag: a PE stopped while it computes, or blocks
//! outside the library, would never look. So the work is split:
//!
//! - the handler does only what is async-signal-safe: it records the stop
//!   (`conduits::wait::note_stop`, an atomic store, after which the
//!   runtime reports nothing it finds and hands no error to the program:
//!   a peer gone now was most likely ended by the same stop) and writes
//!   the signal's number into a pipe (and, in a child the program forked,
//!   where no thread reads the pipe, restores the default action and
//!   raises the signal again);
//! - a thread of the runtime, blocked in `read` on that pipe, wakes up in
//!   ordinary context, flushes C's `stdout` and `stderr` and Rust's
//!   `stdout` (taking their locks like any thread: a thread inside
//!   `printf` finishes its call first), then restores the default action
//!   and raises the signal in itself, so the process ends exactly as it
//!   would have (killed by the signal), its output out.
//!
//! The handlers are installed for SIGTERM, SIGINT and SIGHUP when the
//! runtime first starts, each only if the signal still has its default
//! action: a program's own handler (installed before or after) is left
//! alone. Only the standard streams are flushed: `fflush(NULL)` would also
//! lock input streams, which a thread blocked reading `stdin` holds.

use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals a launcher stops a job with.
const SIGNALS: [c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The pipe's write end (-1 until installed).
static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
/// The process whose watcher thread reads the pipe.
static PID: AtomicI32 = AtomicI32::new(0);

/// The handler: async-signal-safe calls only (an atomic store, `getpid`,
/// `write`, `signal`, `raise`; `errno` is saved and restored).
extern "C" fn on_stop(sig: c_int) {
    // SAFETY: every call below is async-signal-safe (POSIX); `errno` is
    // the thread's own and is put back before returning.
    unsafe {
        let errno = *libc::__errno_location();
        conduits::wait::note_stop();
        let fd = WRITE_FD.load(Ordering::Relaxed);
        if fd < 0 || libc::getpid() != PID.load(Ordering::Relaxed) {
            // A child the program forked: nobody reads the pipe here.
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        } else {
            let b = sig as u8;
            libc::write(fd, (&b as *const u8).cast(), 1);
        }
        *libc::__errno_location() = errno;
    }
}

/// Installs the handlers and starts the thread that flushes (once per
/// process; nothing if no signal has its default action or the pipe or
/// thread cannot be made).
pub(super) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let defaults: Vec<c_int> = SIGNALS
            .into_iter()
            .filter(|&s| {
                // SAFETY: sigaction with a null new action only reads the
                // current one into a zeroed struct of ours.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(s, std::ptr::null(), &mut old) == 0
                        && old.sa_sigaction == libc::SIG_DFL
                }
            })
            .collect();
        if defaults.is_empty() {
            return;
        }
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        let read_fd = fds[0];
        let watcher = std::thread::Builder::new()
            .name("fshmem-stop".into())
            .stack_size(64 * 1024)
            .spawn(move || watch(read_fd));
        if watcher.is_err() {
            // SAFETY: closes the two descriptors made above, used nowhere.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            return;
        }
        // SAFETY: getpid has no preconditions.
        PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
        WRITE_FD.store(fds[1], Ordering::Release);
        for s in defaults {
            // SAFETY: installs `on_stop`, a valid handler for the life of
            // the process, with an empty mask; SA_RESTART keeps the
            // program's interrupted system calls going.
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_stop as extern "C" fn(c_int) as libc::sighandler_t;
                act.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(s, &act, std::ptr::null_mut());
            }
        }
    });
}

/// The watcher: waits for a signal's number on the pipe, flushes the
/// standard streams, and ends the process by that signal.
fn watch(fd: c_int) {
    let sig = loop {
        let mut b = 0u8;
        // SAFETY: reads at most one byte into `b` from our pipe.
        let r = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        if r == 1 {
            break b as c_int;
        }
        if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return;
    };
    flush_standard_streams();
    // SAFETY: restores the default action of `sig`, unblocks it in this
    // thread and raises it here: the process ends as the signal's default
    // action ends it. `_exit` only if it somehow returns.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig);
    }
}

/// Flushes C's `stdout` and `stderr`, then Rust's `stdout`.
fn flush_standard_streams() {
    unsafe extern "C" {
        static mut stdout: *mut libc::FILE;
        static mut stderr: *mut libc::FILE;
    }
    // SAFETY: glibc's streams are valid for the life of the process (the
    // program does not reassign them); fflush takes each stream's lock.
    unsafe {
        for f in [
            std::ptr::addr_of!(stdout).read(),
            std::ptr::addr_of!(stderr).read(),
        ] {
            if !f.is_null() {
                libc::fflush(f);
            }
        }
    }
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
}
