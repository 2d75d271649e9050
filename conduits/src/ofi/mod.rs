//! The ofi conduit: libfabric, for the fabrics clusters run (verbs, cxi,
//! efa, tcp, shm), through one reliable-datagram endpoint per PE.
//!
//! (Over 800 lines as one cohesive thing: the contract's operations on one
//! endpoint, each a few lines over `core.rs`; setup lives in [`fabric`] and
//! `setup.rs`, the libfabric calls in [`api`].)
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
//! - `quiet` waits until the completion counter bound to the endpoint for
//!   reads and writes has counted every RMA and atomic issued, and every
//!   engine command has completed; writes ask for `FI_DELIVERY_COMPLETE`
//!   where the provider accepts it, so a completed put is visible at its
//!   target. `fence` is a `quiet`; `put_signal` completes the put before
//!   it updates the signal.
//! - Contexts: the conduit has one endpoint and one counter, shared by
//!   every context of the PE: `quiet` on any context completes every
//!   operation of the PE (stronger than contract v2 asks; one endpoint or
//!   counter per context is future work).
//!
//! # Progress
//!
//! One lock covers the libfabric objects and the bookkeeping. A thread
//! that issues or waits drives the endpoint itself; a progress thread
//! drives it while the application computes, so manual-progress providers
//! (tcp, udp, shm) complete peers' RMA without the target calling the
//! library.
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
mod core;
pub mod fabric;
mod setup;
pub mod sys;

pub use setup::UNTRUSTED_ATOMICS;

use self::core::{AmoSlot, Core, Hold, Waiter};
use crate::Settings;
use crate::bootstrap::{self, Bootstrap};
use crate::config::OfiAtomics as Atomics;
use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::segment::{SegMemory, Segment};
use crate::wait::Backoff;
use crate::{AmoOp, AmoWidth, Category, HandlerFn};
use fabric::Fabric;
use gasnet_core::NodeId;
use gasnet_core::engine::{Command, Config as EngineConfig, Engine};
use setup::{Card, fi_amo};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
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
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    boot: Arc<Mutex<Box<dyn Bootstrap>>>,
    native_atomics: bool,
    next_tag: AtomicU64,
    /// The last context id handed out (contexts need no state here).
    last_ctx: AtomicU32,
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

