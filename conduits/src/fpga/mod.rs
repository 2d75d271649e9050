//! The FPGA conduit: a PE drives its board through the BARs.
//!
//! Each PE owns one board (a PCIe FPGA with a hardware GASNet core, or a
//! model of one, the `devsim` program, whose BARs are files; the conduit
//! cannot tell them apart and contains no part of the model).
//! [`Lifecycle::attach`] maps the board's BARs
//! ([`bar`]), checks `MAGIC`/`VERSION`, resets and configures it
//! (`spec/registers.md` §6.4), runs a health check over every memory path
//! and joins the job with a bootstrap barrier.
//!
//! # Memory
//!
//! The board's segment (`SEG_BASE..SEG_BASE+SEG_SIZE` of BAR2) is laid out
//! as
//!
//! | segment offset | what |
//! |---|---|
//! | `0 .. L` | the symmetric segment ([`Segments::segment_len`] = `L`) |
//! | `L' ..` (`L` rounded up to 4 KiB) | bootstrap area: barrier counters, the global-exit word, two generations of exchange slots |
//! | then 16 KiB | the attach health check's scratch |
//! | then 4 MiB | staging ring: put sources and get landing areas |
//!
//! followed (outside the segment) by the receive bounce buffers. The
//! symmetric segment is the BAR2 window itself, so
//! [`Segments::peer_segment`] returns it for this PE and `None` for others.
//!
//! # Commands
//!
//! Every operation on another PE is a `spec/registers.md` descriptor
//! ([`queue`]: slot stores, `sfence`, doorbell). Puts of at most 32 bytes
//! are inline descriptors without a completion; longer puts are copied into
//! the staging ring and sent from there (the staging space is freed by
//! their completion), so `put` returns as soon as the descriptor is
//! written. Gets land in the staging ring and are copied out when their
//! completion is reaped (a board without host DMA cannot write host
//! memory). Fetching atomics wait for their completion's value;
//! non-fetching ones are fire-and-forget. `fence` is a Fence descriptor,
//! `quiet` a Fence with a completion that the PE waits for. A full command
//! ring applies back-pressure: the PE reaps completions until the board has
//! consumed slots, it never overwrites one. Operations on this PE's own
//! segment short-circuit through the window, except atomics, which go
//! through the board so that they are atomic with respect to remote ones.
//!
//! # Contexts
//!
//! Every command carries the `COMPLETION` flag and its tag maps to the
//! context ([`CtxId`]) that issued it; the host counts each context's
//! outstanding commands. `quiet` on a context waits until its count is
//! zero (a Put completes when the target acknowledged every byte, an
//! atomic when it was applied, `spec/registers.md` §7.5, §7.7), so it
//! returns while another context still waits for a slow target. A board
//! has one command queue: `fence` is a Fence descriptor, which orders
//! every context's later commands after every earlier one (stronger than
//! the contract asks, never weaker).
//!
//! # Active messages
//!
//! Requests and replies are AM descriptors (Medium/Long payloads staged);
//! incoming messages for host handlers arrive in the receive queue and are
//! dispatched from [`ActiveMessages::poll`] through the [`HandlerTable`]; a
//! handler's reply is an AM reply descriptor.
//!
//! # Bootstrap
//!
//! No side channel is needed: boards know their node ids, so the bootstrap
//! services run through the boards. [`JobBootstrap::barrier`] is a dissemination
//! barrier of board atomics on counters in each PE's bootstrap area,
//! awaited with window loads; [`JobBootstrap::exchange`] puts each contribution
//! into slot `rank` of every PE's exchange area and then runs a barrier.
//! Two generations of slots alternate, so a fast PE never overwrites slots
//! a slow one is reading. Packets that reach a board before its host has
//! enabled it are held by the board, so early PEs cannot lose traffic to a
//! late one's reset.
//!
//! # Failure
//!
//! The conduit learns everything about its board from the board's
//! registers and its segment, as it would from real hardware
//! (`spec/registers.md` §4.4, §4.7, §5.1); it reads no file of the board
//! model. At attach the PEs exchange their process ids and host names.
//! Every wait of the conduit, and [`ActiveMessages::poll`] at most every
//! 10 ms, runs the slow checks:
//!
//! - a global exit (the exit word; the process then exits as a job exit,
//!   [`crate::wait::exit_job`]);
//! - `ERR_STATUS.PEER_TIMEOUT` of this PE's board: a link peer that stopped
//!   answering for the peer timeout, named by `ERR_INFO`;
//! - this PE's board: its `UPTIME` register stood still for the peer timeout
//!   (the board stopped), or `MAGIC` no longer reads right (it is gone);
//! - a peer PE on this host whose process ended: the conduit reads the
//!   peer's *state word* in the peer's segment with an atomic fetch through
//!   the board network (`spec/registers.md` §5.1); it finalized, or it
//!   failed, or it left because the PE it names failed — followed to the PE
//!   that failed first, which this PE records in its own state word before
//!   it leaves.
//!
//! Each fails the call with [`ConduitError::PeerFailed`] naming the PE.
//! Waits that make no progress for `FSHMEM_WAIT_TIMEOUT` fail with
//! [`ConduitError::Timeout`] naming what they await.

pub mod bar;
pub mod launch;
pub mod queue;

use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::liveness::{host_name, process_alive, root_of};
use crate::wait::Backoff;
use crate::{AmoOp, AmoWidth, Category, HandlerFn};
use bar::{Board, Device};
use gasnet_core::cmd::{
    self, AmBody, Args, Common, Completion, Descriptor, Inline, Local, MAX_INLINE, RxEntry, ctrl,
    err, regs, status,
};
use gasnet_core::engine::layout::engine_owned;
use gasnet_core::{AmError, AmMessage, Direction, HandlerTable, NodeId, ReplySink, Token};
use queue::Rings;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock};
use std::time::{Duration, Instant};

/// Largest contribution to [`JobBootstrap::exchange`].
pub const EXCHANGE_MAX: usize = 1024;
/// Contexts a PE can have at once, the default one included.
pub const MAX_CONTEXTS: usize = 1024;
/// Bytes of the staging ring.
pub const STAGE_BYTES: u64 = 4 << 20;
/// Largest piece one staged put or get moves.
const CHUNK: usize = 1 << 20;
/// Bytes of the health-check scratch.
const HEALTH_BYTES: u64 = 16 << 10;
/// Exchange slot stride: an 8-byte length, then the data.
const SLOT: u64 = 8 + EXCHANGE_MAX as u64;
/// How long the board may take to reset or enable.
const BRING_UP: Duration = Duration::from_secs(20);
/// Slow checks (board liveness, global exit) every this many yields.
const CHECK_PERIOD: u64 = 512;

const fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// Where things live in the board's segment (offsets from `SEG_BASE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The symmetric segment's length.
    pub segment_len: u64,
    /// Bootstrap area: barrier counters at `+0` (64 × 8 bytes), the
    /// global-exit word at `+512`, the PE's state word at `+520`, exchange
    /// slots from `+4096`.
    pub boot: u64,
    /// Health-check scratch.
    pub health: u64,
    /// Staging ring.
    pub stage: u64,
    /// `SEG_SIZE`.
    pub seg_size: u64,
    /// `RX_BOUNCE` (a BAR2 offset; `SEG_BASE` is 0).
    pub rx_bounce: u64,
    /// Bytes of BAR2 needed.
    pub window: u64,
}

impl Layout {
    /// The layout for a job of `size` PEs with `segment_len`-byte segments.
    pub fn new(segment_len: u64, size: usize) -> Layout {
        let boot = round_up(segment_len.max(1), 4096);
        let boot_len = round_up(4096 + 2 * size as u64 * SLOT, 4096);
        let health = boot + boot_len;
        let stage = health + HEALTH_BYTES;
        let seg_size = stage + STAGE_BYTES;
        let rx_bounce = seg_size;
        let window = rx_bounce + cmd::RQ_ENTRIES as u64 * cmd::RX_BOUNCE_BYTES;
        Layout {
            segment_len,
            boot,
            health,
            stage,
            seg_size,
            rx_bounce,
            window,
        }
    }

    fn counter(&self, round: usize) -> u64 {
        self.boot + 8 * round as u64
    }

    fn exit_word(&self) -> u64 {
        self.boot + 512
    }

    /// This PE's state word (`spec/registers.md` §5.1): bit 0 finalized,
    /// bits 63:32 the PE that failed first plus one.
    pub fn state_word(&self) -> u64 {
        self.boot + 520
    }

    fn slot(&self, generation: u64, size: usize, rank: usize) -> u64 {
        self.boot + 4096 + ((generation % 2) * size as u64 + rank as u64) * SLOT
    }
}

/// A ring allocator over the staging area: allocations are freed in any
/// order and reclaimed in allocation order.
#[derive(Debug)]
struct Stage {
    base: u64,
    size: u64,
    head: u64,
    tail: u64,
    allocs: VecDeque<(u64, u64, bool)>,
    next_id: u64,
}

impl Stage {
    fn new(base: u64, size: u64) -> Stage {
        Stage {
            base,
            size,
            head: 0,
            tail: 0,
            allocs: VecDeque::new(),
            next_id: 0,
        }
    }

    /// `(id, segment offset)` of `len` free bytes, or `None` for now.
    fn alloc(&mut self, len: u64) -> Option<(u64, u64)> {
        let len = round_up(len.max(1), 64);
        let mut start = self.tail;
        let off = start % self.size;
        if off + len > self.size {
            start += self.size - off;
        }
        if start + len - self.head > self.size {
            return None;
        }
        self.next_id += 1;
        self.allocs.push_back((self.next_id, start + len, false));
        self.tail = start + len;
        Some((self.next_id, self.base + start % self.size))
    }

    fn free(&mut self, id: u64) {
        if let Some(a) = self.allocs.iter_mut().find(|a| a.0 == id) {
            a.2 = true;
        }
        while let Some(&(_, end, true)) = self.allocs.front() {
            self.head = end;
            self.allocs.pop_front();
        }
        if self.allocs.is_empty() {
            self.head = self.tail;
        }
    }
}

/// What to do when a tagged completion arrives.
#[derive(Debug)]
enum Waiter {
    /// Free a staging allocation.
    Free(u64),
    /// Copy a landed get out of staging into host memory, then free it.
    CopyOut {
        id: u64,
        from: u64,
        dst: *mut u8,
        len: usize,
    },
    /// Keep the completion for a blocking caller.
    Keep,
    /// Nothing but counting it for its context's quiet.
    Count,
}

/// One context's bookkeeping.
#[derive(Debug, Default)]
struct CtxState {
    /// Created and not destroyed (the default context always is).
    live: bool,
    /// Commands of it whose completion has not arrived.
    outstanding: u64,
    /// The first error of its commands since its last quiet (blocking
    /// callers get theirs directly).
    error: Option<ConduitError>,
}

#[derive(Debug)]
struct Host {
    rings: Rings,
    next_tag: u32,
    /// Each tagged command's context and what its completion is for.
    waiting: HashMap<u32, (u32, Waiter)>,
    ctxs: Vec<CtxState>,
    done: HashMap<u32, Completion>,
    stage: Stage,
    /// Something was issued since the last fence.
    dirty: bool,
}

impl Host {
    /// The state of context `ctx`, if it exists.
    fn ctx(&mut self, ctx: CtxId) -> Result<&mut CtxState> {
        match self.ctxs.get_mut(ctx.index()) {
            Some(c) if c.live => Ok(c),
            _ => Err(ConduitError::NoContext { ctx: ctx.0 }),
        }
    }

    /// Registers tagged command `tag` of `ctx`, to be handled by `w` when
    /// its completion arrives.
    fn expect(&mut self, ctx: CtxId, tag: u32, w: Waiter) {
        if let Some(c) = self.ctxs.get_mut(ctx.index()) {
            c.outstanding += 1;
        }
        self.waiting.insert(tag, (ctx.0, w));
    }
}

/// One received active message, copied out of the receive queue.
#[derive(Debug)]
struct RxMsg {
    entry: RxEntry,
    payload: Vec<u8>,
}

