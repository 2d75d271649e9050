//! devsim: a software fshmem board whose BARs are files.
//!
//! One devsim process models one board (one node of the job). Its BARs are
//! two files in the board's directory, `bar0` (64 KiB: registers and rings,
//! `spec/registers.md` §3–4) and `bar2` (the DDR window, sparse, sized by
//! `WINDOW_SIZE`); a host maps them exactly as it maps a PCI device's
//! `resource0` / `resource2_wc`, so the `fpga` conduit cannot tell them
//! apart. Its core is the reference engine of `gasnet-core`
//! ([`gasnet_core::engine::Engine`]) over a [`Window`] on the segment, and
//! its two link ports carry `spec/wire.md` packets to the other boards
//! ([`link`]).
//!
//! # The board loop ([`BoardModel::step`])
//!
//! Each step: watch `CTRL` (soft reset; enable with a configuration check;
//! disable), then, while enabled: receive link packets; drain the engine
//! (outgoing packets to the link, completions to the completion queue);
//! read new descriptors up to `DOORBELL`; run the compute core a little;
//! write pending completion and receive entries; refresh the counters and
//! `STATUS`. [`BoardModel::run`] repeats it, spinning while there is work,
//! then yielding, then sleeping (20 µs, growing to 500 µs) when idle, so an
//! idle board costs almost no CPU.
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
//!   [`compute`] core.
//! - `Fence` and `FENCE_BEFORE` wait until every earlier command has
//!   completed. A malformed descriptor gets an error completion and the
//!   queue runs on. A full completion ring stalls descriptor processing
//!   (`STATUS.CQ_STALL`); nothing is overwritten.
//!
//! # Deviations from a hardware board
//!
//! `NODE_ID` and `NODE_COUNT` are strapped by the launcher: their reset
//! value is the board's position in the job. `DOORBELL` reads back the last
//! value written (a file cannot be write-only). A soft reset zeroes the
//! DDR (hole punching, so it costs nothing).

pub mod compute;
pub mod link;

use super::bar::Bar;
use compute::{Action, ComputeCore, ComputeCtx};
use gasnet_core::am::check_shape;
use gasnet_core::cmd::{
    self, AmBody, COMPLETION_BYTES, Completion, Descriptor, Local, RX_ENTRY_BYTES, RxEntry,
    SLOT_BYTES, Status, caps, ctrl, err, regs, status,
};
use gasnet_core::engine::layout::engine_owned;
use gasnet_core::engine::{self, Command, Config, Engine, GetInto, MemError, Memory, PutSource};
use gasnet_core::handlers::FIRST_COMPUTE;
use gasnet_core::wire::{Packet, PacketType};
use gasnet_core::{AmoOp, AmoWidth, Category, Direction, NodeId};
use link::Link;
use std::collections::{HashMap, VecDeque};
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// `CAPS` of a devsim board: a compute core and two ports, no host DMA.
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

/// The segment as the engine sees it: a range of the BAR2 mapping.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    base: *mut u8,
    len: u64,
}

// SAFETY: the window points into a shared file mapping that outlives every
// Window (the board keeps the mapping); accesses are bounds-checked copies
// or atomics, and the memory is shared with other processes anyway.
unsafe impl Send for Window {}

impl Window {
    /// A window of `len` bytes at `base`.
    ///
    /// # Safety
    /// `base..base+len` must stay mapped and writable while the window (or
    /// a copy) is used.
    pub unsafe fn new(base: *mut u8, len: u64) -> Window {
        Window { base, len }
    }

    /// Writes through a shared reference (the memory is shared anyway).
    pub fn write_shared(&self, offset: u64, data: &[u8]) -> Result<(), MemError> {
        engine::check_range(self.len, offset, data.len() as u64)?;
        // SAFETY: in range (checked); the mapping is live (Window::new).
        unsafe {
            std::ptr::copy(data.as_ptr(), self.base.add(offset as usize), data.len());
        }
        Ok(())
    }
}

