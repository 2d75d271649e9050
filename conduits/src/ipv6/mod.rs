//! The IPv6 bridge conduit: `spec/wire.md` packets in UDP over IPv6, so a
//! job spans hosts (and host PEs and boards can share one Ethernet fabric,
//! as DiAD does between FPGAs on a unique-local subnet).
//!
//! # Threads and queues
//!
//! Each PE has one protocol core — the UDP socket, the reference engine
//! ([`gasnet_core::engine::Engine`]) over the local segment and the
//! [`reliable`] transport below it — behind one mutex, and one **progress
//! thread**. Whichever thread holds the core drives it. An application
//! thread that issues an operation sends its datagrams itself; one that
//! waits (`quiet`, a blocking get, a fetching atomic) polls the socket
//! itself — spinning, then yielding, then sleeping in `poll(2)` on the
//! socket until the transport's next deadline — so a round trip costs no
//! hand-off between threads (with `oshrun`'s pinning both threads of a PE
//! share one CPU, and every hand-off was a context switch). Meanwhile the
//! progress thread stays parked off the socket. Otherwise the progress
//! thread serves remote puts, gets, atomics and active messages while the
//! application computes, so one-sided operations complete without the
//! target calling the library: it keeps polling for a short while after
//! work, then sleeps in `poll(2)` on the socket and an eventfd.
//!
//! # Operations
//!
//! - The segment is an anonymous mapping; [`Segments::local_segment`] is its
//!   base and [`Segments::peer_segment`] is `Some` only for this PE.
//!   Remote atomics are applied with CPU atomic instructions, so local
//!   atomic loads (`wait_until`) see them.
//! - Operations on this PE's own segment are done directly (copies and CPU
//!   atomics), without the engine.
//! - `put` copies the source into the command and returns (local
//!   completion); `put_nbi` does the same. `get` and fetching atomics wait
//!   for their value; `get_nbi` lands the bytes at `quiet`. A get whose
//!   destination lies in the local segment uses Long replies written
//!   straight into it; others use Medium replies.
//! - `fence` costs nothing: the transport delivers in order per pair and
//!   the engine issues in order. `quiet` waits until every command issued
//!   before it has completed (for puts and atomics: acknowledged after the
//!   target applied them) and reports the first error of a non-blocking one.
//! - Active-message handlers run on whichever thread drives the core — the
//!   progress thread, or an application thread inside the library — with
//!   the core locked: they must not block or call the conduit (the
//!   contract forbids both); they answer through their token.
//! - `barrier` and `exchange` are the bootstrap's ([`crate::bootstrap`]),
//!   `barrier` after a `quiet`.
//!
//! # Failure
//!
//! A peer that owes an acknowledgement or a response and sends nothing for
//! `FSHMEM_PEER_TIMEOUT` (default 10 s) is reported: every later call fails
//! with [`ConduitError::PeerFailed`] naming it, so the job ends non-zero
//! instead of hanging. A PE that leaves the bootstrap without finalizing
//! fails the other PEs' next barrier the same way, and one that vanishes at
//! any other time (even with status 0) is reported by the rendezvous server
//! to every other PE, whose progress thread watches the bootstrap
//! connection ([`Bootstrap::check`]): their next call fails naming it.
//! Every wait of the conduit (quiet, a blocking get or fetching atomic,
//! flow control) fails with [`ConduitError::Timeout`] naming what it
//! awaits when none of the PE's operations completes for
//! `FSHMEM_WAIT_TIMEOUT`. [`Lifecycle::global_exit`]
//! sends a request to a conduit-private system handler ([`EXIT_HANDLER`])
//! on every peer, whose progress thread then exits the process.
//!
//! # Contexts
//!
//! Each context ([`CtxId`]) has its own counters of issued and completed
//! commands and its own first error of a non-blocking operation; every
//! command carries its context to the completion. `quiet` on a context
//! waits for that context's commands only, so it returns while another
//! context still waits for a slow target. `fence` costs nothing on any
//! context (delivery is ordered per pair).
//!
//! # Settings
//!
//! The `FSHMEM_IPV6_*` rows of [`crate::config::Settings`] and
//! `FSHMEM_PEER_TIMEOUT`; the bootstrap comes from the launcher's variables
//! (`FSHMEM_BOOTSTRAP`, PMI, see [`crate::bootstrap`]). Without
//! `FSHMEM_IPV6_ADDR`/`_PREFIX` the data socket binds to the address this
//! host uses to reach the rendezvous server, else to the first unique-local
//! (`fd00::/8`) address of the host, else to `::1`.

