//! Teams as in OpenSHMEM 1.5: ordered subsets of the job's PEs on which
//! collectives run, with team-relative PE numbers.
//!
//! - [`Shmem::team_world`] (`SHMEM_TEAM_WORLD`) holds every PE;
//!   [`Shmem::team_shared`] (`SHMEM_TEAM_SHARED`) the PEs whose memory this
//!   PE can load and store directly: the PEs of its host (every PE on
//!   `smp`; on `ipv6` and `ofi`, those with this PE's host key, see
//!   `oshrun --hosts`; only itself on `fpga`).
//! - [`Team::split_strided`] and [`Team::split_2d`] make new teams from a
//!   parent, collectively over the parent; [`Team::destroy`] (or drop)
//!   releases one, collectively over the team.
//!
//! # The pool
//!
//! Each team owns one *slot* of the collective pool, a region of every PE's
//! segment after the user heap ([`crate::runtime::layout`]); users never
//! pass `pSync` or work arrays. A slot holds a cache-line cell per possible
//! sender (the team-relative rank) with its 64-bit message counter and the
//! argument summaries data collectives compare (see [`crate::coll`]), two
//! auxiliary words, a call record, and two scratch areas of
//! `FSHMEM_COLL_SCRATCH` bytes used alternately.
//! The world team takes slot 0 and the shared team slot 1 at start-up;
//! `FSHMEM_TEAMS_MAX` slots exist in all.
//!
//! A split takes a slot collectively and deterministically: every PE of the
//! parent contributes its bitmap of free slots to an AND-reduction over the
//! parent, and all pick the lowest slot free everywhere (two for
//! `split_2d`), so the members of a new team agree on its slot whatever
//! other teams each belongs to. When none is free on every PE the split
//! fails on every PE with [`ShmemError::TeamsExhausted`]. Destroy completes
//! the PE's operations (quiet), synchronizes the team, zeroes the slot's
//! counters and frees the slot.
//!
//! Team creation and destruction are collective: every PE of the parent
//! (of the team, for destroy) makes the same calls in the same order, and
//! one PE must not create teams from several threads at once (an error).
//!
//! ```no_run
//! use shmem::TeamConfig;
//! let sh = shmem::init()?;
//! let world = sh.team_world();
//! // The even PEs.
//! if let Some(even) = world.split_strided(0, 2, sh.n_pes().div_ceil(2), &TeamConfig::default())? {
//!     assert_eq!(even.my_pe(), sh.my_pe() / 2);
//!     assert_eq!(even.translate_pe(even.my_pe(), &world), Some(sh.my_pe()));
//!     even.sync()?;
//! } // destroyed here, collectively over the even PEs
//! # Ok::<(), shmem::ShmemError>(())
//! ```

use crate::Shmem;
use crate::collective::Coll;
use crate::error::{Result, ShmemError};
pub use crate::pool::TeamConfig;
// The pool's types, where the C ABI finds them.
pub(crate) use crate::pool::{CELL, TeamState};
use crate::runtime::Runtime;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A team handle (`shmem_team_t`). Handles of split teams destroy the team
/// when dropped (collectively: see [`Team::destroy`]); the world and shared
/// teams are never destroyed.
///
/// Team-relative PE numbers run `0..n_pes()` in the order of the members'
/// world ranks.
pub struct Team<'s> {
    pub(crate) rt: &'s Runtime,
    pub(crate) st: Arc<TeamState>,
}

impl std::fmt::Debug for Team<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Team")
            .field("my_pe", &self.st.me)
            .field("members", &self.st.members)
            .field("slot", &self.st.slot)
            .finish()
    }
}

impl Shmem {
    /// `SHMEM_TEAM_WORLD`: every PE of the job, numbered as by
    /// [`Shmem::my_pe`].
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let world = sh.team_world();
    /// assert_eq!((world.my_pe(), world.n_pes()), (sh.my_pe(), sh.n_pes()));
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn team_world(&self) -> Team<'_> {
        let rt = self.rt();
        Team {
            rt,
            st: rt.pool.world.clone(),
        }
    }

    /// `SHMEM_TEAM_SHARED`: the PEs whose symmetric memory this PE can load
    /// and store directly ([`crate::SymVec::ptr`] is `Some`).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let shared = sh.team_shared();
    /// assert!(shared.n_pes() >= 1);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn team_shared(&self) -> Team<'_> {
        let rt = self.rt();
        Team {
            rt,
            st: rt.pool.shared.clone(),
        }
    }
}

