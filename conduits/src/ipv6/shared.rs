//! What the application threads and the progress thread share outside the
//! core's lock: completions posted by tag, the per-context counters and
//! submission queues, the failure and exit flags, and how a waiting
//! application thread drives the core itself.

use super::*;
use std::panic::Location;
use std::sync::atomic::AtomicPtr;

/// What the application waits for on a command.
pub(crate) enum Want {
    /// The completion itself (blocking get, fetching atomic).
    Value,
    /// Nothing but its error, reported at quiet.
    Nbi,
    /// A non-blocking get: copy the data to `dst` at completion.
    NbiGet { dst: SendPtr, len: usize },
}

/// A command of a non-default context waiting in its context's queue for
/// whichever thread holds the core ([`super::progress::Core::take_queued`]).
pub(crate) struct Queued {
    pub(crate) tag: u64,
    pub(crate) ctx: u32,
    pub(crate) cmd: Command,
    pub(crate) want: Want,
}

/// A result posted to a waiting application thread.
pub(crate) enum Outcome {
    Done(Completion, Option<ConduitError>),
    Flushed,
}

/// State shared by the application threads and the progress thread,
/// outside the core's lock.
pub(crate) struct Shared {
    /// Wakes the progress thread (to stop).
    pub(crate) wake: EventFd,
    pub(crate) stop: AtomicBool,
    /// Application threads currently driving the core.
    pub(crate) drivers: AtomicUsize,
    /// Polls of the core by application threads ([`ActiveMessages::poll`]),
    /// counted so the progress thread stays off the socket while an
    /// application thread serves it from a wait loop.
    pub(crate) app_polls: AtomicU64,
    pub(crate) issued: AtomicU64,
    pub(crate) completed: AtomicU64,
    /// Commands sent to a context's queue and not yet taken by the core's
    /// holder (signed: a holder may take a command before its sender
    /// counts it). Read by every thread that lets go of the core.
    pub(crate) queued: AtomicI64,
    /// Per-context counters and errors, indexed by [`CtxId::index`].
    pub(crate) ctxs: Box<[CtxState]>,
    pub(super) done: Mutex<HashMap<u64, Outcome>>,
    /// Outcomes posted to `done` so far: a waiter looks in `done` (a lock
    /// and a lookup) only when this moved.
    pub(super) posted: AtomicU64,
    pub(super) failed: Mutex<Option<ConduitError>>,
    pub(super) failed_flag: AtomicBool,
    pub(crate) exit_status: AtomicI64,
    /// When this PE attached: the origin of `last_step_us`.
    pub(crate) epoch: Instant,
    /// When a thread last began a step of the core, in microseconds since
    /// `epoch`: the progress thread reports a core that nobody steps
    /// ([`super::progress::STALL_REPORT`]).
    pub(crate) last_step_us: AtomicU64,
    /// Whether such a stall was reported (once per PE).
    pub(crate) stall_reported: AtomicBool,
    /// `last_step_us` when a stall was reported, until the report that it
    /// ended (then `u64::MAX`).
    pub(crate) stall_at_us: AtomicU64,
    /// Who took the core's lock last (for the stall report).
    pub(crate) holder: Holder,
    /// `FSHMEM_IPV6_STATS`: print the transport's counters at the end.
    pub(crate) print_stats: bool,
}

