//! The RTL core on a devsim board (the `rtl` feature): the Verilator model
//! of `hw/` (`fshmem_hw::Board`) driven cycle by cycle behind the same BAR
//! files and UDP links as the reference engine, so the host cannot tell
//! which core it drives.
//!
//! One file (about 900 lines) for one job, the `RtlBoard` and the BAR2
//! memory it is served from: most of it is the one `impl RtlBoard` that
//! maps the core's ports to the files and sockets.
//!
//! # BAR0: the file mirrors the core's registers
//!
//! In hardware BAR0 is the core's register file; here it is a file the
//! host maps, so each [`RtlBoard::step`] moves state both ways:
//!
//! - *Host to core.* The registers a host writes (`CTRL`, the
//!   configuration, `DOORBELL`, `CQ_HEAD`, `RQ_HEAD`, `IRQ_MASK` and the
//!   write-1-to-clear `ERR_STATUS` and `IRQ_STATUS`) are compared with the
//!   value devsim last left in the file; a different value is a host store
//!   and becomes a BAR0 store on the core's bus. A new `DOORBELL` value
//!   first copies the command slots between the core's `SQ_TAIL` and the new
//!   tail from the file's command ring into the core's, a word a cycle, as
//!   the host's stores would have reached the core's ring RAM. `CTRL` and
//!   `DOORBELL` are read first (Acquire), so the stores the host made before
//!   them are seen.
//! - *Core to host.* After the cycles of a step, the core's status,
//!   indices and errors are loaded over its bus (one load a cycle,
//!   `Board::read_burst`) and stored into the file; each new completion and
//!   receive entry is copied from the core's rings into the file's, its
//!   phase word last, so a host that sees the phase sees the whole entry.
//!   A register the host also writes is updated with a compare-and-swap
//!   from the value devsim left there: a host store in between is never
//!   lost (the next step passes it on). `UPTIME` is refreshed every 2 ms,
//!   the counters and link registers every 50 ms, identity and
//!   configuration after a reset or a configuration or `CTRL` store.
//!   `DOORBELL` reads back the last value written (the core's reads 0).
//!
//! A soft reset (`CTRL.RESET`) resets the core, and devsim clears the rest
//! of the file and zeroes the DDR as it does for the engine.
//!
//! # Memory, links and time
//!
//! The AXI4 port is served from the BAR2 file (`Bar2Mem`) with a latency
//! of `--mem-latency` cycles for reads and write responses. The two link
//! ports are devsim's UDP ports: each frame the core sends is one datagram
//! to the board its header names, without devsim's reliable transport
//! (the core has its own sequence numbers, acknowledgements and
//! retransmission); `--impair` drops, duplicates and delays these
//! datagrams as it does the engine's. The frames the core sends leave in
//! the order they ended, whichever port they took (their sequence numbers
//! follow that order). Datagrams that waited in a socket enter a port at
//! most one frame every 16 cycles: the core drops a frame its receive
//! buffer has no room for (its sender goes back and resends from it), and
//! a socket's backlog fed back to back overflowed that buffer: up to half
//! the frames of a collectives run were resent.
//!
//! The core's microsecond tick (`UPTIME`, retransmission and peer
//! timeouts) follows wall time at most one tick a cycle: the model runs a
//! few hundred thousand cycles a second, so a busy board's microsecond
//! lasts about one cycle of simulation and its timeouts last several
//! times their wall-clock value; an idle board is clocked in short bursts
//! that keep `UPTIME` moving for the host's heartbeat check. So is a board whose
//! only work is frames waiting for their acknowledgement (the core's
//! `armed` without `busy`): clocking it at full speed would only run its
//! retransmission timers, on cores that the peer it waits for needs (3
//! boards' collectives took 5 times as long as 2 boards' that way).
//!
//! # The compute kernel
//!
//! The core is built with a kernel on its kernel port (`strap_compute`,
//! so `CAPS.COMPUTE`), unless the board is made without one: requests to
//! handlers 224..=255 leave the core there and go to a [`ComputeCore`]
//! (devsim's GEMM tile engine), as user logic beside the core takes them
//! on a board. The kernel reads and writes the segment directly (a board's
//! kernel has its own memory port) and gives the core commands of its own
//! through the port: a segment-path Put for each run of results (Automatic
//! Result Transfer) and a Short reply when a tile is done. Their
//! completions come back to the kernel, never to the host's queue; a
//! kernel command that fails is reported on stderr. The kernel takes each
//! request before the core goes on (`kam_ready` is held low until the
//! next step has judged it): a request it can neither run nor answer goes
//! to the port's error input, which sets `ERR_STATUS.COMPUTE` for the host
//! (`spec/registers.md` §4.4.1), and that is in the file before the core
//! handles the sender's next frame. Without
//! a kernel (`strap_compute` 0) the core delivers those requests to the
//! host like any other handler's.

