//! The protocol core of an ipv6 PE and its progress thread.
//!
//! [`Core`] owns the UDP socket, the engine and the reliable transport. It
//! sits behind one mutex and is driven by whichever thread holds it: an
//! application thread that submits a command (which then leaves on the
//! socket from that thread, with no hand-off), an application thread that
//! waits for a completion (it polls the socket itself, so the reply needs
//! no second thread to wake), or the progress thread, which serves remote
//! requests while the application computes. While an application thread
//! drives, or polls the core from a wait loop of the layers above
//! ([`crate::ActiveMessages::poll`], counted in `Shared::app_polls`), the
//! progress thread stays parked off the socket, so the two do not compete
//! for datagrams or for the CPU they are often pinned to: it naps for
//! [`PARK`] at a time and takes the socket over after a nap in which no
//! application thread polled (within two naps of the last poll).
//!
//! # Submission queues
//!
//! A put, non-blocking get or non-fetching atomic on a context other than
//! the default one never waits for the core's mutex: when another thread
//! holds the core, the command goes to its context's queue (a channel
//! whose receiving end the core keeps) and the call returns. The mutex is
//! only ever taken through [`lock`] and [`try_lock`], whose guard
//! ([`Held`], the one [`crate::ctxq`] gives every conduit with such
//! queues) moves every queued command into the core's backlog when it is
//! taken and again when it is let go, then sends them; after letting go
//! it reads [`Shared::queued`] once more and, if a command arrived
//! meanwhile and the mutex is free, takes it again. A
//! sender counts its command in `queued` after putting it on the queue and
//! then tries the mutex itself. Both touch `queued` with read-modify-writes
//! (every write to it is one), which read the latest value: if the
//! holder's comes second it sees the sender's count; if it comes first,
//! the sender's reads from it, so the sender's try_lock happens after the
//! unlock and finds the mutex free (or held by a thread that will look
//! again as it lets go). Either way a queued command is never left waiting
//! for a later call. Until this PE creates its first context there is no
//! queue and the look after letting go is skipped: the default context's
//! path costs what it did. The progress thread's steps drain the queues
//! too.
use super::batch::{RecvBatch, SendBatch};
use super::{Outcome, Queued, Shared, Want};
use crate::config::BatchMode;
use crate::ctxq;
use crate::error::ConduitError;
use crate::segment::SegMemory;
use gasnet_core::engine::{Command, Completion, Engine, Status};
use gasnet_core::impair::{Impair, Impairer};
use gasnet_core::reliable::{PeerSilent, Transport};
use gasnet_core::{AmError, HandlerFn};
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::net::{SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `exit_status` value meaning no global exit was requested.
pub(crate) const NO_EXIT: i64 = i64::MIN;

/// How long the progress thread keeps polling (yielding between polls)
/// after it last found work, before it sleeps in `poll(2)`: requests that
/// follow each other closely then find it awake.
const SPIN_AFTER_WORK: Duration = Duration::from_micros(100);

/// Longest sleep of the progress thread. An application thread may arm a
/// retransmission timer after the thread went to sleep; this bounds how
/// late that timer can fire while the application is not in the library.
const MAX_SLEEP: Duration = Duration::from_millis(10);

/// How long the progress thread stays parked off the socket while an
/// application thread drives or polls, before it looks again.
const PARK: Duration = Duration::from_micros(500);

/// How often the progress thread asks the bootstrap service for failures.
const BOOT_CHECK: Duration = Duration::from_millis(20);

/// How long the core may go without a step before the progress thread
/// reports it: nothing then reads the socket, and peers will soon find
/// this PE silent (`FSHMEM_PEER_TIMEOUT`). The report says which thread
/// holds the core, so that such a stall is never only a peer's "failed".
pub(crate) const STALL_REPORT: Duration = Duration::from_secs(2);

/// The PE's bootstrap service, shared with the progress thread.
pub(crate) type BootRef = Arc<Mutex<Box<dyn crate::bootstrap::Bootstrap>>>;

/// How long a step that received nothing and has nothing to issue may
/// skip the transport's timers ([`Core::pump`]). Every timer of the
/// transport is 200 us or longer (`gasnet_core::reliable::Config`), so
/// none fires more than this late; an idle step of a wait loop then costs
/// one receive system call and no walk over the peers, which keeps the
/// loop tight and a datagram's wait for it short.
const IDLE_PUMP_EVERY: Duration = Duration::from_micros(20);

/// Batches of datagrams taken from the socket per step at most.
const RECV_ROUNDS: usize = 8;

/// The protocol state of one PE. See the module documentation.
pub(crate) struct Core {
    engine: Engine<SegMemory>,
    transport: Transport,
    sock: UdpSocket,
    peers: Vec<SocketAddrV6>,
    impair: Option<Impairer>,
    /// What each command's completion is for, and its context.
    waiting: HashMap<u64, (u32, Want)>,
    backlog: VecDeque<(u64, Command)>,
    /// The receiving ends of the contexts' submission queues.
    queues: Vec<Receiver<Queued>>,
    flushes: Vec<u64>,
    rx: RecvBatch,
    tx: SendBatch,
    failed: bool,
    last_check: Instant,
    /// When [`Core::pump`] last ran.
    last_pump: Instant,
    /// Datagrams sent to each PE (`FSHMEM_IPV6_STATS`): with routing, none
    /// go to a PE of this PE's host.
    sent_to: Vec<u64>,
}

impl Core {
    pub(crate) fn new(
        engine: Engine<SegMemory>,
        transport: Transport,
        sock: UdpSocket,
        peers: Vec<SocketAddrV6>,
        impair: Option<Impair>,
        mode: BatchMode,
        me: u16,
    ) -> Core {
        // The impairment's generator, seeded per rank: runs repeat.
        let seed = 0x9e37_79b9_7f4a_7c15 ^ (me as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1);
        let mut tx = SendBatch::new(mode, sock.as_raw_fd(), &peers);
        // A PE with one peer connects its socket to it: the kernel then
        // keeps the route and finds the socket for an arriving datagram
        // at once, instead of a route lookup per send and a hashed lookup
        // per receive (about 0.3 us a round trip on loopback). Datagrams
        // from elsewhere are dropped by the kernel, as the receive path
        // drops them anyway.
        if let [a, b] = peers[..] {
            let peer = if me == 0 { b } else { a };
            if sock.connect(peer).is_ok() {
                tx.set_connected();
            }
        }
        let sent_to = vec![0; peers.len()];
        Core {
            engine,
            transport,
            sock,
            peers,
            impair: impair.map(|f| Impairer::new(f, seed, me)),
            waiting: HashMap::default(),
            backlog: VecDeque::new(),
            queues: Vec::new(),
            flushes: Vec::new(),
            rx: RecvBatch::new(mode),
            tx,
            failed: false,
            last_check: Instant::now(),
            last_pump: Instant::now(),
            sent_to,
        }
    }

    /// The socket's descriptor, for `poll(2)`.
    pub(crate) fn sock_fd(&self) -> i32 {
        self.sock.as_raw_fd()
    }

    /// Takes command `cmd` of context `ctx` under `tag` and sends what it
    /// can at once. Queued commands go first: a blocking get or fetching
    /// atomic is issued after every put this PE queued before it.
    pub(crate) fn submit(&mut self, sh: &Shared, tag: u64, ctx: u32, cmd: Command, want: Want) {
        self.take_queued(sh);
        self.waiting.insert(tag, (ctx, want));
        self.backlog.push_back((tag, cmd));
        self.pump(sh, Instant::now());
    }

    /// Keeps the receiving end of a context's submission queue.
    pub(crate) fn add_queue(&mut self, rx: Receiver<Queued>) {
        self.queues.push(rx);
    }

    /// Moves every command waiting in a context's queue into the backlog,
    /// in each queue's order. Returns whether there was any.
    pub(crate) fn take_queued(&mut self, sh: &Shared) -> bool {
        if sh.queued.load(Ordering::Acquire) <= 0 {
            return false;
        }
        let mut n = 0;
        for rx in &self.queues {
            while let Ok(q) = rx.try_recv() {
                self.waiting.insert(q.tag, (q.ctx, q.want));
                self.backlog.push_back((q.tag, q.cmd));
                n += 1;
            }
        }
        sh.queued.fetch_sub(n, Ordering::AcqRel);
        n > 0
    }

    /// Registers a handler in the engine's table.
    pub(crate) fn register(
        &mut self,
        index: u8,
        f: HandlerFn,
        system: bool,
    ) -> std::result::Result<(), AmError> {
        let t = self.engine.handlers_mut();
        if system {
            t.register_system(index, f)
        } else {
            t.register_user(index, f)
        }
    }

    /// Posts [`Outcome::Flushed`] under `tag` once nothing waits for an
    /// acknowledgement.
    pub(crate) fn flush(&mut self, tag: u64) {
        self.flushes.push(tag);
    }

    /// The transport's counters.
    pub(crate) fn stats(&self) -> gasnet_core::reliable::Stats {
        self.transport.stats()
    }

    /// Datagrams sent to each PE, by rank.
    pub(crate) fn sent_to(&self) -> &[u64] {
        &self.sent_to
    }

    /// One round of progress: datagrams in, packets through the engine,
    /// datagrams out, timers. Returns whether anything happened.
    pub(crate) fn step(&mut self, sh: &Shared) -> bool {
        let now = Instant::now();
        sh.last_step_us
            .store(micros_since(sh.epoch, now), Ordering::Relaxed);
        let mut work = self.take_queued(sh);
        let fd = self.sock.as_raw_fd();
        for _ in 0..RECV_ROUNDS {
            let n = self.rx.recv(fd);
            for i in 0..n {
                let Some((d, from)) = self.rx.get(i) else {
                    continue;
                };
                work = true;
                let src = if d.len() >= 8 {
                    u16::from_be_bytes([d[4], d[5]]) as usize
                } else {
                    usize::MAX
                };
                let ok = self
                    .peers
                    .get(src)
                    .is_some_and(|p| p.ip() == from.ip() && p.port() == from.port());
                let cut = self.impair.as_ref().is_some_and(|i| i.cut_in(now));
                if ok && !cut {
                    self.transport.receive(d, now);
                }
            }
            if !self.rx.maybe_more() {
                break;
            }
            // Serve what this batch asked for before taking the next.
            self.pump(sh, now);
        }
        let idle = !work
            && self.backlog.is_empty()
            && self.impair.is_none()
            && now.saturating_duration_since(self.last_pump) < IDLE_PUMP_EVERY;
        if !idle {
            work |= self.pump(sh, now);
        }
        if let Some(imp) = self.impair.as_mut() {
            let tx = &mut self.tx;
            if imp.release(now, &mut |d, b| tx.push(d as usize, b)) {
                self.tx.flush();
            }
        }
        if !self.flushes.is_empty() && !self.transport.has_unacked() {
            for tag in self.flushes.drain(..) {
                sh.post(tag, Outcome::Flushed);
            }
        }
        // Global exit requested by a peer: acknowledge, then leave.
        let status = sh.exit_status.load(Ordering::Acquire);
        if status != NO_EXIT {
            let later = now + self.transport.config().ack_delay;
            let (sock, peers, sent_to) = (&self.sock, &self.peers, &mut self.sent_to);
            self.transport.transmit(later, &mut |dst, bytes| {
                sent_to[dst as usize] += 1;
                let _ = sock.send_to(bytes, peers[dst as usize]);
            });
            // The job ends: this exit is not a PE failure (the runtime's
            // exit hook must not turn status 0 into "exited without
            // finalize").
            crate::wait::exit_job(status as i32);
        }
        // Liveness.
        if !self.failed
            && now.saturating_duration_since(self.last_check) >= Duration::from_millis(5)
        {
            self.last_check = now;
            if let Err(PeerSilent { peer, reason }) = self.transport.check(now) {
                self.failed = true;
                sh.fail(ConduitError::PeerFailed {
                    pe: peer as usize,
                    reason: format!("{reason} (FSHMEM_PEER_TIMEOUT)"),
                });
            }
        }
        work
    }

    /// Issues backlogged commands, moves packets between the transport
    /// and the engine, and transmits what is due. Returns whether anything
    /// moved.
    fn pump(&mut self, sh: &Shared, now: Instant) -> bool {
        self.last_pump = now;
        let mut work = false;
        while !self.backlog.is_empty()
            && self.engine.outstanding() < self.engine.config().queue_depth
        {
            let Some((tag, cmd)) = self.backlog.pop_front() else {
                break;
            };
            work = true;
            if let Err(e) = self.engine.submit(tag, cmd) {
                let c = Completion {
                    tag,
                    status: Status::Malformed,
                    value: 0,
                    data: Vec::new(),
                };
                self.finish(sh, c, Some(e.to_string()));
            }
        }
        loop {
            let mut moved = false;
            while let Some(p) = self.transport.delivered() {
                self.engine.receive(p);
                moved = true;
            }
            while let Some(c) = self.engine.poll_completion() {
                self.finish(sh, c, None);
                moved = true;
            }
            while let Some(p) = self.engine.next_outgoing() {
                self.transport.send(p, now);
                moved = true;
            }
            if !moved {
                break;
            }
            work = true;
        }
        let (tx, sent_to) = (&mut self.tx, &mut self.sent_to);
        let mut sent = 0usize;
        match self.impair.as_mut() {
            // Large payloads leave by a gathering send, not copied again.
            None => self.transport.transmit_gather(now, &mut |dst, parts| {
                sent += 1;
                sent_to[dst as usize] += 1;
                tx.push_parts(dst as usize, parts);
            }),
            Some(imp) => self.transport.transmit(now, &mut |dst, bytes| {
                sent += 1;
                sent_to[dst as usize] += 1;
                imp.pass(now, dst, bytes, &mut |d, b| tx.push(d as usize, b));
            }),
        }
        self.tx.flush();
        work || sent > 0
    }

    /// How long nothing needs doing unless a datagram arrives.
    pub(crate) fn idle_for(&self, cap: Duration) -> Duration {
        let now = Instant::now();
        let mut t = cap;
        if let Some(d) = self.transport.next_deadline() {
            t = t.min(d.saturating_duration_since(now));
        }
        if let Some(d) = self.impair.as_ref().and_then(Impairer::next_release) {
            t = t.min(d.saturating_duration_since(now));
        }
        if !self.flushes.is_empty() || !self.backlog.is_empty() {
            t = t.min(Duration::from_millis(1));
        }
        t
    }

    fn finish(&mut self, sh: &Shared, c: Completion, why: Option<String>) {
        let Some((ctx, want)) = self.waiting.remove(&c.tag) else {
            return;
        };
        let err = (c.status != Status::Ok).then(|| {
            ConduitError::Io(format!(
                "remote operation failed: {:?}{}",
                c.status,
                why.map(|w| format!(" ({w})")).unwrap_or_default()
            ))
        });
        let err = match want {
            Want::Value => {
                sh.post(c.tag, Outcome::Done(c, err));
                None
            }
            Want::Nbi => err,
            Want::NbiGet { dst, len } => {
                if err.is_none() {
                    let n = len.min(c.data.len());
                    // SAFETY: get_nbi's caller keeps `dst..dst+len` valid and
                    // untouched until the quiet that waits for this completion.
                    unsafe { std::ptr::copy_nonoverlapping(c.data.as_ptr(), dst.0, n) };
                }
                err
            }
        };
        sh.completed(ctx, err);
    }
}

/// The core, held by this thread: taking it and letting go of it send
/// what the contexts queued meanwhile, and after letting go it is taken
/// again if a command was queued since and nobody holds it (module
/// documentation, [`crate::ctxq`]).
pub(crate) type Held<'a> = ctxq::Held<'a, Core>;

impl ctxq::Drain for Core {
    type With = Shared;

    fn drain_queues(&mut self, sh: &Shared) {
        if self.take_queued(sh) {
            self.pump(sh, Instant::now());
        }
    }

    fn has_queues(&self) -> bool {
        !self.queues.is_empty()
    }

    fn taken(&mut self, sh: &Shared, at: &'static std::panic::Location<'static>, again: bool) {
        sh.holder.note(at, again);
        IN_CORE.set(true);
    }

    fn letting_go(&mut self, _sh: &Shared) {
        IN_CORE.set(false);
    }
}

thread_local! {
    /// Whether this thread holds a core (between its guard's taking and
    /// letting go).
    static IN_CORE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread holds a core: a wait that needs the core stepped
/// would then wait forever, since no thread, this one included, can step
/// it ([`crate::ipv6::Ipv6Conduit`]'s waits refuse to).
pub(crate) fn in_core() -> bool {
    IN_CORE.get()
}

/// Locks `m` whether or not a panicking thread poisoned it.
#[track_caller]
pub(crate) fn lock<'a>(m: &'a Mutex<Core>, sh: &'a Shared) -> Held<'a> {
    ctxq::lock(m, sh, &sh.queued)
}

/// Locks `m` if no other thread holds it.
#[track_caller]
pub(crate) fn try_lock<'a>(m: &'a Mutex<Core>, sh: &'a Shared) -> Option<Held<'a>> {
    ctxq::try_lock(m, sh, &sh.queued)
}

/// The progress thread: serves the socket whenever no application thread
/// drives, sleeping in `poll(2)` when there is nothing to do.
///
/// It never waits for the bootstrap's lock: an application thread holds
/// it through a whole bootstrap collective (finalize's barrier, say), and
/// a peer may need this PE's answers before it can join that collective.
pub(crate) fn run(
    core: Arc<Mutex<Core>>,
    sh: Arc<Shared>,
    boot: BootRef,
    rank: usize,
    sock_fd: i32,
) {
    let mut last_work = Instant::now();
    let mut last_boot_check = Instant::now();
    let mut app_polls = sh.app_polls.load(Ordering::Relaxed);
    let mut last_loop = Instant::now();
    // The core's takings counted when this thread last saw the count move.
    let mut taken = (sh.holder.seq(), Instant::now());
    loop {
        // A failure the bootstrap service announced (a PE vanished).
        if last_boot_check.elapsed() >= BOOT_CHECK {
            last_boot_check = Instant::now();
            if let Ok(mut b) = boot.try_lock()
                && let Err(e) = b.check()
            {
                sh.fail(e);
            }
        }
        // (Only while this thread itself has been running: a process
        // that was stopped or not scheduled has not stalled.)
        let t = Instant::now();
        let seq = sh.holder.seq();
        if seq != taken.0 {
            taken = (seq, t);
        }
        if t.saturating_duration_since(last_loop) < STALL_REPORT / 16 {
            stall_check(&core, &sh, rank, t, t.saturating_duration_since(taken.1));
        }
        last_loop = t;
        if sh.stop.load(Ordering::Acquire) {
            if sh.print_stats {
                let c = lock(&core, &sh);
                crate::report!(
                    "fshmem ipv6: PE {rank}: {:?}; datagrams sent to each PE: {:?}",
                    c.stats(),
                    c.sent_to()
                );
            }
            return;
        }
        let polls = sh.app_polls.load(Ordering::Relaxed);
        if sh.drivers.load(Ordering::Acquire) > 0 || polls != app_polls {
            app_polls = polls;
            super::net::wait_readable(None, sh.wake.fd(), PARK);
            sh.wake.clear();
            continue;
        }
        let work = match try_lock(&core, &sh) {
            Some(mut c) => c.step(&sh),
            None => false,
        };
        if work {
            last_work = Instant::now();
            continue;
        }
        if last_work.elapsed() < SPIN_AFTER_WORK {
            std::thread::yield_now();
            continue;
        }
        // Never waits for the core: a thread that holds it is stepping it
        // (or stalled, which stall_check must still be able to report).
        let timeout = try_lock(&core, &sh).map_or(PARK, |c| c.idle_for(MAX_SLEEP));
        if !timeout.is_zero() && sh.drivers.load(Ordering::Acquire) == 0 {
            super::net::wait_readable(Some(sock_fd), sh.wake.fd(), timeout);
            sh.wake.clear();
        }
        // Whatever woke us is likely the start of more traffic.
        last_work = Instant::now();
    }
}

/// Microseconds from `epoch` to `t`.
fn micros_since(epoch: Instant, t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(epoch).as_micros()).unwrap_or(u64::MAX)
}

/// Reports, once, a core that no thread has stepped for [`STALL_REPORT`]
/// (see there): who holds its lock, and how many application threads
/// are driving it. `now` is the progress thread's clock reading of this
/// round; `taken_ago` how long the core's count of takings has stood still.
fn stall_check(core: &Mutex<Core>, sh: &Shared, rank: usize, now: Instant, taken_ago: Duration) {
    let now = micros_since(sh.epoch, now);
    let last = sh.last_step_us.load(Ordering::Relaxed);
    let idle = Duration::from_micros(now.saturating_sub(last));
    if sh.stall_reported.load(Ordering::Relaxed) {
        // Say once that the stall ended, and how long it lasted.
        let at = sh.stall_at_us.load(Ordering::Relaxed);
        if last > at && at != u64::MAX {
            sh.stall_at_us.store(u64::MAX, Ordering::Relaxed);
            crate::report!(
                "fshmem ipv6: PE {rank}: its progress engine is stepped again, after {:.1} s",
                (last - at) as f64 / 1e6
            );
        }
        return;
    }
    if idle < STALL_REPORT {
        return;
    }
    sh.stall_reported.store(true, Ordering::Relaxed);
    sh.stall_at_us.store(last, Ordering::Relaxed);
    crate::report!(
        "fshmem ipv6: PE {rank}: warning: {}: its socket is not read, and peers will find it \
         silent after FSHMEM_PEER_TIMEOUT",
        stall_text(core, sh, idle, taken_ago)
    );
}

/// What the stall report says: how long no thread stepped the core, the
/// state of its lock and who took it last, and how many application
/// threads drive it.
pub(crate) fn stall_text(
    core: &Mutex<Core>,
    sh: &Shared,
    idle: Duration,
    taken_ago: Duration,
) -> String {
    let lock = match core.try_lock() {
        Ok(_) => "free".to_string(),
        Err(std::sync::TryLockError::WouldBlock) => {
            format!("held: {}", sh.holder.describe(taken_ago))
        }
        Err(std::sync::TryLockError::Poisoned(_)) => "poisoned".to_string(),
    };
    format!(
        "no thread has stepped its progress engine for {:.1} s (core lock {lock}; {} \
         application threads driving it)",
        idle.as_secs_f64(),
        sh.drivers.load(Ordering::Relaxed)
    )
}
