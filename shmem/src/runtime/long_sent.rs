//! The Long active messages this PE sent, for a read-only conversion
//! ([`crate::sym::SymReadOnly`]): the PEs it sent them to
//! ([`LongTargets`]) and the round trip that shows them delivered
//! ([`flush_long`]).

use super::Runtime;
use crate::error::Result;
use conduits::prelude::*;
use gasnet_core::{AmError, AmMessage, Category, HandlerFn, handlers};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The PEs this PE sent a Long message to (a request, or a handler's
/// reply) since its last [`flush_long`]: one bit per PE.
///
/// A Long message writes into symmetric memory at its target, and no
/// `quiet` waits for it (active messages name no context, and complete
/// when sent). A read-only conversion ([`crate::sym::SymReadOnly`]) must
/// know that none is still on its way into the object: it flushes the
/// PEs noted here.
#[derive(Debug)]
pub(crate) struct LongTargets(Box<[AtomicU64]>);

impl LongTargets {
    /// No PE noted, for a job of `n` PEs.
    pub(crate) fn new(n: usize) -> LongTargets {
        LongTargets((0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    /// Notes a Long message to `pe`, after it was sent: a flush that takes
    /// the note (release, then acquire in [`LongTargets::take`]) sends its
    /// check after the message.
    #[inline]
    pub(crate) fn note(&self, pe: usize) {
        if let Some(w) = self.0.get(pe / 64) {
            w.fetch_or(1 << (pe % 64), Ordering::Release);
        }
    }

    /// Takes the PEs noted so far (they are no longer noted).
    pub(crate) fn take(&self) -> Vec<usize> {
        let mut pes = Vec::new();
        for (i, w) in self.0.iter().enumerate() {
            let mut bits = w.swap(0, Ordering::AcqRel);
            while bits != 0 {
                pes.push(64 * i + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        pes
    }
}

/// The round of the flush in progress: [`handlers::FLUSH_DONE`] replies
/// count only when they carry it.
static FLUSH_ROUND: AtomicU32 = AtomicU32::new(0);
/// Replies of the current round that arrived.
static FLUSH_REPLIES: AtomicU64 = AtomicU64::new(0);

/// Registers the system handlers of [`flush_long`] in `c` (once per
/// conduit: a conduit kept from an earlier initialization has them).
pub(crate) fn register_flush(c: &super::Backend) -> conduits::Result<()> {
    let flush: HandlerFn = Arc::new(|t: &mut gasnet_core::Token<'_>, m: &AmMessage<'_>| {
        if let Err(e) = t.reply_short(handlers::FLUSH_DONE, m.args) {
            conduits::report!("the delivery check of PE {} got no reply: {e}", m.src);
        }
    });
    let done: HandlerFn = Arc::new(|_t: &mut gasnet_core::Token<'_>, m: &AmMessage<'_>| {
        if m.args.first() == Some(&FLUSH_ROUND.load(Ordering::Acquire)) {
            FLUSH_REPLIES.fetch_add(1, Ordering::AcqRel);
        }
    });
    for (index, f) in [(handlers::FLUSH, flush), (handlers::FLUSH_DONE, done)] {
        match c.register_system_handler(index, f) {
            Ok(()) | Err(conduits::ConduitError::Am(AmError::AlreadyRegistered(_))) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits until every Long message this PE sent before the call has been
/// delivered (its payload written at its target): a [`handlers::FLUSH`]
/// round trip to each PE noted in [`Runtime::long_sent`]. A PE's active
/// messages to one target are delivered in the order it sent them, its
/// replies included (`spec/conduit.md` section 5), so when the check's
/// handler runs at a target, the payloads sent there before it are
/// written. Free when no Long message was sent since the last flush.
/// Callers hold the world team's collective lock, so that flushes do not
/// overlap: a concurrent one could take a note and return before this one's
/// check went out.
pub(crate) fn flush_long(rt: &Runtime, call: &'static str) -> Result<()> {
    let pes = rt.long_sent.take();
    if pes.is_empty() {
        return Ok(());
    }
    FLUSH_REPLIES.store(0, Ordering::Release);
    let round = FLUSH_ROUND.fetch_add(1, Ordering::AcqRel).wrapping_add(1);
    for &pe in &pes {
        rt.conduit
            .am_request(pe, Category::Short, handlers::FLUSH, &[round], &[], 0)
            .map_err(|e| rt.err(call, e))?;
    }
    let want = pes.len() as u64;
    rt.poll_until(
        call,
        || Ok((FLUSH_REPLIES.load(Ordering::Acquire) >= want).then_some(())),
        || {
            format!(
                "the delivery of the Long active messages it sent to PEs {pes:?} \
                 ({} of {want} checked)",
                FLUSH_REPLIES.load(Ordering::Relaxed)
            )
        },
    )
}