use crate::bar::Bar;
use crate::board::punch;
use crate::compute::{Action, ComputeCore, ComputeCtx};
use crate::core::{BoardCore, Doze};
use crate::link::UdpLink;
use crate::window::Window;
use fshmem_hw::{BEAT, Board, BoardConfig, Dram};
use gasnet_core::cmd::{
    self, AmBody, Args, COMPLETION_BYTES, Common, Completion, Descriptor, Local, PutSource,
    RX_ENTRY_BYTES, ctrl, err, regs,
};
use gasnet_core::impair::{Impair, Impairer};
use gasnet_core::{Direction, NodeId};
use std::collections::HashMap;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
use std::time::{Duration, Instant};

/// Settings of an RTL board.
#[derive(Clone, Copy, Debug)]
pub struct RtlSettings {
    /// Cycles from a memory read request to its data, and from a write's
    /// last beat to its response.
    pub mem_latency: u32,
    /// A silent peer's limit (the core's peer timeout, in its ticks).
    pub peer_timeout: Duration,
    /// Link impairment (tests).
    pub impair: Option<Impair>,
}

/// First retransmission timeout, in core ticks: a busy board's tick lasts
/// about a cycle of simulation, and a round trip between two board
/// processes takes a few hundred cycles, many thousands when a loaded
/// machine deschedules a board. (Gaps are repaired sooner, by NACK.)
const RTO_TICKS: u32 = 20_000;
/// Largest retransmission timeout, in core ticks.
const RTO_MAX_TICKS: u32 = 1_000_000;
/// Ticks between two NACKs to one peer: a retransmission takes hundreds
/// of cycles (ticks) to arrive, and NACKs repeated sooner only resend it.
const NACK_HOLD_TICKS: u16 = 1_000;
/// Cycles clocked per step while the core has work.
const BATCH: usize = 64;
/// Cycles from the start of one received frame to the next on a port.
const RX_GAP: u32 = 16;
/// A batch ends early once the core is found idle, checked this often.
const IDLE_CHECK: usize = 8;
/// Most cycles a step clocks to deliver owed ticks to a core that waits
/// for a peer's frame or for its retransmission timers (stalled, or
/// frames awaiting acknowledgement): its timers run at most this many
/// ticks a step (fewer made a lossy run three times as long).
const WAIT_CYCLES: u64 = 64;
/// As [`WAIT_CYCLES`] for an idle core: ticks move only `UPTIME` and
/// its peer timeouts, which may run late.
const IDLE_CYCLES: u64 = 16;
/// Datagrams taken from the sockets per step at most.
const RECV_BURST: usize = 64;
/// How often `UPTIME` is refreshed, and the counters and link registers.
const UPTIME_EVERY: Duration = Duration::from_millis(2);
const COUNTERS_EVERY: Duration = Duration::from_millis(50);

/// The registers a host writes, in the order a step reads them (`CTRL`
/// and `DOORBELL` first, so that every store the host made before them is
/// visible in the reads that follow).
const HOST_CELLS: [usize; 15] = [
    regs::CTRL,
    regs::DOORBELL,
    regs::NODE_ID,
    regs::NODE_COUNT,
    regs::SEG_BASE_LO,
    regs::SEG_BASE_HI,
    regs::SEG_SIZE_LO,
    regs::SEG_SIZE_HI,
    regs::RX_BOUNCE_LO,
    regs::RX_BOUNCE_HI,
    regs::CQ_HEAD,
    regs::RQ_HEAD,
    regs::IRQ_MASK,
    regs::ERR_STATUS,
    regs::IRQ_STATUS,
];
const CELL_CTRL: usize = 0;
const CELL_DOORBELL: usize = 1;
/// Cells `2..CONFIG_END` are the configuration registers.
const CONFIG_END: usize = 10;

/// Loaded every step: (offset, whether the host writes it too).
const FAST: [(usize, bool); 8] = [
    (regs::SQ_HEAD, false),
    (regs::CQ_TAIL, false),
    (regs::RQ_TAIL, false),
    (regs::STATUS, false),
    (regs::ERR_INFO, false),
    (regs::ERR_STATUS, true),
    (regs::IRQ_STATUS, true),
    // Last: a host waiting on CTRL sees everything else first.
    (regs::CTRL, true),
];

