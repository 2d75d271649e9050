//! The reliable transport below the engine, shared by the ipv6 conduit and
//! devsim's board links (and a board's link layer in hardware): per-peer
//! sequence numbers, cumulative ACK (piggy-backed on every AM packet, or
//! alone), selective NACK of gaps, retransmission on timeout with
//! exponential backoff, duplicate suppression, a bounded send window with
//! a congestion window inside it, in-order delivery per pair and
//! fragmentation to the path MTU with reassembly (`spec/wire.md`).
//!
//! It is a pure state machine: datagrams in ([`Transport::receive`]),
//! datagrams out ([`Transport::transmit`]), time passed in as [`Instant`]s,
//! so the unit tests drive it over a simulated lossy network without
//! sockets, and each user keeps only its sockets and its clock. The engine
//! above sees only whole packets, in order, once each.
//!
//! # Parameters
//!
//! | what | value |
//! |---|---|
//! | send window | [`Config::window`] packets (≤ 512, half the 1024-number NACK and reorder window) and the congestion window in bytes |
//! | congestion window | starts at 256 KiB, grows by the bytes acknowledged (slow start) up to [`Config::window_bytes`], halves on a NACK or a timeout |
//! | RTO | `srtt + 4·rttvar` (Karn: samples only from packets sent once), clamped to `rto_min..=rto_max`, doubled per consecutive timeout; a timeout resends the oldest unacknowledged packet only |
//! | ACK | immediately for `ACK_NOW` (set when the sender is window-limited) or a duplicate, else after [`Config::ack_delay`] unless a reverse AM packet carried it first |
//! | NACK | names every gap below the highest sequence number received, at most once per [`Config::nack_holdoff`] |
//! | failure | a peer owing an ACK or a response that sends nothing for [`Config::peer_timeout`] while it is probed |
//! | probe | every [`Transport::probe_interval`] of silence while something is owed: the oldest unacknowledged packet again, or a sequenced probe packet, asking for an immediate ACK |
//!
//! # A silent peer or a lossy link
//!
//! Any datagram from a peer — data, ACK, NACK — shows that its progress
//! engine runs (the ipv6 conduit's progress thread or a waiting
//! application thread; a board's loop), whatever the application on it
//! does. While this node needs the peer (packets unacknowledged or queued,
//! responses awaited) and the peer has been silent for the probe
//! interval (`min(keepalive, peer_timeout / 8)`), [`Transport::check`]
//! probes it, and again every interval while the silence lasts: it
//! resends the oldest unacknowledged packet, or queues a sequenced probe
//! (a Short reply to [`PROBE_HANDLER`]) when nothing is unacknowledged,
//! each with `ACK_NOW`, so that the peer's engine answers at once with an
//! ACK. A probe is sent at its interval whatever the retransmission
//! timeout's backoff, and does not shrink the congestion window. A peer is
//! declared failed only after `peer_timeout` of silence through at least
//! 8 probes: on a link that loses a fraction `p` of the datagrams each way
//! a live peer is blamed only if all of them or all their answers are
//! lost, probability `(1 - (1 - p)^2)^8` (`p` = 20 %: 3 × 10⁻⁴) for
//! one silence the length of the timeout, which itself needs the peer
//! unscheduled for most of a probe interval. A peer that is killed,
//! stopped or cut off answers nothing and is declared failed
//! `peer_timeout` after the last datagram it sent (or after this node
//! started needing it), plus the caller's checking period.
//!
//! # Which side is cut off
//!
//! A node cut off from the others (its cable pulled, say) finds every
//! peer it needs silent, while the others find only it silent: each side
//! sees silence, and a node alone cannot tell whether the peer or its own
//! link failed. So while any needed peer has been silent for a quarter of
//! `peer_timeout`, [`Transport::check`] also probes every other peer,
//! needed or not, at the probe interval. A node that still hears from
//! one of them names the silent peer; a node that has heard from none of
//! them since the cross-probing began, at least half the timeout before,
//! names itself as cut off (`PeerSilent::peer` is its own id). In a job
//! of two nodes there is no third to ask, and each names the other.

