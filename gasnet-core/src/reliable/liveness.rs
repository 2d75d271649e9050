//! Liveness: probing silent peers, declaring one failed, and telling a
//! failed peer from this node's own cut link (see the [module
//! documentation](super), "A silent peer or a lossy link" and "Which
//! side is cut off").

use super::*;

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
    /// a response and has been silent for [`Config::peer_timeout`] through
    /// at least 8 probes; probes peers silent for
    /// [`Transport::probe_interval`] while something is owed (see the
    /// module documentation). Call it at least every few milliseconds.
    pub fn check(&mut self, now: Instant) -> Result<(), PeerSilent> {
        let cfg = self.cfg;
        let me = self.me;
        let every = self.probe_interval();
        let mut silent = None;
        let mut suspect = false;
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
            let quiet = now.saturating_duration_since(base);
            suspect |= quiet >= cfg.peer_timeout / 4;
            if quiet >= cfg.peer_timeout && p.probes >= MIN_PROBES {
                silent.get_or_insert_with(|| PeerSilent {
                    peer: i as NodeId,
                    reason: format!(
                        "no packet from it for {:.1} s, {} probes unanswered ({} packets unacknowledged, {} requests unanswered)",
                        quiet.as_secs_f64(),
                        p.probes,
                        p.unacked.len() + p.queue.len(),
                        p.awaiting
                    ),
                });
                continue;
            }
            // Probe at every interval of the silence (the last probe
            // counts only if it was sent during this silence).
            let last = p.last_probe.filter(|&t| t >= base).unwrap_or(base);
            if quiet >= every && now.saturating_duration_since(last) >= every {
                p.last_probe = Some(now);
                p.probes += 1;
                if !p.unacked.is_empty() {
                    p.probe_due = true;
                } else if p.queue.is_empty() {
                    p.queue.push_back(probe(me, i));
                }
                // Else the queue's front goes out at the next transmit.
            }
        }
        self.cross_probing = match (suspect, self.cross_probing) {
            (false, _) => None,
            (true, since) => Some(since.unwrap_or(now)),
        };
        if self.cross_probing.is_some() {
            // Every peer not needed is asked too: an answer shows that
            // this node's own link works.
            for (i, p) in self.peers.iter_mut().enumerate() {
                if i != me as usize
                    && !p.needs_answer()
                    && p.last_probe
                        .is_none_or(|t| now.saturating_duration_since(t) >= every)
                {
                    p.last_probe = Some(now);
                    p.queue.push_back(probe(me, i));
                }
            }
        }
        let Some(found) = silent else {
            return Ok(());
        };
        match self.cut_off(now, found.peer) {
            Some(reason) => Err(PeerSilent { peer: me, reason }),
            None => Err(found),
        }
    }

    /// Whether this node is the one cut off, as it finds `silent` failed:
    /// it has cross-probed every other peer for at least half the timeout
    /// and heard from none of them since it began. The reason, if so.
    fn cut_off(&self, now: Instant, silent: NodeId) -> Option<String> {
        let since = self.cross_probing?;
        let others: Vec<&Peer> = (self.peers.iter().enumerate())
            .filter(|&(i, _)| i != self.me as usize && i != silent as usize)
            .map(|(_, p)| p)
            .collect();
        let long = now.saturating_duration_since(since) >= self.cfg.peer_timeout / 2;
        (long && !others.is_empty() && others.iter().all(|p| p.last_heard < since)).then(|| {
            let heard = (self.peers.iter().enumerate())
                .filter(|&(i, _)| i != self.me as usize)
                .map(|(_, p)| p.last_heard)
                .max()
                .unwrap_or(since);
            format!(
                "cut off: no packet from any of the other {} nodes for {:.1} s, probes to each unanswered",
                others.len() + 1,
                now.saturating_duration_since(heard).as_secs_f64()
            )
        })
    }
}

/// A sequenced probe from `me` to `peer` (see [`PROBE_HANDLER`]).
fn probe(me: NodeId, peer: usize) -> Packet {
    Packet::short(Direction::Reply, me, peer as NodeId, PROBE_HANDLER, &[])
}