impl Memory for Window {
    fn len(&self) -> u64 {
        self.len
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), MemError> {
        engine::check_range(self.len, offset, buf.len() as u64)?;
        // SAFETY: in range (checked); the mapping is live (Window::new).
        unsafe {
            std::ptr::copy(self.base.add(offset as usize), buf.as_mut_ptr(), buf.len());
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), MemError> {
        self.write_shared(offset, data)
    }

    fn atomic(
        &mut self,
        op: AmoOp,
        width: AmoWidth,
        offset: u64,
        operand: u64,
        compare: u64,
    ) -> Result<u64, MemError> {
        let n = width.bytes();
        if offset % n as u64 != 0 {
            return Err(MemError::Misaligned { offset, align: n });
        }
        engine::check_range(self.len, offset, n as u64)?;
        // SAFETY: aligned and in range (checked; the window base is page
        // aligned); the word is only ever accessed atomically by the board
        // and by host atomics.
        let p = unsafe { self.base.add(offset as usize) };
        let rmw = |old: u64| op.apply(width, old, operand, compare);
        Ok(match width {
            AmoWidth::W32 => {
                // SAFETY: see above.
                let a = unsafe { AtomicU32::from_ptr(p.cast()) };
                let r = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |o| {
                    Some(rmw(o as u64) as u32)
                });
                r.unwrap_or_else(|o| o) as u64
            }
            AmoWidth::W64 => {
                // SAFETY: see above.
                let a = unsafe { AtomicU64::from_ptr(p.cast()) };
                let r = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |o| Some(rmw(o)));
                r.unwrap_or_else(|o| o)
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
    bar0: Bar,
    bar2: Bar,
    window: u64,
    strap_node: u16,
    strap_nodes: u16,
    link: Box<dyn Link>,
    compute: Box<dyn ComputeCore>,
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

fn create_file(path: &Path, len: u64) -> std::io::Result<()> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    f.set_len(len)
}

fn punch(bar: &Bar, path: &Path) {
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
    /// Creates the board's files in `dir` (made if missing): `bar0` and a
    /// sparse `bar2` of `window` bytes (rounded up to a power of two), with
    /// the registers at their reset values.
    pub fn create(
        dir: &Path,
        node: u16,
        nodes: u16,
        window: u64,
        link: Box<dyn Link>,
        compute: Box<dyn ComputeCore>,
        fault: Fault,
    ) -> std::io::Result<BoardModel> {
        std::fs::create_dir_all(dir)?;
        let window = window.max(1 << 20).next_power_of_two();
        let p0 = dir.join(super::bar::DEVSIM_BAR0);
        let p2 = dir.join(super::bar::DEVSIM_BAR2);
        create_file(&p0, cmd::BAR0_SIZE as u64)?;
        create_file(&p2, window)?;
        let io = |e: crate::ConduitError| std::io::Error::other(e.to_string());
        let bar0 = Bar::map(&p0).map_err(io)?;
        let bar2 = Bar::map(&p2).map_err(io)?;
        let mut b = BoardModel {
            dir: dir.to_path_buf(),
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
        punch(&self.bar2, &self.dir.join(super::bar::DEVSIM_BAR2));
        self.w(regs::MAGIC, cmd::MAGIC);
        self.w(regs::VERSION, cmd::VERSION);
        self.w(regs::CAPS, DEVSIM_CAPS);
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
        if c.seg_base % PAGE != 0 {
            return Some(regs::SEG_BASE_LO);
        }
        if c.seg_size == 0
            || c.seg_size % PAGE != 0
            || c.seg_base
                .checked_add(c.seg_size)
                .is_none_or(|e| e > self.window)
        {
            return Some(regs::SEG_SIZE_LO);
        }
        let overlaps = c.rx_bounce < c.seg_base + c.seg_size && c.seg_base < c.rx_bounce + bounce;
        if c.rx_bounce % PAGE != 0
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
        for _ in 0..RX_PER_STEP {
            match self.link.recv() {
                Some(p) => {
                    progress = true;
                    self.on_packet(p);
                }
                None => break,
            }
        }
        if !self.peer_failure_raised {
            if let Some((node, why)) = self.link.failure() {
                // Sticky until a reset: the host's liveness check reads it.
                self.peer_failure_raised = true;
                crate::report!(
                    "devsim board {}: peer board {node} stopped answering: {why}",
                    self.strap_node
                );
                self.set_err(err::PEER_TIMEOUT, node as u32);
                progress = true;
            }
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
    /// yielding, then sleeping when idle.
    pub fn run(&mut self, stop: &AtomicBool) {
        self.run_pausable(stop, &AtomicBool::new(false))
    }

    /// As [`BoardModel::run`], but while `pause` is set the board does
    /// nothing at all, as a board whose clock stopped: its links and queues
    /// wait, unread (for tests of slow and silent targets).
    pub fn run_pausable(&mut self, stop: &AtomicBool, pause: &AtomicBool) {
        let mut idle = 0u32;
        while !stop.load(Ordering::Relaxed) {
            if !pause.load(Ordering::Acquire) && self.step() {
                idle = 0;
                continue;
            }
            idle = idle.saturating_add(1);
            if idle < 64 {
                std::hint::spin_loop();
            } else if idle < 256 {
                std::thread::yield_now();
            } else {
                let us = ((idle - 256) / 16).clamp(20, 500);
                std::thread::sleep(Duration::from_micros(us as u64));
            }
        }
    }

    fn seg(&self) -> Option<Window> {
        self.engine.as_ref().map(|e| *e.memory())
    }

    // ---- links -------------------------------------------------------

    fn on_packet(&mut self, p: Packet) {
        if self.engine.is_none() {
            self.held.push_back(p);
            return;
        }
        let PacketType::Am {
            category,
            direction,
        } = p.ptype
        else {
            return;
        };
        if engine_owned(p.handler) {
            if let Some(e) = self.engine.as_mut() {
                e.receive(p);
            }
            return;
        }
        self.cnt_am_rx += 1;
        self.cnt_am_bytes_rx += p.payload.len() as u64;
        let whole = p.frag_offset == 0 && p.total_len as usize == p.payload.len();
        if !whole || check_shape(category, p.args.len(), p.payload.len()).is_err() {
            self.set_err(err::BAD_PACKET, 0);
            return;
        }
        if p.handler >= FIRST_COMPUTE && direction == Direction::Request {
            let Some(mem) = self.seg() else { return };
            let cfg = self.cfg.unwrap_or(Cfg {
                node: 0,
                nodes: 1,
                seg_base: 0,
                seg_size: 0,
                rx_bounce: 0,
            });
            let mut ctx = ComputeCtx {
                mem,
                node: cfg.node as NodeId,
                nodes: cfg.nodes as usize,
                actions: &mut self.actions,
            };
            self.compute.request(&mut ctx, p.src, p.handler, &p.args);
            self.apply_actions();
            return;
        }
        if category == Category::Long {
            let ok = self
                .seg()
                .is_some_and(|m| m.write_shared(p.offset, &p.payload).is_ok());
            if !ok {
                self.set_err(err::BAD_PACKET, p.src as u32);
                return;
            }
        }
        self.rq_backlog.push_back(p);
        self.flush_rq();
    }

    fn flush_rq(&mut self) -> bool {
        let mut did = false;
        let Some(cfg) = self.cfg else { return false };
        while !self.rq_backlog.is_empty() {
            let head = self.r(regs::RQ_HEAD) % cmd::RQ_ENTRIES;
            if (self.rq_tail + 1) % cmd::RQ_ENTRIES == head {
                self.bar0
                    .reg(regs::STATUS)
                    .fetch_or(status::RQ_STALL, Ordering::AcqRel);
                self.cnt_stalls += 1;
                return did;
            }
            let Some(p) = self.rq_backlog.pop_front() else {
                break;
            };
            let PacketType::Am {
                category,
                direction,
            } = p.ptype
            else {
                continue;
            };
            let slot = self.rq_tail;
            let addr = match category {
                Category::Short => 0,
                Category::Medium => {
                    let at = cfg.rx_bounce + cmd::RX_BOUNCE_BYTES * slot as u64;
                    // SAFETY: the bounce area lies in the window (checked at
                    // enable) and a Medium payload is at most 4096 bytes.
                    unsafe {
                        std::ptr::copy(
                            p.payload.as_ptr(),
                            self.bar2.ptr().add(at as usize),
                            p.payload.len(),
                        )
                    };
                    at
                }
                Category::Long => p.offset,
            };
            let Ok(args) = cmd::Args::new(&p.args) else {
                continue;
            };
            let e = RxEntry {
                src: p.src,
                direction,
                category,
                handler: p.handler,
                args,
                len: p.payload.len() as u32,
                addr,
                phase: self.rq_phase,
            };
            let bytes = e.encode();
            let at = regs::RQ_RING + RX_ENTRY_BYTES * slot as usize;
            // SAFETY: the entry lies in BAR0's receive ring; the host does not
            // read it until its phase byte changes, which the atomic store
            // below does last.
            unsafe {
                let dst = self.bar0.ptr().add(at);
                std::ptr::copy(bytes.as_ptr().add(4), dst.add(4), RX_ENTRY_BYTES - 4);
            }
            let w0 = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            self.bar0.write32(at, w0);
            self.rq_tail = (self.rq_tail + 1) % cmd::RQ_ENTRIES;
            if self.rq_tail == 0 {
                self.rq_phase = !self.rq_phase;
            }
            self.w(regs::RQ_TAIL, self.rq_tail);
            self.bar0
                .reg(regs::IRQ_STATUS)
                .fetch_or(cmd::irq::RQ, Ordering::AcqRel);
            did = true;
        }
        self.bar0
            .reg(regs::STATUS)
            .fetch_and(!status::RQ_STALL, Ordering::AcqRel);
        did
    }

    #[allow(clippy::too_many_arguments)]
    fn send_am(
        &mut self,
        dst: NodeId,
        category: Category,
        direction: Direction,
        handler: u8,
        args: Vec<u32>,
        payload: Vec<u8>,
        offset: u64,
    ) {
        let me = self.cfg.map(|c| c.node as NodeId).unwrap_or(0);
        let p = Packet {
            ptype: PacketType::Am {
                category,
                direction,
            },
            src: me,
            dst,
            flags: 0,
            handler,
            args,
            offset: if category == Category::Long {
                offset
            } else {
                0
            },
            seq: 0,
            ack: 0,
            frag_offset: 0,
            total_len: payload.len() as u32,
            payload,
        };
        if dst == me {
            self.on_packet(p);
        } else {
            self.cnt_am_tx += 1;
            self.cnt_am_bytes_tx += p.payload.len() as u64;
            if self.link.send(&p).is_err() {
                self.set_err(err::LINK0_DOWN << (dst % 2), dst as u32 % 2);
            }
        }
    }

    fn drain_engine(&mut self) -> bool {
        let mut did = false;
        loop {
            let Some(e) = self.engine.as_mut() else {
                return did;
            };
            let Some(p) = e.next_outgoing() else { break };
            did = true;
            if self.link.send(&p).is_err() {
                self.set_err(err::LINK0_DOWN << (p.dst % 2), p.dst as u32 % 2);
            }
        }
        loop {
            let Some(e) = self.engine.as_mut() else {
                return did;
            };
            let Some(c) = e.poll_completion() else { break };
            did = true;
            if Some(c.tag) == self.marker {
                self.marker = None;
                self.marker_passed = true;
                continue;
            }
            let Some(p) = self.pending.remove(&c.tag) else {
                continue;
            };
            if let Some(id) = p.compute {
                if let Some(mem) = self.seg() {
                    let cfg = self.cfg.unwrap_or(Cfg {
                        node: 0,
                        nodes: 1,
                        seg_base: 0,
                        seg_size: 0,
                        rx_bounce: 0,
                    });
                    let mut ctx = ComputeCtx {
                        mem,
                        node: cfg.node as NodeId,
                        nodes: cfg.nodes as usize,
                        actions: &mut self.actions,
                    };
                    self.compute.put_done(&mut ctx, id, c.status.is_ok());
                }
                self.apply_actions();
                continue;
            }
            let (st, detail) = map_status(c.status);
            let value = if self.fault == Fault::Atomic && p.opcode == cmd::opcode::AMO {
                c.value ^ 1
            } else {
                c.value
            };
            self.complete(p, st, value, detail);
        }
        did
    }

    fn run_compute(&mut self) -> bool {
        if !self.compute.busy() {
            return false;
        }
        let Some(mem) = self.seg() else { return false };
        let Some(cfg) = self.cfg else { return false };
        let mut ctx = ComputeCtx {
            mem,
            node: cfg.node as NodeId,
            nodes: cfg.nodes as usize,
            actions: &mut self.actions,
        };
        let did = self.compute.step(&mut ctx);
        self.apply_actions();
        did
    }

    fn apply_actions(&mut self) {
        let actions = std::mem::take(&mut self.actions);
        for a in actions {
            match a {
                Action::Put {
                    id,
                    dst,
                    offset,
                    bytes,
                } => {
                    let tag = self.fresh_tag();
                    let len = bytes.len() as u32;
                    let cmd = Command::Put {
                        dst,
                        offset,
                        source: PutSource::Bytes(bytes),
                    };
                    let ok = self
                        .engine
                        .as_mut()
                        .is_some_and(|e| e.submit(tag, cmd).is_ok());
                    if ok {
                        self.pending.insert(
                            tag,
                            Pending {
                                tag: 0,
                                opcode: cmd::opcode::PUT,
                                target: dst,
                                sq_index: 0,
                                completion: false,
                                bytes: len,
                                local: 0,
                                compute: Some(id),
                            },
                        );
                    } else if let Some(mem) = self.seg() {
                        let mut ctx = ComputeCtx {
                            mem,
                            node: self.cfg.map(|c| c.node as NodeId).unwrap_or(0),
                            nodes: self.cfg.map(|c| c.nodes as usize).unwrap_or(1),
                            actions: &mut self.actions,
                        };
                        self.compute.put_done(&mut ctx, id, false);
                    }
                }
                Action::Reply { dst, handler, args } => {
                    self.send_am(
                        dst,
                        Category::Short,
                        Direction::Reply,
                        handler,
                        args,
                        Vec::new(),
                        0,
                    );
                }
            }
        }
        if !self.actions.is_empty() {
            self.apply_actions();
        }
    }

    fn fresh_tag(&mut self) -> u64 {
        self.next_tag += 1;
        self.next_tag
    }

    // ---- command queue ----------------------------------------------

    fn read_sq(&mut self) -> bool {
        let mut did = false;
        for _ in 0..SQ_PER_STEP {
            if self.cq_backlog.len() >= cmd::CQ_ENTRIES as usize {
                self.cnt_stalls += 1;
                self.bar0
                    .reg(regs::STATUS)
                    .fetch_or(status::CQ_STALL, Ordering::AcqRel);
                return did;
            }
            if let Some((d, idx)) = self.current.take() {
                if !self.start(d, idx) {
                    self.current = Some((d, idx));
                    return did;
                }
                did = true;
                continue;
            }
            let bell = self.r(regs::DOORBELL);
            if bell >= cmd::SQ_ENTRIES {
                if self.r(regs::ERR_STATUS) & err::DOORBELL_RANGE == 0 {
                    self.set_err(err::DOORBELL_RANGE, bell);
                }
                return did;
            }
            self.w(regs::SQ_TAIL, bell);
            if self.sq_head == bell {
                return did;
            }
            let n = cmd::SQ_ENTRIES;
            let idx = self.sq_head;
            let head = self.slot(idx);
            let k = match cmd::slot_count(&head) {
                Ok(k) => k as u32,
                Err(_) => 1,
            };
            let avail = (bell + n - idx) % n;
            if avail < k {
                return did;
            }
            let next = (k == 2).then(|| self.slot((idx + 1) % n));
            self.sq_head = (idx + k) % n;
            self.w(regs::SQ_HEAD, self.sq_head);
            did = true;
            match cmd::decode_chain(&head, next.as_ref().map(|s| &s[..])) {
                Ok(d) => {
                    if !self.start(d, idx as u16) {
                        self.current = Some((d, idx as u16));
                        return did;
                    }
                }
                Err(e) => {
                    let c = Completion::rejected(&head, idx as u16, false, &e);
                    self.cnt_errors += 1;
                    self.push_completion(c);
                }
            }
        }
        self.bar0
            .reg(regs::STATUS)
            .fetch_and(!status::CQ_STALL, Ordering::AcqRel);
        did
    }

    fn slot(&self, idx: u32) -> [u8; SLOT_BYTES] {
        let mut s = [0u8; SLOT_BYTES];
        // SAFETY: the slot lies in BAR0's command ring; the doorbell covered
        // it, so the host finished writing it (its stores precede the
        // doorbell, read with Acquire).
        unsafe {
            std::ptr::copy(
                self.bar0
                    .ptr()
                    .add(regs::SQ_RING + SLOT_BYTES * idx as usize),
                s.as_mut_ptr(),
                SLOT_BYTES,
            )
        };
        s
    }

    fn quiet(&self) -> bool {
        self.engine.as_ref().is_none_or(|e| e.outstanding() == 0)
            && !self.pending.values().any(|p| p.compute.is_none())
    }

    /// Starts a descriptor; `false` when it must wait (fence, AM order).
    fn start(&mut self, d: Descriptor, idx: u16) -> bool {
        let Some(cfg) = self.cfg else { return false };
        let common = *d.common();
        let fence = matches!(d, Descriptor::Fence { .. }) || common.fence_before;
        if fence && !self.quiet() {
            return false;
        }
        let pend = |bytes: u32, target: NodeId| Pending {
            tag: common.tag,
            opcode: d.opcode(),
            target,
            sq_index: idx,
            completion: common.completion,
            bytes,
            local: 0,
            compute: None,
        };
        let target = match d {
            Descriptor::Put { target, .. }
            | Descriptor::Get { target, .. }
            | Descriptor::Am { target, .. }
            | Descriptor::Amo { target, .. } => target,
            _ => 0,
        };
        if target as u32 >= cfg.nodes {
            self.reject(&d, idx, Status::BadTarget, target as u32);
            return true;
        }
        let local_ok = |l: Local, len: u32| match l {
            Local::Iova(_) => Err((Status::Unsupported, cmd::flags::LOCAL_IOVA as u32)),
            Local::Segment(o) => match o.checked_add(len as u64) {
                Some(end) if end <= cfg.seg_size => Ok(o),
                _ => Err((Status::OutOfRange, o as u32)),
            },
        };
        let command = match d {
            Descriptor::Nop { .. } | Descriptor::Fence { .. } => {
                self.complete(pend(0, 0), Status::Ok, 0, 0);
                return true;
            }
            Descriptor::Put {
                target,
                remote,
                source,
                ..
            } => {
                let (source, len) = match source {
                    cmd::PutSource::Inline(i) => {
                        let mut b = i.as_slice().to_vec();
                        if self.fault == Fault::InlinePut && !b.is_empty() {
                            b[0] ^= 0xFF;
                        }
                        (PutSource::Bytes(b), i.len() as u32)
                    }
                    cmd::PutSource::Local { addr, len } => match local_ok(addr, len) {
                        Err((s, det)) => {
                            self.reject(&d, idx, s, det);
                            return true;
                        }
                        Ok(o) if self.fault == Fault::SegmentPut && len > 0 => {
                            let mut b = vec![0u8; len as usize];
                            let _ = self.seg().map(|m| m.read(o, &mut b));
                            b[0] ^= 0xFF;
                            (PutSource::Bytes(b), len)
                        }
                        Ok(o) => (
                            PutSource::Local {
                                offset: o,
                                len: len as u64,
                            },
                            len,
                        ),
                    },
                };
                (
                    Command::Put {
                        dst: target,
                        offset: remote,
                        source,
                    },
                    len,
                )
            }
            Descriptor::Get {
                target,
                remote,
                local,
                len,
                ..
            } => match local_ok(local, len) {
                Err((s, det)) => {
                    self.reject(&d, idx, s, det);
                    return true;
                }
                Ok(o) => (
                    Command::Get {
                        dst: target,
                        offset: remote,
                        len: len as u64,
                        into: GetInto::Segment(o),
                    },
                    len,
                ),
            },
            Descriptor::Amo {
                target,
                op,
                width,
                remote,
                operand,
                compare,
                ..
            } => (
                Command::Amo {
                    dst: target,
                    op,
                    width,
                    offset: remote,
                    operand,
                    compare,
                },
                0,
            ),
            Descriptor::Am {
                target,
                direction,
                handler,
                args,
                body,
                ..
            } => return self.start_am(d, idx, target, direction, handler, args, body),
        };
        let (command, bytes) = command;
        let tag = self.fresh_tag();
        match self.engine.as_mut().map(|e| e.submit(tag, command)) {
            Some(Ok(())) => {
                let local = match d {
                    Descriptor::Get {
                        local: Local::Segment(o),
                        ..
                    } => o,
                    _ => 0,
                };
                let mut p = pend(bytes, target);
                p.local = local;
                self.pending.insert(tag, p);
            }
            Some(Err(e)) => {
                let (s, det) = match e {
                    engine::SubmitError::BadNode(n) => (Status::BadTarget, n as u32),
                    engine::SubmitError::LocalOutOfRange { offset, .. } => {
                        (Status::OutOfRange, offset as u32)
                    }
                    engine::SubmitError::RemoteOverflow => (Status::OutOfRange, 0),
                    _ => (Status::Unsupported, 0),
                };
                self.reject(&d, idx, s, det);
            }
            None => return false,
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn start_am(
        &mut self,
        d: Descriptor,
        idx: u16,
        target: NodeId,
        direction: Direction,
        handler: u8,
        args: cmd::Args,
        body: AmBody,
    ) -> bool {
        let busy = self.engine.as_ref().is_some_and(|e| e.outstanding() > 0);
        if busy && !self.marker_passed {
            if self.marker.is_none() {
                let tag = MARKER_TAG + self.fresh_tag();
                if let Some(e) = self.engine.as_mut() {
                    if e.submit(tag, Command::Nop).is_ok() {
                        self.marker = Some(tag);
                    }
                }
                self.drain_engine();
            }
            if !self.marker_passed {
                return false;
            }
        }
        self.marker_passed = false;
        self.drain_engine();
        let Some(cfg) = self.cfg else { return false };
        let (category, payload, remote) = match body {
            AmBody::Short => (Category::Short, Vec::new(), 0),
            AmBody::Medium { local, len } | AmBody::Long { local, len, .. } => {
                let o = match local {
                    Local::Iova(_) => {
                        self.reject(&d, idx, Status::Unsupported, cmd::flags::LOCAL_IOVA as u32);
                        return true;
                    }
                    Local::Segment(o) => o,
                };
                if o.checked_add(len as u64).is_none_or(|e| e > cfg.seg_size) {
                    self.reject(&d, idx, Status::OutOfRange, o as u32);
                    return true;
                }
                let mut b = vec![0u8; len as usize];
                let _ = self.seg().map(|m| m.read(o, &mut b));
                match body {
                    AmBody::Long { remote, .. } => (Category::Long, b, remote),
                    _ => (Category::Medium, b, 0),
                }
            }
        };
        let len = payload.len() as u32;
        self.send_am(
            target,
            category,
            direction,
            handler,
            args.as_slice().to_vec(),
            payload,
            remote,
        );
        let p = Pending {
            tag: d.common().tag,
            opcode: d.opcode(),
            target,
            sq_index: idx,
            completion: d.common().completion,
            bytes: len,
            local: 0,
            compute: None,
        };
        self.complete(p, Status::Ok, 0, 0);
        true
    }

    fn reject(&mut self, d: &Descriptor, idx: u16, s: Status, detail: u32) {
        let target = match *d {
            Descriptor::Put { target, .. }
            | Descriptor::Get { target, .. }
            | Descriptor::Am { target, .. }
            | Descriptor::Amo { target, .. } => target,
            _ => 0,
        };
        let p = Pending {
            tag: d.common().tag,
            opcode: d.opcode(),
            target,
            sq_index: idx,
            completion: true,
            bytes: 0,
            local: 0,
            compute: None,
        };
        self.complete(p, s, 0, detail);
    }

    fn complete(&mut self, p: Pending, s: Status, value: u64, detail: u32) {
        self.cnt_commands += 1;
        if !s.is_ok() {
            self.cnt_errors += 1;
        } else if !p.completion {
            return;
        }
        if s.is_ok() && p.opcode == cmd::opcode::GET && self.fault == Fault::GetData {
            if let (Some(m), true) = (self.seg(), p.bytes > 0) {
                let mut b = [0u8; 1];
                let _ = m.read(p.local, &mut b);
                let _ = m.write_shared(p.local, &[b[0] ^ 0xFF]);
            }
        }
        self.push_completion(Completion {
            tag: p.tag,
            status: s,
            opcode: p.opcode,
            target: p.target,
            value,
            bytes: if s.is_ok() { p.bytes } else { 0 },
            detail,
            sq_index: p.sq_index,
            phase: false,
        });
    }

    fn push_completion(&mut self, c: Completion) {
        self.cq_backlog.push_back(c);
        self.flush_cq();
    }

    fn flush_cq(&mut self) -> bool {
        let mut did = false;
        while let Some(mut c) = self.cq_backlog.pop_front() {
            let head = self.r(regs::CQ_HEAD) % cmd::CQ_ENTRIES;
            if (self.cq_tail + 1) % cmd::CQ_ENTRIES == head {
                self.cq_backlog.push_front(c);
                self.cnt_stalls += 1;
                break;
            }
            c.phase = self.cq_phase;
            let b = c.encode();
            let at = regs::CQ_RING + COMPLETION_BYTES * self.cq_tail as usize;
            // SAFETY: the entry lies in BAR0's completion ring and the host
            // freed it (checked above); the phase word is stored last.
            unsafe { std::ptr::copy(b.as_ptr(), self.bar0.ptr().add(at), 28) };
            let w = u32::from_le_bytes([b[28], b[29], b[30], b[31]]);
            self.bar0.write32(at + 28, w);
            self.cq_tail = (self.cq_tail + 1) % cmd::CQ_ENTRIES;
            if self.cq_tail == 0 {
                self.cq_phase = !self.cq_phase;
            }
            self.w(regs::CQ_TAIL, self.cq_tail);
            self.bar0
                .reg(regs::IRQ_STATUS)
                .fetch_or(cmd::irq::CQ, Ordering::AcqRel);
            did = true;
        }
        did
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