mod batch;
pub(crate) mod net;
mod progress;
use gasnet_core::reliable;

pub use gasnet_core::impair::Impair;

use crate::Settings;
use crate::bootstrap::{self, Bootstrap};
use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::segment::{SegMemory, Segment};
use crate::wait::Backoff;
use crate::{AmoOp, AmoWidth, Category, HandlerFn};
use gasnet_core::NodeId;
use gasnet_core::engine::{
    Command, Completion, Config as EngineConfig, Engine, GetInto, PutSource,
};
use net::{Endpoint, EventFd};
use progress::{Core, NO_EXIT};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The conduit-private system handler that ends the process with the
/// status in its first argument ([`Lifecycle::global_exit`]);
/// [`gasnet_core::handlers::EXIT`].
pub const EXIT_HANDLER: u8 = gasnet_core::handlers::EXIT;

/// Largest contribution to [`JobBootstrap::exchange`] (`spec/conduit.md` §8).
pub const EXCHANGE_MAX: usize = 1024;

/// Contexts a PE can have at once, the default one included.
pub const MAX_CONTEXTS: usize = 1024;

/// Most commands an application may have in the progress thread's hands
/// before it waits for some to complete (flow control).
const MAX_PENDING: u64 = 8192;

/// Largest command the conduit hands the engine: longer puts and gets are
/// split so that no buffer of the whole transfer is allocated (and paged in)
/// per call, and a put's buffer becomes the engine's Long payload without
/// another copy.
const CHUNK: usize = gasnet_core::MAX_LONG;

/// What the application waits for on a command.
pub(crate) enum Want {
    /// The completion itself (blocking get, fetching atomic).
    Value,
    /// Nothing but its error, reported at quiet.
    Nbi,
    /// A non-blocking get: copy the data to `dst` at completion.
    NbiGet { dst: SendPtr, len: usize },
}

/// A destination pointer moved to the progress thread.
pub(crate) struct SendPtr(pub(crate) *mut u8);
// SAFETY: get_nbi's contract makes the buffer the conduit's until quiet;
// only the progress thread writes it meanwhile.
unsafe impl Send for SendPtr {}

/// A result posted to a waiting application thread.
pub(crate) enum Outcome {
    Done(Completion, Option<ConduitError>),
    Flushed,
}

/// State shared by the application threads and the progress thread,
/// outside the core's lock.
pub(crate) struct Shared {
    /// Wakes the progress thread (to stop).
    pub(crate) wake: EventFd,
    pub(crate) stop: AtomicBool,
    /// Application threads currently driving the core.
    pub(crate) drivers: AtomicUsize,
    pub(crate) issued: AtomicU64,
    pub(crate) completed: AtomicU64,
    /// Per-context counters and errors, indexed by [`CtxId::index`].
    pub(crate) ctxs: Box<[CtxState]>,
    done: Mutex<HashMap<u64, Outcome>>,
    failed: Mutex<Option<ConduitError>>,
    failed_flag: AtomicBool,
    pub(crate) exit_status: AtomicI64,
    /// `FSHMEM_IPV6_STATS`: print the transport's counters at the end.
    pub(crate) print_stats: bool,
}

impl Shared {
    pub(crate) fn post(&self, tag: u64, o: Outcome) {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tag, o);
    }

    fn take(&self, tag: u64) -> Option<Outcome> {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&tag)
    }

    /// Counts the completion of a command of context `ctx`, recording the
    /// error of a non-blocking one.
    pub(crate) fn completed(&self, ctx: u32, err: Option<ConduitError>) {
        if let Some(c) = self.ctxs.get(ctx as usize) {
            if let Some(e) = err {
                c.nbi_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(e);
            }
            c.completed.fetch_add(1, Ordering::AcqRel);
        }
        self.completed.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn fail(&self, e: ConduitError) {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
        self.failed_flag.store(true, Ordering::Release);
    }

    fn failure(&self) -> Option<ConduitError> {
        if !self.failed_flag.load(Ordering::Acquire) {
            return None;
        }
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// One context's bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct CtxState {
    /// Created and not destroyed (the default context always is).
    live: AtomicBool,
    /// Commands issued on it.
    issued: AtomicU64,
    /// Commands of it completed (acknowledged, or answered).
    completed: AtomicU64,
    /// The first error of its non-blocking commands since its last quiet.
    nbi_error: Mutex<Option<ConduitError>>,
}

/// Counts an application thread as driving the core while it lives.
struct Driving<'a>(&'a Shared);