fn lock(m: &Mutex<Core>) -> MutexGuard<'_, Core> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl OfiConduit {
    /// Joins through an explicit bootstrap, with the segment `segment`
    /// asks for. Collective.
    pub fn attach_with(
        rank: usize,
        size: usize,
        segment: SegmentRequest,
        mut boot: Box<dyn Bootstrap>,
        settings: &Settings,
    ) -> Result<OfiConduit> {
        let segment_len = segment.len();
        if size == 0 || size > gasnet_core::MAX_NODES || rank >= size {
            return Err(ConduitError::Bootstrap(format!(
                "ofi: rank {rank} of {size} PEs is not valid"
            )));
        }
        if boot.rank() != rank || boot.size() != size {
            return Err(ConduitError::Bootstrap(format!(
                "ofi: the bootstrap ({}) says rank {} of {}, the job rank {rank} of {size}",
                boot.describe(),
                boot.rank(),
                boot.size()
            )));
        }
        let mut fab = Fabric::open(
            rank,
            settings.ofi_provider.as_deref(),
            settings.ofi_domain.as_deref(),
        )?;
        let seg = match segment {
            SegmentRequest::Own(len) => Segment::new(len)?,
            SegmentRequest::Over(b) => Segment::over(b)?,
        };
        // SAFETY: the segment mapping lives in `seg`, which the conduit
        // keeps for as long as the Fabric (inside the core) lives, and
        // drops after it (field order of OfiConduit and Drop).
        let (base, key) = unsafe { fab.register(seg.base(), segment_len)? };
        let untrusted = UNTRUSTED_ATOMICS
            .iter()
            .any(|p| fab.caps.provider.split(';').any(|q| q == *p));
        let can = (settings.ofi_atomics == Atomics::Native
            || settings.ofi_atomics == Atomics::Auto && !untrusted)
            && AmoOp::ALL.iter().all(|&op| {
                [AmoWidth::W32, AmoWidth::W64].iter().all(|&w| {
                    let (dt, o, flags) = fi_amo(op, w);
                    fab.atomic_ok(dt, o, flags)
                })
            });
        let me = Card {
            name: fab.name()?,
            base,
            key,
            segment_len: segment_len as u64,
            atomics: can,
        };
        let all = boot.allgather(&me.encode())?;
        let mut cards = Vec::with_capacity(size);
        for (pe, b) in all.iter().enumerate() {
            let c = Card::decode(pe, b)?;
            if c.segment_len != me.segment_len {
                return Err(ConduitError::Bootstrap(format!(
                    "ofi: PE {pe} has a {}-byte segment, PE {rank} {segment_len} bytes",
                    c.segment_len
                )));
            }
            cards.push(c);
        }
        let native_atomics = cards.iter().all(|c| c.atomics);
        let names: Vec<Vec<u8>> = cards.iter().map(|c| c.name.clone()).collect();
        let segs: Vec<(u64, u64)> = cards.iter().map(|c| (c.base, c.key)).collect();
        fab.connect(&names, &segs)?;
        let caps = fab.caps.clone();
        let describe = format!(
            "provider {} (fabric {}, domain {}, mr_mode {:#x}), RMA by fi_write/fi_read{}, atomics {}",
            caps.provider,
            caps.fabric,
            caps.domain,
            caps.mr_mode,
            if caps.delivery_complete {
                " with delivery-complete"
            } else {
                ""
            },
            if native_atomics {
                "by the provider (fi_atomic)"
            } else if settings.ofi_atomics == Atomics::Am {
                "as active messages (FSHMEM_OFI_ATOMICS=am)"
            } else if untrusted && settings.ofi_atomics == Atomics::Auto {
                "as active messages (this provider's atomics are not trusted; FSHMEM_OFI_ATOMICS=native uses them)"
            } else {
                "as active messages (the provider lacks some)"
            }
        );
        let mut engine = Engine::with_config(
            rank as NodeId,
            size,
            SegMemory::new(seg.clone(), segment_len),
            EngineConfig {
                max_in_flight: 64,
                queue_depth: 4096,
            },
        );
        let exit_status = Arc::new(AtomicI64::new(NO_EXIT));
        let es = exit_status.clone();
        engine
            .handlers_mut()
            .register_system(
                EXIT_HANDLER,
                Arc::new(move |_tok, m| {
                    let status = m.args.first().copied().unwrap_or(1) as i32;
                    es.store(status as i64, Ordering::Release);
                }),
            )
            .map_err(ConduitError::Am)?;
        let core = Arc::new(Mutex::new(Core::new(fab, engine)?));
        let boot = Arc::new(Mutex::new(boot));
        let stop = Arc::new(AtomicBool::new(false));
        let (c2, s2, e2, b2) = (
            core.clone(),
            stop.clone(),
            exit_status.clone(),
            boot.clone(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("fshmem-ofi-{rank}"))
            .spawn(move || progress_thread(c2, s2, e2, b2))?;
        let c = OfiConduit {
            rank,
            size,
            segment_len,
            seg,
            core,
            stop,
            thread: Mutex::new(Some(thread)),
            boot,
            native_atomics,
            next_tag: AtomicU64::new(1),
            last_ctx: AtomicU32::new(0),
            exit_status,
            finalized: AtomicBool::new(false),
            describe,
        };
        // Every endpoint is up before any traffic starts.
        c.boot().barrier()?;
        Ok(c)
    }

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
                let mut c = lock(&self.core);
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

    fn wait_ctx(&self, ctx: u64, what: impl Fn() -> String) -> Result<u64> {
        self.drive_until(|c| c.done.remove(&ctx).transpose(), what)
    }

    fn local(&self, offset: usize) -> *mut u8 {
        self.seg.base().wrapping_add(offset)
    }

    fn tag(&self) -> u64 {
        self.next_tag.fetch_add(1, Ordering::Relaxed)
    }

    /// `fi_write` of `len` bytes at `src` to `pe` at `offset`.
    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        c: &mut Core,
        pe: usize,
        offset: usize,
        hold: Hold,
        src: *const u8,
        len: usize,
        waiter: Waiter,
    ) -> Result<u64> {
        let peer = c.fab.peers[pe];
        c.issue("fi_write", pe, hold, waiter, |f, h, ctx| {
            let (p, n) = match h {
                Hold::Bytes(_) => h.bytes(),
                _ => (src, len),
            };
            // SAFETY: the source stays readable until completion (held by
            // the op, or by the caller's contract); the target range was
            // checked against the segment.
            unsafe {
                api::write(
                    f.ep,
                    p.cast(),
                    n,
                    peer.addr,
                    peer.base + offset as u64,
                    peer.key,
                    ctx,
                )
            }
        })
    }

    /// `fi_read` of `len` bytes from `pe` at `offset` into `dst`.
    ///
    /// # Safety
    /// `dst..dst+len` stays writable and untouched until completion.
    unsafe fn read(
        &self,
        c: &mut Core,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
        waiter: Waiter,
    ) -> Result<u64> {
        let peer = c.fab.peers[pe];
        c.issue("fi_read", pe, Hold::None, waiter, |f, _, ctx| {
            // SAFETY: per this function's contract; range checked.
            unsafe {
                api::read(
                    f.ep,
                    dst.cast(),
                    len,
                    peer.addr,
                    peer.base + offset as u64,
                    peer.key,
                    ctx,
                )
            }
        })
    }

    /// An atomic through the provider.
    fn native_atomic(
        &self,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        let (dt, o, flags) = fi_amo(op, width);
        let waiter = if op.fetches() {
            Waiter::Blocking
        } else {
            Waiter::Nbi
        };
        let ctx = {
            let mut c = lock(&self.core);
            self.live(&c)?;
            let peer = c.fab.peers[pe];
            let addr = peer.base + offset as u64;
            let call = match flags {
                0 => "fi_atomic",
                FI_FETCH_ATOMIC => "fi_fetch_atomic",
                _ => "fi_compare_atomic",
            };
            c.issue(
                call,
                pe,
                Hold::Amo(AmoSlot::new(operand, compare)),
                waiter,
                |f, h, ctx| {
                    let (a, cmp, res) = h.amo_ptrs();
                    // SAFETY: the slot lives in the op until completion; the
                    // word was checked in range and aligned.
                    unsafe {
                        match flags {
                            0 => api::atomic(f.ep, a.cast(), peer.addr, addr, peer.key, dt, o, ctx),
                            FI_FETCH_ATOMIC => api::fetch_atomic(
                                f.ep,
                                a.cast(),
                                res.cast(),
                                peer.addr,
                                addr,
                                peer.key,
                                dt,
                                o,
                                ctx,
                            ),
                            _ => api::compare_atomic(
                                f.ep,
                                a.cast(),
                                cmp.cast(),
                                res.cast(),
                                peer.addr,
                                addr,
                                peer.key,
                                dt,
                                o,
                                ctx,
                            ),
                        }
                    }
                },
            )?
        };
        if !op.fetches() {
            return Ok(0);
        }
        let v = self.wait_ctx(ctx, || {
            format!("the value of a fetching atomic {op:?} on PE {pe} at offset {offset:#x}")
        })?;
        Ok(v & width.mask())
    }

    /// An engine command (AMs; atomics without provider support).
    fn submit(&self, cmd: Command, waiter: Waiter) -> Result<u64> {
        let tag = self.tag();
        let mut c = lock(&self.core);
        self.live(&c)?;
        if !c.engine_room() {
            // Flow control: wait until the engine has room.
            drop(c);
            self.drive_until(
                |c| Ok(c.engine_room().then_some(())),
                || "room in the engine's command queue".to_string(),
            )?;
            c = lock(&self.core);
        }
        c.submit(tag, cmd, waiter);
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
            lock(&self.core).progress();
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
            let _ = self.submit(cmd, Waiter::Nbi);
        }
        let end = Instant::now() + Duration::from_secs(2);
        let mut c = lock(&self.core);
        while Instant::now() < end && c.engine_completed < c.engine_issued {
            c.progress();
        }
        c.drain(end.saturating_duration_since(Instant::now()));
    }
}

