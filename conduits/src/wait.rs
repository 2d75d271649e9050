//! Spin-then-yield waiting.
//!
//! Every wait in fshmem (a barrier, a full message ring, a control block not
//! yet published, a `shmem_wait_until`) loops on [`Backoff`]: it spins with
//! [`std::hint::spin_loop`] for a few dozen iterations, which keeps latency
//! low when the awaited PE runs on another core, and then yields the CPU on
//! every further step, so that a job with more PEs than cores (8 PEs on 2
//! cores) still makes progress promptly: the PE being waited for gets the
//! core instead of a spinning peer.
//!
//! ```
//! use conduits::wait::Backoff;
//! use std::sync::atomic::{AtomicBool, Ordering};
//! let flag = AtomicBool::new(true);
//! let mut backoff = Backoff::new();
//! while !flag.load(Ordering::Acquire) {
//!     backoff.snooze();
//! }
//! ```

/// How many steps spin before [`Backoff::snooze`] starts yielding.
pub const SPIN_STEPS: u32 = 48;

/// Tracks how long a wait has been going and chooses between spinning and
/// yielding. Cheap to create; create one per wait.
#[derive(Clone, Debug, Default)]
pub struct Backoff {
    steps: u64,
}

impl Backoff {
    /// A fresh backoff that starts by spinning.
    #[inline]
    pub fn new() -> Backoff {
        Backoff { steps: 0 }
    }

    /// Waits a little: a busy-wait hint during the first [`SPIN_STEPS`]
    /// steps, then `sched_yield` on every step.
    #[inline]
    pub fn snooze(&mut self) {
        if self.steps < SPIN_STEPS as u64 {
            for _ in 0..(1u32 << (self.steps.min(4) as u32)) {
                std::hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
        self.steps += 1;
    }

    /// Starts spinning again (after the awaited thing made progress).
    #[inline]
    pub fn reset(&mut self) {
        self.steps = 0;
    }

    /// Steps taken so far.
    #[inline]
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Whether the spinning phase is over and each step now yields.
    #[inline]
    pub fn is_yielding(&self) -> bool {
        self.steps >= SPIN_STEPS as u64
    }

    /// True once every `period` steps (and never during the spinning
    /// phase): the moment for slow checks such as peer liveness.
    ///
    /// ```
    /// use conduits::wait::Backoff;
    /// let mut b = Backoff::new();
    /// let mut due = 0;
    /// for _ in 0..1000 {
    ///     b.snooze();
    ///     if b.every(100) {
    ///         due += 1;
    ///     }
    /// }
    /// assert!(due >= 9);
    /// ```
    #[inline]
    pub fn every(&self, period: u64) -> bool {
        self.is_yielding() && period > 0 && self.steps % period == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_then_yields() {
        let mut b = Backoff::new();
        assert!(!b.is_yielding());
        for _ in 0..SPIN_STEPS {
            b.snooze();
        }
        assert!(b.is_yielding());
        b.snooze();
        assert_eq!(b.steps(), SPIN_STEPS as u64 + 1);
        b.reset();
        assert!(!b.is_yielding());
    }
}
