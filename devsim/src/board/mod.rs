//! The board: its registers, the board loop and its three queues.
//!
//! # The board loop ([`BoardModel::step`])
//!
//! Each step: watch `CTRL` (soft reset; enable with a configuration check;
//! disable), advance `UPTIME`, then, while enabled: receive link packets;
//! drain the engine (outgoing packets to the link, completions to the
//! completion queue); read new descriptors up to `DOORBELL`; run the compute
//! core a little; write pending completion and receive entries; refresh the
//! counters and `STATUS`. [`BoardModel::run`] repeats it, stepping while
//! there is work, then yielding, then dozing when idle ([`crate::core`]):
//! blocked until a link datagram, a host's doorbell (`spec/registers.md`
//! §13) or 500 µs, so an idle board costs almost no CPU, `UPTIME` still
//! advances every millisecond and no waiting command waits out a sleep.
//!
//! # What runs where
//!
//! - Put, Get and Atomic descriptors become engine commands; the engine's
//!   system handlers serve remote requests against the segment. Atomics
//!   use `AtomicU32`/`AtomicU64` on the shared mapping, so host loads of the
//!   window observe them.
//! - AM descriptors are sent by the board itself, outside the engine (an AM
//!   completes locally, when its payload has been read, `spec/registers.md`
//!   §7.6). Before an AM leaves, every earlier engine command has been
//!   issued (a Nop marker passes through the engine), so packets to a peer
//!   keep queue order. Incoming AMs for host handlers become receive
//!   entries (Medium payloads in the slot's bounce buffer, Long payloads in
//!   the segment); when the receive ring is full they wait on the board, in
//!   order (`STATUS.RQ_STALL`). Handlers 224..=255 go to the
//!   [`crate::compute`] core (`packets.rs`).
//! - `Fence` and `FENCE_BEFORE` wait until every earlier command has
//!   completed. A malformed descriptor gets an error completion and the
//!   queue runs on. A full completion ring stalls descriptor processing
//!   (`STATUS.CQ_STALL`); nothing is overwritten (`commands.rs`).
//!
//! # Deviations from a hardware board
//!
//! `NODE_ID` and `NODE_COUNT` are strapped by the launcher: their reset
//! value is the board's position in the job. `DOORBELL` reads back the last
//! value written (a file cannot be write-only). A soft reset zeroes the
//! DDR (hole punching, so it costs nothing).

mod commands;
mod packets;

use crate::bar::Bar;
use crate::compute::{Action, ComputeCore, ComputeCtx};
use crate::core::Doze;
use crate::link::Link;
use crate::window::Window;
use gasnet_core::am::check_shape;
use gasnet_core::cmd::{
    self, AmBody, COMPLETION_BYTES, Completion, Descriptor, Local, RX_ENTRY_BYTES, RxEntry,
    SLOT_BYTES, Status, caps, ctrl, err, regs, status,
};
use gasnet_core::engine::layout::engine_owned;
use gasnet_core::engine::{self, Command, Config, Engine, GetInto, Memory, PutSource};
use gasnet_core::handlers::FIRST_COMPUTE;
use gasnet_core::wire::{Packet, PacketType};
use gasnet_core::{Category, Direction, NodeId};
use std::collections::{HashMap, VecDeque};
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `CAPS` of a devsim board: a compute core and two ports, no host DMA
/// (without its compute core, [`DEVSIM_CAPS`] less `COMPUTE`).
pub const DEVSIM_CAPS: u32 = caps::COMPUTE | (cmd::LINK_PORTS as u32) << caps::PORTS_SHIFT;
/// `BUILD_ID` of devsim.
pub const DEVSIM_BUILD_ID: u32 = 0xD5_0001;
/// Default DDR window: 1 GiB (a sparse file: only touched pages cost memory).
pub const DEFAULT_WINDOW: u64 = 1 << 30;
/// The engine's in-flight request window (bounds what the links buffer).
const MAX_IN_FLIGHT: usize = 16;
/// Link packets handled per board step.
const RX_PER_STEP: usize = 64;
/// Descriptors read per board step.
const SQ_PER_STEP: usize = 64;

