//! # shmem
//!
//! OpenSHMEM for fshmem: the Rust SPMD API over the conduits.
//!
//! A program calls [`init`] once; the returned [`Shmem`] handle is the
//! runtime, and dropping it finalizes (a barrier, then the conduit
//! detaches). Symmetric objects ([`SymVec`]) are allocated collectively from
//! it and read, written and atomically updated on any PE by index.
//!
//! ```no_run
//! use shmem::Cmp;
//!
//! fn main() -> Result<(), shmem::ShmemError> {
//!     let sh = shmem::init()?;
//!     let (me, n) = (sh.my_pe(), sh.n_pes());
//!
//!     // Every PE sends its rank to the next one.
//!     let inbox = sh.calloc::<u64>(1)?;
//!     inbox.p(0, me as u64 + 1, (me + 1) % n)?;
//!     inbox.wait_until(0, Cmp::Ne, 0)?;
//!     assert_eq!(inbox.read(0), ((me + n - 1) % n) as u64 + 1);
//!
//!     // A global counter on PE 0.
//!     let counter = sh.calloc::<i64>(1)?;
//!     counter.atomic_add(0, 1, 0)?;
//!     sh.barrier_all()?;
//!     if me == 0 {
//!         assert_eq!(counter.read(0), n as i64);
//!     }
//!     Ok(())
//! } // objects are freed, then the runtime finalizes
//! ```
//!
//! ## Guide
//!
//! A walk through the API, in the order a program uses it. Every program
//! is SPMD: `oshrun -n 4 prog` starts four processes (PEs) running the same
//! `main`; the examples below are such mains.
//!
//! ### 1. Start, allocate, free
//!
//! [`init`] starts the runtime; [`Shmem::calloc`], [`Shmem::malloc`] and
//! [`Shmem::align`] allocate a [`SymVec`] on every PE: a *collective* call
//! (every PE makes it, with the same length, in the same order), so the
//! object sits at the same offset of every PE's symmetric heap and can be
//! named on any PE. Objects borrow the [`Shmem`] handle and are freed
//! collectively when dropped; the runtime finalizes when the handle drops.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let grid = sh.calloc::<f64>(1024)?;     // zeroed, on every PE
//! let mut v = sh.malloc::<u32>(8)?;       // contents unspecified
//! v.realloc(16)?;                         // collective too
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! ### 2. Local access: copies, never references
//!
//! Your PE's copy of an object is memory other PEs write with puts and
//! atomics at any time, so safe code reads and writes it by copying, with
//! relaxed atomic accesses (so threads reading and writing it at once do
//! not race; see [Soundness](#soundness)):
//! [`SymVec::read`], [`SymVec::write`], [`SymVec::to_vec`],
//! [`SymVec::read_range`], [`SymVec::copy_to`], [`SymVec::copy_from`],
//! [`SymVec::fill`], [`SymVec::iter`]. A `&[T]` over it would promise Rust
//! that nobody writes while it lives, which the runtime cannot know: the
//! zero-copy [`SymVec::as_slice`] and [`SymVec::as_mut_slice`] are
//! `unsafe fn`s, for phases your protocol makes read-only.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let x = sh.calloc::<i64>(4)?;
//! x.copy_from(0, &[1, 2, 3, 4]);
//! assert_eq!(x.read(2), 3);
//! let total: i64 = x.iter().sum();
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! For a safe zero-copy view, make the object read-only on every PE:
//! [`SymVec::into_read_only`] is collective, takes the object by value
//! (so no handle that could write it survives), completes every
//! operation each PE issued (on every context, and its Long active
//! messages) and syncs the PEs, checking that they all convert the same
//! object. The [`SymReadOnly`] it returns derefs to `&[T]`, reads peers'
//! copies ([`SymReadOnly::get`], [`SymReadOnly::g`]) and can be a
//! collective's source; [`SymReadOnly::into_mut`] makes it writable again
//! (collective too). [`sym::readonly`] argues why no writer remains.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), sh.n_pes());
//! let x = sh.calloc::<u64>(n)?;
//! for pe in 0..n {
//!     x.p(me, me as u64, pe)?;            // element `me` of every PE
//! }
//! let x = x.into_read_only()?;            // completes the puts: no barrier
//! let all: &[u64] = &x;                   // zero-copy, and safe
//! assert!(all.iter().enumerate().all(|(i, &v)| v == i as u64));
//! let x = x.into_mut()?;                  // writable again
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! ### 3. One-sided operations
//!
//! [`SymVec::put`], [`SymVec::get`], [`SymVec::p`], [`SymVec::g`] move
//! elements to and from any PE's copy; `atomic_*` update one element
//! atomically ([`AmoElem`], [`AmoInt`]); [`SymVec::put_signal`] puts data
//! and then sets a signal word the target can wait on. Indices are checked
//! (an out-of-range index, PE or misaligned word is an [`ShmemError`]
//! naming the PE, the call and the value). Non-blocking puts and gets run
//! inside [`Shmem::nbi`], which completes them before it returns.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), sh.n_pes());
//! let x = sh.calloc::<u64>(n)?;
//! x.p(me, me as u64, 0)?;                   // into PE 0's element `me`
//! let ticket = x.atomic_fetch_inc(0, 0)?;   // a counter on PE 0
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! ### 4. Synchronization rules
//!
//! A put returns when its source may be reused, not when it has arrived.
//! Its data is visible at the target after: [`Shmem::quiet`] (every put of
//! this PE complete) followed by a flag the target waits on, a barrier
//! ([`Shmem::barrier_all`]: quiet plus sync), or a signal
//! ([`SymVec::put_signal`] + [`SymVec::signal_wait_until`]). Poll a word
//! with [`SymVec::wait_until`] or [`SymVec::test`], never with a loop over
//! [`SymVec::read`] alone (it does not serve incoming messages).
//! [`Shmem::fence`] orders puts to a PE without completing them.
//!
//! ```no_run
//! use shmem::Cmp;
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), sh.n_pes());
//! let data = sh.calloc::<u32>(4)?;
//! let flag = sh.calloc::<u64>(1)?;
//! if me == 0 && n > 1 {
//!     data.put(0, &[1, 2, 3, 4], 1)?;
//!     sh.fence()?;                        // data before flag
//!     flag.atomic_set(0, 1, 1)?;
//! } else if me == 1 {
//!     flag.wait_until(0, Cmp::Eq, 1)?;
//!     assert_eq!(data.to_vec(), [1, 2, 3, 4]);
//! }
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! ### 5. Teams and collectives
//!
//! [`Shmem::team_world`] and [`Team::split_strided`] / [`Team::split_2d`]
//! give teams; their collectives ([`Team::broadcast`], [`Team::fcollect`],
//! [`Team::sum_reduce`], ... see [`coll`]) are called by every member,
//! read a source object and write a destination object.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let w = sh.team_world();
//! let (src, dst) = (sh.calloc::<i64>(1)?, sh.calloc::<i64>(1)?);
//! src.write(0, w.my_pe() as i64);
//! w.sum_reduce(&dst, &src, 1)?;
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! ### 6. Contexts and threads
//!
//! A [`Ctx`] is its own stream of operations: its `quiet` waits for its
//! operations only (on `ipv6` and `fpga`; `smp` completes everything at
//! once), so threads with their own contexts do not wait for each other's
//! slow targets. [`init_thread`] asks for a [`ThreadLevel`]; see [`ctx`].
//!
//! A context has the default context's calls: blocking ones
//! ([`Ctx::put`], [`Ctx::atomic_add`], [`Ctx::put_signal`], ...) and
//! non-blocking puts and gets in a scope of its own ([`Ctx::nbi`]), which
//! ends with the context's quiet.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), sh.n_pes());
//! let x = sh.calloc::<u64>(n)?;
//! let ctx = sh.create_ctx(shmem::CtxOptions::PRIVATE)?;
//! ctx.atomic_add(&x, 0, 1, 0)?;
//! ctx.quiet()?;                           // this context's operations only
//! let mine = [me as u64];
//! ctx.nbi(|s| s.put(&x, me, &mine, (me + 1) % n))?;
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! ### 7. Active messages
//!
//! [`am`] sends a request that runs a handler on the target PE: register
//! handlers collectively, send Short, Medium or Long requests, reply once.
//! Typed AMs carry Rust values ([`Shmem::am_typed`]). Handlers must not
//! block: they may only reply.
//!
//! ```no_run
//! let sh = shmem::init()?;
//! let double = sh.am_typed(|_src_pe, x: i32| 2 * x)?;
//! assert_eq!(double.call(0, &21)?, 42);
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! ### 8. The boards' compute cores
//!
//! On the `fpga` conduit, [`compute`] runs GEMM tiles on a PE's board,
//! streaming results to another PE as they are computed (ART); the
//! `matmul_fpga` example is FSHMEM's case study.
//!
//! ## Map to OpenSHMEM
//!
//! | OpenSHMEM | here |
//! |---|---|
//! | `shmem_init`, `shmem_finalize` | [`init`] (or [`Builder`] to configure in code), drop of [`Shmem`] or [`Shmem::finalize`] |
//! | `shmem_my_pe`, `shmem_n_pes` | [`Shmem::my_pe`], [`Shmem::n_pes`] (and the free [`my_pe`], [`n_pes`]) |
//! | `shmem_malloc`, `_calloc`, `_align`, `_realloc`, `_free` | [`Shmem::malloc`], [`Shmem::calloc`], [`Shmem::align`], [`SymVec::realloc`], drop or [`SymVec::free`] |
//! | `shmem_put`, `_get`, `_p`, `_g` | [`SymVec::put`], [`SymVec::get`], [`SymVec::p`], [`SymVec::g`] |
//! | `shmem_put_nbi`, `_get_nbi` | [`NbiScope::put`], [`NbiScope::get`] inside [`Shmem::nbi`] |
//! | `shmem_quiet`, `shmem_fence` | [`Shmem::quiet`], [`Shmem::fence`] |
//! | `shmem_atomic_*` | `SymVec::atomic_*` |
//! | `shmem_wait_until`, `shmem_test` | [`SymVec::wait_until`], [`SymVec::test`] with [`Cmp`] |
//! | `shmem_put_signal`, `_signal_fetch`, `_signal_wait_until` | [`SymVec::put_signal`], [`SymVec::signal_fetch`], [`SymVec::signal_wait_until`] |
//! | `shmem_barrier_all`, `shmem_sync_all` | [`Shmem::barrier_all`], [`Shmem::sync_all`] |
//! | `shmem_global_exit` | [`Shmem::global_exit`], [`global_exit`] |
//! | `shmem_ptr` | [`SymVec::ptr`] |
//! | local access (C: loads and stores) | [`SymVec::read`], [`SymVec::write`], [`SymVec::to_vec`], [`SymVec::read_range`], [`SymVec::copy_to`], [`SymVec::copy_from`], [`SymVec::fill`], [`SymVec::iter`]; zero-copy: [`SymVec::into_read_only`] (a safe `&[T]` while no PE can write), or the `unsafe` [`SymVec::as_slice`], [`SymVec::as_mut_slice`] |
//! | active messages (`shmemx_am_*`) | [`Shmem::am_register`], [`Shmem::am_short`], [`Shmem::am_medium`], [`Shmem::am_long`], [`am::Token`], [`Shmem::am_typed`] (see [`am`]) |
//! | `shmem_init_thread`, `shmem_query_thread` | [`init_thread`], [`Shmem::query_thread`] (and the free [`query_thread`]) |
//! | `SHMEM_TEAM_WORLD`, `SHMEM_TEAM_SHARED` | [`Shmem::team_world`], [`Shmem::team_shared`] |
//! | `shmem_team_my_pe`, `_n_pes`, `_translate_pe`, `_get_config` | [`Team::my_pe`], [`Team::n_pes`], [`Team::translate_pe`], [`Team::get_config`] |
//! | `shmem_team_split_strided`, `_split_2d`, `_destroy` | [`Team::split_strided`], [`Team::split_2d`], [`Team::destroy`] or drop |
//! | `shmem_team_sync`, `shmem_sync`, `shmem_barrier` | [`Team::sync`], [`Team::barrier`] |
//! | `shmem_broadcast`, `_collect`, `_fcollect`, `_alltoall`, `_alltoalls` | [`Team::broadcast`], [`Team::collect`], [`Team::fcollect`], [`Team::alltoall`], [`Team::alltoalls`] |
//! | `shmem_<op>_reduce` | [`Team::reduce`] with an operator of [`coll::ops`], or [`Team::sum_reduce`] etc. |
//! | `shmem_<op>_inscan`, `_exscan` (1.6) | [`Team::inscan`], [`Team::exscan`], [`Team::sum_inscan`], [`Team::sum_exscan`] |
//! | `shmem_ctx_create`, `shmem_team_create_ctx`, `shmem_ctx_destroy` | [`Shmem::create_ctx`], [`Team::create_ctx`], drop of [`Ctx`] or [`Ctx::destroy`] |
//! | `shmem_ctx_put`, `_get`, `_atomic_*`, `_put_signal`, `_quiet`, `_fence` | the methods of [`Ctx`] |
//! | `shmem_ctx_put_nbi`, `_get_nbi` | [`NbiScope::put`], [`NbiScope::get`] inside [`Ctx::nbi`] |
//!
//! Configuration comes from the environment: see [`config`].
//!
//! ## Soundness
//!
//! Safe code cannot cause undefined behaviour through this crate. What
//! that rests on, and where Rust's guarantees stop, is stated here; the
//! full account is [`segmem`]'s documentation.
//!
//! **Symmetric memory is never behind a reference.** A segment is written
//! by other PEs, by this PE's own puts, atomics and collectives, by other
//! threads and by conduit progress threads, at any time; a `&T` or
//! `&mut T` over it would promise Rust that nothing does while it lives.
//! So the runtime reaches segment memory only through raw pointers, and
//! safe code only through copies: [`SymVec::read`], [`SymVec::write`] and
//! the bulk copies. The zero-copy views are either `unsafe fn`s whose
//! callers promise that no writer exists while the view lives
//! ([`SymVec::as_slice`]), or borrows of a [`SymReadOnly`], whose
//! collective conversion excludes every writer for its lifetime
//! ([`sym::readonly`]; it assumes, as every collective does, that all PEs
//! make their collective calls in the same order, and says what it
//! detects when they do not). The C ABI's buffers, which may be symmetric
//! too, are named by address down to the conduit (`Rma::put_from`,
//! `get_into`).
//!
//! **Accesses within the process are atomic.** Two threads of one process
//! that touch the same bytes at once, one writing, race, and in Rust's
//! memory model (C++20's) a race between accesses that are not all atomic
//! is undefined behaviour *whatever the bytes* (that every bit pattern is
//! a valid `T` does not help). So the Rust API's local accesses are
//! relaxed atomic loads and stores of the element's own width (one
//! `mov`, as a plain access), the bulk copies are element by element or
//! word by word the same way, and the runtime's own accesses to this PE's
//! segment (collectives, allocation, the engine of a progress thread, a
//! conduit's transfer to this PE on `smp`, `ipv6` and `ofi`) are atomic
//! too. Two threads at
//! [`ThreadLevel::Multiple`] calling `x.read(i)` and `x.write(i, v)` on
//! one object read the old or the new value. Ordering comes from the
//! runtime's synchronization (quiet, barriers, waits, signals), whose
//! atomics are acquire/release.
//!
//! **What stays outside Rust's guarantees**, said plainly:
//!
//! - other processes (PEs sharing memory on `smp`, a routed job's peers)
//!   and devices (an fpga board's memory, which is the segment on `fpga`
//!   and which that conduit copies to and from plainly; a NIC) write
//!   segments without
//!   Rust's knowledge: Rust's model describes one process. Raw pointers
//!   and atomics are the recognised way to share memory with them, and
//!   the hardware keeps aligned accesses of up to 8 bytes whole;
//! - C code that calls the C ABI accesses its symmetric variables with
//!   C's plain loads and stores under C's rules;
//! - the `smp` conduit copies into and out of *other* PEs' segments with
//!   `memcpy` (word-by-word atomics would cost a third of a 64 KiB put's
//!   bandwidth): two threads of one process whose transfers touch the
//!   same bytes of a peer at the same moment race in Rust's model, as
//!   they do in OpenSHMEM's, which calls the result unspecified;
//! - an untyped copy moves 8-byte words: when it overlaps, at the same
//!   moment, another thread's access to a narrower element of the same
//!   bytes (a progress thread writing a peer's put while a `u32` element
//!   is read), the two atomics differ in size, which Rust's model leaves
//!   undefined and x86-64 and AArch64 perform as the individual accesses.
//!   OpenSHMEM calls such a program's result unspecified; the runtime's
//!   own paths never do it.
//!
//! **One path.** Every operation, blocking or not, on a [`Ctx`] or the
//! default context, from Rust or C, takes one path (a context, then the
//! conduit), where the PE, range, alignment and context checks are made
//! once.

