//! The one runtime of the process: its lifecycle state, the pointer through
//! which the free functions and the C ABI reach it, the exit hook that
//! finalizes a PE leaving without `shmem_finalize`, finalization, and the
//! conduit the C ABI keeps between a finalize and the next `shmem_init`.

use super::{Backend, Runtime, StartOptions, StaticRegion};
use crate::config::{Config, ThreadLevel};
use crate::error::{Result, ShmemError};
use conduits::prelude::ActiveMessages as _;
use conduits::wait::Backoff;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};

const UNINIT: u8 = 0;
const STARTING: u8 = 1;
const RUNNING: u8 = 2;
const FINALIZED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static GLOBAL: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static USERS: AtomicUsize = AtomicUsize::new(0);

/// Set while the exit hook finalizes: an error then ends the process with
/// `_exit` (exit is not re-entrant).
pub(super) static IN_EXIT_HOOK: AtomicBool = AtomicBool::new(false);

/// Flushes stdout and ends the process at once (`_exit`), as an exit
/// handler must.
pub(super) fn exit_now(status: i32) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    // SAFETY: _exit ends the process at once; it is allowed anywhere,
    // exit handlers included.
    unsafe { libc::_exit(status) }
}

/// How long a PE finalizing at exit waits for the others before it says
/// so.
const EXIT_NOTICE_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether PE 0 warns when the process exits without finalizing (not
/// after `start_pes`).
static WARN_AT_EXIT: AtomicBool = AtomicBool::new(true);

/// What the C ABI's last `shmem_finalize` keeps for a later `shmem_init`
/// (OpenSHMEM 1.6 allows initializing again): the conduit, still attached
/// to the job, and where the program's static data is mapped on its
/// segment. The conduit leaves the job at process exit if no `shmem_init`
/// takes it back.
pub(super) struct Parked {
    pub(super) conduit: Backend,
    pub(super) statics: Option<StaticRegion>,
}

static PARKED: Mutex<Option<Parked>> = Mutex::new(None);

/// The conduit a previous `shmem_finalize` kept, if any (taken).
pub(super) fn take_parked() -> Option<Parked> {
    PARKED.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Runs at process exit (glibc `on_exit`, which passes the status), as
/// Sandia OpenSHMEM's exit handler does: a process that leaves `main` or
/// calls `exit(0)` while the runtime runs finalizes here (collectively,
/// like `shmem_finalize`), and PE 0 says so unless the program started
/// with `start_pes`, which has no finalize; the process then exits with
/// its own status. A process that exits with another status does not
/// wait for its peers (they may be waiting for it): it leaves at once and
/// the launcher stops the job. A conduit that the C ABI's last
/// `shmem_finalize` kept for a later `shmem_init` leaves the job here.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn exit_hook(status: libc::c_int, _arg: *mut libc::c_void) {
    if conduits::wait::job_exiting() {
        return;
    }
    if STATE.load(Ordering::Acquire) == RUNNING && status == 0 {
        let p = GLOBAL.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: GLOBAL is non-null only while the runtime is alive; the
            // process is exiting on this thread and nothing frees it now.
            let rt = unsafe { &*p };
            if rt.me == 0 && WARN_AT_EXIT.load(Ordering::Relaxed) {
                conduits::report!("PE 0: shutting down without a call to shmem_finalize");
            }
            // The finalization waits for every PE; if they are not coming
            // (they wait for something this PE would have sent), say which
            // PE waits at exit, once, after a while.
            let (done, waited) = std::sync::mpsc::channel::<()>();
            let me = rt.me;
            let notice = std::thread::Builder::new().spawn(move || {
                // Disconnected: the finalization ended in time.
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    waited.recv_timeout(EXIT_NOTICE_AFTER)
                {
                    conduits::report!(
                        "PE {me}: left main (or called exit) without shmem_finalize; waiting at exit for the other PEs to finalize"
                    );
                }
            });
            IN_EXIT_HOOK.store(true, Ordering::Release);
            conduits::wait::note_exit_handler(true);
            // As the C ABI's shmem_finalize (a barrier, the conduit kept
            // until exit, where it leaves the job), so that this PE meets
            // peers that called shmem_finalize.
            super::active_area::note_finalizing(rt);
            let finalized = rt
                .barrier_all("shmem_finalize")
                .and_then(|()| rt.finalize());
            conduits::wait::note_exit_handler(false);
            IN_EXIT_HOOK.store(false, Ordering::Release);
            drop(done);
            if let Ok(t) = notice {
                let _ = t.join();
            }
            if let Err(e) = finalized {
                conduits::report!("{e}");
                exit_now(1)
            }
            STATE.store(FINALIZED, Ordering::Release);
        }
    }
    // Every PE passed the last shmem_finalize's barrier: a peer that is
    // gone by now is no failure.
    if let Some(parked) = take_parked() {
        let _ = parked.conduit.finalize();
    }
    // However the process leaves (a failure status included), its claim
    // on the job id goes with it; the last PE out removes the claim files.
    conduits::job_lock::release_for_pe();
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

/// The barrier of the C ABI's last `shmem_finalize`, run while the
/// runtime is still published: a handler that a peer's message runs in it
/// may reply (`shmemx_am_reply_*`) and call the library.
///
/// The conduit stays attached after this finalize ([`park`]), so its own
/// finalize (which serves what the receive queue still holds) runs only at
/// exit, where its errors no longer count. An active message a peer sent
/// before its barrier signal has reached this PE by the end of the
/// barrier, though the barrier's last look may have come before it: it is
/// served here, so that a message to a handler nobody registered fails
/// this call, naming it.
pub(crate) fn finalize_barrier(r: &Runtime) -> Result<()> {
    // From here this PE makes no collective call but this barrier: a PE
    // that waits for it in an active-set call can tell (see
    // `collective::active`).
    super::active_area::note_finalizing(r);
    r.barrier_all("shmem_finalize")
        .and_then(|()| r.conduit.poll().map_err(|e| r.err("shmem_finalize", e)))
}

/// As [`finish`], for the C ABI's last `shmem_finalize`, after
/// [`finalize_barrier`]: the runtime is freed but its conduit stays
/// attached to the job, for a later `shmem_init` (OpenSHMEM 1.6) or until
/// the process exits.
///
/// # Safety
/// As for [`finish`].
pub(crate) unsafe fn park(rt: *mut Runtime) {
    // SAFETY: `rt` is live until the Box is rebuilt below (caller contract).
    let r = unsafe { &*rt };
    if r.config.debug {
        conduits::report!("PE {}: shmem_finalize: done", r.me);
    }
    GLOBAL.store(std::ptr::null_mut(), Ordering::SeqCst);
    let mut backoff = Backoff::new();
    while USERS.load(Ordering::SeqCst) != 0 {
        backoff.snooze();
    }
    // SAFETY: as in `finish`: unpublished, unused, from `Box::into_raw`.
    let Runtime {
        conduit, statics, ..
    } = *unsafe { Box::from_raw(rt) };
    *PARKED.lock().unwrap_or_else(|p| p.into_inner()) = Some(Parked { conduit, statics });
    STATE.store(UNINIT, Ordering::Release);
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
        WARN_AT_EXIT.store(!opts.start_pes, Ordering::Relaxed);
        match Self::build(config, thread_level, opts) {
            Ok(rt) => {
                let p = Box::into_raw(Box::new(rt));
                GLOBAL.store(p, Ordering::SeqCst);
                STATE.store(RUNNING, Ordering::Release);
                install_exit_hook();
                super::stop::install();
                Ok(p)
            }
            Err(e) => {
                // A start that failed leaves the job id to others.
                conduits::job_lock::release_for_pe();
                STATE.store(UNINIT, Ordering::Release);
                Err(e)
            }
        }
    }
}