/// An injected fault, for testing that the host's health check notices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fault {
    /// A healthy board.
    #[default]
    None,
    /// Get data lands with its first byte flipped.
    GetData,
    /// Inline put data is written with its first byte flipped.
    InlinePut,
    /// Put data read from the segment is written with its first byte flipped.
    SegmentPut,
    /// Atomics return a wrong old value.
    Atomic,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Fault, String> {
        Ok(match s {
            "" | "none" => Fault::None,
            "get" => Fault::GetData,
            "inline-put" => Fault::InlinePut,
            "segment-put" => Fault::SegmentPut,
            "atomic" => Fault::Atomic,
            o => {
                return Err(format!(
                    "unknown fault {o:?} (get, inline-put, segment-put, atomic)"
                ));
            }
        })
    }
}

/// What a completion entry needs about a command in the engine.
#[derive(Clone, Copy, Debug)]
struct Pending {
    tag: u32,
    opcode: u8,
    target: NodeId,
    sq_index: u16,
    completion: bool,
    bytes: u32,
    /// A Get's local segment offset.
    local: u64,
    /// A compute-core put (its id), not a host command.
    compute: Option<u64>,
}

/// The configuration registers, as checked at enable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cfg {
    node: u32,
    nodes: u32,
    seg_base: u64,
    seg_size: u64,
    rx_bounce: u64,
}

/// Engine tags at and above this are not host commands.
const MARKER_TAG: u64 = 1 << 62;

/// The board model: BARs, engine, links, compute core.
pub struct BoardModel {
    dir: PathBuf,
    doze: Doze,
    bar0: Bar,
    bar2: Bar,
    window: u64,
    strap_node: u16,
    strap_nodes: u16,
    link: Box<dyn Link>,
    /// The compute core on handlers 224..=255 (`CAPS.COMPUTE`), if any.
    compute: Option<Box<dyn ComputeCore>>,
    engine: Option<Engine<Window>>,
    cfg: Option<Cfg>,
    fault: Fault,
    sq_head: u32,
    /// A descriptor read from the ring but not started yet (waiting on a
    /// fence or on earlier commands being issued).
    current: Option<(Descriptor, u16)>,
    marker: Option<u64>,
    marker_passed: bool,
    cq_tail: u32,
    cq_phase: bool,
    cq_backlog: VecDeque<Completion>,
    rq_tail: u32,
    rq_phase: bool,
    rq_backlog: VecDeque<Packet>,
    held: VecDeque<Packet>,
    pending: HashMap<u64, Pending>,
    next_tag: u64,
    actions: Vec<Action>,
    /// `ERR_STATUS` as the board last wrote it: a differing value is a
    /// host write of 1s to clear (W1C emulated on a file).
    err_shadow: u32,
    /// `ERR_STATUS.PEER_TIMEOUT` was raised for the link's failed peer.
    peer_failure_raised: bool,
    /// When the board last left reset (`UPTIME` counts from here).
    reset_at: Instant,
    cnt_commands: u64,
    cnt_errors: u64,
    cnt_stalls: u64,
    cnt_am_tx: u64,
    cnt_am_bytes_tx: u64,
    cnt_am_rx: u64,
    cnt_am_bytes_rx: u64,
}

impl std::fmt::Debug for BoardModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoardModel")
            .field("dir", &self.dir)
            .field("node", &self.strap_node)
            .field("nodes", &self.strap_nodes)
            .field("enabled", &self.engine.is_some())
            .finish()
    }
}

/// Zeroes a BAR file (a soft reset's DDR clear): punches a hole over all of
/// it, or writes zeros where the file system cannot.
pub(crate) fn punch(bar: &Bar, path: &Path) {
    if let Ok(f) = OpenOptions::new().write(true).open(path) {
        // SAFETY: fallocate on an open descriptor; punching a hole zeroes
        // the range without changing the file size. The mapping stays valid.
        let rc = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                bar.len() as libc::off_t,
            )
        };
        if rc == 0 {
            return;
        }
    }
    // SAFETY: the whole mapping is ours to write.
    unsafe { std::ptr::write_bytes(bar.ptr(), 0, bar.len()) };
}

