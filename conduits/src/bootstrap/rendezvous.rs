//! The rendezvous bootstrap: one small TCP server, every PE a client.
//!
//! Each PE connects to `FSHMEM_BOOTSTRAP=host:port`, says hello with its
//! rank and the job size, and keeps the connection for the whole job. An
//! all-gather is one round: every PE sends its blob, the server waits for
//! all of them and sends every PE the whole table; a barrier is an
//! all-gather of nothing. The server watches every connection all the
//! time, not only during a round: a PE whose connection closes without
//! saying goodbye (a crash, or `_exit(0)` skipping every exit handler), or
//! that says goodbye while the others are in a collective, fails the job:
//! the server tells every other PE which PE failed (`FAIL`) at once. Their
//! collective call returns [`ConduitError::PeerFailed`] instead of hanging,
//! and between collectives [`Bootstrap::check`] reports it (the ipv6
//! progress thread calls it every few milliseconds), so PEs waiting on
//! anything stop within a moment, naming the PE.
//!
//! A client's blocking reads are bounded by the wait timeout
//! (`FSHMEM_WAIT_TIMEOUT`, [`crate::wait::timeout`]) when one is set: a
//! collective whose answer does not come in time fails with
//! [`ConduitError::Timeout`] naming the round.
//!
//! # Frames
//!
//! Every message is a frame: a type byte, a big-endian `u32` body length
//! (at most [`MAX_FRAME`]) and the body. Integers are big-endian `u32`.
//!
//! | type | name | direction | body |
//! |---:|---|---|---|
//! | 1 | `HELLO` | PE → server | `"FSHB"`, version byte 1, rank, size |
//! | 2 | `GATHER` | PE → server | round, blob (at most [`super::MAX_BLOB`]) |
//! | 3 | `BYE` | PE → server | empty |
//! | 16 | `RESULT` | server → PE | round, count, then count × (length, blob) |
//! | 17 | `FAIL` | server → PE | the failed rank, a UTF-8 reason |
//!
//! The server is started by `oshrun --conduit ipv6` (on `[::1]`), or by
//! rank 0 in a thread when it can bind the address (when rank 0 runs on the
//! host the address names), or by anything else that runs [`Server`].

use super::{Bootstrap, MAX_BLOB, check_blob};
use crate::error::{ConduitError, Result};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long PEs wait for the whole job to connect, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest frame body accepted.
pub const MAX_FRAME: usize = 64 << 20;

const MAGIC: &[u8; 4] = b"FSHB";
const VERSION: u8 = 1;
const T_HELLO: u8 = 1;
const T_GATHER: u8 = 2;
const T_BYE: u8 = 3;
const T_RESULT: u8 = 16;
const T_FAIL: u8 = 17;

/// A decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A PE introduces itself.
    Hello {
        /// Its rank.
        rank: u32,
        /// The job size it believes in.
        size: u32,
    },
    /// A PE's contribution to round `round`.
    Gather {
        /// The collective's number, from 0.
        round: u32,
        /// The bytes.
        blob: Vec<u8>,
    },
    /// A PE leaves (after its last collective).
    Bye,
    /// Everybody's contributions to round `round`, by rank.
    Result {
        /// The round.
        round: u32,
        /// The blobs, by rank.
        blobs: Vec<Vec<u8>>,
    },
    /// Round failed because of `rank`.
    Fail {
        /// The PE that failed.
        rank: u32,
        /// What happened.
        reason: String,
    },
}

/// Why bytes are not a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer bytes than the frame needs.
    Truncated,
    /// More bytes than the frame's fields use.
    Trailing,
    /// A type byte that names no frame.
    UnknownType(u8),
    /// A body longer than [`MAX_FRAME`] (or a blob longer than its limit).
    TooLong(usize),
    /// A hello without the magic or with another version.
    BadHello,
    /// A reason that is not UTF-8.
    BadText,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Truncated => f.write_str("truncated frame"),
            FrameError::Trailing => f.write_str("trailing bytes after a frame"),
            FrameError::UnknownType(t) => write!(f, "unknown frame type {t}"),
            FrameError::TooLong(n) => write!(f, "frame field of {n} bytes is too long"),
            FrameError::BadHello => f.write_str("not an fshmem bootstrap hello (magic/version)"),
            FrameError::BadText => f.write_str("failure reason is not UTF-8"),
        }
    }
}

