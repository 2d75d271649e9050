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
//! every context's later commands after every earlier one written to the
//! board (stronger than the contract asks, never weaker).
//!
//! The board's one queue is written by the thread that holds the host's
//! lock. On a context other than the default one, a put (inline, or
//! staged from the conduit's own copy of its bytes), `put_nbi`, a
//! non-fetching atomic, a put-with-signal or a fence never waits for that
//! lock: if another thread holds it, the operation joins its context's
//! queue in host memory, and the holder writes every queued item, in each
//! queue's order, when it takes the lock and as it lets go of it
//! (the `host` module tells how nothing is left behind). So each context's
//! commands reach the board in issue order, and a fence's descriptor lands
//! between its context's earlier and later ones. Operations that wait for
//! a value (gets, fetching atomics), `get_nbi`, active messages and every
//! operation of the default context take the lock, writing the queued
//! items first: a blocking get sees every earlier put of this PE, whatever
//! its context. A full board queue is still back-pressure: the writer
//! reaps completions until a slot frees.
//!
//! # Active messages
//!
//! Requests and replies are AM descriptors (Medium/Long payloads staged);
//! incoming messages for host handlers arrive in the receive queue and are
//! dispatched from [`ActiveMessages::poll`] through the [`HandlerTable`]; a
//! handler's reply is an AM reply descriptor. On a board with a compute
//! core (`CAPS.COMPUTE`) requests to handlers
//! `gasnet_core::handlers::FIRST_COMPUTE..=255` run on the board, never on
//! a host handler: [`ActiveMessages::register_handler`] refuses those
//! indices there, and a request the core drops is reported
//! (`ERR_STATUS.COMPUTE`, below).
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
//! - `ERR_STATUS.COMPUTE` of this PE's board: its compute core dropped a
//!   request it could neither run nor answer (the sender and the handler
//!   in `ERR_INFO`; checked at finalize too);
//! - this PE's board: its `UPTIME` register stood still for the peer timeout
//!   (the board stopped), or `MAGIC` no longer reads right (it is gone);
//! - a peer PE on this host whose process ended: the conduit reads the
//!   peer's *state word* in the peer's segment with an atomic fetch through
//!   the board network (`spec/registers.md` §5.1); it finalized, or it
//!   failed, or it left because the PE it names failed — followed to the PE
//!   that failed first, which this PE records in its own state word before
//!   it leaves.
//!
//! Each fails the call with [`ConduitError::PeerFailed`] naming the PE
//! (a dropped compute request with [`AmError::ComputeRejected`]).
//! Waits that make no progress for `FSHMEM_WAIT_TIMEOUT` fail with
//! [`ConduitError::Timeout`] naming what they await.

mod am;
pub mod bar;
mod boot;
mod health;
mod host;
pub mod launch;
mod liveness;
mod ops;
pub mod queue;
mod rma;
mod stage;

use am::RxMsg;
pub use health::HealthPath;
use host::{CtxState, Host, TagMap, Waiter};
use liveness::{POLL_CHECK_CALLS, PeerInfo, STATE_FINALIZED};
use stage::{Stage, round_up};

use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::liveness::{host_name, process_alive, process_stopped, root_of};
use crate::wait::Backoff;
use bar::{Board, Device};
use gasnet_core::cmd::{
    self, AmBody, Args, Common, Completion, Descriptor, Inline, Local, MAX_INLINE, RxEntry, ctrl,
    err, regs, status,
};
use gasnet_core::engine::layout::engine_owned;
use gasnet_core::{AmError, AmMessage, Direction, HandlerTable, NodeId, ReplySink, Token};
use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};
use queue::Rings;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SendError, Sender};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
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

/// A PE attached to its board. `Send + Sync`; the rings are behind a lock.
pub struct FpgaConduit {
    rank: usize,
    size: usize,
    board: Board,
    layout: Layout,
    /// The segment in this process (BAR2 at `SEG_BASE` = 0).
    seg: *mut u8,
    host: Mutex<Host>,
    /// Every context's state, indexed by [`CtxId::index`] (shared with
    /// [`Host`]): the put path reads and counts it without the lock.
    ctxs: Arc<[CtxState]>,
    /// Items sent to a context's queue and not yet written by the lock's
    /// holder (signed: a holder may take an item before its sender counts
    /// it). Read by every thread that lets go of the lock.
    queued: AtomicI64,
    /// Bytes those items hold ([`host::QUEUED_BYTES_MAX`]).
    queued_bytes: AtomicU64,
    handlers: RwLock<HandlerTable>,
    rx: Mutex<VecDeque<RxMsg>>,
    dispatching: AtomicBool,
    /// The first message that named a handler this PE has not registered,
    /// not yet reported by [`ActiveMessages::poll`].
    unhandled: Mutex<Option<AmError>>,
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
    /// Since when each peer process of this host has been seen stopped
    /// (SIGSTOP), if it is.
    stopped_since: Mutex<Vec<Option<Instant>>>,
    /// How long the board's `UPTIME` may stand still (the peer timeout).
    board_timeout: Duration,
    /// Calls of [`ActiveMessages::poll`] (its liveness check is rate-limited).
    polls: AtomicU32,
    /// When the slow checks last ran, from a wait or `poll` (ns since
    /// `born`; [`FpgaConduit::check_due`]).
    last_check: AtomicU64,
    born: Instant,
}