use crate::wire::{
    self, FLAG_ACK, FLAG_ACK_NOW, FLAG_SEQ, Packet, PacketType, max_fragment_payload,
};
use crate::{Category, Direction, NodeId};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Sequence numbers a receiver buffers beyond the next expected one (the
/// NACK bitmap's reach).
pub const RECV_WINDOW: usize = 1024;

/// Probes a silent peer must leave unanswered before it is declared
/// failed (see the module documentation).
pub const MIN_PROBES: u32 = 8;

/// The handler index of the transport's keepalive probe: a Short *reply*
/// that the receiving transport acknowledges and discards (it never reaches
/// the engine): [`crate::handlers::PROBE`], reserved in the system
/// range for this transport wherever it runs (ipv6 bridge, devsim links).
pub const PROBE_HANDLER: u8 = crate::handlers::PROBE;

/// Tunables of the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Most unacknowledged packets per peer (at most `RECV_WINDOW / 2`).
    pub window: usize,
    /// Most unacknowledged bytes per peer (the congestion window's cap).
    pub window_bytes: usize,
    /// Congestion window floor in bytes.
    pub min_cwnd: usize,
    /// Retransmission timeout before any round trip was measured.
    pub rto_initial: Duration,
    /// Smallest retransmission timeout.
    pub rto_min: Duration,
    /// Largest retransmission timeout (after backoff).
    pub rto_max: Duration,
    /// How long an acknowledgement may wait for a reverse packet to ride on.
    pub ack_delay: Duration,
    /// Least time between two NACKs to one peer.
    pub nack_holdoff: Duration,
    /// Silence after which a peer we need is declared failed.
    pub peer_timeout: Duration,
    /// Silence after which a peer we await a response from is probed.
    pub keepalive: Duration,
    /// Most packets retransmitted to one peer per timeout.
    pub max_rtx_burst: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            window: 512,
            window_bytes: 4 << 20,
            min_cwnd: 64 << 10,
            rto_initial: Duration::from_millis(50),
            rto_min: Duration::from_millis(10),
            rto_max: Duration::from_millis(1000),
            ack_delay: Duration::from_micros(500),
            nack_holdoff: Duration::from_millis(1),
            peer_timeout: Duration::from_secs(10),
            keepalive: Duration::from_millis(500),
            max_rtx_burst: 64,
        }
    }
}

/// Payloads from which [`Transport::transmit_gather`] hands a datagram
/// out in parts: below it, copying the payload costs less than a
/// gathering send's extra iovecs.
pub const GATHER_MIN: usize = 8 << 10;

/// Event counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams sent (data, retransmissions and control).
    pub datagrams_sent: u64,
    /// Datagrams received and accepted by the decoder.
    pub datagrams_received: u64,
    /// Datagrams the decoder or the addressing checks rejected.
    pub rejected: u64,
    /// Of those, datagrams whose CRC-32C did not match (damaged in flight).
    pub crc_errors: u64,
    /// Data packets retransmitted.
    pub retransmitted: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Duplicate data packets discarded.
    pub duplicates: u64,
    /// Data packets received out of order (buffered).
    pub out_of_order: u64,
    /// ACKs sent alone.
    pub acks_sent: u64,
    /// NACKs sent.
    pub nacks_sent: u64,
    /// Fragments that did not continue the AM being reassembled.
    pub reassembly_errors: u64,
}

/// A peer stopped answering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSilent {
    /// The peer.
    pub peer: NodeId,
    /// What was observed.
    pub reason: String,
}

#[derive(Debug)]
struct Unacked {
    packet: Packet,
    len: usize,
    sent_at: Instant,
    retransmitted: bool,
    nacked: bool,
}

