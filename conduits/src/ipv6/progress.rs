//! The progress thread of an ipv6 PE: it owns the UDP socket, the engine
//! and the reliable transport, takes the application's commands from the
//! inbox, serves remote requests, and posts completions back.

use super::reliable::{PeerSilent, Transport};
use super::segment::SegMemory;
use super::{Outcome, Shared, Want};
use crate::error::ConduitError;
use gasnet_core::engine::{Completion, Engine, Status};
use std::collections::{HashMap, VecDeque};
use std::net::{SocketAddr, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Command submissions from application threads.
pub(crate) enum Req {
    /// An engine command under `tag`.
    Cmd {
        tag: u64,
        cmd: gasnet_core::engine::Command,
        want: Want,
    },
    /// Register a handler in the engine's table.
    Register {
        tag: u64,
        index: u8,
        f: gasnet_core::HandlerFn,
        system: bool,
    },
    /// Complete `tag` once no packet waits for acknowledgement.
    Flush { tag: u64 },
}

/// Deterministic datagram impairment for tests (`FSHMEM_IPV6_IMPAIR`):
/// percentages of datagrams dropped, duplicated and delayed (reordered).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impair {
    /// Percent dropped.
    pub loss: f64,
    /// Percent sent twice.
    pub dup: f64,
    /// Percent held back 0.1–2 ms.
    pub reorder: f64,
}

pub(crate) struct Progress {
    pub(crate) shared: Arc<Shared>,
    pub(crate) engine: Engine<SegMemory>,
    pub(crate) transport: Transport,
    pub(crate) sock: UdpSocket,
    pub(crate) peers: Vec<SocketAddrV6>,
    pub(crate) impair: Option<Impair>,
    pub(crate) seed: u64,
}

struct Waiting {
    want: Want,
}

