//! A PMI-1 client: the text wire protocol MPICH's Hydra process manager
//! (`mpiexec`/`mpiexec.hydra`) speaks to the processes it starts, so that
//! `mpiexec -n N prog` bootstraps an fshmem job with no other setup.
//!
//! Hydra passes a connected socket in `PMI_FD` and the rank and size in
//! `PMI_RANK` and `PMI_SIZE`. Each command is one line of space-separated
//! `key=value` pairs beginning with `cmd=`, answered by one such line:
//!
//! | request | response |
//! |---|---|
//! | `cmd=init pmi_version=1 pmi_subversion=1` | `cmd=response_to_init ... rc=0` |
//! | `cmd=get_maxes` | `cmd=maxes kvsname_max=K keylen_max=L vallen_max=V` |
//! | `cmd=get_my_kvsname` | `cmd=my_kvsname kvsname=NAME` |
//! | `cmd=put kvsname=NAME key=K value=V` | `cmd=put_result rc=0` |
//! | `cmd=barrier_in` | `cmd=barrier_out` (once every process entered) |
//! | `cmd=get kvsname=NAME key=K` | `cmd=get_result rc=0 value=V` |
//! | `cmd=finalize` | `cmd=finalize_ack` |
//!
//! An all-gather puts this PE's blob (hex, split into values of at most
//! `vallen_max` characters) under keys naming the round and the rank,
//! enters the barrier, then gets every PE's keys. A barrier is
//! `barrier_in`. Every response is parsed as untrusted text: a missing
//! field, a non-zero `rc` or a line that is not `key=value` pairs is an
//! error naming the command.

use super::{Bootstrap, check_blob};
use crate::error::{ConduitError, Result};
use std::io::{Read, Write};

/// A byte stream to the process manager.
pub trait Wire: Read + Write + Send + std::fmt::Debug {}
impl<T: Read + Write + Send + std::fmt::Debug> Wire for T {}

/// Longest response line accepted.
const MAX_LINE: usize = 1 << 20;

/// One parsed PMI line: its `key=value` pairs in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line(pub Vec<(String, String)>);

impl Line {
    /// Parses `cmd=x a=b ...` (without the newline).
    ///
    /// ```
    /// use conduits::bootstrap::pmi::Line;
    /// let l = Line::parse("cmd=get_result rc=0 value=abc").unwrap();
    /// assert_eq!(l.get("value"), Some("abc"));
    /// assert!(Line::parse("cmd=x novalue").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Line> {
        let mut v = Vec::new();
        for word in s.split_ascii_whitespace() {
            let (k, val) = word
                .split_once('=')
                .ok_or_else(|| ConduitError::Bootstrap(format!("PMI: malformed response {s:?}")))?;
            v.push((k.to_string(), val.to_string()));
        }
        if v.first().is_none_or(|(k, _)| k != "cmd") {
            return Err(ConduitError::Bootstrap(format!(
                "PMI: response {s:?} does not start with cmd="
            )));
        }
        Ok(Line(v))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The command name.
    pub fn cmd(&self) -> &str {
        self.get("cmd").unwrap_or("")
    }
}

/// The session [`open_early`] opened, until the bootstrap takes it.
static OPENED: std::sync::Mutex<Option<Pmi>> = std::sync::Mutex::new(None);

/// Opens this process's PMI-1 session (descriptor `fd`, `rank` of `size`,
/// as [`super::Service::Pmi`] holds them) before the bootstrap is built,
/// so that the job can be named after its KVS name, and keeps it for
/// [`take_opened`]; the KVS name. Once per process: later calls return
/// the same name without opening another session.
pub(crate) fn open_early(fd: i32, rank: usize, size: usize) -> Result<String> {
    static KVSNAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(k) = KVSNAME.get() {
        return Ok(k.clone());
    }
    let p = Pmi::open(fd, rank, size)?;
    let k = p.kvsname.clone();
    *OPENED.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
    Ok(KVSNAME.get_or_init(|| k).clone())
}