#[derive(Debug)]
struct Peer {
    datagram: usize,
    // Send side.
    next_seq: u32,
    queue: VecDeque<Packet>,
    unacked: VecDeque<Unacked>,
    unacked_bytes: usize,
    cwnd: usize,
    srtt: Option<Duration>,
    rttvar: Duration,
    backoff: u32,
    // Receive side.
    expected: u32,
    reorder: VecDeque<Option<Packet>>,
    ack_due: Option<Instant>,
    nack_due: bool,
    last_nack: Option<Instant>,
    partial: Option<Packet>,
    // Liveness.
    last_heard: Instant,
    needed_since: Option<Instant>,
    awaiting: u64,
    last_probe: Option<Instant>,
    /// Probes sent since the peer was last heard.
    probes: u32,
    /// Resend the oldest unacknowledged packet with `ACK_NOW` at the next
    /// transmit (a probe).
    probe_due: bool,
}

impl Peer {
    fn new(datagram: usize, cfg: &Config, now: Instant) -> Peer {
        Peer {
            datagram,
            next_seq: 0,
            queue: VecDeque::new(),
            unacked: VecDeque::new(),
            unacked_bytes: 0,
            cwnd: (256 << 10).clamp(cfg.min_cwnd, cfg.window_bytes.max(cfg.min_cwnd)),
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 0,
            expected: 0,
            reorder: VecDeque::new(),
            ack_due: None,
            nack_due: false,
            last_nack: None,
            partial: None,
            last_heard: now,
            needed_since: None,
            awaiting: 0,
            last_probe: None,
            probes: 0,
            probe_due: false,
        }
    }

    fn rto(&self, cfg: &Config) -> Duration {
        let base = match self.srtt {
            Some(s) => (s + 4 * self.rttvar).clamp(cfg.rto_min, cfg.rto_max),
            None => cfg.rto_initial,
        };
        base.saturating_mul(1 << self.backoff.min(10))
            .min(cfg.rto_max)
    }

    fn needs_answer(&self) -> bool {
        !self.unacked.is_empty() || !self.queue.is_empty() || self.awaiting > 0
    }
}

/// `a` is serially before `b` (RFC 1982).
fn before(a: u32, b: u32) -> bool {
    let d = b.wrapping_sub(a);
    d != 0 && d < 1 << 31
}

/// The reliable transport of one node towards every other node.
#[derive(Debug)]
pub struct Transport {
    me: NodeId,
    cfg: Config,
    peers: Vec<Peer>,
    delivered: VecDeque<Packet>,
    scratch: Vec<u8>,
    stats: Stats,
    /// Since when every peer is probed because one is suspect
    /// ([`Transport::check`]).
    cross_probing: Option<Instant>,
}

impl Transport {
    /// The transport of node `me` in a job of `datagrams.len()` nodes;
    /// `datagrams[p]` is the largest UDP payload to send to node `p` (the
    /// path MTU less 48 bytes of IPv6 and UDP headers).
    pub fn new(me: NodeId, datagrams: &[usize], cfg: Config, now: Instant) -> Transport {
        let cfg = Config {
            window: cfg.window.clamp(1, RECV_WINDOW / 2),
            ..cfg
        };
        Transport {
            me,
            peers: datagrams
                .iter()
                .map(|&d| {
                    let d = d.clamp(wire::packet_len(wire_max_args(), 8), wire::MAX_UDP6_PAYLOAD);
                    Peer::new(d, &cfg, now)
                })
                .collect(),
            cfg,
            delivered: VecDeque::new(),
            scratch: Vec::with_capacity(wire::MAX_UDP6_PAYLOAD),
            stats: Stats::default(),
            cross_probing: None,
        }
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.cfg
    }

    /// Queues a whole packet from the engine (transport fields zero) for
    /// its destination, split into fragments that fit the path.
    pub fn send(&mut self, mut p: Packet, now: Instant) {
        let Some(peer) = self.peers.get_mut(p.dst as usize) else {
            return;
        };
        p.flags = 0;
        p.seq = 0;
        p.ack = 0;
        if let PacketType::Am {
            direction: Direction::Request,
            ..
        } = p.ptype
        {
            peer.awaiting += 1;
        }
        if !peer.needs_answer() {
            peer.needed_since = Some(now);
        }
        if p.encoded_len() <= peer.datagram {
            peer.queue.push_back(p);
        } else {
            let max = max_fragment_payload(peer.datagram, p.args.len());
            peer.queue.extend(p.fragments(max));
        }
    }