// SAFETY: the raw pointers name the BAR2 mapping owned by `board`, which
// lives as long as the conduit; ring state and the queues' receiving ends
// are behind the Mutex, each context's state is atomics, a Mutex and a
// channel sender (all Sync, the items they carry owned data), handler
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

impl FpgaConduit {
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
        if board.waker.is_some() {
            // A board model, a process of this host on the same CPUs (the
            // doze protocol is a model's, spec/registers.md §13): every
            // wait of this PE yields at once, so that the board runs
            // while the PE waits for it.
            crate::wait::yield_at_once();
        }
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
            board.wake();
            bring_up("disable", &|| {
                bar0.read32(regs::STATUS) & status::READY == 0
            })?;
        }
        bar0.write32(regs::CTRL, ctrl::RESET);
        board.wake();
        bring_up("soft reset", &|| bar0.read32(regs::CTRL) & ctrl::RESET == 0)?;
        if let Device::Devsim(_) = &dev {
            // A devsim board's DDR is a sparse file (in /dev/shm under
            // oshrun) that the reset has just emptied: reserve the part
            // this PE uses, so that a file system too small for it is an
            // error now rather than a SIGBUS in the board or here later.
            let (_, path) = dev.bar_paths();
            crate::backing::reserve(
                board.bar2.file(),
                0,
                layout.window,
                &path.display().to_string(),
                crate::backing::Space::Dir(path.parent().unwrap_or(&path)),
            )?;
        }
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
        board.wake();
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
        let ctxs: Arc<[CtxState]> = (0..MAX_CONTEXTS).map(|_| CtxState::default()).collect();
        ctxs[CtxId::DEFAULT.index()]
            .live
            .store(true, Ordering::Release);
        Ok(FpgaConduit {
            rank,
            size,
            layout,
            seg,
            host: Mutex::new(Host {
                rings,
                next_tag: 0,
                waiting: TagMap::default(),
                ctxs: ctxs.clone(),
                queues: Vec::new(),
                done: TagMap::default(),
                stage: Stage::new(layout.stage, STAGE_BYTES),
                dirty: false,
            }),
            ctxs,
            queued: AtomicI64::new(0),
            queued_bytes: AtomicU64::new(0),
            board,
            handlers: RwLock::new(HandlerTable::new()),
            rx: Mutex::new(VecDeque::new()),
            dispatching: AtomicBool::new(false),
            unhandled: Mutex::new(None),
            barrier_epoch: AtomicU64::new(0),
            exchange_generation: AtomicU64::new(0),
            finalized: AtomicBool::new(false),
            peers: OnceLock::new(),
            peer_finalized: (0..size).map(|_| AtomicBool::new(false)).collect(),
            checking_peers: AtomicBool::new(false),
            uptime: Mutex::new((uptime, Instant::now())),
            stopped_since: Mutex::new(vec![None; size]),
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
        Ok(h.ctx(ctx)?.outstanding())
    }

    /// Holds the host's lock (the board's command queue) until the guard
    /// drops, as a thread writing commands does (tests: a busy engine).
    #[cfg(test)]
    fn hold_engine(&self) -> host::HostGuard<'_> {
        self.lock()
    }

    /// The segment layout in use.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The mapped board.
    pub fn board(&self) -> &Board {
        &self.board
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

impl Lifecycle for FpgaConduit {
    /// Attaches PE `job.rank` to the board the `FSHMEM_FPGA_DEVICE` setting
    /// names (or the `rank`-th board on the PCI bus), with a segment of its
    /// own in the board's DDR (a board cannot serve host memory:
    /// [`SegmentRequest::Over`] is refused). Collective: ends with a
    /// barrier over the job.
    fn attach(
        job: &JobEnv,
        segment: SegmentRequest,
        settings: &crate::config::Settings,
    ) -> Result<Self> {
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
        // A compute request a peer sent this PE before its barrier signal
        // to this PE has reached the board by now (packets between two
        // boards keep their order), and the board judged it before it went
        // on to the signal (`spec/registers.md` §4.4.1): if it dropped one,
        // say so now rather than leave. (A request from a peer whose signal
        // came by way of other PEs could in principle still be on its way;
        // the board reports such a one on its own stderr too.)
        self.compute_check()?;
        // Likewise a user request a peer sent before its barrier signal is
        // in this PE's receive queue by now, though the barrier's last look
        // at the queue may have come before it arrived: serve what is
        // there, so that a message to a handler nobody registered is
        // reported here rather than left unread.
        self.poll()?;
        // From now on this PE's exit is not a failure for the others.
        // SAFETY: the state word is an aligned word of this PE's segment,
        // written only by this PE.
        let mine = unsafe { AtomicU64::from_ptr(self.win(self.layout.state_word()).cast()) };
        mine.fetch_or(STATE_FINALIZED, Ordering::AcqRel);
        Ok(())
    }

    fn global_exit(&self, status: i32) -> ! {
        crate::wait::note_exit_from(self.rank);
        let word = crate::wait::exit_word(status, self.rank);
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