impl<'s> Team<'s> {
    /// `shmem_team_my_pe`: this PE's number in the team.
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.st.me
    }

    /// `shmem_team_n_pes`: the number of PEs in the team.
    #[inline]
    pub fn n_pes(&self) -> usize {
        self.st.size()
    }

    /// The world rank of team PE `pe` (`None` if out of range).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// assert_eq!(sh.team_world().world_pe(0), Some(0));
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn world_pe(&self, pe: usize) -> Option<usize> {
        self.st.members.get(pe).copied()
    }

    /// `shmem_team_translate_pe`: the number in `dest` of this team's PE
    /// `pe`, or `None` when `pe` is out of range or not a member of `dest`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let w = sh.team_world();
    /// assert_eq!(w.translate_pe(sh.my_pe(), &sh.team_shared()).is_some(), true);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn translate_pe(&self, pe: usize, dest: &Team<'_>) -> Option<usize> {
        self.world_pe(pe).and_then(|w| dest.st.rank_of(w))
    }

    /// `shmem_team_get_config`: the configuration the team was created
    /// with.
    pub fn get_config(&self) -> TeamConfig {
        self.st.config
    }

    /// The pool slot of this team (a diagnostic; the world team has 0).
    pub fn slot(&self) -> usize {
        self.st.slot
    }

    /// Whether this is the world or shared team (never destroyed).
    pub fn is_predefined(&self) -> bool {
        self.st.predefined
    }

    /// `shmem_team_split_strided`: the team of the parent PEs `start`,
    /// `start + stride`, ..., `size` of them. Collective over the parent
    /// (every parent PE calls it with the same arguments); returns
    /// `Ok(None)` on parent PEs outside the new team
    /// (`SHMEM_TEAM_INVALID`).
    ///
    /// Errors (on every PE alike): [`ShmemError::Invalid`] when `size` is
    /// zero, `stride` is zero with `size > 1`, or a PE falls outside the
    /// parent; [`ShmemError::TeamsExhausted`] when the pool has no common
    /// free slot.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let w = sh.team_world();
    /// let first_two = w.split_strided(0, 1, 2.min(sh.n_pes()), &Default::default())?;
    /// assert_eq!(first_two.is_some(), sh.my_pe() < 2);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn split_strided(
        &self,
        start: usize,
        stride: usize,
        size: usize,
        config: &TeamConfig,
    ) -> Result<Option<Team<'s>>> {
        const CALL: &str = "shmem_team_split_strided";
        let n = self.n_pes();
        let last = size
            .checked_sub(1)
            .and_then(|k| k.checked_mul(stride))
            .and_then(|d| d.checked_add(start));
        let ok = match last {
            Some(l) => l < n && (stride > 0 || size == 1),
            None => false,
        };
        if !ok {
            return Err(self.invalid(
                CALL,
                format!(
                    "start {start}, stride {stride}, size {size} does not fit the parent team of {n} PEs"
                ),
            ));
        }
        let ranks: Vec<usize> = (0..size).map(|i| start + i * stride).collect();
        self.split_ranks(CALL, &ranks, config)
    }

    /// The team of parent ranks `ranks`, numbered in that order (distinct,
    /// in range: the caller checks). Collective over the parent.
    pub(crate) fn split_ranks(
        &self,
        call: &'static str,
        ranks: &[usize],
        config: &TeamConfig,
    ) -> Result<Option<Team<'s>>> {
        let slots = self.take_slots(call, 1)?;
        Ok(self.make_team(slots[0], ranks, *config))
    }

    /// `shmem_team_split_2d`: splits the parent into a grid with rows of
    /// `xrange` PEs (the last row may be shorter): returns this PE's row
    /// team (consecutive parent PEs) and column team (parent PEs equal
    /// modulo `xrange`). An `xrange` above the parent size counts as the
    /// parent size. Collective over the parent; every PE gets both teams.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let (row, col) = sh.team_world().split_2d(2, &Default::default(), &Default::default())?;
    /// assert_eq!(row.my_pe(), sh.my_pe() % 2);
    /// assert_eq!(col.my_pe(), sh.my_pe() / 2);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn split_2d(
        &self,
        xrange: usize,
        xconfig: &TeamConfig,
        yconfig: &TeamConfig,
    ) -> Result<(Team<'s>, Team<'s>)> {
        const CALL: &str = "shmem_team_split_2d";
        let n = self.n_pes();
        if xrange == 0 {
            return Err(self.invalid(CALL, "xrange must be at least 1".to_string()));
        }
        let x = xrange.min(n);
        let slots = self.take_slots(CALL, 2)?;
        let me = self.my_pe();
        let row0 = me / x * x;
        let row: Vec<usize> = (row0..(row0 + x).min(n)).collect();
        let col: Vec<usize> = (me % x..n).step_by(x).collect();
        let xt = self.make_team(slots[0], &row, *xconfig);
        let yt = self.make_team(slots[1], &col, *yconfig);
        match (xt, yt) {
            (Some(a), Some(b)) => Ok((a, b)),
            _ => unreachable!("every PE is in its own row and column"),
        }
    }

    /// Builds the team of parent ranks `ranks` in `slot` if this PE is one
    /// of them.
    fn make_team(&self, slot: usize, ranks: &[usize], config: TeamConfig) -> Option<Team<'s>> {
        let me = ranks.iter().position(|&r| r == self.my_pe())?;
        let members: Vec<usize> = ranks.iter().map(|&r| self.st.members[r]).collect();
        let pool = &self.rt.pool;
        *pool.free.lock().unwrap_or_else(|p| p.into_inner()) &= !(1u64 << slot);
        if self.rt.config().debug {
            conduits::report!(
                "PE {}: team created in slot {slot}: world PEs {members:?}",
                self.rt.my_pe()
            );
        }
        Some(Team {
            rt: self.rt,
            st: Arc::new(TeamState::new(slot, members, me, config, false)),
        })
    }

    /// Agrees with the parent's PEs on `k` slots free on all of them.
    fn take_slots(&self, call: &'static str, k: usize) -> Result<Vec<usize>> {
        let pool = &self.rt.pool;
        let _one = pool.creating.try_lock().map_err(|_| {
            self.invalid(
                call,
                "another thread of this PE is creating a team".to_string(),
            )
        })?;
        let mine = *pool.free.lock().unwrap_or_else(|p| p.into_inner());
        let common = Coll::new(self.rt, &self.st, call)?.and_u64(mine)?;
        let mut slots = Vec::with_capacity(k);
        let mut bits = common;
        while slots.len() < k && bits != 0 {
            let s = bits.trailing_zeros() as usize;
            slots.push(s);
            bits &= bits - 1;
        }
        if slots.len() < k {
            return Err(ShmemError::TeamsExhausted {
                pe: self.rt.my_pe(),
                call,
                max: pool.slots,
            });
        }
        Ok(slots)
    }

    fn invalid(&self, call: &'static str, reason: String) -> ShmemError {
        ShmemError::Invalid {
            pe: self.rt.my_pe(),
            call,
            reason,
        }
    }

    /// `shmem_team_destroy`: completes this PE's operations (quiet),
    /// synchronizes the team, and returns its slot to the pool. Collective
    /// over the team. The world and shared teams are not destroyed (the
    /// call only drops the handle).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let t = sh.team_world().split_strided(0, 1, sh.n_pes(), &Default::default())?.unwrap();
    /// t.destroy()?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn destroy(self) -> Result<()> {
        // Drop then finds the team destroyed and does nothing.
        destroy_state(self.rt, &self.st)
    }
}

