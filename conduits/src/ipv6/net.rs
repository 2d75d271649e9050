//! Socket-level helpers: the local IPv6 addresses, the path MTU towards a
//! peer, socket buffer sizes, and the exchange record every PE publishes.

use crate::error::{ConduitError, Result};
use std::net::{Ipv6Addr, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

/// Bytes of IPv6 and UDP headers in front of a datagram's payload.
pub const IP_UDP_HEADERS: usize = 48;

/// What a PE publishes through the bootstrap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `gasnet_core::wire::WIRE_VERSION` of the PE.
    pub wire_version: u8,
    /// Its segment length.
    pub segment_len: u64,
    /// Its data socket.
    pub addr: SocketAddrV6,
}

const ENDPOINT_TAG: &[u8; 4] = b"FSE1";
const ENDPOINT_LEN: usize = 4 + 1 + 8 + 16 + 2 + 4;

impl Endpoint {
    /// The record's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(ENDPOINT_LEN);
        v.extend_from_slice(ENDPOINT_TAG);
        v.push(self.wire_version);
        v.extend_from_slice(&self.segment_len.to_be_bytes());
        v.extend_from_slice(&self.addr.ip().octets());
        v.extend_from_slice(&self.addr.port().to_be_bytes());
        v.extend_from_slice(&self.addr.scope_id().to_be_bytes());
        v
    }

    /// Parses a record published by PE `pe`; errors name the PE.
    pub fn decode(pe: usize, b: &[u8]) -> Result<Endpoint> {
        if b.len() != ENDPOINT_LEN || &b[..4] != ENDPOINT_TAG {
            return Err(ConduitError::Bootstrap(format!(
                "PE {pe} published no ipv6 endpoint ({} bytes); is it running another conduit or version?",
                b.len()
            )));
        }
        let mut ip = [0u8; 16];
        ip.copy_from_slice(&b[13..29]);
        let mut seg = [0u8; 8];
        seg.copy_from_slice(&b[5..13]);
        let port = u16::from_be_bytes([b[29], b[30]]);
        let scope = u32::from_be_bytes([b[31], b[32], b[33], b[34]]);
        Ok(Endpoint {
            wire_version: b[4],
            segment_len: u64::from_be_bytes(seg),
            addr: SocketAddrV6::new(Ipv6Addr::from(ip), port, 0, scope),
        })
    }
}

/// The IPv6 addresses of this host's interfaces that are up.
pub fn local_ipv6_addrs() -> Vec<Ipv6Addr> {
    let mut out = Vec::new();
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `ifap` with a list we free below.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        return out;
    }
    let mut p = ifap;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned.
        let ifa = unsafe { &*p };
        let up = ifa.ifa_flags & libc::IFF_UP as libc::c_uint != 0;
        if up && !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr points at a sockaddr of the family it names.
            let fam = unsafe { (*ifa.ifa_addr).sa_family } as i32;
            if fam == libc::AF_INET6 {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let sa = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                out.push(Ipv6Addr::from(sa.sin6_addr.s6_addr));
            }
        }
        p = ifa.ifa_next;
    }
    // SAFETY: frees the list getifaddrs allocated; not used afterwards.
    unsafe { libc::freeifaddrs(ifap) };
    out
}

/// Whether `a` is a unique-local address (fc00::/7; fd00::/8 in practice).
pub fn is_unique_local(a: &Ipv6Addr) -> bool {
    a.segments()[0] & 0xfe00 == 0xfc00
}

/// Parses `addr/len` and finds the local address inside that prefix.
pub fn addr_in_prefix(prefix: &str) -> Result<Ipv6Addr> {
    let bad = || {
        ConduitError::Bootstrap(format!(
            "FSHMEM_IPV6_PREFIX={prefix:?} is not an IPv6 prefix such as fd00:f5::/64"
        ))
    };
    let (a, len) = prefix.split_once('/').ok_or_else(bad)?;
    let a: Ipv6Addr = a.parse().map_err(|_| bad())?;
    let len: u32 = len.parse().ok().filter(|&l| l <= 128).ok_or_else(bad)?;
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len)
    };
    let want = u128::from(a) & mask;
    local_ipv6_addrs()
        .into_iter()
        .find(|x| u128::from(*x) & mask == want)
        .ok_or_else(|| {
            ConduitError::Bootstrap(format!(
                "no interface of this host has an address in FSHMEM_IPV6_PREFIX={prefix}"
            ))
        })
}

