//! `oshrun --hosts H`: a job of several hosts on this machine, for the
//! network conduits (`spec/conduit.md` §10).
//!
//! PEs are placed on hosts in blocks (host `k` runs PEs
//! `k*n/H .. (k+1)*n/H`), and every PE gets `FSHMEM_HOST_KEY=<job>.h<k>`:
//! PEs of one host share memory (the smp conduit), the hosts talk through
//! the network conduit. Two ways to give the hosts a network:
//!
//! - `netns`: each host in a network namespace of its own, its `eth0` a
//!   veth joined to a bridge in a hub namespace, on `fd00:f5::/64` (host
//!   `k` is `fd00:f5::<k+1>`, the hub `fd00:f5::ffff`, which serves the
//!   rendezvous bootstrap). The namespaces are anonymous: they live while
//!   oshrun holds their descriptors or a PE runs in them, so nothing is
//!   left behind however oshrun ends. Needs `CAP_SYS_ADMIN` and `ip`
//!   (iproute2) to configure the links.
//! - `loopback`: every host on `[::1]`, told apart by the host keys only.
//!
//! `auto` takes `netns` when oshrun may create namespaces, else
//! `loopback`.

use clap::ValueEnum;
use std::io::Write;
use std::net::Ipv6Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// How the hosts of an `oshrun --hosts` job are networked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HostNet {
    /// Network namespaces when oshrun may create them, else loopback.
    Auto,
    /// One network namespace per host, joined by a bridge.
    Netns,
    /// Every host on ::1, told apart by host keys.
    Loopback,
}

/// The host of PE `rank` of `n` spread over `hosts` hosts in blocks.
pub fn host_of(rank: usize, n: usize, hosts: usize) -> usize {
    // The largest k with k*n/hosts <= rank.
    (0..hosts)
        .rev()
        .find(|&k| k * n / hosts <= rank)
        .unwrap_or(0)
}

/// The host key of host `k` of job `job`.
pub fn key(job: &str, k: usize) -> String {
    format!("{job}.h{k}")
}

/// The hub's address: the rendezvous server listens there.
pub const HUB: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xf5, 0, 0, 0, 0, 0, 0xffff);

/// Host `k`'s address.
pub fn host_addr(k: usize) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0xf5, 0, 0, 0, 0, 0, k as u16 + 1)
}

/// The namespaces of a `netns` job: the hub and one per host.
pub struct Fabric {
    hub: OwnedFd,
    hosts: Vec<OwnedFd>,
}

impl Fabric {
    /// Creates and links `hosts` host namespaces and the hub; an error
    /// says what was missing (the privilege, or `ip`).
    pub fn build(hosts: usize) -> Result<Fabric, String> {
        if hosts > 0xfffe {
            return Err(format!("{hosts} hosts: at most 65534 in netns mode"));
        }
        let hub = new_netns()?;
        let hosts: Vec<OwnedFd> = (0..hosts).map(|_| new_netns()).collect::<Result<_, _>>()?;
        let me = std::process::id();
        let mut script =
            String::from("link set lo up\nlink add br0 type bridge\nlink set br0 up\n");
        script.push_str(&format!("addr add {HUB}/64 dev br0 nodad\n"));
        for (k, h) in hosts.iter().enumerate() {
            script.push_str(&format!(
                "link add p{k} type veth peer name eth0 netns /proc/{me}/fd/{}\n\
                 link set p{k} master br0 up\n",
                h.as_raw_fd()
            ));
        }
        ip_batch(hub.as_raw_fd(), &script, "the hub")?;
        for (k, h) in hosts.iter().enumerate() {
            let script = format!(
                "link set lo up\nlink set eth0 up\naddr add {}/64 dev eth0 nodad\n",
                host_addr(k)
            );
            ip_batch(h.as_raw_fd(), &script, &format!("host {k}"))?;
        }
        Ok(Fabric { hub, hosts })
    }

    /// The namespace of host `k`, for `setns` in a PE before exec.
    pub fn host_ns(&self, k: usize) -> RawFd {
        self.hosts[k].as_raw_fd()
    }

    /// Runs `f` on a thread inside the hub's namespace (sockets it creates
    /// belong to the hub, and so do threads it starts).
    pub fn in_hub<R: Send>(&self, f: impl FnOnce() -> R + Send) -> Result<R, String> {
        let fd = self.hub.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(move || {
                // SAFETY: setns on a namespace descriptor we own affects
                // this (new, scoped) thread only.
                if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                    return Err(format!(
                        "cannot enter the hub namespace: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                Ok(f())
            })
            .join()
            .map_err(|_| "the hub thread panicked".to_string())?
        })
    }
}

/// A new network namespace, held by the returned descriptor.
fn new_netns() -> Result<OwnedFd, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: unshare(CLONE_NEWNET) moves only this (new, scoped)
            // thread into a new namespace; the thread ends right after.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(format!(
                    "cannot create a network namespace ({}; needs CAP_SYS_ADMIN)",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: a NUL-terminated path; the flags are valid.
            let fd = unsafe {
                libc::open(
                    c"/proc/thread-self/ns/net".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(format!(
                    "cannot open the new network namespace: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: `fd` was just opened and is owned by nobody else.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        })
        .join()
        .map_err(|_| "the namespace thread panicked".to_string())?
    })
}

/// Runs `ip -batch -` on `script` inside namespace `ns`.
fn ip_batch(ns: RawFd, script: &str, what: &str) -> Result<(), String> {
    let mut cmd = Command::new("ip");
    cmd.args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes the async-signal-safe setns system call on a descriptor the
    // parent keeps open.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| {
        format!("cannot run ip (iproute2) to configure {what}'s network namespace: {e}")
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| format!("ip: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip failed to configure {what}'s network namespace: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_balanced_and_contiguous() {
        let hosts = |n, h| (0..n).map(|r| host_of(r, n, h)).collect::<Vec<_>>();
        assert_eq!(hosts(4, 2), [0, 0, 1, 1]);
        assert_eq!(hosts(6, 3), [0, 0, 1, 1, 2, 2]);
        assert_eq!(hosts(6, 2), [0, 0, 0, 1, 1, 1]);
        assert_eq!(hosts(5, 2), [0, 0, 1, 1, 1]);
        assert_eq!(hosts(3, 3), [0, 1, 2]);
        assert_eq!(hosts(7, 1), [0; 7]);
        assert_eq!(key("j1", 2), "j1.h2");
        assert_eq!(host_addr(0).to_string(), "fd00:f5::1");
        assert_eq!(HUB.to_string(), "fd00:f5::ffff");
    }
}