/// A PE attached to its board. `Send + Sync`; the rings are behind a lock.
pub struct FpgaConduit {
    rank: usize,
    size: usize,
    board: Board,
    layout: Layout,
    /// The segment in this process (BAR2 at `SEG_BASE` = 0).
    seg: *mut u8,
    host: Mutex<Host>,
    handlers: RwLock<HandlerTable>,
    rx: Mutex<VecDeque<RxMsg>>,
    dispatching: AtomicBool,
    barrier_epoch: AtomicU64,
    exchange_generation: AtomicU64,
    finalized: AtomicBool,
    /// Every PE's liveness facts, learnt at attach.
    peers: OnceLock<Vec<PeerInfo>>,
    /// Peers found finalized (their exit is not a failure).
    peer_finalized: Box<[AtomicBool]>,
    /// A peer check is running on this thread's stack (its fetch waits
    /// must not start another).
    checking_peers: AtomicBool,
    /// The last `UPTIME` read and when it last moved.
    uptime: Mutex<(u64, Instant)>,
    /// How long the board's `UPTIME` may stand still (the peer timeout).
    board_timeout: Duration,
    /// Calls of [`ActiveMessages::poll`] (its liveness check is rate-limited).
    polls: AtomicU32,
    /// When [`ActiveMessages::poll`] last ran the slow checks (ns since `born`).
    last_check: AtomicU64,
    born: Instant,
}

/// What the liveness check knows of a PE.
#[derive(Clone, Debug)]
struct PeerInfo {
    /// Its process id (0: unknown).
    pid: u64,
    /// It runs on this host, so its pid means something here.
    checkable: bool,
}

/// Bit 0 of a state word: the PE finalized.
const STATE_FINALIZED: u64 = 1;

/// [`ActiveMessages::poll`] considers the slow checks every this many calls...
const POLL_CHECK_CALLS: u32 = 256;
/// ...and runs them when this long has passed since the last time.
const POLL_CHECK_INTERVAL: Duration = Duration::from_millis(10);

// SAFETY: the raw pointers name the BAR2 mapping owned by `board`, which
// lives as long as the conduit; ring state is behind the Mutex, handler
// dispatch is serialised by `dispatching`, and raw destination pointers in
// waiters are the caller's promise (get_nbi's contract).
unsafe impl Send for FpgaConduit {}
// SAFETY: as for Send.
unsafe impl Sync for FpgaConduit {}

impl std::fmt::Debug for FpgaConduit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FpgaConduit")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("device", &self.board.device)
            .field("layout", &self.layout)
            .finish()
    }
}

/// A memory path the attach health check exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthPath {
    /// Host stores through the BAR2 window, read back by a Get descriptor.
    WindowToGet,
    /// An inline Put descriptor, read back with BAR2 window loads.
    InlinePutToWindow,
    /// A Put descriptor sourcing the segment (board DMA read), read back
    /// with window loads.
    SegmentPutToWindow,
    /// An Atomic descriptor: its fetched value and the word in the window.
    Atomic,
}

impl std::fmt::Display for HealthPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HealthPath::WindowToGet => "BAR2 window store -> Get descriptor",
            HealthPath::InlinePutToWindow => "inline Put descriptor -> BAR2 window load",
            HealthPath::SegmentPutToWindow => {
                "segment Put descriptor (board DDR read) -> BAR2 window load"
            }
            HealthPath::Atomic => "Atomic descriptor (fetched value and DDR word)",
        })
    }
}

fn status_error(pe: usize, c: &Completion) -> ConduitError {
    ConduitError::PeerFailed {
        pe,
        reason: format!(
            "board reported {} for opcode {:#04x} (tag {}, detail {})",
            c.status, c.opcode, c.tag, c.detail
        ),
    }
}

