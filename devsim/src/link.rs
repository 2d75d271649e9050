//! devsim's board links: how `spec/wire.md` packets travel between boards.
//!
//! [`Link`] is the small interface the board model needs — send a whole
//! packet, receive whole packets without blocking, report a peer that
//! stopped answering — so the transport can be swapped without touching
//! the model.
//!
//! [`ReliableLink`], the one boards use, is the reliable transport of
//! `gasnet-core` ([`gasnet_core::reliable`]: per-peer sequence numbers,
//! cumulative ACK and selective NACK, retransmission on timeout with
//! backoff, duplicate suppression, windows, fragmentation and in-order
//! delivery — the same state machine the ipv6 conduit runs) over the two
//! UDP ports of a [`UdpLink`], as a board's link layer does in hardware: a
//! lost, duplicated or reordered datagram between boards is recovered,
//! never seen by the engine. This module keeps only the sockets and the
//! clock. A peer board that owes an acknowledgement or a response and
//! stays silent for the peer timeout (`devsim board --peer-timeout`, from
//! `FSHMEM_PEER_TIMEOUT`, default 10 s) is reported through
//! [`Link::failure`]; the board raises `ERR_STATUS.PEER_TIMEOUT` with the
//! peer's node id in `ERR_INFO` (`spec/registers.md` §4.4). For tests,
//! `--impair loss=5,dup=1,reorder=10` (from `FSHMEM_DEVSIM_IMPAIR`) impairs
//! the datagrams a board sends ([`gasnet_core::impair`]).
//!
//! [`UdpLink`] is the two sockets: a board has two ports, each a UDP socket
//! bound to an ephemeral loopback port; **both ports reach every peer** (a
//! full mesh, no forwarding). The pair `(s, d)` always uses port `d mod 2`
//! of board `s` and port `s mod 2` of board `d`, so every pair has one path
//! and datagrams between a pair stay in order (loopback UDP keeps
//! per-socket order).

use gasnet_core::impair::{Impair, Impairer};
use gasnet_core::reliable::{self, Transport};
use gasnet_core::wire::{MAX_UDP6_PAYLOAD, Packet};
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
    /// A whole packet already taken from the sockets by [`Link::recv`],
    /// without reading them again: a board step reads its sockets once
    /// (each read that finds nothing is a system call on the path of the
    /// packet that comes next).
    fn recv_taken(&mut self) -> Option<Packet>;
    /// Datagrams dropped because they did not decode or reassemble.
    fn bad_packets(&self) -> u64;
    /// Frames dropped on `port` for a failed integrity check.
    fn crc_errors(&self, port: usize) -> u32;
    /// A peer board that stopped answering: its node id and what was
    /// observed. Links without liveness tracking never report one.
    fn failure(&self) -> Option<(u16, String)> {
        None
    }
    /// The sockets whose datagrams a dozing board wakes for
    /// ([`crate::core::Doze`]).
    fn fds(&self) -> Vec<std::os::fd::RawFd>;
}

/// Socket buffer size asked for (capped by the kernel's `rmem_max`).
const SOCKET_BUFFER: libc::c_int = 4 << 20;

/// Two UDP sockets on `[::1]`, one per link port.
#[derive(Debug)]
pub struct UdpLink {
    node: u16,
    ports: [UdpSocket; 2],
    /// Both port addresses of every board, by node id.
    peers: Vec<[SocketAddr; 2]>,
    next_port: usize,
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
            next_port: 0,
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
    /// a congested link would; the transport above retransmits).
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

    /// As [`UdpLink::send_raw`], for a datagram given in parts
    /// ([`Transport::transmit_gather`]): one gathering `sendmsg(2)`, so a
    /// large payload is not copied into one buffer first.
    pub fn send_parts(&mut self, dst: u16, parts: &[&[u8]]) -> io::Result<()> {
        if let [whole] = parts {
            return self.send_raw(dst, whole);
        }
        let Some(addrs) = self.peers.get(dst as usize).copied() else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no link to node {dst}"),
            ));
        };
        let SocketAddr::V6(to) = addrs[self.node as usize % 2] else {
            return self.send_raw(dst, &parts.concat());
        };
        // SAFETY: sockaddr_in6 is plain data; all-zero is a valid value.
        let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
        sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
        sa.sin6_port = to.port().to_be();
        sa.sin6_addr.s6_addr = to.ip().octets();
        sa.sin6_scope_id = to.scope_id();
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; 4];
        let n = parts.len().min(iov.len());
        for (v, p) in iov.iter_mut().zip(parts) {
            v.iov_base = p.as_ptr() as *mut libc::c_void;
            v.iov_len = p.len();
        }
        // SAFETY: msghdr is plain data; all-zero is a valid value.
        let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
        m.msg_name = &mut sa as *mut libc::sockaddr_in6 as *mut libc::c_void;
        m.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        m.msg_iov = iov.as_mut_ptr();
        m.msg_iovlen = n as _;
        let fd = self.ports[dst as usize % 2].as_raw_fd();
        // SAFETY: the header names `sa`, a live sockaddr_in6 of the length
        // given, and `n` iovecs over the live parts; the kernel only reads
        // them.
        let r = unsafe { libc::sendmsg(fd, &m, 0) };
        if r >= 0 {
            return Ok(());
        }
        match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            e => Err(e),
        }
    }

    /// Receives one datagram into `buf` from either port, without
    /// blocking: its length and the port it came in on.
    pub fn recv_raw(&mut self, buf: &mut [u8]) -> Option<(usize, usize)> {
        for _ in 0..2 {
            let port = self.next_port;
            self.next_port ^= 1;
            if let Ok(n) = self.ports[port].recv(buf) {
                return Some((n, port));
            }
        }
        None
    }

    /// The descriptors of both ports' sockets.
    pub fn fds(&self) -> [std::os::fd::RawFd; 2] {
        [self.ports[0].as_raw_fd(), self.ports[1].as_raw_fd()]
    }

    /// The number of boards in the peer table.
    pub fn nodes(&self) -> usize {
        self.peers.len()
    }
}