/// Destroys a split team's state once (later calls do nothing).
fn destroy_state(rt: &Runtime, st: &Arc<TeamState>) -> Result<()> {
    const CALL: &str = "shmem_team_destroy";
    if st.predefined || st.destroyed.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    rt.quiet(CALL)?;
    let mut c = Coll::new_unchecked(rt, st, CALL);
    c.sync()?;
    drop(c);
    // Every message of the team to this PE has been waited for, so nothing
    // more arrives in the slot: zero its counters for the next team.
    let base = rt.pool.slot_base(st.slot);
    for i in 0..st.size() {
        let p = rt.local_addr(base + CELL * i).cast::<u64>();
        // SAFETY: the counter lies in this PE's pool slot, 8-byte aligned,
        // inside the segment; peers only touch it with atomics.
        unsafe { AtomicU64::from_ptr(p) }.store(0, Ordering::Release);
    }
    *rt.pool.free.lock().unwrap_or_else(|p| p.into_inner()) |= 1u64 << st.slot;
    if rt.config().debug {
        conduits::report!("PE {}: team in slot {} destroyed", rt.my_pe(), st.slot);
    }
    Ok(())
}

impl Drop for Team<'_> {
    /// Destroys a split team (see [`Team::destroy`]); errors are printed.
    /// Nothing happens while the thread panics: the destroy is collective
    /// and the PE is leaving the job.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Err(e) = destroy_state(self.rt, &self.st) {
            conduits::report!("{e}");
        }
    }
}
