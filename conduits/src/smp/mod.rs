//! The shared-memory emulator conduit: each PE is a process, every PE's
//! segment is a POSIX shared-memory file mapped by every PE of the job, a
//! put is a `memcpy` into the peer's mapping and an atomic is a CPU atomic on
//! the mapped word.
//!
//! # Objects
//!
//! - `/dev/shm/fshmem-<job>-<rank>`: PE `rank`'s segment, created by that PE
//!   and mapped by all ([`Segments::peer_segment`] returns the address).
//! - `/dev/shm/fshmem-<job>-ctl`: the job control block (see the `ctl`
//!   module's layout table): a bootstrap barrier, exchange slots, per-PE pid
//!   and state, the global-exit word, and every PE's inbound active-message
//!   rings.
//!
//! # Bootstrap ([`SmpConduit::attach`])
//!
//! 1. Rank 0 creates the control block exclusively, sizes it (it reads as
//!    zeros, which is a valid empty state), writes the header and publishes it
//!    with a Release store of the magic word. Other ranks open it, waiting
//!    (spin, then yield) until it exists, has its full size and carries the
//!    magic, for at most [`BOOTSTRAP_TIMEOUT`]; they check that the job size
//!    and segment length agree with theirs.
//! 2. Each PE creates and maps its own segment, records its pid and state,
//!    and enters barrier A.
//! 3. Each PE maps every peer's segment; rank 0 unlinks the control block
//!    (every PE mapped it before arriving at A); barrier B.
//! 4. Each PE unlinks its own segment (every PE mapped it before B).
//!
//! From then on the job's memory has no name: the kernel frees it when the
//! last PE unmaps it, so nothing is left in `/dev/shm` however the job ends.
//! A failed bootstrap removes the files this PE created, and `oshrun` removes
//! whatever is left of the job after it ends (see [`remove_job_files`]).
//!
//! # Operations
//!
//! Put, get and atomics are direct: a bounds check, then `memmove` or an
//! `AtomicU32`/`AtomicU64` operation on the mapped word (misaligned words are
//! refused). They complete before returning, so `put_nbi`/`get_nbi` are the
//! blocking operations, [`Rma::fence`] is a Release fence and
//! [`Rma::quiet`] a sequentially consistent one. A put-with-signal
//! copies, fences (Release) and then updates the signal with Release
//! semantics, so a PE that reads the signal with Acquire sees the data.
//!
//! # Active messages
//!
//! Each PE has two inbound rings in the control block (requests and
//! replies), bounded and lock-free, with slots big enough for a Medium
//! message. A Long payload is written straight into the target's segment
//! before the header is enqueued. Messages are served whenever the PE is
//! inside the conduit: every call checks its rings (two loads) and
//! [`ActiveMessages::poll`] and every wait drain them. When a target ring is full
//! the sender keeps serving its own rings while it waits, so two PEs sending
//! to each other cannot deadlock. Handlers run on the thread that polls and
//! must not block.
//!
//! # Waiting and failure
//!
//! Every wait uses [`crate::wait::Backoff`] (spin, then yield). Waits check
//! the global-exit word on every step and peer liveness every few hundred
//! yields: a peer whose process is gone, or which reported a failure, or
//! which finalized while this PE still needs it, turns the wait into
//! [`ConduitError::PeerFailed`] naming it. [`Lifecycle::global_exit`] sets the
//! global-exit word and exits; every other PE exits with the same status the
//! next time it enters the conduit.
//!
//! # Finalization
//!
//! [`SmpConduit::finalize`] is collective (a barrier), then marks the PE
//! finalized. Dropping a conduit that was not finalized marks the PE
//! finalized (or failed, while panicking) without waiting, so peers that
//! still wait for it report it instead of hanging.

mod ctl;
mod ring;
mod shm;

pub use shm::{SHM_DIR, job_file, job_files, job_prefix, remove_job_files};

use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::liveness::{process_alive, root_of};
use crate::wait::Backoff;
use crate::{AmoOp, AmoWidth, Category, HandlerFn};
use ctl::{Ctl, Layout, state};
use gasnet_core::am::check_shape;
use gasnet_core::{AmError, AmMessage, Direction, HandlerTable, ReplySink, Token};
use ring::{Header, Received, Ring};
use shm::Region;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};
use std::time::{Duration, Instant};