impl FpgaConduit {
    /// Exchanges what the liveness check needs: every PE's process id and
    /// host name (pids are only checked between PEs on one host).
    /// Collective.
    fn learn_peers(&self) -> Result<()> {
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

    /// Opens, resets and configures a board for PE `rank` of `size`,
    /// without the health check and bootstrap barrier of
    /// [`FpgaConduit::attach`] (for tests and tools).
    pub fn open(
        device: Device,
        rank: usize,
        size: usize,
        segment_len: usize,
    ) -> Result<FpgaConduit> {
        let board = Board::open(device)?;
        let layout = Layout::new(segment_len as u64, size);
        let dev = board.device.clone();
        if board.id.window < layout.window {
            return Err(ConduitError::Bootstrap(format!(
                "{dev}: its {}-byte DDR window cannot hold a {segment_len}-byte segment \
                 (needs {} bytes with the conduit's areas); lower SHMEM_SYMMETRIC_SIZE",
                board.id.window, layout.window
            )));
        }
        let bar0 = &board.bar0;
        let bring_up = |what: &str, done: &dyn Fn() -> bool| -> Result<()> {
            let start = Instant::now();
            let mut b = Backoff::new();
            while !done() {
                if start.elapsed() > BRING_UP {
                    return Err(ConduitError::Bootstrap(format!(
                        "{dev}: {what} did not finish within {BRING_UP:?} (is the board running?)"
                    )));
                }
                b.snooze();
            }
            Ok(())
        };
        if bar0.read32(regs::CTRL) & ctrl::ENABLE != 0 {
            bar0.write32(regs::CTRL, 0);
            bring_up("disable", &|| {
                bar0.read32(regs::STATUS) & status::READY == 0
            })?;
        }
        bar0.write32(regs::CTRL, ctrl::RESET);
        bring_up("soft reset", &|| bar0.read32(regs::CTRL) & ctrl::RESET == 0)?;
        let (strap_id, strap_n) = (bar0.read32(regs::NODE_ID), bar0.read32(regs::NODE_COUNT));
        if strap_n > 1 && (strap_id as usize, strap_n as usize) != (rank, size) {
            return Err(ConduitError::Bootstrap(format!(
                "{dev} is node {strap_id} of {strap_n} but this PE is rank {rank} of {size}"
            )));
        }
        bar0.write32(regs::NODE_ID, rank as u32);
        bar0.write32(regs::NODE_COUNT, size as u32);
        bar0.write64(regs::SEG_BASE_LO, 0);
        bar0.write64(regs::SEG_SIZE_LO, layout.seg_size);
        bar0.write64(regs::RX_BOUNCE_LO, layout.rx_bounce);
        bar0.write32(regs::CTRL, ctrl::ENABLE);
        bring_up("enable", &|| {
            bar0.read32(regs::STATUS) & status::READY != 0
                || bar0.read32(regs::ERR_STATUS) & err::CONFIG_INVALID != 0
        })?;
        if bar0.read32(regs::STATUS) & status::READY == 0 {
            return Err(ConduitError::Bootstrap(format!(
                "{dev} refused its configuration (ERR_STATUS {:#x}, register {:#x})",
                bar0.read32(regs::ERR_STATUS),
                bar0.read32(regs::ERR_INFO)
            )));
        }
        let rings = Rings::after_reset(bar0);
        let uptime = bar0.read64(regs::UPTIME_LO);
        let seg = board.bar2.ptr();
        Ok(FpgaConduit {
            rank,
            size,
            layout,
            seg,
            host: Mutex::new(Host {
                rings,
                next_tag: 0,
                waiting: HashMap::new(),
                ctxs: vec![CtxState {
                    live: true,
                    ..CtxState::default()
                }],
                done: HashMap::new(),
                stage: Stage::new(layout.stage, STAGE_BYTES),
                dirty: false,
            }),
            board,
            handlers: RwLock::new(HandlerTable::new()),
            rx: Mutex::new(VecDeque::new()),
            dispatching: AtomicBool::new(false),
            barrier_epoch: AtomicU64::new(0),
            exchange_generation: AtomicU64::new(0),
            finalized: AtomicBool::new(false),
            peers: OnceLock::new(),
            peer_finalized: (0..size).map(|_| AtomicBool::new(false)).collect(),
            checking_peers: AtomicBool::new(false),
            uptime: Mutex::new((uptime, Instant::now())),
            board_timeout: Duration::from_secs(10),
            polls: AtomicU32::new(0),
            last_check: AtomicU64::new(0),
            born: Instant::now(),
        })
    }

    /// Low level, for tools and benchmarks: writes `d` to the command
    /// queue as it is (back-pressure included). Its completion, if any, is
    /// reaped by later calls and only its errors are reported.
    pub fn submit_descriptor(&self, d: &Descriptor) -> Result<()> {
        let mut h = self.lock();
        self.submit(&mut h, d)
    }

    /// Low level, for tools and benchmarks: reaps the completions the
    /// board has written; returns how many.
    pub fn reap_completions(&self) -> usize {
        let mut h = self.lock();
        self.reap(&mut h)
    }

    /// Commands of context `ctx` whose completion has not arrived yet.
    pub fn outstanding(&self, ctx: CtxId) -> Result<u64> {
        let mut h = self.lock();
        self.reap(&mut h);
        Ok(h.ctx(ctx)?.outstanding)
    }

    /// The segment layout in use.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The mapped board.
    pub fn board(&self) -> &Board {
        &self.board
    }

    fn lock(&self) -> MutexGuard<'_, Host> {
        self.host.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[inline(always)]
    fn win(&self, off: u64) -> *mut u8 {
        self.seg.wrapping_add(off as usize)
    }

    /// Handles one completion.
    fn settle(&self, h: &mut Host, c: Completion) {
        let Some((ctx, w)) = h.waiting.remove(&c.tag) else {
            return;
        };
        if let Some(st) = h.ctxs.get_mut(ctx as usize) {
            st.outstanding = st.outstanding.saturating_sub(1);
            if !c.status.is_ok() && st.error.is_none() && !matches!(w, Waiter::Keep) {
                st.error = Some(status_error(c.target as usize, &c));
            }
        }
        match w {
            Waiter::Free(id) => h.stage.free(id),
            Waiter::CopyOut { id, from, dst, len } => {
                if c.status.is_ok() {
                    // SAFETY: `from..from+len` is a staging allocation in the
                    // window; `dst` is valid for `len` bytes until the quiet
                    // that reaps this (get_nbi's contract) or until the
                    // blocking get returns.
                    unsafe { std::ptr::copy_nonoverlapping(self.win(from), dst, len) };
                }
                h.stage.free(id);
            }
            Waiter::Keep => {
                h.done.insert(c.tag, c);
            }
            Waiter::Count => {}
        }
    }

    /// Reaps every completion the board has written; returns how many.
    fn reap(&self, h: &mut Host) -> usize {
        let mut n = 0;
        while let Some(r) = h.rings.poll_cq(&self.board.bar0) {
            n += 1;
            match r {
                Ok(c) => self.settle(h, c),
                Err(e) => {
                    // Its tag is unknown: every context learns of it.
                    for st in h.ctxs.iter_mut().filter(|c| c.live) {
                        st.error.get_or_insert(ConduitError::PeerFailed {
                            pe: self.rank,
                            reason: format!("board wrote a malformed completion: {e}"),
                        });
                    }
                }
            }
        }
        n
    }

    /// One step of a wait: the slow checks now and then, the wait
    /// timeout (`FSHMEM_WAIT_TIMEOUT`, naming `what` is awaited), then a
    /// backoff step.
    fn step_wait<S: std::fmt::Display>(
        &self,
        b: &mut Backoff,
        what: impl FnOnce() -> S,
    ) -> Result<()> {
        if b.every(CHECK_PERIOD) {
            self.slow_checks()?;
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

    /// Slow checks during long waits and, rate-limited, in
    /// [`ActiveMessages::poll`]: the job was ended (global exit), this PE's
    /// board reported a silent link peer or stopped itself, a peer PE of
    /// this host ended without finalizing.
    fn slow_checks(&self) -> Result<()> {
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
    /// `ERR_STATUS.PEER_TIMEOUT`, and the board's own heartbeat.
    fn board_checks(&self) -> Result<()> {
        let exit = self.load64(self.layout.exit_word());
        if exit != 0 {
            crate::wait::exit_job((exit & 0xFF) as i32);
        }
        let bar0 = &self.board.bar0;
        if bar0.read32(regs::ERR_STATUS) & err::PEER_TIMEOUT != 0 {
            let node = bar0.read32(regs::ERR_INFO) as usize;
            return Err(ConduitError::PeerFailed {
                pe: node,
                reason: format!(
                    "its board stopped answering PE {}'s board on the link (no packet for \
                     the peer timeout, FSHMEM_PEER_TIMEOUT)",
                    self.rank
                ),
            });
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

    /// Peers of this host whose process is gone: finalized (fine), or
    /// failed, traced to the PE that failed first.
    fn peer_checks(&self) -> Result<()> {
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
                continue;
            }
            let state = self.peer_state(pe)?;
            if state & STATE_FINALIZED != 0 {
                self.peer_finalized[pe].store(true, Ordering::Release);
                continue;
            }
            return Err(self.root_cause(peers, pe));
        }
        Ok(())
    }

    /// PE `pe`'s state word, fetched through the board network.
    fn peer_state(&self, pe: usize) -> Result<u64> {
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
    fn root_cause(&self, peers: &[PeerInfo], pe: usize) -> ConduitError {
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

    fn fresh_tag(h: &mut Host) -> u32 {
        h.next_tag = h.next_tag.wrapping_add(1).max(1);
        h.next_tag
    }

    /// Writes a descriptor, reaping completions while the ring is full.
    fn submit(&self, h: &mut MutexGuard<'_, Host>, d: &Descriptor) -> Result<()> {
        let enc = cmd::encode_slots(d);
        let mut b = Backoff::new();
        while !h.rings.try_submit(&self.board.bar0, enc.as_slots()) {
            if self.reap(h) > 0 {
                b.reset();
                continue;
            }
            self.step_wait(&mut b, || "room in its board's command queue".to_string())?;
        }
        h.dirty = true;
        Ok(())
    }

    /// A staging allocation of `len` bytes, reaping completions until one
    /// is free.
    fn stage(&self, h: &mut MutexGuard<'_, Host>, len: usize) -> Result<(u64, u64)> {
        let mut b = Backoff::new();
        loop {
            if let Some(a) = h.stage.alloc(len as u64) {
                return Ok(a);
            }
            if self.reap(h) > 0 {
                b.reset();
                continue;
            }
            self.step_wait(&mut b, || {
                format!("{len} bytes of staging space (completions of earlier puts and gets)")
            })?;
        }
    }

    /// Waits for the completion of `tag` (registered as [`Waiter::Keep`]).
    fn wait_tag(&self, tag: u32) -> Result<Completion> {
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                if let Some(c) = h.done.remove(&tag) {
                    return Ok(c);
                }
            }
            self.step_wait(&mut b, || {
                format!("the completion of command {tag} from its board")
            })?;
        }
    }

    fn common(tag: u32, completion: bool) -> Common {
        Common {
            tag,
            completion,
            fence_before: false,
        }
    }

    /// Puts `len` bytes at `src` to segment offset `offset` of `pe` on
    /// context `ctx` (no range check: internal areas are beyond the
    /// symmetric segment).
    fn raw_put(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let mut h = self.lock();
        h.ctx(ctx)?;
        if pe == self.rank {
            drop(h);
            // SAFETY: the destination lies in this PE's segment (callers
            // checked the range); `src` is valid for `len` bytes (caller).
            unsafe { std::ptr::copy(src, self.win(offset), len) };
            return Ok(());
        }
        if len <= MAX_INLINE {
            // SAFETY: `src` is valid for `len` bytes (caller).
            let data = unsafe { std::slice::from_raw_parts(src, len) };
            let inline = Inline::new(data)
                .map_err(|_| ConduitError::Unsupported("inline put longer than 32 bytes"))?;
            let tag = Self::fresh_tag(&mut h);
            h.expect(ctx, tag, Waiter::Count);
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: pe as NodeId,
                remote: offset,
                source: cmd::PutSource::Inline(inline),
            };
            return self.submit(&mut h, &d);
        }
        let mut at = 0;
        while at < len {
            let n = (len - at).min(CHUNK);
            let (id, st) = self.stage(&mut h, n)?;
            // SAFETY: `src+at..+n` is valid (caller); the staging slice is
            // ours until its put completes.
            unsafe { std::ptr::copy_nonoverlapping(src.add(at), self.win(st), n) };
            let tag = Self::fresh_tag(&mut h);
            h.expect(ctx, tag, Waiter::Free(id));
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: pe as NodeId,
                remote: offset + at as u64,
                source: cmd::PutSource::Local {
                    addr: Local::Segment(st),
                    len: n as u32,
                },
            };
            self.submit(&mut h, &d)?;
            at += n;
        }
        Ok(())
    }

    /// Starts gets of `len` bytes into `dst` on context `ctx`; returns
    /// their tags.
    fn raw_get(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<Vec<u32>> {
        let mut h = self.lock();
        h.ctx(ctx)?;
        if pe == self.rank {
            drop(h);
            // SAFETY: the source lies in this PE's segment (range checked by
            // callers); `dst` is valid for `len` bytes (caller).
            unsafe { std::ptr::copy(self.win(offset), dst, len) };
            return Ok(Vec::new());
        }
        let mut tags = Vec::new();
        let mut at = 0;
        while at < len {
            let n = (len - at).min(CHUNK);
            let (id, st) = self.stage(&mut h, n)?;
            let tag = Self::fresh_tag(&mut h);
            h.expect(
                ctx,
                tag,
                Waiter::CopyOut {
                    id,
                    from: st,
                    dst: dst.wrapping_add(at),
                    len: n,
                },
            );
            let d = Descriptor::Get {
                common: Self::common(tag, true),
                target: pe as NodeId,
                remote: offset + at as u64,
                local: Local::Segment(st),
                len: n as u32,
            };
            self.submit(&mut h, &d)?;
            tags.push(tag);
            at += n;
        }
        Ok(tags)
    }

    /// Waits until none of `tags` (commands of `ctx`) is outstanding;
    /// reports the first error of `ctx`.
    fn wait_tags(&self, ctx: CtxId, tags: &[u32]) -> Result<()> {
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                if !tags.iter().any(|t| h.waiting.contains_key(t)) {
                    return match h.ctx(ctx)?.error.take() {
                        Some(e) => Err(e),
                        None => Ok(()),
                    };
                }
            }
            self.step_wait(&mut b, || {
                format!("the completions of {} gets from its board", tags.len())
            })?;
        }
    }

    /// An atomic on context `ctx` without range checks (internal areas).
    #[allow(clippy::too_many_arguments)]
    fn raw_atomic(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
        fence_before: bool,
    ) -> Result<u64> {
        let fetch = op.fetches();
        let tag = {
            let mut h = self.lock();
            h.ctx(ctx)?;
            let tag = Self::fresh_tag(&mut h);
            h.expect(ctx, tag, if fetch { Waiter::Keep } else { Waiter::Count });
            let d = Descriptor::Amo {
                common: Common {
                    tag,
                    completion: true,
                    fence_before,
                },
                target: pe as NodeId,
                op,
                width,
                remote: offset,
                operand: operand & width.mask(),
                compare: if op == AmoOp::CompareSwap {
                    compare & width.mask()
                } else {
                    0
                },
            };
            self.submit(&mut h, &d)?;
            tag
        };
        if !fetch {
            return Ok(0);
        }
        let c = self.wait_tag(tag)?;
        if !c.status.is_ok() {
            return Err(status_error(pe, &c));
        }
        Ok(c.value)
    }

    /// Waits until context `ctx` has no outstanding command; reports its
    /// first error since the last quiet.
    fn quiet_ctx(&self, ctx: CtxId) -> Result<()> {
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                let c = h.ctx(ctx)?;
                if c.outstanding == 0 {
                    return match c.error.take() {
                        Some(e) => Err(e),
                        None => Ok(()),
                    };
                }
            }
            self.step_wait(&mut b, || {
                let n = self.lock().ctx(ctx).map_or(0, |c| c.outstanding);
                format!(
                    "{n} commands of {ctx} to complete in quiet (acknowledged by their targets)"
                )
            })?;
        }
    }

    fn load64(&self, off: u64) -> u64 {
        // SAFETY: internal words are 8-byte aligned inside the segment; the
        // board updates them only with atomics.
        unsafe { AtomicU64::from_ptr(self.win(off).cast()).load(Ordering::Acquire) }
    }

    /// Sends an AM descriptor (request or reply); payload staged.
    #[allow(clippy::too_many_arguments)]
    fn send_am(
        &self,
        pe: usize,
        direction: Direction,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> Result<()> {
        gasnet_core::am::check_shape(category, args.len(), payload.len())?;
        if handler == 0 || engine_owned(handler) {
            return Err(AmError::ReservedIndex(handler).into());
        }
        let args = Args::new(args).map_err(|_| AmError::TooManyArgs(args.len()))?;
        let mut h = self.lock();
        let tag = Self::fresh_tag(&mut h);
        let body = match category {
            Category::Short => AmBody::Short,
            _ => {
                let (id, st) = self.stage(&mut h, payload.len())?;
                // SAFETY: the staging slice is ours until this AM completes.
                unsafe {
                    std::ptr::copy_nonoverlapping(payload.as_ptr(), self.win(st), payload.len())
                };
                h.expect(CtxId::DEFAULT, tag, Waiter::Free(id));
                let local = Local::Segment(st);
                let len = payload.len() as u32;
                if category == Category::Long {
                    AmBody::Long {
                        local,
                        len,
                        remote: offset,
                    }
                } else {
                    AmBody::Medium { local, len }
                }
            }
        };
        let d = Descriptor::Am {
            common: Self::common(tag, category != Category::Short),
            target: pe as NodeId,
            direction,
            handler,
            args,
            body,
        };
        self.submit(&mut h, &d)
    }

    /// Copies every receive entry into the software queue and frees it.
    fn drain_rq(&self) {
        let mut got = Vec::new();
        {
            let mut h = self.lock();
            while let Some((_, r)) = h.rings.peek_rq(&self.board.bar0) {
                if let Ok(e) = r {
                    let mut payload = vec![0u8; e.len as usize];
                    let from = match e.category {
                        Category::Short => None,
                        // Medium: a BAR2 offset; Long: a segment offset
                        // (the same thing, SEG_BASE being 0).
                        _ => Some(e.addr),
                    };
                    if let Some(from) = from {
                        if from
                            .checked_add(e.len as u64)
                            .is_some_and(|end| end <= self.layout.window)
                        {
                            // SAFETY: the range lies in the window (checked);
                            // the bounce buffer is ours until free_rq.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    self.win(from),
                                    payload.as_mut_ptr(),
                                    payload.len(),
                                )
                            };
                        }
                    }
                    got.push(RxMsg { entry: e, payload });
                }
                h.rings.free_rq(&self.board.bar0);
            }
        }
        if !got.is_empty() {
            self.rx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(got);
        }
    }

    /// Runs queued handlers (not re-entrantly).
    fn dispatch(&self) {
        if self
            .dispatching
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        loop {
            let m = self
                .rx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front();
            let Some(m) = m else { break };
            let e = &m.entry;
            let f = self
                .handlers
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(e.handler)
                .cloned();
            let Some(f) = f else {
                crate::report!(
                    "fshmem: PE {}: active message from PE {} names handler {} with no handler registered",
                    self.rank,
                    e.src,
                    e.handler
                );
                continue;
            };
            let msg = AmMessage {
                src: e.src,
                category: e.category,
                direction: e.direction,
                handler: e.handler,
                args: e.args.as_slice(),
                payload: &m.payload,
                offset: if e.category == Category::Long {
                    e.addr
                } else {
                    0
                },
            };
            let mut sink = Replier { c: self };
            let mut token = Token::new(e.src, e.direction, &mut sink);
            f(&mut token, &msg);
        }
        self.dispatching.store(false, Ordering::Release);
    }

    /// The attach health check: a loopback of a known pattern through
    /// every memory path; a failure names the path.
    pub fn health_check(&self) -> Result<()> {
        let base = self.layout.health;
        let me = self.rank;
        let pattern: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(37) ^ 0xA5) as u8)
            .collect();
        let fail = |path: HealthPath, what: String| {
            Err(ConduitError::Bootstrap(format!(
                "{}: health check failed on the {path} path: {what}",
                self.board.device
            )))
        };
        let mismatch = |a: &[u8], b: &[u8]| a.iter().zip(b).position(|(x, y)| x != y);
        // 1. Window stores, read back by a Get descriptor (to a second area).
        // SAFETY: the health area is 16 KiB inside the segment.
        unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), self.win(base), 4096) };
        let tag = {
            let mut h = self.lock();
            let tag = Self::fresh_tag(&mut h);
            h.expect(CtxId::DEFAULT, tag, Waiter::Keep);
            let d = Descriptor::Get {
                common: Self::common(tag, true),
                target: me as NodeId,
                remote: base,
                local: Local::Segment(base + 4096),
                len: 4096,
            };
            self.submit(&mut h, &d)?;
            tag
        };
        let c = self.wait_tag(tag)?;
        let mut back = vec![0u8; 4096];
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(self.win(base + 4096), back.as_mut_ptr(), 4096) };
        if !c.status.is_ok() {
            return fail(
                HealthPath::WindowToGet,
                format!("completion status {}", c.status),
            );
        }
        if let Some(i) = mismatch(&pattern, &back) {
            return fail(HealthPath::WindowToGet, format!("byte {i} differs"));
        }
        // 2. Inline put to self, read through the window.
        let inline = &pattern[..32];
        let tag = {
            let mut h = self.lock();
            let tag = Self::fresh_tag(&mut h);
            h.expect(CtxId::DEFAULT, tag, Waiter::Keep);
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: me as NodeId,
                remote: base + 8192,
                source: cmd::PutSource::Inline(
                    Inline::new(inline).map_err(|_| ConduitError::Unsupported("inline"))?,
                ),
            };
            self.submit(&mut h, &d)?;
            tag
        };
        let c = self.wait_tag(tag)?;
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(self.win(base + 8192), back.as_mut_ptr(), 32) };
        if !c.status.is_ok() {
            return fail(
                HealthPath::InlinePutToWindow,
                format!("completion status {}", c.status),
            );
        }
        if let Some(i) = mismatch(inline, &back[..32]) {
            return fail(HealthPath::InlinePutToWindow, format!("byte {i} differs"));
        }
        // 3. Put from the segment (the window-written pattern) to self.
        let tag = {
            let mut h = self.lock();
            let tag = Self::fresh_tag(&mut h);
            h.expect(CtxId::DEFAULT, tag, Waiter::Keep);
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: me as NodeId,
                remote: base + 12288,
                source: cmd::PutSource::Local {
                    addr: Local::Segment(base),
                    len: 4096,
                },
            };
            self.submit(&mut h, &d)?;
            tag
        };
        let c = self.wait_tag(tag)?;
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(self.win(base + 12288), back.as_mut_ptr(), 4096) };
        if !c.status.is_ok() {
            return fail(
                HealthPath::SegmentPutToWindow,
                format!("completion status {}", c.status),
            );
        }
        if let Some(i) = mismatch(&pattern, &back) {
            return fail(HealthPath::SegmentPutToWindow, format!("byte {i} differs"));
        }
        // 4. Atomics: fetch-add on a word written through the window.
        let word = base + 8192 + 64;
        let v0 = 0x0123_4567_89AB_CDEFu64;
        // SAFETY: an aligned word of the health area.
        unsafe { AtomicU64::from_ptr(self.win(word).cast()).store(v0, Ordering::Release) };
        let old = self.raw_atomic(
            CtxId::DEFAULT,
            me,
            word,
            AmoOp::FetchAdd,
            AmoWidth::W64,
            5,
            0,
            false,
        )?;
        let now = self.load64(word);
        if old != v0 || now != v0.wrapping_add(5) {
            return fail(
                HealthPath::Atomic,
                format!("fetched {old:#x} (expected {v0:#x}), word now {now:#x}"),
            );
        }
        // Leave the health area as the board left it: zeros.
        // SAFETY: as above.
        unsafe { std::ptr::write_bytes(self.win(base), 0, HEALTH_BYTES as usize) };
        Ok(())
    }

    /// Waits on an internal word until `done` holds, polling; `what`
    /// names it for a timeout report.
    fn wait_word(
        &self,
        off: u64,
        done: impl Fn(u64) -> bool,
        what: impl Fn() -> String,
    ) -> Result<()> {
        let mut b = Backoff::new();
        while !done(self.load64(off)) {
            self.poll()?;
            self.step_wait(&mut b, &what)?;
        }
        Ok(())
    }
}