mod agree;
pub mod alloc;
pub mod am;
mod builder;
mod capi;
pub mod coll;
mod collective;
pub mod compute;
pub mod config;
pub mod ctx;
pub mod error;
mod heap;
pub mod nbi;
mod op;
pub mod pod;
mod pool;
mod progress;
pub mod runtime;
pub mod static_data;
pub mod sym;
pub mod team;
pub mod wait;

pub use builder::Builder;
pub use coll::ops::{Complex32, Complex64};
/// Prints one diagnostic line to stderr in a single write, so lines from
/// PEs sharing a terminal or pipe never interleave: use it instead of
/// `eprintln!` in SPMD programs.
///
/// ```
/// shmem::report!("PE {}: checksum mismatch at {}", 0, 17);
/// ```
pub use conduits::report;
pub use conduits::segmem;
pub use conduits::{ConduitKind, SignalOp};
pub use config::Config;
pub use ctx::{Ctx, CtxOptions, ThreadLevel};
pub use error::{Result, ShmemError};
pub use nbi::NbiScope;
pub use pod::{AmoElem, AmoInt, Pod};
pub use sym::{SymReadOnly, SymVec};
pub use team::{Team, TeamConfig};
pub use wait::Cmp;

use runtime::{Runtime, with_runtime};
use std::ptr::NonNull;

