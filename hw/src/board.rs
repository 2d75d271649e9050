//! A board around the core: the Verilated [`Core`], its memory served by an
//! [`AxiMemory`] over a [`Dram`], its two link ports as frame queues, and
//! BAR0 loads and stores as the host makes them. Every method that touches
//! the core advances the clock; nothing happens between cycles.

use crate::link::{RxFeeder, TxCollector};
use crate::memory::{AxiMemory, Dram};
use crate::model::{Core, ModelError};
use crate::signals::{Inputs, Outputs};

/// How a board is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoardConfig {
    /// Strapped `NODE_ID` (its reset value).
    pub node: u16,
    /// Strapped `NODE_COUNT`.
    pub nodes: u16,
    /// Cycles from a memory read request to its first data beat.
    pub mem_latency: u32,
    /// Cycles from a memory write's last beat to its write response.
    pub mem_write_latency: u32,
    /// Percent of cycles the memory withholds ready/valid (0: never).
    pub mem_stall_percent: u32,
    /// Core cycles per microsecond tick (`None`: ticks are given with
    /// [`Board::tick`], e.g. from wall time).
    pub cycles_per_tick: Option<u32>,
    /// First retransmission timeout, in ticks.
    pub rto_ticks: u32,
    /// Largest retransmission timeout, in ticks.
    pub rto_max_ticks: u32,
    /// Ticks without progress before a peer is declared dead.
    pub peer_timeout_ticks: u32,
    /// Cycles an acknowledgement may wait for a frame to ride on.
    pub ack_delay_cycles: u16,
    /// Ticks between two NACKs to one peer.
    pub nack_hold_ticks: u16,
    /// A compute kernel sits on the kernel port (`strap_compute`: the
    /// core reports `CAPS.COMPUTE` and hands requests to handlers
    /// 224..=255 to [`Board::take_kernel_request`] instead of the host).
    pub compute: bool,
}

impl Default for BoardConfig {
    /// One node of one, 100-cycle memory reads and writes, 250 cycles per microsecond
    /// (a 250 MHz clock), a 20 us first retransmission timeout.
    fn default() -> Self {
        BoardConfig {
            node: 0,
            nodes: 1,
            mem_latency: 100,
            mem_write_latency: 100,
            mem_stall_percent: 0,
            cycles_per_tick: Some(250),
            rto_ticks: 20,
            rto_max_ticks: 10_000,
            peer_timeout_ticks: 10_000_000,
            ack_delay_cycles: 64,
            nack_hold_ticks: 5,
            compute: false,
        }
    }
}

/// Something the board did in a cycle, recorded when tracing is on
/// ([`Board::set_trace`]): the raw material of the cycle figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first beat of a frame left on this port: the port and the
    /// frame's type code (spec/wire.md).
    TxStart(usize, u8),
    /// The last beat of a frame left on this port.
    TxEnd(usize),
    /// The first beat of a frame arrived on this port: the port and the
    /// frame's type code.
    RxStart(usize, u8),
    /// A write beat to board memory was accepted.
    MemWrite,
    /// A read burst from board memory at this address was accepted.
    MemRead(u64),
    /// The MSI output pulsed.
    Msi,
}

/// A request the core handed to the kernel port: an active message to a
/// compute handler (224..=255), its payload unused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRequest {
    /// The requesting node.
    pub src: u16,
    /// The handler index.
    pub handler: u8,
    /// The arguments.
    pub args: Vec<u32>,
}

/// A core with its memory and ports. See the [module docs](self).
pub struct Board<D: Dram> {
    core: Core,
    cfg: BoardConfig,
    inp: Inputs,
    out: Outputs,
    mem: AxiMemory,
    dram: D,
    tx: [TxCollector; 2],
    rx: [RxFeeder; 2],
    cycle: u64,
    tick_pending: bool,
    msi: u64,
    moved: u64,
    trace: Option<Vec<(u64, Event)>>,
    tx_mid: [bool; 2],
    /// The port of each frame sent and not yet popped, in the order the
    /// frames ended.
    tx_order: std::collections::VecDeque<usize>,
    rx_mid: [bool; 2],
    /// The kernel port: descriptors (and continuations) waiting to be
    /// taken, requests and completion entries the core handed out.
    kcmd: std::collections::VecDeque<([u32; 16], [u32; 16])>,
    kreq: std::collections::VecDeque<KernelRequest>,
    kdone: std::collections::VecDeque<[u8; 32]>,
    /// Errors the kernel reports (`ERR_INFO` words), one a cycle.
    kerr: std::collections::VecDeque<u32>,
    /// Requests wait on the port until [`Board::accept_kernel_request`]
    /// (`kam_ready` low until then), and the one on the port was taken.
    kam_hold: bool,
    kam_taken: bool,
}