/// Loaded after a reset or a configuration store (besides the rest).
const IDENTITY: [(usize, bool); 26] = [
    (regs::MAGIC, false),
    (regs::VERSION, false),
    (regs::CAPS, false),
    (regs::BUILD_ID, false),
    (regs::NODE_ID, true),
    (regs::NODE_COUNT, true),
    (regs::WINDOW_SIZE_LO, false),
    (regs::WINDOW_SIZE_HI, false),
    (regs::SEG_BASE_LO, true),
    (regs::SEG_BASE_HI, true),
    (regs::SEG_SIZE_LO, true),
    (regs::SEG_SIZE_HI, true),
    (regs::RX_BOUNCE_LO, true),
    (regs::RX_BOUNCE_HI, true),
    (regs::SQ_BASE, false),
    (regs::SQ_SIZE, false),
    (regs::SQ_TAIL, false),
    (regs::CQ_BASE, false),
    (regs::CQ_SIZE, false),
    (regs::CQ_HEAD, true),
    (regs::RQ_BASE, false),
    (regs::RQ_SIZE, false),
    (regs::RQ_HEAD, true),
    (regs::IRQ_MASK, true),
    (regs::UPTIME_LO, false),
    (regs::UPTIME_HI, false),
];

/// The counters and the link port blocks.
fn counter_cells() -> Vec<(usize, bool)> {
    let mut v: Vec<(usize, bool)> = (0..16)
        .map(|i| (regs::CNT_COMMANDS + 4 * i, false))
        .collect();
    for port in 0..cmd::LINK_PORTS {
        for r in [
            regs::LINK_STATUS,
            regs::LINK_PEER,
            regs::LINK_CRC_ERRORS,
            regs::LINK_RETRAINS,
        ] {
            v.push((regs::link(port, r), false));
        }
    }
    v
}

/// The BAR2 file as the core's AXI memory. Every access is a bounds-checked
/// copy or atomic store on the shared mapping (the host maps the same bytes
/// and may read or write them at any time).
#[derive(Debug)]
pub struct Bar2Mem {
    bar: Bar,
}

fn in_range(len: usize, addr: u64, n: usize) -> Option<usize> {
    let end = addr.checked_add(n as u64)?;
    (end <= len as u64).then_some(addr as usize)
}

impl Dram for Bar2Mem {
    fn len(&self) -> u64 {
        self.bar.len() as u64
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        let Some(a) = in_range(self.bar.len(), addr, buf.len()) else {
            return false;
        };
        // SAFETY: `a..a + buf.len()` lies in the mapping (checked), which
        // lives as long as self; the bytes are copied through raw pointers,
        // never seen through a reference.
        unsafe { std::ptr::copy(self.bar.ptr().add(a), buf.as_mut_ptr(), buf.len()) };
        true
    }

    fn write(&mut self, addr: u64, data: &[u8], strobe: u32) -> bool {
        if data.len() > BEAT {
            return false;
        }
        let Some(a) = in_range(self.bar.len(), addr, data.len()) else {
            return false;
        };
        let mut i = 0;
        while i < data.len() {
            // SAFETY: `a + i` (and the 8 bytes from it when a whole word is
            // stored) lie in the mapping, checked above.
            let at = unsafe { self.bar.ptr().add(a + i) };
            if (a + i) % 8 == 0 && i + 8 <= data.len() && (strobe >> i) & 0xFF == 0xFF {
                let mut w = [0u8; 8];
                w.copy_from_slice(&data[i..i + 8]);
                // SAFETY: `at..at + 8` lies in the mapping and `at` is 8-byte
                // aligned (both checked); the word is stored as one atomic, so
                // a host polling it never sees it torn.
                unsafe { AtomicU64::from_ptr(at.cast()) }
                    .store(u64::from_le_bytes(w), Ordering::Release);
                i += 8;
                continue;
            }
            if strobe >> i & 1 == 1 {
                // SAFETY: `at` lies in the mapping (checked); a raw store,
                // no reference to shared bytes is formed.
                unsafe { at.write_volatile(data[i]) };
            }
            i += 1;
        }
        true
    }
}

