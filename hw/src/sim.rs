//! A simulation harness for tests and benchmarks: RTL boards brought up as
//! a host brings up a board (spec/registers.md section 6.4), the host's view
//! of their rings ([`Host`]), and a network joining several boards cycle by
//! cycle the way devsim joins its boards ([`Net`]), optionally lossy.
//!
//! It is test tooling: a broken expectation (a board that does not enable,
//! a network still busy after the cycle limit, a BAR2 access out of range)
//! panics with a message saying what and where.

use crate::{Board, BoardConfig, Dram};
use gasnet_core::cmd::{self, Completion, RxEntry, ctrl, regs, status};
use std::collections::VecDeque;

/// Segment base of a harness board (a BAR2 offset).
pub const SEG_BASE: u64 = 0;
/// Segment size of a harness board: 1 MiB.
pub const SEG_SIZE: u64 = 1 << 20;
/// Bounce area of a harness board: right after the segment.
pub const RX_BOUNCE: u64 = 1 << 20;
/// BAR2 window of a harness board.
pub const WINDOW: u64 = 2 << 20;

/// Memory that allocates 4 KiB pages on first write (a large BAR2 window
/// without its cost); unwritten bytes read 0.
pub struct Sparse {
    len: u64,
    pages: std::collections::HashMap<u64, Box<[u8; 4096]>>,
}

impl Sparse {
    /// `len` bytes, all zero.
    pub fn new(len: u64) -> Sparse {
        Sparse {
            len,
            pages: Default::default(),
        }
    }
}

impl Dram for Sparse {
    fn len(&self) -> u64 {
        self.len
    }
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        if addr
            .checked_add(buf.len() as u64)
            .is_none_or(|e| e > self.len)
        {
            return false;
        }
        for (i, b) in buf.iter_mut().enumerate() {
            let a = addr + i as u64;
            *b = self
                .pages
                .get(&(a / 4096))
                .map_or(0, |p| p[(a % 4096) as usize]);
        }
        true
    }
    fn write(&mut self, addr: u64, data: &[u8], strobe: u32) -> bool {
        if data.len() > 32
            || addr
                .checked_add(data.len() as u64)
                .is_none_or(|e| e > self.len)
        {
            return false;
        }
        for (i, &b) in data.iter().enumerate() {
            if strobe >> i & 1 == 1 {
                let a = addr + i as u64;
                let page = self
                    .pages
                    .entry(a / 4096)
                    .or_insert_with(|| Box::new([0; 4096]));
                page[(a % 4096) as usize] = b;
            }
        }
        true
    }
}

/// The host's side of one board: ring indices and phases it keeps.
pub struct Host<D: Dram = Vec<u8>> {
    /// The board.
    pub board: Board<D>,
    /// The host's command ring tail.
    pub sq_tail: u32,
    /// The host's completion ring head.
    pub cq_head: u32,
    /// The completion phase the host expects next.
    pub cq_phase: bool,
    /// The host's receive ring head.
    pub rq_head: u32,
    /// The receive phase the host expects next.
    pub rq_phase: bool,
}

impl Host {
    /// A board of node `node` of `nodes`, reset, configured and enabled.
    pub fn new(node: u16, nodes: u16, cfg: BoardConfig) -> Host {
        Host::with_memory(node, nodes, cfg, vec![0u8; WINDOW as usize], RX_BOUNCE)
    }
}

impl<D: Dram> Host<D> {
    /// As [`Host::new`] over `dram`, with the bounce area at `rx_bounce`.
    pub fn with_memory(
        node: u16,
        nodes: u16,
        cfg: BoardConfig,
        dram: D,
        rx_bounce: u64,
    ) -> Host<D> {
        let cfg = BoardConfig { node, nodes, ..cfg };
        let board = Board::new(cfg, dram).expect("model");
        let mut h = Host {
            board,
            sq_tail: 0,
            cq_head: 0,
            cq_phase: true,
            rq_head: 0,
            rq_phase: true,
        };
        h.bring_up(node, nodes, rx_bounce);
        h
    }

