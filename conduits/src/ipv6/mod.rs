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
//! Each context other than the default one also has a submission queue
//! (a channel; the core keeps its receiving end). A put, non-blocking get
//! or non-fetching atomic on such a context that finds the core held by
//! another thread is queued instead of waiting for the mutex, and the
//! holder sends it before and after it lets go (the `progress` module
//! tells how no command is left behind).
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
//! context: delivery is ordered per pair, and a context's commands reach
//! the engine in issue order (its queue is first in, first out, and a
//! command that takes the core directly first moves every queued one into
//! the backlog).
//!
//! Threads that each use their own context do not serialize on the core:
//! on a non-default context a put, `put_nbi`, `get_nbi`, non-fetching
//! atomic or put-with-signal tries the core's mutex without waiting and,
//! if another thread holds it, leaves its command (owning a copy of the
//! bytes) in the context's queue. Operations that wait for a value (a
//! blocking get, a fetching atomic) and every operation on the default
//! context take the core, first moving every queued command ahead of
//! their own, so a blocking get sees every earlier put of this PE whatever
//! its context. Back-pressure is unchanged: past `MAX_PENDING`
//! outstanding commands an issuing thread drives the core until half have
//! completed.
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
mod rma;
mod shared;

use gasnet_core::reliable;
pub(crate) use shared::{CtxState, Outcome, Queued, Shared, Want};

pub use gasnet_core::impair::Impair;

use crate::bootstrap::{self, Bootstrap};
use crate::config::Settings;
use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result, check_pe, check_range, check_word};
use crate::job::JobEnv;
use crate::segment::{SegMemory, Segment};
use crate::wait::Backoff;
use gasnet_core::NodeId;
use gasnet_core::engine::{
    Command, Completion, Config as EngineConfig, Engine, GetInto, PutSource,
};
use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};
use net::{Endpoint, EventFd};
use progress::{Core, NO_EXIT};
use rustc_hash::FxHashMap as HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};
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

/// The transport's floor on the retransmission timeout. The floor covers
/// a receiver that holds a lone packet's acknowledgement for its delayed
/// ACK ([`reliable::Config::ack_delay`], 0.5 ms), so twice that; above it
/// the timeout follows the measured round trip (`srtt + 4·rttvar`). The
/// transport's default of 10 ms made every lost last packet of an exchange
/// (a request, its response: most collective steps) stall its waiter for
/// 10 ms where the round trip is 0.2-1 ms; coll_check on 2 hosts x 2 PEs
/// over links losing 5 % of datagrams spent 16 of its 19 s in such waits.
/// A timeout that fires early resends one packet (the oldest) and backs off.
const RTO_MIN: Duration = Duration::from_millis(1);

/// Most commands an application may have in the progress thread's hands
/// (queued ones included) before it waits for some to complete (flow
/// control).
const MAX_PENDING: u64 = 8192;

/// The part of a put or get the conduit hands the engine as one command
/// towards a peer whose datagrams carry `datagram` bytes: the largest
/// multiple of 4 KiB whose Long packet (one argument) fits one datagram, at
/// most [`gasnet_core::MAX_LONG`]; on links too small for that (a 1500-byte
/// MTU), `MAX_LONG`, which the transport fragments.
///
/// Splitting keeps a buffer of the whole transfer from being allocated
/// (and paged in) per call and lets a put's copy become the Long payload
/// as is. Fitting the datagram spares the transport's fragment copies and
/// the receiver's reassembly: on loopback (65,488-byte datagrams) a
/// 64 KiB piece went out as 65,432 bytes and then 104.
fn chunk_for(datagram: usize) -> usize {
    let room = gasnet_core::wire::max_fragment_payload(datagram, 1) & !4095;
    if room == 0 {
        gasnet_core::MAX_LONG
    } else {
        room.min(gasnet_core::MAX_LONG)
    }
}

