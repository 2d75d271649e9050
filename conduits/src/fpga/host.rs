//! The host side of the command queue: tags, the staging ring, what each
//! completion is for, the per-context counts that make `quiet` per
//! context, and the per-context submission queues, through which every
//! operation of the conduit (written as descriptors in the `ops` module)
//! reaches the board.
//!
//! # Submission queues
//!
//! The board has one command queue (`spec/registers.md` §6.1), written by
//! whichever thread holds [`Host`]. A put, non-fetching atomic,
//! put-with-signal or fence on a context other than the default one never
//! waits for that lock: when another thread holds it, the operation
//! becomes a [`Queued`] item (a ready descriptor, or a put owning a copy of
//! its bytes, to be staged) on its context's queue, a channel whose
//! receiving end [`Host`] keeps, and the call returns. The lock is only
//! taken through [`FpgaConduit::lock`] and [`FpgaConduit::try_lock`], whose
//! guard ([`HostGuard`], the one [`crate::ctxq`] gives every conduit with
//! such queues) writes every queued item to the board when the lock is
//! taken and again when it is let go; after letting go it reads
//! [`FpgaConduit::queued`] once more and, if an item arrived meanwhile and
//! the lock is free, takes it again. A queuing thread counts its item in
//! `queued` after sending it and then tries the lock itself. Both touch
//! `queued` with read-modify-writes (every write to it is one), which read
//! the latest value: if the holder's comes second it sees the count; if
//! first, the queuing thread's reads from it, so its try_lock happens
//! after the unlock and finds the lock free (or held by a thread that will
//! look again as it lets go). No item waits for a later call. Until the
//! PE creates its first context there is no queue and that look is
//! skipped. Queued bytes are bounded ([`QUEUED_BYTES_MAX`]); past that a
//! put waits for the lock, as every operation did before (back-pressure,
//! never an error).

use super::*;
use crate::ctxq;

/// What to do when a tagged completion arrives.
#[derive(Debug)]
pub(super) enum Waiter {
    /// Free a staging allocation.
    Free(u64),
    /// Copy a landed get out of staging into host memory, then free it.
    CopyOut {
        id: u64,
        from: u64,
        dst: *mut u8,
        len: usize,
    },
    /// Keep the completion for a blocking caller.
    Keep,
    /// Nothing but counting it for its context's quiet.
    Count,
}

/// The tag bit that marks a command whose completion is only counted for
/// its context's quiet (inline puts, non-fetching atomics): such a tag is
/// this bit with the context's index, so its completion finds its context
/// without an entry in [`Host::waiting`], and the hot path inserts nothing.
/// Tags the board echoes need not be distinct (`spec/registers.md` §7);
/// [`FpgaConduit::fresh_tag`] keeps the other tags below this bit.
pub(super) const COUNT_TAG: u32 = 1 << 31;

/// Most bytes of put data waiting in the contexts' queues; a put that
/// would pass it waits for the host's lock instead.
pub(super) const QUEUED_BYTES_MAX: u64 = 2 * STAGE_BYTES;

/// Bytes a queued item counts for [`QUEUED_BYTES_MAX`] besides its data.
pub(super) const ITEM_BYTES: u64 = 64;

/// One context's bookkeeping, read and counted without the host's lock.
#[derive(Debug, Default)]
pub(super) struct CtxState {
    /// Created and not destroyed (the default context always is).
    pub(super) live: AtomicBool,
    /// Commands of it that ask for a completion, counted when issued
    /// (queued ones included; [`CtxState::count`]).
    pub(super) issued: AtomicU64,
    /// Of those, the ones whose completion was handled (or that were never
    /// written). Written only by the holder of the host's lock.
    pub(super) completed: AtomicU64,
    /// The first error of its commands since its last quiet (blocking
    /// callers get theirs directly).
    pub(super) error: Mutex<Option<ConduitError>>,
    /// Its submission queue (non-default contexts, from their first
    /// creation on; the receiving end is [`Host::queues`]).
    pub(super) queue: OnceLock<Sender<Queued>>,
}

impl CtxState {
    pub(super) fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Counts `n` more commands of context `ctx` (this state) as issued.
    /// The default context is counted only under the host's lock (all its
    /// operations take it), so a plain store does; other contexts are
    /// counted by threads that do not hold it.
    #[inline]
    pub(super) fn count(&self, ctx: CtxId, n: u64) {
        if ctx == CtxId::DEFAULT {
            let v = self.issued.load(Ordering::Relaxed);
            self.issued.store(v + n, Ordering::Release);
        } else {
            self.issued.fetch_add(n, Ordering::AcqRel);
        }
    }