impl<D: Dram> std::fmt::Debug for Board<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board")
            .field("cfg", &self.cfg)
            .field("cycle", &self.cycle)
            .finish_non_exhaustive()
    }
}

impl<D: Dram> Board<D> {
    /// A board over `dram` (its BAR2 window), reset and ready for bring-up
    /// (`spec/registers.md` section 6.4).
    pub fn new(cfg: BoardConfig, dram: D) -> Result<Board<D>, ModelError> {
        let mut b = Board {
            core: Core::new()?,
            cfg,
            inp: Inputs::default(),
            out: Outputs::default(),
            mem: AxiMemory::new(cfg.mem_latency, cfg.mem_write_latency)
                .with_stalls(cfg.mem_stall_percent, 0x5EED ^ cfg.node as u64),
            dram,
            tx: Default::default(),
            rx: Default::default(),
            cycle: 0,
            tick_pending: false,
            msi: 0,
            moved: 0,
            trace: None,
            tx_mid: [false; 2],
            tx_order: std::collections::VecDeque::new(),
            rx_mid: [false; 2],
            kcmd: Default::default(),
            kreq: Default::default(),
            kdone: Default::default(),
            kerr: Default::default(),
            kam_hold: false,
            kam_taken: false,
        };
        b.inp.strap_node_id = cfg.node;
        b.inp.strap_node_count = cfg.nodes as u32;
        b.inp.strap_window_size = b.dram.len();
        b.inp.rto_ticks = cfg.rto_ticks;
        b.inp.rto_max_ticks = cfg.rto_max_ticks;
        b.inp.peer_timeout_ticks = cfg.peer_timeout_ticks;
        b.inp.ack_delay_cycles = cfg.ack_delay_cycles;
        b.inp.nack_hold_ticks = cfg.nack_hold_ticks;
        b.inp.link_up = 3;
        b.inp.link_present = 3;
        b.inp.link_rate = 40 | 40 << 8;
        let n = cfg.nodes.max(1) as u32;
        let me = cfg.node as u32;
        b.inp.link_peer = ((me + 1) % n) | (((me + n - 1) % n) << 16);
        b.inp.tx_ready = [1, 1];
        b.inp.strap_compute = u8::from(cfg.compute);
        b.inp.kam_ready = 1;
        b.inp.kc_ready = 1;
        b.inp.rst_n = 0;
        b.cycle();
        b.cycle();
        b.inp.rst_n = 1;
        // The power-on reset clears the rings (as a soft reset does).
        while b.read32(gasnet_ctrl()) & 2 != 0 {}
        Ok(b)
    }

    /// The configuration.
    pub fn config(&self) -> BoardConfig {
        self.cfg
    }

    /// Cycles clocked so far.
    pub fn cycles(&self) -> u64 {
        self.cycle
    }

    /// The memory behind the port.
    pub fn dram(&self) -> &D {
        &self.dram
    }

    /// The memory behind the port, for the host's own stores.
    pub fn dram_mut(&mut self) -> &mut D {
        &mut self.dram
    }

    /// The memory port's counters.
    pub fn mem_stats(&self) -> crate::memory::MemStats {
        self.mem.stats()
    }

    /// Sets the strapped port status (bit per port), e.g. to take a link down.
    pub fn set_link(&mut self, up: u8, present: u8) {
        self.inp.link_up = up & 3;
        self.inp.link_present = present & 3;
    }

    /// Sets the peers named by `LINKn_PEER`.
    pub fn set_link_peers(&mut self, port0: u16, port1: u16) {
        self.inp.link_peer = port0 as u32 | (port1 as u32) << 16;
    }

    /// Asks for one timebase tick on the next cycle (when ticks are not
    /// derived from the clock).
    pub fn tick(&mut self) {
        self.tick_pending = true;
    }

