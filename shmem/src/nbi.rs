//! Non-blocking put and get.
//!
//! A non-blocking call returns before its data has moved, so the buffer it
//! reads (put) or writes (get) must stay borrowed until it completes. A
//! handle that completes on drop is not enough in Rust — `mem::forget` on it
//! would end the borrow while the transfer runs — so non-blocking calls are
//! made inside a scope, as `std::thread::scope` does for threads:
//! [`Shmem::nbi`] runs a closure that issues calls through an [`NbiScope`],
//! then waits for all of them (`shmem_quiet`) before returning, also when
//! the closure panics. Buffers handed to the scope must outlive it, and are
//! usable again once `nbi` returns.
//!
//! [`Ctx::nbi`] does the same on a context: the scope's calls are the
//! context's (its team numbers the PEs, its options apply), and the scope
//! ends with the context's quiet, which waits for that context's
//! operations only. Threads that each use their own context's scope do not
//! wait for each other's transfers.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), sh.n_pes());
//! let x = sh.calloc::<u64>(2)?;
//! let src = [me as u64, 42];
//! let mut back = [0u64; 2];
//! sh.nbi(|s| -> Result<(), shmem::ShmemError> {
//!     s.put(&x, 0, &src, (me + 1) % n)?;
//!     s.quiet()?; // the put is complete at its target
//!     s.get(&x, 0, &mut back, (me + 1) % n)?;
//!     Ok(())
//! })?;
//! assert_eq!(back, src); // complete: nbi returned
//! # Ok::<(), shmem::ShmemError>(())
//! ```

use crate::Shmem;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::op::{CtxState, Op};
use crate::pod::Pod;
use crate::runtime::Runtime;
use crate::sym::SymVec;
use std::marker::PhantomData;

/// Issues non-blocking calls whose buffers live for `'scope`; created by
/// [`Shmem::nbi`] (on the default context) or [`Ctx::nbi`] (on a context).
pub struct NbiScope<'scope, 'env: 'scope> {
    rt: &'env Runtime,
    /// The context of the calls: `None` for the default one.
    ctx: Option<&'env CtxState>,
    /// Invariant in `'scope`, so that buffers cannot be shortened to the
    /// closure body.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl std::fmt::Debug for NbiScope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NbiScope")
            .field(
                "context",
                &if self.ctx.is_some() {
                    "a Ctx"
                } else {
                    "default"
                },
            )
            .finish()
    }
}

impl<'scope> NbiScope<'scope, '_> {
    /// The operation path of the scope's context.
    #[inline(always)]
    fn op(&self) -> Op<'_> {
        match self.ctx {
            None => Op::default(self.rt),
            Some(c) => Op::on(self.rt, c),
        }
    }

    /// `name` on the default context, `ctx_name` on another.
    #[inline(always)]
    fn call(&self, name: &'static str, ctx_name: &'static str) -> &'static str {
        if self.ctx.is_some() { ctx_name } else { name }
    }

    /// `shmem_put_nbi` (`shmem_ctx_put_nbi`): starts copying `src` over
    /// elements `start..start + src.len()` of `pe`'s copy of `dst` (`pe`
    /// in the context's team). `src` stays borrowed until the scope ends.
    #[inline]
    pub fn put<T: Pod>(
        &self,
        dst: &SymVec<'_, T>,
        start: usize,
        src: &'scope [T],
        pe: usize,
    ) -> Result<()> {
        let call = self.call("shmem_put_nbi", "shmem_ctx_put_nbi");
        let off = dst.range(start, src.len(), call)?;
        // SAFETY: `src` is borrowed shared for `'scope`, so nothing mutates
        // it (a `&[T]` over memory that others write cannot be made in safe
        // code: see `SymVec::as_slice`), and `'scope` outlasts the quiet
        // of this scope's context that `Shmem::nbi` or `Ctx::nbi` performs
        // before returning; the conduit reads `size_of_val(src)` bytes.
        unsafe {
            self.op()
                .put_nbi(call, pe, off, src.as_ptr().cast(), size_of_val(src))
        }
    }

    /// `shmem_get_nbi` (`shmem_ctx_get_nbi`): starts copying elements
    /// `start..start + dst.len()` of `pe`'s copy of `src` into `dst`.
    /// `dst` stays exclusively borrowed until the scope ends, when its
    /// contents are complete.
    #[inline]
    pub fn get<T: Pod>(
        &self,
        src: &SymVec<'_, T>,
        start: usize,
        dst: &'scope mut [T],
        pe: usize,
    ) -> Result<()> {
        let call = self.call("shmem_get_nbi", "shmem_ctx_get_nbi");
        let off = src.range(start, dst.len(), call)?;
        let len = size_of_val(dst);
        // SAFETY: `dst` is exclusively borrowed for `'scope`, which outlasts
        // the quiet of this scope's context performed before the scope
        // returns, so no Rust code reads or writes it meanwhile; every bit
        // pattern the conduit writes is a valid `T` (`Pod`).
        unsafe {
            self.op()
                .get_nbi(call, pe, off, dst.as_mut_ptr().cast(), len)
        }
    }

    /// `shmem_quiet` (`shmem_ctx_quiet`): waits until every call issued
    /// so far on the scope's context (in this scope or not) is complete.
    /// Buffers stay borrowed until the scope ends.
    pub fn quiet(&self) -> Result<()> {
        self.op().quiet(self.call("shmem_quiet", "shmem_ctx_quiet"))
    }

    /// `shmem_fence` (`shmem_ctx_fence`): calls of the scope's context to
    /// a PE issued after the fence are applied after those issued before
    /// it.
    pub fn fence(&self) -> Result<()> {
        self.op().fence(self.call("shmem_fence", "shmem_ctx_fence"))
    }
}