impl BoardModel {
    /// Creates the board's files in `dir` (made if missing): `bar0`, a
    /// sparse `bar2` of `window` bytes (rounded up to a power of two), with
    /// the registers at their reset values, and the doze word and wake
    /// socket (`spec/registers.md` §13). With a `compute` core, requests to
    /// handlers 224..=255 run on it (`CAPS.COMPUTE`); without one they reach
    /// the host like any other handler's.
    pub fn create(
        dir: &Path,
        node: u16,
        nodes: u16,
        window: u64,
        link: Box<dyn Link>,
        compute: Option<Box<dyn ComputeCore>>,
        fault: Fault,
    ) -> std::io::Result<BoardModel> {
        std::fs::create_dir_all(dir)?;
        let window = window.max(1 << 20).next_power_of_two();
        let bar0 = Bar::create(&dir.join(cmd::BOARD_FILE_BAR0), cmd::BAR0_SIZE as u64)?;
        let bar2 = Bar::create(&dir.join(cmd::BOARD_FILE_BAR2), window)?;
        let doze = Doze::create(dir)?;
        let mut b = BoardModel {
            dir: dir.to_path_buf(),
            doze,
            bar0,
            bar2,
            window,
            strap_node: node,
            strap_nodes: nodes.max(1),
            link,
            compute,
            engine: None,
            cfg: None,
            fault,
            sq_head: 0,
            current: None,
            marker: None,
            marker_passed: false,
            cq_tail: 0,
            cq_phase: true,
            cq_backlog: VecDeque::new(),
            rq_tail: 0,
            rq_phase: true,
            rq_backlog: VecDeque::new(),
            held: VecDeque::new(),
            pending: HashMap::new(),
            next_tag: 1,
            actions: Vec::new(),
            err_shadow: 0,
            peer_failure_raised: false,
            reset_at: Instant::now(),
            cnt_commands: 0,
            cnt_errors: 0,
            cnt_stalls: 0,
            cnt_am_tx: 0,
            cnt_am_bytes_tx: 0,
            cnt_am_rx: 0,
            cnt_am_bytes_rx: 0,
        };
        b.reset();
        Ok(b)
    }

    /// The board's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Mutable access to the link (to install the peer table).
    pub fn link_mut(&mut self) -> &mut dyn Link {
        &mut *self.link
    }

    /// Whether the host has enabled the board.
    pub fn enabled(&self) -> bool {
        self.engine.is_some()
    }

    fn r(&self, off: usize) -> u32 {
        self.bar0.read32(off)
    }

    fn w(&self, off: usize, v: u32) {
        self.bar0.write32(off, v)
    }

    fn set_err(&mut self, bit: u32, info: u32) {
        self.err_shadow |= bit;
        self.w(regs::ERR_STATUS, self.err_shadow);
        self.w(regs::ERR_INFO, info);
        self.bar0
            .reg(regs::IRQ_STATUS)
            .fetch_or(cmd::irq::ERROR, Ordering::AcqRel);
    }

    /// Soft reset: registers to reset values, rings zeroed, DDR zeroed,
    /// in-flight commands dropped.
    fn reset(&mut self) {
        self.engine = None;
        self.cfg = None;
        self.current = None;
        self.marker = None;
        self.marker_passed = false;
        self.pending.clear();
        self.cq_backlog.clear();
        self.rq_backlog.clear();
        self.sq_head = 0;
        self.cq_tail = 0;
        self.cq_phase = true;
        self.rq_tail = 0;
        self.rq_phase = true;
        self.err_shadow = 0;
        self.peer_failure_raised = false;
        self.reset_at = Instant::now();
        self.cnt_commands = 0;
        self.cnt_errors = 0;
        self.cnt_stalls = 0;
        self.cnt_am_tx = 0;
        self.cnt_am_bytes_tx = 0;
        self.cnt_am_rx = 0;
        self.cnt_am_bytes_rx = 0;
        // CTRL keeps reading RESET until the very end (the host polls it).
        self.w(regs::STATUS, status::RESET_BUSY);
        let ctrl_at = regs::CTRL;
        // SAFETY: BAR0 is ours; zero all of it but CTRL, then write the
        // reset values.
        unsafe {
            std::ptr::write_bytes(self.bar0.ptr(), 0, ctrl_at);
            let after = ctrl_at + 4;
            std::ptr::write_bytes(self.bar0.ptr().add(after), 0, cmd::BAR0_SIZE - after);
        }
        punch(&self.bar2, &self.dir.join(cmd::BOARD_FILE_BAR2));
        self.w(regs::MAGIC, cmd::MAGIC);
        self.w(regs::VERSION, cmd::VERSION);
        let caps = if self.compute.is_some() {
            DEVSIM_CAPS
        } else {
            DEVSIM_CAPS & !caps::COMPUTE
        };
        self.w(regs::CAPS, caps);
        self.w(regs::BUILD_ID, DEVSIM_BUILD_ID);
        self.w(regs::NODE_ID, self.strap_node as u32);
        self.w(regs::NODE_COUNT, self.strap_nodes as u32);
        self.bar0.write64(regs::WINDOW_SIZE_LO, self.window);
        self.w(regs::SQ_BASE, regs::SQ_RING as u32);
        self.w(regs::SQ_SIZE, cmd::SQ_ENTRIES);
        self.w(regs::CQ_BASE, regs::CQ_RING as u32);
        self.w(regs::CQ_SIZE, cmd::CQ_ENTRIES);
        self.w(regs::RQ_BASE, regs::RQ_RING as u32);
        self.w(regs::RQ_SIZE, cmd::RQ_ENTRIES);
        self.w(regs::IRQ_MASK, 0x7);
        self.w(regs::STATUS, status::IDLE);
        let n = self.strap_nodes as u32;
        let me = self.strap_node as u32;
        for (port, peer) in [(0, (me + 1) % n), (1, (me + n - 1) % n)] {
            self.w(
                regs::link(port, regs::LINK_STATUS),
                cmd::link::UP | cmd::link::PRESENT | 40 << cmd::link::RATE_SHIFT,
            );
            self.w(regs::link(port, regs::LINK_PEER), peer);
        }
    }