    /// spec/registers.md section 6.4.
    pub fn bring_up(&mut self, node: u16, nodes: u16, rx_bounce: u64) {
        let b = &mut self.board;
        assert_eq!(b.read32(regs::MAGIC), cmd::MAGIC);
        assert_eq!(b.read32(regs::VERSION), cmd::VERSION);
        b.write32(regs::CTRL, ctrl::RESET);
        while b.read32(regs::CTRL) & ctrl::RESET != 0 {}
        b.write32(regs::NODE_ID, node as u32);
        b.write32(regs::NODE_COUNT, nodes as u32);
        b.write64(regs::SEG_BASE_LO, SEG_BASE);
        b.write64(regs::SEG_SIZE_LO, SEG_SIZE);
        b.write64(regs::RX_BOUNCE_LO, rx_bounce);
        b.write32(regs::CTRL, ctrl::ENABLE);
        assert_ne!(
            b.read32(regs::STATUS) & status::READY,
            0,
            "board did not enable"
        );
        self.sq_tail = 0;
        self.cq_head = 0;
        self.cq_phase = true;
        self.rq_head = 0;
        self.rq_phase = true;
    }

    /// Writes the slots of one descriptor at the tail and rings the doorbell.
    pub fn submit(&mut self, slots: &[[u8; 64]]) {
        for s in slots {
            self.write_slot(s);
        }
        self.board.write32(regs::DOORBELL, self.sq_tail);
    }

    /// Writes one slot at the tail without ringing the doorbell.
    pub fn write_slot(&mut self, s: &[u8; 64]) {
        let at = regs::SQ_RING + 64 * self.sq_tail as usize;
        for w in 0..16 {
            let v = u32::from_le_bytes([s[4 * w], s[4 * w + 1], s[4 * w + 2], s[4 * w + 3]]);
            self.board.write32(at + 4 * w, v);
        }
        self.sq_tail = (self.sq_tail + 1) % cmd::SQ_ENTRIES;
    }

    /// Rings the doorbell with the current tail.
    pub fn doorbell(&mut self) {
        self.board.write32(regs::DOORBELL, self.sq_tail);
    }

    /// The raw bytes of completion entry `i`.
    pub fn cq_entry(&mut self, i: u32) -> [u8; 32] {
        let mut e = [0u8; 32];
        let at = regs::CQ_RING + 32 * i as usize;
        for w in 0..8 {
            e[4 * w..4 * w + 4].copy_from_slice(&self.board.read32(at + 4 * w).to_le_bytes());
        }
        e
    }

    /// The next completion entry's bytes, if the board has written it.
    pub fn poll_cq_raw(&mut self) -> Option<[u8; 32]> {
        let at = regs::CQ_RING + 32 * self.cq_head as usize;
        let w = self.board.read32(at + 28);
        if (w >> 24 & 1 == 1) != self.cq_phase {
            return None;
        }
        let e = self.cq_entry(self.cq_head);
        self.cq_head = (self.cq_head + 1) % cmd::CQ_ENTRIES;
        if self.cq_head == 0 {
            self.cq_phase = !self.cq_phase;
        }
        self.board.write32(regs::CQ_HEAD, self.cq_head);
        Some(e)
    }

    /// The next completion, decoded.
    pub fn poll_cq(&mut self) -> Option<Completion> {
        self.poll_cq_raw()
            .map(|e| Completion::decode(&e).expect("completion decodes"))
    }

    /// The raw bytes of receive entry `i`.
    pub fn rq_entry(&mut self, i: u32) -> [u8; 128] {
        let mut e = [0u8; 128];
        let at = regs::RQ_RING + 128 * i as usize;
        for w in 0..32 {
            e[4 * w..4 * w + 4].copy_from_slice(&self.board.read32(at + 4 * w).to_le_bytes());
        }
        e
    }

    /// The next receive entry's bytes and its slot, if written, without
    /// giving it back (see [`Host::rq_free`]).
    pub fn rq_next(&mut self) -> Option<(u32, [u8; 128])> {
        let at = regs::RQ_RING + 128 * self.rq_head as usize;
        let w = self.board.read32(at);
        if (w >> 8 & 1 == 1) != self.rq_phase {
            return None;
        }
        Some((self.rq_head, self.rq_entry(self.rq_head)))
    }

    /// Gives the entry [`Host::rq_next`] returned (and its bounce buffer) back.
    pub fn rq_free(&mut self) {
        self.rq_head = (self.rq_head + 1) % cmd::RQ_ENTRIES;
        if self.rq_head == 0 {
            self.rq_phase = !self.rq_phase;
        }
        self.board.write32(regs::RQ_HEAD, self.rq_head);
    }

    /// The next receive entry's bytes and its slot, if written; given back.
    pub fn poll_rq_raw(&mut self) -> Option<(u32, [u8; 128])> {
        let e = self.rq_next()?;
        self.rq_free();
        Some(e)
    }

