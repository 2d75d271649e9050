//! The conduit contexts of this process other than the default one
//! ([`Contexts`]), so that a read-only conversion can complete every
//! operation this PE issued on any context.

use super::Runtime;
use conduits::CtxId;
use conduits::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

/// The conduit contexts of this process other than the default one, Rust's
/// and the C ABI's, so that [`Contexts::quiet_all`] can complete every
/// operation this PE issued on any of them (what a read-only conversion
/// needs: [`crate::sym::SymReadOnly`]). Creating and destroying a context
/// take a lock for a moment; the operation path takes none.
#[derive(Debug, Default)]
pub(crate) struct Contexts {
    /// Held shared while a context is destroyed, and exclusively while
    /// every live context is quieted: a context being destroyed is either
    /// still listed (and quieted by `quiet_all`, which waits for its
    /// destruction to end) or gone with its operations complete.
    gate: RwLock<()>,
    /// The live contexts: a key unique to each, and its conduit id.
    live: Mutex<Vec<(u64, CtxId)>>,
    next: AtomicU64,
}

impl Contexts {
    /// Lists conduit context `id`; returns its key.
    pub(crate) fn add(&self, id: CtxId) -> u64 {
        let key = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((key, id));
        key
    }

    /// Destroys the conduit context listed under `key` (completing its
    /// operations) and takes it off the list.
    pub(crate) fn destroy(&self, rt: &Runtime, key: u64, id: CtxId) -> conduits::Result<()> {
        let _g = self.gate.read().unwrap_or_else(|p| p.into_inner());
        let r = rt.conduit.ctx_destroy(id);
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&(k, _)| k != key);
        r
    }

    /// Quiets every live context: every operation issued on any of them
    /// before the call (by any thread) is complete at its target on
    /// return. Quiets them all even when one fails, and returns the first
    /// error, which the context's own next quiet then no longer reports.
    /// Contexts created meanwhile are not waited for (nothing issued on
    /// them is ordered before the call).
    pub(crate) fn quiet_all(&self, rt: &Runtime) -> conduits::Result<()> {
        let _g = self.gate.write().unwrap_or_else(|p| p.into_inner());
        let ids: Vec<CtxId> = self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|&(_, id)| id)
            .collect();
        let mut first = Ok(());
        for id in ids {
            let r = rt.conduit.quiet(id);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}