/// Sends a handler's reply as an AM reply descriptor.
struct Replier<'a> {
    c: &'a FpgaConduit,
}

impl ReplySink for Replier<'_> {
    fn send_reply(
        &mut self,
        dst: NodeId,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> std::result::Result<(), AmError> {
        self.c
            .send_am(
                dst as usize,
                Direction::Reply,
                category,
                handler,
                args,
                payload,
                offset,
            )
            .map_err(|e| AmError::Transport(e.to_string()))
    }
}

impl Segments for FpgaConduit {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn segment_len(&self) -> usize {
        self.layout.segment_len as usize
    }

    fn local_segment(&self) -> *mut u8 {
        self.seg
    }

    fn peer_segment(&self, pe: usize) -> Option<*mut u8> {
        (pe == self.rank).then_some(self.seg)
    }

    /// The BAR2 file (devsim `bar2`, or the PCI `resource2_wc` /
    /// `resource2`) at the segment's offset in it (`SEG_BASE` = 0, page
    /// aligned). A layer that maps segment pages a second time (the C
    /// ABI's static data, see `shmem::static_data`) then maps the same
    /// window: with devsim, the board's DDR file; on a real board, board
    /// DDR behind the write-combining BAR2 window, so plain loads and
    /// stores to such pages cross PCIe.
    fn segment_backing(&self) -> Option<SegmentBacking> {
        Some(SegmentBacking {
            fd: self.board.bar2.fd(),
            offset: 0,
            len: self.layout.segment_len as usize,
        })
    }
}

