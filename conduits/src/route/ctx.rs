//! Router contexts (`spec/conduit.md` §10.3): each stands for a pair of
//! contexts, one per conduit, and counts what its off-node context has
//! outstanding so that a quiet can skip a network conduit with nothing to
//! complete.

use crate::error::Result;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

/// One router context: the pair of contexts it stands for, and what its
/// off-node context has outstanding (§10.3). On a cache line of its own,
/// so that threads using contexts of their own do not share one.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(super) struct CtxPair {
    /// [`FREE`], [`BUSY`] (being created or destroyed) or [`LIVE`].
    pub(super) state: AtomicU8,
    pub(super) on: AtomicU32,
    pub(super) off: AtomicU32,
    /// Off-node operations issued on this context that a quiet may have to
    /// complete, counted as each returns.
    pub(super) off_issued: AtomicU64,
    /// The count of `off_issued` that the last off-node quiet to return
    /// had read before it began: every operation counted up to it is
    /// complete.
    pub(super) off_quieted: AtomicU64,
}

impl CtxPair {
    /// Counts an off-node operation that returned with `r`. Release: a
    /// quiet that reads the count sees the operation issued.
    #[inline(always)]
    pub(super) fn issued_off<T>(&self, r: Result<T>) -> Result<T> {
        self.off_issued.fetch_add(1, Ordering::Release);
        r
    }

    /// The count of off-node operations to cover, or `None` when every
    /// one counted so far is complete.
    #[inline(always)]
    pub(super) fn off_pending(&self) -> Option<u64> {
        let issued = self.off_issued.load(Ordering::Acquire);
        (self.off_quieted.load(Ordering::Acquire) < issued).then_some(issued)
    }
}

pub(super) const FREE: u8 = 0;
pub(super) const BUSY: u8 = 1;
pub(super) const LIVE: u8 = 2;

#[cfg(test)]
mod tests {
    use super::CtxPair;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_context_has_off_node_work_pending_until_a_quiet_covers_it() {
        let p = CtxPair::default();
        assert_eq!(
            p.off_pending(),
            None,
            "a new context has nothing outstanding"
        );
        assert_eq!(p.issued_off(Ok::<u8, _>(7)).unwrap(), 7);
        assert!(
            p.issued_off::<()>(Err(crate::ConduitError::Unsupported("x")))
                .is_err()
        );
        // A quiet reads the count, completes the off-node context, then
        // records the count it read.
        let read = p.off_pending().expect("two operations counted");
        assert_eq!(read, 2);
        p.issued_off(Ok(())).unwrap();
        p.off_quieted.fetch_max(read, Ordering::Release);
        // The operation counted after that quiet read is still pending.
        assert_eq!(p.off_pending(), Some(3));
        p.off_quieted.fetch_max(3, Ordering::Release);
        assert_eq!(p.off_pending(), None);
        // A quiet that read an older count and ends late never moves the
        // mark back.
        p.off_quieted.fetch_max(1, Ordering::Release);
        assert_eq!(p.off_pending(), None);
        assert_eq!(std::mem::align_of::<CtxPair>(), 64);
    }
}