fn progress_thread(
    core: Arc<Mutex<Core>>,
    stop: Arc<AtomicBool>,
    exit_status: Arc<AtomicI64>,
    boot: Arc<Mutex<Box<dyn Bootstrap>>>,
) {
    let mut idle_since = Instant::now();
    let mut last_check = Instant::now();
    while !stop.load(Ordering::Acquire) {
        let worked = match core.try_lock() {
            Ok(mut c) => c.progress(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().progress(),
            Err(std::sync::TryLockError::WouldBlock) => false,
        };
        let status = exit_status.load(Ordering::Acquire);
        if status != NO_EXIT {
            // A peer ended the job: let the acknowledgements go, then leave.
            if let Ok(mut c) = core.try_lock() {
                c.drain(Duration::from_millis(200));
            }
            crate::wait::exit_job(status as i32);
        }
        let now = Instant::now();
        if now.duration_since(last_check) >= Duration::from_millis(20) {
            last_check = now;
            let r = boot.try_lock().ok().map(|mut b| b.check());
            if let Some(Err(e)) = r {
                lock(&core).fail(e);
            }
        }
        if worked {
            idle_since = now;
            continue;
        }
        // Poll busily for a moment after work, then ever more lazily.
        let idle = now.duration_since(idle_since);
        if idle < Duration::from_micros(200) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl OfiConduit {
    /// Waits until every RMA, atomic and engine command of the PE is
    /// complete (every context: they share one endpoint and counter).
    fn quiet_all(&self) -> Result<()> {
        let start = {
            let c = lock(&self.core);
            (c.rma_issued, c.engine_issued)
        };
        self.drive_until(
            |c| {
                let rma = c.rma_quiet()?;
                if rma && c.engine_completed >= c.engine_issued {
                    return match c.nbi_error.take() {
                        Some(e) => Err(e),
                        None => Ok(Some(())),
                    };
                }
                Ok(None)
            },
            || {
                format!(
                    "its {} RMA/atomic and {} engine operations to complete in quiet",
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

/// Every context shares the PE's endpoint and completion counter: contexts
/// need no state, and `quiet`/`fence` on any context complete the whole PE.
impl Rma for OfiConduit {
    fn ctx_create(&self) -> Result<CtxId> {
        let id = self
            .last_ctx
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        if id == 0 {
            return Err(ConduitError::ContextLimit {
                max: u32::MAX as usize,
            });
        }
        Ok(CtxId(id))
    }

    fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
        if ctx == CtxId::DEFAULT {
            return Err(ConduitError::NoContext { ctx: ctx.0 });
        }
        self.quiet_all()
    }

    fn put(&self, _ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the destination lies in our segment (checked); copy
            // tolerates overlap with `src`.
            unsafe { std::ptr::copy(src.as_ptr(), self.local(offset), src.len()) };
            return self.live(&lock(&self.core));
        }
        if src.is_empty() {
            return self.live(&lock(&self.core));
        }
        if src.len() <= BOUNCE_MAX {
            let mut c = lock(&self.core);
            self.live(&c)?;
            self.write(
                &mut c,
                pe,
                offset,
                Hold::Bytes(src.to_vec()),
                std::ptr::null(),
                src.len(),
                Waiter::Nbi,
            )?;
            return Ok(());
        }
        // A long put: issued from the caller's buffer in pieces the
        // provider takes, then waited for (the source must stay intact).
        let piece = lock(&self.core).fab.caps.max_msg.clamp(4096, 1 << 30);
        let mut ctxs = Vec::new();
        {
            let mut c = lock(&self.core);
            self.live(&c)?;
            for (k, part) in src.chunks(piece).enumerate() {
                ctxs.push(self.write(
                    &mut c,
                    pe,
                    offset + k * piece,
                    Hold::None,
                    part.as_ptr(),
                    part.len(),
                    Waiter::Blocking,
                )?);
            }
        }
        for ctx in ctxs {
            self.wait_ctx(ctx, || {
                format!(
                    "the provider to send a put of {} bytes to PE {pe}",
                    src.len()
                )
            })?;
        }
        Ok(())
    }

    unsafe fn put_nbi(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank || len == 0 {
            // SAFETY: the caller guarantees `src` is valid for `len` bytes.
            let s = unsafe { std::slice::from_raw_parts(src, len) };
            return self.put(CtxId::DEFAULT, pe, offset, s);
        }
        let mut c = lock(&self.core);
        self.live(&c)?;
        let piece = c.fab.caps.max_msg.clamp(4096, 1 << 30);
        let mut at = 0;
        while at < len {
            let n = piece.min(len - at);
            // The caller keeps `src` intact until quiet.
            self.write(
                &mut c,
                pe,
                offset + at,
                Hold::None,
                src.wrapping_add(at),
                n,
                Waiter::Nbi,
            )?;
            at += n;
        }
        Ok(())
    }

    fn get(&self, _ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(pe, self.size, offset, dst.len(), self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the source lies in our segment (checked).
            unsafe { std::ptr::copy(self.local(offset), dst.as_mut_ptr(), dst.len()) };
            return self.live(&lock(&self.core));
        }
        if dst.is_empty() {
            return self.live(&lock(&self.core));
        }
        let len = dst.len();
        let p = dst.as_mut_ptr();
        let mut ctxs = Vec::new();
        {
            let mut c = lock(&self.core);
            self.live(&c)?;
            let piece = c.fab.caps.max_msg.clamp(4096, 1 << 30);
            let mut at = 0;
            while at < len {
                let n = piece.min(len - at);
                // SAFETY: `dst` is borrowed mutably for this whole call,
                // which waits for every piece before it returns.
                ctxs.push(unsafe {
                    self.read(
                        &mut c,
                        pe,
                        offset + at,
                        p.wrapping_add(at),
                        n,
                        Waiter::Blocking,
                    )?
                });
                at += n;
            }
        }
        for ctx in ctxs {
            self.wait_ctx(ctx, || {
                format!(
                    "the data of a blocking get of {len} bytes from PE {pe} at offset {offset:#x}"
                )
            })?;
        }
        Ok(())
    }

    unsafe fn get_nbi(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the source lies in our segment (checked); the caller
            // guarantees `dst` is valid for `len` bytes.
            unsafe { std::ptr::copy(self.local(offset), dst, len) };
            return self.live(&lock(&self.core));
        }
        if len == 0 {
            return self.live(&lock(&self.core));
        }
        let mut c = lock(&self.core);
        self.live(&c)?;
        let piece = c.fab.caps.max_msg.clamp(4096, 1 << 30);
        let mut at = 0;
        while at < len {
            let n = piece.min(len - at);
            // SAFETY: the caller keeps `dst` valid and untouched until quiet.
            unsafe {
                self.read(
                    &mut c,
                    pe,
                    offset + at,
                    dst.wrapping_add(at),
                    n,
                    Waiter::Nbi,
                )?
            };
            at += n;
        }
        Ok(())
    }

    fn atomic(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        check_word(pe, self.size, offset, width.bytes(), self.segment_len)?;
        if self.native_atomics {
            return self.native_atomic(pe, offset, op, width, operand, compare);
        }
        if pe == self.rank {
            // SAFETY: in range and aligned (checked); the segment is page
            // aligned.
            let old = unsafe {
                crate::cpu_amo::atomic_at(self.local(offset), op, width, operand, compare)
            };
            self.live(&lock(&self.core))?;
            return Ok(old & width.mask());
        }
        let cmd = Command::Amo {
            dst: pe as NodeId,
            op,
            width,
            offset: offset as u64,
            operand,
            compare,
        };
        if !op.fetches() {
            self.submit(cmd, Waiter::Nbi)?;
            return Ok(0);
        }
        let tag = self.submit(cmd, Waiter::Blocking)?;
        let c = self.drive_until(
            |c| c.engine_done.remove(&tag).transpose(),
            || format!("the value of a fetching atomic {op:?} on PE {pe} at offset {offset:#x}"),
        )?;
        Ok(c.value)
    }

    fn put_signal(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        src: &[u8],
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len)?;
        check_word(pe, self.size, sig_offset, 8, self.segment_len)?;
        let op = match sig_op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        };
        self.put(CtxId::DEFAULT, pe, offset, src)?;
        if pe == self.rank {
            std::sync::atomic::fence(Ordering::Release);
        } else {
            // The data must be delivered before the signal is.
            self.quiet_all()?;
        }
        self.atomic(
            CtxId::DEFAULT,
            pe,
            sig_offset,
            op,
            AmoWidth::W64,
            sig_value,
            0,
        )?;
        Ok(())
    }

    fn fence(&self, _ctx: CtxId) -> Result<()> {
        // One endpoint, no ordering asked of the provider: a fence is a
        // quiet.
        self.quiet_all()
    }

    fn quiet(&self, _ctx: CtxId) -> Result<()> {
        self.quiet_all()
    }

    /// Atomics carried as active messages are applied by the target's
    /// engine with CPU atomics; the provider's own are not.
    fn cpu_atomics(&self) -> bool {
        !self.native_atomics
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
        self.submit(cmd, Waiter::Nbi).map(|_| ())
    }

    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        lock(&self.core)
            .engine
            .handlers_mut()
            .register_user(index, f)
            .map_err(ConduitError::Am)
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        lock(&self.core)
            .engine
            .handlers_mut()
            .register_system(index, f)
            .map_err(ConduitError::Am)
    }

    fn poll(&self) -> Result<()> {
        if let Ok(mut c) = self.core.try_lock() {
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
        self.live(&lock(&self.core))
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
    /// Bootstraps from the launcher's environment (rendezvous, PMI, PMIx)
    /// and joins the job ([`OfiConduit::attach_with`]).
    fn attach(job: &JobEnv, segment: SegmentRequest, settings: &Settings) -> Result<Self> {
        let get = |k: &str| std::env::var(k).ok();
        let boot = bootstrap::from_env(job.rank, job.size, get, settings)?;
        Self::attach_with(job.rank, job.size, segment, boot, settings)
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
        lock(&self.core).drain(Duration::from_secs(1));
        self.boot().finalize()
    }

    fn global_exit(&self, status: i32) -> ! {
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