/// The running OpenSHMEM runtime of this process; dropping it finalizes.
///
/// There is at most one per process: [`init`] creates it, and a second
/// `init` errors while it lives (and after it is gone: OpenSHMEM does not
/// re-initialize). Symmetric objects borrow it, so it outlives them.
pub struct Shmem {
    rt: NonNull<Runtime>,
    finalized: bool,
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Runtime>();
};

// SAFETY: `Shmem` owns the `Runtime` behind the pointer, which is Send and
// Sync (checked above).
unsafe impl Send for Shmem {}
// SAFETY: as above; `&Shmem` only hands out `&Runtime`.
unsafe impl Sync for Shmem {}

/// `shmem_init`: starts the runtime with the configuration of the
/// environment ([`Config::from_env`]) and the job of the launcher
/// (`oshrun`; without one, a job of one PE). Collective over all PEs.
///
/// ```no_run
/// let sh = shmem::init()?;
/// println!("PE {} of {}", sh.my_pe(), sh.n_pes());
/// assert!(shmem::init().is_err()); // only once
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn init() -> Result<Shmem> {
    init_full(Config::from_env()?, ThreadLevel::Multiple)
}

/// `shmem_init` with an explicit configuration instead of the
/// environment's `SHMEM_*` variables. The job still comes from the
/// launcher's environment: the job rows of `config` (`config.job`:
/// `FSHMEM_RANK`, `PMI_RANK`, ...) are read again from it, except a
/// conduit set there, which wins over `FSHMEM_CONDUIT`.
///
/// ```no_run
/// let sh = shmem::init_with(shmem::Config { symmetric_size: 1 << 20, ..Default::default() })?;
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn init_with(mut config: Config) -> Result<Shmem> {
    let conduit = config.job.conduit;
    config.job = conduits::config::JobVars::from_env()?;
    config.job.conduit = conduit.or(config.job.conduit);
    init_full(config, ThreadLevel::Multiple)
}