impl Rma for FpgaConduit {
    fn ctx_create(&self) -> Result<CtxId> {
        let mut h = self.lock();
        if let Some(i) = h.ctxs.iter().skip(1).position(|c| !c.live) {
            h.ctxs[i + 1].live = true;
            return Ok(CtxId(i as u32 + 1));
        }
        if h.ctxs.len() >= MAX_CONTEXTS {
            return Err(ConduitError::ContextLimit { max: MAX_CONTEXTS });
        }
        h.ctxs.push(CtxState {
            live: true,
            ..CtxState::default()
        });
        Ok(CtxId(h.ctxs.len() as u32 - 1))
    }

    fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
        if ctx == CtxId::DEFAULT {
            return Err(ConduitError::NoContext { ctx: ctx.0 });
        }
        let r = self.quiet_ctx(ctx);
        let mut h = self.lock();
        let c = h.ctx(ctx)?;
        *c = CtxState::default();
        r
    }

    #[inline]
    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len())?;
        self.raw_put(ctx, pe, offset as u64, src.as_ptr(), src.len())
    }

    unsafe fn put_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len())?;
        self.raw_put(ctx, pe, offset as u64, src, len)
    }

    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(pe, self.size, offset, dst.len(), self.segment_len())?;
        let tags = self.raw_get(ctx, pe, offset as u64, dst.as_mut_ptr(), dst.len())?;
        self.wait_tags(ctx, &tags)
    }

    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len())?;
        self.raw_get(ctx, pe, offset as u64, dst, len).map(|_| ())
    }

    fn atomic(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        check_word(pe, self.size, offset, width.bytes(), self.segment_len())?;
        self.raw_atomic(ctx, pe, offset as u64, op, width, operand, compare, false)
    }

    fn put_signal(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: &[u8],
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len())?;
        check_word(pe, self.size, sig_offset, 8, self.segment_len())?;
        self.raw_put(ctx, pe, offset as u64, src.as_ptr(), src.len())?;
        let op = match sig_op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        };
        self.raw_atomic(
            ctx,
            pe,
            sig_offset as u64,
            op,
            AmoWidth::W64,
            sig_value,
            0,
            true,
        )
        .map(|_| ())
    }

    fn fence(&self, ctx: CtxId) -> Result<()> {
        let mut h = self.lock();
        h.ctx(ctx)?;
        if !h.dirty {
            return Ok(());
        }
        let tag = Self::fresh_tag(&mut h);
        let d = Descriptor::Fence {
            common: Self::common(tag, false),
        };
        self.submit(&mut h, &d)?;
        h.dirty = false;
        Ok(())
    }

    fn quiet(&self, ctx: CtxId) -> Result<()> {
        self.quiet_ctx(ctx)
    }
}

