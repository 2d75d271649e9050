//! What may run on the progress path: the rule that active-message
//! handlers ([`crate::am`]) make no call that may block. The AM layer marks
//! the thread while a user handler runs; every call that may wait checks
//! the mark first.

use crate::error::{Result, ShmemError};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many user handlers run in this process now. The hot paths read
/// this one word (a relaxed load of a shared, rarely written line) and
/// look at the thread-local mark only while some handler runs, so that a
/// put or a quiet pays no thread-local access (a `__tls_get_addr` call in
/// position-independent code) in a program that is not running handlers.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread is running a user AM handler.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Errors unless this thread is outside every AM handler: the check of the
/// handler rule, on every call that may block.
#[inline(always)]
pub(crate) fn not_in_handler(pe: usize, call: &'static str) -> Result<()> {
    // A thread's own handler raised RUNNING before it ran (sequenced
    // before, same thread), so a zero here means this thread is in none.
    if RUNNING.load(Ordering::Relaxed) != 0 && IN_HANDLER.with(Cell::get) {
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

/// Marks this thread as running a handler until dropped (also on unwind).
pub(crate) struct InHandler(bool);

impl InHandler {
    pub(crate) fn enter() -> InHandler {
        RUNNING.fetch_add(1, Ordering::Relaxed);
        InHandler(IN_HANDLER.with(|c| c.replace(true)))
    }
}

impl Drop for InHandler {
    fn drop(&mut self) {
        IN_HANDLER.with(|c| c.set(self.0));
        RUNNING.fetch_sub(1, Ordering::Relaxed);
    }
}