    /// Whether nothing is queued, unacknowledged or awaited towards any
    /// peer, and no acknowledgement is owed.
    pub fn is_idle(&self) -> bool {
        self.peers
            .iter()
            .all(|p| !p.needs_answer() && p.ack_due.is_none() && !p.nack_due)
    }

    /// Whether packets wait for window space or acknowledgement.
    pub fn has_unacked(&self) -> bool {
        self.peers
            .iter()
            .any(|p| !p.unacked.is_empty() || !p.queue.is_empty())
    }

    /// The next whole packet delivered in order, for the engine.
    pub fn delivered(&mut self) -> Option<Packet> {
        self.delivered.pop_front()
    }

    /// Takes one datagram from the network. Malformed or misaddressed
    /// datagrams are counted and dropped; delivered packets wait in
    /// [`Transport::delivered`].
    pub fn receive(&mut self, datagram: &[u8], now: Instant) {
        let p = match wire::decode(datagram) {
            Ok(p) => p,
            Err(e) => {
                self.stats.rejected += 1;
                if matches!(e, wire::DecodeError::CrcMismatch { .. }) {
                    self.stats.crc_errors += 1;
                }
                return;
            }
        };
        self.receive_packet(p, now);
    }

    /// As [`Transport::receive`], for a decoded packet.
    pub fn receive_packet(&mut self, p: Packet, now: Instant) {
        let src = p.src as usize;
        if p.dst != self.me || src >= self.peers.len() || src == self.me as usize {
            self.stats.rejected += 1;
            return;
        }
        self.stats.datagrams_received += 1;
        self.peers[src].last_heard = now;
        self.peers[src].probes = 0;
        if p.flags & FLAG_ACK != 0 {
            self.take_ack(src, p.ack, now);
        }
        match p.ptype {
            PacketType::Ack => {}
            PacketType::Nack => {
                if let Ok(missing) = wire::nack_missing(&p) {
                    self.take_nack(src, &missing);
                }
            }
            PacketType::Am { .. } => {
                if p.flags & FLAG_SEQ == 0 {
                    self.stats.rejected += 1;
                    return;
                }
                self.take_data(src, p, now);
            }
        }
    }

    fn take_ack(&mut self, src: usize, ack: u32, now: Instant) {
        let cfg = self.cfg;
        let peer = &mut self.peers[src];
        let mut acked_bytes = 0;
        while let Some(u) = peer.unacked.front() {
            if !before(u.packet.seq, ack) {
                break;
            }
            let u = peer.unacked.pop_front().expect("front exists");
            peer.unacked_bytes -= u.len;
            acked_bytes += u.len;
            if !u.retransmitted {
                let sample = now.saturating_duration_since(u.sent_at);
                match peer.srtt {
                    None => {
                        peer.srtt = Some(sample);
                        peer.rttvar = sample / 2;
                    }
                    Some(s) => {
                        let diff = s.abs_diff(sample);
                        peer.rttvar = (peer.rttvar * 3 + diff) / 4;
                        peer.srtt = Some((s * 7 + sample) / 8);
                    }
                }
            }
            crate::pool::give(u.packet.payload);
        }
        if acked_bytes > 0 {
            peer.backoff = 0;
            peer.cwnd = (peer.cwnd + acked_bytes).min(cfg.window_bytes.max(cfg.min_cwnd));
        }
    }

    fn take_nack(&mut self, src: usize, missing: &[u32]) {
        let cfg = self.cfg;
        let peer = &mut self.peers[src];
        let Some(first) = peer.unacked.front().map(|u| u.packet.seq) else {
            return;
        };
        let mut any = false;
        for &seq in missing {
            let idx = seq.wrapping_sub(first) as usize;
            if let Some(u) = peer.unacked.get_mut(idx)
                && u.packet.seq == seq
            {
                u.nacked = true;
                any = true;
            }
        }
        if any {
            peer.cwnd = (peer.cwnd / 2).max(cfg.min_cwnd);
        }
    }