/// A destination pointer moved to the progress thread.
pub(crate) struct SendPtr(pub(crate) *mut u8);
// SAFETY: get_nbi's contract makes the buffer the conduit's until quiet;
// only the progress thread writes it meanwhile.
unsafe impl Send for SendPtr {}

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
    /// [`chunk_for`] each PE's datagram size.
    chunks: Vec<usize>,
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
        crate::bootstrap::check_shape("ipv6", rank, size, boot.as_ref())?;
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
            app_polls: AtomicU64::new(0),
            issued: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            queued: AtomicI64::new(0),
            ctxs: (0..MAX_CONTEXTS).map(|_| CtxState::default()).collect(),
            done: Mutex::new(HashMap::default()),
            posted: AtomicU64::new(0),
            failed: Mutex::new(None),
            failed_flag: AtomicBool::new(false),
            exit_status: AtomicI64::new(NO_EXIT),
            epoch: Instant::now(),
            last_step_us: AtomicU64::new(0),
            stall_reported: AtomicBool::new(false),
            stall_at_us: AtomicU64::new(u64::MAX),
            holder: shared::Holder::default(),
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
                    crate::wait::peer_ends_job(m.src as usize, status);
                    sh.exit_status.store(status as i64, Ordering::Release);
                }),
            )
            .map_err(ConduitError::Am)?;
        let cfg = reliable::Config {
            peer_timeout: settings.peer_timeout,
            rto_min: RTO_MIN,
            ..reliable::Config::default()
        };
        let transport = reliable::Transport::new(rank as NodeId, &datagrams, cfg, Instant::now());
        let core = Core::new(
            engine,
            transport,
            sock,
            peers.clone(),
            settings.ipv6_impair,
            settings.ipv6_batch,
            rank as u16,
        );
        let sock_fd = core.sock_fd();
        let core = Arc::new(Mutex::new(core));
        let boot = Arc::new(Mutex::new(boot));
        let (c2, s2, b2) = (core.clone(), shared.clone(), boot.clone());
        let thread = std::thread::Builder::new()
            .name(format!("fshmem-progress-{rank}"))
            .spawn(move || progress::run(c2, s2, b2, rank, sock_fd))?;
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
            chunks: datagrams.iter().map(|&d| chunk_for(d)).collect(),
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
        progress::lock(&self.core, &self.shared)
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
        // Those that take the core (below) would wait for this thread if
        // it holds the core already (inside a step).
        let takes_core = ctx == CtxId::DEFAULT || matches!(want, Want::Value);
        if takes_core && progress::in_core() {
            return Err(self.holding_core("issued an operation", "it would wait for itself"));
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
        // The default context, and operations that wait for their value
        // anyway, take the core; a blocking get or fetching atomic is then
        // issued after everything this PE queued before it
        // (`spec/conduit.md` §2). The other contexts' puts, non-blocking
        // gets and non-fetching atomics never wait for it (§3).
        if takes_core {
            progress::lock(&self.core, &self.shared).submit(&self.shared, tag, ctx.0, cmd, want);
        } else if let Some(mut core) = progress::try_lock(&self.core, &self.shared) {
            core.submit(&self.shared, tag, ctx.0, cmd, want);
        } else {
            self.enqueue(
                state,
                Queued {
                    tag,
                    ctx: ctx.0,
                    cmd,
                    want,
                },
            );
        }
        Ok(tag)
    }

    /// The error (also reported) of a call that `did` what needs the core
    /// stepped while this thread holds it (inside a step, such as an
    /// active-message handler), and `why` that cannot end.
    fn holding_core(&self, did: &str, why: &str) -> ConduitError {
        let e = ConduitError::Io(format!(
            "ipv6: PE {}: {did} while holding its progress engine (from inside a step, such \
             as an active-message handler): {why}",
            self.rank
        ));
        crate::report!("{e}");
        e
    }

    /// Puts `q` on its context's queue for whichever thread holds the core,
    /// then takes the core itself if it is free by now (no command is left
    /// behind: see [`progress`]).
    fn enqueue(&self, state: &CtxState, q: Queued) {
        let q = match state.queue.get() {
            Some(tx) => match tx.send(q) {
                Ok(()) => None,
                Err(mpsc::SendError(q)) => Some(q),
            },
            None => Some(q),
        };
        if let Some(q) = q {
            // No queue (cannot happen for a context ctx_create made): the
            // command waits for the core instead.
            progress::lock(&self.core, &self.shared).submit(
                &self.shared,
                q.tag,
                q.ctx,
                q.cmd,
                q.want,
            );
            return;
        }
        crate::ctxq::queued(&self.core, &self.shared, &self.shared.queued, 1);
    }

    /// Holds this PE's protocol core until the guard drops, as a thread
    /// that drives it does (tests: a slow target, a busy engine).
    #[cfg(test)]
    #[track_caller]
    pub(crate) fn hold_engine(&self) -> progress::Held<'_> {
        progress::lock(&self.core, &self.shared)
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
            let mut core = progress::lock(&self.core, &self.shared);
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
        self.poll_served().map(drop)
    }

    fn poll_served(&self) -> Result<bool> {
        self.shared.app_polls.fetch_add(1, Ordering::Relaxed);
        let served =
            progress::try_lock(&self.core, &self.shared).is_some_and(|mut c| c.step(&self.shared));
        self.check_failed().map(|()| served)
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
    /// Bootstraps through the launcher's service the job names
    /// (`job.bootstrap`: rendezvous, PMI, PMIx) and joins the job
    /// ([`Ipv6Conduit::attach_with`]).
    fn attach(job: &JobEnv, segment: SegmentRequest, settings: &Settings) -> Result<Self> {
        let boot = bootstrap::open(&job.bootstrap, job.rank, job.size, settings)?;
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
        crate::wait::note_exit_from(self.rank);
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