impl<'a> Driving<'a> {
    fn new(s: &'a Shared) -> Driving<'a> {
        s.drivers.fetch_add(1, Ordering::AcqRel);
        Driving(s)
    }
}

impl Drop for Driving<'_> {
    fn drop(&mut self) {
        self.0.drivers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Steps of [`Backoff`] (spins, then yields) an application thread takes
/// without progress before it sleeps in `poll(2)` on the socket.
const DRIVE_STEPS_BEFORE_SLEEP: u64 = crate::wait::SPIN_STEPS as u64 + 64;

/// Longest sleep of a driving application thread before it looks again
/// (another thread may have taken the datagram it waits for).
const DRIVE_MAX_SLEEP: Duration = Duration::from_millis(1);

/// A PE attached to an ipv6 job. `Send + Sync`: any thread may call it.
pub struct Ipv6Conduit {
    rank: usize,
    size: usize,
    segment_len: usize,
    seg: Arc<Segment>,
    shared: Arc<Shared>,
    core: Arc<Mutex<Core>>,
    sock_fd: i32,
    thread: Mutex<Option<JoinHandle<()>>>,
    boot: Arc<Mutex<Box<dyn Bootstrap>>>,
    next_tag: AtomicU64,
    finalized: AtomicBool,
    addr: SocketAddrV6,
    peers: Vec<SocketAddrV6>,
}

impl std::fmt::Debug for Ipv6Conduit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ipv6Conduit")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("segment_len", &self.segment_len)
            .field("addr", &self.addr)
            .finish()
    }
}