    fn read_cfg(&self) -> Cfg {
        Cfg {
            node: self.r(regs::NODE_ID),
            nodes: self.r(regs::NODE_COUNT),
            seg_base: self.bar0.read64(regs::SEG_BASE_LO),
            seg_size: self.bar0.read64(regs::SEG_SIZE_LO),
            rx_bounce: self.bar0.read64(regs::RX_BOUNCE_LO),
        }
    }

    /// The first invalid configuration register, if any (§4.2).
    fn check_cfg(&self, c: &Cfg) -> Option<usize> {
        const PAGE: u64 = 4096;
        let bounce = cmd::RQ_ENTRIES as u64 * cmd::RX_BOUNCE_BYTES;
        if c.nodes == 0 || c.nodes > u16::MAX as u32 {
            return Some(regs::NODE_COUNT);
        }
        if c.node >= c.nodes {
            return Some(regs::NODE_ID);
        }
        if !c.seg_base.is_multiple_of(PAGE) {
            return Some(regs::SEG_BASE_LO);
        }
        if c.seg_size == 0
            || !c.seg_size.is_multiple_of(PAGE)
            || c.seg_base
                .checked_add(c.seg_size)
                .is_none_or(|e| e > self.window)
        {
            return Some(regs::SEG_SIZE_LO);
        }
        let overlaps = c.rx_bounce < c.seg_base + c.seg_size && c.seg_base < c.rx_bounce + bounce;
        if !c.rx_bounce.is_multiple_of(PAGE)
            || c.rx_bounce
                .checked_add(bounce)
                .is_none_or(|e| e > self.window)
            || overlaps
        {
            return Some(regs::RX_BOUNCE_LO);
        }
        None
    }

    fn enable(&mut self) {
        let c = self.read_cfg();
        if let Some(reg) = self.check_cfg(&c) {
            self.bar0
                .reg(regs::CTRL)
                .fetch_and(!ctrl::ENABLE, Ordering::AcqRel);
            self.set_err(err::CONFIG_INVALID, reg as u32);
            return;
        }
        // SAFETY: the segment range lies in the BAR2 mapping (checked by
        // check_cfg against WINDOW_SIZE, which the mapping covers); the
        // mapping lives as long as the board, which owns the engine.
        let win = unsafe { Window::new(self.bar2.ptr().add(c.seg_base as usize), c.seg_size) };
        let config = Config {
            max_in_flight: MAX_IN_FLIGHT,
            queue_depth: 1 << 16,
        };
        self.engine = Some(Engine::with_config(
            c.node as NodeId,
            c.nodes as usize,
            win,
            config,
        ));
        self.cfg = Some(c);
        self.w(regs::STATUS, status::READY | status::IDLE);
        while let Some(p) = self.held.pop_front() {
            self.on_packet(p);
        }
    }

    fn disable(&mut self) {
        let pend: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        for p in pend.into_iter().filter(|p| p.compute.is_none()) {
            self.complete(p, Status::Aborted, 0, 0);
        }
        if let Some((d, idx)) = self.current.take() {
            self.reject(&d, idx, Status::Aborted, 0);
        }
        self.engine = None;
        self.cfg = None;
        self.w(regs::STATUS, status::IDLE);
    }

