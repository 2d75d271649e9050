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

mod am;
mod ctl;
mod join;
mod liveness;
mod ring;
mod shm;

pub use shm::{SHM_DIR, job_file, job_files, job_prefix, remove_job_files};

use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::liveness::{Cause, process_alive, root_of};
use crate::wait::Backoff;
use ctl::{Ctl, Layout, state};
use gasnet_core::am::check_shape;
use gasnet_core::{AmError, AmMessage, Direction, HandlerTable, ReplySink, Token};
use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};
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
    /// The id of this PE's leave hook ([`SmpConduit::register_leave`]),
    /// 0 until it is registered.
    leave_hook: u64,
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

impl SmpConduit {
    /// The job id this PE belongs to.
    pub fn job_id(&self) -> &str {
        &self.job_id
    }

    /// Sets the global-exit word to `status` and `from`, the job rank of
    /// the PE that ends the job (the layout of `wait::exit_word`), unless a
    /// PE set it first, without leaving: every PE of the job exits with the
    /// word's status the next time it enters the conduit (a routed job
    /// then ends the other hosts through its off-node conduit, and `from`
    /// is the PE's rank in the whole job, not on this host).
    pub fn post_global_exit(&self, status: i32, from: usize) {
        crate::wait::note_exit_from(from);
        crate::wait::note_job_exit();
        let word = crate::wait::exit_word(status, from);
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

    #[inline]
    fn seg_ptr(&self, pe: usize, offset: usize) -> *mut u8 {
        // SAFETY: callers checked `offset..offset+len` with check_range, so
        // the address lies inside pe's mapping.
        unsafe { self.segs[pe].add(offset) }
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
    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        // SAFETY: a slice is valid for reads of its length.
        unsafe { self.put_from(ctx, pe, offset, src.as_ptr(), src.len()) }
    }

    #[inline(always)]
    unsafe fn put_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: put_nbi's contract covers put_from's; the copy is done
        // when this returns.
        unsafe { self.put_from(ctx, pe, offset, src, len) }
    }

    #[inline(always)]
    unsafe fn put_from(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank {
            // SAFETY: as below, with relaxed atomics on both sides: this
            // PE's own segment is accessed atomically by every path of
            // this process (`segmem`).
            unsafe { crate::segmem::copy_shared(src, self.seg_ptr(pe, offset), len) };
            return self.progress();
        }
        // SAFETY: the destination range lies inside pe's mapping (checked);
        // the caller guarantees `src` is valid for `len` bytes. Both sides
        // are raw pointers (no reference covers either), and `ptr::copy`
        // allows them to overlap. A peer's segment is that process's
        // memory: this plain copy races only with another thread of this
        // process transferring to the same bytes at once (see
        // `segmem`, what stays outside Rust's guarantees).
        unsafe { copy_peer(src, self.seg_ptr(pe, offset), len) };
        self.progress()
    }

    #[inline(always)]
    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        // SAFETY: a mutable slice is valid for writes of its length.
        unsafe { self.get_into(ctx, pe, offset, dst.as_mut_ptr(), dst.len()) }
    }

    #[inline(always)]
    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: get_nbi's contract covers get_into's; the copy is done
        // when this returns.
        unsafe { self.get_into(ctx, pe, offset, dst, len) }
    }

    #[inline(always)]
    unsafe fn get_into(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank {
            // SAFETY: as below, with relaxed atomics on both sides (this
            // PE's own segment, as in `put_from`).
            unsafe { crate::segmem::copy_shared(self.seg_ptr(pe, offset), dst, len) };
            return self.progress();
        }
        // SAFETY: the source range lies inside pe's mapping (checked); the
        // caller guarantees `dst` is valid for `len` bytes; raw pointers on
        // both sides, which may overlap (a peer's memory, as in
        // `put_from`).
        unsafe { copy_peer(self.seg_ptr(pe, offset), dst, len) };
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
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: &[u8],
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        // SAFETY: a slice is valid for reads of its length.
        unsafe {
            self.put_signal_from(
                ctx,
                pe,
                offset,
                src.as_ptr(),
                src.len(),
                sig_offset,
                sig_op,
                sig_value,
            )
        }
    }

    unsafe fn put_signal_from(
        &self,
        _ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        check_word(pe, self.size, sig_offset, 8, self.segment_len)?;
        // SAFETY: the destination range lies inside pe's mapping (checked);
        // the caller guarantees `src` is valid for `len` bytes; relaxed
        // atomics for this PE's own segment, a plain copy into a peer's,
        // as in `put_from`.
        unsafe {
            if pe == self.rank {
                crate::segmem::copy_shared(src, self.seg_ptr(pe, offset), len)
            } else {
                std::ptr::copy(src, self.seg_ptr(pe, offset), len)
            }
        };
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

/// Copies `len` bytes between a peer's mapped segment and this process's
/// memory, as `ptr::copy` (the ranges may overlap). A word of 8 or 4
/// bytes, the size of most single-element puts and gets, moves as one
/// unaligned load and store instead of a call to `memmove`.
///
/// # Safety
/// As `ptr::copy`: `src` valid for reads and `dst` for writes of `len`
/// bytes, and no Rust reference covers either.
#[inline(always)]
unsafe fn copy_peer(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract; each arm reads all of `src` before it
    // writes `dst`, so overlapping ranges copy as `ptr::copy` would.
    unsafe {
        match len {
            8 => dst
                .cast::<u64>()
                .write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst
                .cast::<u32>()
                .write_unaligned(src.cast::<u32>().read_unaligned()),
            _ => std::ptr::copy(src, dst, len),
        }
    }
}

impl Lifecycle for SmpConduit {
    /// Joins the job with a segment of its own (`SegmentRequest::Own`): the
    /// smp conduit allocates every segment it maps and cannot serve one it
    /// did not allocate. Needs no settings.
    fn attach(
        job: &JobEnv,
        segment: SegmentRequest,
        _settings: &crate::config::Settings,
    ) -> Result<Self> {
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
        self.post_global_exit(status, self.rank);
        // Whoever set the word first decides the status of the whole job.
        self.check_global_exit();
        crate::wait::exit_job(status)
    }
}

impl Drop for SmpConduit {
    fn drop(&mut self) {
        // Before the control block the hook reads is unmapped.
        crate::wait::clear_leave_hook(self.leave_hook);
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
