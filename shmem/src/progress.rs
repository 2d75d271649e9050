//! What may run on the progress path: the rule that active-message
//! handlers ([`crate::am`]) make no call that may block. The AM layer marks
//! the thread while a user handler runs; every call that may wait checks
//! the mark first.

use crate::error::{Result, ShmemError};
use std::cell::Cell;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

thread_local! {
    /// Whether this thread is running a user AM handler.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// The thread-local half of [`Runtime::not_in_handler`], out of the hot
/// path: taken only while some handler of this process runs.
///
/// [`Runtime::not_in_handler`]: crate::runtime::Runtime::not_in_handler
#[cold]
#[inline(never)]
pub(crate) fn in_handler_check(pe: usize, call: &'static str) -> Result<()> {
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

/// Marks this thread as running a handler until dropped (also on unwind);
/// `count` is the runtime's count of running handlers
/// ([`Runtime::not_in_handler`]).
///
/// [`Runtime::not_in_handler`]: crate::runtime::Runtime::not_in_handler
pub(crate) struct InHandler<'a> {
    count: &'a AtomicUsize,
    was: bool,
}

impl<'a> InHandler<'a> {
    pub(crate) fn enter(count: &'a AtomicUsize) -> InHandler<'a> {
        count.fetch_add(1, Ordering::Relaxed);
        InHandler {
            count,
            was: IN_HANDLER.with(|c| c.replace(true)),
        }
    }
}

impl Drop for InHandler<'_> {
    fn drop(&mut self) {
        IN_HANDLER.with(|c| c.set(self.was));
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}
