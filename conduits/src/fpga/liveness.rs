//! Telling a live job from a failed one without any file of a board
//! model: the board's registers (`ERR_STATUS.PEER_TIMEOUT`, `UPTIME`,
//! `MAGIC`), peer processes of this host, and the state words in the
//! segments (`spec/registers.md` §4.4, §4.7, §5.1), read through the
//! boards.

use super::*;

/// What the liveness check knows of a PE.
#[derive(Clone, Debug)]
pub(super) struct PeerInfo {
    /// Its process id (0: unknown).
    pub(super) pid: u64,
    /// It runs on this host, so its pid means something here.
    pub(super) checkable: bool,
}

/// Bit 0 of a state word: the PE finalized.
pub(super) const STATE_FINALIZED: u64 = 1;

/// [`ActiveMessages::poll`] considers the slow checks every this many calls...
pub(super) const POLL_CHECK_CALLS: u32 = 256;
/// ...a wait every this many of its yielding steps...
pub(super) const WAIT_CHECK_STEPS: u64 = 16;

/// ...and either runs them when this long has passed since the last time
/// ([`FpgaConduit::check_due`]).
pub(super) const CHECK_INTERVAL: Duration = Duration::from_millis(10);

impl FpgaConduit {
    /// Exchanges what the liveness check needs: every PE's process id and
    /// host name (pids are only checked between PEs on one host).
    /// Collective.
    pub(super) fn learn_peers(&self) -> Result<()> {
        let host = host_name();
        let mine = format!("{} {host}", std::process::id());
        let mut b = mine.into_bytes();
        b.truncate(EXCHANGE_MAX);
        let all = self.exchange(&b)?;
        let peers = all
            .iter()
            .map(|v| {
                let t = String::from_utf8_lossy(v);
                let mut f = t.split_whitespace();
                let pid = f.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                let same_host = f.next() == Some(host.as_str());
                PeerInfo {
                    pid,
                    checkable: same_host,
                }
            })
            .collect();
        let _ = self.peers.set(peers);
        Ok(())
    }

    /// One step of a wait: the slow checks now and then, the wait
    /// timeout (`FSHMEM_WAIT_TIMEOUT`, naming `what` is awaited), then a
    /// backoff step.
    pub(super) fn step_wait<S: std::fmt::Display>(
        &self,
        b: &mut Backoff,
        what: impl FnOnce() -> S,
    ) -> Result<()> {
        self.step_with(b, what, Self::slow_checks)
    }

    /// As [`FpgaConduit::step_wait`], for a wait made while holding the
    /// host's lock (room in the command queue, staging space): only the
    /// board's own checks run, since a peer check fetches through the
    /// board and so needs the lock this thread holds.
    pub(super) fn step_wait_held<S: std::fmt::Display>(
        &self,
        b: &mut Backoff,
        what: impl FnOnce() -> S,
    ) -> Result<()> {
        self.step_with(b, what, Self::board_checks)
    }

    /// One step of a wait with `checks` as its periodic checks.
    fn step_with<S: std::fmt::Display>(
        &self,
        b: &mut Backoff,
        what: impl FnOnce() -> S,
        checks: fn(&Self) -> Result<()>,
    ) -> Result<()> {
        if b.every(WAIT_CHECK_STEPS) && self.check_due() {
            checks(self)?;
        }
        if let Some(waited) = b.timed_out() {
            return Err(ConduitError::Timeout {
                what: what().to_string(),
                waited,
            });
        }
        b.snooze();
        Ok(())
    }

    /// Whether the slow checks are due: [`CHECK_INTERVAL`] has passed
    /// since they last ran, from a wait or from `poll` (then they count as
    /// run now). By time, not by steps: on an oversubscribed machine a
    /// yield may last milliseconds, and a count of yields between checks
    /// let a dead board go unnoticed for seconds past the peer timeout.
    pub(super) fn check_due(&self) -> bool {
        let now = self.born.elapsed().as_nanos() as u64;
        let last = self.last_check.load(Ordering::Relaxed);
        if now.saturating_sub(last) < CHECK_INTERVAL.as_nanos() as u64 {
            return false;
        }
        self.last_check.store(now, Ordering::Relaxed);
        true
    }