/// Largest job the smp conduit accepts.
pub const MAX_PES: usize = 1024;

/// How long a PE waits for the rest of the job during bootstrap.
pub const BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest contribution to [`JobBootstrap::exchange`], in bytes.
pub const EXCHANGE_MAX: usize = ctl::EXCHANGE_BYTES;

/// Liveness is checked once every this many yielding wait steps.
const LIVENESS_PERIOD: u64 = 256;

/// [`ActiveMessages::poll`] checks peer liveness once every this many calls (the
/// waits of the layers above poll on every step).
const LIVENESS_POLLS: u64 = 128;

/// A PE attached to a shared-memory job. `Send + Sync`: any thread may call
/// it; incoming messages are served by one thread at a time.
pub struct SmpConduit {
    rank: usize,
    size: usize,
    segment_len: usize,
    job_id: String,
    ctl: Ctl,
    /// Base address of every PE's segment in this process.
    segs: Box<[*mut u8]>,
    my_requests: Ring,
    my_replies: Ring,
    handlers: RwLock<HandlerTable>,
    /// Held by the thread draining the request ring (also stops re-entry
    /// from inside a request handler).
    request_drain: AtomicBool,
    /// Held by the thread draining the reply ring.
    reply_drain: AtomicBool,
    finalized: AtomicBool,
    /// Calls of `poll`, to pace its liveness checks.
    polls: AtomicU64,
    /// The last context id handed out (contexts need no state here).
    last_ctx: AtomicU32,
    /// Bootstrap completed (a conduit dropped before that failed it).
    ready: bool,
    _maps: Vec<Region>,
    /// This PE's segment file (unlinked after bootstrap), kept open so
    /// that [`Segments::segment_backing`] can hand it out.
    seg_file: std::fs::File,
}

// SAFETY: the raw pointers name shared mappings owned by `_maps`, which live
// as long as the conduit; all cross-thread state is atomic or behind the
// RwLock, and ring consumption is serialised by the drain flags.
unsafe impl Send for SmpConduit {}
// SAFETY: as for Send.
unsafe impl Sync for SmpConduit {}

impl std::fmt::Debug for SmpConduit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmpConduit")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("segment_len", &self.segment_len)
            .field("job_id", &self.job_id)
            .finish()
    }
}

/// Releases a drain flag on drop.
struct DrainGuard<'a>(&'a AtomicBool);
impl Drop for DrainGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn try_take(flag: &AtomicBool) -> Option<DrainGuard<'_>> {
    flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .ok()
        .map(|_| DrainGuard(flag))
}

impl SmpConduit {
    /// Joins job `job` with a segment of `segment_len` bytes (the same on
    /// every PE). Collective over the job: returns once every PE has
    /// attached and mapped every segment. A singleton job (no launcher)
    /// works the same way with one PE.
    pub fn attach_len(job: &JobEnv, segment_len: usize) -> Result<SmpConduit> {
        let (rank, size) = (job.rank, job.size);
        if size == 0 || size > MAX_PES || rank >= size {
            return Err(ConduitError::Bootstrap(format!(
                "smp: rank {rank} of {size} PEs is not valid (the smp conduit runs 1..={MAX_PES} PEs)"
            )));
        }
        let deadline = Instant::now() + BOOTSTRAP_TIMEOUT;
        let layout = Layout::new(size);
        let ctl_path = shm::job_file(&job.job_id, "ctl");

        // 1. The control block.
        let (ctl_region, ctl_guard) = if rank == 0 {
            let (file, guard) = shm::create(&ctl_path, layout.total)?;
            let region = Region::map(&file, layout.total, &ctl_path)?;
            // SAFETY: the mapping is page aligned, `layout.total` bytes long,
            // and lives in `_maps` as long as any view derived from it.
            let c = unsafe { Ctl::at(region.ptr(), layout) };
            c.size().store(size as u64, Ordering::Relaxed);
            c.segment_len().store(segment_len as u64, Ordering::Relaxed);
            c.total().store(layout.total as u64, Ordering::Relaxed);
            c.creator()
                .store(std::process::id() as u64, Ordering::Relaxed);
            c.magic().store(ctl::MAGIC, Ordering::Release);
            (region, Some(guard))
        } else {
            (open_published_ctl(&ctl_path, layout, deadline)?, None)
        };
        // SAFETY: as above; the region is moved into `_maps` below and never
        // unmapped before the conduit is dropped.
        let c = unsafe { Ctl::at(ctl_region.ptr(), layout) };
        c.pid(rank)
            .store(std::process::id() as u64, Ordering::Relaxed);
        let mut ctl_region = Some(ctl_region);
        let r = Self::join(job, segment_len, deadline, c, &mut ctl_region, ctl_guard);
        if r.is_err() && ctl_region.is_some() {
            // Tell the peers waiting in the bootstrap barrier (once the
            // conduit exists, its drop does that).
            c.state(rank).store(state::FAILED, Ordering::Release);
        }
        r
    }