/// `shmem_init_thread`: starts the runtime as [`init`] does, asking for
/// thread level `requested`; returns the handle and the level provided,
/// which is always `requested` (every level up to
/// [`ThreadLevel::Multiple`] is supported; see [`ctx`]). [`init`] provides
/// `Multiple`.
///
/// ```no_run
/// use shmem::ThreadLevel;
/// let (sh, provided) = shmem::init_thread(ThreadLevel::Serialized)?;
/// assert_eq!(provided, ThreadLevel::Serialized);
/// assert_eq!(shmem::query_thread()?, ThreadLevel::Serialized);
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn init_thread(requested: ThreadLevel) -> Result<(Shmem, ThreadLevel)> {
    let sh = init_full(Config::from_env()?, requested)?;
    Ok((sh, requested))
}

fn init_full(config: Config, level: ThreadLevel) -> Result<Shmem> {
    start(config, level, runtime::StartOptions::default())
}

fn start(config: Config, level: ThreadLevel, opts: runtime::StartOptions) -> Result<Shmem> {
    let rt = Runtime::start(config, level, opts)?;
    Ok(Shmem {
        // SAFETY: `Runtime::start` returns a pointer from `Box::into_raw`.
        rt: unsafe { NonNull::new_unchecked(rt) },
        finalized: false,
    })
}