fn setsockopt_int(fd: i32, level: i32, name: i32, v: i32) -> bool {
    // SAFETY: passes a pointer to a live c_int of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &v as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        ) == 0
    }
}

/// Asks for `bytes` of socket buffer each way (forced when privileged,
/// else up to the system's limit).
pub fn size_buffers(s: &UdpSocket, bytes: usize) {
    let fd = s.as_raw_fd();
    let v = bytes.min(i32::MAX as usize) as i32;
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        if !setsockopt_int(fd, libc::SOL_SOCKET, force, v) {
            setsockopt_int(fd, libc::SOL_SOCKET, plain, v);
        }
    }
}

/// The MTU of the route from `local` to `peer` as the kernel knows it
/// (the interface MTU, or a learnt path MTU), if it can tell.
pub fn path_mtu(local: Ipv6Addr, peer: SocketAddrV6) -> Option<usize> {
    let s = UdpSocket::bind(SocketAddrV6::new(local, 0, 0, peer.scope_id())).ok()?;
    s.connect(peer).ok()?;
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `v`.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU,
            &mut v as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0 && v >= 1280).then_some(v as usize)
}

/// An eventfd the application threads use to wake the progress thread.
#[derive(Debug)]
pub struct EventFd(std::os::fd::OwnedFd);

impl EventFd {
    /// A non-blocking eventfd.
    pub fn new() -> Result<EventFd> {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        use std::os::fd::FromRawFd;
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        Ok(EventFd(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the descriptor readable.
    pub fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        let _ = unsafe {
            libc::write(
                self.0.as_raw_fd(),
                &one as *const u64 as *const libc::c_void,
                8,
            )
        };
    }

    /// Clears the descriptor.
    pub fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads at most 8 bytes into a live u64 (non-blocking).
        let _ = unsafe {
            libc::read(
                self.0.as_raw_fd(),
                &mut v as *mut u64 as *mut libc::c_void,
                8,
            )
        };
    }

    /// The raw descriptor, for poll.
    pub fn fd(&self) -> i32 {
        self.0.as_raw_fd()
    }
}

/// Waits until `sock` (if given) or `wake` is readable, or `timeout`
/// passes (at most a second).
pub fn wait_readable(sock: Option<i32>, wake: i32, timeout: std::time::Duration) {
    let mut fds = [
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: sock.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let n = if sock.is_some() { 2 } else { 1 };
    let t = timeout.min(std::time::Duration::from_secs(1));
    let ts = libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fds` is a live array of two pollfd and `n` is at most 2;
    // `ts` is a live timespec; a null signal mask leaves the mask alone.
    unsafe { libc::ppoll(fds.as_mut_ptr(), n, &ts, std::ptr::null()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_round_trip_and_rejects() {
        let e = Endpoint {
            wire_version: 1,
            segment_len: 1 << 30,
            addr: "[fd00::5]:4242".parse().unwrap(),
        };
        assert_eq!(Endpoint::decode(0, &e.encode()), Ok(e.clone()));
        let b = e.encode();
        for cut in 0..b.len() {
            assert!(Endpoint::decode(3, &b[..cut]).is_err());
        }
        assert!(is_unique_local(&"fd00::1".parse().unwrap()));
        assert!(!is_unique_local(&"::1".parse().unwrap()));
        assert!(local_ipv6_addrs().contains(&Ipv6Addr::LOCALHOST));
        assert_eq!(addr_in_prefix("::1/128").unwrap(), Ipv6Addr::LOCALHOST);
        assert!(addr_in_prefix("nonsense").is_err());
        let mtu = path_mtu(Ipv6Addr::LOCALHOST, "[::1]:9".parse().unwrap());
        assert!(mtu.is_some_and(|m| m >= 1280), "{mtu:?}");
    }
}