impl std::error::Error for FrameError {}

struct Cursor<'a>(&'a [u8]);
impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], FrameError> {
        if self.0.len() < n {
            return Err(FrameError::Truncated);
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u32(&mut self) -> std::result::Result<u32, FrameError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn end(&self) -> std::result::Result<(), FrameError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Trailing)
        }
    }
}

impl Frame {
    /// Encodes the frame (header and body).
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let t = match self {
            Frame::Hello { rank, size } => {
                body.extend_from_slice(MAGIC);
                body.push(VERSION);
                body.extend_from_slice(&rank.to_be_bytes());
                body.extend_from_slice(&size.to_be_bytes());
                T_HELLO
            }
            Frame::Gather { round, blob } => {
                body.extend_from_slice(&round.to_be_bytes());
                body.extend_from_slice(blob);
                T_GATHER
            }
            Frame::Bye => T_BYE,
            Frame::Result { round, blobs } => {
                body.extend_from_slice(&round.to_be_bytes());
                body.extend_from_slice(&(blobs.len() as u32).to_be_bytes());
                for b in blobs {
                    body.extend_from_slice(&(b.len() as u32).to_be_bytes());
                    body.extend_from_slice(b);
                }
                T_RESULT
            }
            Frame::Fail { rank, reason } => {
                body.extend_from_slice(&rank.to_be_bytes());
                body.extend_from_slice(reason.as_bytes());
                T_FAIL
            }
        };
        let mut out = Vec::with_capacity(5 + body.len());
        out.push(t);
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Decodes a frame of type `t` with body `body`.
    pub fn decode(t: u8, body: &[u8]) -> std::result::Result<Frame, FrameError> {
        if body.len() > MAX_FRAME {
            return Err(FrameError::TooLong(body.len()));
        }
        let mut c = Cursor(body);
        let f = match t {
            T_HELLO => {
                if c.take(4)? != MAGIC || c.take(1)?[0] != VERSION {
                    return Err(FrameError::BadHello);
                }
                let rank = c.u32()?;
                let size = c.u32()?;
                c.end()?;
                Frame::Hello { rank, size }
            }
            T_GATHER => {
                let round = c.u32()?;
                let blob = c.0.to_vec();
                if blob.len() > MAX_BLOB {
                    return Err(FrameError::TooLong(blob.len()));
                }
                Frame::Gather { round, blob }
            }
            T_BYE => {
                c.end()?;
                Frame::Bye
            }
            T_RESULT => {
                let round = c.u32()?;
                let n = c.u32()? as usize;
                if n > body.len() / 4 {
                    return Err(FrameError::Truncated);
                }
                let mut blobs = Vec::with_capacity(n);
                for _ in 0..n {
                    let len = c.u32()? as usize;
                    if len > MAX_BLOB {
                        return Err(FrameError::TooLong(len));
                    }
                    blobs.push(c.take(len)?.to_vec());
                }
                c.end()?;
                Frame::Result { round, blobs }
            }
            T_FAIL => {
                let rank = c.u32()?;
                let reason = std::str::from_utf8(c.0)
                    .map_err(|_| FrameError::BadText)?
                    .to_string();
                Frame::Fail { rank, reason }
            }
            other => return Err(FrameError::UnknownType(other)),
        };
        Ok(f)
    }

    /// Decodes one whole frame from `bytes` (header and body, nothing more).
    pub fn from_bytes(bytes: &[u8]) -> std::result::Result<Frame, FrameError> {
        if bytes.len() < 5 {
            return Err(FrameError::Truncated);
        }
        let len = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
        match (bytes.len() - 5).cmp(&len) {
            std::cmp::Ordering::Less => Err(FrameError::Truncated),
            std::cmp::Ordering::Greater => Err(FrameError::Trailing),
            std::cmp::Ordering::Equal => Frame::decode(bytes[0], &bytes[5..]),
        }
    }
}

