//! The collective engine: messages, waits and the algorithms, on segment
//! offsets. Only the conduit's puts, put-with-signal, atomics and fence,
//! stores through its mappings of peers' segments, and local waits are
//! used, so every algorithm runs unchanged on any conduit.
//!
//! # Messages
//!
//! Each team slot holds one 64-bit counter per sender (team rank) on every
//! PE. A message from `s` to `r` is a put-with-signal (or a bare atomic
//! add) that adds 1 to counter `s` on `r`; `r` counts the messages it has
//! waited for from each sender and waits for the next one with
//! `counter >= count`. One writer per counter, atomics to one word applied
//! in issue order and data before signal make this exact however far a
//! sender runs ahead into later collectives: no reset, no round confusion.
//!
//! To a PE of its host (smp, or the on-node PEs of a routed job: those
//! whose segment the conduit maps, [`Segments::peer_segment`]) a PE sends
//! without the conduit, as shared-memory collectives do: it copies the
//! data from its own segment straight into the receiver's through the
//! mapping (no staging copy) and adds 1 to the counter there with a CPU
//! atomic, as the conduit's put-with-signal would. Whether a PE is reached
//! this way never changes during a job, so every message to one counter
//! takes one path.
//!
//! # Scratch
//!
//! Data a peer must not put straight into the user's destination (partial
//! reductions and scans, the sizes of a collect) goes to one of the slot's
//! two scratch areas, chosen by the parity of a per-team step counter that
//! every PE advances identically. Reductions and collects need every PE's
//! input for every output, so a PE in step `k + 2` knows every PE has left
//! step `k`, and the area of `k` is free again. Scans lack that dependency
//! and end each step with a team sync. Vectors larger than a scratch area
//! are reduced and scanned in chunks (pipelined steps).
//!
//! The algorithms live in `engine/movement.rs` (broadcast, collects,
//! alltoall) and `engine/reduce.rs` (reductions and scans).
//!
//! # Hosts
//!
//! On a team whose PEs span hosts, barriers, broadcasts and reductions run
//! in two levels (`engine/hier.rs`): within each host through shared
//! memory, and among one leader per host through the network, running the
//! algorithms of this module on the leaders alone (a *view* of the team:
//! `n()`, `me()` and the ranks that `send` and `wait` take are the
//! view's).

mod hier;
mod movement;
mod reduce;

use super::ops::{ReduceOp, Reducible, combine_into};
use crate::agree::{Args, RECORD_LEN, Record, SUMMARY_LEN, Summary, mismatch};
use crate::config::{
    Algo, AlltoallAlgo, BarrierAlgo, BcastAlgo, CollConfig, FcollectAlgo, ReduceAlgo,
};
use crate::error::{Result, ShmemError};
use crate::pod::{Pod, bytes_of};
use crate::pool::{CELL, CollState, TeamState, aux_offset, record_offset, scratch_offset};
use crate::runtime::Runtime;
use conduits::prelude::*;
use conduits::segmem;
use conduits::{AmoOp, AmoWidth, ConduitError, SignalOp};
use std::sync::MutexGuard;
use std::sync::atomic::{AtomicU64, Ordering};

/// The barrier algorithm for a team of `n` PEs.
pub(crate) fn choose_barrier(c: &CollConfig, n: usize) -> BarrierAlgo {
    match c.barrier {
        Algo::Forced(a) => a,
        Algo::Auto if n >= c.barrier_tree_pes => BarrierAlgo::Tree,
        Algo::Auto => BarrierAlgo::Dissemination,
    }
}

/// The broadcast algorithm for `nbytes` on `n` PEs.
pub(crate) fn choose_bcast(c: &CollConfig, n: usize, nbytes: usize) -> BcastAlgo {
    match c.bcast {
        Algo::Forced(a) => a,
        Algo::Auto if nbytes >= c.bcast_large && n >= 3 => BcastAlgo::ScatterAllgather,
        Algo::Auto => BcastAlgo::Binomial,
    }
}

