//! devsim's board links: how `spec/wire.md` packets travel between boards.
//!
//! [`Link`] is the small interface the board model needs — send a whole
//! packet, receive whole packets without blocking, report a peer that
//! stopped answering — so the transport can be swapped without touching
//! the model.
//!
//! [`ReliableLink`], the one boards use, runs the IPv6 bridge's reliable
//! transport ([`crate::ipv6::reliable`]: per-peer sequence numbers,
//! cumulative ACK and selective NACK, retransmission on timeout with
//! backoff, duplicate suppression, windows, fragmentation and in-order
//! delivery) over the two UDP ports of a [`UdpLink`], as a board's link
//! layer does in hardware: a lost, duplicated or reordered datagram
//! between boards is recovered, never seen by the engine. A peer board
//! that owes an acknowledgement or a response and stays silent for the
//! peer timeout (`FSHMEM_PEER_TIMEOUT`, default 10 s) is reported through
//! [`Link::failure`]; the board raises `ERR_STATUS.PEER_TIMEOUT` with the
//! peer's node id in `ERR_INFO` (`spec/registers.md` §4.4). For tests,
//! `FSHMEM_DEVSIM_IMPAIR=loss=5,dup=1,reorder=10` impairs the datagrams a
//! board sends ([`crate::ipv6::impair`]).
//!
//! [`UdpLink`] alone is plain UDP on `[::1]`. A board has two ports, each a
//! UDP socket bound to an ephemeral loopback port; **both ports reach every
//! peer** (a full mesh, no forwarding). The pair `(s, d)` always uses port
//! `d mod 2` of board `s` and port `s mod 2` of board `d`, so every pair has
//! one path and packets between a pair stay in order (loopback UDP keeps
//! per-socket order). Packets too large for a datagram (a Long AM of 64 KiB)
//! are fragmented with `frag_offset`/`total_len` exactly as `spec/wire.md`
//! describes and reassembled before they reach the engine. Used alone it
//! has no retransmission: a lost fragment is counted as a bad packet.