/// Reads one frame; `Ok(None)` on a clean end of stream before it.
fn read_frame(s: &mut TcpStream) -> std::io::Result<Option<Frame>> {
    let mut h = [0u8; 5];
    match s.read_exact(&mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            FrameError::TooLong(len),
        ));
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Frame::decode(h[0], &body)
        .map(Some)
        .map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
}

fn resolve(addr: &str) -> Result<Vec<SocketAddr>> {
    let v: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| {
            ConduitError::Bootstrap(format!("FSHMEM_BOOTSTRAP={addr:?} is not host:port ({e})"))
        })?
        .collect();
    if v.is_empty() {
        return Err(ConduitError::Bootstrap(format!(
            "FSHMEM_BOOTSTRAP={addr:?} resolves to no address"
        )));
    }
    Ok(v)
}

/// A rendezvous server for a job of `size` PEs, serving in a thread.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Server {
    /// Binds `addr` (port 0 picks one) and serves one job of `size` PEs in
    /// a thread; PEs must all connect within `timeout`.
    pub fn start(addr: SocketAddr, size: usize, timeout: Duration) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let thread = std::thread::Builder::new()
            .name("fshmem-rendezvous".to_string())
            .spawn(move || serve(listener, size, timeout))?;
        Ok(Server {
            addr,
            thread: Some(thread),
        })
    }

    /// The address PEs connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the server is done (every PE left, or the job failed).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Waits up to `timeout` for the server to finish; its outcome, or
    /// `None` if it is still serving.
    pub fn wait(&mut self, timeout: Duration) -> Option<Result<()>> {
        let deadline = Instant::now() + timeout;
        while !self.is_finished() {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let t = self.thread.take()?;
        Some(t.join().unwrap_or_else(|_| {
            Err(ConduitError::Bootstrap(
                "rendezvous server panicked".to_string(),
            ))
        }))
    }
}

fn serve(listener: TcpListener, size: usize, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    listener.set_nonblocking(true)?;
    let mut conns: Vec<Option<TcpStream>> = (0..size).map(|_| None).collect();
    let mut joined = 0;
    while joined < size {
        match listener.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                s.set_read_timeout(Some(Duration::from_secs(10)))?;
                match read_frame(&mut s) {
                    Ok(Some(Frame::Hello { rank, size: n }))
                        if n as usize == size
                            && (rank as usize) < size
                            && conns[rank as usize].is_none() =>
                    {
                        conns[rank as usize] = Some(s);
                        joined += 1;
                    }
                    Ok(Some(Frame::Hello { rank, size: n })) => {
                        let why = format!(
                            "rank {rank} of {n} does not fit this {size}-PE job (or joined twice)"
                        );
                        let _ = s.write_all(&Frame::Fail { rank, reason: why }.encode());
                    }
                    _ => {}
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing: Vec<usize> = (0..size).filter(|&r| conns[r].is_none()).collect();
                    let why = format!(
                        "PEs {missing:?} did not join the job within {:.0} s",
                        timeout.as_secs_f64()
                    );
                    fail_all(&mut conns, missing[0], &why);
                    return Err(ConduitError::Bootstrap(why));
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(e.into()),
        }
    }
    drop(listener);
    serve_rounds(conns, size)
}

/// What the server knows of one joined PE.
struct Member {
    conn: Option<TcpStream>,
    /// Its contribution to the current round.
    blob: Option<Vec<u8>>,
    /// It said goodbye.
    left: bool,
}

