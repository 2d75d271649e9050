//! The conduit contract, version 2 (`spec/conduit.md`): a few narrow traits
//! that every transport implements, and the types they share.
//!
//! | trait | what it carries | spec |
//! |---|---|---|
//! | [`Segments`] | rank, size, this PE's segment and direct views of peers', hosts | §1, §10 |
//! | [`Rma`] | puts, gets, atomics and put-with-signal on a context ([`CtxId`]), from slices or (`put_from`, `get_into`, `put_signal_from`) raw addresses; `fence` and `quiet` per context; context creation | §2–§4 |
//! | [`ActiveMessages`] | AM requests, handler registration, polling (progress) | §5–§6 |
//! | [`JobBootstrap`] | the bootstrap barrier and all-gather | §8 |
//! | [`Lifecycle`] | attach (from the job, a segment request and typed settings), finalize, global exit | §1, §7, §9 |
//!
//! [`Conduit`] names all five together; it is implemented for every type
//! that implements them. The layers above call these traits on
//! [`crate::AnyConduit`], an enum over the built conduits dispatched by
//! `match` (no `dyn`, no `Box`): hot paths inline. `use conduits::prelude::*`
//! brings every trait into scope.
//!
//! Failure rules (§7) are not a trait: every call that can observe a dead
//! peer returns [`crate::ConduitError::PeerFailed`] naming it.

use crate::error::Result;
use crate::job::JobEnv;
use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};

/// A communication context: an independent stream of RMA operations whose
/// `quiet` and `fence` cover that stream only (`spec/conduit.md` §3).
///
/// The default context, [`CtxId::DEFAULT`], always exists; others come from
/// [`Rma::ctx_create`] and go with [`Rma::ctx_destroy`]. A conduit maps a
/// context to whatever its transport has: a completion counter (ipv6), a
/// set of tagged board commands (fpga), an endpoint or counter (ofi), or
/// nothing at all where every operation completes at once (smp).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CtxId(pub u32);

impl CtxId {
    /// The default context (`SHMEM_CTX_DEFAULT`): every blocking call of the
    /// layers above uses it.
    pub const DEFAULT: CtxId = CtxId(0);

    /// The index of this context (0 for the default one).
    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for CtxId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "context {}", self.0)
    }
}

/// How a put-with-signal updates the signal word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignalOp {
    /// Store the value.
    Set,
    /// Add the value atomically.
    Add,
}

impl SignalOp {
    /// The atomic operation that applies this signal update.
    pub const fn amo(self) -> AmoOp {
        match self {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        }
    }
}

/// Where a conduit's local segment lives in a file the process can map
/// again: `len` bytes of the segment are the bytes of `fd` from `offset`
/// on (page-aligned). Mapping a page-aligned range of it `MAP_SHARED`
/// elsewhere in the process yields a second view of the same segment
/// bytes: what peers put there appears at both addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentBacking {
    /// An open descriptor of the backing file, owned by the conduit (valid
    /// while it lives; do not close it).
    pub fd: std::os::fd::RawFd,
    /// File offset of segment byte 0 (a multiple of the page size).
    pub offset: u64,
    /// Length of the segment in the file.
    pub len: usize,
}

/// The segment a conduit attaches with ([`Lifecycle::attach`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentRequest {
    /// The conduit allocates a zero-filled segment of this many bytes (the
    /// same on every PE).
    Own(usize),
    /// The conduit serves a segment that already exists in this process:
    /// it maps `backing` (which another conduit, typically the on-node one
    /// of a routed job, allocated and keeps open) and never allocates its
    /// own. Remote operations that arrive through this conduit then land in
    /// the same memory the other conduit's peers load and store
    /// (`spec/conduit.md` §10). A conduit that cannot serve memory it did
    /// not allocate (a board's DDR) fails with
    /// [`crate::ConduitError::Unsupported`].
    Over(SegmentBacking),
}

impl SegmentRequest {
    /// The segment length requested.
    pub const fn len(&self) -> usize {
        match self {
            SegmentRequest::Own(n) => *n,
            SegmentRequest::Over(b) => b.len,
        }
    }

    /// Whether the requested segment is empty.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Rank, size and the segments of a job (`spec/conduit.md` §1). Offsets are
/// byte offsets into the target PE's segment; every PE's segment has the
/// same length.
pub trait Segments {
    /// This PE's rank, `0..size()`.
    fn rank(&self) -> usize;

    /// Number of PEs in the job.
    fn size(&self) -> usize;

    /// Length in bytes of every PE's segment.
    fn segment_len(&self) -> usize;

    /// Base address of this PE's own segment in this process.
    fn local_segment(&self) -> *mut u8;

    /// Base address at which this process can load and store `pe`'s segment
    /// directly, where the transport allows it (smp: every PE; ipv6, fpga:
    /// this PE only).
    fn peer_segment(&self, pe: usize) -> Option<*mut u8>;