    /// Steps 2-4 of the bootstrap, once the control block is mapped.
    fn join(
        job: &JobEnv,
        segment_len: usize,
        deadline: Instant,
        c: Ctl,
        ctl_region: &mut Option<Region>,
        ctl_guard: Option<shm::Created>,
    ) -> Result<SmpConduit> {
        let (rank, size) = (job.rank, job.size);
        let (their_size, their_len) = (
            c.size().load(Ordering::Relaxed),
            c.segment_len().load(Ordering::Relaxed),
        );
        if their_size != size as u64 || their_len != segment_len as u64 {
            return Err(ConduitError::Bootstrap(format!(
                "smp: PE {rank} expects {size} PEs with {segment_len}-byte segments, but the \
                 job's control block says {their_size} PEs with {their_len}-byte segments"
            )));
        }

        // 2. This PE's segment.
        let seg_path = shm::job_file(&job.job_id, &rank.to_string());
        let (seg_file, seg_guard) = shm::create(&seg_path, segment_len.max(1))?;
        let own = Region::map_aligned(&seg_file, segment_len, crate::SEGMENT_ALIGN, &seg_path)?;

        let mut conduit = SmpConduit {
            rank,
            size,
            segment_len,
            job_id: job.job_id.clone(),
            ctl: c,
            segs: vec![std::ptr::null_mut(); size].into_boxed_slice(),
            my_requests: c.requests(rank),
            my_replies: c.replies(rank),
            handlers: RwLock::new(HandlerTable::new()),
            request_drain: AtomicBool::new(false),
            reply_drain: AtomicBool::new(false),
            finalized: AtomicBool::new(false),
            polls: AtomicU64::new(0),
            last_ctx: AtomicU32::new(0),
            ready: false,
            _maps: Vec::with_capacity(size + 1),
            seg_file,
        };
        conduit.segs[rank] = own.ptr();
        conduit._maps.extend(ctl_region.take());
        conduit._maps.push(own);
        c.state(rank).store(state::ATTACHED, Ordering::Release);

        // Barrier A: every PE has mapped the control block and created its
        // segment.
        conduit.barrier_until(Some(deadline))?;

        // 3. Every peer's segment.
        for pe in (0..size).filter(|&pe| pe != rank) {
            let path = shm::job_file(&job.job_id, &pe.to_string());
            let file = shm::open(&path)?.ok_or_else(|| {
                ConduitError::Bootstrap(format!(
                    "smp: PE {pe}'s segment {} is missing",
                    path.display()
                ))
            })?;
            let len = file.metadata()?.len();
            if len != segment_len.max(1) as u64 {
                return Err(ConduitError::Bootstrap(format!(
                    "smp: PE {pe}'s segment is {len} bytes, expected {segment_len}"
                )));
            }
            let region = Region::map_aligned(&file, segment_len, crate::SEGMENT_ALIGN, &path)?;
            conduit.segs[pe] = region.ptr();
            conduit._maps.push(region);
        }
        if let Some(g) = ctl_guard {
            g.remove();
        }
        // Barrier B: every PE has mapped every segment.
        conduit.barrier_until(Some(deadline))?;
        // 4. Nothing of the job keeps a name any more.
        seg_guard.remove();
        conduit.ready = true;
        Ok(conduit)
    }