/// The (f)collect algorithm for a result of `total` bytes on `n` PEs.
pub(crate) fn choose_fcollect(c: &CollConfig, n: usize, total: usize) -> FcollectAlgo {
    let pow2 = n.is_power_of_two();
    let a = match c.fcollect {
        Algo::Forced(a) => a,
        Algo::Auto if total >= c.fcollect_large => FcollectAlgo::Ring,
        Algo::Auto if pow2 => FcollectAlgo::RecursiveDoubling,
        Algo::Auto => FcollectAlgo::Bruck,
    };
    if a == FcollectAlgo::RecursiveDoubling && !pow2 {
        FcollectAlgo::Bruck
    } else {
        a
    }
}

/// The alltoall algorithm for blocks of `block` bytes.
pub(crate) fn choose_alltoall(c: &CollConfig, block: usize) -> AlltoallAlgo {
    match c.alltoall {
        Algo::Forced(a) => a,
        Algo::Auto if block >= c.alltoall_pairwise => AlltoallAlgo::Pairwise,
        Algo::Auto => AlltoallAlgo::Linear,
    }
}

/// The reduction algorithm for `nbytes` on `n` PEs.
pub(crate) fn choose_reduce(c: &CollConfig, n: usize, nbytes: usize) -> ReduceAlgo {
    match c.reduce {
        Algo::Forced(a) => a,
        Algo::Auto if nbytes < c.reduce_large => ReduceAlgo::RecursiveDoubling,
        Algo::Auto if n.is_power_of_two() => ReduceAlgo::Rabenseifner,
        Algo::Auto => ReduceAlgo::Ring,
    }
}

/// Elements of `es` bytes per chunk of a reduction by `algo` on `n` PEs
/// with scratch areas of `sl` bytes.
pub(crate) fn reduce_chunk(algo: ReduceAlgo, n: usize, sl: usize, es: usize) -> usize {
    let p2 = 1usize << (usize::BITS - 1 - n.leading_zeros());
    let chunk = match algo {
        ReduceAlgo::RecursiveDoubling => sl / (p2.trailing_zeros() as usize + 1) / es,
        ReduceAlgo::Rabenseifner => sl / 2 / es,
        ReduceAlgo::Ring => sl / es / n * n,
    };
    chunk.max(1)
}

/// Radix of the tree barrier.
pub const TREE_RADIX: usize = 4;

/// One collective call in progress on a team: holds the team's
/// bookkeeping lock, so calls on one team are serialized on a PE.
pub(crate) struct Coll<'a> {
    rt: &'a Runtime,
    t: &'a TeamState,
    st: MutexGuard<'a, CollState>,
    call: &'static str,
    base: usize,
    /// While the algorithms run on a subset of the team (the hosts'
    /// leaders): its team ranks, and this PE's index among them.
    view: Option<(Vec<usize>, usize)>,
}

impl<'a> Coll<'a> {
    /// Starts a collective on `t`; errors if the team was destroyed.
    pub(crate) fn new(rt: &'a Runtime, t: &'a TeamState, call: &'static str) -> Result<Coll<'a>> {
        rt.not_in_handler(call)?;
        if t.destroyed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(ShmemError::Invalid {
                pe: rt.my_pe(),
                call,
                reason: "the team was destroyed".to_string(),
            });
        }
        Ok(Self::new_unchecked(rt, t, call))
    }

