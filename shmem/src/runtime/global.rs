//! The one runtime of the process: its lifecycle state, the pointer through
//! which the free functions and the C ABI reach it, the exit hook that
//! reports a PE leaving without finalizing, and finalization.

use super::{NOT_FINALIZED_STATUS, Runtime, StartOptions};
use crate::config::{Config, ThreadLevel};
use crate::error::{Result, ShmemError};
use conduits::wait::Backoff;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

const UNINIT: u8 = 0;
const STARTING: u8 = 1;
const RUNNING: u8 = 2;
const FINALIZED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static GLOBAL: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static USERS: AtomicUsize = AtomicUsize::new(0);

/// Runs at process exit (glibc `on_exit`, which passes the status): a
/// process leaving with status 0 while the runtime runs did not finalize.
/// That is a failure of the job, not a success: say so and exit non-zero,
/// so that the launcher stops the other PEs (which would otherwise wait for
/// this one) and the job's status shows it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn exit_hook(status: libc::c_int, _arg: *mut libc::c_void) {
    if status != 0 || STATE.load(Ordering::Acquire) != RUNNING || conduits::wait::job_exiting() {
        return;
    }
    let p = GLOBAL.load(Ordering::SeqCst);
    let pe = if p.is_null() {
        "?".to_string()
    } else {
        // SAFETY: GLOBAL is non-null only while the runtime is alive; the
        // process is exiting, nothing frees it any more.
        unsafe { (*p).me.to_string() }
    };
    conduits::report!(
        "PE {pe}: exited without calling shmem_finalize; ending the job with status {NOT_FINALIZED_STATUS}"
    );
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    // SAFETY: _exit ends the process at once; calling it from an exit
    // handler is allowed (unlike exit).
    unsafe { libc::_exit(NOT_FINALIZED_STATUS) }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn install_exit_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    unsafe extern "C" {
        fn on_exit(
            f: extern "C" fn(libc::c_int, *mut libc::c_void),
            arg: *mut libc::c_void,
        ) -> libc::c_int;
    }
    // SAFETY: registers a handler with glibc; the handler touches only
    // statics and the leaked runtime.
    ONCE.call_once(|| unsafe {
        on_exit(exit_hook, std::ptr::null_mut());
    });
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn install_exit_hook() {}

/// Finalizes the runtime owned by a handle: unpublishes it, waits for
/// running free-function calls to leave, finalizes and frees it.
///
/// # Safety
/// `rt` must come from [`Runtime::start`] and not have been passed here
/// before; no reference derived from it may outlive this call.
pub(crate) unsafe fn finish(rt: *mut Runtime) -> Result<()> {
    // SAFETY: `rt` is live until the Box is rebuilt below (caller contract).
    let r = unsafe { &*rt };
    let res = r.finalize();
    if r.config.debug {
        conduits::report!("PE {}: shmem_finalize: done", r.me);
    }
    GLOBAL.store(std::ptr::null_mut(), Ordering::SeqCst);
    let mut backoff = Backoff::new();
    while USERS.load(Ordering::SeqCst) != 0 {
        backoff.snooze();
    }
    STATE.store(FINALIZED, Ordering::Release);
    // SAFETY: `rt` came from `Box::into_raw` in `start`; it is no longer
    // published and no free-function call holds it (USERS is zero after
    // GLOBAL was cleared), and the handle that owned it is being consumed.
    drop(unsafe { Box::from_raw(rt) });
    res
}

/// Runs `f` on the global runtime, or errors when none is running. The
/// runtime cannot be finalized while `f` runs.
pub(crate) fn with_runtime<R>(call: &'static str, f: impl FnOnce(&Runtime) -> R) -> Result<R> {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            USERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    USERS.fetch_add(1, Ordering::SeqCst);
    let _leave = Leave;
    let p = GLOBAL.load(Ordering::SeqCst);
    if p.is_null() {
        return Err(ShmemError::NotInitialized { call });
    }
    // SAFETY: `p` is published only while the runtime is alive, and
    // `finish` waits for USERS to drop to zero after unpublishing it before
    // freeing it; our increment happened before the load (both SeqCst), so
    // `finish` waits for us.
    Ok(f(unsafe { &*p }))
}

impl Runtime {
    /// Starts the runtime: reads the configuration and the job, attaches
    /// the conduit, and publishes the state. Errors if already running.
    pub(crate) fn start(
        config: Config,
        thread_level: ThreadLevel,
        opts: StartOptions,
    ) -> Result<*mut Runtime> {
        match STATE.compare_exchange(UNINIT, STARTING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {}
            Err(FINALIZED) => return Err(ShmemError::Finalized),
            Err(_) => return Err(ShmemError::AlreadyInitialized),
        }
        match Self::build(config, thread_level, opts) {
            Ok(rt) => {
                let p = Box::into_raw(Box::new(rt));
                GLOBAL.store(p, Ordering::SeqCst);
                STATE.store(RUNNING, Ordering::Release);
                install_exit_hook();
                Ok(p)
            }
            Err(e) => {
                STATE.store(UNINIT, Ordering::Release);
                Err(e)
            }
        }
    }
}