/// Bytes of IPv6 and UDP headers in front of a datagram's payload.
const IP_UDP_HEADERS: usize = 48;

/// The largest UDP payload towards `peer` (a loopback address) that
/// travels unfragmented: the path MTU, as the kernel reports it for a
/// socket connected there, less the headers; IPv6's minimum MTU's share
/// when it reports none.
///
/// The ipv6 conduit has the same query
/// (`conduits::ipv6::net::path_mtu`); devsim does not use it, since the
/// board model meets the conduits only at the BAR files
/// (`spec/registers.md`), and gasnet-core, which both use, does no I/O.
fn loopback_datagram(peer: Option<SocketAddr>) -> usize {
    let mtu = peer.and_then(|peer| {
        let s = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0)).ok()?;
        s.connect(peer).ok()?;
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `v`, a local.
        let r = unsafe {
            libc::getsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (r == 0 && v >= 1280).then_some(v as usize)
    });
    (mtu.unwrap_or(1280) - IP_UDP_HEADERS).min(MAX_UDP6_PAYLOAD)
}

/// The reliable link of a board: [`gasnet_core::reliable::Transport`] over
/// a [`UdpLink`]'s two ports (see the module documentation).
pub struct ReliableLink {
    udp: UdpLink,
    cfg: reliable::Config,
    transport: Option<Transport>,
    impair: Option<Impairer>,
    failed: Option<(u16, String)>,
    last_check: Instant,
    buf: Vec<u8>,
    /// Datagrams each port received that failed the integrity check.
    crc: [u32; 2],
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
            impair: impair.map(|f| Impairer::new(f, seed, node)),
            failed: None,
            last_check: Instant::now(),
            buf: vec![0; 1 << 16],
            crc: [0; 2],
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
        // Datagrams that fit the loopback's MTU: a larger one is cut into
        // IPv6 fragments, which the kernel checksums in software and
        // reassembles (a third of a board's cycles in a put stream).
        let datagram = loopback_datagram(self.udp.peers.first().map(|p| p[0]));
        let datagrams = vec![datagram; ports.len()];
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
                let Some((n, port)) = self.udp.recv_raw(&mut self.buf) else {
                    break;
                };
                if self.impair.as_ref().is_some_and(|i| i.cut_in(now)) {
                    continue;
                }
                let before = t.stats().crc_errors;
                t.receive(&self.buf[..n], now);
                if t.stats().crc_errors != before {
                    self.crc[port] = self.crc[port].saturating_add(1);
                }
            }
        }
        let udp = &mut self.udp;
        if let Some(imp) = self.impair.as_mut() {
            imp.release(now, &mut |d, b| {
                let _ = udp.send_raw(d, b);
            });
        }
        match self.impair.as_mut() {
            // Large payloads leave by a gathering send, not copied again.
            None => t.transmit_gather(now, &mut |dst, parts| {
                let _ = udp.send_parts(dst, parts);
            }),
            Some(imp) => t.transmit(now, &mut |dst, bytes| {
                imp.pass(now, dst, bytes, &mut |d, b| {
                    let _ = udp.send_raw(d, b);
                })
            }),
        }
        if self.failed.is_none() && now.saturating_duration_since(self.last_check) >= LIVENESS_CHECK
        {
            self.last_check = now;
            if let Err(e) = t.check(now) {
                self.failed = Some((
                    e.peer,
                    format!(
                        "{} (peer timeout {:?}, FSHMEM_PEER_TIMEOUT)",
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
        if let Some(p) = self.recv_taken() {
            return Some(p);
        }
        self.pump(Instant::now(), true);
        self.recv_taken()
    }

    fn recv_taken(&mut self) -> Option<Packet> {
        self.transport.as_mut().and_then(Transport::delivered)
    }

    fn bad_packets(&self) -> u64 {
        let s = self.stats();
        s.rejected + s.reassembly_errors
    }

    fn crc_errors(&self, port: usize) -> u32 {
        self.crc.get(port).copied().unwrap_or(0)
    }

    fn failure(&self) -> Option<(u16, String)> {
        self.failed.clone()
    }

    fn fds(&self) -> Vec<std::os::fd::RawFd> {
        self.udp.fds().to_vec()
    }
}
