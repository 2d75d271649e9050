//! Datagram batching: `recvmmsg(2)` takes up to [`RECV_BATCH`] datagrams
//! from the socket in one system call, and `sendmmsg(2)` sends the small
//! datagrams one transmit round produces in one call. Large datagrams go
//! out alone with `sendto(2)` (after whatever was batched before them, so
//! the order on the socket stays the order of the transport): copying them
//! into the batch would cost more than the system call it saves.
//!
//! UDP GSO (`UDP_SEGMENT`) is not used: it needs equal-sized segments to
//! one destination, while on loopback (MTU 65536) each wire packet is one
//! near-maximal datagram already, and a GSO send is capped at 64 KiB too.

use std::net::{Ipv6Addr, SocketAddrV6};

/// Datagrams taken per `recvmmsg` call at most.
pub(crate) const RECV_BATCH: usize = 16;

/// Datagrams sent per `sendmmsg` call at most.
const SEND_BATCH: usize = 64;

/// Datagrams longer than this are sent alone, without a copy.
const BATCH_MAX_LEN: usize = 8 << 10;

/// Room for one datagram (the largest UDP payload, rounded up).
const SLOT: usize = 65536;

fn sockaddr(a: &SocketAddrV6) -> libc::sockaddr_in6 {
    // SAFETY: sockaddr_in6 is plain data; all-zero is a valid value.
    let mut s: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
    s.sin6_port = a.port().to_be();
    s.sin6_flowinfo = a.flowinfo().to_be();
    s.sin6_addr.s6_addr = a.ip().octets();
    s.sin6_scope_id = a.scope_id();
    s
}

/// Buffers for receiving a batch of datagrams.
pub(crate) struct RecvBatch {
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_in6>,
    lens: Vec<usize>,
    count: usize,
}

impl RecvBatch {
    pub(crate) fn new() -> RecvBatch {
        RecvBatch {
            bufs: vec![0u8; RECV_BATCH * SLOT],
            // SAFETY: sockaddr_in6 is plain data; all-zero is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; RECV_BATCH],
            lens: vec![0; RECV_BATCH],
            count: 0,
        }
    }

    /// Receives what is waiting on `fd`, without blocking; returns how
    /// many datagrams arrived (0 when none or on error).
    pub(crate) fn recv(&mut self, fd: i32) -> usize {
        let base = self.bufs.as_mut_ptr();
        let mut iov: [libc::iovec; RECV_BATCH] = std::array::from_fn(|i| libc::iovec {
            // SAFETY: `bufs` holds RECV_BATCH slots of SLOT bytes.
            iov_base: unsafe { base.add(i * SLOT) } as *mut libc::c_void,
            iov_len: SLOT,
        });
        let addrs = self.addrs.as_mut_ptr();
        let iov_base = iov.as_mut_ptr();
        let mut msgs: [libc::mmsghdr; RECV_BATCH] = std::array::from_fn(|i| {
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            // SAFETY: `addrs` and `iov` have RECV_BATCH entries.
            m.msg_hdr.msg_name = unsafe { addrs.add(i) } as *mut libc::c_void;
            m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as u32;
            // SAFETY: as above.
            m.msg_hdr.msg_iov = unsafe { iov_base.add(i) };
            m.msg_hdr.msg_iovlen = 1;
            m
        });
        // SAFETY: `msgs` holds RECV_BATCH headers, each naming a live
        // sockaddr_in6 of the size given and one iovec over a distinct
        // SLOT-byte region of `self.bufs`; all outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                RECV_BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        let n = if n > 0 { n as usize } else { 0 };
        for (l, m) in self.lens.iter_mut().zip(&msgs).take(n) {
            *l = m.msg_len as usize;
        }
        self.count = n;
        n
    }

