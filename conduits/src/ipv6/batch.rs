//! Datagram batching: `recvmmsg(2)` takes up to [`RECV_BATCH`] datagrams
//! from the socket in one system call, and `sendmmsg(2)` sends the small
//! datagrams one transmit round produces in one call. Large datagrams go
//! out alone with `sendto(2)` (after whatever was batched before them, so
//! the order on the socket stays the order of the transport): copying them
//! into the batch would cost more than the system call it saves.
//!
//! With UDP GSO (`UDP_SEGMENT`), a run of equal-sized datagrams to one
//! destination in a batch (a stream of 4 KiB Medium get replies, say)
//! leaves as one large send that the kernel cuts into datagrams, which
//! saves most of the per-datagram cost of the send path. Large datagrams
//! gain nothing from it: on loopback (MTU 65536) each is already one
//! near-maximal datagram, and a GSO send is capped at 64 KiB.
//!
//! `FSHMEM_IPV6_BATCH` chooses: `gso` (the default), `mmsg` (batches
//! without GSO) or `none` (one system call per datagram each way), so the
//! gain of each can be measured.

use std::net::{Ipv6Addr, SocketAddrV6};

/// Datagrams taken per `recvmmsg` call at most.
pub(crate) const RECV_BATCH: usize = 16;

/// Datagrams sent per `sendmmsg` call at most.
const SEND_BATCH: usize = 64;

/// Datagrams longer than this are sent alone, without a copy.
const BATCH_MAX_LEN: usize = 8 << 10;

/// Most parts of a datagram sent by [`SendBatch::push_parts`].
const MAX_PARTS: usize = 4;

/// Room for one datagram (the largest UDP payload, rounded up).
const SLOT: usize = 65536;

/// Most bytes in one GSO send (below the 65 527-byte UDP payload limit).
const GSO_MAX_BYTES: usize = 63 << 10;

/// Most datagrams in one GSO send (the kernel's `UDP_MAX_SEGMENTS`).
const GSO_MAX_SEGS: usize = 64;

/// `UDP_SEGMENT`, the GSO segment size option of `SOL_UDP` (Linux 4.18).
const UDP_SEGMENT: libc::c_int = 103;

use crate::config::BatchMode as Mode;

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

/// Consecutive single receives that each found a datagram after which
/// [`RecvBatch::recv`] goes back to `recvmmsg`: traffic has become a
/// stream.
const SINGLE_HITS_BEFORE_BATCH: u32 = 2;

/// Buffers for receiving a batch of datagrams.
///
/// While traffic is a ping-pong (a batch takes at most one datagram, or
/// none), a receive is one `recvfrom(2)`, which costs the kernel less than
/// a `recvmmsg(2)` of one: no array of headers to copy in, and no second
/// look at the queue for a datagram that is not there (about 0.1 us a
/// receive on loopback). Once single receives keep finding datagrams, the
/// batch takes over again.
pub(crate) struct RecvBatch {
    vlen: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_in6>,
    lens: Vec<usize>,
    count: usize,
    /// Receives are single `recvfrom` calls (see the type's documentation).
    single: bool,
    /// Consecutive single receives that found a datagram.
    single_hits: u32,
}

impl RecvBatch {
    pub(crate) fn new(mode: Mode) -> RecvBatch {
        RecvBatch {
            vlen: if mode == Mode::None { 1 } else { RECV_BATCH },
            bufs: vec![0u8; RECV_BATCH * SLOT],
            // SAFETY: sockaddr_in6 is plain data; all-zero is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; RECV_BATCH],
            lens: vec![0; RECV_BATCH],
            count: 0,
            single: true,
            single_hits: 0,
        }
    }

    /// Receives what is waiting on `fd`, without blocking; returns how
    /// many datagrams arrived (0 when none or on error).
    pub(crate) fn recv(&mut self, fd: i32) -> usize {
        if self.vlen == 1 || self.single {
            let n = self.recv_one(fd);
            if self.vlen > 1 {
                self.single_hits = if n == 1 { self.single_hits + 1 } else { 0 };
                self.single = self.single_hits < SINGLE_HITS_BEFORE_BATCH;
            }
            return n;
        }
        let n = self.recv_batch(fd);
        if n <= 1 {
            self.single = true;
            self.single_hits = 0;
        }
        n
    }

    /// Whether the last [`RecvBatch::recv`] filled a batch, so that more
    /// datagrams may be waiting. A single receive answers no: the next
    /// step looks again, and a run of hits turns batching back on.
    pub(crate) fn maybe_more(&self) -> bool {
        self.vlen > 1 && self.count == self.vlen
    }