/// A devsim board whose core is the RTL model. See the [module docs](self).
pub struct RtlBoard {
    dir: PathBuf,
    doze: Doze,
    node: u16,
    bar0: Bar,
    board: Board<Bar2Mem>,
    udp: UdpLink,
    impair: Option<Impairer>,
    buf: Vec<u8>,
    /// Frames received and not yet given to a port, and the cycles before
    /// a port takes the next one.
    rx_queue: [VecDeque<Vec<u8>>; 2],
    rx_gap: [u32; 2],
    /// The value devsim last left in each of [`HOST_CELLS`].
    shadow: [u32; HOST_CELLS.len()],
    /// The next completion and receive entries to copy into the file.
    cq_seen: u32,
    rq_seen: u32,
    /// Wall time accounted in ticks so far, and ticks not yet given.
    tick_at: Instant,
    owed: u64,
    uptime_at: Instant,
    counters_at: Instant,
    counters: Vec<(usize, bool)>,
    peer_reported: bool,
    /// The last full batch moved nothing across the core's edges: it
    /// waits for a peer's frame or the tick (see `step`).
    stalled: bool,
    /// The kernel on the core's kernel port, if the board has one, how to
    /// make a fresh one (a soft reset drops its work), and its actions not
    /// yet submitted.
    compute: Option<Box<dyn ComputeCore>>,
    new_compute: Option<fn() -> Box<dyn ComputeCore>>,
    actions: Vec<Action>,
    /// The segment and job as the core holds them once enabled.
    kernel_cfg: Option<KernelCfg>,
    /// Tags of the kernel's commands: the next, and the kernel's name for
    /// each put in flight.
    kernel_tag: u32,
    kernel_puts: HashMap<u32, u64>,
}

/// What the kernel sees of its board, read from the core when it is
/// enabled.
#[derive(Clone, Copy, Debug)]
struct KernelCfg {
    mem: Window,
    node: NodeId,
    nodes: usize,
}

impl std::fmt::Debug for RtlBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtlBoard")
            .field("dir", &self.dir)
            .field("node", &self.node)
            .field("cycles", &self.board.cycles())
            .finish_non_exhaustive()
    }
}

impl RtlBoard {
    /// Creates the board's files in `dir` (`bar0`, a sparse `bar2` of
    /// `window` bytes rounded up to a power of two, the doze word and wake
    /// socket of `spec/registers.md` §13) and the core behind
    /// them, node `node` of `nodes`, its links on `udp` (peer table set),
    /// with the kernel `new_compute` makes on its kernel port (none: a core
    /// without a kernel, `CAPS.COMPUTE` 0).
    pub fn create(
        dir: &Path,
        node: u16,
        nodes: u16,
        window: u64,
        udp: UdpLink,
        s: RtlSettings,
        new_compute: Option<fn() -> Box<dyn ComputeCore>>,
    ) -> Result<RtlBoard, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let window = window.max(1 << 20).next_power_of_two();
        let bar0 = Bar::create(&dir.join(cmd::BOARD_FILE_BAR0), cmd::BAR0_SIZE as u64)
            .map_err(|e| format!("cannot create {}: {e}", cmd::BOARD_FILE_BAR0))?;
        let bar2 = Bar::create(&dir.join(cmd::BOARD_FILE_BAR2), window)
            .map_err(|e| format!("cannot create {}: {e}", cmd::BOARD_FILE_BAR2))?;
        let doze = Doze::create(dir).map_err(|e| format!("cannot create the doze files: {e}"))?;
        let cfg = BoardConfig {
            node,
            nodes: nodes.max(1),
            mem_latency: s.mem_latency.max(1),
            mem_write_latency: s.mem_latency.max(1),
            mem_stall_percent: 0,
            cycles_per_tick: None,
            rto_ticks: RTO_TICKS,
            rto_max_ticks: RTO_MAX_TICKS,
            peer_timeout_ticks: s.peer_timeout.as_micros().min(u32::MAX as u128) as u32,
            nack_hold_ticks: NACK_HOLD_TICKS,
            compute: new_compute.is_some(),
            ..BoardConfig::default()
        };
        let mut board = Board::new(cfg, Bar2Mem { bar: bar2 })
            .map_err(|e| format!("cannot start the RTL core model: {e}"))?;
        // The kernel judges each request before the core goes on (see
        // `run_kernel`).
        board.hold_kernel_requests(new_compute.is_some());
        let seed = 0x05ee_d0fb_0a2d ^ (node as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let now = Instant::now();
        let mut b = RtlBoard {
            dir: dir.to_path_buf(),
            doze,
            node,
            bar0,
            board,
            udp,
            impair: s.impair.map(|f| Impairer::new(f, seed, node)),
            buf: vec![0; 1 << 16],
            rx_queue: Default::default(),
            rx_gap: [0; 2],
            stalled: false,
            shadow: [0; HOST_CELLS.len()],
            cq_seen: 0,
            rq_seen: 0,
            tick_at: now,
            owed: 0,
            uptime_at: now,
            counters_at: now,
            counters: counter_cells(),
            peer_reported: false,
            compute: new_compute.map(|f| f()),
            new_compute,
            actions: Vec::new(),
            kernel_cfg: None,
            kernel_tag: 0,
            kernel_puts: HashMap::new(),
        };
        let sizes = b.load(&[regs::SQ_SIZE, regs::CQ_SIZE, regs::RQ_SIZE]);
        let want = [cmd::SQ_ENTRIES, cmd::CQ_ENTRIES, cmd::RQ_ENTRIES];
        if sizes != want {
            return Err(format!(
                "the RTL core's rings (SQ, CQ, RQ entries {sizes:?}) differ from the \
                 interface's {want:?}: rebuild devsim"
            ));
        }
        b.publish(true);
        Ok(b)
    }

