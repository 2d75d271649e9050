//! The UDP floor of the ipv6 conduit: what two processes that do nothing
//! but busy-poll a UDP socket over `[::1]` achieve on this machine.
//!
//! - Round trip of a message of `size` bytes one way and 8 bytes back (an
//!   8-byte put + quiet, or an 8-byte get, cannot beat the 8-byte round trip;
//!   a put of `size` bytes + quiet, or a get of `size` bytes, cannot beat the
//!   round trip of `size`). Messages larger than one datagram travel as
//!   datagrams of at most [`MAX_DGRAM`] bytes, as the conduit's packets do.
//! - One-way stream bandwidth: a stream of datagrams of
//!   `min(size, STREAM_DGRAM)` payload bytes from one process to the other,
//!   which acknowledges every 256 KiB received so that at most [`WINDOW`]
//!   bytes are in flight and the receive buffer never overflows.
//!
//! The peer is this program again (`floor --udp-peer PORT`), pinned to
//! CPU 1 while the measuring process runs on CPU 0. Every datagram starts
//! with a 16-byte header (trial, sequence, size, mode); a trial that
//! loses a datagram (nothing arrives for [`STALL`]) is run again under a
//! new trial number, which the peer uses to forget the old one.

use std::io::ErrorKind;
use std::net::{Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Largest datagram payload sent: the loopback MTU (65,536) less 48 bytes
/// of IPv6 and UDP headers, as the ipv6 conduit's path MTU gives it.
pub const MAX_DGRAM: usize = 65_488;
/// Datagram payload of the one-way stream (the reference floor).
pub const STREAM_DGRAM: usize = 8 << 10;
/// Most bytes in flight in the stream.
pub const WINDOW: usize = 1 << 20;
/// The receiver acknowledges at least every this many bytes.
const ACK_EVERY: usize = 256 << 10;
/// A trial with no progress for this long lost a datagram.
const STALL: Duration = Duration::from_millis(200);
/// The peer exits after this long without a datagram.
const PEER_IDLE: Duration = Duration::from_secs(20);
const HDR: usize = 16;

const MODE_RTT: u8 = 1;
const MODE_STREAM: u8 = 2;
const MODE_BYE: u8 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hdr {
    trial: u32,
    seq: u32,
    size: u32,
    mode: u8,
}

impl Hdr {
    fn write(&self, b: &mut [u8]) {
        b[0..4].copy_from_slice(&self.trial.to_le_bytes());
        b[4..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..12].copy_from_slice(&self.size.to_le_bytes());
        b[12] = self.mode;
        b[13..16].fill(0);
    }

    fn read(b: &[u8]) -> Option<Hdr> {
        let w = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().expect("4 bytes"));
        (b.len() >= HDR).then(|| Hdr {
            trial: w(0),
            seq: w(4),
            size: w(8),
            mode: b[12],
        })
    }
}

fn set_buffers(s: &UdpSocket, bytes: i32) {
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        for name in [force, plain] {
            // SAFETY: passes a pointer to a live c_int and its size.
            let r = unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    name,
                    (&bytes as *const i32).cast(),
                    std::mem::size_of::<i32>() as libc::socklen_t,
                )
            };
            if r == 0 {
                break;
            }
        }
    }
}

fn socket() -> std::io::Result<UdpSocket> {
    let s = UdpSocket::bind((Ipv6Addr::LOCALHOST, 0))?;
    s.set_nonblocking(true)?;
    set_buffers(&s, 8 << 20);
    Ok(s)
}

/// Sends one datagram, busy-retrying while the send buffer is full.
fn send(s: &UdpSocket, b: &[u8]) -> std::io::Result<()> {
    loop {
        match s.send(b) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
}

/// Receives one datagram if one is there.
fn try_recv(s: &UdpSocket, b: &mut [u8]) -> std::io::Result<Option<usize>> {
    match s.recv(b) {
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
        // A datagram to a peer not yet bound bounces as ECONNREFUSED.
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => Ok(None),
        Err(e) => Err(e),
    }
}

/// The peer process: answers round-trip messages and acknowledges the
/// stream until told to stop, or until nothing arrives for a while.
pub fn peer(port: u16) -> std::io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets this process's signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let s = socket()?;
    s.connect((Ipv6Addr::LOCALHOST, port))?;
    let mut buf = vec![0u8; MAX_DGRAM];
    let mut reply = [0u8; HDR + 8];
    Hdr {
        trial: 0,
        seq: 0,
        size: 0,
        mode: 0,
    }
    .write(&mut reply);
    send(&s, &reply)?; // hello: tells the measuring process our address
    let (mut trial, mut got, mut acked) = (None::<u32>, 0usize, 0usize);
    let mut last = Instant::now();
    loop {
        let Some(n) = try_recv(&s, &mut buf)? else {
            if last.elapsed() > PEER_IDLE {
                return Ok(());
            }
            std::hint::spin_loop();
            continue;
        };
        last = Instant::now();
        let Some(h) = Hdr::read(&buf[..n]) else {
            continue;
        };
        if h.mode == MODE_BYE {
            return Ok(());
        }
        match trial {
            // A late datagram of a trial given up.
            Some(t) if h.trial < t => continue,
            Some(t) if h.trial == t => {}
            _ => (trial, got, acked) = (Some(h.trial), 0, 0),
        }
        got += n - HDR;
        match h.mode {
            MODE_RTT if got >= h.size as usize => {
                got = 0;
                Hdr {
                    mode: MODE_RTT,
                    ..h
                }
                .write(&mut reply);
                send(&s, &reply)?;
            }
            // `seq` carries the stream's total length.
            MODE_STREAM if got - acked >= ACK_EVERY || got >= h.seq as usize => {
                acked = got;
                Hdr {
                    seq: got as u32,
                    mode: MODE_STREAM,
                    ..h
                }
                .write(&mut reply);
                send(&s, &reply)?;
            }
            _ => {}
        }
    }
}