    /// Whether the core reports work in progress or frames awaiting their
    /// acknowledgement, or a port has frames queued to it or from it, or
    /// memory transactions are open: clocking on changes something.
    pub fn busy(&self) -> bool {
        self.out.armed == 1 || self.working()
    }

    /// As [`Board::busy`], less the frames that only wait for their
    /// acknowledgement: what changes without another tick or frame. A
    /// board that is not working but [`Board::armed`] needs cycles only as
    /// its timebase ticks (for its retransmission timers).
    pub fn working(&self) -> bool {
        self.out.busy == 1
            || self.rx.iter().any(|r| r.pending() > 0)
            || self.tx.iter().any(TxCollector::is_active)
            || !self.mem.is_idle()
            || !self.kcmd.is_empty()
            || !self.kerr.is_empty()
    }

    /// Whether frames wait for their acknowledgement (the core's `armed`).
    pub fn armed(&self) -> bool {
        self.out.armed == 1
    }

    /// Cycles so far in which something crossed the core's edges (a
    /// memory request or beat, a link beat in or out, an MSI) or a memory
    /// transaction was open. A core that is [`Board::working`] while this
    /// stands still is waiting for something from outside: a peer's frame
    /// or the tick.
    pub fn activity(&self) -> u64 {
        self.moved
    }

