//! The ofi conduit: libfabric, for the fabrics clusters run (verbs, cxi,
//! efa, tcp, shm), through one reliable-datagram endpoint per PE.
//!
//! Files: joining and the progress thread in `attach.rs`, one-sided
//! operations in `rma.rs`, the endpoint's state and its progress in
//! `core.rs`, opening the fabric in [`fabric`] and `setup.rs`, the
//! libfabric calls in [`api`] over the generated bindings in [`sys`];
//! active messages, the bootstrap and the lifecycle here.
//!
//! # Operations
//!
//! - The segment is a shared memfd mapping (as on ipv6, so static data can
//!   be made symmetric), registered once with the provider for remote
//!   reads, writes and atomics (see [`fabric`] for the registration modes
//!   handled). Every PE's endpoint name, segment address and key travel in
//!   one bootstrap all-gather.
//! - `put` and `get` are `fi_write` and `fi_read`: a blocking put of at
//!   most [`BOUNCE_MAX`] bytes is copied and returns at once, a longer one
//!   waits until the provider is done with its source; `put_nbi` and
//!   `get_nbi` complete at `quiet`. Operations on this PE's own segment
//!   are copies.
//! - Atomics are `fi_atomic`, `fi_fetch_atomic` and `fi_compare_atomic`
//!   when `fi_query_atomic` says the provider performs every operation of
//!   the contract on 32- and 64-bit words on every PE (then even this PE's
//!   own atomics go through the provider, so that all are atomic with
//!   respect to each other); otherwise every atomic is an engine request
//!   carried as a message and applied by the target with CPU atomics, as
//!   on ipv6. `FSHMEM_OFI_ATOMICS=am` forces the latter.
//! - Active messages, user and system ones, are `spec/wire.md` packets of
//!   the reference engine carried by `fi_send` into posted receive
//!   buffers.
//! - Contexts: every RMA, atomic and engine command carries its context
//!   to its completion (the operation's completion entry names it; an
//!   engine command's tag maps to it), and each context counts its
//!   operations not yet completed and keeps its first error. `quiet(ctx)`
//!   waits until that count is zero: it returns while another context
//!   still has operations outstanding. Writes ask for
//!   `FI_DELIVERY_COMPLETE` where the provider accepts it, so a completed
//!   put is visible at its target. On the default context `fence` is a
//!   `quiet` and `put_signal` completes the put (the context's quiet)
//!   before it updates the signal. On another context a fence does not
//!   wait: it holds back the context's later operations until its earlier
//!   ones have completed, and a put-with-signal is a put, such a fence and
//!   the signal's atomic. The barrier of the job waits for every context
//!   and for the completion counter bound to the endpoint for reads and
//!   writes to count every RMA and atomic the PE issued.
//!
//! # Progress and threads
//!
//! One lock covers the libfabric objects and the bookkeeping. A thread
//! that issues or waits drives the endpoint itself; a progress thread
//! drives it while the application computes, so manual-progress providers
//! (tcp, udp, shm) complete peers' RMA without the target calling the
//! library.
//!
//! A put, `put_nbi`, `get_nbi`, non-fetching atomic, put-with-signal or
//! fence on a context other than the default one never waits for that
//! lock: it tries it, and when another thread holds it the operation
//! (owning a copy of a put's bytes) goes to the context's queue, which
//! the holder empties as it lets go (the `queue` module). Blocking gets,
//! fetching atomics, active messages and the default context's operations
//! take the lock, queued items first. So threads that each use their own
//! context do not serialize on the endpoint's lock, though the thread that
//! holds it issues what the others queued: the PE keeps one endpoint
//! (see the `queue` module for why not one per context).
//!
//! # Settings
//!
//! The `FSHMEM_OFI_*` rows of [`crate::config::Settings`]:
//!
//! | variable | meaning |
//! |---|---|
//! | `FSHMEM_OFI_PROVIDER` | provider, as `fi_info -l` names it (`tcp;ofi_rxm`, `udp;ofi_rxd`, `shm`, `verbs;ofi_rxm`); default: the first `fi_getinfo` offers |
//! | `FSHMEM_OFI_DOMAIN` | domain (interface) name, e.g. `lo`; default: the provider's first |
//! | `FSHMEM_OFI_ATOMICS` | `auto` (default), `am` or `native`: atomics by the provider when it can and is trusted ([`UNTRUSTED_ATOMICS`]), always as active messages, or by the provider whenever it offers them |
//!
//! [`Lifecycle::describe`] names the provider, fabric and domain in use and
//! how atomics travel; `SHMEM_INFO=1` makes PE 0 print it.

pub mod api;
mod attach;
mod core;
pub mod fabric;
mod queue;
mod rma;
mod setup;
pub mod sys;
#[cfg(test)]
mod tests;