impl Ipv6Conduit {
    /// Joins through an explicit bootstrap, with the segment `segment`
    /// asks for ([`SegmentRequest::Over`]: map that file instead of a new
    /// memfd). Collective.
    pub fn attach_with(
        rank: usize,
        size: usize,
        segment: SegmentRequest,
        mut boot: Box<dyn Bootstrap>,
        settings: &Settings,
    ) -> Result<Ipv6Conduit> {
        let segment_len = segment.len();
        if size == 0 || size > gasnet_core::MAX_NODES || rank >= size {
            return Err(ConduitError::Bootstrap(format!(
                "ipv6: rank {rank} of {size} PEs is not valid"
            )));
        }
        if boot.rank() != rank || boot.size() != size {
            return Err(ConduitError::Bootstrap(format!(
                "ipv6: the bootstrap ({}) says rank {} of {}, the job rank {rank} of {size}",
                boot.describe(),
                boot.rank(),
                boot.size()
            )));
        }
        let ip = match (settings.ipv6_addr, &settings.ipv6_prefix) {
            (Some(a), _) => a,
            (None, Some(p)) => net::addr_in_prefix(p)?,
            (None, None) => default_addr(boot.as_ref()),
        };
        let sock = UdpSocket::bind(SocketAddrV6::new(ip, 0, 0, 0)).map_err(|e| {
            ConduitError::Bootstrap(format!(
                "ipv6: PE {rank}: cannot bind a UDP socket on [{ip}]: {e}"
            ))
        })?;
        net::size_buffers(&sock, 4 << 20);
        sock.set_nonblocking(true)?;
        let addr = match sock.local_addr()? {
            SocketAddr::V6(a) => a,
            SocketAddr::V4(_) => unreachable!("bound to an IPv6 address"),
        };
        let me = Endpoint {
            wire_version: gasnet_core::wire::WIRE_VERSION,
            segment_len: segment_len as u64,
            addr,
        };
        let all = boot.allgather(&me.encode())?;
        let mut peers = Vec::with_capacity(size);
        for (pe, b) in all.iter().enumerate() {
            let e = Endpoint::decode(pe, b)?;
            if e.wire_version != me.wire_version {
                return Err(ConduitError::Bootstrap(format!(
                    "PE {pe} speaks wire version {}, PE {rank} version {}",
                    e.wire_version, me.wire_version
                )));
            }
            if e.segment_len != me.segment_len {
                return Err(ConduitError::Bootstrap(format!(
                    "PE {pe} has a {}-byte segment, PE {rank} {segment_len} bytes",
                    e.segment_len
                )));
            }
            peers.push(e.addr);
        }
        let datagrams: Vec<usize> = peers
            .iter()
            .enumerate()
            .map(|(pe, p)| {
                let mtu = if pe == rank {
                    65536
                } else {
                    settings
                        .ipv6_mtu
                        .or_else(|| net::path_mtu(ip, *p))
                        .unwrap_or(1280)
                };
                (mtu - net::IP_UDP_HEADERS).min(gasnet_core::wire::MAX_UDP6_PAYLOAD)
            })
            .collect();
        let seg = match segment {
            SegmentRequest::Own(len) => Segment::new(len)?,
            SegmentRequest::Over(b) => Segment::over(b)?,
        };
        let mut engine = Engine::with_config(
            rank as NodeId,
            size,
            SegMemory::new(seg.clone(), segment_len),
            EngineConfig {
                max_in_flight: 64,
                queue_depth: 4096,
            },
        );
        let shared = Arc::new(Shared {
            wake: EventFd::new()?,
            stop: AtomicBool::new(false),
            drivers: AtomicUsize::new(0),
            issued: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            ctxs: (0..MAX_CONTEXTS).map(|_| CtxState::default()).collect(),
            done: Mutex::new(HashMap::new()),
            failed: Mutex::new(None),
            failed_flag: AtomicBool::new(false),
            exit_status: AtomicI64::new(NO_EXIT),
            print_stats: settings.ipv6_stats,
        });
        shared.ctxs[CtxId::DEFAULT.index()]
            .live
            .store(true, Ordering::Release);
        let sh = shared.clone();
        engine
            .handlers_mut()
            .register_system(
                EXIT_HANDLER,
                Arc::new(move |_tok, m| {
                    let status = m.args.first().copied().unwrap_or(1) as i32;
                    sh.exit_status.store(status as i64, Ordering::Release);
                }),
            )
            .map_err(ConduitError::Am)?;
        let cfg = reliable::Config {
            peer_timeout: settings.peer_timeout,
            ..reliable::Config::default()
        };
        let transport = reliable::Transport::new(rank as NodeId, &datagrams, cfg, Instant::now());
        let seed = 0x9e37_79b9_7f4a_7c15 ^ (rank as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1);
        let core = Core::new(
            engine,
            transport,
            sock,
            peers.clone(),
            settings.ipv6_impair,
            settings.ipv6_batch,
            seed,
        );
        let sock_fd = core.sock_fd();
        let core = Arc::new(Mutex::new(core));
        let boot = Arc::new(Mutex::new(boot));
        let (c2, s2, b2) = (core.clone(), shared.clone(), boot.clone());
        let thread = std::thread::Builder::new()
            .name(format!("fshmem-progress-{rank}"))
            .spawn(move || progress::run(c2, s2, b2))?;
        let c = Ipv6Conduit {
            rank,
            size,
            segment_len,
            seg,
            shared,
            core,
            sock_fd,
            thread: Mutex::new(Some(thread)),
            boot,
            next_tag: AtomicU64::new(1),
            finalized: AtomicBool::new(false),
            addr,
            peers,
        };
        // Every progress thread runs before any traffic starts.
        c.boot().barrier()?;
        Ok(c)
    }

    /// The data socket's address.
    pub fn addr(&self) -> SocketAddrV6 {
        self.addr
    }

    /// Every PE's data socket address, by rank.
    pub fn peer_addrs(&self) -> &[SocketAddrV6] {
        &self.peers
    }

