//! The one operation path.
//!
//! Every put, get, atomic, put-with-signal, quiet and fence of the Rust API
//! ([`crate::SymVec`]'s methods, [`crate::Ctx`], [`crate::NbiScope`]) and of
//! the C ABI (`shmem_put`, `shmem_ctx_int_atomic_add`, ...) is an [`Op`]: a
//! runtime and a context. Blocking calls without a context use the default
//! context ([`Op::default`]). The checks are written here once:
//!
//! - the target PE: in range, translated from the context's team to a world
//!   rank ([`Op::target`]);
//! - the context's rules: a `PRIVATE` context used from its creating thread
//!   only, no stores on a `NOSTORE` context;
//! - atomics and signals act on naturally aligned words;
//! - no call from inside an active-message handler ([`crate::am`]);
//! - element ranges of typed objects ([`elem_range`]); the C ABI's addresses
//!   are resolved by [`Runtime::sym_offset`].
//!
//! Then the conduit is called with the context's [`CtxId`]. Rust callers
//! hand it slices of their own memory; the C ABI names its buffers by
//! address (`put_from`, `get_into`, `put_signal_from`), since a C buffer
//! may be symmetric memory that no Rust reference may cover. The default
//! context's path is a PE check and the conduit call: nothing else is
//! added to it.
//!
//! No lock is taken on this path for any context: a context's state is its
//! conduit id, its team, its options, its owner thread (compared, not
//! locked) and one relaxed flag of pending stores. Below it, a put,
//! non-fetching atomic or put-with-signal on a context other than the
//! default one does not wait for a conduit lock either: `ipv6`, `fpga` and
//! `ofi` queue the command per context when another thread holds their
//! engine (`spec/conduit.md` §3).

use crate::error::{Result, ShmemError};
use crate::runtime::Runtime;
use crate::team::TeamState;
use conduits::prelude::*;
use conduits::{AmoOp, AmoWidth, SignalOp};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;

/// Context options (`SHMEM_CTX_*`), combined with `|`.
///
/// ```
/// use shmem::CtxOptions;
/// let o = CtxOptions::PRIVATE | CtxOptions::NOSTORE;
/// assert!(o.contains(CtxOptions::NOSTORE) && !o.contains(CtxOptions::SERIALIZED));
/// assert_eq!(CtxOptions::from_bits(o.bits()), Some(o));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CtxOptions(u32);

impl CtxOptions {
    /// No options.
    pub const NONE: CtxOptions = CtxOptions(0);
    /// `SHMEM_CTX_SERIALIZED`.
    pub const SERIALIZED: CtxOptions = CtxOptions(1);
    /// `SHMEM_CTX_PRIVATE`.
    pub const PRIVATE: CtxOptions = CtxOptions(2);
    /// `SHMEM_CTX_NOSTORE`.
    pub const NOSTORE: CtxOptions = CtxOptions(4);

    /// The bits (as `shmem.h` will define them).
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// The options with these bits, or `None` for unknown bits.
    pub const fn from_bits(bits: u32) -> Option<CtxOptions> {
        if bits & !7 == 0 {
            Some(CtxOptions(bits))
        } else {
            None
        }
    }

    /// Whether every option of `other` is set.
    pub const fn contains(self, other: CtxOptions) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for CtxOptions {
    type Output = CtxOptions;
    fn bitor(self, rhs: CtxOptions) -> CtxOptions {
        CtxOptions(self.0 | rhs.0)
    }
}

/// The state of a context other than the default one: what [`crate::Ctx`]
/// and a C `shmem_ctx_t` hold.
pub(crate) struct CtxState {
    /// The conduit context its operations name.
    pub(crate) id: CtxId,
    /// Its key in [`Runtime::contexts`] (0: the default context, not
    /// listed).
    key: u64,
    /// The team whose numbering its PE arguments use.
    pub(crate) team: Arc<TeamState>,
    pub(crate) options: CtxOptions,
    /// The creating thread, for `PRIVATE` contexts.
    owner: Option<ThreadId>,
    /// Whether a store was issued since the last quiet.
    pending: AtomicBool,
}

impl CtxState {
    /// A context on `team`: a new conduit context, or the default one when
    /// `id` is given.
    pub(crate) fn new(
        rt: &Runtime,
        call: &'static str,
        team: Arc<TeamState>,
        options: CtxOptions,
        id: Option<CtxId>,
    ) -> Result<CtxState> {
        let (id, key) = match id {
            Some(id) => (id, 0),
            None => {
                let id = rt.conduit.ctx_create().map_err(|e| rt.err(call, e))?;
                (id, rt.contexts.add(id))
            }
        };
        Ok(CtxState {
            id,
            key,
            team,
            options,
            owner: options
                .contains(CtxOptions::PRIVATE)
                .then(|| std::thread::current().id()),
            pending: AtomicBool::new(false),
        })
    }

