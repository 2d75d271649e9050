//! The engine's lock of a conduit whose non-default contexts submit
//! through queues (`spec/conduit.md` §3, "Contexts and threads"): a
//! guard that takes the queued items into the engine when the lock is
//! taken and again as it is let go, and that looks once more after
//! unlocking so that no item waits for a later call.
//!
//! A queue is a channel per context whose receiving end the state behind
//! the lock keeps. A thread that cannot have the lock sends its item and
//! then calls [`queued`]: it counts the item in the conduit's `queued`
//! count and tries the lock itself. The holder, after its last drain,
//! unlocks and reads the count again. Both touch the count with
//! read-modify-writes (every write to it is one), which read the latest
//! value: if the holder's comes second it sees the sender's count and
//! takes the lock again to send the item (unless someone else holds it,
//! who will look in turn as it lets go); if it comes first, the sender's
//! reads from it, so the sender's try_lock happens after the unlock and
//! finds the lock free (or held by a thread that will look again). The
//! count is signed: a holder may take an item before its sender counts it.
//! While no context has a queue the look after unlocking is skipped.

use std::panic::Location;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// The state behind an engine's lock that the contexts' queues feed.
pub(crate) trait Drain {
    /// What taking the queued items needs besides the state.
    type With: ?Sized;

    /// Takes every queued item into the engine, in each queue's order, and
    /// subtracts them from the `queued` count.
    fn drain_queues(&mut self, with: &Self::With);

    /// Whether any context has a queue yet (one is added under the lock).
    fn has_queues(&self) -> bool;

    /// Called each time this thread takes the lock: by the call at `at`,
    /// or (`again`) by its guard's look after letting go. A conduit that
    /// reports a stalled engine records who holds it here.
    fn taken(&mut self, _with: &Self::With, _at: &'static Location<'static>, _again: bool) {}

    /// Called as this thread is about to let go of the lock (after the
    /// last drain of that holding).
    fn letting_go(&mut self, _with: &Self::With) {}
}

#[cfg(test)]
thread_local! {
    /// Run once by the next [`Held`] dropped on this thread, between its
    /// last drain and its unlock (tests: an item queued in that window).
    pub(crate) static BEFORE_UNLOCK: std::cell::RefCell<Option<Box<dyn FnOnce()>>> =
        const { std::cell::RefCell::new(None) };
}

/// The engine, held by this thread (module documentation).
pub(crate) struct Held<'a, T: Drain> {
    m: &'a Mutex<T>,
    with: &'a T::With,
    queued: &'a AtomicI64,
    g: Option<MutexGuard<'a, T>>,
    /// The call that took the lock.
    at: &'static Location<'static>,
}

impl<T: Drain> std::ops::Deref for Held<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.g
            .as_deref()
            .expect("the lock is held until the guard drops")
    }
}

impl<T: Drain> std::ops::DerefMut for Held<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.g
            .as_deref_mut()
            .expect("the lock is held until the guard drops")
    }
}

impl<T: Drain> Drop for Held<'_, T> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The guard's lock goes with the unwinding; say so first.
            if let Some(g) = self.g.as_mut() {
                g.letting_go(self.with);
            }
            return;
        }
        loop {
            if let Some(mut g) = self.g.take() {
                g.drain_queues(self.with);
                #[cfg(test)]
                BEFORE_UNLOCK.with_borrow_mut(|f| f.take().map(|f| f()));
                g.letting_go(self.with);
                if !g.has_queues() {
                    // Nothing can have been queued.
                    return;
                }
            }
            // A read-modify-write after the unlock, as the sender's count
            // before its try_lock ([`queued`]): either this reads the
            // count, or that try_lock finds the lock released.
            if self.queued.fetch_add(0, Ordering::AcqRel) <= 0 {
                return;
            }
            match raw_try_lock(self.m) {
                Some(mut g) => {
                    g.taken(self.with, self.at, true);
                    self.g = Some(g);
                }
                None => return,
            }
        }
    }
}

/// Takes the lock (whether or not a panicking thread poisoned it) and the
/// queued items.
#[track_caller]
pub(crate) fn lock<'a, T: Drain>(
    m: &'a Mutex<T>,
    with: &'a T::With,
    queued: &'a AtomicI64,
) -> Held<'a, T> {
    let at = Location::caller();
    let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
    g.taken(with, at, false);
    g.drain_queues(with);
    Held {
        m,
        with,
        queued,
        g: Some(g),
        at,
    }
}

/// As [`lock`], if no other thread holds the lock.
#[track_caller]
pub(crate) fn try_lock<'a, T: Drain>(
    m: &'a Mutex<T>,
    with: &'a T::With,
    queued: &'a AtomicI64,
) -> Option<Held<'a, T>> {
    let at = Location::caller();
    let mut g = raw_try_lock(m)?;
    g.taken(with, at, false);
    g.drain_queues(with);
    Some(Held {
        m,
        with,
        queued,
        g: Some(g),
        at,
    })
}

/// The sender's half: counts `n` items it has just sent to a context's
/// queue, then takes the lock if it is free by now (letting go of it at
/// once sends them).
#[track_caller]
pub(crate) fn queued<T: Drain>(m: &Mutex<T>, with: &T::With, queued: &AtomicI64, n: i64) {
    if n == 0 {
        return;
    }
    // A read-modify-write, as the holder's look after it lets go
    // ([`Held`]'s drop): one of the two reads the other's.
    queued.fetch_add(n, Ordering::AcqRel);
    drop(try_lock(m, with, queued));
}

fn raw_try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}