    /// Queues a command from the kernel port: one descriptor slot in the
    /// command queue's format (`spec/registers.md` section 7), or a chained
    /// AM's head and continuation. Its completion entry, if it writes one,
    /// comes back through [`Board::take_kernel_completion`], never the
    /// host's completion queue.
    pub fn submit_kernel(&mut self, head: &[u8; 64], cont: Option<&[u8; 64]>) {
        let words = |s: &[u8; 64]| {
            let mut w = [0u32; 16];
            for (i, x) in w.iter_mut().enumerate() {
                *x = u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]]);
            }
            w
        };
        self.kcmd
            .push_back((words(head), cont.map(words).unwrap_or([0; 16])));
    }

    /// Reports, on the kernel port's error input, a request the kernel
    /// dropped because it could neither run nor answer it: the core sets
    /// `ERR_STATUS.COMPUTE` with `ERR_INFO` = `info` (`spec/registers.md`
    /// section 4.4.1) on the next cycle (one report a cycle).
    pub fn kernel_error(&mut self, info: u32) {
        self.kerr.push_back(info);
    }

    /// Makes requests on the kernel port wait (`hold`: `kam_ready` stays
    /// low) until the kernel has taken each one and calls
    /// [`Board::accept_kernel_request`], as a kernel that judges a request
    /// before the core may go on to the next frame; or (the default) take
    /// each at once.
    pub fn hold_kernel_requests(&mut self, hold: bool) {
        self.kam_hold = hold;
        self.inp.kam_ready = u8::from(!hold);
    }

    /// Lets the request waiting on the kernel port (already given out by
    /// [`Board::take_kernel_request`]) go: the core takes the handshake on
    /// the next cycle and goes on. Nothing when none waits.
    pub fn accept_kernel_request(&mut self) {
        if self.kam_taken {
            self.inp.kam_ready = 1;
        }
    }

    /// Commands from the kernel port not yet taken by the core.
    pub fn kernel_commands_waiting(&self) -> usize {
        self.kcmd.len()
    }

    /// The next request the core handed to the kernel port.
    pub fn take_kernel_request(&mut self) -> Option<KernelRequest> {
        self.kreq.pop_front()
    }

    /// The next completion entry of a kernel command (bytes 0..25 of a
    /// completion entry; the phase byte is 0).
    pub fn take_kernel_completion(&mut self) -> Option<[u8; 32]> {
        self.kdone.pop_front()
    }

    /// MSI pulses seen so far.
    pub fn msi_count(&self) -> u64 {
        self.msi
    }

    /// Starts (or stops) recording [`Event`]s.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on.then(Vec::new);
    }

    /// The events recorded since the last call: (cycle, event).
    pub fn take_trace(&mut self) -> Vec<(u64, Event)> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn note(&mut self, e: Event) {
        if let Some(t) = self.trace.as_mut() {
            t.push((self.cycle, e));
        }
    }

    /// One clock cycle without a BAR0 access.
    pub fn cycle(&mut self) {
        self.inp.bar0_valid = 0;
        self.inp.bar0_write = 0;
        self.clock();
    }

    fn clock(&mut self) {
        self.inp.tick_us = u8::from(match self.cfg.cycles_per_tick {
            Some(n) => n > 0 && self.cycle.is_multiple_of(n as u64),
            None => std::mem::take(&mut self.tick_pending),
        });
        self.mem.drive(&self.dram, &mut self.inp);
        for p in 0..2 {
            match self.rx[p].current() {
                Some(b) => {
                    self.inp.rx_valid[p] = 1;
                    self.inp.rx_data[p] = b.data;
                    self.inp.rx_keep[p] = b.keep;
                    self.inp.rx_last[p] = u8::from(b.last);
                }
                None => {
                    self.inp.rx_valid[p] = 0;
                    self.inp.rx_last[p] = 0;
                }
            }
        }
        match self.kcmd.front() {
            Some(&(head, cont)) => {
                self.inp.kcmd_valid = 1;
                self.inp.kcmd_desc = head;
                self.inp.kcmd_cont = cont;
            }
            None => self.inp.kcmd_valid = 0,
        }
        match self.kerr.pop_front() {
            Some(info) => {
                self.inp.kerr_valid = 1;
                self.inp.kerr_info = info;
            }
            None => self.inp.kerr_valid = 0,
        }
        self.out = self.core.step(&self.inp);
        let kernel = self.kernel_port();
        let open = !self.mem.is_idle();
        self.mem.observe(&mut self.dram, &self.inp, &self.out);
        let moved = open
            || self.out.awvalid == 1
            || self.out.arvalid == 1
            || self.out.wvalid == 1
            || self.out.msi == 1
            || kernel
            || (0..2).any(|p| self.inp.rx_valid[p] == 1 || self.out.tx_valid[p] == 1);
        self.moved += u64::from(moved);
        if self.trace.is_some() {
            if self.inp.wready == 1 && self.out.wvalid == 1 {
                self.note(Event::MemWrite);
            }
            if self.inp.arready == 1 && self.out.arvalid == 1 {
                self.note(Event::MemRead(self.out.araddr));
            }
        }
        for p in 0..2 {
            if self.inp.rx_valid[p] == 1 {
                if !self.rx_mid[p] {
                    self.note(Event::RxStart(p, self.inp.rx_data[p][1]));
                }
                self.rx_mid[p] = self.inp.rx_last[p] == 0;
                self.rx[p].advance();
            }
            if self.out.tx_valid[p] == 1 && self.inp.tx_ready[p] == 1 {
                if !self.tx_mid[p] {
                    self.note(Event::TxStart(p, self.out.tx_data[p][1]));
                }
                self.tx_mid[p] = self.out.tx_last[p] == 0;
                if self.out.tx_last[p] == 1 {
                    self.note(Event::TxEnd(p));
                }
                self.tx[p].beat(
                    &self.out.tx_data[p],
                    self.out.tx_keep[p],
                    self.out.tx_last[p] == 1,
                );
                if self.out.tx_last[p] == 1 {
                    self.tx_order.push_back(p);
                }
            }
        }
        if self.out.msi == 1 {
            self.msi += 1;
            self.note(Event::Msi);
        }
        self.cycle += 1;
    }

    /// Handshakes of this cycle on the kernel port (`kc_ready` is always 1,
    /// `kam_ready` too unless requests are held; an error strobe needs
    /// none). Returns whether anything crossed it.
    fn kernel_port(&mut self) -> bool {
        let mut any = self.inp.kerr_valid == 1;
        if self.inp.kcmd_valid == 1 && self.out.kcmd_ready == 1 {
            self.kcmd.pop_front();
            any = true;
        }
        if self.out.kam_valid == 1 {
            if !self.kam_taken {
                let n = (self.out.kam_nargs as usize).min(16);
                self.kreq.push_back(KernelRequest {
                    src: self.out.kam_src,
                    handler: self.out.kam_handler,
                    args: self.out.kam_args[..n].to_vec(),
                });
                any = true;
            }
            // With kam_ready high the handshake completed at this edge;
            // else the request stays on the port, taken once.
            self.kam_taken = self.inp.kam_ready == 0;
            if !self.kam_taken {
                any = true;
            }
        } else {
            // Nothing on the port (or a reset withdrew it).
            self.kam_taken = false;
        }
        if self.kam_hold && !self.kam_taken {
            self.inp.kam_ready = 0;
        }
        if self.out.kc_valid == 1 {
            let mut e = [0u8; 32];
            for (i, w) in self.out.kc_entry.iter().enumerate() {
                e[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
            }
            // Bits 207:0 are the entry's bytes 0..25.
            e[26..].fill(0);
            self.kdone.push_back(e);
            any = true;
        }
        any
    }

    /// A 32-bit BAR0 store (one cycle).
    pub fn write32(&mut self, offset: usize, value: u32) {
        self.inp.bar0_valid = 1;
        self.inp.bar0_write = 1;
        self.inp.bar0_addr = offset as u16;
        self.inp.bar0_wdata = value;
        self.clock();
        self.inp.bar0_valid = 0;
        self.inp.bar0_write = 0;
    }

    /// A 32-bit BAR0 load (two cycles: request, data).
    pub fn read32(&mut self, offset: usize) -> u32 {
        self.inp.bar0_valid = 1;
        self.inp.bar0_write = 0;
        self.inp.bar0_addr = offset as u16;
        self.clock();
        self.inp.bar0_valid = 0;
        self.clock();
        debug_assert_eq!(self.out.bar0_rvalid, 1);
        self.out.bar0_rdata
    }

    /// Loads the 32-bit BAR0 registers at `offsets` into `out` (as many as
    /// both hold), one request a cycle: each load's data arrives in the cycle
    /// after its request, while the next request goes out, so `n` loads take
    /// `n + 1` cycles.
    pub fn read_burst(&mut self, offsets: &[usize], out: &mut [u32]) {
        let n = offsets.len().min(out.len());
        for i in 0..=n {
            if let Some(&off) = offsets.get(i).filter(|_| i < n) {
                self.inp.bar0_valid = 1;
                self.inp.bar0_write = 0;
                self.inp.bar0_addr = off as u16;
            } else {
                self.inp.bar0_valid = 0;
            }
            self.clock();
            if i > 0 {
                debug_assert_eq!(self.out.bar0_rvalid, 1);
                out[i - 1] = self.out.bar0_rdata;
            }
        }
        self.inp.bar0_valid = 0;
    }

    /// A 64-bit register pair as the host writes it (low word first).
    pub fn write64(&mut self, offset: usize, value: u64) {
        self.write32(offset, value as u32);
        self.write32(offset + 4, (value >> 32) as u32);
    }

    /// A 64-bit counter, read HI, LO, HI as `spec/registers.md` section 1 says.
    pub fn read64(&mut self, offset: usize) -> u64 {
        loop {
            let hi = self.read32(offset + 4);
            let lo = self.read32(offset);
            if self.read32(offset + 4) == hi {
                return (hi as u64) << 32 | lo as u64;
            }
        }
    }

    /// Frames queued to arrive on `port` (the one arriving included).
    pub fn rx_pending(&self, port: usize) -> usize {
        self.rx[port & 1].pending()
    }

    /// Queues a frame to arrive on `port`.
    pub fn push_frame(&mut self, port: usize, frame: Vec<u8>) {
        self.rx[port & 1].push(frame);
    }

    /// The next frame the core sent on `port`.
    pub fn pop_frame(&mut self, port: usize) -> Option<Vec<u8>> {
        let f = self.tx[port & 1].pop()?;
        if let Some(i) = self.tx_order.iter().position(|&p| p == port & 1) {
            self.tx_order.remove(i);
        }
        Some(f)
    }

    /// The next frame the core sent on either port, in the order the frames
    /// ended, with its port. A sender's sequence numbers follow this order
    /// even when it spreads frames to one peer over both ports, so a link
    /// that carries both ports' frames on one path keeps them in sequence.
    pub fn pop_sent(&mut self) -> Option<(usize, Vec<u8>)> {
        let port = self.tx_order.pop_front()?;
        let f = self.tx[port].pop()?;
        Some((port, f))
    }

    /// Withholds (or gives) `tready` on a port.
    pub fn set_tx_ready(&mut self, port: usize, ready: bool) {
        self.inp.tx_ready[port & 1] = u8::from(ready);
    }
}

const fn gasnet_ctrl() -> usize {
    0x100
}
