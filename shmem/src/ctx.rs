//! Communication contexts and thread levels (OpenSHMEM 1.5).
//!
//! A [`Ctx`] is a stream of puts, gets, atomics and puts-with-signal with
//! its own `quiet` and `fence`. It is created on the world team
//! ([`Shmem::create_ctx`]) or on any team ([`Team::create_ctx`]), whose
//! numbering its PE arguments use, and destroyed (after a quiet) when
//! dropped. Its calls are those of the default context: blocking
//! [`Ctx::put`], [`Ctx::get`], [`Ctx::p`], [`Ctx::g`], the atomics and
//! [`Ctx::put_signal`], and non-blocking puts and gets inside
//! [`Ctx::nbi`], a scope ([`crate::NbiScope`]) that ends with the
//! context's own quiet. All of them take the one operation path of the
//! crate, with the context's id.
//!
//! Options ([`CtxOptions`]):
//! - `SERIALIZED`: the program promises not to use the context from two
//!   threads at once;
//! - `PRIVATE`: only the creating thread uses it — enforced: a call from
//!   another thread is an error;
//! - `NOSTORE`: no puts or non-fetching atomics — enforced: they are errors,
//!   and `quiet`/`fence` have nothing to complete.
//!
//! Each context is a conduit context ([`conduits::CtxId`], created with it
//! and destroyed when it goes): its `quiet` waits for its own operations
//! only (`ipv6` and `fpga` count them per context; on `smp`, where every
//! operation completes at once, it is a memory fence), so one thread's
//! context need not wait for another's slow target. A context also tracks
//! whether it has issued anything that `quiet` must complete; one with
//! nothing pending quiets for free.
//!
//! The put path of a context takes no lock in shmem: it checks the PE
//! (and, for `PRIVATE` contexts, compares the calling thread's id with the
//! creator's; nothing is locked), calls the conduit with the context's id,
//! and sets the context's own pending flag with a relaxed store. Nor does
//! the conduit wait for a lock on it (`spec/conduit.md` §3): `smp` stores
//! straight into the peer's segment; `ipv6`, `fpga` and `ofi` try their
//! engine's lock and, when another thread holds it, leave the command in
//! the context's submission queue for that thread to send. So threads
//! that each use their own context at `MULTIPLE` do not serialize on a
//! put; the default context's operations and gets do take the engine's
//! lock.
//!
//! # Threads
//!
//! [`crate::init_thread`] asks for a [`ThreadLevel`]; every level up to
//! `MULTIPLE` is provided. At `MULTIPLE` any thread may call any routine:
//! the conduit's operations are thread-safe, the heap and each team's
//! collective state are behind locks. Collectives on one team must still
//! be called by one thread at a time per PE (OpenSHMEM's rule; concurrent
//! calls are serialized, not interleaved).
//!
//! ```no_run
//! use shmem::{CtxOptions, ThreadLevel};
//! let (sh, provided) = shmem::init_thread(ThreadLevel::Multiple)?;
//! assert_eq!(provided, ThreadLevel::Multiple);
//! let x = sh.calloc::<u64>(4)?;
//! std::thread::scope(|s| {
//!     for t in 0..4 {
//!         let (sh, x) = (&sh, &x);
//!         s.spawn(move || -> Result<(), shmem::ShmemError> {
//!             let ctx = sh.create_ctx(CtxOptions::PRIVATE)?;
//!             ctx.atomic_add(&x, t, 1, 0)?;
//!             ctx.quiet()
//!         });
//!     }
//! });
//! sh.barrier_all()?;
//! # Ok::<(), shmem::ShmemError>(())
//! ```

use crate::Shmem;
pub use crate::config::ThreadLevel;
use crate::error::{Result, ShmemError};
pub use crate::op::CtxOptions;
use crate::op::{CtxState, Op};
use crate::pod::{AmoElem, AmoInt, Pod, bytes_of, bytes_of_mut};
use crate::runtime::Runtime;
use crate::sym::SymVec;
use crate::team::Team;
use conduits::prelude::*;
use conduits::{AmoOp, SignalOp};
use std::sync::atomic::Ordering;