    /// The job id this PE belongs to.
    pub fn job_id(&self) -> &str {
        &self.job_id
    }

    /// Sets the global-exit word to `status` unless a PE set it first,
    /// without leaving: every PE of the job exits with the word's status
    /// the next time it enters the conduit (a routed job then ends the
    /// other hosts through its off-node conduit).
    pub fn post_global_exit(&self, status: i32) {
        crate::wait::note_job_exit();
        let word = (1u64 << 32) | status as u32 as u64;
        let _ =
            self.ctl
                .global_exit()
                .compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Cheap progress on every call: exits if the job was ended and serves
    /// messages if any are waiting.
    #[inline]
    fn progress(&self) -> Result<()> {
        if self.my_requests.has_message()
            || self.my_replies.has_message()
            || self.ctl.global_exit().load(Ordering::Relaxed) != 0
        {
            self.progress_slow(true)
        } else {
            Ok(())
        }
    }

    #[cold]
    fn progress_slow(&self, requests: bool) -> Result<()> {
        self.check_global_exit();
        self.drain(requests)
    }

    /// Exits this process with the job's status if a PE called `global_exit`.
    #[inline]
    fn check_global_exit(&self) {
        let w = self.ctl.global_exit().load(Ordering::Acquire);
        if w != 0 {
            crate::wait::note_job_exit();
            self.ctl
                .state(self.rank)
                .store(state::FINALIZED, Ordering::Release);
            crate::wait::exit_job(w as u32 as i32);
        }
    }

    /// Serves the reply ring and, if `requests`, the request ring, unless
    /// another thread (or an enclosing handler) is already serving it.
    fn drain(&self, requests: bool) -> Result<()> {
        let mut first_err = None;
        if let Some(_g) = try_take(&self.reply_drain) {
            // SAFETY: the reply_drain flag makes this thread the ring's only consumer.
            while let Some(r) = unsafe { self.my_replies.pop_with(|m| self.dispatch(m)) } {
                if let Err(e) = r {
                    first_err.get_or_insert(e);
                }
            }
        }
        if requests {
            if let Some(_g) = try_take(&self.request_drain) {
                // SAFETY: the request_drain flag makes this thread the ring's only consumer.
                while let Some(r) = unsafe { self.my_requests.pop_with(|m| self.dispatch(m)) } {
                    if let Err(e) = r {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Runs the handler a received message names.
    fn dispatch(&self, m: Option<Received<'_>>) -> Result<()> {
        let m = m.ok_or_else(|| {
            ConduitError::Am(AmError::Transport(
                "smp: a malformed message was found in the ring and dropped".to_string(),
            ))
        })?;
        let h = m.header;
        let payload: &[u8] = match h.category {
            Category::Long => {
                check_range(
                    self.rank,
                    self.size,
                    h.offset as usize,
                    h.len as usize,
                    self.segment_len,
                )?;
                // SAFETY: the range was checked against this PE's segment,
                // which is mapped for the conduit's lifetime; the sender
                // wrote the bytes before publishing the message (Release/
                // Acquire on the slot sequence).
                unsafe {
                    std::slice::from_raw_parts(
                        self.segs[self.rank].add(h.offset as usize),
                        h.len as usize,
                    )
                }
            }
            _ => m.medium,
        };
        let f = {
            let table = self.handlers.read().unwrap_or_else(|e| e.into_inner());
            table.get(h.handler).cloned()
        }
        .ok_or(AmError::NoHandler(h.handler))?;
        let msg = AmMessage {
            src: h.src as u16,
            category: h.category,
            direction: h.direction,
            handler: h.handler,
            args: m.args,
            payload,
            offset: if h.category == Category::Long {
                h.offset
            } else {
                0
            },
        };
        let mut sink = Replier { c: self };
        let mut token = Token::new(msg.src, msg.direction, &mut sink);
        f(&mut token, &msg);
        Ok(())
    }

    /// Enqueues into `ring` (which belongs to `pe`), serving this PE's own
    /// rings while the ring is full.
    fn push(
        &self,
        pe: usize,
        ring: Ring,
        h: &Header,
        args: &[u32],
        medium: &[u8],
        serve_requests: bool,
    ) -> Result<()> {
        let mut backoff = Backoff::new();
        while !ring.try_push(h, args, medium) {
            self.check_global_exit();
            self.drain(serve_requests)?;
            if backoff.every(LIVENESS_PERIOD) {
                self.check_peer(pe, true)?;
            }
            if let Some(waited) = backoff.timed_out() {
                return Err(ConduitError::Timeout {
                    what: format!("room in PE {pe}'s full message ring"),
                    waited,
                });
            }
            backoff.snooze();
        }
        Ok(())
    }

    /// Copies a Long payload into `pe`'s segment at `offset`.
    fn write_long(&self, pe: usize, offset: usize, payload: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, payload.len(), self.segment_len)?;
        // SAFETY: the range lies inside pe's segment, mapped for the conduit's
        // lifetime; `ptr::copy` tolerates a source inside the same mapping.
        unsafe { std::ptr::copy(payload.as_ptr(), self.segs[pe].add(offset), payload.len()) };
        Ok(())
    }

    /// `Err(PeerFailed)` if `pe` is dead, failed, or (when `need_alive`)
    /// finalized. A failure is traced to its root (see [`Self::root_cause`])
    /// and recorded as this PE's cause before it is returned.
    fn check_peer(&self, pe: usize, need_alive: bool) -> Result<()> {
        match self.peer_verdict(pe, need_alive) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.root_cause(pe, e)),
        }
    }

    /// The state of `pe` alone, without following causes.
    fn peer_verdict(&self, pe: usize, need_alive: bool) -> Result<()> {
        let st = self.ctl.state(pe).load(Ordering::Acquire);
        let pid = self.ctl.pid(pe).load(Ordering::Relaxed);
        let fail = |reason: String| Err(ConduitError::PeerFailed { pe, reason });
        match st {
            state::FAILED => return fail("it panicked".to_string()),
            state::FINALIZED if need_alive => {
                return fail("it left the job (finalized) while still needed".to_string());
            }
            state::FINALIZED | state::ABSENT => return Ok(()),
            _ => {}
        }
        if pid != 0 && !process_alive(pid) {
            return fail(format!("its process {pid} ended without finalizing"));
        }
        Ok(())
    }

    /// `found` says PE `pe` failed; but `pe` may have left only because it
    /// saw another PE fail first. Follows the recorded causes (at most one
    /// step per PE) to the PE that failed first, records it as this PE's own
    /// cause, and returns the error naming it.
    fn root_cause(&self, pe: usize, found: ConduitError) -> ConduitError {
        let root = root_of(pe, self.rank, self.size, |q| {
            let c = self.ctl.cause(q).load(Ordering::Acquire);
            usize::try_from(c.checked_sub(1)?).ok()
        });
        let err = if root == pe {
            found
        } else {
            match self.peer_verdict(root, false) {
                Err(e) => e,
                Ok(()) => ConduitError::PeerFailed {
                    pe: root,
                    reason: format!("PE {pe} left the job after seeing it fail"),
                },
            }
        };
        let _ = self.ctl.cause(self.rank).compare_exchange(
            0,
            root as u64 + 1,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        err
    }

    /// Checks every peer, reporting a PE that died or failed in preference
    /// to one that merely left (which may itself have left because of the
    /// failure), so that every PE names the root cause.
    fn check_peers(&self) -> Result<()> {
        let peers = || (0..self.size).filter(|&pe| pe != self.rank);
        peers().try_for_each(|pe| self.check_peer(pe, false))?;
        peers().try_for_each(|pe| self.check_peer(pe, true))
    }

    /// The bootstrap barrier, optionally bounded by `deadline`.
    fn barrier_until(&self, deadline: Option<Instant>) -> Result<()> {
        self.progress()?;
        let (count, gen_word) = (self.ctl.bar_count(), self.ctl.bar_gen());
        let generation = gen_word.load(Ordering::Acquire);
        if count.fetch_add(1, Ordering::AcqRel) + 1 == self.size as u64 {
            count.store(0, Ordering::Relaxed);
            gen_word.store(generation.wrapping_add(1), Ordering::Release);
            return Ok(());
        }
        let mut backoff = Backoff::new();
        while gen_word.load(Ordering::Acquire) == generation {
            self.check_global_exit();
            self.drain(true)?;
            if backoff.every(LIVENESS_PERIOD) {
                let mut verdict = self.check_peers();
                if verdict.is_ok() && deadline.is_some_and(|d| Instant::now() > d) {
                    let missing: Vec<usize> = (0..self.size)
                        .filter(|&pe| self.ctl.state(pe).load(Ordering::Acquire) == state::ABSENT)
                        .collect();
                    verdict = Err(ConduitError::Bootstrap(format!(
                        "smp: PE {} waited {}s for the job to assemble; PEs not attached: {missing:?}",
                        self.rank,
                        BOOTSTRAP_TIMEOUT.as_secs()
                    )));
                }
                if let Err(e) = verdict {
                    if gen_word.load(Ordering::Acquire) != generation {
                        break;
                    }
                    return Err(e);
                }
            }
            if let Some(waited) = backoff.timed_out() {
                let arrived = count.load(Ordering::Acquire);
                let absent: Vec<usize> = (0..self.size)
                    .filter(|&pe| self.ctl.state(pe).load(Ordering::Acquire) == state::ABSENT)
                    .collect();
                return Err(ConduitError::Timeout {
                    what: format!(
                        "the smp bootstrap barrier ({arrived} of {} PEs arrived{})",
                        self.size,
                        if absent.is_empty() {
                            String::new()
                        } else {
                            format!("; PEs {absent:?} never attached")
                        }
                    ),
                    waited,
                });
            }
            backoff.snooze();
        }
        Ok(())
    }

    #[inline]
    fn seg_ptr(&self, pe: usize, offset: usize) -> *mut u8 {
        // SAFETY: callers checked `offset..offset+len` with check_range, so
        // the address lies inside pe's mapping.
        unsafe { self.segs[pe].add(offset) }
    }
}

/// Opens the control block rank 0 publishes, waiting for it.
fn open_published_ctl(path: &std::path::Path, layout: Layout, deadline: Instant) -> Result<Region> {
    let mut backoff = Backoff::new();
    loop {
        if let Some(file) = shm::open(path)? {
            if file.metadata()?.len() >= layout.total as u64 {
                let region = Region::map(&file, layout.total, path)?;
                // SAFETY: the mapping is page aligned and `layout.total` long.
                let c = unsafe { Ctl::at(region.ptr(), layout) };
                let mut wait = Backoff::new();
                loop {
                    if c.magic().load(Ordering::Acquire) == ctl::MAGIC {
                        if c.total().load(Ordering::Relaxed) != layout.total as u64 {
                            return Err(ConduitError::Bootstrap(format!(
                                "smp: {} has another layout (a different job size or fshmem version)",
                                path.display()
                            )));
                        }
                        return Ok(region);
                    }
                    if Instant::now() > deadline {
                        break;
                    }
                    wait.snooze();
                }
            }
        }
        if Instant::now() > deadline {
            return Err(ConduitError::Bootstrap(format!(
                "smp: rank 0 did not publish the job control block {} within {}s",
                path.display(),
                BOOTSTRAP_TIMEOUT.as_secs()
            )));
        }
        backoff.snooze();
        if backoff.is_yielding() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Sends a handler's reply into the requester's reply ring.
struct Replier<'a> {
    c: &'a SmpConduit,
}

impl ReplySink for Replier<'_> {
    fn send_reply(
        &mut self,
        dst: gasnet_core::NodeId,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> std::result::Result<(), AmError> {
        let c = self.c;
        let dst = dst as usize;
        let transport = |e: ConduitError| AmError::Transport(e.to_string());
        check_pe(dst, c.size).map_err(transport)?;
        if category == Category::Long {
            c.write_long(dst, offset as usize, payload)
                .map_err(transport)?;
        }
        let h = Header {
            src: c.rank as u32,
            handler,
            category,
            direction: Direction::Reply,
            len: payload.len() as u32,
            offset,
        };
        let medium = if category == Category::Medium {
            payload
        } else {
            &[]
        };
        c.push(dst, c.ctl.replies(dst), &h, args, medium, false)
            .map_err(transport)
    }
}

impl Segments for SmpConduit {
    #[inline]
    fn rank(&self) -> usize {
        self.rank
    }

    #[inline]
    fn size(&self) -> usize {
        self.size
    }

    #[inline]
    fn segment_len(&self) -> usize {
        self.segment_len
    }

    #[inline]
    fn local_segment(&self) -> *mut u8 {
        self.segs[self.rank]
    }

    #[inline]
    fn peer_segment(&self, pe: usize) -> Option<*mut u8> {
        self.segs.get(pe).copied()
    }

    /// Every PE of an smp job shares this host.
    fn host_of(&self, _pe: usize) -> usize {
        0
    }

    /// The PE's `/dev/shm` segment file (unlinked, still open), mapped from
    /// offset 0.
    fn segment_backing(&self) -> Option<SegmentBacking> {
        use std::os::fd::AsRawFd;
        Some(SegmentBacking {
            fd: self.seg_file.as_raw_fd(),
            offset: 0,
            len: self.segment_len,
        })
    }
}

/// Every operation completes before it returns, so contexts need no state:
/// `quiet` and `fence` are memory fences whatever the context.
impl Rma for SmpConduit {
    fn ctx_create(&self) -> Result<CtxId> {
        let id = self
            .last_ctx
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        // Ids are not reused; 2^32 - 1 creations are enough for any job.
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
        self.quiet(ctx)
    }

    #[inline(always)]
    fn put(&self, _ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len)?;
        // SAFETY: the destination range lies inside pe's mapping (checked);
        // `ptr::copy` allows `src` to overlap it (a put from the segment to
        // itself).
        unsafe { std::ptr::copy(src.as_ptr(), self.seg_ptr(pe, offset), src.len()) };
        self.progress()
    }

    #[inline(always)]
    unsafe fn put_nbi(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        // SAFETY: the destination is checked; the caller guarantees `src`
        // is valid for `len` bytes (contract of put_nbi).
        unsafe { std::ptr::copy(src, self.seg_ptr(pe, offset), len) };
        self.progress()
    }

    #[inline(always)]
    fn get(&self, _ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(pe, self.size, offset, dst.len(), self.segment_len)?;
        // SAFETY: the source range lies inside pe's mapping (checked).
        unsafe { std::ptr::copy(self.seg_ptr(pe, offset), dst.as_mut_ptr(), dst.len()) };
        self.progress()
    }

    #[inline(always)]
    unsafe fn get_nbi(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        // SAFETY: the source is checked; the caller guarantees `dst` is
        // valid for `len` bytes (contract of get_nbi).
        unsafe { std::ptr::copy(self.seg_ptr(pe, offset), dst, len) };
        self.progress()
    }

    #[inline(always)]
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
        let p = self.seg_ptr(pe, offset);
        // SAFETY: the word lies inside pe's live mapping and is aligned to
        // its width (checked above); shared words are only modified
        // atomically by conforming programs.
        let old = unsafe { crate::cpu_amo::atomic_at(p, op, width, operand, compare) };
        self.progress()?;
        Ok(old)
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
        // SAFETY: the destination range lies inside pe's mapping (checked).
        unsafe { std::ptr::copy(src.as_ptr(), self.seg_ptr(pe, offset), src.len()) };
        fence(Ordering::Release);
        // SAFETY: the signal word is in range and 8-byte aligned (checked).
        let sig = unsafe { AtomicU64::from_ptr(self.seg_ptr(pe, sig_offset) as *mut u64) };
        match sig_op {
            SignalOp::Set => sig.store(sig_value, Ordering::Release),
            SignalOp::Add => {
                sig.fetch_add(sig_value, Ordering::AcqRel);
            }
        }
        self.progress()
    }

    #[inline(always)]
    fn fence(&self, _ctx: CtxId) -> Result<()> {
        fence(Ordering::Release);
        self.progress()
    }

    #[inline(always)]
    fn quiet(&self, _ctx: CtxId) -> Result<()> {
        fence(Ordering::SeqCst);
        self.progress()
    }

    /// Atomics are CPU atomics on the mapped word.
    fn cpu_atomics(&self) -> bool {
        true
    }
}

impl ActiveMessages for SmpConduit {
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
        check_shape(category, args.len(), payload.len())?;
        if category == Category::Long {
            self.write_long(pe, offset, payload)?;
        }
        let h = Header {
            src: self.rank as u32,
            handler,
            category,
            direction: Direction::Request,
            len: payload.len() as u32,
            offset: if category == Category::Long {
                offset as u64
            } else {
                0
            },
        };
        let medium = if category == Category::Medium {
            payload
        } else {
            &[]
        };
        self.push(pe, self.ctl.requests(pe), &h, args, medium, true)?;
        self.progress()
    }

    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register_user(index, f)?;
        Ok(())
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register_system(index, f)?;
        Ok(())
    }

    fn poll(&self) -> Result<()> {
        // The fast check first: an idle poll (every step of a wait) costs a
        // few loads, not the drain's compare-and-swaps.
        self.progress()?;
        // Waits of the layers above (wait_until, collectives) poll on every
        // step: a dead or departed peer must turn them into an error too.
        if self.polls.fetch_add(1, Ordering::Relaxed) % LIVENESS_POLLS == LIVENESS_POLLS - 1 {
            self.check_peers()?;
        }
        Ok(())
    }
}

impl JobBootstrap for SmpConduit {
    fn barrier(&self) -> Result<()> {
        self.barrier_until(None)
    }

    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > EXCHANGE_MAX {
            return Err(ConduitError::Bootstrap(format!(
                "exchange contribution of {} bytes exceeds {EXCHANGE_MAX}",
                mine.len()
            )));
        }
        // SAFETY: this PE's slot holds EXCHANGE_MAX bytes and only this PE
        // writes it, between the barriers that bracket reads by others.
        unsafe {
            std::ptr::copy_nonoverlapping(mine.as_ptr(), self.ctl.xchg_data(self.rank), mine.len())
        };
        self.ctl
            .xchg_len(self.rank)
            .store(mine.len() as u64, Ordering::Release);
        self.barrier()?;
        let all = (0..self.size)
            .map(|pe| {
                let len =
                    (self.ctl.xchg_len(pe).load(Ordering::Acquire) as usize).min(EXCHANGE_MAX);
                let mut v = vec![0u8; len];
                // SAFETY: the slot holds at least `len` bytes, written by pe
                // before the barrier and not rewritten before the next one.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.ctl.xchg_data(pe), v.as_mut_ptr(), len)
                };
                v
            })
            .collect();
        self.barrier()?;
        Ok(all)
    }
}

