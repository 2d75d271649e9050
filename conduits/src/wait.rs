//! Spin-then-yield waiting.
//!
//! Every wait in fshmem (a barrier, a full message ring, a control block not
//! yet published, a `shmem_wait_until`) loops on [`Backoff`]: it spins with
//! [`std::hint::spin_loop`] for a few dozen iterations, which keeps latency
//! low when the awaited PE runs on another core, and then yields the CPU on
//! every further step, so that a job with more PEs than cores (8 PEs on 2
//! cores) still makes progress promptly: the PE being waited for gets the
//! core instead of a spinning peer.
//!
//! ```
//! use conduits::wait::Backoff;
//! use std::sync::atomic::{AtomicBool, Ordering};
//! let flag = AtomicBool::new(true);
//! let mut backoff = Backoff::new();
//! while !flag.load(Ordering::Acquire) {
//!     backoff.snooze();
//! }
//! ```
//!
//! # No silent hangs
//!
//! A process-wide *wait timeout* (`FSHMEM_WAIT_TIMEOUT`, set by the runtime
//! with [`set_timeout`]; off by default) bounds every wait that makes no
//! progress. Waits call [`Backoff::timed_out`] on each step; it reads the
//! clock only once every [`CLOCK_PERIOD`] yielding steps, so the check
//! costs nothing on the spinning fast path, and it answers with the time
//! waited once that exceeds the timeout. [`Backoff::reset`] (called when
//! the awaited thing moved) restarts the clock. The wait then reports
//! which PE waits on what, and the runtime ends the job.
//!
//! ```
//! use conduits::wait::{Backoff, set_timeout, timeout};
//! use std::time::Duration;
//! set_timeout(Some(Duration::from_millis(20)));
//! assert_eq!(timeout(), Some(Duration::from_millis(20)));
//! let mut b = Backoff::new();
//! let waited = loop {
//!     if let Some(w) = b.timed_out() {
//!         break w;
//!     }
//!     b.snooze();
//! };
//! assert!(waited >= Duration::from_millis(20));
//! set_timeout(None);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many steps spin before [`Backoff::snooze`] starts yielding.
pub const SPIN_STEPS: u32 = 48;

/// Whether every wait of this process yields from its first step
/// ([`yield_at_once`]).
static YIELD_AT_ONCE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every wait of this process yield the CPU from its first step
/// instead of spinning [`SPIN_STEPS`] first. For a PE whose awaited work
/// is done by another process of this host on the same CPUs (a board
/// model: the fpga conduit on devsim boards), spinning only keeps that
/// process off the CPU: a put + quiet whose host spun 20 us before
/// yielding waited those 20 us for the board to run.
pub fn yield_at_once() {
    YIELD_AT_ONCE.store(true, Ordering::Relaxed);
}

/// The spinning steps of a wait: [`SPIN_STEPS`], or none after
/// [`yield_at_once`].
#[inline(always)]
fn spin_steps() -> u64 {
    if YIELD_AT_ONCE.load(Ordering::Relaxed) {
        0
    } else {
        SPIN_STEPS as u64
    }
}

/// [`Backoff::timed_out`] reads the clock once every this many yielding
/// steps.
pub const CLOCK_PERIOD: u64 = 64;

/// The wait timeout in nanoseconds; 0 means off.
static TIMEOUT_NS: AtomicU64 = AtomicU64::new(0);

/// Sets the process-wide wait timeout (`None`: waits may last forever).
/// The runtime calls it from `FSHMEM_WAIT_TIMEOUT` before it attaches.
pub fn set_timeout(t: Option<Duration>) {
    let ns = t.map_or(0, |d| {
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
    });
    TIMEOUT_NS.store(ns, Ordering::Relaxed);
}

/// The process-wide wait timeout, if one is set.
pub fn timeout() -> Option<Duration> {
    match TIMEOUT_NS.load(Ordering::Relaxed) {
        0 => None,
        ns => Some(Duration::from_nanos(ns)),
    }
}

/// This process's rank, once the job is known ([`note_rank`]).
static MY_RANK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(usize::MAX);

/// The PE whose global exit ends the job, once known ([`note_exit_from`]).
static EXIT_FROM: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(usize::MAX);

/// Whether a launcher that reports the job's end itself (oshrun) started
/// this process ([`note_rank`]).
static LAUNCHER_REPORTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the launcher reports the job's end itself (oshrun), as
/// [`note_rank`] recorded.
pub(crate) fn launcher_reports() -> bool {
    LAUNCHER_REPORTS.load(Ordering::SeqCst)
}