    /// The board's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Core cycles clocked so far.
    pub fn cycles(&self) -> u64 {
        self.board.cycles()
    }

    fn load(&mut self, offsets: &[usize]) -> Vec<u32> {
        let mut v = vec![0u32; offsets.len()];
        self.board.read_burst(offsets, &mut v);
        v
    }

    /// Host to core: passes on what the host stored since the last step.
    /// Returns whether there was anything.
    fn take_host_stores(&mut self) -> bool {
        let mut now = [0u32; HOST_CELLS.len()];
        for (v, &off) in now.iter_mut().zip(&HOST_CELLS) {
            *v = self.bar0.read32(off);
        }
        if now == self.shadow {
            return false;
        }
        let ctrl_stored = now[CELL_CTRL] != self.shadow[CELL_CTRL];
        if ctrl_stored && now[CELL_CTRL] & ctrl::RESET != 0 {
            self.board.write32(regs::CTRL, now[CELL_CTRL]);
            self.reset_files(now[CELL_CTRL]);
            self.publish(true);
            return true;
        }
        let mut config = false;
        for i in CELL_DOORBELL + 1..HOST_CELLS.len() {
            if now[i] != self.shadow[i] {
                self.board.write32(HOST_CELLS[i], now[i]);
                self.shadow[i] = now[i];
                config |= i < CONFIG_END;
            }
        }
        if ctrl_stored {
            self.board.write32(regs::CTRL, now[CELL_CTRL]);
            self.shadow[CELL_CTRL] = now[CELL_CTRL];
        }
        if now[CELL_DOORBELL] != self.shadow[CELL_DOORBELL] {
            self.ring_doorbell(now[CELL_DOORBELL]);
            self.shadow[CELL_DOORBELL] = now[CELL_DOORBELL];
        }
        self.publish(config || ctrl_stored);
        true
    }

    /// Copies the command slots from the core's tail up to `tail` into the
    /// core's ring, then stores `DOORBELL`.
    fn ring_doorbell(&mut self, tail: u32) {
        if tail < cmd::SQ_ENTRIES {
            let mut at = self.board.read32(regs::SQ_TAIL) % cmd::SQ_ENTRIES;
            while at != tail {
                let slot = regs::SQ_RING + cmd::SLOT_BYTES * at as usize;
                for w in 0..cmd::SLOT_BYTES / 4 {
                    let v = self.bar0.read32(slot + 4 * w);
                    self.board.write32(slot + 4 * w, v);
                }
                at = (at + 1) % cmd::SQ_ENTRIES;
            }
        }
        // An out-of-range value goes to the core as well: it reports it.
        self.board.write32(regs::DOORBELL, tail);
    }

    /// A soft reset: the file as a board just reset shows it (all zero but
    /// `CTRL`, which the next publish fills in), the DDR zeroed.
    fn reset_files(&mut self, ctrl_value: u32) {
        let at = regs::CTRL;
        // SAFETY: BAR0 is this board's mapping of BAR0_SIZE bytes; zero all
        // of it but CTRL (the host polls it) through raw pointers.
        unsafe {
            std::ptr::write_bytes(self.bar0.ptr(), 0, at);
            std::ptr::write_bytes(self.bar0.ptr().add(at + 4), 0, cmd::BAR0_SIZE - at - 4);
        }
        punch(&self.board.dram().bar, &self.dir.join(cmd::BOARD_FILE_BAR2));
        self.shadow = [0; HOST_CELLS.len()];
        self.shadow[CELL_CTRL] = ctrl_value;
        self.cq_seen = 0;
        self.rq_seen = 0;
        self.peer_reported = false;
        self.compute = self.new_compute.map(|f| f());
        self.actions.clear();
        self.kernel_cfg = None;
        self.kernel_puts.clear();
    }

    /// Stores a core register's value into the file: plainly for a
    /// register only the board writes, by compare-and-swap from the value
    /// devsim left there for one the host writes too.
    fn put(&mut self, off: usize, v: u32, host_writes: bool) {
        if !host_writes {
            self.bar0.write32(off, v);
            return;
        }
        let Some(i) = HOST_CELLS.iter().position(|&c| c == off) else {
            self.bar0.write32(off, v);
            return;
        };
        let cell: &AtomicU32 = self.bar0.reg(off);
        if cell
            .compare_exchange(self.shadow[i], v, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.shadow[i] = v;
        }
    }