/// A communication context (`shmem_ctx_t`); dropping it quiets and
/// destroys it (`shmem_ctx_destroy`).
pub struct Ctx<'a> {
    rt: &'a Runtime,
    st: CtxState,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("options", &self.st.options)
            .field("team_slot", &self.st.team.slot)
            .finish()
    }
}

impl Shmem {
    /// `shmem_ctx_create`: a context on the world team.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let ctx = sh.create_ctx(shmem::CtxOptions::SERIALIZED)?;
    /// let x = sh.calloc::<u32>(1)?;
    /// ctx.p(&x, 0, 7, 0)?;
    /// ctx.quiet()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn create_ctx(&self, options: CtxOptions) -> Result<Ctx<'_>> {
        let rt = self.rt();
        let st = CtxState::new(rt, "shmem_ctx_create", rt.pool.world.clone(), options, None)?;
        Ok(Ctx { rt, st })
    }

    /// `SHMEM_CTX_DEFAULT`: a context with no options on the world team,
    /// through which the calls of [`SymVec`] also go.
    pub fn ctx_default(&self) -> Ctx<'_> {
        let rt = self.rt();
        let st = CtxState::new(
            rt,
            "shmem_ctx_default",
            rt.pool.world.clone(),
            CtxOptions::NONE,
            Some(CtxId::DEFAULT),
        )
        .expect("the default context needs no conduit call");
        Ctx { rt, st }
    }

    /// `shmem_query_thread`: the thread level provided at start-up.
    pub fn query_thread(&self) -> ThreadLevel {
        self.rt().thread_level()
    }
}

impl Team<'_> {
    /// `shmem_team_create_ctx`: a context whose PE arguments are numbered
    /// in this team.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let w = sh.team_world();
    /// let ctx = w.create_ctx(shmem::CtxOptions::NONE)?;
    /// assert_eq!(ctx.n_pes(), w.n_pes());
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn create_ctx(&self, options: CtxOptions) -> Result<Ctx<'_>> {
        const CALL: &str = "shmem_team_create_ctx";
        if self.st.destroyed.load(Ordering::Acquire) {
            return Err(ShmemError::Invalid {
                pe: self.rt.my_pe(),
                call: CALL,
                reason: "the team was destroyed".to_string(),
            });
        }
        let st = CtxState::new(self.rt, CALL, self.st.clone(), options, None)?;
        Ok(Ctx { rt: self.rt, st })
    }
}