/// Records this process's rank, for the line [`exit_job`] prints when
/// another PE ends the job, and whether the launcher reports the job's end
/// itself (oshrun, which names the PE that failed first: then that line is
/// not printed).
pub fn note_rank(rank: usize, launcher_reports: bool) {
    LAUNCHER_REPORTS.store(launcher_reports, Ordering::SeqCst);
    MY_RANK.store(rank, Ordering::SeqCst);
}

/// Records that PE `pe` (this PE, for its own global exit) ends the job;
/// the first PE recorded stays.
pub fn note_exit_from(pe: usize) {
    let _ = EXIT_FROM.compare_exchange(usize::MAX, pe, Ordering::SeqCst, Ordering::SeqCst);
}

/// The global-exit word a PE publishes to end the job (smp's control
/// page, the fpga conduit's bootstrap area): `status` in the low 32 bits,
/// bit 32 set so that the word is never 0, and `from`, the PE that ends
/// the job, from bit 40.
#[cfg(any(feature = "smp", feature = "fpga"))]
pub(crate) fn exit_word(status: i32, from: usize) -> u64 {
    (from as u64) << 40 | 1 << 32 | status as u32 as u64
}

/// The status and the ending PE an [`exit_word`] carries.
#[cfg(any(feature = "smp", feature = "fpga"))]
pub(crate) fn exit_word_parts(word: u64) -> (i32, usize) {
    (word as u32 as i32, (word >> 40) as usize)
}

/// Where PE `pe`'s request to end the job with `status` arrives: records
/// it and, for a failure status, prints this PE's line saying why it
/// leaves ([`exit_job`] would) now, before the request is acknowledged:
/// once the requester has left, a launcher may kill this process at any
/// moment.
pub fn peer_ends_job(pe: usize, status: i32) {
    note_exit_from(pe);
    say_why(status);
}

/// Set by the runtime's handler of the launcher's stop signal (SIGTERM,
/// SIGINT, SIGHUP: `shmem`'s `runtime::stop`). The process is ending by
/// that signal, and the launcher is stopping the other PEs at the same
/// moment, so a peer found gone from then on is a consequence of the
/// stop, not a failure to report.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that the launcher's stop signal arrived. A lock-free atomic
/// store: async-signal-safe, for the signal handler.
pub fn note_stop() {
    STOPPING.store(true, Ordering::Relaxed);
}

/// Whether the launcher's stop signal arrived ([`note_stop`]).
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Relaxed)
}

/// Once the stop signal arrived, holds the calling thread for good instead
/// of letting it report what it found or return an error to the program:
/// the runtime's stop thread is flushing the output and then ends the
/// process by the signal. Without it, a PE whose peer the same stop ended
/// a moment earlier could print that peer as the job's failure. Returns at
/// once otherwise.
pub fn hold_if_stopping() {
    while stopping() {
        std::thread::park();
    }
}

/// Set once the job is ending through a global exit.
static JOB_EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that this process is about to exit because the job ends
/// (`global_exit`, from this PE or another): its exit is not a PE failure.
/// Conduits call it before they exit on a global exit.
pub fn note_job_exit() {
    JOB_EXITING.store(true, Ordering::SeqCst);
}

/// Ends the process with `status` because the job ends (a global exit from
/// this PE or another): records it ([`note_job_exit`]) and exits. Only the
/// first thread to call it exits; any other caller (a progress thread and
/// an application thread may both learn of the end) waits for the process
/// to go, since two concurrent `exit` calls are undefined.
///
/// From the process's exit handlers (the runtime finalizes there when a
/// program exits without finalizing, see [`note_exit_handler`]) it ends
/// the process with `_exit` after flushing stdout: the process is already
/// exiting, and `exit` may not be called again.
pub fn exit_job(status: i32) -> ! {
    static EXITING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    note_job_exit();
    if IN_EXIT_HANDLER.load(Ordering::SeqCst) {
        leave(status);
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        crate::job_lock::release_for_pe();
        // SAFETY: _exit ends the process at once; allowed anywhere.
        unsafe { libc::_exit(status) }
    }
    if EXITING.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    leave(status);
    crate::job_lock::release_for_pe();
    std::process::exit(status)
}

/// What a PE does on its way out of a job that ends, once the on-node
/// conduit registered it ([`on_leave`]): marks this PE gone and, when asked
/// (`true`), waits for the PEs of its host to leave too.
type LeaveHook = Box<dyn Fn(bool) + Send + Sync>;

/// The registered [`LeaveHook`] and the id [`on_leave`] gave it. Held
/// locked while the hook runs, so that [`clear_leave_hook`] (called before
/// the memory the hook reads is unmapped) waits for a running hook.
static LEAVE_HOOK: std::sync::Mutex<Option<(u64, LeaveHook)>> = std::sync::Mutex::new(None);