pub use setup::UNTRUSTED_ATOMICS;

use self::core::{AmoSlot, Core, CtxState, Hold, Issued, MAX_CONTEXTS, Waiter};
use self::queue::{Item, Shared};
use crate::bootstrap::{self, Bootstrap};
use crate::config::OfiAtomics as Atomics;
use crate::config::Settings;
use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::segment::{SegMemory, Segment};
use crate::wait::Backoff;
use fabric::Fabric;
use gasnet_core::NodeId;
use gasnet_core::engine::{Command, Config as EngineConfig, Engine};
use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};
use setup::{Card, fi_amo};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use sys::*;

/// Longest provider address accepted from `fi_getname` or a peer.
pub const MAX_NAME: usize = 512;

/// Largest blocking put copied into a buffer of the conduit (so it returns
/// at once); longer ones wait for the provider to read the source.
pub const BOUNCE_MAX: usize = 64 << 10;

/// Largest contribution to [`JobBootstrap::exchange`].
pub const EXCHANGE_MAX: usize = 1024;

/// The conduit-private system handler that ends the process.
pub const EXIT_HANDLER: u8 = gasnet_core::handlers::EXIT;

const NO_EXIT: i64 = i64::MIN;

/// A PE attached to an ofi job. `Send + Sync`: any thread may call it.
pub struct OfiConduit {
    rank: usize,
    size: usize,
    segment_len: usize,
    seg: Arc<Segment>,
    core: Arc<Mutex<Core>>,
    /// What threads read and count without the core's lock.
    sh: Arc<Shared>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    boot: Arc<Mutex<Box<dyn Bootstrap>>>,
    native_atomics: bool,
    /// The most one `fi_write` or `fi_read` moves: the provider's largest
    /// message, kept within 4 KiB..1 GiB. Fixed once the fabric is open.
    piece: usize,
    next_tag: AtomicU64,
    /// The status a peer's global exit asked for ([`NO_EXIT`]: none).
    exit_status: Arc<AtomicI64>,
    finalized: AtomicBool,
    describe: String,
}

impl std::fmt::Debug for OfiConduit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OfiConduit")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("segment_len", &self.segment_len)
            .field("fabric", &self.describe)
            .finish()
    }
}

impl OfiConduit {
    fn boot(&self) -> MutexGuard<'_, Box<dyn Bootstrap>> {
        self.boot.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stop_thread(&self) {
        self.stop.store(true, Ordering::Release);
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }

    fn live(&self, c: &Core) -> Result<()> {
        if let Some(e) = &c.failed {
            return Err(e.clone());
        }
        if self.finalized.load(Ordering::Acquire) {
            return Err(ConduitError::Unsupported("ofi: the conduit was finalized"));
        }
        Ok(())
    }

    /// Drives the endpoint from this thread until `cond` holds on the
    /// core; fails on a recorded failure, and with a timeout naming
    /// `what()` after `FSHMEM_WAIT_TIMEOUT` without progress.
    fn drive_until<T>(
        &self,
        mut cond: impl FnMut(&mut Core) -> Result<Option<T>>,
        what: impl Fn() -> String,
    ) -> Result<T> {
        let mut b = Backoff::new();
        loop {
            {
                let mut c = self.lock();
                let worked = c.progress();
                if let Some(v) = cond(&mut c)? {
                    return Ok(v);
                }
                if let Some(e) = &c.failed {
                    return Err(e.clone());
                }
                if worked {
                    b.reset();
                    continue;
                }
            }
            if let Some(waited) = b.timed_out() {
                return Err(ConduitError::Timeout {
                    what: what(),
                    waited,
                });
            }
            b.snooze();
        }
    }

    /// Issues an RMA or atomic of context `ctx` to `pe` through `issue`
    /// (given the fabric, the operation's hold and its context pointer)
    /// and returns its id. While the provider answers `FI_EAGAIN` (it has
    /// no room until a peer makes progress), this thread progresses with
    /// the core's lock released between attempts, so that the progress
    /// thread can record a peer's failure, which ends the wait; so does
    /// `FSHMEM_WAIT_TIMEOUT` without progress. It also waits (issuing
    /// them) while `ctx` has deferred items, and for a blocking operation
    /// while any context has a deferred one to `pe` (the `queue` module).
    fn issue(
        &self,
        call: &'static str,
        ctx: CtxId,
        pe: usize,
        hold: Hold,
        waiter: Waiter,
        mut issue: impl FnMut(&Fabric, &Hold, *mut std::ffi::c_void) -> isize,
    ) -> Result<u64> {
        let mut hold = Some(hold);
        let blocking = waiter == Waiter::Blocking;
        let mut attempt = |c: &mut Core| -> Result<Option<u64>> {
            self.live(c)?;
            if !c.clear_for(ctx.0, pe, blocking) {
                return Ok(None);
            }
            let h = hold.take().expect("the hold is given back on FI_EAGAIN");
            Ok(match c.try_issue(call, ctx.0, pe, h, waiter, &mut issue)? {
                Issued::Done(id) => Some(id),
                Issued::Again(h) => {
                    hold = Some(h);
                    None
                }
            })
        };
        // The first attempt before any progress: the common case issues at
        // once.
        if let Some(id) = attempt(&mut self.lock())? {
            return Ok(id);
        }
        self.drive_until(attempt, || {
            format!(
                "{call} to PE {pe} (the provider kept answering FI_EAGAIN, or earlier \
                 operations of context {} waited)",
                ctx.0
            )
        })
    }