    /// Checks the caller's thread and the store rule; returns the world
    /// rank of team PE `pe`.
    #[inline]
    fn target(&self, rt: &Runtime, call: &'static str, pe: usize, store: bool) -> Result<usize> {
        if let Some(owner) = self.owner
            && std::thread::current().id() != owner
        {
            return Err(invalid(
                rt,
                call,
                "a SHMEM_CTX_PRIVATE context used from another thread".to_string(),
            ));
        }
        if store && self.options.contains(CtxOptions::NOSTORE) {
            return Err(invalid(
                rt,
                call,
                "a store on a SHMEM_CTX_NOSTORE context".to_string(),
            ));
        }
        match self.team.members.get(pe) {
            Some(&w) => Ok(w),
            None => Err(team_pe_error(rt, call, pe, self.team.size())),
        }
    }

    /// Whether this thread may use the context (any thread, unless it is
    /// `PRIVATE`).
    pub(crate) fn owned_here(&self) -> bool {
        self.owner
            .is_none_or(|owner| std::thread::current().id() == owner)
    }

    #[inline(always)]
    fn issued(&self) {
        if !self.pending.load(Ordering::Relaxed) {
            self.pending.store(true, Ordering::Relaxed);
        }
    }

    /// Completes the context's operations and frees its conduit context
    /// (the default context only quiets). Idempotent.
    pub(crate) fn finish(&mut self, rt: &Runtime, call: &'static str) -> Result<()> {
        let pending = self.pending.swap(false, Ordering::AcqRel);
        let id = std::mem::replace(&mut self.id, CtxId::DEFAULT);
        let r = if id != CtxId::DEFAULT {
            rt.contexts.destroy(rt, self.key, id)
        } else if pending {
            rt.conduit.quiet(id)
        } else {
            Ok(())
        };
        r.map_err(|e| rt.err(call, e))
    }
}

#[cold]
fn invalid(rt: &Runtime, call: &'static str, reason: String) -> ShmemError {
    ShmemError::Invalid {
        pe: rt.my_pe(),
        call,
        reason,
    }
}

/// The error of a PE argument outside the context's team; a C `int`
/// reaches here sign-extended, and is shown negative.
#[cold]
fn team_pe_error(rt: &Runtime, call: &'static str, pe: usize, size: usize) -> ShmemError {
    invalid(
        rt,
        call,
        format!(
            "target PE {} out of range (the context's team has {size} PEs)",
            pe as isize
        ),
    )
}

/// A word an atomic, a signal or a wait acts on: a segment offset (every
/// segment base is aligned beyond any word, `conduits::SEGMENT_ALIGN`, so
/// an offset's alignment is its address's) or an address in this process
/// (a C program's wait word).
#[derive(Clone, Copy, Debug)]
pub(crate) enum WordAt {
    /// Segment offset of this PE's copy.
    Seg(usize),
    /// An address in this process.
    Addr(usize),
}

/// The one alignment check of the runtime: atomics, signals and waits act
/// on naturally aligned words of `width` bytes (and an address is not
/// null).
#[inline(always)]
pub(crate) fn check_aligned(
    rt: &Runtime,
    call: &'static str,
    at: WordAt,
    width: usize,
) -> Result<()> {
    let fine = match at {
        WordAt::Seg(off) => off.is_multiple_of(width),
        WordAt::Addr(a) => a != 0 && a.is_multiple_of(width),
    };
    if fine {
        Ok(())
    } else {
        Err(misaligned(rt, call, at, width))
    }
}

#[cold]
fn misaligned(rt: &Runtime, call: &'static str, at: WordAt, width: usize) -> ShmemError {
    let addr = match at {
        WordAt::Seg(off) => rt.local_addr(off) as usize,
        WordAt::Addr(a) => a,
    };
    let reason = if addr == 0 {
        format!("address 0x0 is null, not a {width}-byte word")
    } else {
        format!(
            "address {addr:#x} is not aligned to {width} bytes (atomics, signals and waits act on \
             naturally aligned words)"
        )
    };
    invalid(rt, call, reason)
}

/// Segment offset of elements `start..start + count` of a typed object of
/// `len` elements of `elem` bytes at segment offset `base`, or an error
/// naming the call and the range.
#[inline(always)]
pub(crate) fn elem_range(
    rt: &Runtime,
    call: &'static str,
    base: usize,
    len: usize,
    elem: usize,
    start: usize,
    count: usize,
) -> Result<usize> {
    if start <= len && count <= len - start {
        Ok(base + start * elem)
    } else {
        Err(range_error(rt, call, start, count, len))
    }
}

#[cold]
fn range_error(
    rt: &Runtime,
    call: &'static str,
    start: usize,
    count: usize,
    len: usize,
) -> ShmemError {
    ShmemError::OutOfBounds {
        pe: rt.my_pe(),
        call,
        start,
        count,
        len,
    }
}

/// One operation's runtime and context.
#[derive(Clone, Copy)]
pub(crate) struct Op<'a> {
    pub(crate) rt: &'a Runtime,
    /// `None`: the default context, on the world team.
    ctx: Option<&'a CtxState>,
}