impl Shmem {
    #[inline(always)]
    pub(crate) fn rt(&self) -> &Runtime {
        // SAFETY: the runtime lives until `finish` runs in `finalize` or
        // drop, which take `self` by value or `&mut self` at the end of its
        // life; `&self` borrows cannot outlive it.
        unsafe { self.rt.as_ref() }
    }

    /// `shmem_my_pe`: this PE's rank, `0..n_pes()`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// assert!(sh.my_pe() < sh.n_pes());
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.rt().my_pe()
    }

    /// `shmem_n_pes`: the number of PEs in the job.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// assert!(sh.n_pes() >= 1);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn n_pes(&self) -> usize {
        self.rt().n_pes()
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        self.rt().config()
    }

    /// `shmem_barrier_all`: completes every put, get and atomic this PE
    /// issued (quiet), then waits until every PE has reached the barrier.
    /// Collective.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// sh.barrier_all()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn barrier_all(&self) -> Result<()> {
        self.rt().barrier_all("shmem_barrier_all")
    }

    /// `shmem_sync_all`: waits until every PE has reached the call, without
    /// completing outstanding operations. Collective.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// sh.sync_all()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn sync_all(&self) -> Result<()> {
        self.rt().sync_all("shmem_sync_all")
    }

    /// `shmem_quiet`: waits until every put, get and atomic this PE issued
    /// is complete at its target.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u8>(1)?;
    /// x.p(0, 1, 0)?;
    /// sh.quiet()?; // now visible on PE 0
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn quiet(&self) -> Result<()> {
        op::Op::default(self.rt()).quiet("shmem_quiet")
    }

    /// `shmem_fence`: puts and atomics to a PE issued before the fence are
    /// applied there before those issued after it.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let (data, flag) = (sh.calloc::<u32>(1)?, sh.calloc::<u32>(1)?);
    /// data.p(0, 42, 0)?;
    /// sh.fence()?;
    /// flag.p(0, 1, 0)?; // PE 0 that sees flag == 1 sees data == 42
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn fence(&self) -> Result<()> {
        op::Op::default(self.rt()).fence("shmem_fence")
    }

    /// `shmem_global_exit`: ends every PE of the job with `status`, from
    /// this PE alone (no collective).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// if sh.my_pe() == 0 {
    ///     sh.global_exit(3);
    /// }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn global_exit(&self, status: i32) -> ! {
        let rt = self.rt();
        if rt.config().debug {
            conduits::report!("PE {}: shmem_global_exit({status})", rt.my_pe());
        }
        conduits::wait::note_job_exit();
        rt.global_exit(status)
    }

    /// `shmem_finalize`, reporting errors: a barrier, then the runtime
    /// detaches. Dropping the handle does the same and prints errors.
    /// Collective.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// sh.finalize()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn finalize(mut self) -> Result<()> {
        self.finalized = true;
        // SAFETY: `self.rt` came from `Runtime::start`, is finished only
        // here or in drop (which `finalized` now skips), and no borrow of
        // `self` outlives this call.
        unsafe { runtime::finish(self.rt.as_ptr()) }
    }
}

