//! The collective engine: the algorithms of [`crate::coll`] on segment
//! offsets (`engine`), the reduction operators ([`ops`]) and the check that
//! the PEs of a data collective agree on its arguments (`agree`, and
//! `active` for the deprecated active-set calls). It uses
//! only the runtime ([`crate::runtime`]) and the team slots
//! ([`crate::pool`]); the Rust API of teams and collectives sits above it.

mod active;
mod engine;
pub mod ops;

pub(crate) use crate::agree::{ActiveSet, Args, Kind};
pub(crate) use active::announce;
pub use engine::TREE_RADIX;
pub(crate) use engine::{
    Coll, choose_alltoall, choose_barrier, choose_bcast, choose_fcollect, choose_reduce,
};

use crate::error::Result;
use crate::runtime::Runtime;

impl Runtime {
    /// `shmem_barrier_all`: quiet, then [`Runtime::sync_all`].
    pub(crate) fn barrier_all(&self, call: &'static str) -> Result<()> {
        self.quiet(call)?;
        self.sync_all(call)
    }

    /// `shmem_sync_all`: the world team's sync (dissemination or tree
    /// barrier on its pool slot, see [`crate::coll`]).
    pub(crate) fn sync_all(&self, call: &'static str) -> Result<()> {
        Coll::new(self, &self.pool.world, call)?.sync()
    }

    /// Completes everything this PE issued that writes symmetric memory:
    /// the puts, atomics and puts-with-signal of the default context and
    /// of every other live context (Rust's [`crate::Ctx`] and the C ABI's,
    /// whichever thread issued them), the Long active messages it sent
    /// ([`crate::runtime::flush_long`]; callers hold the world team's collective
    /// lock) and the compute tiles it started on boards, which write their
    /// results ([`crate::runtime::wait_tiles`]). Goes through all of them
    /// even when one fails; returns the first error.
    pub(crate) fn complete_all(&self, call: &'static str) -> Result<()> {
        let default = self.quiet(call);
        let others = self.contexts.quiet_all(self).map_err(|e| self.err(call, e));
        let long = crate::runtime::flush_long(self, call);
        let tiles = crate::runtime::wait_tiles(self, call);
        default.and(others).and(long).and(tiles)
    }

    /// The world-team step of a read-only conversion ([`crate::sym`]):
    /// holding the world team's collective lock, completes this PE's
    /// operations first when `complete` ([`Runtime::complete_all`]), then
    /// syncs the team with the argument check of data collectives, each PE
    /// naming the conversion `kind` and its object (segment offset `off`,
    /// `bytes` bytes of `es`-byte elements). No PE returns before every PE
    /// has entered; every PE returns
    /// [`crate::ShmemError::CollectiveMismatch`], naming two PEs and their
    /// calls, when the PEs named different objects or conversions, or one
    /// of them made another checked collective. A PE that could not
    /// complete its operations makes its call differ, so that every PE
    /// fails, and returns its own error.
    /// A sync of the world team with the argument check of data
    /// collectives on `args`: no PE returns before every PE has entered,
    /// and every PE returns [`crate::ShmemError::CollectiveMismatch`],
    /// naming two PEs and their calls, when their `args` differ or one of
    /// them made another checked collective (the registration of user
    /// active-message handlers, [`crate::am`]).
    pub(crate) fn agree_sync(&self, call: &'static str, args: Args) -> Result<()> {
        Coll::new(self, &self.pool.world, call)?.sync_agree(args)
    }

    pub(crate) fn convert_sync(
        &self,
        call: &'static str,
        kind: Kind,
        off: usize,
        bytes: usize,
        es: usize,
        complete: bool,
    ) -> Result<()> {
        let mut c = Coll::new(self, &self.pool.world, call)?;
        let local = if complete {
            self.complete_all(call)
        } else {
            Ok(())
        };
        let agreed = c.sync_agree(Args::conversion(kind, off, bytes, es, local.is_err()));
        local.and(agreed)
    }
}