    /// One datagram into slot 0 with `recvfrom(2)`.
    fn recv_one(&mut self, fd: i32) -> usize {
        let mut alen = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        // SAFETY: slot 0 of `bufs` has SLOT writable bytes and `addrs[0]` is
        // a sockaddr_in6 of the size passed; both outlive the call.
        // (The system call itself, not libc's wrapper: a receive that
        // does not block needs none of the wrapper's thread-cancellation
        // bookkeeping, which costs a poll loop on every turn.)
        let n = unsafe {
            libc::syscall(
                libc::SYS_recvfrom,
                fd,
                self.bufs.as_mut_ptr() as *mut libc::c_void,
                SLOT,
                libc::MSG_DONTWAIT,
                self.addrs.as_mut_ptr() as *mut libc::sockaddr,
                &mut alen as *mut libc::socklen_t,
            )
        };
        if n < 0 {
            self.count = 0;
            return 0;
        }
        self.lens[0] = n as usize;
        self.count = 1;
        1
    }

    /// Up to `vlen` datagrams with `recvmmsg(2)`.
    fn recv_batch(&mut self, fd: i32) -> usize {
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
        // SAFETY: `msgs` holds RECV_BATCH >= vlen headers, each naming a live
        // sockaddr_in6 of the size given and one iovec over a distinct
        // SLOT-byte region of `self.bufs`; all outlive the call.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                self.vlen as libc::c_uint,
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
    mode: Mode,
    fd: i32,
    /// The socket is connected to its one peer: sends name no address.
    connected: bool,
    peers: Vec<libc::sockaddr_in6>,
    data: Vec<u8>,
    items: Vec<(usize, usize, usize)>,
}

impl SendBatch {
    /// A batch for socket `fd` towards `peers` (by node id).
    pub(crate) fn new(mode: Mode, fd: i32, peers: &[SocketAddrV6]) -> SendBatch {
        SendBatch {
            mode,
            fd,
            connected: false,
            peers: peers.iter().map(sockaddr).collect(),
            data: Vec::with_capacity(SEND_BATCH * BATCH_MAX_LEN),
            items: Vec::with_capacity(SEND_BATCH),
        }
    }

    /// Notes that the socket is connected to its one peer: a send then
    /// names no address, and the kernel uses the route it keeps for the
    /// connection instead of looking one up per datagram.
    pub(crate) fn set_connected(&mut self) {
        self.connected = true;
    }