/// Registers `hook` as what this PE does on its way out of a job that ends
/// ([`exit_job`]), replacing any other; returns the id that clears it.
pub(crate) fn on_leave(hook: impl Fn(bool) + Send + Sync + 'static) -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut slot = LEAVE_HOOK.lock().unwrap_or_else(|p| p.into_inner());
    *slot = Some((id, Box::new(hook)));
    id
}

/// Removes the hook [`on_leave`] registered as `id`, if it is still the
/// registered one; waits for it if it is running.
pub(crate) fn clear_leave_hook(id: u64) {
    let mut slot = LEAVE_HOOK.lock().unwrap_or_else(|p| p.into_inner());
    if slot.as_ref().is_some_and(|(have, _)| *have == id) {
        *slot = None;
    }
}

/// Leaves the job that ends with `status`: says why ([`say_why`]), then
/// runs the leave hook, which waits for the PEs of this host when the
/// status is a failure and the launcher is not oshrun.
///
/// Hydra and Open MPI's mpirun kill every rank as soon as one exits with a
/// failure status. Without the wait, the first PE out gets a PE killed
/// that had not yet learnt of the end, and that PE's line saying why it
/// ended is lost. oshrun reports the job's end itself and lets its PEs
/// flush on its stop signal, and no launcher kills on status 0, so then
/// no PE waits.
fn leave(status: i32) {
    say_why(status);
    let wait = status != 0 && !launcher_reports();
    let slot = LEAVE_HOOK.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, hook)) = slot.as_ref() {
        hook(wait);
    }
}

/// A PE that leaves with a failure status because another PE ended the
/// job says so in one line, unless oshrun started it (oshrun reports the
/// job's end itself, naming the PE that failed first): under any other
/// launcher, this line is all that tells why this rank ended. Says it once,
/// however often it is called.
pub(crate) fn say_why(status: i32) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let (me, from) = (
        MY_RANK.load(Ordering::SeqCst),
        EXIT_FROM.load(Ordering::SeqCst),
    );
    if status == 0
        || me == usize::MAX
        || from == me
        || LAUNCHER_REPORTS.load(Ordering::SeqCst)
        || SAID.swap(true, Ordering::SeqCst)
    {
        return;
    }
    if from == usize::MAX {
        crate::report!("PE {me}: leaving with status {status}: another PE ended the job");
    } else {
        crate::report!("PE {me}: leaving with status {status}: PE {from} ended the job");
    }
}

/// Whether [`note_job_exit`] was called.
pub fn job_exiting() -> bool {
    JOB_EXITING.load(Ordering::SeqCst)
}

/// Set while the process runs its exit handlers (the runtime may finalize
/// there).
static IN_EXIT_HANDLER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Records that the process is (`true`) or no longer is running its exit
/// handlers, where [`exit_job`] must not call `exit` again.
pub fn note_exit_handler(on: bool) {
    IN_EXIT_HANDLER.store(on, Ordering::SeqCst);
}

/// Tracks how long a wait has been going and chooses between spinning and
/// yielding. Cheap to create; create one per wait.
#[derive(Clone, Debug, Default)]
pub struct Backoff {
    /// Steps since the wait last started spinning (decides spin or yield).
    steps: u64,
    /// Steps since the wait began or last made progress ([`Backoff::reset`]):
    /// the period of the slow checks and of the clock, which a
    /// [`Backoff::respin`] does not restart.
    total: u64,
    /// When the clock of [`Backoff::timed_out`] started (first read).
    since: Option<Instant>,
    /// This wait's own timeout, instead of the process-wide one.
    limit: Option<Option<Duration>>,
}

impl Backoff {
    /// A fresh backoff that starts by spinning.
    #[inline]
    pub fn new() -> Backoff {
        Backoff {
            steps: 0,
            total: 0,
            since: None,
            limit: None,
        }
    }

    /// A backoff whose [`Backoff::timed_out`] uses `limit` instead of the
    /// process-wide wait timeout.
    pub fn with_timeout(limit: Option<Duration>) -> Backoff {
        Backoff {
            limit: Some(limit),
            ..Backoff::new()
        }
    }

    /// `Some(time waited)` once this wait has made no progress for longer
    /// than the wait timeout ([`set_timeout`]); `None` while it may go on,
    /// and always when no timeout is set. Reads the clock only once every
    /// [`CLOCK_PERIOD`] yielding steps, so call it on every step.
    #[inline]
    pub fn timed_out(&mut self) -> Option<Duration> {
        if !self.every(CLOCK_PERIOD) {
            return None;
        }
        self.timed_out_now()
    }