/// Serves the collectives of a job whose PEs have all joined, watching
/// every connection with `poll(2)`.
fn serve_rounds(conns: Vec<Option<TcpStream>>, size: usize) -> Result<()> {
    use std::os::fd::AsRawFd;
    let mut members: Vec<Member> = conns
        .into_iter()
        .map(|c| Member {
            conn: c,
            blob: None,
            left: false,
        })
        .collect();
    let mut round = 0u32;
    loop {
        let live: Vec<usize> = (0..size).filter(|&r| members[r].conn.is_some()).collect();
        if live.is_empty() {
            return Ok(());
        }
        let mut fds: Vec<libc::pollfd> = live
            .iter()
            .map(|&r| libc::pollfd {
                fd: members[r].conn.as_ref().map_or(-1, |c| c.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structures.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 200) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e.into());
        }
        let mut failure: Option<(usize, String)> = None;
        for (k, &r) in live.iter().enumerate() {
            if fds[k].revents == 0 {
                continue;
            }
            let m = &mut members[r];
            let Some(s) = m.conn.as_mut() else { continue };
            match read_frame(s) {
                Ok(Some(Frame::Gather { round: k, blob })) if k == round && m.blob.is_none() => {
                    m.blob = Some(blob);
                }
                Ok(Some(Frame::Bye)) => {
                    m.left = true;
                    m.conn = None;
                }
                Ok(Some(f)) => {
                    failure.get_or_insert((r, format!("sent an unexpected bootstrap frame {f:?}")));
                    m.conn = None;
                }
                Ok(None) => {
                    failure.get_or_insert((
                        r,
                        "exited or closed its bootstrap connection without finalizing".into(),
                    ));
                    m.conn = None;
                }
                Err(e) => {
                    failure.get_or_insert((r, format!("bootstrap connection failed: {e}")));
                    m.conn = None;
                }
            }
        }
        let waiting = members.iter().any(|m| m.blob.is_some());
        if failure.is_none()
            && waiting
            && let Some(r) = (0..size).find(|&r| members[r].left)
        {
            failure = Some((r, "left the job while others wait in a collective".into()));
        }
        if let Some((r, why)) = failure {
            let mut conns: Vec<Option<TcpStream>> = members.into_iter().map(|m| m.conn).collect();
            fail_all(&mut conns, r, &why);
            return Err(ConduitError::PeerFailed { pe: r, reason: why });
        }
        let complete = members.iter().all(|m| m.left || m.blob.is_some());
        if waiting && complete {
            let blobs: Vec<Vec<u8>> = members
                .iter_mut()
                .map(|m| m.blob.take().unwrap_or_default())
                .collect();
            let out = Frame::Result { round, blobs }.encode();
            for s in members.iter_mut().filter_map(|m| m.conn.as_mut()) {
                let _ = s.write_all(&out);
            }
            round = round.wrapping_add(1);
        }
    }
}

fn fail_all(conns: &mut [Option<TcpStream>], rank: usize, reason: &str) {
    let f = Frame::Fail {
        rank: rank as u32,
        reason: reason.to_string(),
    }
    .encode();
    for s in conns.iter_mut().flatten() {
        let _ = s.write_all(&f);
        let _ = s.shutdown(Shutdown::Write);
    }
}

/// A PE's connection to the rendezvous server.
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    rank: usize,
    size: usize,
    round: u32,
    server_addr: SocketAddr,
    local: SocketAddr,
    /// The server, when this PE runs it.
    server: Option<Server>,
    left: bool,
    /// The failure [`Bootstrap::check`] learnt of.
    failed: Option<ConduitError>,
}

