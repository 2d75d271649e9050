//! Host identity (`spec/conduit.md` §10.1): which PEs of a job share a
//! host, and so share memory.
//!
//! Every PE publishes a *host key* through the launcher's bootstrap
//! all-gather before any conduit attaches; PEs with equal keys share a
//! host. The key is the `FSHMEM_HOST_KEY` setting when set (`oshrun` sets
//! it to model several hosts on one machine, tests set it), else
//! [`default_key`]: the host name, the kernel's boot id and the network
//! and mount namespaces of the process, so that two machines of one name
//! are two hosts, and so are two containers (or `oshrun --hosts`
//! namespaces) of one machine, whose `/dev/shm` or network may differ.
//!
//! Hosts are numbered in order of their lowest PE; within a host, PEs in
//! rank order get *local ranks* `0..local_size`.

use crate::bootstrap::Bootstrap;
use crate::error::{ConduitError, Result};

/// Longest host key, in bytes (the `FSHMEM_HOST_KEY` row checks it too).
pub const MAX_KEY: usize = crate::config::MAX_HOST_KEY;

/// Which host each PE of a job runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hosts {
    /// The host of every PE.
    host_of: Vec<u32>,
    /// The local rank of every PE on its host.
    local_rank: Vec<u32>,
    /// The PEs of every host, in rank order.
    members: Vec<Vec<usize>>,
}

impl Hosts {
    /// Groups PEs by key: PE `pe`'s key is `keys[pe]`. Hosts are numbered
    /// in order of their lowest PE.
    ///
    /// ```
    /// use conduits::route::Hosts;
    /// let h = Hosts::from_keys(&["b", "a", "b", "a", "c"]);
    /// assert_eq!(h.count(), 3);
    /// assert_eq!(h.members(0), &[0, 2]);
    /// assert_eq!(h.members(1), &[1, 3]);
    /// assert_eq!((h.host_of(3), h.local_rank(3)), (1, 1));
    /// assert_eq!(h.members(2), &[4]);
    /// ```
    pub fn from_keys<K: AsRef<[u8]>>(keys: &[K]) -> Hosts {
        let mut firsts: Vec<&[u8]> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut host_of = Vec::with_capacity(keys.len());
        let mut local_rank = Vec::with_capacity(keys.len());
        for (pe, k) in keys.iter().enumerate() {
            let k = k.as_ref();
            let h = match firsts.iter().position(|f| *f == k) {
                Some(h) => h,
                None => {
                    firsts.push(k);
                    members.push(Vec::new());
                    firsts.len() - 1
                }
            };
            host_of.push(h as u32);
            local_rank.push(members[h].len() as u32);
            members[h].push(pe);
        }
        Hosts {
            host_of,
            local_rank,
            members,
        }
    }

    /// A job of `size` PEs with every PE on a host of its own.
    pub fn separate(size: usize) -> Hosts {
        let keys: Vec<[u8; 8]> = (0..size as u64).map(u64::to_le_bytes).collect();
        Hosts::from_keys(&keys)
    }

    /// The number of PEs.
    pub fn size(&self) -> usize {
        self.host_of.len()
    }

    /// The number of hosts.
    pub fn count(&self) -> usize {
        self.members.len()
    }

    /// The host of PE `pe` (`pe < size()`).
    pub fn host_of(&self, pe: usize) -> usize {
        self.host_of[pe] as usize
    }

    /// The local rank of PE `pe` on its host.
    pub fn local_rank(&self, pe: usize) -> usize {
        self.local_rank[pe] as usize
    }

    /// The PEs of host `host`, in rank order.
    pub fn members(&self, host: usize) -> &[usize] {
        &self.members[host]
    }

    /// Whether no two PEs share a host (a job that needs no on-node path).
    pub fn none_shared(&self) -> bool {
        self.members.len() == self.host_of.len()
    }

    /// `2 hosts: [0, 1] [2, 3]`, for messages.
    pub fn describe(&self) -> String {
        let hosts: Vec<String> = self.members.iter().map(|m| format!("{m:?}")).collect();
        format!(
            "{} host{}: {}",
            self.count(),
            if self.count() == 1 { "" } else { "s" },
            hosts.join(" ")
        )
    }
}

/// This process's host key when `FSHMEM_HOST_KEY` is not set: the host
/// name, the boot id (`/proc/sys/kernel/random/boot_id`) and the inode
/// numbers of the network and mount namespaces.
pub fn default_key() -> String {
    let mut name = [0u8; 256];
    // SAFETY: gethostname writes at most `name.len()` bytes into `name`.
    let r = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) };
    let host = if r == 0 {
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        String::from_utf8_lossy(&name[..end]).into_owned()
    } else {
        "?".to_string()
    };
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let ns = |kind: &str| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(format!("/proc/self/ns/{kind}")).map_or(0, |m| m.ino())
    };
    format!("{host}/{boot}/net{}/mnt{}", ns("net"), ns("mnt"))
}

/// Publishes `key` through the bootstrap all-gather and groups the PEs by
/// the keys they published. Collective.
pub fn exchange(boot: &mut dyn Bootstrap, key: &str) -> Result<Hosts> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(ConduitError::Bootstrap(format!(
            "PE {}: the host key {key:?} must be 1..={MAX_KEY} bytes (FSHMEM_HOST_KEY)",
            boot.rank()
        )));
    }
    let keys = boot.allgather(key.as_bytes())?;
    if keys.len() != boot.size() {
        return Err(ConduitError::Bootstrap(format!(
            "the host-key exchange returned {} keys for {} PEs",
            keys.len(),
            boot.size()
        )));
    }
    if let Some(pe) = keys.iter().position(|k| k.is_empty() || k.len() > MAX_KEY) {
        return Err(ConduitError::Bootstrap(format!(
            "PE {pe} published a host key of {} bytes (1..={MAX_KEY} expected)",
            keys[pe].len()
        )));
    }
    Ok(Hosts::from_keys(&keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_numbered_by_lowest_pe_and_local_ranks_follow_rank_order() {
        let h = Hosts::from_keys(&["x", "x", "y", "y", "y", "x"]);
        assert_eq!(h.count(), 2);
        assert_eq!(h.members(0), &[0, 1, 5]);
        assert_eq!(h.members(1), &[2, 3, 4]);
        let locals: Vec<usize> = (0..6).map(|p| h.local_rank(p)).collect();
        assert_eq!(locals, [0, 1, 0, 1, 2, 2]);
        assert!(!h.none_shared());
        assert_eq!(h.describe(), "2 hosts: [0, 1, 5] [2, 3, 4]");
        let s = Hosts::separate(3);
        assert!(s.none_shared());
        assert_eq!((s.count(), s.host_of(2), s.local_rank(2)), (3, 2, 0));
    }

    #[test]
    fn default_key_is_stable_and_names_the_namespaces() {
        let k = default_key();
        assert_eq!(k, default_key());
        assert!(k.contains("/net") && k.contains("/mnt"), "{k}");
    }

    #[test]
    fn exchange_checks_keys() {
        let mut one = crate::bootstrap::Single;
        let h = exchange(&mut one, "k").unwrap();
        assert_eq!((h.size(), h.count()), (1, 1));
        let e = exchange(&mut one, "").unwrap_err().to_string();
        assert!(e.contains("FSHMEM_HOST_KEY"), "{e}");
        let long = "x".repeat(MAX_KEY + 1);
        assert!(exchange(&mut one, &long).is_err());
    }
}