    fn boot(&self) -> std::sync::MutexGuard<'_, Box<dyn Bootstrap>> {
        self.boot.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, index: u8, f: HandlerFn, system: bool) -> Result<()> {
        progress::lock(&self.core)
            .register(index, f, system)
            .map_err(ConduitError::Am)
    }

    fn stop_thread(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.signal();
        let t = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }

    fn tag(&self) -> u64 {
        self.next_tag.fetch_add(1, Ordering::Relaxed)
    }

    fn check_failed(&self) -> Result<()> {
        match self.shared.failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Hands `cmd` to the core (which sends what it can at once); returns
    /// its tag.
    /// The state of context `ctx`, if it exists.
    fn ctx(&self, ctx: CtxId) -> Result<&CtxState> {
        match self.shared.ctxs.get(ctx.index()) {
            Some(c) if c.live.load(Ordering::Acquire) => Ok(c),
            _ => Err(ConduitError::NoContext { ctx: ctx.0 }),
        }
    }

    /// Commands of context `ctx` issued and not yet completed.
    pub fn outstanding(&self, ctx: CtxId) -> Result<u64> {
        let c = self.ctx(ctx)?;
        let done = c.completed.load(Ordering::Acquire);
        Ok(c.issued.load(Ordering::Acquire).saturating_sub(done))
    }

    fn submit(&self, ctx: CtxId, cmd: Command, want: Want) -> Result<u64> {
        self.check_failed()?;
        let state = self.ctx(ctx)?;
        if self.finalized.load(Ordering::Acquire) {
            return Err(ConduitError::Unsupported("ipv6: the conduit was finalized"));
        }
        let issued = self.shared.issued.load(Ordering::Acquire);
        if issued.saturating_sub(self.shared.completed.load(Ordering::Acquire)) >= MAX_PENDING {
            self.drive_until(
                || {
                    issued.saturating_sub(self.shared.completed.load(Ordering::Acquire))
                        < MAX_PENDING / 2
                },
                || {
                    format!(
                        "room among its {MAX_PENDING} outstanding operations (PE {})",
                        self.rank
                    )
                },
            )?;
        }
        let tag = self.tag();
        self.shared.issued.fetch_add(1, Ordering::AcqRel);
        state.issued.fetch_add(1, Ordering::AcqRel);
        progress::lock(&self.core).submit(&self.shared, tag, ctx.0, cmd, want);
        Ok(tag)
    }

    /// Drives the core from this thread until `cond` holds: polls the
    /// socket while spinning, then yielding, then sleeping in `poll(2)` on it
    /// until the transport's next deadline. Fails if a peer failed, and with
    /// [`ConduitError::Timeout`] naming `what()` when none of this PE's
    /// operations completes for `FSHMEM_WAIT_TIMEOUT`.
    fn drive_until(&self, mut cond: impl FnMut() -> bool, what: impl Fn() -> String) -> Result<()> {
        if cond() {
            return Ok(());
        }
        let s = &*self.shared;
        let _driving = Driving::new(s);
        let mut b = Backoff::new();
        let mut completed = s.completed.load(Ordering::Acquire);
        loop {
            if cond() {
                return Ok(());
            }
            self.check_failed()?;
            let worked = progress::try_lock(&self.core).is_some_and(|mut c| c.step(s));
            if worked {
                // Completions are progress towards what is awaited (the
                // timeout clock restarts); other traffic only keeps the
                // wait spinning.
                let now = s.completed.load(Ordering::Acquire);
                if now != completed {
                    completed = now;
                    b.reset();
                } else {
                    b.respin();
                }
                continue;
            }
            if let Some(waited) = b.timed_out() {
                return Err(ConduitError::Timeout {
                    what: what(),
                    waited,
                });
            }
            if b.steps() < DRIVE_STEPS_BEFORE_SLEEP {
                b.snooze();
                continue;
            }
            // Sleeping steps count too (the timeout clock is read on them).
            b.snooze();
            let t = progress::try_lock(&self.core)
                .map_or(Duration::ZERO, |c| c.idle_for(DRIVE_MAX_SLEEP));
            if cond() {
                return Ok(());
            }
            if !t.is_zero() {
                net::wait_readable(Some(self.sock_fd), s.wake.fd(), t);
            }
        }
    }

    /// Waits for the outcome posted under `tag`; `what` names the
    /// operation for a timeout report.
    fn wait_tag(&self, tag: u64, what: impl Fn() -> String) -> Result<Outcome> {
        let mut out = None;
        self.drive_until(
            || {
                out = self.shared.take(tag);
                out.is_some()
            },
            what,
        )?;
        out.ok_or_else(|| ConduitError::Io("lost outcome".into()))
    }

    fn wait_value(&self, tag: u64, what: impl Fn() -> String) -> Result<Completion> {
        match self.wait_tag(tag, what)? {
            Outcome::Done(c, None) => Ok(c),
            Outcome::Done(_, Some(e)) => Err(e),
            _ => Err(ConduitError::Io("unexpected outcome".into())),
        }
    }

    fn local(&self, offset: usize) -> *mut u8 {
        self.seg.base().wrapping_add(offset)
    }

    /// The local-segment offset of `p..p+len`, if it lies inside it.
    fn in_segment(&self, p: *const u8, len: usize) -> Option<u64> {
        let base = self.seg.base() as usize;
        let a = p as usize;
        (a >= base && a.checked_add(len)? <= base + self.segment_len).then(|| (a - base) as u64)
    }

    /// Sends a request to every peer's exit handler, waits briefly for
    /// them to be acknowledged, and exits.
    fn broadcast_exit(&self, status: i32) {
        let tag = self.tag();
        {
            let mut core = progress::lock(&self.core);
            for pe in (0..self.size).filter(|&p| p != self.rank) {
                let cmd = Command::AmRequest {
                    dst: pe as NodeId,
                    category: Category::Short,
                    handler: EXIT_HANDLER,
                    args: vec![status as u32],
                    payload: Vec::new(),
                    offset: 0,
                };
                let t = self.tag();
                core.submit(&self.shared, t, CtxId::DEFAULT.0, cmd, Want::Nbi);
            }
            core.flush(tag);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        let _ = self.drive_until(
            || Instant::now() >= deadline || self.shared.take(tag).is_some(),
            || "the acknowledgements of its global-exit requests".to_string(),
        );
    }
}

fn default_addr(boot: &dyn Bootstrap) -> Ipv6Addr {
    if let Some(SocketAddr::V6(a)) = boot.local_addr() {
        let ip = *a.ip();
        if !ip.is_unspecified() && ip.to_ipv4_mapped().is_none() {
            return ip;
        }
    }
    if let Some(IpAddr::V6(_)) = boot.local_addr().map(|a| a.ip()) {
        // An IPv4-mapped path: fall through to the host's own addresses.
    }
    net::local_ipv6_addrs()
        .into_iter()
        .find(net::is_unique_local)
        .unwrap_or(Ipv6Addr::LOCALHOST)
}

impl Segments for Ipv6Conduit {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn segment_len(&self) -> usize {
        self.segment_len
    }

    fn local_segment(&self) -> *mut u8 {
        self.seg.base()
    }

    fn peer_segment(&self, pe: usize) -> Option<*mut u8> {
        (pe == self.rank).then(|| self.seg.base())
    }

    /// The segment's file: its own memfd, or the file it was attached over.
    fn segment_backing(&self) -> Option<SegmentBacking> {
        let (fd, offset, len) = self.seg.backing();
        Some(SegmentBacking { fd, offset, len })
    }
}

impl Rma for Ipv6Conduit {
    fn ctx_create(&self) -> Result<CtxId> {
        for (i, c) in self.shared.ctxs.iter().enumerate().skip(1) {
            if c.live
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Ok(CtxId(i as u32));
            }
        }
        Err(ConduitError::ContextLimit { max: MAX_CONTEXTS })
    }

    fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
        if ctx == CtxId::DEFAULT {
            return Err(ConduitError::NoContext { ctx: ctx.0 });
        }
        let r = self.quiet(ctx);
        self.ctx(ctx)?.live.store(false, Ordering::Release);
        r
    }

    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the destination lies in our segment (checked); copy
            // tolerates overlap with `src`.
            unsafe { std::ptr::copy(src.as_ptr(), self.local(offset), src.len()) };
            return self.check_failed();
        }
        if src.is_empty() {
            return self.check_failed();
        }
        for (k, part) in src.chunks(CHUNK).enumerate() {
            let cmd = Command::Put {
                dst: pe as NodeId,
                offset: (offset + k * CHUNK) as u64,
                source: PutSource::Bytes(part.to_vec()),
            };
            self.submit(ctx, cmd, Want::Nbi)?;
        }
        Ok(())
    }

    unsafe fn put_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller guarantees `src` is valid for `len` bytes; the
        // bytes are copied before this returns.
        let s = unsafe { std::slice::from_raw_parts(src, len) };
        self.put(ctx, pe, offset, s)
    }

    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(pe, self.size, offset, dst.len(), self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the source lies in our segment (checked).
            unsafe { std::ptr::copy(self.local(offset), dst.as_mut_ptr(), dst.len()) };
            return self.check_failed();
        }
        if dst.is_empty() {
            return self.check_failed();
        }
        if let Some(at) = self.in_segment(dst.as_ptr(), dst.len()) {
            let cmd = Command::Get {
                dst: pe as NodeId,
                offset: offset as u64,
                len: dst.len() as u64,
                into: GetInto::Segment(at),
            };
            let tag = self.submit(ctx, cmd, Want::Value)?;
            return self
                .wait_value(tag, || {
                    format!(
                        "the data of a blocking get of {} bytes from PE {pe} at offset {offset:#x}",
                        dst.len()
                    )
                })
                .map(|_| ());
        }
        let mut tags = Vec::with_capacity(dst.len().div_ceil(CHUNK));
        for (k, part) in dst.chunks(CHUNK).enumerate() {
            let cmd = Command::Get {
                dst: pe as NodeId,
                offset: (offset + k * CHUNK) as u64,
                len: part.len() as u64,
                into: GetInto::Buffer,
            };
            tags.push(self.submit(ctx, cmd, Want::Value)?);
        }
        for (tag, part) in tags.into_iter().zip(dst.chunks_mut(CHUNK)) {
            let c = self.wait_value(tag, || {
                format!("the data of a blocking get from PE {pe} at offset {offset:#x}")
            })?;
            part.copy_from_slice(&c.data[..part.len()]);
        }
        Ok(())
    }

    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the source lies in our segment (checked); the caller
            // guarantees `dst` is valid for `len` bytes.
            unsafe { std::ptr::copy(self.local(offset), dst, len) };
            return self.check_failed();
        }
        if len == 0 {
            return self.check_failed();
        }
        if let Some(at) = self.in_segment(dst, len) {
            let cmd = Command::Get {
                dst: pe as NodeId,
                offset: offset as u64,
                len: len as u64,
                into: GetInto::Segment(at),
            };
            return self.submit(ctx, cmd, Want::Nbi).map(|_| ());
        }
        let mut at = 0;
        while at < len {
            let n = CHUNK.min(len - at);
            let cmd = Command::Get {
                dst: pe as NodeId,
                offset: (offset + at) as u64,
                len: n as u64,
                into: GetInto::Buffer,
            };
            let want = Want::NbiGet {
                dst: SendPtr(dst.wrapping_add(at)),
                len: n,
            };
            self.submit(ctx, cmd, want)?;
            at += n;
        }
        Ok(())
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
        check_word(pe, self.size, offset, width.bytes(), self.segment_len)?;
        if pe == self.rank {
            // SAFETY: in range and aligned (checked); the segment is page
            // aligned.
            let old = unsafe {
                crate::cpu_amo::atomic_at(self.local(offset), op, width, operand, compare)
            };
            self.check_failed()?;
            return Ok(old & width.mask());
        }
        let cmd = Command::Amo {
            dst: pe as NodeId,
            op,
            width,
            offset: offset as u64,
            operand,
            compare,
        };
        if !op.fetches() {
            self.submit(ctx, cmd, Want::Nbi)?;
            return Ok(0);
        }
        let tag = self.submit(ctx, cmd, Want::Value)?;
        Ok(self
            .wait_value(tag, || {
                format!("the value of a fetching atomic {op:?} on PE {pe} at offset {offset:#x}")
            })?
            .value)
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
        check_range(pe, self.size, offset, src.len(), self.segment_len)?;
        check_word(pe, self.size, sig_offset, 8, self.segment_len)?;
        let op = match sig_op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        };
        if pe == self.rank {
            self.put(ctx, pe, offset, src)?;
            std::sync::atomic::fence(Ordering::Release);
            self.atomic(ctx, pe, sig_offset, op, AmoWidth::W64, sig_value, 0)?;
            return Ok(());
        }
        // Issued in order to one target and delivered in order: the data is
        // applied before the signal.
        self.put(ctx, pe, offset, src)?;
        self.atomic(ctx, pe, sig_offset, op, AmoWidth::W64, sig_value, 0)?;
        Ok(())
    }

    fn fence(&self, ctx: CtxId) -> Result<()> {
        self.ctx(ctx)?;
        self.check_failed()
    }

    fn quiet(&self, ctx: CtxId) -> Result<()> {
        let c = self.ctx(ctx)?;
        let target = c.issued.load(Ordering::Acquire);
        self.drive_until(
            || c.completed.load(Ordering::Acquire) >= target,
            || {
                let done = c.completed.load(Ordering::Acquire);
                format!(
                    "{} of its operations on {ctx} to complete in quiet (acknowledged by their targets)",
                    target.saturating_sub(done)
                )
            },
        )?;
        match c.nbi_error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The progress engine applies remote atomics as CPU atomics on the
    /// mapped segment (`SegMemory`), as does a local atomic.
    fn cpu_atomics(&self) -> bool {
        true
    }
}