    /// Starts a data collective (one that puts into peers' destinations):
    /// [`Coll::new`] followed by a team sync that also checks that every
    /// PE called it with the same `args` ([`Coll::sync_agree`]). The
    /// algorithms put straight into destinations and a PE leaves a
    /// collective as soon as its own part is done, so without the sync a
    /// fast PE's next collective could write a destination a slow PE is
    /// still filling (a reduction into X followed by a broadcast into X);
    /// without the check, a PE that asked for fewer elements than another
    /// would receive more than it asked for. The Rust team API and the C
    /// ABI both start their data collectives here.
    pub(crate) fn new_data(
        rt: &'a Runtime,
        t: &'a TeamState,
        call: &'static str,
        args: Args,
    ) -> Result<Coll<'a>> {
        let mut c = Self::new(rt, t, call)?;
        c.sync_agree(args)?;
        Ok(c)
    }

    /// As [`Coll::new`] without the destroyed check (for destroy itself).
    pub(crate) fn new_unchecked(rt: &'a Runtime, t: &'a TeamState, call: &'static str) -> Coll<'a> {
        Coll {
            rt,
            t,
            st: t.coll.lock().unwrap_or_else(|p| p.into_inner()),
            call,
            base: rt.pool.slot_base(t.slot),
            view: None,
        }
    }

    /// The number of PEs the algorithms run on: the team's, or the view's.
    #[inline]
    pub(crate) fn n(&self) -> usize {
        self.view.as_ref().map_or(self.t.size(), |v| v.0.len())
    }

    /// This PE's rank among them.
    #[inline]
    pub(crate) fn me(&self) -> usize {
        self.view.as_ref().map_or(self.t.me, |v| v.1)
    }

    /// The team rank of rank `r` of the algorithms (of the view, if any).
    #[inline]
    fn tr(&self, r: usize) -> usize {
        self.view.as_ref().map_or(r, |v| v.0[r])
    }

    #[cold]
    fn err(&self, e: ConduitError) -> ShmemError {
        self.rt.err(self.call, e)
    }

    #[inline]
    fn counter(&self, from: usize) -> usize {
        self.base + CELL * from
    }

    /// Offset of auxiliary word `i` (0 or 1) of the slot.
    fn aux(&self, i: usize) -> usize {
        self.base + aux_offset(&self.rt.pool) + 8 * i
    }

    /// Where this process stores to team rank `tr`'s segment directly: a
    /// PE of this host other than itself (smp, or the on-node part of a
    /// routed job), whose messages go through its mapping.
    #[inline]
    fn mapped(&self, tr: usize) -> Option<*mut u8> {
        if tr == self.t.me {
            return None;
        }
        self.rt.conduit.peer_segment(self.t.members[tr])
    }

    /// Ends a message to team rank `tr`, whose segment this process maps at
    /// `base`: adds 1 to this PE's counter there, after the message's data
    /// (the conduit's put-with-signal, without its dispatch and checks).
    #[inline]
    fn publish(&self, base: *mut u8) {
        let off = self.counter(self.t.me);
        debug_assert!(off + 8 <= self.rt.conduit.segment_len());
        // SAFETY: `base` maps a segment of `segment_len` bytes (the
        // conduit's `peer_segment`); the counter lies in the team pool
        // inside it, 8-byte aligned (`CELL` is a multiple of 64). The word
        // is only ever accessed atomically: this PE adds to it, its owner
        // loads it (`Runtime::load_word`).
        unsafe { AtomicU64::from_ptr(base.add(off).cast()).fetch_add(1, Ordering::AcqRel) };
    }

    /// A message of `len` bytes at `src` to `off` on team rank `tr`, whose
    /// segment this process maps at `base`: the bytes are copied through
    /// the mapping (after the conduit's own range check, which this path
    /// bypasses), then counted ([`Coll::publish`]).
    ///
    /// # Safety
    /// `src` is valid for reads of `len` bytes and not covered by a Rust
    /// reference that anything writes meanwhile (the caller's own slice,
    /// or this PE's segment, reached by raw pointer only).
    #[inline]
    unsafe fn send_mapped(
        &self,
        tr: usize,
        base: *mut u8,
        off: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let c = &self.rt.conduit;
        conduits::error::check_range(self.t.members[tr], c.size(), off, len, c.segment_len())
            .map_err(|e| self.err(e))?;
        // SAFETY: the destination lies in `tr`'s segment (checked), mapped
        // at `base` and reached through raw pointers only; the caller
        // vouches for the source. Both sides are accessed with relaxed
        // atomics (`segmem`), so a thread of this process that touches
        // either range meanwhile does not race with the copy; the owner
        // reads the bytes only after the count below (acquire), which
        // orders them before its reads.
        unsafe { segmem::copy_shared(src, base.add(off), len) };
        self.publish(base);
        Ok(())
    }

    /// Puts `data` at `off` on PE `to` (of the algorithms' ranks) and
    /// counts one message there.
    #[inline]
    fn send(&self, to: usize, off: usize, data: &[u8]) -> Result<()> {
        let tr = self.tr(to);
        if let Some(base) = self.mapped(tr) {
            // SAFETY: `data` is a slice the caller holds: valid for its
            // length; the copy only reads it.
            return unsafe { self.send_mapped(tr, base, off, data.as_ptr(), data.len()) };
        }
        self.rt
            .conduit
            .put_signal(
                CtxId::DEFAULT,
                self.t.members[tr],
                off,
                data,
                self.counter(self.t.me),
                SignalOp::Add,
                1,
            )
            .map_err(|e| self.err(e))
    }

    /// Sends `len` bytes of this PE's segment at `src` to `off` on `to`.
    #[inline]
    fn send_seg(&self, to: usize, off: usize, src: usize, len: usize) -> Result<()> {
        let tr = self.tr(to);
        if let Some(base) = self.mapped(tr) {
            debug_assert!(src + len <= self.rt.conduit.segment_len());
            // SAFETY: the source lies in this PE's segment (the engine's
            // offsets), reached through a raw pointer that no Rust
            // reference aliases.
            return unsafe { self.send_mapped(tr, base, off, self.rt.local_addr(src), len) };
        }
        // Small messages through a buffer on the stack, not the heap.
        let mut small = [0u8; 256];
        if len <= small.len() {
            self.read_into(src, &mut small[..len]);
            return self.send(to, off, &small[..len]);
        }
        let data = self.seg(src, len);
        self.send(to, off, &data)
    }

    /// A message without data.
    #[inline]
    fn signal(&self, to: usize) -> Result<()> {
        let tr = self.tr(to);
        if let Some(base) = self.mapped(tr) {
            self.publish(base);
            return Ok(());
        }
        self.rt
            .conduit
            .atomic(
                CtxId::DEFAULT,
                self.t.members[tr],
                self.counter(self.t.me),
                AmoOp::Add,
                AmoWidth::W64,
                1,
                0,
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Waits for the next `k` messages from PE `from` (of the algorithms'
    /// ranks).
    #[inline]
    fn wait_n(&mut self, from: usize, k: u64) -> Result<()> {
        let from = self.tr(from);
        let want = {
            let e = &mut self.st.expected[from];
            *e += k;
            *e
        };
        let pe = self.t.members[from];
        let (rt, call) = (self.rt, self.call);
        rt.wait_word_watching(
            self.counter(from),
            AmoWidth::W64,
            call,
            |v| v >= want,
            |v| format!("PE {pe} ({v} of {want} messages from it have arrived)"),
            || super::active::watch(rt, call),
        )
        .map(drop)
    }

    #[inline]
    fn wait(&mut self, from: usize) -> Result<()> {
        self.wait_n(from, 1)
    }

    /// The scratch area of the next step.
    fn next_scratch(&mut self) -> usize {
        let s = self.st.step;
        self.st.step += 1;
        let pool = &self.rt.pool;
        self.base + scratch_offset(pool) + (s as usize % 2) * pool.scratch
    }

    fn scratch_len(&self) -> usize {
        self.rt.pool.scratch
    }

    /// A copy of `len` bytes of this PE's segment at `off`. A copy, not a
    /// reference: peers (or, in a faulty program, this PE's other
    /// operations) may write the range while the collective reads it, and
    /// a `&[u8]` over it would promise they do not.
    #[inline]
    fn seg(&self, off: usize, len: usize) -> Vec<u8> {
        debug_assert!(off + len <= self.rt.conduit.segment_len());
        self.read::<u8>(off, len)
    }

    /// memmove within this PE's segment.
    #[inline]
    fn copy_local(&self, dst: usize, src: usize, len: usize) {
        if dst != src && len > 0 {
            // SAFETY: both ranges lie in this PE's segment (see `seg`),
            // reached by raw pointer only; `copy_shared` accesses both
            // atomically and allows overlap.
            unsafe { segmem::copy_shared(self.rt.local_addr(src), self.rt.local_addr(dst), len) };
        }
    }

    /// Reads `count` values of `T` at `off` of this PE's segment.
    fn read<T: Pod>(&self, off: usize, count: usize) -> Vec<T> {
        let mut v = Vec::<T>::with_capacity(count);
        // SAFETY: callers pass ranges inside this PE's segment (validated
        // user ranges or pool areas), aligned for `T`, mapped while the
        // runtime lives and reached through a raw pointer that no Rust
        // reference covers. The loads are relaxed atomics of `T`'s width
        // (`segmem`), as every access of the Rust API to a typed object,
        // so a thread of this process writing the range meanwhile does not
        // race with them (what a peer wrote is ordered before them by the
        // count the engine acquired first). The destination is the
        // vector's fresh buffer of `count` elements; every bit pattern is
        // a valid `T` (`Pod`), so all of them are initialized.
        unsafe {
            segmem::load_elems(self.rt.local_addr(off).cast::<T>(), v.as_mut_ptr(), count);
            v.set_len(count);
        }
        v
    }

    /// Copies `dst.len()` bytes of this PE's segment at `off` into `dst`
    /// (no allocation: for the small, fixed-size reads of every call).
    #[inline]
    fn read_into(&self, off: usize, dst: &mut [u8]) {
        debug_assert!(off + dst.len() <= self.rt.conduit.segment_len());
        // SAFETY: as in `read`, in bytes, into `dst`, a distinct buffer of
        // the caller's.
        unsafe { segmem::copy_out(self.rt.local_addr(off), dst.as_mut_ptr(), dst.len()) };
    }

    /// Writes `data` at `off` of this PE's segment.
    fn write<T: Pod>(&self, off: usize, data: &[T]) {
        // SAFETY: the destination lies in this PE's segment (see `read`),
        // aligned for `T`, reached through a raw pointer that no Rust
        // reference covers and written with relaxed atomics of `T`'s
        // width; it cannot overlap `data`, a private vector.
        unsafe {
            segmem::store_elems(
                data.as_ptr(),
                self.rt.local_addr(off).cast::<T>(),
                data.len(),
            )
        };
    }

    fn cfg(&self) -> &CollConfig {
        &self.rt.config().coll
    }

    // ----------------------------------------------------------------
    // sync

    fn barrier_algo(&self) -> BarrierAlgo {
        choose_barrier(self.cfg(), self.n())
    }

    /// `shmem_team_sync`: no PE leaves before every PE has arrived.
    pub(crate) fn sync(&mut self) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        if n == 1 {
            return Ok(());
        }
        if let Some(h) = self.hier() {
            return self.hier_sync(&h);
        }
        match self.barrier_algo() {
            BarrierAlgo::Dissemination => {
                let mut d = 1;
                while d < n {
                    self.signal((me + d) % n)?;
                    self.wait((me + n - d) % n)?;
                    d <<= 1;
                }
            }
            BarrierAlgo::Tree => {
                let kids = (me * TREE_RADIX + 1)..((me * TREE_RADIX + TREE_RADIX + 1).min(n));
                for c in kids.clone() {
                    self.wait(c)?;
                }
                if me != 0 {
                    let parent = (me - 1) / TREE_RADIX;
                    self.signal(parent)?;
                    self.wait(parent)?;
                }
                for c in kids {
                    self.signal(c)?;
                }
            }
        }
        Ok(())
    }

    /// The team sync that starts a data collective, carrying each PE's
    /// [`Summary`] of the calls it has heard of on every message: the
    /// rounds and partners of [`Coll::sync`], so the check adds no
    /// message. Every PE ends with the summary of the whole team; if two
    /// PEs' arguments differ, every PE returns the same
    /// [`ShmemError::CollectiveMismatch`], before any data moves, after two
    /// more syncs (around fetching the two calls' records, so that no PE
    /// leaves the team, or the job, before every PE has the error in
    /// hand).
    ///
    /// A message is a put-with-signal of the summary into the sender's
    /// [`CELL`] on the receiver, next to the counter it increments: one
    /// cache line, as for a bare signal. A sender sends to a receiver at
    /// most once per sync; alternate syncs use alternate summary places of
    /// the cell, and a sender reaches the same place again two syncs
    /// later, which it cannot before the receiver has entered the next
    /// sync, after reading this one.
    pub(crate) fn sync_agree(&mut self, args: Args) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        if n == 1 {
            return Ok(());
        }
        let args = args.stamped(self.st.agree_step);
        let parity = (self.st.agree_step % 2) as usize;
        self.st.agree_step += 1;
        let at = 8 + parity * SUMMARY_LEN;
        let mut sum = Summary::own(me, &args);
        if let Some(h) = self.hier() {
            sum = self.hier_agree(&h, at, sum)?;
            return self.agreed(sum, args);
        }
        match self.barrier_algo() {
            BarrierAlgo::Dissemination => {
                let mut d = 1;
                while d < n {
                    self.send_summary((me + d) % n, at, &sum)?;
                    sum.merge(&self.wait_summary((me + n - d) % n, at)?);
                    d <<= 1;
                }
            }
            BarrierAlgo::Tree => {
                let kids = (me * TREE_RADIX + 1)..((me * TREE_RADIX + TREE_RADIX + 1).min(n));
                for c in kids.clone() {
                    sum.merge(&self.wait_summary(c, at)?);
                }
                if me != 0 {
                    let parent = (me - 1) / TREE_RADIX;
                    self.send_summary(parent, at, &sum)?;
                    // The parent's summary is the whole team's, this
                    // subtree's included: merging the subtree's again
                    // changes nothing, except when the parent made a
                    // collective without the check (a barrier) and left an
                    // old summary in its cell, which a stamped call here
                    // then contradicts (`Args::stamped`).
                    let mine = sum;
                    sum = self.wait_summary(parent, at)?;
                    sum.merge(&mine);
                }
                for c in kids {
                    self.send_summary(c, at, &sum)?;
                }
            }
        }
        self.agreed(sum, args)
    }

    /// The end of [`Coll::sync_agree`], once this PE has the team's
    /// summary `sum`.
    fn agreed(&mut self, sum: Summary, args: Args) -> Result<()> {
        let me = self.me();
        match sum.disagreement() {
            None => Ok(()),
            Some((first, other)) => {
                // Every PE found the same disagreement: each leaves its
                // record, then all fetch the two that disagree.
                let off = self.base + record_offset(&self.rt.pool);
                self.write(off, &Record::new(me, self.call, args).encode());
                self.sync()?;
                let first = self.record_of(first, off)?;
                let other = self.record_of(other, off)?;
                self.sync()?;
                let members = &self.t.members;
                let world = |r: usize| members.get(r).copied().unwrap_or(r);
                Err(mismatch(self.rt.my_pe(), self.call, &first, &other, world))
            }
        }
    }

    /// Sends `sum` to team PE `to` as one message, at byte `at` of this
    /// PE's cell there.
    #[inline]
    fn send_summary(&self, to: usize, at: usize, sum: &Summary) -> Result<()> {
        let cell = self.counter(self.t.me);
        self.send(to, cell + at, &sum.encode())
    }

    /// Waits for the next message from team PE `from` and reads the
    /// summary it carried at byte `at` of its cell.
    #[inline]
    fn wait_summary(&mut self, from: usize, at: usize) -> Result<Summary> {
        self.wait(from)?;
        let mut b = [0u8; SUMMARY_LEN];
        self.read_into(self.counter(self.tr(from)) + at, &mut b);
        Ok(Summary::decode(&b))
    }

    /// The call record team PE `rank` left at `off` of its segment.
    fn record_of(&self, rank: usize, off: usize) -> Result<Record> {
        let mut b = [0u8; RECORD_LEN];
        if rank == self.me() {
            self.read_into(off, &mut b);
        } else {
            self.rt
                .conduit
                .get(CtxId::DEFAULT, self.t.members[rank], off, &mut b)
                .map_err(|e| self.err(e))?;
        }
        Ok(Record::decode(&b))
    }
}