    /// Core to host: rings first, then registers (`CTRL` last). `all`
    /// also refreshes identity, configuration, counters and links.
    fn publish(&mut self, all: bool) {
        let offs: Vec<usize> = FAST.iter().map(|c| c.0).collect();
        let fast = self.load(&offs);
        self.copy_completions(fast[1]);
        self.copy_receives(fast[2]);
        let now = Instant::now();
        if all || now.duration_since(self.counters_at) >= COUNTERS_EVERY {
            self.counters_at = now;
            let cells = std::mem::take(&mut self.counters);
            let offs: Vec<usize> = cells.iter().map(|c| c.0).collect();
            let v = self.load(&offs);
            for (&(off, h), v) in cells.iter().zip(v) {
                self.put(off, v, h);
            }
            self.counters = cells;
        }
        if all {
            let offs: Vec<usize> = IDENTITY.iter().map(|c| c.0).collect();
            let v = self.load(&offs);
            for (&(off, h), &v) in IDENTITY.iter().zip(&v) {
                self.put(off, v, h);
            }
            self.uptime_at = now;
            let reg = |r: usize| IDENTITY.iter().position(|c| c.0 == r).map_or(0, |i| v[i]);
            let wide = |lo: usize, hi: usize| reg(lo) as u64 | (reg(hi) as u64) << 32;
            let enabled = fast[7] & ctrl::ENABLE != 0;
            self.kernel_cfg = self.kernel_view(
                enabled,
                wide(regs::SEG_BASE_LO, regs::SEG_BASE_HI),
                wide(regs::SEG_SIZE_LO, regs::SEG_SIZE_HI),
                reg(regs::NODE_ID),
                reg(regs::NODE_COUNT),
            );
        } else if now.duration_since(self.uptime_at) >= UPTIME_EVERY {
            self.uptime_at = now;
            let v = self.load(&[regs::UPTIME_LO, regs::UPTIME_HI]);
            self.bar0
                .write64(regs::UPTIME_LO, v[0] as u64 | (v[1] as u64) << 32);
        }
        for (&(off, h), &v) in FAST.iter().zip(&fast) {
            self.put(off, v, h);
        }
        if fast[5] & err::PEER_TIMEOUT != 0 && !self.peer_reported {
            self.peer_reported = true;
            crate::report(&format!(
                "devsim board {} (rtl): peer board {} stopped answering (ERR_STATUS.PEER_TIMEOUT)",
                self.node, fast[4]
            ));
        }
    }

    /// The kernel's view of an enabled core's configuration: its segment
    /// as a window on the BAR2 mapping, or nothing while the core is
    /// disabled or if the segment does not lie in the mapping (the core
    /// refuses such a configuration when it is enabled).
    fn kernel_view(
        &self,
        enabled: bool,
        base: u64,
        size: u64,
        node: u32,
        nodes: u32,
    ) -> Option<KernelCfg> {
        let bar = &self.board.dram().bar;
        let end = base.checked_add(size)?;
        if !enabled || end > bar.len() as u64 {
            return None;
        }
        // SAFETY: base..base + size lies in the BAR2 mapping (checked just
        // above), which the board owns and keeps mapped for its lifetime;
        // the window is dropped with the board (or replaced on a reset or
        // a configuration store), and it reaches the bytes only through
        // bounds-checked copies and atomics.
        let mem = unsafe { Window::new(bar.ptr().add(base as usize), size) };
        Some(KernelCfg {
            mem,
            node: node as NodeId,
            nodes: nodes as usize,
        })
    }

