//! The collective engine: the algorithms of [`crate::coll`] on segment
//! offsets (`engine`), the reduction operators ([`ops`]) and the check that
//! the PEs of a data collective agree on its arguments (`agree`). It uses
//! only the runtime ([`crate::runtime`]) and the team slots
//! ([`crate::pool`]); the Rust API of teams and collectives sits above it.

mod agree;
mod engine;
pub mod ops;

pub(crate) use agree::Args;
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
}