    /// Counts `n` of its commands as completed; the caller holds the
    /// host's lock.
    #[inline]
    pub(super) fn complete(&self, n: u64) {
        let v = self.completed.load(Ordering::Relaxed);
        self.completed.store(v + n, Ordering::Release);
    }

    /// Its commands issued and not completed.
    pub(super) fn outstanding(&self) -> u64 {
        let done = self.completed.load(Ordering::Acquire);
        self.issued.load(Ordering::Acquire).saturating_sub(done)
    }

    /// Records `e` unless an earlier error waits for the next quiet.
    pub(super) fn record(&self, e: ConduitError) {
        self.error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    }

    /// The first error since the last quiet, clearing it.
    pub(super) fn take_error(&self) -> Option<ConduitError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// An operation of a non-default context waiting in its context's queue
/// for the thread that holds the host's lock.
#[derive(Debug)]
pub(super) enum Queued {
    /// A descriptor ready as it is (an inline put, a non-fetching atomic:
    /// count-only tags), counted for context `ctx` when queued.
    Desc { ctx: u32, d: Descriptor },
    /// A put of the conduit's copy of its bytes, staged when written; its
    /// pieces were counted for context `ctx` when queued.
    Put {
        ctx: u32,
        pe: usize,
        offset: u64,
        data: Vec<u8>,
    },
    /// A Fence descriptor of context `ctx`.
    Fence { ctx: u32 },
}

impl Queued {
    fn bytes(&self) -> u64 {
        match self {
            Queued::Put { data, .. } => ITEM_BYTES + data.len() as u64,
            _ => ITEM_BYTES,
        }
    }
}

/// The pieces a staged put or get of `len` bytes is sent as.
pub(super) fn pieces(len: usize) -> u64 {
    len.div_ceil(CHUNK) as u64
}

/// Hashes a command tag for the maps keyed by tags, which sit on the path
/// of every put: tags are distinct counters chosen by this PE (no
/// adversary), so one multiplication by an odd constant spreads them over
/// the table's bits instead of the default SipHash (about 40 ns of the
/// 8-byte put's submit cost).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TagHasher(u64);

impl std::hash::Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, tag: u32) {
        self.0 = (u64::from(tag) ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by command tags.
pub(super) type TagMap<V> = HashMap<u32, V, std::hash::BuildHasherDefault<TagHasher>>;

#[derive(Debug)]
pub(super) struct Host {
    pub(super) rings: Rings,
    pub(super) next_tag: u32,
    /// Each tagged command's context and what its completion is for.
    pub(super) waiting: TagMap<(u32, Waiter)>,
    /// Every context's state (the conduit's [`FpgaConduit::ctxs`]).
    pub(super) ctxs: Arc<[CtxState]>,
    /// The receiving ends of the contexts' submission queues.
    pub(super) queues: Vec<Receiver<Queued>>,
    pub(super) done: TagMap<Completion>,
    pub(super) stage: Stage,
    /// Something was issued since the last fence.
    pub(super) dirty: bool,
}

impl Host {
    /// The state of context `ctx`, if it exists.
    pub(super) fn ctx(&self, ctx: CtxId) -> Result<&CtxState> {
        slot(&self.ctxs, ctx)
    }

    /// Registers tagged command `tag` of `ctx`, counted as issued from now
    /// on, to be handled by `w` when its completion arrives.
    pub(super) fn expect(&mut self, ctx: CtxId, tag: u32, w: Waiter) {
        if let Some(c) = self.ctxs.get(ctx.index()) {
            c.count(ctx, 1);
        }
        self.waiting.insert(tag, (ctx.0, w));
    }
}

/// The state of context `ctx` in `ctxs`, if it exists.
#[inline]
pub(super) fn slot(ctxs: &[CtxState], ctx: CtxId) -> Result<&CtxState> {
    match ctxs.get(ctx.index()) {
        Some(c) if c.is_live() => Ok(c),
        _ => Err(ConduitError::NoContext { ctx: ctx.0 }),
    }
}

/// The host's lock, held by this thread. Taking it and letting go of it
/// write what the contexts queued meanwhile to the board; after letting
/// go, it is taken again if an item was queued since and nobody holds it
/// (module documentation, [`crate::ctxq`]).
pub(super) type HostGuard<'a> = ctxq::Held<'a, Host>;

impl ctxq::Drain for Host {
    type With = FpgaConduit;

    fn drain_queues(&mut self, c: &FpgaConduit) {
        c.drain(self);
    }

    fn has_queues(&self) -> bool {
        !self.queues.is_empty()
    }
}

pub(super) fn status_error(pe: usize, c: &Completion) -> ConduitError {
    ConduitError::PeerFailed {
        pe,
        reason: format!(
            "board reported {} for opcode {:#04x} (tag {}, detail {})",
            c.status, c.opcode, c.tag, c.detail
        ),
    }
}

impl FpgaConduit {
    /// Takes the host's lock (whether or not a panicking thread poisoned
    /// it) and writes what the contexts queued.
    pub(super) fn lock(&self) -> HostGuard<'_> {
        ctxq::lock(&self.host, self, &self.queued)
    }

    /// As [`FpgaConduit::lock`], if no other thread holds the lock.
    pub(super) fn try_lock(&self) -> Option<HostGuard<'_>> {
        ctxq::try_lock(&self.host, self, &self.queued)
    }

