//! devsim's board links: how `spec/wire.md` packets travel between boards.
//!
//! [`Link`] is the small interface the board model needs — send a whole
//! packet, receive whole packets without blocking — so the transport can be
//! swapped (for the IPv6 bridge's reliable layer, once it is available)
//! without touching the model.
//!
//! [`UdpLink`] is plain UDP on `[::1]`. A board has two ports, each a UDP
//! socket bound to an ephemeral loopback port; **both ports reach every
//! peer** (a full mesh, no forwarding). The pair `(s, d)` always uses port
//! `d mod 2` of board `s` and port `s mod 2` of board `d`, so every pair has
//! one path and packets between a pair stay in order (loopback UDP keeps
//! per-socket order). Packets too large for a datagram (a Long AM of 64 KiB)
//! are fragmented with `frag_offset`/`total_len` exactly as `spec/wire.md`
//! describes and reassembled before they reach the engine. Socket buffers
//! are raised to 4 MiB and the engine's in-flight window is bounded, so
//! loopback does not overflow; the link has no retransmission (it is not a
//! reliable transport: a lost fragment is counted as a bad packet).

use gasnet_core::wire::{self, MAX_UDP6_PAYLOAD, Packet, max_fragment_payload};
use std::collections::HashMap;
use std::io;
use std::net::{Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

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