    fn take_data(&mut self, src: usize, mut p: Packet, now: Instant) {
        let cfg = self.cfg;
        let peer = &mut self.peers[src];
        let ack_now = p.flags & FLAG_ACK_NOW != 0;
        let d = p.seq.wrapping_sub(peer.expected) as usize;
        if d >= 1 << 31 {
            // Already delivered: the sender missed our acknowledgement.
            self.stats.duplicates += 1;
            peer.ack_due = Some(now);
            return;
        }
        if d >= RECV_WINDOW {
            // Beyond what we buffer; the sender retransmits it later.
            self.stats.rejected += 1;
            return;
        }
        let due = if ack_now { now } else { now + cfg.ack_delay };
        peer.ack_due = Some(peer.ack_due.map_or(due, |t| t.min(due)));
        p.flags = 0;
        p.seq = 0;
        p.ack = 0;
        if d > 0 {
            if peer.reorder.len() <= d {
                peer.reorder.resize_with(d + 1, || None);
            }
            if peer.reorder[d].is_some() {
                self.stats.duplicates += 1;
                peer.ack_due = Some(now);
            } else {
                self.stats.out_of_order += 1;
                peer.reorder[d] = Some(p);
                peer.nack_due = true;
            }
            return;
        }
        // In order: deliver it and whatever it unblocks.
        let mut next = Some(p);
        while let Some(p) = next {
            peer.expected = peer.expected.wrapping_add(1);
            if !peer.reorder.is_empty() {
                peer.reorder.pop_front();
            }
            Self::reassemble(peer, p, &mut self.delivered, &mut self.stats);
            next = match peer.reorder.front_mut() {
                Some(slot) => slot.take(),
                None => None,
            };
        }
        peer.nack_due = peer.reorder.iter().any(|s| s.is_some());
        if !peer.nack_due {
            peer.reorder.clear();
        }
    }

    /// Joins fragments (which arrive in order, consecutively) into whole
    /// packets and hands those to the engine.
    fn reassemble(peer: &mut Peer, p: Packet, out: &mut VecDeque<Packet>, stats: &mut Stats) {
        let whole = if p.frag_offset == 0 {
            if peer.partial.take().is_some() {
                stats.reassembly_errors += 1;
            }
            if p.payload.len() == p.total_len as usize {
                Some(p)
            } else {
                let mut p = p;
                p.payload.reserve(p.total_len as usize - p.payload.len());
                peer.partial = Some(p);
                None
            }
        } else {
            match peer.partial.take() {
                Some(mut part)
                    if part.ptype == p.ptype
                        && part.handler == p.handler
                        && part.args == p.args
                        && part.offset == p.offset
                        && part.total_len == p.total_len
                        && part.payload.len() == p.frag_offset as usize =>
                {
                    part.payload.extend_from_slice(&p.payload);
                    if part.payload.len() == part.total_len as usize {
                        Some(part)
                    } else {
                        peer.partial = Some(part);
                        None
                    }
                }
                _ => {
                    stats.reassembly_errors += 1;
                    None
                }
            }
        };
        let Some(p) = whole else { return };
        if let PacketType::Am {
            direction: Direction::Reply,
            category,
        } = p.ptype
        {
            if p.handler == PROBE_HANDLER && category == Category::Short {
                return;
            }
            peer.awaiting = peer.awaiting.saturating_sub(1);
        }
        out.push_back(p);
    }

    /// Emits every datagram that is due: retransmissions (NACKed, or timed
    /// out), new packets the windows allow, and acknowledgements. `out`
    /// gets the destination and the encoded datagram.
    pub fn transmit(&mut self, now: Instant, out: &mut dyn FnMut(NodeId, &[u8])) {
        self.transmit_parts(now, false, &mut |dst, parts| {
            if let [whole] = parts {
                out(dst, whole);
            }
        });
    }