macro_rules! ctx_fetching {
    ($($(#[$d:meta])* $name:ident $op:ident $call:literal),*) => {$(
        $(#[$d])*
        pub fn $name<T: AmoInt>(&self, x: &SymVec<'_, T>, index: usize, value: T, pe: usize) -> Result<T> {
            self.amo(x, index, pe, AmoOp::$op, value, T::from_bits(0), $call, false)
        }
    )*};
}

macro_rules! ctx_nonfetching {
    ($($(#[$d:meta])* $name:ident $op:ident $call:literal),*) => {$(
        $(#[$d])*
        pub fn $name<T: AmoInt>(&self, x: &SymVec<'_, T>, index: usize, value: T, pe: usize) -> Result<()> {
            self.amo(x, index, pe, AmoOp::$op, value, T::from_bits(0), $call, true).map(drop)
        }
    )*};
}

impl<'a> Ctx<'a> {
    /// The options it was created with.
    pub fn options(&self) -> CtxOptions {
        self.st.options
    }

    /// The number of PEs of its team.
    pub fn n_pes(&self) -> usize {
        self.st.team.size()
    }

    /// This PE's number in its team.
    pub fn my_pe(&self) -> usize {
        self.st.team.me
    }

    #[inline(always)]
    fn op(&self) -> Op<'_> {
        Op::on(self.rt, &self.st)
    }

    /// The runtime and the context's state (for [`Ctx::nbi`]).
    pub(crate) fn parts(&self) -> (&'a Runtime, &CtxState) {
        (self.rt, &self.st)
    }

    /// `shmem_ctx_put`: as [`SymVec::put`] on this context (`pe` in the
    /// context's team).
    #[inline]
    pub fn put<T: Pod>(
        &self,
        dst: &SymVec<'_, T>,
        start: usize,
        src: &[T],
        pe: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_ctx_put";
        let off = dst.range(start, src.len(), CALL)?;
        self.op().put(CALL, pe, off, bytes_of(src))
    }

    /// `shmem_ctx_p`: writes one element.
    #[inline]
    pub fn p<T: Pod>(&self, dst: &SymVec<'_, T>, index: usize, value: T, pe: usize) -> Result<()> {
        self.put(dst, index, std::slice::from_ref(&value), pe)
    }

    /// `shmem_ctx_get`: as [`SymVec::get`] on this context.
    #[inline]
    pub fn get<T: Pod>(
        &self,
        src: &SymVec<'_, T>,
        start: usize,
        dst: &mut [T],
        pe: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_ctx_get";
        let off = src.range(start, dst.len(), CALL)?;
        self.op().get(CALL, pe, off, bytes_of_mut(dst))
    }

    /// `shmem_ctx_g`: reads one element.
    #[inline]
    pub fn g<T: Pod>(&self, src: &SymVec<'_, T>, index: usize, pe: usize) -> Result<T> {
        // SAFETY: every bit pattern, zero included, is a valid `T` (Pod).
        let mut v: [T; 1] = [unsafe { std::mem::zeroed() }];
        self.get(src, index, &mut v, pe)?;
        Ok(v[0])
    }

    /// `shmem_ctx_put_signal`: as [`SymVec::put_signal`] on this context:
    /// `src` over elements `start..` of `pe`'s copy of `dst`, then signal
    /// word `sig_index` of `pe`'s copy of `sig` updated with `op` and
    /// `value`, so that a PE that sees the signal sees the data (`pe` in
    /// the context's team). Completed by this context's quiet.
    ///
    /// ```no_run
    /// use shmem::{Cmp, CtxOptions, SignalOp};
    /// let sh = shmem::init()?;
    /// let (me, n) = (sh.my_pe(), sh.n_pes());
    /// let (data, sig) = (sh.calloc::<u32>(4)?, sh.calloc::<u64>(1)?);
    /// let ctx = sh.create_ctx(CtxOptions::NONE)?;
    /// ctx.put_signal(&data, 0, &[me as u32; 4], &sig, 0, SignalOp::Add, 1, (me + 1) % n)?;
    /// sig.signal_wait_until(0, Cmp::Eq, 1)?;
    /// assert_eq!(data.to_vec(), [((me + n - 1) % n) as u32; 4]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn put_signal<T: Pod>(
        &self,
        dst: &SymVec<'_, T>,
        start: usize,
        src: &[T],
        sig: &SymVec<'_, u64>,
        sig_index: usize,
        op: SignalOp,
        value: u64,
        pe: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_ctx_put_signal";
        let off = dst.range(start, src.len(), CALL)?;
        let sig_off = sig.range(sig_index, 1, CALL)?;
        self.op()
            .put_signal(CALL, pe, off, bytes_of(src), sig_off, op, value)
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn amo<T: AmoElem>(
        &self,
        x: &SymVec<'_, T>,
        index: usize,
        pe: usize,
        op: AmoOp,
        operand: T,
        compare: T,
        call: &'static str,
        store: bool,
    ) -> Result<T> {
        let off = x.range(index, 1, call)?;
        self.op()
            .atomic(
                call,
                pe,
                off,
                op,
                T::WIDTH,
                operand.to_bits(),
                compare.to_bits(),
                store,
            )
            .map(T::from_bits)
    }

    /// `shmem_ctx_atomic_fetch`.
    pub fn atomic_fetch<T: AmoElem>(
        &self,
        x: &SymVec<'_, T>,
        index: usize,
        pe: usize,
    ) -> Result<T> {
        let z = T::from_bits(0);
        self.amo(
            x,
            index,
            pe,
            AmoOp::Fetch,
            z,
            z,
            "shmem_ctx_atomic_fetch",
            false,
        )
    }

    /// `shmem_ctx_atomic_set`.
    pub fn atomic_set<T: AmoElem>(
        &self,
        x: &SymVec<'_, T>,
        index: usize,
        value: T,
        pe: usize,
    ) -> Result<()> {
        let z = T::from_bits(0);
        self.amo(
            x,
            index,
            pe,
            AmoOp::Set,
            value,
            z,
            "shmem_ctx_atomic_set",
            true,
        )
        .map(drop)
    }

    /// `shmem_ctx_atomic_swap`.
    pub fn atomic_swap<T: AmoElem>(
        &self,
        x: &SymVec<'_, T>,
        index: usize,
        value: T,
        pe: usize,
    ) -> Result<T> {
        let z = T::from_bits(0);
        self.amo(
            x,
            index,
            pe,
            AmoOp::Swap,
            value,
            z,
            "shmem_ctx_atomic_swap",
            false,
        )
    }

    /// `shmem_ctx_atomic_compare_swap`.
    pub fn atomic_compare_swap<T: AmoInt>(
        &self,
        x: &SymVec<'_, T>,
        index: usize,
        cond: T,
        value: T,
        pe: usize,
    ) -> Result<T> {
        self.amo(
            x,
            index,
            pe,
            AmoOp::CompareSwap,
            value,
            cond,
            "shmem_ctx_atomic_compare_swap",
            false,
        )
    }

    /// `shmem_ctx_atomic_inc`.
    pub fn atomic_inc<T: AmoInt>(&self, x: &SymVec<'_, T>, index: usize, pe: usize) -> Result<()> {
        self.atomic_add(x, index, T::ONE, pe)
    }

    /// `shmem_ctx_atomic_fetch_inc`.
    pub fn atomic_fetch_inc<T: AmoInt>(
        &self,
        x: &SymVec<'_, T>,
        index: usize,
        pe: usize,
    ) -> Result<T> {
        self.atomic_fetch_add(x, index, T::ONE, pe)
    }

    ctx_fetching!(
        /// `shmem_ctx_atomic_fetch_add`.
        atomic_fetch_add FetchAdd "shmem_ctx_atomic_fetch_add",
        /// `shmem_ctx_atomic_fetch_and`.
        atomic_fetch_and FetchAnd "shmem_ctx_atomic_fetch_and",
        /// `shmem_ctx_atomic_fetch_or`.
        atomic_fetch_or FetchOr "shmem_ctx_atomic_fetch_or",
        /// `shmem_ctx_atomic_fetch_xor`.
        atomic_fetch_xor FetchXor "shmem_ctx_atomic_fetch_xor"
    );
    ctx_nonfetching!(
        /// `shmem_ctx_atomic_add`.
        atomic_add Add "shmem_ctx_atomic_add",
        /// `shmem_ctx_atomic_and`.
        atomic_and And "shmem_ctx_atomic_and",
        /// `shmem_ctx_atomic_or`.
        atomic_or Or "shmem_ctx_atomic_or",
        /// `shmem_ctx_atomic_xor`.
        atomic_xor Xor "shmem_ctx_atomic_xor"
    );

    /// `shmem_ctx_quiet`: every put and atomic issued on this context is
    /// complete at its target on return (free when none is pending).
    /// Operations of other contexts are not waited for.
    pub fn quiet(&self) -> Result<()> {
        self.op().quiet("shmem_ctx_quiet")
    }

    /// `shmem_ctx_fence`: puts and atomics of this context to a PE issued
    /// before the fence are applied before those issued after it.
    pub fn fence(&self) -> Result<()> {
        self.op().fence("shmem_ctx_fence")
    }

    /// `shmem_ctx_destroy`, reporting errors: quiet, then the context is
    /// gone. Dropping does the same and prints errors.
    pub fn destroy(mut self) -> Result<()> {
        self.st.finish(self.rt, "shmem_ctx_destroy")
    }
}

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.st.finish(self.rt, "shmem_ctx_destroy") {
            conduits::report!("{e}");
        }
    }
}