use crate::ipv6::reliable::{self, Transport};
use gasnet_core::impair::{Impair, Impairer};
use gasnet_core::wire::{self, MAX_UDP6_PAYLOAD, Packet, max_fragment_payload};
use std::collections::HashMap;
use std::io;
use std::net::{Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// How often a [`ReliableLink`] checks its peers' liveness.
const LIVENESS_CHECK: Duration = Duration::from_millis(5);
/// Datagrams a [`ReliableLink`] takes from its sockets per call at most.
const RECV_BURST: usize = 256;

/// What the board model needs from its links.
pub trait Link: Send {
    /// Sends `p` to board `p.dst` (fragmenting as needed); in order per
    /// destination.
    fn send(&mut self, p: &Packet) -> io::Result<()>;
    /// A whole packet that has arrived, if any; never blocks.
    fn recv(&mut self) -> Option<Packet>;
    /// Datagrams dropped because they did not decode or reassemble.
    fn bad_packets(&self) -> u64;
    /// Frames dropped on `port` for a failed integrity check.
    fn crc_errors(&self, port: usize) -> u32;
    /// A peer board that stopped answering: its node id and what was
    /// observed. Links without liveness tracking never report one.
    fn failure(&self) -> Option<(u16, String)> {
        None
    }
}

/// Payload bytes per UDP datagram fragment.
const DATAGRAM: usize = MAX_UDP6_PAYLOAD;
/// Socket buffer size asked for (capped by the kernel's `rmem_max`).
const SOCKET_BUFFER: libc::c_int = 4 << 20;
/// How long a send may wait for socket buffer space.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug)]
struct Partial {
    head: Packet,
    got: u32,
}

/// Two UDP sockets on `[::1]`, one per link port.
#[derive(Debug)]
pub struct UdpLink {
    node: u16,
    ports: [UdpSocket; 2],
    /// Both port addresses of every board, by node id.
    peers: Vec<[SocketAddr; 2]>,
    partial: HashMap<u16, Partial>,
    buf: Vec<u8>,
    out: Vec<u8>,
    next_port: usize,
    bad: u64,
    crc: [u32; 2],
}

fn raise_buffers(s: &UdpSocket) {
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a local.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&SOCKET_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

impl UdpLink {
    /// Binds both ports of board `node` to ephemeral ports on `[::1]`.
    pub fn bind(node: u16) -> io::Result<UdpLink> {
        let bind = || -> io::Result<UdpSocket> {
            let s = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0))?;
            s.set_nonblocking(true)?;
            raise_buffers(&s);
            Ok(s)
        };
        Ok(UdpLink {
            node,
            ports: [bind()?, bind()?],
            peers: Vec::new(),
            partial: HashMap::new(),
            buf: vec![0; 1 << 16],
            out: Vec::with_capacity(1 << 16),
            next_port: 0,
            bad: 0,
            crc: [0; 2],
        })
    }

    /// The UDP port numbers of port 0 and port 1.
    pub fn local_ports(&self) -> io::Result<[u16; 2]> {
        Ok([
            self.ports[0].local_addr()?.port(),
            self.ports[1].local_addr()?.port(),
        ])
    }

    /// Sets the job-wide table: `ports[n]` are board `n`'s two UDP ports.
    pub fn set_peers(&mut self, ports: &[[u16; 2]]) {
        self.peers = ports
            .iter()
            .map(|p| {
                [
                    SocketAddr::from((Ipv6Addr::LOCALHOST, p[0])),
                    SocketAddr::from((Ipv6Addr::LOCALHOST, p[1])),
                ]
            })
            .collect();
    }

    /// Sends one datagram `bytes` to board `dst` on the pair's path,
    /// without waiting for socket buffer space (a full buffer drops it, as
    /// a congested link would).
    pub fn send_raw(&mut self, dst: u16, bytes: &[u8]) -> io::Result<()> {
        let Some(addrs) = self.peers.get(dst as usize).copied() else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no link to node {dst}"),
            ));
        };
        let to = addrs[self.node as usize % 2];
        match self.ports[dst as usize % 2].send_to(bytes, to) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Receives one datagram into `buf` from either port, without
    /// blocking; its length.
    pub fn recv_raw(&mut self, buf: &mut [u8]) -> Option<usize> {
        for _ in 0..2 {
            let port = self.next_port;
            self.next_port ^= 1;
            if let Ok(n) = self.ports[port].recv(buf) {
                return Some(n);
            }
        }
        None
    }

    /// The number of boards in the peer table.
    pub fn nodes(&self) -> usize {
        self.peers.len()
    }

    fn send_datagram(&mut self, port: usize, to: SocketAddr) -> io::Result<()> {
        let start = Instant::now();
        loop {
            match self.ports[port].send_to(&self.out, to) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if start.elapsed() > SEND_TIMEOUT {
                        return Err(e);
                    }
                    std::thread::yield_now();
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn accept(&mut self, p: Packet) -> Option<Packet> {
        if !p.is_fragment_like() {
            self.partial.remove(&p.src);
            return Some(p);
        }
        let src = p.src;
        let len = p.payload.len() as u32;
        if p.frag_offset == 0 {
            let mut head = p;
            let total = head.total_len as usize;
            let first = std::mem::take(&mut head.payload);
            head.payload = Vec::with_capacity(total);
            head.payload.extend_from_slice(&first);
            self.partial.insert(src, Partial { head, got: len });
        } else {
            match self.partial.get_mut(&src) {
                Some(part) if part.got == p.frag_offset => {
                    part.head.payload.extend_from_slice(&p.payload);
                    part.got += len;
                }
                _ => {
                    self.partial.remove(&src);
                    self.bad += 1;
                    return None;
                }
            }
        }
        let done = self
            .partial
            .get(&src)
            .is_some_and(|part| part.got == part.head.total_len);
        if done {
            let mut whole = self.partial.remove(&src)?.head;
            whole.frag_offset = 0;
            return Some(whole);
        }
        None
    }
}

trait FragmentLike {
    fn is_fragment_like(&self) -> bool;
}

impl FragmentLike for Packet {
    fn is_fragment_like(&self) -> bool {
        self.frag_offset != 0 || self.total_len as usize != self.payload.len()
    }
}

impl Link for UdpLink {
    fn send(&mut self, p: &Packet) -> io::Result<()> {
        let dst = p.dst as usize;
        let Some(addrs) = self.peers.get(dst).copied() else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no link to node {dst}"),
            ));
        };
        let port = dst % 2;
        let to = addrs[self.node as usize % 2];
        let chunk = max_fragment_payload(DATAGRAM, p.args.len()).min(1 << 15);
        if wire::packet_len(p.args.len(), p.payload.len()) <= DATAGRAM {
            self.out.clear();
            wire::encode_into(p, &mut self.out).map_err(io::Error::other)?;
            return self.send_datagram(port, to);
        }
        let mut at = 0usize;
        while at < p.payload.len() {
            let n = (p.payload.len() - at).min(chunk);
            let frag = Packet {
                frag_offset: at as u32,
                total_len: p.payload.len() as u32,
                payload: p.payload[at..at + n].to_vec(),
                ..p.clone_header()
            };
            self.out.clear();
            wire::encode_into(&frag, &mut self.out).map_err(io::Error::other)?;
            self.send_datagram(port, to)?;
            at += n;
        }
        Ok(())
    }

    fn recv(&mut self) -> Option<Packet> {
        for _ in 0..2 {
            let port = self.next_port;
            self.next_port ^= 1;
            while let Ok(n) = self.ports[port].recv(&mut self.buf) {
                match wire::decode(&self.buf[..n]) {
                    Ok(p) => {
                        if let Some(whole) = self.accept(p) {
                            return Some(whole);
                        }
                    }
                    Err(wire::DecodeError::CrcMismatch { .. }) => {
                        self.crc[port] = self.crc[port].saturating_add(1);
                        self.bad += 1;
                    }
                    Err(_) => self.bad += 1,
                }
            }
        }
        None
    }

    fn bad_packets(&self) -> u64 {
        self.bad
    }

    fn crc_errors(&self, port: usize) -> u32 {
        self.crc.get(port).copied().unwrap_or(0)
    }
}