    /// The host PE `pe` runs on, as far as this conduit shares memory:
    /// PEs of one host reach each other's segments through
    /// [`Segments::peer_segment`]. Hosts are numbered from 0 in order of
    /// their lowest PE (`spec/conduit.md` §10.1). The default, for a
    /// conduit that shares no memory between PEs, gives every PE a host of
    /// its own (`pe`); smp puts every PE on host 0, a routed job follows
    /// the host keys.
    fn host_of(&self, pe: usize) -> usize {
        pe
    }

    /// The file behind this PE's own segment, for a layer that maps part of
    /// it a second time (the C ABI maps the program's static data onto a
    /// region of the segment, see `shmem::static_data`) and for an
    /// off-node conduit that serves the same segment
    /// ([`SegmentRequest::Over`]). `None` (the default) when the segment is
    /// not file-backed.
    fn segment_backing(&self) -> Option<SegmentBacking> {
        None
    }
}

/// One-sided operations on a context (`spec/conduit.md` §2–§4).
///
/// Ordering, completion and progress rules:
/// - operations of one context from one PE to one target are applied in
///   issue order only across a [`Rma::fence`] on that context;
///   [`Rma::quiet`] on a context waits for remote completion of everything
///   issued on it before;
/// - operations of different contexts are not ordered with each other
///   (a conduit may order them; the layers above must not rely on it);
/// - blocking `put` returns when the source may be reused, blocking `get`
///   and `atomic` when the result is in hand;
/// - every call polls ([`ActiveMessages::poll`]'s cheap part).
///
/// A conduit that keeps per-context state fails a call naming a context
/// that does not exist with [`crate::ConduitError::NoContext`]; one whose
/// operations complete at once (smp) keeps none and may accept any id.
pub trait Rma: Segments {
    /// Creates a context; its operations complete independently of other
    /// contexts' under [`Rma::quiet`].
    fn ctx_create(&self) -> Result<CtxId>;

    /// Completes every operation of `ctx` (as `quiet`), then frees it. The
    /// default context cannot be destroyed.
    fn ctx_destroy(&self, ctx: CtxId) -> Result<()>;

    /// Copies `src` into `pe`'s segment at `offset`; returns when `src` may
    /// be reused (not necessarily remotely complete: see `quiet`).
    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()>;

    /// Starts a put whose completion `quiet` on `ctx` waits for.
    ///
    /// # Safety
    /// `src..src+len` must stay valid and unmodified until the next
    /// [`Rma::quiet`] on `ctx` returns.
    unsafe fn put_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()>;

    /// Copies `dst.len()` bytes from `pe`'s segment at `offset` into `dst`.
    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()>;

    /// Starts a get whose completion `quiet` on `ctx` waits for.
    ///
    /// # Safety
    /// `dst..dst+len` must stay valid, and must not be read or written by
    /// anyone else, until the next [`Rma::quiet`] on `ctx` returns.
    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()>;

    /// Performs an atomic on the `width`-wide word at `offset` in `pe`'s
    /// segment and returns the old value (for non-fetching ops the return
    /// value is unspecified). Atomic with respect to every other atomic on
    /// that word from any PE, through any conduit of the job (§4).
    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64>;

    /// Puts `src` at `offset` on `pe`, then updates the 64-bit signal word at
    /// `sig_offset` on `pe` so that a PE that observes the signal also
    /// observes the data.
    #[allow(clippy::too_many_arguments)]
    fn put_signal(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: &[u8],
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()>;

    /// Blocking put whose source is named by address, for a caller that may
    /// not form a Rust reference to it (the C ABI: a source that may be
    /// symmetric memory, which another PE, thread or progress thread may
    /// write while the put reads it): as [`Rma::put`] of the `len` bytes at
    /// `src`. The conduit reads the source with raw pointers only.
    ///
    /// The default copies the source into a private buffer
    /// ([`crate::segmem::copy_shared`]'s accesses) and puts that; conduits
    /// override it to read the source in place.
    ///
    /// # Safety
    /// `src..src+len` is valid for reads for the call.
    unsafe fn put_from(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        let private = unsafe { private_copy(src, len) };
        self.put(ctx, pe, offset, &private)
    }

    /// Blocking get into memory named by address, for a caller that may not
    /// form a Rust reference to it (the C ABI: a destination that may be
    /// symmetric memory): as [`Rma::get`] into the `len` bytes at `dst`,
    /// written with raw pointers only.
    ///
    /// The default gets into a private buffer and copies it out
    /// ([`crate::segmem::copy_shared`]'s accesses); conduits override it
    /// to write the destination in place.
    ///
    /// # Safety
    /// `dst..dst+len` is valid for writes for the call.
    unsafe fn get_into(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        let mut private = vec![0u8; len];
        self.get(ctx, pe, offset, &mut private)?;
        // SAFETY: the caller's contract; `private` is this call's own.
        unsafe { crate::segmem::copy_shared(private.as_ptr(), dst, len) };
        Ok(())
    }

    /// [`Rma::put_signal`] whose source is named by address, as
    /// [`Rma::put_from`] is [`Rma::put`]'s. The default puts a private copy.
    ///
    /// # Safety
    /// `src..src+len` is valid for reads for the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn put_signal_from(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        let private = unsafe { private_copy(src, len) };
        self.put_signal(ctx, pe, offset, &private, sig_offset, sig_op, sig_value)
    }

