//! Collectives on teams, built from one-sided operations.
//!
//! Every collective is a method of [`Team`] and is *collective over the
//! team*: every member calls it, in the same order as its other collectives
//! on that team, with the same element count (except [`Team::collect`]),
//! root and strides. Destinations and sources are symmetric objects
//! ([`SymVec`]); a source may also be a read-only object
//! ([`crate::SymReadOnly`], any [`Readable`]), which collectives only read
//! (every PE pushes from its own copy). Counts are in elements. A call on
//! one PE returns once this
//! PE's part is done: its `dest` holds the result, and its `source` may be
//! reused. Data collectives begin with a team sync, so back-to-back
//! collectives may use the same destination without user synchronization
//! (no PE writes into a destination that a slower PE is still filling for
//! the previous collective). Local stores to a destination between
//! collectives still need the usual care: another PE may read it in the
//! next collective. No `pSync` or work array is ever passed: each team has
//! its own slot in the collective pool ([`crate::team`]).
//!
//! The algorithms use only the conduit's puts, put-with-signal, atomics,
//! fence and quiet and local waits (spin, then yield), so they run
//! unchanged on `smp`, `ipv6` and `fpga`; the message and scratch rules are
//! in the engine's notes below.
//!
//! # Algorithms, thresholds and overrides
//!
//! `n` is the team size. Every choice is overridable by an environment
//! variable, listed with its default by `SHMEM_INFO=1` (see
//! [`crate::config`]); `auto` applies the thresholds.
//!
//! | collective | algorithms | `auto` picks | variable (threshold) |
//! |---|---|---|---|
//! | sync, barrier | `dissemination` (ceil(log2 n) rounds), `tree` (radix-4 gather/release, 2(n-1) signals) | tree when n >= 64 | `FSHMEM_BARRIER_ALGO` (`FSHMEM_BARRIER_TREE_PES`) |
//! | broadcast | `binomial` (log2 n whole-message steps), `scatter_allgather` (root scatters n blocks, ring allgather: ~2x the bytes, no log factor) | scatter+allgather from 16 KiB when n >= 3 | `FSHMEM_BCAST_ALGO` (`FSHMEM_BCAST_LARGE`) |
//! | reductions | `recursive_doubling` (log2 n exchanges of the vector), `rabenseifner` (halving reduce-scatter + doubling allgather: 2 log2 n steps, ~2x the bytes), `ring` (2(n-1) steps of n-th blocks) | recursive doubling below 8 KiB; from 8 KiB Rabenseifner for power-of-two n, ring otherwise | `FSHMEM_REDUCE_ALGO` (`FSHMEM_REDUCE_LARGE`) |
//! | fcollect, collect | `recursive_doubling` (log2 n rounds, power-of-two n; others fall back to Bruck), `bruck` (ceil(log2 n) rounds, any n), `ring` (n-1 steps, neighbour traffic only) | ring from 16 KiB of result; below, recursive doubling for power-of-two n, Bruck otherwise | `FSHMEM_FCOLLECT_ALGO` (`FSHMEM_FCOLLECT_LARGE`) |
//! | alltoall, alltoalls | `pairwise` (step s sends to me+s and waits for me-s: paced, no hot spot), `linear` (all sends in shifted order, then all waits: overlapped) | pairwise for blocks from 4 KiB | `FSHMEM_ALLTOALL_ALGO` (`FSHMEM_ALLTOALL_PAIRWISE`) |
//! | inscan, exscan | recursive doubling (Hillis-Steele), then a sync | — | — |
//! | sync, barrier, broadcast, reductions on a team spanning hosts | two levels: within each host through shared memory, then the algorithms above among one leader per host, then within each host again (see the engine's `hier` notes) | two levels when the team spans several hosts and one of them holds several of its PEs (`oshrun --hosts`) | `FSHMEM_COLL_HIER` (`auto`, `on`, `off`) |
//!
//! Non-power-of-two teams fold for recursive doubling and Rabenseifner: the
//! first `2 (n - 2^k)` PEs pair up, one of each pair hands its vector to
//! the other and receives the result at the end.
//!
//! Large payloads: broadcast, fcollect, collect and alltoall put straight
//! into the destinations (no staging). Reductions and scans go through the
//! team's two scratch areas (`FSHMEM_COLL_SCRATCH` bytes each), so vectors
//! larger than an algorithm's share of one area are processed in chunks,
//! one pipelined step per chunk; the allgather phases of Rabenseifner and
//! ring put straight into the destinations.
//!
//! ```no_run
//! use shmem::coll::ops::Sum;
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), sh.n_pes());
//! let world = sh.team_world();
//! let src = sh.malloc::<i64>(4)?;
//! let dst = sh.malloc::<i64>(4)?;
//! src.fill(me as i64);
//! world.reduce::<Sum, _>(&dst, &src, 4)?;
//! assert_eq!(dst.read(0), (n * (n - 1) / 2) as i64);
//! let all = sh.malloc::<u64>(n)?;
//! let one = sh.malloc::<u64>(1)?;
//! world.fcollect(&all, &one, 1)?;
//! # Ok::<(), shmem::ShmemError>(())
//! ```