impl Shared {
    pub(crate) fn post(&self, tag: u64, o: Outcome) {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tag, o);
        self.posted.fetch_add(1, Ordering::Release);
    }

    pub(super) fn take(&self, tag: u64) -> Option<Outcome> {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&tag)
    }

    /// Counts the completion of a command of context `ctx`, recording the
    /// error of a non-blocking one.
    pub(crate) fn completed(&self, ctx: u32, err: Option<ConduitError>) {
        if let Some(c) = self.ctxs.get(ctx as usize) {
            if let Some(e) = err {
                c.nbi_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(e);
            }
            c.completed.fetch_add(1, Ordering::AcqRel);
        }
        self.completed.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn fail(&self, e: ConduitError) {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
        self.failed_flag.store(true, Ordering::Release);
    }

    pub(super) fn failure(&self) -> Option<ConduitError> {
        if !self.failed_flag.load(Ordering::Acquire) {
            return None;
        }
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The thread that took the core's lock last, and where: written under
/// the lock at every taking ([`crate::ctxq::Drain::taken`]), read by the
/// progress thread's stall report without it. Takings are counted, not
/// timed (no clock read on the path of an operation): the progress thread
/// notes when the count last moved.
#[derive(Debug, Default)]
pub(crate) struct Holder {
    /// The thread's kernel id (0: none yet).
    tid: AtomicU64,
    /// The call that took it: a `&'static Location` (null: none yet).
    at: AtomicPtr<Location<'static>>,
    /// Takings so far (written by the lock's holder only).
    seq: AtomicU64,
    /// Taken again by the guard's look after letting go.
    again: AtomicBool,
}

thread_local! {
    /// This thread's kernel id, asked once.
    static TID: u64 = {
        // SAFETY: gettid has no preconditions.
        let t = unsafe { libc::gettid() };
        t as u64
    };
}

impl Holder {
    /// Notes that this thread took the lock at `at` (it holds the lock).
    pub(crate) fn note(&self, at: &'static Location<'static>, again: bool) {
        self.tid.store(TID.with(|t| *t), Ordering::Relaxed);
        self.at.store(
            at as *const Location<'static> as *mut Location<'static>,
            Ordering::Relaxed,
        );
        self.again.store(again, Ordering::Relaxed);
        // Only the lock's holder writes the count: load and store suffice.
        let n = self.seq.load(Ordering::Relaxed);
        self.seq.store(n.wrapping_add(1), Ordering::Relaxed);
    }

    /// Takings so far.
    pub(crate) fn seq(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    /// The holder as the stall report names it: its thread (id and name),
    /// the call that took the lock, and how long ago it was taken last
    /// (`ago`, as the progress thread saw the count stand still).
    pub(crate) fn describe(&self, ago: Duration) -> String {
        let tid = self.tid.load(Ordering::Relaxed);
        let at = self.at.load(Ordering::Relaxed);
        if tid == 0 || at.is_null() {
            return "no thread has taken it yet".into();
        }
        // SAFETY: `at` is only ever set, in `note`, from a
        // `&'static Location<'static>`, which lives for the whole program
        // and is never written; a stale value is still such a reference.
        let at: &'static Location<'static> = unsafe { &*at };
        let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
            .map(|n| n.trim().to_string())
            .unwrap_or_else(|_| "gone".into());
        format!(
            "last taken by thread {tid} ({name}) {:.3} s ago, at {}:{}{}",
            ago.as_secs_f64(),
            at.file(),
            at.line(),
            if self.again.load(Ordering::Relaxed) {
                " (taken again as its guard let go, for commands queued meanwhile)"
            } else {
                ""
            }
        )
    }
}

/// One context's bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct CtxState {
    /// Created and not destroyed (the default context always is).
    pub(super) live: AtomicBool,
    /// Commands issued on it.
    pub(super) issued: AtomicU64,
    /// Commands of it completed (acknowledged, or answered).
    pub(super) completed: AtomicU64,
    /// The first error of its non-blocking commands since its last quiet.
    pub(super) nbi_error: Mutex<Option<ConduitError>>,
    /// Its submission queue (non-default contexts, from their first
    /// creation on; the receiving end is the core's).
    pub(super) queue: OnceLock<Sender<Queued>>,
}

/// Counts an application thread as driving the core while it lives.
pub(super) struct Driving<'a>(&'a Shared);

impl<'a> Driving<'a> {
    pub(super) fn new(s: &'a Shared) -> Driving<'a> {
        s.drivers.fetch_add(1, Ordering::AcqRel);
        Driving(s)
    }
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        self.0.drivers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Steps of [`Backoff`] (spins, then yields) an application thread takes
/// without progress before it sleeps in `poll(2)` on the socket.
pub(super) const DRIVE_STEPS_BEFORE_SLEEP: u64 = crate::wait::SPIN_STEPS as u64 + 64;

/// Longest sleep of a driving application thread before it looks again
/// (another thread may have taken the datagram it waits for).
pub(super) const DRIVE_MAX_SLEEP: Duration = Duration::from_millis(1);

impl Ipv6Conduit {
    /// Drives the core from this thread until `cond` holds: polls the
    /// socket while spinning, then yielding, then sleeping in `poll(2)` on it
    /// until the transport's next deadline. Fails if a peer failed, and with
    /// [`ConduitError::Timeout`] naming `what()` when none of this PE's
    /// operations completes for `FSHMEM_WAIT_TIMEOUT`.
    pub(super) fn drive_until(
        &self,
        mut cond: impl FnMut() -> bool,
        what: impl Fn() -> String,
    ) -> Result<()> {
        if cond() {
            return Ok(());
        }
        if progress::in_core() {
            // Nothing can step the core until this thread lets go of it.
            return Err(self.holding_core(
                &format!("waited for {}", what()),
                "no thread could make progress",
            ));
        }
        let s = &*self.shared;
        let _driving = Driving::new(s);
        let mut b = Backoff::new();
        let mut completed = s.completed.load(Ordering::Acquire);
        loop {
            if cond() {
                return Ok(());
            }
            self.check_failed()?;
            let worked = progress::try_lock(&self.core, s).is_some_and(|mut c| c.step(s));
            if worked {
                // Completions are progress towards what is awaited (the
                // timeout clock restarts); other traffic only keeps the
                // wait spinning.
                let now = s.completed.load(Ordering::Acquire);
                if now != completed {
                    completed = now;
                    b.reset();
                } else {
                    b.respin();
                }
                continue;
            }
            if let Some(waited) = b.timed_out() {
                return Err(ConduitError::Timeout {
                    what: what(),
                    waited,
                });
            }
            // Each step polls the socket: no burst of spin hints besides.
            if b.steps() < DRIVE_STEPS_BEFORE_SLEEP {
                b.snooze_polling();
                continue;
            }
            // Sleeping steps count too (the timeout clock is read on them).
            b.snooze_polling();
            let t = progress::try_lock(&self.core, s)
                .map_or(Duration::ZERO, |c| c.idle_for(DRIVE_MAX_SLEEP));
            if cond() {
                return Ok(());
            }
            if !t.is_zero() {
                net::wait_readable(Some(self.sock_fd), s.wake.fd(), t);
            }
        }
    }

    /// Waits for the outcome posted under `tag`; `what` names the
    /// operation for a timeout report.
    pub(super) fn wait_tag(&self, tag: u64, what: impl Fn() -> String) -> Result<Outcome> {
        let mut out = None;
        let mut seen = None;
        self.drive_until(
            || {
                // Posted before the count moves (Release, read with
                // Acquire): an outcome counted is in `done`.
                let posted = self.shared.posted.load(Ordering::Acquire);
                if seen != Some(posted) {
                    seen = Some(posted);
                    out = self.shared.take(tag);
                }
                out.is_some()
            },
            what,
        )?;
        out.ok_or_else(|| ConduitError::Io("lost outcome".into()))
    }

    pub(super) fn wait_value(&self, tag: u64, what: impl Fn() -> String) -> Result<Completion> {
        match self.wait_tag(tag, what)? {
            Outcome::Done(c, None) => Ok(c),
            Outcome::Done(_, Some(e)) => Err(e),
            _ => Err(ConduitError::Io("unexpected outcome".into())),
        }
    }
}