    /// Waits for the blocking operation `id`'s outcome.
    fn wait_op(&self, id: u64, what: impl Fn() -> String) -> Result<u64> {
        self.drive_until(|c| c.done.remove(&id).transpose(), what)
    }

    /// RMA, atomics and engine commands of context `ctx` issued and not
    /// yet completed (queued and deferred ones included).
    pub fn outstanding(&self, ctx: CtxId) -> Result<u64> {
        Ok(self.lock().ctx(ctx.0)?.pending())
    }

    fn local(&self, offset: usize) -> *mut u8 {
        self.seg.base().wrapping_add(offset)
    }

    fn tag(&self) -> u64 {
        self.next_tag.fetch_add(1, Ordering::Relaxed)
    }

    /// An engine command of context `ctx` to `pe` (AMs belong to the
    /// default context; atomics without provider support to their own).
    /// Flow control: waits (driving the endpoint) until the engine has
    /// room, and, as [`OfiConduit::issue`] does, for the context's
    /// deferred items.
    fn submit(&self, ctx: CtxId, pe: usize, cmd: Command, waiter: Waiter) -> Result<u64> {
        let tag = self.tag();
        let mut cmd = Some(cmd);
        let blocking = waiter == Waiter::Blocking;
        let mut attempt = |c: &mut Core| -> Result<Option<()>> {
            self.live(c)?;
            c.ctx(ctx.0)?;
            if !c.engine_room() || !c.clear_for(ctx.0, pe, blocking) {
                return Ok(None);
            }
            let cmd = cmd.take().expect("submitted once");
            c.submit(tag, ctx.0, cmd, waiter);
            Ok(Some(()))
        };
        if attempt(&mut self.lock())?.is_none() {
            self.drive_until(attempt, || "room in the engine's command queue".to_string())?;
        }
        Ok(tag)
    }

    /// A bootstrap collective failed: if that is because a peer ended the
    /// job with global_exit (its exit request was delivered before it
    /// left, but may still sit unread in the provider), leave with that
    /// status instead of reporting a failure.
    fn exit_if_asked<T>(&self, r: Result<T>) -> Result<T> {
        let e = match r {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let end = Instant::now() + Duration::from_millis(200);
        while Instant::now() < end {
            let status = self.exit_status.load(Ordering::Acquire);
            if status != NO_EXIT {
                crate::wait::exit_job(status as i32);
            }
            self.lock().progress();
            std::thread::yield_now();
        }
        Err(e)
    }

    fn broadcast_exit(&self, status: i32) {
        for pe in (0..self.size).filter(|&p| p != self.rank) {
            let cmd = Command::AmRequest {
                dst: pe as NodeId,
                category: Category::Short,
                handler: EXIT_HANDLER,
                args: vec![status as u32],
                payload: Vec::new(),
                offset: 0,
            };
            let _ = self.submit(CtxId::DEFAULT, pe, cmd, Waiter::Nbi);
        }
        // The requests are acknowledged within a round trip by live peers;
        // once a peer is known to have failed (its request never will be),
        // the job is ending anyway and the launcher stops whoever is left,
        // so this PE does not wait for the whole bound.
        let mut c = self.lock();
        let bound = if c.failed.is_some() {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(2)
        };
        let end = Instant::now() + bound;
        while Instant::now() < end && c.engine_completed < c.engine_issued {
            c.progress();
        }
        c.drain(end.saturating_duration_since(Instant::now()));
    }
}

impl OfiConduit {
    /// Waits until every RMA, atomic and engine command of context `ctx`
    /// is complete; reports the context's first error since its last
    /// quiet.
    fn quiet_ctx(&self, ctx: CtxId) -> Result<()> {
        let start = self.lock().ctx(ctx.0)?.pending();
        self.drive_until(
            |c| Ok(c.ctx_quiet(ctx.0)?.then_some(())),
            || {
                format!(
                    "the {start} RMA, atomic and engine operations of context {} to complete in quiet",
                    ctx.0
                )
            },
        )
    }