    /// The next receive entry, decoded.
    pub fn poll_rq(&mut self) -> Option<(u32, RxEntry)> {
        self.poll_rq_raw()
            .map(|(s, e)| (s, RxEntry::decode(&e).expect("receive entry decodes")))
    }

    /// Segment bytes, loaded through the BAR2 window.
    pub fn seg(&self, offset: u64, len: usize) -> Vec<u8> {
        self.bar2(SEG_BASE + offset, len)
    }

    /// BAR2 bytes.
    pub fn bar2(&self, at: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        assert!(
            self.board.dram().read(at, &mut v),
            "BAR2 {at:#x}+{len} out of range"
        );
        v
    }

    /// Host stores into the segment through the BAR2 window.
    pub fn seg_write(&mut self, offset: u64, data: &[u8]) {
        for (i, c) in data.chunks(32).enumerate() {
            let at = SEG_BASE + offset + 32 * i as u64;
            assert!(
                self.board.dram_mut().write(at, c, u32::MAX),
                "BAR2 {at:#x} out of range"
            );
        }
    }

    /// Clocks the board alone until it has been quiet for 64 cycles (at
    /// most `limit` cycles).
    pub fn settle(&mut self, limit: u64) -> u64 {
        let start = self.board.cycles();
        let mut quiet = 0;
        while quiet < 64 {
            self.board.cycle();
            quiet = if self.board.busy() { 0 } else { quiet + 1 };
            assert!(
                self.board.cycles() - start < limit,
                "board busy after {limit} cycles"
            );
        }
        self.board.cycles() - start
    }

    /// Clocks the board alone for `cycles` cycles.
    pub fn run(&mut self, cycles: u64) {
        for _ in 0..cycles {
            self.board.cycle();
        }
    }

    /// Every frame the board has sent so far, from both ports.
    pub fn sent(&mut self) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        for p in 0..2 {
            while let Some(f) = self.board.pop_frame(p) {
                v.push(f);
            }
        }
        v
    }
}

/// Link impairment for a [`Net`]: percentages of frames dropped, duplicated,
/// and delayed by up to `reorder_cycles` (reordering them).
/// Link impairment for a [`Net`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Impair {
    /// Percent of frames dropped.
    pub loss: u32,
    /// Percent of frames delivered twice.
    pub dup: u32,
    /// Percent of frames delayed.
    pub reorder: u32,
    /// Most cycles a delayed frame is held back.
    pub reorder_cycles: u64,
}

struct InFlight {
    due: u64,
    dst: usize,
    port: usize,
    frame: Vec<u8>,
}

/// Boards joined as devsim joins them: a full mesh in which the pair (s, d)
/// uses port d mod 2 of board s and port s mod 2 of board d, with a fixed
/// latency in cycles per frame.
pub struct Net {
    /// The boards, by node id.
    pub hosts: Vec<Host>,
    /// Cycles from a frame's last beat leaving to its first beat arriving.
    pub latency: u64,
    /// Impairment of every frame.
    pub impair: Impair,
    rng: u64,
    flight: VecDeque<InFlight>,
    /// Every frame that left a board: (source board, bytes).
    pub sent: Vec<(usize, Vec<u8>)>,
    /// Whether to record [`Net::sent`].
    pub keep_sent: bool,
    cycle: u64,
}

/// What a host drained from its board: raw completion entries, and receive
/// entries (ring index, raw entry, payload).
pub type Drained = (Vec<[u8; 32]>, Vec<(u32, [u8; 128], Vec<u8>)>);

impl Net {
    /// `n` boards (node ids 0..n) brought up, `latency` cycles apart.
    pub fn new(n: usize, cfg: BoardConfig, latency: u64) -> Net {
        Net {
            hosts: (0..n).map(|i| Host::new(i as u16, n as u16, cfg)).collect(),
            latency,
            impair: Impair::default(),
            rng: 0x1234_5678_9ABC_DEF1,
            flight: VecDeque::new(),
            sent: Vec::new(),
            keep_sent: false,
            cycle: 0,
        }
    }

    fn chance(&mut self, pct: u32) -> bool {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        pct > 0 && (self.rng % 100) < pct as u64
    }

    /// One cycle of every board, then frames moved between them.
    pub fn cycle(&mut self) {
        for h in &mut self.hosts {
            h.board.cycle();
        }
        self.cycle += 1;
        self.route();
    }