pub use crate::collective::TREE_RADIX;
/// The reduction operators and the types they apply to.
pub use crate::collective::ops;

// The engine's types, where the C ABI finds them.
use crate::collective;
pub(crate) use crate::collective::{Args, Coll};

use crate::config::{AlltoallAlgo, BarrierAlgo, BcastAlgo, FcollectAlgo, ReduceAlgo};
use crate::error::{Result, ShmemError};
use crate::pod::Pod;
use crate::sym::{Readable, SymVec};
use crate::team::Team;
use ops::{And, Max, Min, Or, Prod, ReduceOp, Reducible, Sum, Xor};

macro_rules! reduce_fns {
    ($($(#[$d:meta])* $name:ident $op:ident $c:literal),*) => {$(
        $(#[$d])*
        pub fn $name<T: Reducible<$op>>(
            &self,
            dest: &SymVec<'_, T>,
            source: &impl Readable<T>,
            nreduce: usize,
        ) -> Result<()> {
            self.reduce_call::<$op, T>($c, dest, source, nreduce)
        }
    )*};
}

impl Team<'_> {
    fn coll(&self, call: &'static str) -> Result<Coll<'_>> {
        Coll::new(self.rt, &self.st, call)
    }

    /// Starts a data collective whose arguments every PE must share: see
    /// [`Coll::new_data`].
    fn data_coll(&self, call: &'static str, args: Args) -> Result<Coll<'_>> {
        Coll::new_data(self.rt, &self.st, call, args)
    }

    fn need<T: Pod>(
        &self,
        call: &'static str,
        v: &impl Readable<T>,
        count: Option<usize>,
    ) -> Result<usize> {
        match count {
            Some(c) if c <= v.len() => Ok(v.segment_offset()),
            _ => Err(ShmemError::OutOfBounds {
                pe: self.rt.my_pe(),
                call,
                start: 0,
                count: count.unwrap_or(usize::MAX),
                len: v.len(),
            }),
        }
    }

    fn bad(&self, call: &'static str, reason: String) -> ShmemError {
        ShmemError::Invalid {
            pe: self.rt.my_pe(),
            call,
            reason,
        }
    }

    /// The algorithm [`Team::sync`] and [`Team::barrier`] use on this team.
    pub fn barrier_algorithm(&self) -> BarrierAlgo {
        collective::choose_barrier(&self.rt.config().coll, self.n_pes())
    }

    /// The algorithm [`Team::broadcast`] uses for `nbytes` bytes.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// println!("{:?}", sh.team_world().broadcast_algorithm(8));
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn broadcast_algorithm(&self, nbytes: usize) -> BcastAlgo {
        collective::choose_bcast(&self.rt.config().coll, self.n_pes(), nbytes)
    }

    /// The algorithm reductions of `nbytes` bytes use on this team.
    pub fn reduce_algorithm(&self, nbytes: usize) -> ReduceAlgo {
        collective::choose_reduce(&self.rt.config().coll, self.n_pes(), nbytes)
    }

    /// The algorithm fcollect and collect use for a result of `total`
    /// bytes (after the power-of-two fallback).
    pub fn fcollect_algorithm(&self, total: usize) -> FcollectAlgo {
        collective::choose_fcollect(&self.rt.config().coll, self.n_pes(), total)
    }

    /// The algorithm alltoall and alltoalls use for blocks of `block` bytes.
    pub fn alltoall_algorithm(&self, block: usize) -> AlltoallAlgo {
        collective::choose_alltoall(&self.rt.config().coll, block)
    }

    /// `shmem_team_sync`: returns once every PE of the team has called it.
    /// Does not complete outstanding puts (see [`Team::barrier`]).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// sh.team_world().sync()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn sync(&self) -> Result<()> {
        self.coll("shmem_team_sync")?.sync()
    }

    /// A barrier over the team: quiet (this PE's operations complete),
    /// then [`Team::sync`]; on the world team, `shmem_barrier_all`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// sh.team_world().barrier()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        const CALL: &str = "shmem_barrier";
        self.rt.quiet(CALL)?;
        self.coll(CALL)?.sync()
    }

    /// `shmem_broadcast`: copies `nelems` elements of `source` on team PE
    /// `root` into `dest` on every PE of the team, the root included.
    /// `source` and `dest` may be the same object.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let w = sh.team_world();
    /// let mut x = sh.calloc::<u32>(2)?;
    /// if sh.my_pe() == 0 { x.copy_from(0, &[4, 2]); }
    /// w.broadcast(&x, &x, 2, 0)?;
    /// assert_eq!(x.to_vec(), &[4, 2]);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn broadcast<T: Pod>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nelems: usize,
        root: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_broadcast";
        let d = self.need(CALL, dest, Some(nelems))?;
        let s = self.need(CALL, source, Some(nelems))?;
        // The root goes into the argument check as given: a root that one
        // PE alone has out of range is a disagreement every PE reports;
        // one out of range on every PE is each PE's error.
        let root_arg = i64::try_from(root).unwrap_or(i64::MAX);
        let mut c = self.data_coll(CALL, Args::broadcast(root_arg, nelems, size_of::<T>()))?;
        if root >= self.n_pes() {
            return Err(self.bad(
                CALL,
                format!("root {root} is not in the team of {} PEs", self.n_pes()),
            ));
        }
        c.broadcast(d, s, nelems * size_of::<T>(), root)
    }

    /// `shmem_fcollect`: concatenates `nelems` elements of every PE's
    /// `source`, in team order, into every PE's `dest` (`n_pes() * nelems`
    /// elements).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let w = sh.team_world();
    /// let mut one = sh.malloc::<u64>(1)?;
    /// one.write(0, sh.my_pe() as u64);
    /// let all = sh.malloc::<u64>(sh.n_pes())?;
    /// w.fcollect(&all, &one, 1)?;
    /// assert_eq!(all.read(sh.n_pes() - 1), sh.n_pes() as u64 - 1);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn fcollect<T: Pod>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nelems: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_fcollect";
        let d = self.need(CALL, dest, nelems.checked_mul(self.n_pes()))?;
        let s = self.need(CALL, source, Some(nelems))?;
        self.data_coll(CALL, Args::fcollect(nelems, size_of::<T>()))?
            .fcollect(d, s, nelems * size_of::<T>())
    }

    /// `shmem_collect`: concatenates `nelems` elements of every PE's
    /// `source` — `nelems` may differ between PEs — in team order into
    /// every PE's `dest`; returns the total number of elements.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let w = sh.team_world();
    /// let src = sh.calloc::<u8>(sh.n_pes())?;
    /// let dst = sh.calloc::<u8>(sh.n_pes() * sh.n_pes())?;
    /// let total = w.collect(&dst, &src, sh.my_pe())?; // PE i gives i elements
    /// assert_eq!(total, sh.n_pes() * (sh.n_pes() - 1) / 2);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn collect<T: Pod>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nelems: usize,
    ) -> Result<usize> {
        const CALL: &str = "shmem_collect";
        let s = self.need(CALL, source, Some(nelems))?;
        let es = size_of::<T>();
        self.data_coll(CALL, Args::collect(es))?
            .collect(dest.segment_offset(), dest.len() * es, s, nelems * es)
            .map(|b| b / es.max(1))
    }

    /// `shmem_alltoall`: block `j` of `source` (`nelems` elements at
    /// `j * nelems`) goes to block `me` of team PE `j`'s `dest`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let (me, n) = (sh.my_pe(), sh.n_pes());
    /// let mut src = sh.malloc::<u32>(n)?;
    /// let dst = sh.malloc::<u32>(n)?;
    /// for j in 0..n { src.write(j, (100 * me + j) as u32); }
    /// sh.team_world().alltoall(&dst, &src, 1)?;
    /// assert_eq!(dst.read(0), me as u32);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn alltoall<T: Pod>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nelems: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_alltoall";
        let total = nelems.checked_mul(self.n_pes());
        let d = self.need(CALL, dest, total)?;
        let s = self.need(CALL, source, total)?;
        self.data_coll(CALL, Args::alltoall(nelems, size_of::<T>()))?
            .alltoall(d, s, nelems * size_of::<T>())
    }

    /// `shmem_alltoalls`: as [`Team::alltoall`] with strides: element `k`
    /// of the block for team PE `j` is `source[(j * nelems + k) * sst]` and
    /// lands in `dest[(me * nelems + k) * dst]` there. Strides are at least
    /// 1.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let n = sh.n_pes();
    /// let src = sh.calloc::<i32>(2 * n)?;
    /// let dst = sh.calloc::<i32>(3 * n)?;
    /// sh.team_world().alltoalls(&dst, &src, 3, 2, 1)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn alltoalls<T: Pod>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        dst: usize,
        sst: usize,
        nelems: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem_alltoalls";
        if dst == 0 || sst == 0 {
            return Err(self.bad(
                CALL,
                format!("strides must be at least 1 (dst {dst}, sst {sst})"),
            ));
        }
        let span = |stride: usize| {
            (nelems == 0).then_some(0).or_else(|| {
                nelems
                    .checked_mul(self.n_pes())
                    .and_then(|k| (k - 1).checked_mul(stride))
                    .map(|x| x + 1)
            })
        };
        let d = self.need(CALL, dest, span(dst))?;
        let s = self.need(CALL, source, span(sst))?;
        self.data_coll(CALL, Args::alltoalls(nelems, size_of::<T>(), dst, sst))?
            .alltoalls(d, s, dst, sst, size_of::<T>(), nelems)
    }

    fn reduce_call<O: ReduceOp, T: Reducible<O>>(
        &self,
        call: &'static str,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nreduce: usize,
    ) -> Result<()> {
        let d = self.need(call, dest, Some(nreduce))?;
        let s = self.need(call, source, Some(nreduce))?;
        self.data_coll(call, Args::reduce::<T>(O::NAME, nreduce))?
            .reduce::<O, T>(d, s, nreduce)
    }

    /// `shmem_<op>_reduce`: element-wise reduction with operator `O` of
    /// `nreduce` elements of every PE's `source` into every PE's `dest`
    /// (which may be `source`). The types each operator accepts are in
    /// [`ops`]; every PE gets bit-identical results.
    ///
    /// ```no_run
    /// use shmem::coll::ops::Max;
    /// let sh = shmem::init()?;
    /// let mut x = sh.malloc::<f64>(1)?;
    /// x.write(0, sh.my_pe() as f64);
    /// sh.team_world().reduce::<Max, _>(&x, &x, 1)?; // in place
    /// assert_eq!(x.read(0), (sh.n_pes() - 1) as f64);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn reduce<O: ReduceOp, T: Reducible<O>>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.reduce_call::<O, T>("shmem_reduce", dest, source, nreduce)
    }

    reduce_fns!(
        /// `shmem_sum_reduce`: [`Team::reduce`] with [`Sum`].
        sum_reduce Sum "shmem_sum_reduce",
        /// `shmem_prod_reduce`: [`Team::reduce`] with [`Prod`].
        prod_reduce Prod "shmem_prod_reduce",
        /// `shmem_max_reduce`: [`Team::reduce`] with [`Max`].
        max_reduce Max "shmem_max_reduce",
        /// `shmem_min_reduce`: [`Team::reduce`] with [`Min`].
        min_reduce Min "shmem_min_reduce",
        /// `shmem_and_reduce`: [`Team::reduce`] with [`And`].
        and_reduce And "shmem_and_reduce",
        /// `shmem_or_reduce`: [`Team::reduce`] with [`Or`].
        or_reduce Or "shmem_or_reduce",
        /// `shmem_xor_reduce`: [`Team::reduce`] with [`Xor`].
        xor_reduce Xor "shmem_xor_reduce"
    );

    fn scan_call<O: ReduceOp, T: Reducible<O>>(
        &self,
        call: &'static str,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nreduce: usize,
        exclusive: bool,
    ) -> Result<()> {
        let d = self.need(call, dest, Some(nreduce))?;
        let s = self.need(call, source, Some(nreduce))?;
        self.data_coll(call, Args::scan::<T>(O::NAME, nreduce, exclusive))?
            .scan::<O, T>(d, s, nreduce, exclusive)
    }

    /// Inclusive scan (OpenSHMEM 1.6 `shmem_<op>_inscan`): `dest` on team
    /// PE `i` gets `source[0] O ... O source[i]` over the team's PEs,
    /// element-wise. `dest` may be `source`.
    ///
    /// ```no_run
    /// use shmem::coll::ops::Sum;
    /// let sh = shmem::init()?;
    /// let mut x = sh.malloc::<u64>(1)?;
    /// x.write(0, 1);
    /// sh.team_world().inscan::<Sum, _>(&x, &x, 1)?;
    /// assert_eq!(x.read(0), sh.my_pe() as u64 + 1);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn inscan<O: ReduceOp, T: Reducible<O>>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.scan_call::<O, T>("shmem_inscan", dest, source, nreduce, false)
    }

    /// Exclusive scan (OpenSHMEM 1.6 `shmem_<op>_exscan`): `dest` on team
    /// PE `i` gets `source[0] O ... O source[i-1]`; on PE 0 the operator's
    /// identity ([`Reducible::identity`], 0 for sums).
    pub fn exscan<O: ReduceOp, T: Reducible<O>>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.scan_call::<O, T>("shmem_exscan", dest, source, nreduce, true)
    }

    /// `shmem_sum_inscan`: [`Team::inscan`] with [`Sum`].
    pub fn sum_inscan<T: Reducible<Sum>>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.scan_call::<Sum, T>("shmem_sum_inscan", dest, source, nreduce, false)
    }

    /// `shmem_sum_exscan`: [`Team::exscan`] with [`Sum`].
    pub fn sum_exscan<T: Reducible<Sum>>(
        &self,
        dest: &SymVec<'_, T>,
        source: &impl Readable<T>,
        nreduce: usize,
    ) -> Result<()> {
        self.scan_call::<Sum, T>("shmem_sum_exscan", dest, source, nreduce, true)
    }
}
