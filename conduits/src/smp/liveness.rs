//! The state of the job's PEs as the control block and the process table
//! show them: a PE that failed, finalized while still needed, or whose
//! process ended without finalizing, traced to the PE that failed first
//! ([`crate::liveness`]), and the global-exit word.

use super::*;

impl SmpConduit {
    /// Exits this process with the job's status if a PE called `global_exit`.
    #[inline]
    pub(super) fn check_global_exit(&self) {
        let w = self.ctl.global_exit().load(Ordering::Acquire);
        if w != 0 {
            let (status, from) = crate::wait::exit_word_parts(w);
            crate::wait::note_exit_from(from);
            crate::wait::note_job_exit();
            // Marks this PE gone once it has said why (`leave_together`).
            crate::wait::exit_job(status);
        }
    }

    /// Registers what this PE does on its way out of a job that ends,
    /// whichever thread and conduit learn of the end first
    /// ([`crate::wait::exit_job`]): [`leave_together`]. The id returned
    /// clears it ([`crate::wait::clear_leave_hook`]), which `Drop` does
    /// before the control block is unmapped.
    pub(super) fn register_leave(&self) -> u64 {
        let (ctl, rank, size) = (self.ctl, self.rank, self.size);
        crate::wait::on_leave(move |wait| leave_together(ctl, rank, size, wait))
    }

    /// `Err(PeerFailed)` if `pe` is dead, failed, or (when `need_alive`)
    /// finalized. A failure is traced to its root (see [`Self::root_cause`])
    /// and recorded as this PE's cause before it is returned.
    ///
    /// A PE that calls `global_exit` publishes the exit word before it marks
    /// itself finalized and leaves, so a departure seen here may be that
    /// exit: the word is read again (the Acquire load of the state makes it
    /// visible) and, when set, this PE leaves with the job's status instead
    /// of reporting the peer.
    pub(super) fn check_peer(&self, pe: usize, need_alive: bool) -> Result<()> {
        match self.peer_verdict(pe, need_alive) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.check_global_exit();
                Err(self.root_cause(pe, e))
            }
        }
    }

    /// The state of `pe` alone, without following causes.
    pub(super) fn peer_verdict(&self, pe: usize, need_alive: bool) -> Result<()> {
        let st = self.ctl.state(pe).load(Ordering::Acquire);
        let pid = self.ctl.pid(pe).load(Ordering::Relaxed);
        let fail = |reason: String| Err(ConduitError::PeerFailed { pe, reason });
        match st {
            state::FAILED => {
                return fail("it failed (it panicked, or could not join the job)".to_string());
            }
            state::FINALIZED if need_alive => {
                return fail("it left the job (finalized) while still needed".to_string());
            }
            state::FINALIZED => return Ok(()),
            state::ABSENT => {
                // Its pid is recorded once it mapped the control block: a
                // process that ended before attaching never will.
                if pid != 0 && !process_alive(pid) {
                    return fail(format!("its process {pid} ended before it attached"));
                }
                return Ok(());
            }
            _ => {}
        }
        if pid != 0 && !process_alive(pid) {
            return fail(format!("its process {pid} ended without finalizing"));
        }
        Ok(())
    }

    /// `found` says PE `pe` failed; but `pe` may have left only because it
    /// saw another PE fail first. Follows the recorded causes (at most one
    /// step per PE) to the PE that failed first, records it as this PE's own
    /// cause, and returns the error naming it.
    ///
    /// In a routed job the trail may end at a PE of this host that left
    /// because of a PE of another host ([`Cause::OffNode`]): the error
    /// names the PE of this host, whose record the router reads to name
    /// the other one ([`SmpConduit::off_node_cause`]), and this PE records
    /// the same PE of another host.
    pub(super) fn root_cause(&self, pe: usize, found: ConduitError) -> ConduitError {
        let root = root_of(pe, self.rank, self.size, |q| match self.ctl.cause(q) {
            Some(Cause::OnNode(l)) => Some(l),
            // Nothing recorded, or a PE this block does not hold.
            Some(Cause::OffNode(_)) | None => None,
        });
        let err = if root == pe {
            found
        } else {
            match self.peer_verdict(root, false) {
                Err(e) => e,
                Ok(()) => ConduitError::PeerFailed {
                    pe: root,
                    reason: format!("PE {pe} left the job after seeing it fail"),
                },
            }
        };
        let mine = match self.ctl.cause(root) {
            Some(far @ Cause::OffNode(_)) => far,
            _ => Cause::OnNode(root),
        };
        self.ctl.set_cause(self.rank, mine);
        err
    }

    /// Records that this PE leaves because of `cause`, found by another
    /// conduit (a routed job's off-node conduit), unless it recorded a
    /// cause already: a PE of this host that finds this PE gone then
    /// names that PE, not this one.
    pub(crate) fn note_cause(&self, cause: Cause) {
        if let Cause::OnNode(l) = cause
            && (l >= self.size || l == self.rank)
        {
            return;
        }
        self.ctl.set_cause(self.rank, cause);
    }

    /// The PE of another host (its job rank) that PE `pe` of this job
    /// recorded as the reason it left, if that is what it recorded.
    pub(crate) fn off_node_cause(&self, pe: usize) -> Option<usize> {
        if pe >= self.size {
            return None;
        }
        match self.ctl.cause(pe) {
            Some(Cause::OffNode(j)) => Some(j),
            _ => None,
        }
    }

    /// Checks every peer, reporting a PE that died or failed in preference
    /// to one that merely left (which may itself have left because of the
    /// failure), so that every PE names the root cause.
    pub(super) fn check_peers(&self) -> Result<()> {
        let peers = || (0..self.size).filter(|&pe| pe != self.rank);
        peers().try_for_each(|pe| self.check_peer(pe, false))?;
        peers().try_for_each(|pe| self.check_peer(pe, true))
    }
}

/// How long a PE that leaves because the job ends waits for the other PEs
/// of its host to leave too ([`leave_together`]): a PE that does not call
/// into the runtime for that long (it computes, or blocks elsewhere) is
/// not waited for.
const LEAVE_GRACE: Duration = Duration::from_secs(1);

/// PE `rank` of the `size` PEs of `ctl`'s job leaves a job that ends, after
/// saying why: marks itself gone, then (`wait`) waits until every other PE
/// of the job has left, ended, or never attached, at most [`LEAVE_GRACE`].
/// See [`crate::wait::exit_job`] for when it waits.
fn leave_together(ctl: Ctl, rank: usize, size: usize, wait: bool) {
    ctl.state(rank).store(state::FINALIZED, Ordering::Release);
    if !wait {
        return;
    }
    let yet_to_leave = |pe: usize| {
        ctl.state(pe).load(Ordering::Acquire) == state::ATTACHED
            && process_alive(ctl.pid(pe).load(Ordering::Relaxed))
    };
    let mut backoff = Backoff::with_timeout(Some(LEAVE_GRACE));
    while (0..size).any(|pe| pe != rank && yet_to_leave(pe)) {
        if backoff.timed_out().is_some() {
            return;
        }
        backoff.snooze();
    }
}
