//! The compute tiles this process started on boards
//! ([`crate::compute`]) and still waits for: a read-only conversion waits
//! until none is left ([`wait_tiles`]).

use super::Runtime;
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tiles this process started whose reply has not arrived: their board
/// may still write `C` and stream ART results. A read-only conversion
/// waits for none to be left ([`wait_tiles`]); [`crate::compute`] counts them.
pub(crate) static TILES_RUNNING: AtomicU64 = AtomicU64::new(0);

/// Waits until every tile this PE started has been replied to (computed,
/// and every ART put acknowledged), so that no board writes an object on
/// its behalf any more: part of completing a PE's operations before a
/// read-only conversion ([`crate::sym::SymReadOnly`]). Free when no tile
/// runs.
pub(crate) fn wait_tiles(rt: &Runtime, call: &'static str) -> Result<()> {
    rt.poll_until(
        call,
        || Ok((TILES_RUNNING.load(Ordering::Acquire) == 0).then_some(())),
        || {
            format!(
                "the replies to the {} compute tiles it started",
                TILES_RUNNING.load(Ordering::Relaxed)
            )
        },
    )
}