trait CloneHeader {
    fn clone_header(&self) -> Packet;
}

impl CloneHeader for Packet {
    fn clone_header(&self) -> Packet {
        Packet {
            ptype: self.ptype,
            src: self.src,
            dst: self.dst,
            flags: self.flags,
            handler: self.handler,
            args: self.args.clone(),
            offset: self.offset,
            seq: self.seq,
            ack: self.ack,
            frag_offset: 0,
            total_len: 0,
            payload: Vec::new(),
        }
    }
}

/// The reliable link of a board: [`crate::ipv6::reliable::Transport`] over
/// a [`UdpLink`]'s two ports (see the module documentation).
pub struct ReliableLink {
    udp: UdpLink,
    cfg: reliable::Config,
    transport: Option<Transport>,
    impair: Option<Impairer>,
    failed: Option<(u16, String)>,
    last_check: Instant,
    buf: Vec<u8>,
}

impl std::fmt::Debug for ReliableLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReliableLink")
            .field("node", &self.udp.node)
            .field("nodes", &self.udp.nodes())
            .field("failed", &self.failed)
            .finish()
    }
}

impl ReliableLink {
    /// Binds both ports of board `node` (as [`UdpLink::bind`]); the
    /// transport starts once the peer table is set. `peer_timeout` is the
    /// silence after which a needed peer board is reported; `impair`
    /// impairs outgoing datagrams (tests).
    pub fn bind(
        node: u16,
        peer_timeout: Duration,
        impair: Option<Impair>,
    ) -> io::Result<ReliableLink> {
        let seed = 0x05ee_d0fb_0a2d ^ (node as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Ok(ReliableLink {
            udp: UdpLink::bind(node)?,
            cfg: reliable::Config {
                peer_timeout,
                ..reliable::Config::default()
            },
            transport: None,
            impair: impair.map(|f| Impairer::new(f, seed)),
            failed: None,
            last_check: Instant::now(),
            buf: vec![0; 1 << 16],
        })
    }

    /// The UDP port numbers of port 0 and port 1.
    pub fn local_ports(&self) -> io::Result<[u16; 2]> {
        self.udp.local_ports()
    }

    /// Sets the job-wide table (`ports[n]`: board `n`'s two UDP ports) and
    /// starts the transport.
    pub fn set_peers(&mut self, ports: &[[u16; 2]]) {
        self.udp.set_peers(ports);
        let datagrams = vec![MAX_UDP6_PAYLOAD; ports.len()];
        self.transport = Some(Transport::new(
            self.udp.node,
            &datagrams,
            self.cfg,
            Instant::now(),
        ));
    }

    /// The transport's counters (zero before the peer table is set).
    pub fn stats(&self) -> reliable::Stats {
        self.transport
            .as_ref()
            .map(Transport::stats)
            .unwrap_or_default()
    }

    /// Moves datagrams: socket to transport, held (impaired) datagrams
    /// that are due and everything the transport has to send out, then
    /// checks liveness now and then.
    fn pump(&mut self, now: Instant, receive: bool) {
        let Some(t) = self.transport.as_mut() else {
            return;
        };
        if receive {
            for _ in 0..RECV_BURST {
                match self.udp.recv_raw(&mut self.buf) {
                    Some(n) => t.receive(&self.buf[..n], now),
                    None => break,
                }
            }
        }
        let udp = &mut self.udp;
        if let Some(imp) = self.impair.as_mut() {
            imp.release(now, &mut |d, b| {
                let _ = udp.send_raw(d, b);
            });
        }
        let impair = &mut self.impair;
        t.transmit(now, &mut |dst, bytes| match impair {
            None => {
                let _ = udp.send_raw(dst, bytes);
            }
            Some(imp) => imp.pass(now, dst, bytes, &mut |d, b| {
                let _ = udp.send_raw(d, b);
            }),
        });
        if self.failed.is_none() && now.saturating_duration_since(self.last_check) >= LIVENESS_CHECK
        {
            self.last_check = now;
            if let Err(e) = t.check(now) {
                self.failed = Some((
                    e.peer,
                    format!(
                        "{} (FSHMEM_PEER_TIMEOUT {:?})",
                        e.reason, self.cfg.peer_timeout
                    ),
                ));
            }
        }
    }
}

impl Link for ReliableLink {
    fn send(&mut self, p: &Packet) -> io::Result<()> {
        let Some(t) = self.transport.as_mut() else {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the link has no peer table yet",
            ));
        };
        if p.dst as usize >= self.udp.nodes() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no link to node {}", p.dst),
            ));
        }
        let now = Instant::now();
        t.send(p.clone(), now);
        self.pump(now, false);
        Ok(())
    }

    fn recv(&mut self) -> Option<Packet> {
        if let Some(p) = self.transport.as_mut().and_then(Transport::delivered) {
            return Some(p);
        }
        self.pump(Instant::now(), true);
        self.transport.as_mut().and_then(Transport::delivered)
    }

    fn bad_packets(&self) -> u64 {
        let s = self.stats();
        s.rejected + s.reassembly_errors
    }

    fn crc_errors(&self, port: usize) -> u32 {
        self.udp.crc_errors(port)
    }

    fn failure(&self) -> Option<(u16, String)> {
        self.failed.clone()
    }
}