    /// Waits until every RMA, atomic and engine command of the PE, on
    /// every context, is complete (the completion counter included), then
    /// reports the default context's first error, as its quiet does.
    fn quiet_all(&self) -> Result<()> {
        let start = {
            let c = self.lock();
            (c.rma_issued, c.engine_issued)
        };
        self.drive_until(
            |c| {
                let all = c.deferred == 0
                    && c.rma_quiet()
                    && c.engine_completed >= c.engine_issued
                    && c.ctxs.values().all(|s| s.outstanding == 0);
                if all {
                    return Ok(c.ctx_quiet(0)?.then_some(()));
                }
                Ok(None)
            },
            || {
                format!(
                    "its {} RMA/atomic and {} engine operations to complete before the barrier",
                    start.0, start.1
                )
            },
        )
    }
}

impl Segments for OfiConduit {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn segment_len(&self) -> usize {
        self.segment_len
    }

    fn local_segment(&self) -> *mut u8 {
        self.seg.base()
    }

    fn peer_segment(&self, pe: usize) -> Option<*mut u8> {
        (pe == self.rank).then(|| self.seg.base())
    }

    fn segment_backing(&self) -> Option<SegmentBacking> {
        let (fd, offset, len) = self.seg.backing();
        Some(SegmentBacking { fd, offset, len })
    }
}

impl ActiveMessages for OfiConduit {
    fn am_request(
        &self,
        pe: usize,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: usize,
    ) -> Result<()> {
        check_pe(pe, self.size)?;
        gasnet_core::am::check_shape(category, args.len(), payload.len())?;
        if category == Category::Long {
            check_range(pe, self.size, offset, payload.len(), self.segment_len)?;
        }
        let cmd = Command::AmRequest {
            dst: pe as NodeId,
            category,
            handler,
            args: args.to_vec(),
            payload: payload.to_vec(),
            offset: offset as u64,
        };
        self.submit(CtxId::DEFAULT, pe, cmd, Waiter::Nbi)
            .map(|_| ())
    }

    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.lock()
            .engine
            .handlers_mut()
            .register_user(index, f)
            .map_err(ConduitError::Am)
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.lock()
            .engine
            .handlers_mut()
            .register_system(index, f)
            .map_err(ConduitError::Am)
    }

    fn poll(&self) -> Result<()> {
        if let Some(mut c) = self.try_lock() {
            c.progress();
            if let Some(e) = &c.failed {
                return Err(e.clone());
            }
        }
        Ok(())
    }
}

impl JobBootstrap for OfiConduit {
    fn barrier(&self) -> Result<()> {
        self.quiet_all()?;
        // A PE that ends the job leaves once its exit request was
        // delivered; if the bootstrap reports it gone first, the request
        // may still sit unread in the provider: exit_if_asked reads it.
        let r = self.boot().barrier();
        self.exit_if_asked(r)?;
        self.live(&self.lock())
    }

    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > EXCHANGE_MAX {
            return Err(ConduitError::Bootstrap(format!(
                "exchange contribution of {} bytes exceeds {EXCHANGE_MAX}",
                mine.len()
            )));
        }
        let r = self.boot().allgather(mine);
        self.exit_if_asked(r)
    }
}

impl Lifecycle for OfiConduit {
    /// Bootstraps through the launcher's service the job names
    /// (`job.bootstrap`: rendezvous, PMI, PMIx) and joins the job
    /// ([`OfiConduit::attach_with`]).
    fn attach(job: &JobEnv, segment: SegmentRequest, settings: &Settings) -> Result<Self> {
        let boot = bootstrap::open(&job.bootstrap, job.rank, job.size, settings)?;
        Self::attach_job(job, segment, boot, settings)
    }

    /// Leaves the job: `quiet`, a barrier, then the progress thread stops.
    /// Collective; calling it again does nothing.
    fn finalize(&self) -> Result<()> {
        if self.finalized.load(Ordering::Acquire) {
            return Ok(());
        }
        self.barrier()?;
        self.finalized.store(true, Ordering::Release);
        self.stop_thread();
        self.lock().drain(Duration::from_secs(1));
        self.boot().finalize()
    }

    fn global_exit(&self, status: i32) -> ! {
        crate::wait::note_exit_from(self.rank);
        crate::wait::note_job_exit();
        self.broadcast_exit(status);
        crate::wait::exit_job(status)
    }

    /// The provider, fabric and domain in use and how atomics travel.
    fn describe(&self) -> String {
        self.describe.clone()
    }
}

impl Drop for OfiConduit {
    fn drop(&mut self) {
        self.stop_thread();
    }
}