    /// The kernel's turn: hands it the requests the core gave the kernel
    /// port and the completions of its commands, lets it compute, and
    /// submits the commands it asks for. Returns whether anything happened.
    fn run_kernel(&mut self) -> bool {
        let (Some(cfg), Some(compute)) = (self.kernel_cfg, self.compute.as_mut()) else {
            // Disabled: the core hands out nothing; drop what it did.
            while self.board.take_kernel_request().is_some() {}
            while self.board.take_kernel_completion().is_some() {}
            self.board.accept_kernel_request();
            return false;
        };
        let mut did = false;
        let mut ctx = ComputeCtx {
            mem: cfg.mem,
            node: cfg.node,
            nodes: cfg.nodes,
            actions: &mut self.actions,
        };
        while let Some(r) = self.board.take_kernel_request() {
            compute.request(&mut ctx, r.src, r.handler, &r.args);
            did = true;
        }
        while let Some(e) = self.board.take_kernel_completion() {
            did = true;
            let Ok(c) = Completion::decode(&e) else {
                crate::report(&format!(
                    "devsim board {} (rtl): the kernel port gave an undecodable completion {e:02x?}",
                    self.node
                ));
                continue;
            };
            match self.kernel_puts.remove(&c.tag) {
                Some(id) => compute.put_done(&mut ctx, id, c.status.is_ok()),
                None if !c.status.is_ok() => crate::report(&format!(
                    "devsim board {} (rtl): the compute kernel's command (opcode {:#04x}) to \
                     board {} failed: {} (detail {})",
                    self.node, c.opcode, c.target, c.status, c.detail
                )),
                None => {}
            }
        }
        if compute.busy() {
            did |= compute.step(&mut ctx);
        }
        let mut rejected = false;
        for a in std::mem::take(&mut self.actions) {
            self.kernel_tag = self.kernel_tag.wrapping_add(1);
            let tag = self.kernel_tag;
            let d = match a {
                Action::Put {
                    id,
                    dst,
                    offset,
                    local,
                    len,
                } => {
                    self.kernel_puts.insert(tag, id);
                    Descriptor::Put {
                        common: Common {
                            tag,
                            completion: true,
                            fence_before: false,
                        },
                        target: dst,
                        remote: offset,
                        source: PutSource::Local {
                            addr: Local::Segment(local),
                            len,
                        },
                    }
                }
                Action::Reject(r) => {
                    crate::report(&format!(
                        "devsim board {} (rtl): the compute kernel dropped {r} \
                         (ERR_STATUS.COMPUTE)",
                        self.node
                    ));
                    self.board.kernel_error(r.info());
                    rejected = true;
                    did = true;
                    continue;
                }
                Action::Reply { dst, handler, args } => Descriptor::Am {
                    common: Common {
                        tag,
                        completion: false,
                        fence_before: false,
                    },
                    target: dst,
                    direction: Direction::Reply,
                    handler,
                    args: Args::new(&args[..args.len().min(gasnet_core::MAX_ARGS)])
                        .unwrap_or_default(),
                    body: AmBody::Short,
                },
            };
            let enc = cmd::encode_slots(&d);
            let slots = enc.as_slots();
            self.board.submit_kernel(&slots[0], slots.get(1));
            did = true;
        }
        // The request waiting on the port is judged: a rejected one's
        // ERR_STATUS.COMPUTE is set (two cycles) and in the file before the
        // core goes on to the sender's next frame, so a host never sees a
        // later effect of that sender (its barrier signal, say) without it.
        if rejected {
            self.board.cycle();
            self.board.cycle();
            self.publish(false);
        }
        self.board.accept_kernel_request();
        did
    }

    /// Copies the completion entries the core wrote up to `tail` into the
    /// file's ring, each entry's phase word last.
    fn copy_completions(&mut self, tail: u32) {
        let tail = tail % cmd::CQ_ENTRIES;
        while self.cq_seen != tail {
            let at = regs::CQ_RING + COMPLETION_BYTES * self.cq_seen as usize;
            self.copy_entry(at, COMPLETION_BYTES / 4, COMPLETION_BYTES / 4 - 1);
            self.cq_seen = (self.cq_seen + 1) % cmd::CQ_ENTRIES;
        }
    }

    /// As [`RtlBoard::copy_completions`] for the receive ring (its phase is
    /// in word 0).
    fn copy_receives(&mut self, tail: u32) {
        let tail = tail % cmd::RQ_ENTRIES;
        while self.rq_seen != tail {
            let at = regs::RQ_RING + RX_ENTRY_BYTES * self.rq_seen as usize;
            self.copy_entry(at, RX_ENTRY_BYTES / 4, 0);
            self.rq_seen = (self.rq_seen + 1) % cmd::RQ_ENTRIES;
        }
    }

    fn copy_entry(&mut self, at: usize, words: usize, phase_word: usize) {
        let offs: Vec<usize> = (0..words).map(|w| at + 4 * w).collect();
        let v = self.load(&offs);
        for (w, &x) in v.iter().enumerate() {
            if w != phase_word {
                self.bar0.write32(at + 4 * w, x);
            }
        }
        // The payload (already in BAR2) and the entry before its phase.
        fence(Ordering::Release);
        self.bar0.write32(at + 4 * phase_word, v[phase_word]);
    }

    /// Datagrams from the sockets to the core's ports, and held (impaired)
    /// datagrams that are due out. Returns whether a frame arrived.
    fn link_in(&mut self) -> bool {
        let mut any = false;
        for _ in 0..RECV_BURST {
            let Some((n, port)) = self.udp.recv_raw(&mut self.buf) else {
                break;
            };
            if self
                .impair
                .as_ref()
                .is_some_and(|i| i.cut_in(Instant::now()))
            {
                continue;
            }
            self.rx_queue[port & 1].push_back(self.buf[..n].to_vec());
            any = true;
        }
        if let Some(imp) = self.impair.as_mut() {
            let udp = &mut self.udp;
            imp.release(Instant::now(), &mut |d, b| {
                let _ = udp.send_raw(d, b);
            });
        }
        any
    }

