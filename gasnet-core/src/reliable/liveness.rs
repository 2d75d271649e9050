//! Liveness of the transport's peers (see "A silent peer or a lossy link"
//! in the module documentation): the probe interval, and the check that
//! probes a silent peer this node needs and declares it failed.

use super::{MIN_PROBES, PROBE_HANDLER, PeerSilent, Transport};
use crate::wire::Packet;
use crate::{Direction, NodeId};
use std::time::{Duration, Instant};

impl Transport {
    /// The probe interval: `min(keepalive, peer_timeout / 8)`, at least
    /// 1 ms (see the module documentation).
    pub fn probe_interval(&self) -> Duration {
        self.cfg
            .keepalive
            .min(self.cfg.peer_timeout / 8)
            .max(Duration::from_millis(1))
    }

    /// Liveness: fails with the first peer that owes an acknowledgement or
    /// a response and has been silent for
    /// [`Config::peer_timeout`](super::Config::peer_timeout) through
    /// at least 8 probes; probes peers silent for
    /// [`Transport::probe_interval`] while something is owed (see the
    /// module documentation). Call it at least every few milliseconds.
    pub fn check(&mut self, now: Instant) -> Result<(), PeerSilent> {
        let cfg = self.cfg;
        let me = self.me;
        let every = self.probe_interval();
        for (i, p) in self.peers.iter_mut().enumerate() {
            if i == me as usize {
                continue;
            }
            if !p.needs_answer() {
                p.needed_since = None;
                p.probes = 0;
                continue;
            }
            let since = p.needed_since.get_or_insert(now);
            let base = p.last_heard.max(*since);
            let silent = now.saturating_duration_since(base);
            if silent >= cfg.peer_timeout && p.probes >= MIN_PROBES {
                return Err(PeerSilent {
                    peer: i as NodeId,
                    reason: format!(
                        "no packet from it for {:.1} s, {} probes unanswered ({} packets unacknowledged, {} requests unanswered)",
                        silent.as_secs_f64(),
                        p.probes,
                        p.unacked.len() + p.queue.len(),
                        p.awaiting
                    ),
                });
            }
            // Probe at every interval of the silence (the last probe
            // counts only if it was sent during this silence).
            let last = p.last_probe.filter(|&t| t >= base).unwrap_or(base);
            if silent >= every && now.saturating_duration_since(last) >= every {
                p.last_probe = Some(now);
                p.probes += 1;
                if !p.unacked.is_empty() {
                    p.probe_due = true;
                } else if p.queue.is_empty() {
                    p.queue.push_back(Packet::short(
                        Direction::Reply,
                        me,
                        i as NodeId,
                        PROBE_HANDLER,
                        &[],
                    ));
                }
                // Else the queue's front goes out at the next transmit.
            }
        }
        Ok(())
    }
}