    /// As [`Transport::transmit`], but a datagram with a payload of at
    /// least [`GATHER_MIN`] bytes reaches `out` in three parts whose
    /// concatenation is the datagram ([`wire::encode_gather`]: header and
    /// arguments, the payload itself, padding and CRC), for a send that
    /// gathers them instead of copying the payload once more; smaller
    /// datagrams come whole, as one part.
    pub fn transmit_gather(&mut self, now: Instant, out: &mut dyn FnMut(NodeId, &[&[u8]])) {
        self.transmit_parts(now, true, out);
    }

    fn transmit_parts(
        &mut self,
        now: Instant,
        gather: bool,
        out: &mut dyn FnMut(NodeId, &[&[u8]]),
    ) {
        for i in 0..self.peers.len() {
            if i == self.me as usize {
                continue;
            }
            self.transmit_peer(i, now, gather, out);
        }
    }

    fn emit(
        scratch: &mut Vec<u8>,
        stats: &mut Stats,
        p: &Packet,
        dst: NodeId,
        gather: bool,
        out: &mut dyn FnMut(NodeId, &[&[u8]]),
    ) {
        scratch.clear();
        if gather && p.payload.len() >= GATHER_MIN {
            if let Ok(tail) = wire::encode_gather(p, scratch) {
                stats.datagrams_sent += 1;
                out(dst, &[scratch, &p.payload, tail.as_slice()]);
            }
        } else if wire::encode_into(p, scratch).is_ok() {
            stats.datagrams_sent += 1;
            out(dst, &[scratch]);
        }
    }