    /// Gives each port its next received frame once the previous one has
    /// gone in and [`RX_GAP`] cycles have passed since it started, so that
    /// frames that waited in a socket arrive paced, not back to back.
    fn feed_ports(&mut self) {
        for p in 0..2 {
            if self.rx_gap[p] > 0 {
                self.rx_gap[p] -= 1;
            } else if self.board.rx_pending(p) == 0
                && let Some(f) = self.rx_queue[p].pop_front()
            {
                self.board.push_frame(p, f);
                self.rx_gap[p] = RX_GAP;
            }
        }
    }

    /// Work that clocking does now: not frames that only wait for their
    /// acknowledgement, whose timers need cycles only as ticks come (see
    /// the idle branch of `step`).
    fn busy(&self) -> bool {
        self.board.working() || self.rx_queue.iter().any(|q| !q.is_empty())
    }

    /// Frames the core sent, to the boards their headers name.
    fn link_out(&mut self) {
        // In the order the frames ended: one peer's frames may leave on
        // both ports, and their sequence numbers follow that order.
        while let Some((_, f)) = self.board.pop_sent() {
            // The destination node, big-endian at bytes 6..8 (spec/wire.md);
            // a frame too short to name one is dropped, as a link drops a
            // runt.
            let Some(&[hi, lo]) = f.get(6..8).and_then(|s| <&[u8; 2]>::try_from(s).ok()) else {
                continue;
            };
            let dst = u16::from_be_bytes([hi, lo]);
            let udp = &mut self.udp;
            match self.impair.as_mut() {
                None => {
                    let _ = udp.send_raw(dst, &f);
                }
                Some(imp) => imp.pass(Instant::now(), dst, &f, &mut |d, b| {
                    let _ = udp.send_raw(d, b);
                }),
            }
        }
    }

    /// Clocks `n` cycles, a tick in each while ticks are owed, sending
    /// frames as they complete; stops early once the core is idle.
    /// A full batch that moves nothing across the core's edges marks the
    /// board stalled (see `step`).
    fn clock(&mut self, n: usize) {
        let now = Instant::now();
        let us = now.duration_since(self.tick_at).as_micros() as u64;
        self.tick_at += Duration::from_micros(us);
        self.owed = (self.owed + us).min(1 << 20);
        let moved = self.board.activity();
        let mut ran = 0;
        for i in 0..n {
            ran += 1;
            if self.owed > 0 {
                self.board.tick();
                self.owed -= 1;
            }
            self.feed_ports();
            self.board.cycle();
            self.link_out();
            if i % IDLE_CHECK == IDLE_CHECK - 1 && !self.busy() {
                break;
            }
        }
        self.link_out();
        if n > 0 {
            self.stalled = ran == n && self.board.activity() == moved;
        }
    }
}

impl BoardCore for RtlBoard {
    fn step(&mut self) -> bool {
        let mut progress = self.take_host_stores();
        progress |= self.link_in();
        progress |= self.run_kernel();
        if progress || self.busy() && !self.stalled {
            self.clock(BATCH);
            self.publish(false);
            return true;
        }
        // Idle, or stalled (busy, but waiting for a peer's frame or the
        // tick: a get's reply, room its peer has not yet acknowledged):
        // give the ticks owed (a few cycles' worth), so UPTIME moves and
        // timers run, and leave the cores to the processes waited for;
        // wake fully once something moves. Clocking a stalled core at full
        // speed took 3 boards' collectives 5 times as long as 2 boards'.
        self.clock(0);
        let waiting = self.stalled || self.board.armed();
        let n = self
            .owed
            .min(if waiting { WAIT_CYCLES } else { IDLE_CYCLES });
        self.owed = 0;
        if n > 0 {
            let moved = self.board.activity();
            for _ in 0..n {
                self.board.tick();
                self.board.cycle();
            }
            self.link_out();
            if self.board.activity() != moved {
                self.stalled = false;
            }
            if Instant::now().duration_since(self.uptime_at) >= UPTIME_EVERY || self.busy() {
                self.publish(false);
            }
        }
        self.busy() && !self.stalled
    }

    fn doze(&self) -> Doze {
        self.doze.clone()
    }

    fn link_fds(&self) -> Vec<std::os::fd::RawFd> {
        self.udp.fds().to_vec()
    }
}