impl ActiveMessages for FpgaConduit {
    fn am_request(
        &self,
        pe: usize,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: usize,
    ) -> Result<()> {
        check_pe(pe, self.size)?;
        if category == Category::Long {
            check_range(pe, self.size, offset, payload.len(), self.segment_len())?;
        }
        self.send_am(
            pe,
            Direction::Request,
            category,
            handler,
            args,
            payload,
            offset as u64,
        )
    }

    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.handlers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .register_user(index, f)?;
        Ok(())
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.handlers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .register_system(index, f)?;
        Ok(())
    }

    fn poll(&self) -> Result<()> {
        {
            let mut h = self.lock();
            self.reap(&mut h);
        }
        self.drain_rq();
        self.dispatch();
        // Liveness (and a global exit), rate-limited: a few system calls
        // every 10 ms at most.
        if self.polls.fetch_add(1, Ordering::Relaxed) % POLL_CHECK_CALLS == 0 {
            let now = self.born.elapsed().as_nanos() as u64;
            let last = self.last_check.load(Ordering::Relaxed);
            if now.saturating_sub(last) >= POLL_CHECK_INTERVAL.as_nanos() as u64 {
                self.last_check.store(now, Ordering::Relaxed);
                self.slow_checks()?;
            }
        }
        Ok(())
    }
}