impl Drop for Shmem {
    fn drop(&mut self) {
        if !self.finalized && std::thread::panicking() {
            // A panicking PE must not enter the collective finalize: the
            // others may wait for something only it would have sent, and
            // it would wait for them in the barrier. Leave the job as a
            // failed PE; the launcher (or the peers' liveness checks)
            // ends the job.
            self.finalized = true;
            conduits::report!(
                "PE {}: panicked; leaving the job without finalizing",
                self.my_pe()
            );
            return;
        }
        if !self.finalized {
            self.finalized = true;
            // SAFETY: as in `finalize`; drop runs once.
            if let Err(e) = unsafe { runtime::finish(self.rt.as_ptr()) } {
                conduits::report!("{e}");
            }
        }
    }
}

impl std::fmt::Debug for Shmem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shmem")
            .field("my_pe", &self.my_pe())
            .field("n_pes", &self.n_pes())
            .finish()
    }
}

/// `shmem_my_pe` on the global runtime, for code without the handle.
///
/// ```no_run
/// let _sh = shmem::init()?;
/// assert!(shmem::my_pe()? < shmem::n_pes()?);
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn my_pe() -> Result<usize> {
    with_runtime("shmem_my_pe", |rt| rt.my_pe())
}

/// `shmem_n_pes` on the global runtime.
///
/// ```
/// // Before init it is an error, not a panic.
/// assert!(shmem::n_pes().is_err());
/// ```
pub fn n_pes() -> Result<usize> {
    with_runtime("shmem_n_pes", |rt| rt.n_pes())
}