    /// Datagram `i` of the last batch and the address it came from.
    pub(crate) fn get(&self, i: usize) -> Option<(&[u8], SocketAddrV6)> {
        if i >= self.count {
            return None;
        }
        let a = &self.addrs[i];
        if a.sin6_family != libc::AF_INET6 as libc::sa_family_t {
            return None;
        }
        let from = SocketAddrV6::new(
            Ipv6Addr::from(a.sin6_addr.s6_addr),
            u16::from_be(a.sin6_port),
            u32::from_be(a.sin6_flowinfo),
            a.sin6_scope_id,
        );
        let start = i * SLOT;
        Some((&self.bufs[start..start + self.lens[i].min(SLOT)], from))
    }
}

/// Datagrams gathered for one `sendmmsg` call.
pub(crate) struct SendBatch {
    fd: i32,
    peers: Vec<libc::sockaddr_in6>,
    data: Vec<u8>,
    items: Vec<(usize, usize, usize)>,
}

impl SendBatch {
    /// A batch for socket `fd` towards `peers` (by node id).
    pub(crate) fn new(fd: i32, peers: &[SocketAddrV6]) -> SendBatch {
        SendBatch {
            fd,
            peers: peers.iter().map(sockaddr).collect(),
            data: Vec::with_capacity(SEND_BATCH * BATCH_MAX_LEN),
            items: Vec::with_capacity(SEND_BATCH),
        }
    }

    /// Queues `bytes` for node `dst` (or sends it at once if it is large).
    pub(crate) fn push(&mut self, dst: usize, bytes: &[u8]) {
        if dst >= self.peers.len() {
            return;
        }
        if bytes.len() > BATCH_MAX_LEN {
            self.flush();
            self.send_one(dst, bytes);
            return;
        }
        let start = self.data.len();
        self.data.extend_from_slice(bytes);
        self.items.push((dst, start, bytes.len()));
        if self.items.len() == SEND_BATCH {
            self.flush();
        }
    }

    fn send_one(&self, dst: usize, bytes: &[u8]) {
        let to = &self.peers[dst];
        // SAFETY: `bytes` and `to` are live for the call, with the lengths
        // given.
        unsafe {
            libc::sendto(
                self.fd,
                bytes.as_ptr() as *const libc::c_void,
                bytes.len(),
                0,
                to as *const libc::sockaddr_in6 as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        };
    }

    /// Sends everything queued. Datagrams the kernel refuses (a full
    /// socket buffer) are dropped, as a network would drop them; the
    /// transport retransmits.
    pub(crate) fn flush(&mut self) {
        match self.items.len() {
            0 => return,
            1 => {
                let (dst, start, len) = self.items[0];
                self.send_one(dst, &self.data[start..start + len]);
            }
            _ => {
                let base = self.data.as_mut_ptr();
                let mut iov: Vec<libc::iovec> = self
                    .items
                    .iter()
                    .map(|&(_, start, len)| libc::iovec {
                        // SAFETY: `start + len <= data.len()` (pushed so).
                        iov_base: unsafe { base.add(start) } as *mut libc::c_void,
                        iov_len: len,
                    })
                    .collect();
                let mut msgs: Vec<libc::mmsghdr> = iov
                    .iter_mut()
                    .zip(&self.items)
                    .map(|(v, &(dst, _, _))| {
                        // SAFETY: mmsghdr is plain data; all-zero is valid.
                        let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                        m.msg_hdr.msg_name =
                            &self.peers[dst] as *const libc::sockaddr_in6 as *mut libc::c_void;
                        m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_in6>() as u32;
                        m.msg_hdr.msg_iov = v as *mut libc::iovec;
                        m.msg_hdr.msg_iovlen = 1;
                        m
                    })
                    .collect();
                let mut done = 0;
                while done < msgs.len() {
                    // SAFETY: every header names a live sockaddr_in6 and one
                    // iovec over live bytes of `self.data`; the kernel only
                    // reads them (and writes msg_len).
                    let r = unsafe {
                        libc::sendmmsg(
                            self.fd,
                            msgs[done..].as_mut_ptr(),
                            (msgs.len() - done) as libc::c_uint,
                            0,
                        )
                    };
                    if r <= 0 {
                        break;
                    }
                    done += r as usize;
                }
            }
        }
        self.items.clear();
        self.data.clear();
    }
}