/// Runs `f` with a scope on `ctx` (`None`: the default context), then
/// completes the scope's calls with the context's quiet, also when `f`
/// panics. Inlined into [`Shmem::nbi`] and [`Ctx::nbi`], so that the
/// default context's scope is compiled with `ctx` known to be `None`:
/// its calls then cost what they did before contexts had scopes.
#[inline(always)]
fn scope<'env, F, R>(rt: &'env Runtime, ctx: Option<&'env CtxState>, f: F) -> R
where
    F: for<'scope> FnOnce(&'scope NbiScope<'scope, 'env>) -> R,
{
    /// Completes the scope's calls when dropped, on return or unwind.
    struct Complete<'a>(&'a Runtime, Option<&'a CtxState>);
    impl Drop for Complete<'_> {
        fn drop(&mut self) {
            let r = match self.1 {
                None => Op::default(self.0).quiet("shmem_quiet"),
                // A PRIVATE context's scope opened on another thread issued
                // nothing (every call failed the owner check): no buffer
                // of it is in flight, and the quiet would fail the same.
                Some(c) if !c.owned_here() => Ok(()),
                Some(c) => Op::on(self.0, c).quiet("shmem_ctx_quiet"),
            };
            if let Err(e) = r {
                conduits::report!("{e}; aborting: non-blocking transfers may still be running");
                std::process::abort();
            }
        }
    }
    let scope = NbiScope {
        rt,
        ctx,
        _scope: PhantomData,
        _env: PhantomData,
    };
    let _complete = Complete(rt, ctx);
    f(&scope)
}

impl Shmem {
    /// Runs `f` with a scope for non-blocking puts and gets, then waits for
    /// all of them (`shmem_quiet`) and returns `f`'s value. The quiet also
    /// runs when `f` panics.
    ///
    /// If that final quiet fails (a peer died), transfers could still be
    /// running into or out of the scope's buffers, which are about to be
    /// released: the process prints the error and aborts rather than risk
    /// memory corruption (the launcher then ends the job).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u32>(1024)?;
    /// let chunk = vec![7u32; 256];
    /// sh.nbi(|s| {
    ///     for pe in 0..sh.n_pes() {
    ///         s.put(&x, 0, &chunk, pe)?;
    ///     }
    ///     Ok::<(), shmem::ShmemError>(())
    /// })?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    // Out of line, with the scope's loop inside and the context known to
    // be the default one: a window of non-blocking calls then compiles as
    // a small loop of its own instead of one spread over the caller's
    // registers (8-byte get_nbi windows ran 12% slower inlined into the
    // osu benchmark's main function).
    #[inline(never)]
    pub fn nbi<'env, F, R>(&'env self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope NbiScope<'scope, 'env>) -> R,
    {
        scope(self.rt(), None, f)
    }
}

impl<'a> Ctx<'a> {
    /// Runs `f` with a scope for non-blocking puts and gets on this
    /// context (`shmem_ctx_put_nbi`, `shmem_ctx_get_nbi`: PEs numbered in
    /// the context's team), then waits for them with the context's quiet
    /// (`shmem_ctx_quiet`: this context's operations only) and returns
    /// `f`'s value. As [`Shmem::nbi`] otherwise: the quiet also runs when
    /// `f` panics, and a failed final quiet aborts the process.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let (me, n) = (sh.my_pe(), sh.n_pes());
    /// let x = sh.calloc::<u64>(n)?;
    /// let ctx = sh.create_ctx(shmem::CtxOptions::PRIVATE)?;
    /// let mine = [me as u64];
    /// ctx.nbi(|s| {
    ///     for pe in 0..ctx.n_pes() {
    ///         s.put(&x, me, &mine, pe)?;
    ///     }
    ///     Ok::<(), shmem::ShmemError>(())
    /// })?; // this context's puts are complete at their targets
    /// sh.barrier_all()?;
    /// assert_eq!(x.to_vec(), (0..n as u64).collect::<Vec<_>>());
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    // Out of line, as `Shmem::nbi`.
    #[inline(never)]
    pub fn nbi<'env, F, R>(&'env self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope NbiScope<'scope, 'env>) -> R,
    {
        let (rt, st) = self.parts();
        scope(rt, Some(st), f)
    }
}