/// `shmem_query_thread` on the global runtime.
///
/// ```
/// assert!(shmem::query_thread().is_err()); // not initialized
/// ```
pub fn query_thread() -> Result<ThreadLevel> {
    with_runtime("shmem_query_thread", |rt| rt.thread_level())
}

/// `shmem_barrier_all` on the global runtime.
///
/// ```no_run
/// let _sh = shmem::init()?;
/// shmem::barrier_all()?;
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn barrier_all() -> Result<()> {
    with_runtime("shmem_barrier_all", |rt| {
        rt.barrier_all("shmem_barrier_all")
    })?
}

/// `shmem_sync_all` on the global runtime.
///
/// ```no_run
/// let _sh = shmem::init()?;
/// shmem::sync_all()?;
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn sync_all() -> Result<()> {
    with_runtime("shmem_sync_all", |rt| rt.sync_all("shmem_sync_all"))?
}

/// `shmem_quiet` on the global runtime.
///
/// ```no_run
/// let _sh = shmem::init()?;
/// shmem::quiet()?;
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn quiet() -> Result<()> {
    with_runtime("shmem_quiet", |rt| rt.quiet("shmem_quiet"))?
}

/// `shmem_fence` on the global runtime.
///
/// ```no_run
/// let _sh = shmem::init()?;
/// shmem::fence()?;
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn fence() -> Result<()> {
    with_runtime("shmem_fence", |rt| rt.fence("shmem_fence"))?
}

/// `shmem_global_exit` on the global runtime; without a running runtime
/// it exits this process with `status`.
///
/// ```no_run
/// shmem::global_exit(1);
/// ```
pub fn global_exit(status: i32) -> ! {
    conduits::wait::note_job_exit();
    // The runtime is never freed while `with_runtime` runs, and the
    // conduit's global_exit does not return.
    let _ = with_runtime("shmem_global_exit", |rt| rt.global_exit(status));
    std::process::exit(status)
}

/// The README's Rust example, compiled and run (as a one-PE job) by
/// `cargo test --doc` so it cannot drift from the API.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