    fn route(&mut self) {
        let n = self.hosts.len();
        for s in 0..n {
            for port in 0..2 {
                while let Some(f) = self.hosts[s].board.pop_frame(port) {
                    if self.keep_sent {
                        self.sent.push((s, f.clone()));
                    }
                    let dst = if f.len() >= 8 {
                        u16::from_be_bytes([f[6], f[7]]) as usize
                    } else {
                        continue;
                    };
                    if dst >= n {
                        continue;
                    }
                    if self.chance(self.impair.loss) {
                        continue;
                    }
                    let copies = if self.chance(self.impair.dup) { 2 } else { 1 };
                    for _ in 0..copies {
                        let extra = if self.chance(self.impair.reorder) {
                            1 + self.rng % self.impair.reorder_cycles.max(1)
                        } else {
                            0
                        };
                        self.flight.push_back(InFlight {
                            due: self.cycle + self.latency + extra,
                            dst,
                            port: s % 2,
                            frame: f.clone(),
                        });
                    }
                }
            }
        }
        let mut keep = VecDeque::new();
        while let Some(f) = self.flight.pop_front() {
            if f.due <= self.cycle {
                self.hosts[f.dst].board.push_frame(f.port, f.frame);
            } else {
                keep.push_back(f);
            }
        }
        self.flight = keep;
    }

    /// The state of every board, for a failure message.
    pub fn report(&mut self) -> String {
        let mut out = format!("{} frames in flight\n", self.flight.len());
        for (i, h) in self.hosts.iter_mut().enumerate() {
            let b = &mut h.board;
            out += &format!(
                "board {i}: busy {} status {:#x} err {:#x}/{:#x} sq {}/{} cq {}/{} rq {}/{} tx {} rx {} rtx {} cmds {}\n",
                b.busy(),
                b.read32(regs::STATUS),
                b.read32(regs::ERR_STATUS),
                b.read32(regs::ERR_INFO),
                b.read32(regs::SQ_HEAD),
                b.read32(regs::SQ_TAIL),
                b.read32(regs::CQ_HEAD),
                b.read32(regs::CQ_TAIL),
                b.read32(regs::RQ_HEAD),
                b.read32(regs::RQ_TAIL),
                b.read64(regs::CNT_PACKETS_TX),
                b.read64(regs::CNT_PACKETS_RX),
                b.read64(regs::CNT_RETRANSMITS),
                b.read64(regs::CNT_COMMANDS),
            );
        }
        out
    }

    /// Whether frames are on the wire or any board is busy.
    pub fn busy(&self) -> bool {
        !self.flight.is_empty() || self.hosts.iter().any(|h| h.board.busy())
    }

    /// Clocks as [`Net::settle`] does while every host keeps draining its
    /// completion and receive queues (every 128 cycles); returns what they
    /// drained, per host.
    pub fn settle_draining(&mut self, limit: u64) -> Vec<Drained> {
        let n = self.hosts.len();
        let mut got: Vec<Drained> = vec![Default::default(); n];
        let start = self.cycle;
        let mut quiet = 0;
        loop {
            self.cycle();
            quiet = if self.busy() { 0 } else { quiet + 1 };
            if self.cycle.is_multiple_of(128) || quiet >= 64 {
                for (i, h) in self.hosts.iter_mut().enumerate() {
                    while let Some(c) = h.poll_cq_raw() {
                        got[i].0.push(c);
                    }
                    while let Some((slot, e)) = h.rq_next() {
                        // A Medium entry's payload, read before the slot is freed.
                        let len = u32::from_le_bytes([e[8], e[9], e[10], e[11]]) as usize;
                        let addr = u64::from_le_bytes(e[16..24].try_into().unwrap());
                        let payload = if e[0] & 3 == 1 {
                            h.bar2(addr, len)
                        } else {
                            Vec::new()
                        };
                        h.rq_free();
                        got[i].1.push((slot, e, payload));
                    }
                }
            }
            if quiet >= 64 {
                return got;
            }
            if self.cycle - start >= limit {
                panic!(
                    "network still busy after {limit} cycles:\n{}",
                    self.report()
                );
            }
        }
    }

    /// Clocks until nothing is busy for `quiet` cycles in a row, at most
    /// `limit` cycles; returns the cycles run. Panics at the limit.
    pub fn settle(&mut self, limit: u64) -> u64 {
        let start = self.cycle;
        let mut quiet = 0;
        while quiet < 64 {
            self.cycle();
            quiet = if self.busy() { 0 } else { quiet + 1 };
            assert!(
                self.cycle - start < limit,
                "network still busy after {limit} cycles"
            );
        }
        self.cycle - start
    }
}