impl Progress {
    pub(crate) fn run(mut self) {
        let mut waiting: HashMap<u64, Waiting> = HashMap::new();
        let mut backlog: VecDeque<(u64, gasnet_core::engine::Command)> = VecDeque::new();
        let mut flushes: Vec<u64> = Vec::new();
        let mut buf = vec![0u8; 65536];
        let mut delayed: Vec<(Instant, usize, Vec<u8>)> = Vec::new();
        let mut rng = self.seed | 1;
        let mut failed = false;
        let sock_fd = self.sock.as_raw_fd();
        let mut last_check = Instant::now();
        let mut idle_spins = 0u32;
        loop {
            if self.shared.stop.load(Ordering::Acquire) {
                return;
            }
            let mut work = false;
            // 1. Application commands.
            let reqs: Vec<Req> = {
                let mut q = self.shared.inbox.lock().unwrap_or_else(|e| e.into_inner());
                q.drain(..).collect()
            };
            for r in reqs {
                work = true;
                match r {
                    Req::Cmd { tag, cmd, want } => {
                        waiting.insert(tag, Waiting { want });
                        backlog.push_back((tag, cmd));
                    }
                    Req::Register {
                        tag,
                        index,
                        f,
                        system,
                    } => {
                        let t = self.engine.handlers_mut();
                        let r = if system {
                            t.register_system(index, f)
                        } else {
                            t.register_user(index, f)
                        };
                        self.shared.post(tag, Outcome::Registered(r));
                    }
                    Req::Flush { tag } => flushes.push(tag),
                }
            }
            while !backlog.is_empty()
                && self.engine.outstanding() < self.engine.config().queue_depth
            {
                let Some((tag, cmd)) = backlog.pop_front() else {
                    break;
                };
                match self.engine.submit(tag, cmd) {
                    Ok(()) => {}
                    Err(e) => {
                        let c = Completion {
                            tag,
                            status: Status::Malformed,
                            value: 0,
                            data: Vec::new(),
                        };
                        self.finish(&mut waiting, c, Some(e.to_string()));
                    }
                }
            }
            // 2. Datagrams in.
            let now = Instant::now();
            for _ in 0..256 {
                match self.sock.recv_from(&mut buf) {
                    Ok((n, from)) => {
                        work = true;
                        let src = if n >= 8 {
                            u16::from_be_bytes([buf[4], buf[5]]) as usize
                        } else {
                            usize::MAX
                        };
                        let ok = match (self.peers.get(src), from) {
                            (Some(p), SocketAddr::V6(f)) => {
                                p.ip() == f.ip() && p.port() == f.port()
                            }
                            _ => false,
                        };
                        if ok {
                            self.transport.receive(&buf[..n], now);
                        }
                    }
                    Err(_) => break,
                }
            }
            // 3. Delivered packets to the engine, completions out, engine
            //    packets into the transport, datagrams out.
            loop {
                let mut moved = false;
                while let Some(p) = self.transport.delivered() {
                    self.engine.receive(p);
                    moved = true;
                }
                while let Some(c) = self.engine.poll_completion() {
                    self.finish(&mut waiting, c, None);
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
            // Backlogged submissions may fit now.
            if !backlog.is_empty() && self.engine.outstanding() < self.engine.config().queue_depth {
                work = true;
            }
            let peers = &self.peers;
            let sock = &self.sock;
            let impair = self.impair;
            let mut sent = 0usize;
            self.transport.transmit(now, &mut |dst, bytes| {
                sent += 1;
                let to = peers[dst as usize];
                match impair {
                    None => {
                        let _ = sock.send_to(bytes, to);
                    }
                    Some(f) => {
                        if chance(&mut rng, f.loss) {
                            return;
                        }
                        let copies = if chance(&mut rng, f.dup) { 2 } else { 1 };
                        for _ in 0..copies {
                            if chance(&mut rng, f.reorder) {
                                let hold = Duration::from_micros(100 + xorshift(&mut rng) % 1900);
                                delayed.push((now + hold, dst as usize, bytes.to_vec()));
                            } else {
                                let _ = sock.send_to(bytes, to);
                            }
                        }
                    }
                }
            });
            if sent > 0 {
                work = true;
            }
            if !delayed.is_empty() {
                let mut k = 0;
                while k < delayed.len() {
                    if delayed[k].0 <= now {
                        let (_, d, b) = delayed.swap_remove(k);
                        let _ = self.sock.send_to(&b, self.peers[d]);
                    } else {
                        k += 1;
                    }
                }
            }
            if !flushes.is_empty() && !self.transport.has_unacked() {
                for tag in flushes.drain(..) {
                    self.shared.post(tag, Outcome::Flushed);
                }
            }
            // 4. Global exit requested by a peer: acknowledge, then leave.
            let status = self.shared.exit_status.load(Ordering::Acquire);
            if status != NO_EXIT {
                let later = now + self.transport.config().ack_delay;
                self.transport.transmit(later, &mut |dst, bytes| {
                    let _ = sock.send_to(bytes, peers[dst as usize]);
                });
                std::process::exit(status as i32);
            }
            // 5. Liveness.
            if !failed && now.saturating_duration_since(last_check) >= Duration::from_millis(5) {
                last_check = now;
                if let Err(PeerSilent { peer, reason }) = self.transport.check(now) {
                    failed = true;
                    self.shared.fail(ConduitError::PeerFailed {
                        pe: peer as usize,
                        reason: format!("{reason} (FSHMEM_PEER_TIMEOUT)"),
                    });
                }
            }
            // 6. Sleep until a datagram, a command or a deadline.
            if work {
                idle_spins = 0;
                continue;
            }
            if idle_spins < SPIN_ROUNDS {
                idle_spins += 1;
                std::hint::spin_loop();
                std::thread::yield_now();
                continue;
            }
            let mut timeout = Duration::from_millis(100);
            if let Some(t) = self.transport.next_deadline() {
                timeout = timeout.min(t.saturating_duration_since(Instant::now()));
            }
            if let Some(t) = delayed.iter().map(|d| d.0).min() {
                timeout = timeout.min(t.saturating_duration_since(Instant::now()));
            }
            if !flushes.is_empty() || !backlog.is_empty() {
                timeout = timeout.min(Duration::from_millis(1));
            }
            self.shared.sleeping.store(true, Ordering::SeqCst);
            let pending = !self
                .shared
                .inbox
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty();
            if !pending && !timeout.is_zero() {
                super::net::wait_readable(sock_fd, self.shared.wake.fd(), timeout);
            }
            self.shared.sleeping.store(false, Ordering::SeqCst);
            self.shared.wake.clear();
        }
    }

    fn finish(&self, waiting: &mut HashMap<u64, Waiting>, c: Completion, why: Option<String>) {
        let Some(w) = waiting.remove(&c.tag) else {
            return;
        };
        let err = (c.status != Status::Ok).then(|| {
            ConduitError::Io(format!(
                "remote operation failed: {:?}{}",
                c.status,
                why.map(|w| format!(" ({w})")).unwrap_or_default()
            ))
        });
        match w.want {
            Want::Value => {
                self.shared.post(c.tag, Outcome::Done(c, err));
            }
            Want::Nbi => {
                if let Some(e) = err {
                    self.shared.record_nbi_error(e);
                }
            }
            Want::NbiGet { dst, len } => match err {
                Some(e) => self.shared.record_nbi_error(e),
                None => {
                    let n = len.min(c.data.len());
                    // SAFETY: get_nbi's caller keeps `dst..dst+len` valid and
                    // untouched until the quiet that waits for this completion.
                    unsafe { std::ptr::copy_nonoverlapping(c.data.as_ptr(), dst.0, n) };
                }
            },
        }
        self.shared.completed.fetch_add(1, Ordering::AcqRel);
        self.shared.notify();
    }
}

/// `exit_status` value meaning no global exit was requested.
pub(crate) const NO_EXIT: i64 = i64::MIN;

/// Idle iterations (each a yield) before the thread sleeps in `poll`.
const SPIN_ROUNDS: u32 = 64;

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn chance(s: &mut u64, percent: f64) -> bool {
    percent > 0.0 && (xorshift(s) % 1_000_000) as f64 / 10_000.0 < percent
}