impl ActiveMessages for Ipv6Conduit {
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
        gasnet_core::am::check_shape(category, args.len(), payload.len())?;
        if category == Category::Long {
            check_range(pe, self.size, offset, payload.len(), self.segment_len)?;
        }
        let cmd = Command::AmRequest {
            dst: pe as NodeId,
            category,
            handler,
            args: args.to_vec(),
            payload: payload.to_vec(),
            offset: offset as u64,
        };
        self.submit(CtxId::DEFAULT, cmd, Want::Nbi).map(|_| ())
    }

    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.register(index, f, false)
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.register(index, f, true)
    }

    fn poll(&self) -> Result<()> {
        if let Some(mut c) = progress::try_lock(&self.core) {
            c.step(&self.shared);
        }
        self.check_failed()
    }
}

impl JobBootstrap for Ipv6Conduit {
    fn barrier(&self) -> Result<()> {
        self.quiet(CtxId::DEFAULT)?;
        let r = self.boot().barrier();
        if r.is_err() {
            // A PE that ends the job leaves only once its exit request was
            // acknowledged: if the bootstrap reports it gone, the request
            // arrived first, and the job's status is the one it asked for.
            let status = self.shared.exit_status.load(Ordering::Acquire);
            if status != NO_EXIT {
                crate::wait::exit_job(status as i32);
            }
        }
        r?;
        self.check_failed()
    }

    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > EXCHANGE_MAX {
            return Err(ConduitError::Bootstrap(format!(
                "exchange contribution of {} bytes exceeds {EXCHANGE_MAX}",
                mine.len()
            )));
        }
        self.boot().allgather(mine)
    }
}

impl Lifecycle for Ipv6Conduit {
    /// Bootstraps from the launcher's environment (`FSHMEM_BOOTSTRAP`,
    /// PMI) and joins the job ([`Ipv6Conduit::attach_with`]).
    fn attach(job: &JobEnv, segment: SegmentRequest, settings: &Settings) -> Result<Self> {
        let get = |k: &str| std::env::var(k).ok();
        let boot = bootstrap::from_env(job.rank, job.size, get, settings)?;
        Self::attach_with(job.rank, job.size, segment, boot, settings)
    }

    /// Leaves the job: `quiet`, a barrier with every PE, then the progress
    /// thread stops. Collective; calling it again does nothing.
    fn finalize(&self) -> Result<()> {
        if self.finalized.load(Ordering::Acquire) {
            return Ok(());
        }
        self.barrier()?;
        self.finalized.store(true, Ordering::Release);
        self.stop_thread();
        self.boot().finalize()
    }

    fn global_exit(&self, status: i32) -> ! {
        crate::wait::note_job_exit();
        self.broadcast_exit(status);
        crate::wait::exit_job(status)
    }
}

impl Drop for Ipv6Conduit {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

#[cfg(test)]
mod tests;