    /// Slow checks during long waits and, rate-limited, in
    /// [`ActiveMessages::poll`]: the job was ended (global exit), this PE's
    /// board reported a silent link peer or stopped itself, a peer PE of
    /// this host ended without finalizing.
    pub(super) fn slow_checks(&self) -> Result<()> {
        self.board_checks()?;
        // A peer check fetches state words through the board; its waits
        // run these checks again, but not a second peer check.
        if self
            .checking_peers
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Ok(());
        }
        let r = self.peer_checks();
        self.checking_peers.store(false, Ordering::Release);
        r
    }

    /// The checks that need only this PE's board: the exit word,
    /// `ERR_STATUS.PEER_TIMEOUT` and `ERR_STATUS.COMPUTE`, and the board's
    /// own heartbeat.
    pub(super) fn board_checks(&self) -> Result<()> {
        self.check_exit_word();
        self.compute_check()?;
        let bar0 = &self.board.bar0;
        if bar0.read32(regs::ERR_STATUS) & err::PEER_TIMEOUT != 0 {
            let node = bar0.read32(regs::ERR_INFO) as usize;
            // ERR_INFO names this board itself when it heard from none of
            // its peers: its own link is cut (spec/registers.md §4.4).
            let reason = if node == self.rank {
                "its board's link is cut off from every other board (no packet from any \
                 of them for the peer timeout, FSHMEM_PEER_TIMEOUT)"
                    .to_string()
            } else {
                format!(
                    "its board stopped answering PE {}'s board on the link (no packet for \
                     the peer timeout, FSHMEM_PEER_TIMEOUT)",
                    self.rank
                )
            };
            return Err(ConduitError::PeerFailed { pe: node, reason });
        }
        if bar0.read32(regs::MAGIC) != cmd::MAGIC {
            return Err(ConduitError::PeerFailed {
                pe: self.rank,
                reason: format!(
                    "its board ({}) is gone: MAGIC reads {:#010x}",
                    self.board.device,
                    bar0.read32(regs::MAGIC)
                ),
            });
        }
        let now = bar0.read64(regs::UPTIME_LO);
        let mut u = self.uptime.lock().unwrap_or_else(|p| p.into_inner());
        if now != u.0 {
            *u = (now, Instant::now());
        } else if u.1.elapsed() >= self.board_timeout {
            return Err(ConduitError::PeerFailed {
                pe: self.rank,
                reason: format!(
                    "its board ({}) stopped answering its host: UPTIME did not advance for \
                     {:.1} s (FSHMEM_PEER_TIMEOUT)",
                    self.board.device,
                    u.1.elapsed().as_secs_f64()
                ),
            });
        }
        Ok(())
    }

    /// `ERR_STATUS.COMPUTE` (interface 1.2, `spec/registers.md` §4.4.1):
    /// the board's compute core dropped a request it could neither run
    /// nor answer. The request's sender made the mistake, but only this
    /// PE's board saw it: this PE reports it, naming the sender and the
    /// handler (`ERR_INFO`). The bit stays set, so every later check
    /// reports it again.
    pub(super) fn compute_check(&self) -> Result<()> {
        let bar0 = &self.board.bar0;
        if bar0.read32(regs::ERR_STATUS) & err::COMPUTE == 0 {
            return Ok(());
        }
        let r = gasnet_core::compute::Rejected::from_info(bar0.read32(regs::ERR_INFO));
        Err(ConduitError::Am(AmError::ComputeRejected(r)))
    }

    /// Exits this process with the job's status if a PE called
    /// `global_exit` (its put of the exit word completed before it left).
    pub(super) fn check_exit_word(&self) {
        let exit = self.load64(self.layout.exit_word());
        if exit != 0 {
            let (status, from) = crate::wait::exit_word_parts(exit);
            crate::wait::note_exit_from(from);
            crate::wait::exit_job(status);
        }
    }

    /// Peers of this host whose process is gone: finalized (fine), or
    /// failed, traced to the PE that failed first.
    pub(super) fn peer_checks(&self) -> Result<()> {
        let Some(peers) = self.peers.get() else {
            return Ok(());
        };
        for (pe, p) in peers.iter().enumerate() {
            if pe == self.rank
                || !p.checkable
                || p.pid == 0
                || self.peer_finalized[pe].load(Ordering::Acquire)
            {
                continue;
            }
            if process_alive(p.pid) {
                self.stopped_check(pe, p.pid)?;
                continue;
            }
            let state = self.peer_state(pe)?;
            if state & STATE_FINALIZED != 0 {
                self.peer_finalized[pe].store(true, Ordering::Release);
                continue;
            }
            // A PE that called global_exit leaves once its exit words are
            // delivered: its departure is the job's exit, not a failure.
            self.check_exit_word();
            return Err(self.root_cause(peers, pe));
        }
        Ok(())
    }

    /// A live peer process of this host that has been stopped (SIGSTOP,
    /// state `T`) for the peer timeout has failed: its board still serves
    /// the others, but the PE never arrives where they wait for it.
    fn stopped_check(&self, pe: usize, pid: u64) -> Result<()> {
        let mut since = self.stopped_since.lock().unwrap_or_else(|p| p.into_inner());
        let Some(slot) = since.get_mut(pe) else {
            return Ok(());
        };
        if !process_stopped(pid) {
            *slot = None;
            return Ok(());
        }
        let t = *slot.get_or_insert_with(Instant::now);
        if t.elapsed() >= self.board_timeout {
            return Err(ConduitError::PeerFailed {
                pe,
                reason: format!(
                    "its process {pid} has been stopped for {:.1} s (FSHMEM_PEER_TIMEOUT)",
                    t.elapsed().as_secs_f64()
                ),
            });
        }
        Ok(())
    }

    /// PE `pe`'s state word, fetched through the board network.
    pub(super) fn peer_state(&self, pe: usize) -> Result<u64> {
        let at = self.layout.state_word();
        self.raw_atomic(
            CtxId::DEFAULT,
            pe,
            at,
            AmoOp::Fetch,
            AmoWidth::W64,
            0,
            0,
            false,
        )
    }

    /// PE `pe` ended without finalizing; but it may have ended only
    /// because it saw another PE fail first. Follows the causes the
    /// departed PEs recorded in their state words (at most one step per
    /// PE) to the PE that failed first, records it in this PE's own state
    /// word, and returns the error naming it.
    pub(super) fn root_cause(&self, peers: &[PeerInfo], pe: usize) -> ConduitError {
        let root = root_of(pe, self.rank, self.size, |q| {
            let w = self.peer_state(q).ok()?;
            usize::try_from((w >> 32).checked_sub(1)?).ok()
        });
        // SAFETY: the state word is an aligned word of this PE's segment,
        // written only by this PE (peers fetch it through the board).
        let mine = unsafe { AtomicU64::from_ptr(self.win(self.layout.state_word()).cast()) };
        let _ = mine.fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
            (w >> 32 == 0).then_some(w | (root as u64 + 1) << 32)
        });
        let pid = peers.get(root).map_or(0, |p| p.pid);
        ConduitError::PeerFailed {
            pe: root,
            reason: format!("its process {pid} ended without finalizing"),
        }
    }
}