    fn watch_ctrl(&mut self) -> bool {
        let e = self.r(regs::ERR_STATUS);
        if e != self.err_shadow {
            self.err_shadow &= !e;
            self.w(regs::ERR_STATUS, self.err_shadow);
        }
        let c = self.r(regs::CTRL);
        if c & ctrl::RESET != 0 {
            self.reset();
            self.w(regs::CTRL, 0);
            return true;
        }
        let on = c & ctrl::ENABLE != 0;
        match (on, self.engine.is_some()) {
            (true, false) => {
                self.enable();
                true
            }
            (false, true) => {
                self.disable();
                true
            }
            (true, true) => {
                if let Some(cfg) = self.cfg {
                    let now = self.read_cfg();
                    if now != cfg {
                        self.w(regs::NODE_ID, cfg.node);
                        self.w(regs::NODE_COUNT, cfg.nodes);
                        self.bar0.write64(regs::SEG_BASE_LO, cfg.seg_base);
                        self.bar0.write64(regs::SEG_SIZE_LO, cfg.seg_size);
                        self.bar0.write64(regs::RX_BOUNCE_LO, cfg.rx_bounce);
                        self.set_err(err::CONFIG_LOCKED, regs::SEG_BASE_LO as u32);
                    }
                }
                false
            }
            (false, false) => false,
        }
    }

    /// One iteration of the board loop; returns whether anything happened.
    pub fn step(&mut self) -> bool {
        let mut progress = self.watch_ctrl();
        // The heartbeat a host watches (§4.7): advanced on every step, and
        // `run` steps at least every half millisecond.
        let up = self.reset_at.elapsed().as_micros() as u64;
        self.bar0.write64(regs::UPTIME_LO, up);
        // The sockets are read once per step; what that read took is
        // served now, the rest at the next step.
        // A packet is taken from the link only when it is served here: one
        // taken and not served would be lost (the link acknowledged it).
        for i in 0..RX_PER_STEP {
            let next = if i == 0 {
                self.link.recv()
            } else {
                self.link.recv_taken()
            };
            let Some(p) = next else {
                break;
            };
            progress = true;
            self.on_packet(p);
        }
        if !self.peer_failure_raised
            && let Some((node, why)) = self.link.failure()
        {
            // Sticky until a reset: the host's liveness check reads it.
            self.peer_failure_raised = true;
            // A board that heard from none of its peers names itself
            // (gasnet_core::reliable, "Which side is cut off").
            crate::report(&if node as u32 == self.strap_node as u32 {
                format!("devsim board {node}: {why}")
            } else {
                format!(
                    "devsim board {}: peer board {node} stopped answering: {why}",
                    self.strap_node
                )
            });
            self.set_err(err::PEER_TIMEOUT, node as u32);
            progress = true;
        }
        if self.engine.is_none() {
            return progress;
        }
        progress |= self.drain_engine();
        progress |= self.flush_rq();
        progress |= self.read_sq();
        progress |= self.run_compute();
        progress |= self.drain_engine();
        progress |= self.flush_cq();
        self.publish();
        progress
    }

    /// Runs the board until `stop` is set: spinning while busy, then
    /// yielding, then dozing when idle ([`crate::core::run`]).
    pub fn run(&mut self, stop: &AtomicBool) {
        self.run_pausable(stop, &AtomicBool::new(false))
    }

    /// As [`BoardModel::run`], but while `pause` is set the board does
    /// nothing at all, as a board whose clock stopped: its links and queues
    /// wait, unread (for tests of slow and silent targets).
    pub fn run_pausable(&mut self, stop: &AtomicBool, pause: &AtomicBool) {
        crate::core::run(self, stop, pause)
    }

    /// As [`BoardModel::run_pausable`], dozing at most `longest` at a time
    /// ([`crate::core::run_dozing`]).
    pub fn run_dozing(&mut self, stop: &AtomicBool, pause: &AtomicBool, longest: Duration) {
        crate::core::run_dozing(self, stop, pause, longest)
    }

    fn seg(&self) -> Option<Window> {
        self.engine.as_ref().map(|e| *e.memory())
    }

