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
use crate::error::Result;
use crate::op::Op;
use crate::pod::Pod;
use crate::runtime::Runtime;
use crate::sym::SymVec;
use std::marker::PhantomData;

/// Issues non-blocking calls whose buffers live for `'scope`; created by
/// [`Shmem::nbi`].
pub struct NbiScope<'scope, 'env: 'scope> {
    rt: &'env Runtime,
    /// Invariant in `'scope`, so that buffers cannot be shortened to the
    /// closure body.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> NbiScope<'scope, '_> {
    /// `shmem_put_nbi`: starts copying `src` over elements
    /// `start..start + src.len()` of `pe`'s copy of `dst`. `src` stays
    /// borrowed until the scope ends.
    #[inline]
    pub fn put<T: Pod>(
        &self,
        dst: &SymVec<'_, T>,
        start: usize,
        src: &'scope [T],
        pe: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_put_nbi";
        let off = dst.range(start, src.len(), CALL)?;
        // SAFETY: `src` is borrowed shared for `'scope`, so nothing mutates
        // it (a `&[T]` over memory that others write cannot be made in safe
        // code: see `SymVec::as_slice`), and `'scope` outlasts the quiet
        // that `Shmem::nbi` performs before returning; the conduit reads
        // `size_of_val(src)` bytes of it.
        unsafe {
            Op::default(self.rt).put_nbi(CALL, pe, off, src.as_ptr().cast(), size_of_val(src))
        }
    }

    /// `shmem_get_nbi`: starts copying elements `start..start + dst.len()`
    /// of `pe`'s copy of `src` into `dst`. `dst` stays exclusively borrowed
    /// until the scope ends, when its contents are complete.
    #[inline]
    pub fn get<T: Pod>(
        &self,
        src: &SymVec<'_, T>,
        start: usize,
        dst: &'scope mut [T],
        pe: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_get_nbi";
        let off = src.range(start, dst.len(), CALL)?;
        let len = size_of_val(dst);
        // SAFETY: `dst` is exclusively borrowed for `'scope`, which outlasts
        // the quiet `Shmem::nbi` performs before returning, so no Rust code
        // reads or writes it meanwhile; every bit pattern the conduit writes
        // is a valid `T` (`Pod`).
        unsafe { Op::default(self.rt).get_nbi(CALL, pe, off, dst.as_mut_ptr().cast(), len) }
    }

    /// `shmem_quiet`: waits until every call issued so far (in this scope
    /// or not) is complete. Buffers stay borrowed until the scope ends.
    pub fn quiet(&self) -> Result<()> {
        Op::default(self.rt).quiet("shmem_quiet")
    }

    /// `shmem_fence`: calls to a PE issued after the fence are applied
    /// after those issued before it.
    pub fn fence(&self) -> Result<()> {
        Op::default(self.rt).fence("shmem_fence")
    }
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
    pub fn nbi<'env, F, R>(&'env self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope NbiScope<'scope, 'env>) -> R,
    {
        /// Completes the scope's calls when dropped, on return or unwind.
        struct Complete<'a>(&'a Runtime);
        impl Drop for Complete<'_> {
            fn drop(&mut self) {
                if let Err(e) = self.0.quiet("shmem_quiet") {
                    conduits::report!("{e}; aborting: non-blocking transfers may still be running");
                    std::process::abort();
                }
            }
        }
        let rt = self.rt();
        let scope = NbiScope {
            rt,
            _scope: PhantomData,
            _env: PhantomData,
        };
        let _complete = Complete(rt);
        f(&scope)
    }
}