impl Lifecycle for SmpConduit {
    /// Joins the job with a segment of its own (`SegmentRequest::Own`): the
    /// smp conduit allocates every segment it maps and cannot serve one it
    /// did not allocate. Needs no settings.
    fn attach(job: &JobEnv, segment: SegmentRequest, _settings: &crate::Settings) -> Result<Self> {
        match segment {
            SegmentRequest::Own(len) => SmpConduit::attach_len(job, len),
            SegmentRequest::Over(_) => Err(ConduitError::Unsupported(
                "smp: attaching over a segment another conduit allocated",
            )),
        }
    }

    fn finalize(&self) -> Result<()> {
        if self.finalized.load(Ordering::Acquire) {
            return Ok(());
        }
        self.barrier()?;
        self.finalized.store(true, Ordering::Release);
        self.ctl
            .state(self.rank)
            .store(state::FINALIZED, Ordering::Release);
        Ok(())
    }

    fn global_exit(&self, status: i32) -> ! {
        self.post_global_exit(status);
        // Whoever set the word first decides the status of the whole job.
        self.check_global_exit();
        crate::wait::exit_job(status)
    }
}

impl Drop for SmpConduit {
    fn drop(&mut self) {
        if !self.finalized.load(Ordering::Acquire) {
            let st = if std::thread::panicking() || !self.ready {
                state::FAILED
            } else {
                state::FINALIZED
            };
            self.ctl.state(self.rank).store(st, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests;