    fn transmit_peer(
        &mut self,
        i: usize,
        now: Instant,
        gather: bool,
        out: &mut dyn FnMut(NodeId, &[&[u8]]),
    ) {
        let cfg = self.cfg;
        let me = self.me;
        let dst = i as NodeId;
        let peer = &mut self.peers[i];
        let ack = peer.expected;
        let mut sent_any = false;
        let rto = peer.rto(&cfg);
        let gap = peer
            .srtt
            .map_or(cfg.rto_min, |s| s.max(Duration::from_micros(200)));

        // Retransmissions: NACKed packets, then timed-out ones.
        let timed_out = peer
            .unacked
            .front()
            .is_some_and(|u| now.saturating_duration_since(u.sent_at) >= rto);
        if timed_out {
            self.stats.timeouts += 1;
            peer.backoff = (peer.backoff + 1).min(10);
            peer.cwnd = (peer.cwnd / 2).max(cfg.min_cwnd);
        }
        let probe = std::mem::take(&mut peer.probe_due);
        let mut burst = 0;
        let n = peer.unacked.len();
        for k in 0..n {
            if burst >= cfg.max_rtx_burst {
                break;
            }
            let u = &mut peer.unacked[k];
            let since = now.saturating_duration_since(u.sent_at);
            // A timeout resends the oldest packet only (as TCP does): most
            // timeouts on a busy host are a peer that was not scheduled,
            // not loss, and resending the whole window then doubles the
            // traffic. The peer's answer (an ACK, or a NACK naming what
            // it really misses) drives the rest.
            let probed = probe && k == 0;
            let due = (u.nacked && since >= gap) || ((timed_out || probed) && k == 0);
            if !due {
                continue;
            }
            u.nacked = false;
            u.retransmitted = true;
            u.sent_at = now;
            u.packet.ack = ack;
            u.packet.flags = FLAG_SEQ | FLAG_ACK;
            burst += 1;
            if burst == cfg.max_rtx_burst || k + 1 == n || probed {
                u.packet.flags |= FLAG_ACK_NOW;
            }
            self.stats.retransmitted += 1;
            Self::emit(
                &mut self.scratch,
                &mut self.stats,
                &u.packet,
                dst,
                gather,
                out,
            );
            sent_any = true;
        }
        // New packets, within the packet window and the congestion window.
        while let Some(front) = peer.queue.front() {
            let len = front.encoded_len();
            let room = peer.unacked.len() < cfg.window
                && (peer.unacked.is_empty() || peer.unacked_bytes + len <= peer.cwnd);
            if !room {
                break;
            }
            let mut p = peer.queue.pop_front().expect("front exists");
            p.seq = peer.next_seq;
            peer.next_seq = peer.next_seq.wrapping_add(1);
            p.ack = ack;
            p.flags = FLAG_SEQ | FLAG_ACK;
            // Ask for an immediate acknowledgement only when the sender
            // needs it to go on: the next packet does not fit the windows,
            // or half the packet window is in flight. A lone packet needs
            // none: a request is acknowledged by its response, anything
            // else by the next packet back or the delayed ACK, and nobody
            // waits on that (an ACK datagram per response cost the other
            // side a wake-up per round trip).
            let blocked = match peer.queue.front() {
                None => false,
                Some(f) => {
                    peer.unacked.len() + 1 >= cfg.window
                        || peer.unacked_bytes + len + f.encoded_len() > peer.cwnd
                }
            };
            let is_probe = p.handler == PROBE_HANDLER
                && p.ptype
                    == (PacketType::Am {
                        direction: Direction::Reply,
                        category: Category::Short,
                    });
            if blocked || peer.unacked.len() + 1 >= cfg.window / 2 || is_probe {
                p.flags |= FLAG_ACK_NOW;
            }
            Self::emit(&mut self.scratch, &mut self.stats, &p, dst, gather, out);
            sent_any = true;
            peer.unacked_bytes += len;
            peer.unacked.push_back(Unacked {
                packet: p,
                len,
                sent_at: now,
                retransmitted: false,
                nacked: false,
            });
        }
        if sent_any {
            peer.ack_due = None;
        }

        // Control: a NACK naming the gaps, else a due ACK.
        let nack_ok = peer
            .last_nack
            .is_none_or(|t| now.saturating_duration_since(t) >= cfg.nack_holdoff);
        let mut nacked = false;
        if peer.nack_due && nack_ok {
            let missing: Vec<u32> = peer
                .reorder
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_none())
                .map(|(k, _)| ack.wrapping_add(k as u32))
                .collect();
            if let Ok(p) = Packet::nack(me, dst, ack, &missing) {
                self.stats.nacks_sent += 1;
                Self::emit(&mut self.scratch, &mut self.stats, &p, dst, gather, out);
                peer.last_nack = Some(now);
                peer.ack_due = None;
                nacked = true;
            }
        }
        // A due ACK goes out unless a NACK (which acknowledges too) did:
        // a NACK held off, or one that cannot be encoded, must not keep
        // the peer waiting for its acknowledgement (or its probe's answer).
        if !nacked && peer.ack_due.is_some_and(|t| t <= now) {
            self.stats.acks_sent += 1;
            let p = Packet::ack(me, dst, ack);
            Self::emit(&mut self.scratch, &mut self.stats, &p, dst, gather, out);
            peer.ack_due = None;
        }
    }

    /// When [`Transport::transmit`] or [`Transport::check`] next has
    /// something to do (a retransmission timeout, a delayed ACK, a held-off
    /// NACK, a keepalive or failure check), if anything is pending.
    pub fn next_deadline(&self) -> Option<Instant> {
        let cfg = &self.cfg;
        let mut t: Option<Instant> = None;
        let mut at = |x: Instant| t = Some(t.map_or(x, |t| t.min(x)));
        for p in &self.peers {
            if let Some(u) = p.unacked.front() {
                at(u.sent_at + p.rto(cfg));
            }
            if let Some(a) = p.ack_due {
                at(a);
            }
            if p.nack_due {
                at(p.last_nack.map_or(Instant::now(), |n| n + cfg.nack_holdoff));
            }
            if p.unacked.iter().any(|u| u.nacked) {
                at(Instant::now());
            }
            if p.needs_answer() {
                let base = p.last_heard.max(p.needed_since.unwrap_or(p.last_heard));
                let every = self.probe_interval();
                let next_probe = p.last_probe.filter(|&t| t >= base).map_or(base, |t| t);
                at((next_probe + every).min(base + cfg.peer_timeout));
            }
        }
        t
    }
}

fn wire_max_args() -> usize {
    crate::MAX_ARGS
}

mod liveness;

#[cfg(test)]
mod tests;