/// The session [`open_early`] opened, if the bootstrap has not taken it.
pub(crate) fn take_opened() -> Option<Pmi> {
    OPENED.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// A PE's PMI-1 session.
#[derive(Debug)]
pub struct Pmi {
    wire: Box<dyn Wire>,
    rank: usize,
    size: usize,
    kvsname: String,
    vallen: usize,
    round: u32,
    buf: Vec<u8>,
    finalized: bool,
}

impl Pmi {
    /// Opens the session Hydra set up: the connected socket `fd` (its
    /// `PMI_FD`), this process being `rank` of `size` (`PMI_RANK`,
    /// `PMI_SIZE`), as the job read them ([`super::Service::Pmi`]).
    pub fn open(fd: i32, rank: usize, size: usize) -> Result<Pmi> {
        // SAFETY: fcntl(F_GETFD) only queries the descriptor.
        if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(ConduitError::Bootstrap(format!(
                "PMI: PMI_FD={fd} is not an open descriptor"
            )));
        }
        use std::os::fd::FromRawFd;
        // SAFETY: the process manager handed this descriptor to this process
        // for the PMI session; nothing else in the process uses it.
        let file = unsafe { std::fs::File::from_raw_fd(fd) };
        Pmi::over(Box::new(file), rank, size)
    }

    /// Runs `init`, `get_maxes` and `get_my_kvsname` over `wire`.
    pub fn over(wire: Box<dyn Wire>, rank: usize, size: usize) -> Result<Pmi> {
        if size == 0 || rank >= size {
            return Err(ConduitError::Bootstrap(format!(
                "PMI: rank {rank} of {size} is not valid"
            )));
        }
        let mut p = Pmi {
            wire,
            rank,
            size,
            kvsname: String::new(),
            vallen: 0,
            round: 0,
            buf: Vec::new(),
            finalized: false,
        };
        p.call("init pmi_version=1 pmi_subversion=1", "response_to_init")?;
        let m = p.call("get_maxes", "maxes")?;
        let vallen: usize = m
            .get("vallen_max")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| ConduitError::Bootstrap("PMI: maxes without vallen_max".into()))?;
        // Values are hex pairs; keep clear of the limit's terminator.
        p.vallen = (vallen.saturating_sub(2) & !1).max(2);
        let k = p.call("get_my_kvsname", "my_kvsname")?;
        p.kvsname = k
            .get("kvsname")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| ConduitError::Bootstrap("PMI: my_kvsname without kvsname".into()))?
            .to_string();
        Ok(p)
    }

    fn read_line(&mut self) -> Result<String> {
        loop {
            if let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return String::from_utf8(line[..i].to_vec())
                    .map_err(|_| ConduitError::Bootstrap("PMI: response is not UTF-8".into()));
            }
            if self.buf.len() > MAX_LINE {
                return Err(ConduitError::Bootstrap(
                    "PMI: response line too long".into(),
                ));
            }
            let mut chunk = [0u8; 4096];
            let n = self
                .wire
                .read(&mut chunk)
                .map_err(|e| ConduitError::Bootstrap(format!("PMI: reading: {e}")))?;
            if n == 0 {
                return Err(ConduitError::Bootstrap(
                    "PMI: the process manager closed the connection".into(),
                ));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Sends `cmd=<request>` and reads a response whose `cmd` is `expect`
    /// and whose `rc`, if present, is 0.
    fn call(&mut self, request: &str, expect: &str) -> Result<Line> {
        let msg = format!("cmd={request}\n");
        self.wire
            .write_all(msg.as_bytes())
            .and_then(|()| self.wire.flush())
            .map_err(|e| ConduitError::Bootstrap(format!("PMI: sending {request:?}: {e}")))?;
        let s = self.read_line()?;
        let line = Line::parse(&s)?;
        if line.cmd() != expect {
            return Err(ConduitError::Bootstrap(format!(
                "PMI: expected cmd={expect} after {request:?}, got {s:?}"
            )));
        }
        if let Some(rc) = line.get("rc")
            && rc != "0"
        {
            return Err(ConduitError::Bootstrap(format!(
                "PMI: {request:?} failed: {s:?}"
            )));
        }
        Ok(line)
    }

    fn key(&self, rank: usize, part: &str) -> String {
        format!("fshmem-{}-{rank}-{part}", self.round)
    }
}

fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Result<Vec<u8>> {
    let d = |c: u8| -> Result<u8> {
        (c as char)
            .to_digit(16)
            .map(|v| v as u8)
            .ok_or_else(|| ConduitError::Bootstrap(format!("PMI: value {s:?} is not hex")))
    };
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err(ConduitError::Bootstrap(format!(
            "PMI: value {s:?} has odd length"
        )));
    }
    b.chunks(2).map(|p| Ok(d(p[0])? << 4 | d(p[1])?)).collect()
}

impl Bootstrap for Pmi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        check_blob(mine)?;
        let h = hex(mine);
        let chunks: Vec<&str> = if h.is_empty() {
            Vec::new()
        } else {
            h.as_bytes()
                .chunks(self.vallen)
                .map(|c| std::str::from_utf8(c).unwrap_or(""))
                .collect()
        };
        for (i, c) in chunks.iter().enumerate() {
            let req = format!(
                "put kvsname={} key={} value={c}",
                self.kvsname,
                self.key(self.rank, &i.to_string())
            );
            self.call(&req, "put_result")?;
        }
        let req = format!(
            "put kvsname={} key={} value={}",
            self.kvsname,
            self.key(self.rank, "n"),
            chunks.len()
        );
        self.call(&req, "put_result")?;
        self.barrier_inner()?;
        let mut all = Vec::with_capacity(self.size);
        for r in 0..self.size {
            let req = format!("get kvsname={} key={}", self.kvsname, self.key(r, "n"));
            let n: usize = self
                .call(&req, "get_result")?
                .get("value")
                .and_then(|v| v.parse().ok())
                .filter(|&n| n <= super::MAX_BLOB)
                .ok_or_else(|| {
                    ConduitError::Bootstrap(format!("PMI: bad chunk count for PE {r}"))
                })?;
            let mut blob = Vec::new();
            for i in 0..n {
                let req = format!(
                    "get kvsname={} key={}",
                    self.kvsname,
                    self.key(r, &i.to_string())
                );
                let l = self.call(&req, "get_result")?;
                let v = l.get("value").unwrap_or("");
                blob.extend(unhex(v)?);
            }
            all.push(blob);
        }
        self.round = self.round.wrapping_add(1);
        Ok(all)
    }

    fn barrier(&mut self) -> Result<()> {
        self.barrier_inner()
    }

    fn finalize(&mut self) -> Result<()> {
        if !self.finalized {
            self.finalized = true;
            self.call("finalize", "finalize_ack")?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("PMI-1 ({})", self.kvsname)
    }
}