impl Client {
    /// Joins the job at `addr` (`host:port`) as `rank` of `size`. Rank 0
    /// first tries to serve the address itself; every PE retries the
    /// connection until `timeout`.
    pub fn join(addr: &str, rank: usize, size: usize, timeout: Duration) -> Result<Client> {
        let addrs = resolve(addr)?;
        let deadline = Instant::now() + timeout;
        let mut server = None;
        if rank == 0 {
            for a in &addrs {
                if let Ok(s) = Server::start(*a, size, timeout) {
                    server = Some(s);
                    break;
                }
            }
        }
        let mut wait = Duration::from_millis(5);
        let (stream, server_addr) = 'connect: loop {
            let mut last = String::new();
            for a in &addrs {
                match TcpStream::connect_timeout(a, Duration::from_secs(2)) {
                    Ok(s) => break 'connect (s, *a),
                    Err(e) => last = e.to_string(),
                }
            }
            if Instant::now() >= deadline {
                return Err(ConduitError::Bootstrap(format!(
                    "PE {rank}: cannot reach the rendezvous server at {addr} within {:.0} s: {last}",
                    timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(200));
        };
        stream.set_nodelay(true)?;
        let local = stream.local_addr()?;
        let mut c = Client {
            stream,
            rank,
            size,
            round: 0,
            server_addr,
            local,
            server,
            left: false,
            failed: None,
        };
        let hello = Frame::Hello {
            rank: rank as u32,
            size: size as u32,
        };
        c.stream.write_all(&hello.encode())?;
        Ok(c)
    }

    fn io(&self, e: std::io::Error) -> ConduitError {
        ConduitError::Bootstrap(format!(
            "PE {}: rendezvous server {}: {e}",
            self.rank, self.server_addr
        ))
    }
}

impl Bootstrap for Client {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        check_blob(mine)?;
        if self.left {
            return Err(ConduitError::Bootstrap(
                "the bootstrap was finalized".to_string(),
            ));
        }
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let g = Frame::Gather {
            round: self.round,
            blob: mine.to_vec(),
        };
        self.stream.write_all(&g.encode()).map_err(|e| self.io(e))?;
        // Bounded by the wait timeout, when one is set.
        let limit = crate::wait::timeout();
        self.stream
            .set_read_timeout(limit)
            .map_err(|e| self.io(e))?;
        let got = read_frame(&mut self.stream);
        if let (Some(waited), Err(e)) = (limit, &got)
            && matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
        {
            return Err(ConduitError::Timeout {
                what: format!(
                    "bootstrap round {} (every PE's contribution, from the rendezvous server {})",
                    self.round, self.server_addr
                ),
                waited,
            });
        }
        match got {
            Ok(Some(Frame::Result { round, blobs }))
                if round == self.round && blobs.len() == self.size =>
            {
                self.round = self.round.wrapping_add(1);
                Ok(blobs)
            }
            Ok(Some(Frame::Fail { rank, reason })) => Err(ConduitError::PeerFailed {
                pe: rank as usize,
                reason,
            }),
            Ok(Some(f)) => Err(ConduitError::Bootstrap(format!(
                "unexpected answer from the rendezvous server: {f:?}"
            ))),
            Ok(None) => Err(ConduitError::Bootstrap(format!(
                "the rendezvous server {} closed the connection",
                self.server_addr
            ))),
            Err(e) => Err(self.io(e)),
        }
    }

    fn barrier(&mut self) -> Result<()> {
        self.allgather(&[]).map(|_| ())
    }

    fn finalize(&mut self) -> Result<()> {
        if !self.left {
            self.left = true;
            let _ = self.stream.write_all(&Frame::Bye.encode());
            let _ = self.stream.shutdown(Shutdown::Write);
        }
        if let Some(s) = self.server.as_mut() {
            // The others may still be leaving; the server ends when all have.
            if let Some(r) = s.wait(Duration::from_secs(10)) {
                self.server = None;
                return r;
            }
        }
        Ok(())
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        Some(self.local)
    }

    fn describe(&self) -> String {
        format!("rendezvous {}", self.server_addr)
    }

    fn check(&mut self) -> Result<()> {
        if self.left {
            return Ok(());
        }
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        // Between collectives the server sends nothing but FAIL, and closes
        // the connection only after a failure: anything readable is news.
        let mut one = [0u8; 1];
        self.stream.set_nonblocking(true).map_err(|e| self.io(e))?;
        let peeked = self.stream.peek(&mut one);
        self.stream.set_nonblocking(false).map_err(|e| self.io(e))?;
        let e = match peeked {
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) => self.io(e),
            Ok(0) => ConduitError::Bootstrap(format!(
                "the rendezvous server {} closed the connection (the launcher is gone?)",
                self.server_addr
            )),
            Ok(_) => {
                let _ = self.stream.set_read_timeout(Some(Duration::from_secs(2)));
                match read_frame(&mut self.stream) {
                    Ok(Some(Frame::Fail { rank, reason })) => ConduitError::PeerFailed {
                        pe: rank as usize,
                        reason,
                    },
                    Ok(Some(f)) => ConduitError::Bootstrap(format!(
                        "unexpected frame from the rendezvous server between collectives: {f:?}"
                    )),
                    Ok(None) => ConduitError::Bootstrap(format!(
                        "the rendezvous server {} closed the connection",
                        self.server_addr
                    )),
                    Err(e) => self.io(e),
                }
            }
        };
        self.failed = Some(e.clone());
        Err(e)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        // Without a goodbye the server reports this PE as failed.
        if self.server.is_some() && self.left {
            let _ = self.finalize();
        }
    }
}

#[cfg(test)]
mod tests;