impl<'a> Op<'a> {
    /// On the default context (`SHMEM_CTX_DEFAULT`): PEs are world ranks.
    #[inline(always)]
    pub(crate) fn default(rt: &'a Runtime) -> Op<'a> {
        Op { rt, ctx: None }
    }

    /// On context `ctx`.
    #[inline(always)]
    pub(crate) fn on(rt: &'a Runtime, ctx: &'a CtxState) -> Op<'a> {
        Op { rt, ctx: Some(ctx) }
    }

    #[inline(always)]
    fn id(&self) -> CtxId {
        match self.ctx {
            None => CtxId::DEFAULT,
            Some(c) => c.id,
        }
    }

    /// The world rank of the context's PE `pe`, after the context's rules
    /// (owner thread, `NOSTORE` when `store`).
    #[inline(always)]
    pub(crate) fn target(&self, call: &'static str, pe: usize, store: bool) -> Result<usize> {
        self.rt.not_in_handler(call)?;
        match self.ctx {
            None => self.rt.check_pe(pe, call).map(|()| pe),
            Some(c) => c.target(self.rt, call, pe, store),
        }
    }

    #[inline(always)]
    fn issued(&self) {
        if let Some(c) = self.ctx {
            c.issued();
        }
    }

    /// `put`: `src` to segment offset `off` of `pe`.
    #[inline(always)]
    pub(crate) fn put(&self, call: &'static str, pe: usize, off: usize, src: &[u8]) -> Result<()> {
        let w = self.target(call, pe, true)?;
        self.rt
            .conduit
            .put(self.id(), w, off, src)
            .map_err(|e| self.rt.err(call, e))?;
        self.issued();
        Ok(())
    }