    /// Orders: puts and atomics issued on `ctx` before the fence to a given
    /// PE are applied before those issued on `ctx` after it to the same PE.
    fn fence(&self, ctx: CtxId) -> Result<()>;

    /// Waits until every put, get and atomic issued on `ctx` is complete at
    /// its target, and reports the first error of a non-blocking one.
    fn quiet(&self, ctx: CtxId) -> Result<()>;

    /// Whether this conduit applies atomics at a target as CPU atomic
    /// instructions on the target's mapped segment, so that they are atomic
    /// with respect to another conduit's CPU atomics on the same word
    /// (`spec/conduit.md` §10.5). `false` (the default) for atomics applied
    /// elsewhere: a board's AMO unit, a NIC.
    fn cpu_atomics(&self) -> bool {
        false
    }
}

/// A private copy of the `len` bytes at `src`, read with relaxed atomic
/// accesses (`src` may be segment memory another thread writes).
///
/// # Safety
/// `src..src+len` is valid for reads for the call.
unsafe fn private_copy(src: *const u8, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: the caller's contract; `v` is a fresh buffer of `len` bytes.
    unsafe { crate::segmem::copy_shared(src, v.as_mut_ptr(), len) };
    v
}

/// Active messages and progress (`spec/conduit.md` §5–§6).
pub trait ActiveMessages: Segments {
    /// Sends an active-message request to `pe`. For Long, `payload` is
    /// written at `offset` in `pe`'s segment before the handler runs.
    fn am_request(
        &self,
        pe: usize,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: usize,
    ) -> Result<()>;

    /// Registers a user AM handler (`gasnet_core::handlers::FIRST_USER..`).
    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()>;

    /// Registers a system handler (`1..FIRST_USER`), for the runtime layers.
    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()>;

    /// Serves pending incoming messages and checks peer liveness.
    fn poll(&self) -> Result<()>;

    /// As [`ActiveMessages::poll`], and says whether it served anything
    /// (a datagram, a request, a completion). A wait of the layers above
    /// that finds its conduit busy keeps spinning instead of yielding the
    /// CPU between polls (`spec/conduit.md` §6), so a PE that waits while
    /// it serves a peer's requests answers each at once. The default says
    /// nothing was served: conduits whose poll is a few loads gain nothing
    /// from it.
    fn poll_served(&self) -> Result<bool> {
        self.poll().map(|()| false)
    }

    /// Whether this PE's board runs requests to handlers
    /// `gasnet_core::handlers::FIRST_COMPUTE..=255` on an on-board compute
    /// core (`CAPS.COMPUTE`, `spec/registers.md` §4.1) instead of
    /// delivering them to its host. No conduit but fpga has boards.
    fn compute_cores(&self) -> bool {
        false
    }
}

/// The bootstrap services of an attached job (`spec/conduit.md` §8): for
/// setting up the runtime, not fast paths.
pub trait JobBootstrap: Segments {
    /// The bootstrap barrier over all PEs (not the collective one).
    fn barrier(&self) -> Result<()>;

    /// The bootstrap all-gather: every PE contributes `mine` (at most
    /// 1 KiB) and receives every PE's contribution, indexed by rank.
    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;
}

/// Joining and leaving a job (`spec/conduit.md` §1, §7, §9).
pub trait Lifecycle: Sized {
    /// Attaches PE `job.rank` to the job `job` describes, with the segment
    /// `segment` asks for, configured by `settings` (the conduit reads no
    /// environment). Collective over the job.
    fn attach(
        job: &JobEnv,
        segment: SegmentRequest,
        settings: &crate::config::Settings,
    ) -> Result<Self>;

    /// Leaves the job: a barrier with every PE, then this PE is marked as
    /// finalized. Collective; calling it again does nothing.
    fn finalize(&self) -> Result<()>;

    /// Ends the whole job with `status`, from any PE, without a collective.
    fn global_exit(&self, status: i32) -> !;

    /// What this PE's conduit uses, in one line, for `SHMEM_INFO` (a
    /// provider, an address, a board); empty when there is nothing to say.
    fn describe(&self) -> String {
        String::new()
    }
}

/// The whole contract: what the layers above need from a conduit.
pub trait Conduit: Segments + Rma + ActiveMessages + JobBootstrap + Lifecycle {}

impl<T: Segments + Rma + ActiveMessages + JobBootstrap + Lifecycle> Conduit for T {}