/// The measuring side, connected to a running peer.
pub struct Floor {
    s: UdpSocket,
    child: std::process::Child,
    trial: u32,
    buf: Vec<u8>,
    out: Vec<u8>,
    /// Trials run again because a datagram was lost.
    pub retries: u32,
}

impl Floor {
    /// Starts the peer process (this executable with `--udp-peer`).
    pub fn start() -> std::io::Result<Floor> {
        let s = socket()?;
        let port = s.local_addr()?.port();
        let child = std::process::Command::new(std::env::current_exe()?)
            .args(["--udp-peer", &port.to_string()])
            .spawn()?;
        let mut buf = vec![0u8; MAX_DGRAM];
        let t0 = Instant::now();
        let from: SocketAddr = loop {
            match s.recv_from(&mut buf) {
                Ok((_, from)) => break from,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if t0.elapsed() > Duration::from_secs(10) {
                        return Err(std::io::Error::new(
                            ErrorKind::TimedOut,
                            "the UDP peer process did not say hello within 10 s",
                        ));
                    }
                    std::thread::yield_now();
                }
                Err(e) => return Err(e),
            }
        };
        s.connect(from)?;
        Ok(Floor {
            s,
            child,
            trial: 0,
            buf,
            out: vec![0u8; MAX_DGRAM],
            retries: 0,
        })
    }

    /// Sends `size` payload bytes as datagrams of at most `dgram` bytes.
    fn message(&mut self, h: Hdr, size: usize, dgram: usize) -> std::io::Result<()> {
        let mut left = size;
        loop {
            let chunk = left.min(dgram - HDR);
            h.write(&mut self.out);
            send(&self.s, &self.out[..HDR + chunk])?;
            left -= chunk;
            if left == 0 {
                return Ok(());
            }
        }
    }

    /// Waits for a datagram of this trial; `None` if the trial stalled.
    fn answer(&mut self) -> std::io::Result<Option<Hdr>> {
        let t0 = Instant::now();
        loop {
            if let Some(n) = try_recv(&self.s, &mut self.buf)? {
                if let Some(h) = Hdr::read(&self.buf[..n])
                    && h.trial == self.trial
                {
                    return Ok(Some(h));
                }
            } else if t0.elapsed() > STALL {
                return Ok(None);
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Seconds for `iters` round trips of `size` bytes out and 8 back.
    pub fn round_trips(&mut self, size: usize, iters: usize) -> std::io::Result<f64> {
        'trial: loop {
            self.trial += 1;
            let t0 = Instant::now();
            for i in 0..iters {
                let h = Hdr {
                    trial: self.trial,
                    seq: i as u32,
                    size: size as u32,
                    mode: MODE_RTT,
                };
                self.message(h, size, MAX_DGRAM)?;
                match self.answer()? {
                    Some(a) if a.seq == i as u32 => {}
                    _ => {
                        self.retries += 1;
                        continue 'trial;
                    }
                }
            }
            return Ok(t0.elapsed().as_secs_f64());
        }
    }

    /// Seconds to stream `total` bytes one way in datagrams of `dgram`
    /// payload bytes, until the receiver acknowledged all of them.
    pub fn stream(&mut self, total: usize, dgram: usize) -> std::io::Result<f64> {
        'trial: loop {
            self.trial += 1;
            let h = Hdr {
                trial: self.trial,
                seq: total as u32,
                size: dgram as u32,
                mode: MODE_STREAM,
            };
            h.write(&mut self.out);
            let (mut sent, mut acked) = (0usize, 0usize);
            let t0 = Instant::now();
            let mut progress = Instant::now();
            while acked < total {
                while sent < total && sent - acked < WINDOW {
                    let chunk = (total - sent).min(dgram);
                    send(&self.s, &self.out[..HDR + chunk])?;
                    sent += chunk;
                }
                match try_recv(&self.s, &mut self.buf)? {
                    Some(n) => {
                        if let Some(a) = Hdr::read(&self.buf[..n])
                            && a.trial == self.trial
                            && a.seq as usize > acked
                        {
                            acked = a.seq as usize;
                            progress = Instant::now();
                        }
                    }
                    None if progress.elapsed() > STALL => {
                        self.retries += 1;
                        continue 'trial;
                    }
                    None => std::hint::spin_loop(),
                }
            }
            return Ok(t0.elapsed().as_secs_f64());
        }
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let mut bye = [0u8; HDR];
        Hdr {
            trial: self.trial,
            seq: 0,
            size: 0,
            mode: MODE_BYE,
        }
        .write(&mut bye);
        let _ = send(&self.s, &bye);
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_short_datagrams_are_refused() {
        let h = Hdr {
            trial: 7,
            seq: 0xdead_beef,
            size: 65_536,
            mode: MODE_STREAM,
        };
        let mut b = [0xffu8; HDR];
        h.write(&mut b);
        assert_eq!(Hdr::read(&b), Some(h));
        assert_eq!(Hdr::read(&b[..HDR - 1]), None);
    }
}