    /// `put_nbi`: starts copying `len` bytes at `src` to segment offset
    /// `off` of `pe`.
    ///
    /// # Safety
    /// `src..src + len` stays readable and unmodified until the context's
    /// next quiet.
    #[inline(always)]
    pub(crate) unsafe fn put_nbi(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let w = self.target(call, pe, true)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.rt.conduit.put_nbi(self.id(), w, off, src, len) }
            .map_err(|e| self.rt.err(call, e))?;
        self.issued();
        Ok(())
    }

    /// `put` of the `len` bytes at `src`, named by address: the C ABI's
    /// form, whose source may be symmetric memory that a peer, another
    /// thread or a progress thread writes meanwhile, so that no Rust
    /// reference to it may be formed. The conduit reads it with raw
    /// pointers only ([`Rma::put_from`]).
    ///
    /// # Safety
    /// `src..src + len` is valid for reads for the call.
    #[inline(always)]
    pub(crate) unsafe fn put_from(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let w = self.target(call, pe, true)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.rt.conduit.put_from(self.id(), w, off, src, len) }
            .map_err(|e| self.rt.err(call, e))?;
        self.issued();
        Ok(())
    }

    /// `get` into the `len` bytes at `dst`, named by address: the C ABI's
    /// form (as [`Op::put_from`]; [`Rma::get_into`]).
    ///
    /// # Safety
    /// `dst..dst + len` is valid for writes for the call.
    #[inline(always)]
    pub(crate) unsafe fn get_into(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        let w = self.target(call, pe, false)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.rt.conduit.get_into(self.id(), w, off, dst, len) }
            .map_err(|e| self.rt.err(call, e))
    }

    /// `get`: segment offset `off` of `pe` into `dst`.
    #[inline(always)]
    pub(crate) fn get(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        let w = self.target(call, pe, false)?;
        self.rt
            .conduit
            .get(self.id(), w, off, dst)
            .map_err(|e| self.rt.err(call, e))
    }

    /// `get_nbi`: starts copying `len` bytes at segment offset `off` of
    /// `pe` to `dst`.
    ///
    /// # Safety
    /// `dst..dst + len` stays writable, and neither read nor written by
    /// anything else, until the context's next quiet.
    #[inline(always)]
    pub(crate) unsafe fn get_nbi(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        let w = self.target(call, pe, false)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { self.rt.conduit.get_nbi(self.id(), w, off, dst, len) }
            .map_err(|e| self.rt.err(call, e))?;
        self.issued();
        Ok(())
    }

    /// An atomic on the `width` word at segment offset `off` of `pe`;
    /// returns the old value. `store`: the operation writes (everything but
    /// fetch), which a `NOSTORE` context refuses for non-fetching forms.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn atomic(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
        store: bool,
    ) -> Result<u64> {
        let w = self.target(call, pe, store)?;
        check_aligned(self.rt, call, WordAt::Seg(off), width.bytes())?;
        let r = self
            .rt
            .conduit
            .atomic(self.id(), w, off, op, width, operand, compare)
            .map_err(|e| self.rt.err(call, e))?;
        if store {
            self.issued();
        }
        Ok(r)
    }

    /// `put_signal`: `src` to offset `off` of `pe`, then the 64-bit signal
    /// at `sig_off` updated with `op` and `value`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn put_signal(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        src: &[u8],
        sig_off: usize,
        op: SignalOp,
        value: u64,
    ) -> Result<()> {
        let w = self.target(call, pe, true)?;
        check_aligned(self.rt, call, WordAt::Seg(sig_off), 8)?;
        self.rt
            .conduit
            .put_signal(self.id(), w, off, src, sig_off, op, value)
            .map_err(|e| self.rt.err(call, e))?;
        self.issued();
        Ok(())
    }

    /// `put_signal` of the `len` bytes at `src`, named by address: the C
    /// ABI's form (as [`Op::put_from`]; [`Rma::put_signal_from`]).
    ///
    /// # Safety
    /// `src..src + len` is valid for reads for the call.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) unsafe fn put_signal_from(
        &self,
        call: &'static str,
        pe: usize,
        off: usize,
        src: *const u8,
        len: usize,
        sig_off: usize,
        op: SignalOp,
        value: u64,
    ) -> Result<()> {
        let w = self.target(call, pe, true)?;
        check_aligned(self.rt, call, WordAt::Seg(sig_off), 8)?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            self.rt
                .conduit
                .put_signal_from(self.id(), w, off, src, len, sig_off, op, value)
        }
        .map_err(|e| self.rt.err(call, e))?;
        self.issued();
        Ok(())
    }

    /// `quiet`: every store of the context is complete at its target.
    /// Free on a context that issued nothing since its last quiet.
    /// Inlined: on smp the default context's quiet is a fence and a look
    /// at the inbound queue, cheaper than a call that saves registers.
    #[inline(always)]
    pub(crate) fn quiet(&self, call: &'static str) -> Result<()> {
        self.rt.not_in_handler(call)?;
        match self.ctx {
            None => self.rt.quiet(call),
            Some(c) => self.ctx_quiet(c, call),
        }
    }

    /// `quiet` on a context other than the default one.
    fn ctx_quiet(&self, c: &CtxState, call: &'static str) -> Result<()> {
        c.target(self.rt, call, c.team.me, false)?;
        if c.pending.swap(false, Ordering::AcqRel) {
            self.rt
                .conduit
                .quiet(c.id)
                .map_err(|e| self.rt.err(call, e))?;
        }
        Ok(())
    }

    /// `fence`: stores of the context to a PE issued before are applied
    /// before those issued after.
    #[inline(always)]
    pub(crate) fn fence(&self, call: &'static str) -> Result<()> {
        self.rt.not_in_handler(call)?;
        match self.ctx {
            None => self.rt.fence(call),
            Some(c) => self.ctx_fence(c, call),
        }
    }

    /// `fence` on a context other than the default one.
    fn ctx_fence(&self, c: &CtxState, call: &'static str) -> Result<()> {
        c.target(self.rt, call, c.team.me, false)?;
        if c.pending.load(Ordering::Acquire) {
            self.rt
                .conduit
                .fence(c.id)
                .map_err(|e| self.rt.err(call, e))?;
        }
        Ok(())
    }
}