    /// The state of context `ctx`, if it exists (no lock).
    #[inline]
    pub(super) fn slot(&self, ctx: CtxId) -> Result<&CtxState> {
        slot(&self.ctxs, ctx)
    }

    /// The host's lock for an operation of `ctx` that adds `bytes` to the
    /// queues if it cannot have it: taken, waiting for it, on the default
    /// context or when the queues hold too much already; else only if no
    /// other thread holds it.
    #[inline]
    pub(super) fn lock_for(&self, ctx: CtxId, bytes: u64) -> Option<HostGuard<'_>> {
        if ctx == CtxId::DEFAULT
            || self
                .queued_bytes
                .load(Ordering::Relaxed)
                .saturating_add(bytes)
                > QUEUED_BYTES_MAX
        {
            Some(self.lock())
        } else {
            self.try_lock()
        }
    }

    /// Puts `q` on context `st`'s queue for the thread holding the lock,
    /// then takes the lock itself if it is free by now.
    pub(super) fn enqueue(&self, st: &CtxState, q: Queued) {
        // Counted before it can be taken, so the count never goes below 0.
        let bytes = q.bytes();
        self.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
        let q = match st.queue.get() {
            Some(tx) => match tx.send(q) {
                Ok(()) => None,
                Err(SendError(q)) => Some(q),
            },
            None => Some(q),
        };
        if let Some(q) = q {
            // No queue (cannot happen for a context ctx_create made): the
            // item waits for the lock instead.
            self.queued_bytes.fetch_sub(bytes, Ordering::Relaxed);
            let mut h = self.lock();
            self.run_queued(&mut h, q);
            return;
        }
        ctxq::queued(&self.host, self, &self.queued, 1);
    }

    /// Writes every queued item to the board, in each queue's order.
    pub(super) fn drain(&self, h: &mut Host) {
        if self.queued.load(Ordering::Acquire) <= 0 {
            return;
        }
        let mut n = 0;
        for i in 0..h.queues.len() {
            while let Ok(q) = h.queues[i].try_recv() {
                n += 1;
                self.queued_bytes.fetch_sub(q.bytes(), Ordering::Relaxed);
                self.run_queued(h, q);
            }
        }
        self.queued.fetch_sub(n, Ordering::AcqRel);
    }

    /// Writes one queued item; a failure is its context's error, reported
    /// by its quiet, and its commands count as completed.
    fn run_queued(&self, h: &mut Host, q: Queued) {
        let (ctx, r) = match q {
            Queued::Desc { ctx, d } => {
                let r = self.submit(h, &d);
                if r.is_err() {
                    self.give_up(ctx, 1);
                }
                (ctx, r)
            }
            Queued::Put {
                ctx,
                pe,
                offset,
                data,
            } => (
                ctx,
                self.send_staged(h, CtxId(ctx), pe, offset, data.as_ptr(), data.len()),
            ),
            Queued::Fence { ctx } => (ctx, self.write_fence(h)),
        };
        if let (Err(e), Some(st)) = (r, self.ctxs.get(ctx as usize)) {
            st.record(e);
        }
    }

    /// Counts `n` commands of `ctx` that were never written as completed
    /// (under the host's lock).
    pub(super) fn give_up(&self, ctx: u32, n: u64) {
        if let Some(st) = self.ctxs.get(ctx as usize) {
            st.complete(n);
        }
    }

    #[inline(always)]
    pub(super) fn win(&self, off: u64) -> *mut u8 {
        self.seg.wrapping_add(off as usize)
    }

    /// Handles one completion.
    pub(super) fn settle(&self, h: &mut Host, c: Completion) {
        let (ctx, w) = if c.tag & COUNT_TAG != 0 {
            (c.tag & !COUNT_TAG, Waiter::Count)
        } else {
            match h.waiting.remove(&c.tag) {
                Some(e) => e,
                None => return,
            }
        };
        if !c.status.is_ok()
            && !matches!(w, Waiter::Keep)
            && let Some(st) = h.ctxs.get(ctx as usize)
        {
            st.record(status_error(c.target as usize, &c));
        }
        match w {
            Waiter::Free(id) => h.stage.free(id),
            Waiter::CopyOut { id, from, dst, len } => {
                if c.status.is_ok() {
                    // SAFETY: `from..from+len` is a staging allocation in the
                    // window; `dst` is valid for `len` bytes until the quiet
                    // that reaps this (get_nbi's contract) or until the
                    // blocking get returns, and may be segment memory that
                    // other threads load atomically, so it is stored
                    // atomically; the staging bytes are this PE's alone.
                    unsafe { crate::segmem::copy_in(self.win(from), dst, len) };
                }
                h.stage.free(id);
            }
            Waiter::Keep => {
                h.done.insert(c.tag, c);
            }
            Waiter::Count => {}
        }
        // Counted once its data is where it goes: a quiet that reads the
        // count sees a landed get_nbi.
        if let Some(st) = h.ctxs.get(ctx as usize) {
            st.complete(1);
        }
    }

    /// Reaps every completion the board has written; returns how many.
    pub(super) fn reap(&self, h: &mut Host) -> usize {
        let mut n = 0;
        while let Some(r) = h.rings.poll_cq(&self.board.bar0) {
            n += 1;
            match r {
                Ok(c) => self.settle(h, c),
                Err(e) => {
                    // Its tag is unknown: every context learns of it.
                    for st in h.ctxs.iter().filter(|c| c.is_live()) {
                        st.record(ConduitError::PeerFailed {
                            pe: self.rank,
                            reason: format!("board wrote a malformed completion: {e}"),
                        });
                    }
                }
            }
        }
        n
    }

    /// A tag for a command whose completion has an entry in
    /// [`Host::waiting`]: nonzero and below [`COUNT_TAG`].
    pub(super) fn fresh_tag(h: &mut Host) -> u32 {
        h.next_tag = (h.next_tag.wrapping_add(1) & !COUNT_TAG).max(1);
        h.next_tag
    }

    /// Writes a descriptor, reaping completions while the ring is full.
    pub(super) fn submit(&self, h: &mut Host, d: &Descriptor) -> Result<()> {
        let enc = cmd::encode_slots(d);
        let mut b = Backoff::new();
        while !h.rings.try_submit(&self.board.bar0, enc.as_slots()) {
            if self.reap(h) > 0 {
                b.reset();
                continue;
            }
            self.step_wait_held(&mut b, || "room in its board's command queue".to_string())?;
        }
        self.board.wake();
        h.dirty = true;
        Ok(())
    }

    /// A staging allocation of `len` bytes, reaping completions until one
    /// is free.
    pub(super) fn stage(&self, h: &mut Host, len: usize) -> Result<(u64, u64)> {
        let mut b = Backoff::new();
        loop {
            if let Some(a) = h.stage.alloc(len as u64) {
                return Ok(a);
            }
            if self.reap(h) > 0 {
                b.reset();
                continue;
            }
            self.step_wait_held(&mut b, || {
                format!("{len} bytes of staging space (completions of earlier puts and gets)")
            })?;
        }
    }

    /// Waits for the completion of `tag` (registered as [`Waiter::Keep`]).
    pub(super) fn wait_tag(&self, tag: u32) -> Result<Completion> {
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                if let Some(c) = h.done.remove(&tag) {
                    return Ok(c);
                }
            }
            self.step_wait(&mut b, || {
                format!("the completion of command {tag} from its board")
            })?;
        }
    }
}