    /// The destination address of a send to `dst`: none on a connected
    /// socket.
    fn name(&self, dst: usize) -> (*mut libc::c_void, libc::socklen_t) {
        if self.connected {
            (std::ptr::null_mut(), 0)
        } else {
            (
                &self.peers[dst] as *const libc::sockaddr_in6 as *mut libc::c_void,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }

    /// Queues `bytes` for node `dst` (or sends it at once if it is large).
    pub(crate) fn push(&mut self, dst: usize, bytes: &[u8]) {
        self.push_parts(dst, &[bytes]);
    }

    /// Queues a datagram given in parts, whose concatenation is the
    /// datagram ([`Transport::transmit_gather`]): a large one is sent at
    /// once, several parts by a gathering `sendmsg(2)` that does not copy
    /// the payload; a small one is copied into the batch.
    ///
    /// [`Transport::transmit_gather`]: gasnet_core::reliable::Transport::transmit_gather
    pub(crate) fn push_parts(&mut self, dst: usize, parts: &[&[u8]]) {
        if dst >= self.peers.len() {
            return;
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > BATCH_MAX_LEN || self.mode == Mode::None {
            self.flush();
            match parts {
                [whole] => self.send_one(dst, whole),
                _ => self.send_gather(dst, parts),
            }
            return;
        }
        let start = self.data.len();
        for p in parts {
            self.data.extend_from_slice(p);
        }
        self.items.push((dst, start, len));
        if self.items.len() == SEND_BATCH {
            self.flush();
        }
    }

    /// One datagram of up to [`MAX_PARTS`] parts with `sendmsg(2)`.
    fn send_gather(&self, dst: usize, parts: &[&[u8]]) {
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; MAX_PARTS];
        let n = parts.len().min(MAX_PARTS);
        for (v, p) in iov.iter_mut().zip(parts) {
            v.iov_base = p.as_ptr() as *mut libc::c_void;
            v.iov_len = p.len();
        }
        // SAFETY: msghdr is plain data; all-zero is a valid value.
        let mut m: libc::msghdr = unsafe { std::mem::zeroed() };
        (m.msg_name, m.msg_namelen) = self.name(dst);
        m.msg_iov = iov.as_mut_ptr();
        m.msg_iovlen = n as _;
        // SAFETY: the header names no address (connected) or a live
        // sockaddr_in6 of the size given, and `n` iovecs over the live
        // parts; the kernel only reads them.
        unsafe { libc::sendmsg(self.fd, &m, 0) };
    }

    fn send_one(&self, dst: usize, bytes: &[u8]) {
        let (to, len) = self.name(dst);
        // SAFETY: `bytes` is live for the call with the length given; `to`
        // is null (connected) or a live sockaddr_in6 of `len` bytes.
        unsafe {
            libc::sendto(
                self.fd,
                bytes.as_ptr() as *const libc::c_void,
                bytes.len(),
                0,
                to as *const libc::sockaddr,
                len,
            )
        };
    }

    /// Sends everything queued. Datagrams the kernel refuses (a full
    /// socket buffer) are dropped, as a network would drop them; the
    /// transport retransmits.
    pub(crate) fn flush(&mut self) {
        if self.items.len() == 1 {
            let (dst, start, len) = self.items[0];
            self.send_one(dst, &self.data[start..start + len]);
        } else if !self.items.is_empty() && !self.send_batch() {
            // GSO refused (an old kernel, a device without checksum
            // offload): batch without it from now on.
            self.mode = Mode::Mmsg;
            self.send_batch();
        }
        self.items.clear();
        self.data.clear();
    }

    /// One `sendmmsg` per up to SEND_BATCH messages; with GSO, a run of
    /// equal-sized datagrams to one peer is one message. Returns false if
    /// the kernel refused GSO.
    fn send_batch(&mut self) -> bool {
        // (first item, datagrams) per message.
        let mut groups: Vec<(usize, usize)> = Vec::with_capacity(self.items.len());
        let mut i = 0;
        while i < self.items.len() {
            let (dst, _, len) = self.items[i];
            let mut j = i + 1;
            if self.mode == Mode::Gso {
                while j < self.items.len()
                    && j - i < GSO_MAX_SEGS
                    && self.items[j].0 == dst
                    && self.items[j].2 == len
                    && (j - i + 1) * len <= GSO_MAX_BYTES
                {
                    j += 1;
                }
            }
            groups.push((i, j - i));
            i = j;
        }
        let base = self.data.as_mut_ptr();
        let mut iov: Vec<libc::iovec> = groups
            .iter()
            .map(|&(first, n)| {
                let (_, start, len) = self.items[first];
                libc::iovec {
                    // SAFETY: the run's datagrams were pushed one after
                    // another: `start + n * len <= data.len()`.
                    iov_base: unsafe { base.add(start) } as *mut libc::c_void,
                    iov_len: n * len,
                }
            })
            .collect();
        // One aligned control buffer per message, for UDP_SEGMENT.
        let mut ctl: Vec<[u64; 4]> = vec![[0; 4]; groups.len()];
        // SAFETY: computes a size from a constant; no memory is touched.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as usize;
        let mut msgs: Vec<libc::mmsghdr> = Vec::with_capacity(groups.len());
        for ((&(first, n), v), c) in groups.iter().zip(iov.iter_mut()).zip(ctl.iter_mut()) {
            let (dst, _, len) = self.items[first];
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            (m.msg_hdr.msg_name, m.msg_hdr.msg_namelen) = self.name(dst);
            m.msg_hdr.msg_iov = v as *mut libc::iovec;
            m.msg_hdr.msg_iovlen = 1;
            if n > 1 && space <= std::mem::size_of_val(c) {
                m.msg_hdr.msg_control = c.as_mut_ptr() as *mut libc::c_void;
                m.msg_hdr.msg_controllen = space as _;
                // SAFETY: the control buffer is live, 8-byte aligned and
                // `space` bytes long, room for one cmsghdr and a u16, so
                // CMSG_FIRSTHDR is non-null and its data fits.
                unsafe {
                    let h = libc::CMSG_FIRSTHDR(&m.msg_hdr);
                    (*h).cmsg_level = libc::SOL_UDP;
                    (*h).cmsg_type = UDP_SEGMENT;
                    (*h).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
                    std::ptr::write_unaligned(libc::CMSG_DATA(h) as *mut u16, len as u16);
                }
            }
            msgs.push(m);
        }
        let mut done = 0;
        while done < msgs.len() {
            // SAFETY: every header names a live sockaddr_in6, one iovec over
            // live bytes of `self.data` and, for runs, a live control
            // buffer; the kernel reads them and writes msg_len only.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd,
                    msgs[done..].as_mut_ptr(),
                    (msgs.len() - done) as libc::c_uint,
                    0,
                )
            };
            if r <= 0 {
                let e = std::io::Error::last_os_error().raw_os_error();
                let gso_refused = self.mode == Mode::Gso
                    && msgs[done].msg_hdr.msg_controllen != 0
                    && matches!(e, Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT));
                return !gso_refused;
            }
            done += r as usize;
        }
        true
    }
}