    fn publish(&self) {
        let Some(e) = self.engine.as_ref() else {
            return;
        };
        let k = e.counters();
        self.bar0.write64(regs::CNT_COMMANDS, self.cnt_commands);
        self.bar0
            .write64(regs::CNT_PACKETS_TX, k.packets_sent + self.cnt_am_tx);
        self.bar0
            .write64(regs::CNT_PACKETS_RX, k.packets_received + self.cnt_am_rx);
        self.bar0
            .write64(regs::CNT_BYTES_TX, k.bytes_sent + self.cnt_am_bytes_tx);
        self.bar0
            .write64(regs::CNT_BYTES_RX, k.bytes_received + self.cnt_am_bytes_rx);
        self.bar0.write64(regs::CNT_STALLS, self.cnt_stalls);
        self.bar0.write64(regs::CNT_ERRORS, self.cnt_errors);
        for port in 0..cmd::LINK_PORTS {
            self.w(
                regs::link(port, regs::LINK_CRC_ERRORS),
                self.link.crc_errors(port),
            );
        }
        let mut st = status::READY;
        if self.sq_head == self.r(regs::SQ_TAIL) && self.quiet() && self.current.is_none() {
            st |= status::IDLE;
        }
        if !self.cq_backlog.is_empty() {
            st |= status::CQ_STALL;
        }
        if !self.rq_backlog.is_empty() {
            st |= status::RQ_STALL;
        }
        if self.r(regs::ERR_STATUS) != 0 {
            st |= status::ERROR;
        }
        self.w(regs::STATUS, st);
    }
}

impl crate::core::BoardCore for BoardModel {
    fn step(&mut self) -> bool {
        BoardModel::step(self)
    }

    fn doze(&self) -> Doze {
        self.doze.clone()
    }

    fn link_fds(&self) -> Vec<std::os::fd::RawFd> {
        self.link.fds()
    }
}

/// The completion status of an engine outcome: remote failures become
/// `RemoteError` with the target's reason in `detail` (§8.1).
fn map_status(s: engine::Status) -> (Status, u32) {
    match s {
        engine::Status::Ok => (Status::Ok, 0),
        engine::Status::OutOfRange => (Status::RemoteError, Status::OutOfRange.code() as u32),
        engine::Status::Misaligned => (Status::RemoteError, Status::Misaligned.code() as u32),
        engine::Status::NoHandler => (Status::RemoteError, Status::BadHandler.code() as u32),
        engine::Status::Malformed => (Status::RemoteError, Status::Unsupported.code() as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gasnet_core::types::{Category, Direction};
    use gasnet_core::wire::PacketType;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    /// A link holding packets that have "arrived", counting those taken.
    struct QueueLink {
        queue: VecDeque<Packet>,
        taken: Arc<Mutex<usize>>,
    }

    impl QueueLink {
        fn take(&mut self) -> Option<Packet> {
            let p = self.queue.pop_front()?;
            *self.taken.lock().unwrap() += 1;
            Some(p)
        }
    }

    impl Link for QueueLink {
        fn send(&mut self, _: &Packet) -> std::io::Result<()> {
            Ok(())
        }
        fn recv(&mut self) -> Option<Packet> {
            self.take()
        }
        fn recv_taken(&mut self) -> Option<Packet> {
            self.take()
        }
        fn bad_packets(&self) -> u64 {
            0
        }
        fn crc_errors(&self, _: usize) -> u32 {
            0
        }
        fn fds(&self) -> Vec<std::os::fd::RawFd> {
            Vec::new()
        }
    }

    fn short_request(seq: u32) -> Packet {
        Packet {
            ptype: PacketType::Am {
                category: Category::Short,
                direction: Direction::Request,
            },
            src: 1,
            dst: 0,
            flags: 0,
            handler: 200,
            args: vec![seq],
            offset: 0,
            seq,
            ack: 0,
            frag_offset: 0,
            total_len: 0,
            payload: Vec::new(),
        }
    }

    /// A step takes from the link only the packets it serves: a link
    /// acknowledges what it hands over, so a packet taken and not served
    /// is lost for good (a 2-PE job hung on one, waiting for an AM reply).
    #[test]
    fn a_step_serves_every_packet_it_takes() {
        let dir = std::env::temp_dir().join(format!("devsim-step-{}", std::process::id()));
        let taken = Arc::new(Mutex::new(0));
        let n = RX_PER_STEP * 2 + 5;
        let link = QueueLink {
            queue: (0..n as u32).map(short_request).collect(),
            taken: taken.clone(),
        };
        let mut b = BoardModel::create(&dir, 0, 2, 1 << 20, Box::new(link), None, Fault::None)
            .expect("board files");
        // Not enabled: every packet served is held for the engine.
        let mut steps = 0;
        while b.held.len() < n && steps < 10 {
            b.step();
            steps += 1;
            assert_eq!(b.held.len(), *taken.lock().unwrap(), "after step {steps}");
        }
        let seqs: Vec<u32> = b.held.iter().map(|p| p.seq).collect();
        assert_eq!(seqs, (0..n as u32).collect::<Vec<_>>());
        assert_eq!(steps, 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
