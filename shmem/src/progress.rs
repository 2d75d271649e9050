//! What may run on the progress path: the rule that active-message
//! handlers ([`crate::am`]) make no call that may block. The AM layer marks
//! the thread while a user handler runs; every call that may wait checks
//! the mark first.

use crate::error::{Result, ShmemError};
use crate::runtime::Runtime;
use std::cell::Cell;
use std::sync::atomic::Ordering;

thread_local! {
    /// Whether this thread is running a user AM handler.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Errors unless this thread is outside every AM handler: the check of the
/// handler rule, on every call that may block.
///
/// The hot paths read one word, [`Runtime::handlers`] (how many user
/// handlers run in this process now), with a relaxed load from the
/// runtime's first cache line, which the operation reads anyway; they look
/// at the thread-local mark only while some handler runs, so that a put or
/// a quiet pays no thread-local access (a `__tls_get_addr` call in
/// position-independent code) in a program that is not running handlers.
#[inline(always)]
pub(crate) fn not_in_handler(rt: &Runtime, call: &'static str) -> Result<()> {
    // A thread's own handler raised the count before it ran (sequenced
    // before, same thread), so a zero here means this thread is in none.
    if rt.handlers.load(Ordering::Relaxed) != 0 {
        return in_handler_check(rt.my_pe(), call);
    }
    Ok(())
}

/// The thread-local half of [`not_in_handler`], out of the hot path: taken
/// only while some handler of this process runs.
#[cold]
#[inline(never)]
fn in_handler_check(pe: usize, call: &'static str) -> Result<()> {
    if IN_HANDLER.with(Cell::get) {
        Err(in_handler_error(pe, call))
    } else {
        Ok(())
    }
}

#[cold]
fn in_handler_error(pe: usize, call: &'static str) -> ShmemError {
    ShmemError::Invalid {
        pe,
        call,
        reason: "called from an active-message handler, which may only reply (handlers must \
                 not block)"
            .to_string(),
    }
}

/// Marks this thread as running a handler of `rt` until dropped (also on
/// unwind).
pub(crate) struct InHandler<'a> {
    rt: &'a Runtime,
    was: bool,
}

impl<'a> InHandler<'a> {
    pub(crate) fn enter(rt: &'a Runtime) -> InHandler<'a> {
        rt.handlers.fetch_add(1, Ordering::Relaxed);
        InHandler {
            rt,
            was: IN_HANDLER.with(|c| c.replace(true)),
        }
    }
}

impl Drop for InHandler<'_> {
    fn drop(&mut self) {
        IN_HANDLER.with(|c| c.set(self.was));
        self.rt.handlers.fetch_sub(1, Ordering::Relaxed);
    }
}