    #[cold]
    fn timed_out_now(&mut self) -> Option<Duration> {
        let limit = self.limit.unwrap_or_else(timeout)?;
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        let waited = now.saturating_duration_since(since);
        // The clock starts at the first check, after the spinning phase
        // and CLOCK_PERIOD yields: add the (short) time before it.
        (waited >= limit).then_some(waited)
    }

    /// Waits a little: a busy-wait hint during the first [`SPIN_STEPS`]
    /// steps (none after [`yield_at_once`]), then `sched_yield` on every
    /// step.
    #[inline]
    pub fn snooze(&mut self) {
        self.wait_step(1u32 << (self.steps.min(4) as u32));
    }

    /// As [`Backoff::snooze`], for a wait whose every step is already a
    /// system call (a poll of a socket): one busy-wait hint per spinning
    /// step instead of a growing burst of them, so that what the call
    /// finds is not left waiting for the burst to end.
    #[inline]
    pub fn snooze_polling(&mut self) {
        self.wait_step(1);
    }

    /// One step: `hints` busy-wait hints while spinning, else a yield.
    #[inline]
    fn wait_step(&mut self, hints: u32) {
        if self.steps < spin_steps() {
            for _ in 0..hints {
                std::hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
        self.steps += 1;
        self.total += 1;
    }

    /// Starts spinning again (after the awaited thing made progress), and
    /// restarts the clock of [`Backoff::timed_out`].
    #[inline]
    pub fn reset(&mut self) {
        self.steps = 0;
        self.total = 0;
        self.since = None;
    }

    /// Starts spinning again *without* restarting the clock of
    /// [`Backoff::timed_out`]: for waits that drive traffic which is not
    /// necessarily progress towards what they await (a datagram from some
    /// other peer), so that they stay responsive yet still time out.
    #[inline]
    pub fn respin(&mut self) {
        self.steps = 0;
    }

    /// Steps taken so far.
    #[inline]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Whether the spinning phase is over and each step now yields.
    #[inline]
    pub fn is_yielding(&self) -> bool {
        self.steps >= spin_steps()
    }

    /// True once every `period` steps of the wait (never during its first
    /// spinning phase, and counted across [`Backoff::respin`], so a wait
    /// kept spinning by other traffic still checks): the moment for slow
    /// checks such as peer liveness, and for the clock of
    /// [`Backoff::timed_out`].
    ///
    /// ```
    /// use conduits::wait::Backoff;
    /// let mut b = Backoff::new();
    /// let mut due = 0;
    /// for _ in 0..1000 {
    ///     b.snooze();
    ///     if b.every(100) {
    ///         due += 1;
    ///     }
    /// }
    /// assert!(due >= 9);
    /// ```
    #[inline]
    pub fn every(&self, period: u64) -> bool {
        self.total >= spin_steps() && period > 0 && self.total.is_multiple_of(period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_then_yields() {
        // SPIN_STEPS, or none once a test of this process opened a board
        // model (`yield_at_once` is process-wide).
        let spin = spin_steps();
        let mut b = Backoff::new();
        assert_eq!(b.is_yielding(), spin == 0);
        for _ in 0..spin {
            b.snooze();
        }
        assert!(b.is_yielding());
        b.snooze();
        assert_eq!(b.steps(), spin + 1);
        b.reset();
        assert_eq!(b.is_yielding(), spin == 0);
    }

    #[test]
    fn a_respin_keeps_the_period_of_slow_checks() {
        let spin = spin_steps();
        let mut b = Backoff::new();
        let mut due = 0;
        for _ in 0..1000 {
            b.snooze();
            b.respin();
            if b.every(100) {
                due += 1;
            }
        }
        assert!(due >= 9, "{due}");
        assert_eq!(b.is_yielding(), spin == 0);
    }

    #[test]
    fn no_timeout_by_default_and_reset_restarts_the_clock() {
        // Never the process-wide timeout: other tests of this process wait
        // under it meanwhile.
        let mut b = Backoff::with_timeout(None);
        for _ in 0..10_000 {
            assert!(b.timed_out().is_none());
            b.snooze();
        }
        let mut b = Backoff::with_timeout(Some(Duration::from_millis(30)));
        let start = Instant::now();
        let mut resets = 0;
        let waited = loop {
            if let Some(w) = b.timed_out() {
                break w;
            }
            if resets < 1 && start.elapsed() > Duration::from_millis(20) {
                b.reset();
                resets += 1;
            }
            b.snooze();
        };
        assert!(waited >= Duration::from_millis(30));
        assert!(
            start.elapsed() >= Duration::from_millis(50),
            "{:?}",
            start.elapsed()
        );
    }
}