impl JobBootstrap for FpgaConduit {
    fn barrier(&self) -> Result<()> {
        self.quiet(CtxId::DEFAULT)?;
        let epoch = self.barrier_epoch.fetch_add(1, Ordering::AcqRel) + 1;
        let (me, n) = (self.rank, self.size);
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n {
            let to = (me + dist) % n;
            let off = self.layout.counter(round);
            self.raw_atomic(
                CtxId::DEFAULT,
                to,
                off,
                AmoOp::Add,
                AmoWidth::W64,
                1,
                0,
                false,
            )?;
            let from = (me + n - dist) % n;
            self.wait_word(
                off,
                |v| v >= epoch,
                || format!("the bootstrap barrier (round {round}: a signal from PE {from})"),
            )?;
            dist <<= 1;
            round += 1;
        }
        self.quiet(CtxId::DEFAULT)
    }

    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > EXCHANGE_MAX {
            return Err(ConduitError::Bootstrap(format!(
                "exchange contribution of {} bytes exceeds {EXCHANGE_MAX}",
                mine.len()
            )));
        }
        let generation = self.exchange_generation.fetch_add(1, Ordering::AcqRel);
        let mut buf = (mine.len() as u64).to_le_bytes().to_vec();
        buf.extend_from_slice(mine);
        for pe in 0..self.size {
            let at = self.layout.slot(generation, self.size, self.rank);
            self.raw_put(CtxId::DEFAULT, pe, at, buf.as_ptr(), buf.len())?;
        }
        self.barrier()?;
        let mut out = Vec::with_capacity(self.size);
        for r in 0..self.size {
            let at = self.layout.slot(generation, self.size, r);
            let len = (self.load64(at) as usize).min(EXCHANGE_MAX);
            let mut v = vec![0u8; len];
            // SAFETY: the slot lies in the bootstrap area of the segment.
            unsafe { std::ptr::copy_nonoverlapping(self.win(at + 8), v.as_mut_ptr(), len) };
            out.push(v);
        }
        Ok(out)
    }
}

impl Lifecycle for FpgaConduit {
    /// Attaches PE `job.rank` to the board the `FSHMEM_FPGA_DEVICE` setting
    /// names (or the `rank`-th board on the PCI bus), with a segment of its
    /// own in the board's DDR (a board cannot serve host memory:
    /// [`SegmentRequest::Over`] is refused). Collective: ends with a
    /// barrier over the job.
    fn attach(job: &JobEnv, segment: SegmentRequest, settings: &crate::Settings) -> Result<Self> {
        let SegmentRequest::Own(segment_len) = segment else {
            return Err(ConduitError::Unsupported(
                "fpga: a board's segment lives in its DDR; it cannot attach over host memory",
            ));
        };
        let device = Device::choose(settings.fpga_device.as_deref(), job.rank)?;
        let mut c = FpgaConduit::open(device, job.rank, job.size, segment_len)?;
        c.board_timeout = settings.peer_timeout;
        c.health_check()?;
        c.barrier()?;
        c.learn_peers()?;
        Ok(c)
    }

    /// Leaves the job: quiet and a barrier. Collective; idempotent.
    fn finalize(&self) -> Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.quiet(CtxId::DEFAULT)?;
        self.barrier()?;
        // From now on this PE's exit is not a failure for the others.
        // SAFETY: the state word is an aligned word of this PE's segment,
        // written only by this PE.
        let mine = unsafe { AtomicU64::from_ptr(self.win(self.layout.state_word()).cast()) };
        mine.fetch_or(STATE_FINALIZED, Ordering::AcqRel);
        Ok(())
    }

    fn global_exit(&self, status: i32) -> ! {
        let word = ((status as u32 & 0xFF) as u64) | 1 << 32;
        let bytes = word.to_le_bytes();
        for pe in (0..self.size).filter(|&p| p != self.rank) {
            let _ = self.raw_put(
                CtxId::DEFAULT,
                pe,
                self.layout.exit_word(),
                bytes.as_ptr(),
                8,
            );
        }
        let _ = self.quiet(CtxId::DEFAULT);
        crate::wait::exit_job(status)
    }
}

#[cfg(test)]
mod tests;
