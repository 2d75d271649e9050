//! What may run on the progress path: the rule that active-message
//! handlers ([`crate::am`]) make no call that may block. The AM layer marks
//! the thread while a user handler runs; every call that may wait checks
//! the mark first.

use crate::error::{Result, ShmemError};
use std::cell::Cell;

thread_local! {
    /// Whether this thread is running a user AM handler.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Errors unless this thread is outside every AM handler: the check of the
/// handler rule, on every call that may block.
#[inline(always)]
pub(crate) fn not_in_handler(pe: usize, call: &'static str) -> Result<()> {
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

/// Marks this thread as running a handler until dropped (also on unwind).
pub(crate) struct InHandler(bool);

impl InHandler {
    pub(crate) fn enter() -> InHandler {
        InHandler(IN_HANDLER.with(|c| c.replace(true)))
    }
}

impl Drop for InHandler {
    fn drop(&mut self) {
        IN_HANDLER.with(|c| c.set(self.0));
    }
}