impl Pmi {
    fn barrier_inner(&mut self) -> Result<()> {
        self.call("barrier_in", "barrier_out").map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader};
    use std::os::unix::net::UnixStream;
    use std::sync::{Arc, Condvar, Mutex};

    /// An in-process PMI-1 server for `n` clients, one thread each.
    #[derive(Default)]
    struct Kvs {
        map: HashMap<String, String>,
        barrier_in: usize,
        generation: u64,
    }

    fn fake_server(n: usize, vallen: usize) -> Vec<UnixStream> {
        let state = Arc::new((Mutex::new(Kvs::default()), Condvar::new()));
        let mut clients = Vec::new();
        for _ in 0..n {
            let (a, b) = UnixStream::pair().unwrap();
            clients.push(a);
            let state = state.clone();
            std::thread::spawn(move || {
                let mut w = b.try_clone().unwrap();
                for line in BufReader::new(b).lines() {
                    let Ok(line) = line else { return };
                    let l = Line::parse(&line).unwrap();
                    let resp = match l.cmd() {
                        "init" => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".into(),
                        "get_maxes" => {
                            format!("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max={vallen}")
                        }
                        "get_my_kvsname" => "cmd=my_kvsname kvsname=kvs_42_0".into(),
                        "put" => {
                            let v = l.get("value").unwrap().to_string();
                            assert!(v.len() <= vallen);
                            let mut s = state.0.lock().unwrap();
                            s.map.insert(l.get("key").unwrap().to_string(), v);
                            "cmd=put_result rc=0 msg=success".into()
                        }
                        "get" => {
                            let s = state.0.lock().unwrap();
                            match s.map.get(l.get("key").unwrap()) {
                                Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
                                None => "cmd=get_result rc=-1 msg=key_not_found".into(),
                            }
                        }
                        "barrier_in" => {
                            let (m, cv) = &*state;
                            let mut s = m.lock().unwrap();
                            let g = s.generation;
                            s.barrier_in += 1;
                            if s.barrier_in == n {
                                s.barrier_in = 0;
                                s.generation += 1;
                                cv.notify_all();
                            } else {
                                while s.generation == g {
                                    s = cv.wait(s).unwrap();
                                }
                            }
                            "cmd=barrier_out".into()
                        }
                        "finalize" => "cmd=finalize_ack".into(),
                        other => format!("cmd={other}_unknown rc=-1"),
                    };
                    if w.write_all(format!("{resp}\n").as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
        clients
    }

    #[test]
    fn allgather_over_a_fake_hydra() {
        let n = 5;
        let handles: Vec<_> = fake_server(n, 64)
            .into_iter()
            .enumerate()
            .map(|(r, s)| {
                std::thread::spawn(move || {
                    let mut p = Pmi::over(Box::new(s), r, n).unwrap();
                    for round in 0..3usize {
                        // Long enough to need several values of 64 characters.
                        let mine: Vec<u8> = (0..100 + r * round).map(|i| (i + r) as u8).collect();
                        let all = p.allgather(&mine).unwrap();
                        for (q, b) in all.iter().enumerate() {
                            let want: Vec<u8> =
                                (0..100 + q * round).map(|i| (i + q) as u8).collect();
                            assert_eq!(*b, want);
                        }
                        p.barrier().unwrap();
                    }
                    assert_eq!(p.allgather(&[]).unwrap(), vec![Vec::<u8>::new(); n]);
                    p.finalize().unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }

    #[test]
    fn bad_responses_are_errors() {
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(b"cmd=response_to_init rc=3\n").unwrap();
        let e = Pmi::over(Box::new(a), 0, 1).unwrap_err().to_string();
        assert!(e.contains("failed"), "{e}");
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(b"garbage\n").unwrap();
        assert!(Pmi::over(Box::new(a), 0, 1).is_err());
        let (a, b) = UnixStream::pair().unwrap();
        drop(b);
        let e = Pmi::over(Box::new(a), 0, 1).unwrap_err().to_string();
        assert!(e.contains("PMI"), "{e}");
        assert!(unhex("zz").is_err() && unhex("abc").is_err());
        assert_eq!(
            unhex(&hex(&[0, 1, 254, 255])).unwrap(),
            vec![0, 1, 254, 255]
        );
        let e = Pmi::open(-1, 0, 1).unwrap_err().to_string();
        assert!(e.contains("PMI_FD=-1"), "{e}");
    }
}
