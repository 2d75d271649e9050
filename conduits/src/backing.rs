//! Reserving the pages behind a segment at start-up, so that memory that
//! cannot be had is one error at attach naming the size asked and the space
//! free, never a SIGBUS (a full tmpfs) or an out-of-memory kill (memory
//! exhausted) when a page is first touched in the middle of a run.
//!
//! Two kinds of backing, one rule:
//!
//! - a file of a mounted file system (smp's `/dev/shm` files, the devsim
//!   boards' DDR windows): `posix_fallocate` allocates every block now; a
//!   file system that has not enough left answers `ENOSPC`, and the space
//!   free is what `statvfs` says an unprivileged process may still take.
//! - a memfd (the ipv6 and ofi segments): it lives on the kernel's internal
//!   tmpfs, which has no size of its own, so the limit is memory: what
//!   `/proc/meminfo` calls `MemAvailable` plus free swap, within the
//!   headroom of every memory cgroup the process is in (v1
//!   `memory.limit_in_bytes - memory.usage_in_bytes`, v2 `memory.max -
//!   memory.current`, up the hierarchy). Allocating past it does not fail:
//!   the kernel's out-of-memory killer ends some process instead. So the
//!   pages are allocated in [`CHUNK`]s, each only after checking that the
//!   memory free still holds all that is left to reserve: a segment larger
//!   than the memory free is refused before any of it is taken, and
//!   several PEs of a host reserving at once each see what the others
//!   already took. (`MemAvailable` is the kernel's estimate; a request
//!   within a few chunks of it may be refused where reclaim could have
//!   found the pages.)

use crate::error::{ConduitError, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Bytes a memfd is allocated in between two checks of the memory free.
pub(crate) const CHUNK: u64 = 32 << 20;

/// Where the blocks of a backing file come from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Space<'a> {
    /// A file of the file system mounted at (or holding) this directory
    /// (smp's files, fpga's devsim boards).
    #[cfg_attr(not(any(feature = "smp", feature = "fpga")), allow(dead_code))]
    Dir(&'a Path),
    /// A memfd: memory and swap, within the memory cgroups' limits (the
    /// ipv6 and ofi segments).
    #[cfg_attr(not(any(feature = "ipv6", feature = "ofi")), allow(dead_code))]
    Memory,
}

/// Reserves bytes `offset..offset + len` of `file` (already sized to
/// hold them) in `space`; `what` names the backing in the error
/// ([`ConduitError::NoSpace`]) when there is not room for them.
pub(crate) fn reserve(file: &File, offset: u64, len: u64, what: &str, space: Space) -> Result<()> {
    let no_space = |free: Option<u64>| ConduitError::NoSpace {
        what: what.to_string(),
        asked: len,
        free,
    };
    match space {
        Space::Dir(dir) => match fallocate(file, offset, len) {
            Ok(()) => Ok(()),
            Err(libc::ENOSPC) => Err(no_space(free_in_dir(dir))),
            Err(e) => Err(io_error(what, len, e)),
        },
        Space::Memory => {
            let mut done = 0;
            while done < len {
                let step = CHUNK.min(len - done);
                if let Some(free) = memory_free()
                    && free < len - done
                {
                    return Err(no_space(Some(free + done)));
                }
                match fallocate(file, offset + done, step) {
                    Ok(()) => done += step,
                    Err(libc::ENOMEM | libc::ENOSPC) => {
                        return Err(no_space(memory_free().map(|f| f + done)));
                    }
                    Err(e) => return Err(io_error(what, len, e)),
                }
            }
            Ok(())
        }
    }
}

fn io_error(what: &str, len: u64, errno: i32) -> ConduitError {
    ConduitError::Io(format!(
        "cannot reserve {len} bytes for {what}: {}",
        std::io::Error::from_raw_os_error(errno)
    ))
}

/// `posix_fallocate` of `len` bytes at `offset`, retried on `EINTR`; the
/// error number otherwise.
fn fallocate(file: &File, offset: u64, len: u64) -> std::result::Result<(), i32> {
    let (Ok(off), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(libc::EFBIG);
    };
    loop {
        // SAFETY: posix_fallocate on a descriptor `file` keeps open; it
        // touches no memory of this process.
        match unsafe { libc::posix_fallocate(file.as_raw_fd(), off, n) } {
            0 => return Ok(()),
            libc::EINTR => continue,
            e => return Err(e),
        }
    }
}

/// Bytes an unprivileged process may still allocate on the file system of
/// `dir`.
pub(crate) fn free_in_dir(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid value for the call to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` is writable and ours.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Memory this process may still fill with memfd pages: available memory
/// plus free swap, capped by the headroom of its memory cgroups. `None`
/// when `/proc/meminfo` cannot be read.
pub(crate) fn memory_free() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let system = meminfo_bytes(&meminfo, "MemAvailable")?
        .saturating_add(meminfo_bytes(&meminfo, "SwapFree").unwrap_or(0));
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    Some(
        cgroup_dirs(&cgroups)
            .into_iter()
            .filter_map(|(dir, v2)| cgroup_headroom(Path::new(&dir), v2))
            .fold(system, u64::min),
    )
}

/// The value of field `key` of `/proc/meminfo` text, in bytes.
fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?.trim();
        let kb: u64 = rest.strip_suffix("kB")?.trim().parse().ok()?;
        kb.checked_mul(1024)
    })
}

/// The memory cgroup directories of `/proc/self/cgroup` text, the
/// process's own and each ancestor's below the root, with whether each is
/// cgroup v2.
fn cgroup_dirs(text: &str) -> Vec<(String, bool)> {
    let mut dirs = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (root, v2) = if id == "0" && controllers.is_empty() {
            ("/sys/fs/cgroup", true)
        } else if controllers.split(',').any(|c| c == "memory") {
            ("/sys/fs/cgroup/memory", false)
        } else {
            continue;
        };
        // The root cgroup has no limit: stop below it.
        let mut p = path.trim_end_matches('/');
        while !p.is_empty() {
            dirs.push((format!("{root}{p}"), v2));
            p = &p[..p.rfind('/').unwrap_or(0)];
        }
    }
    dirs
}

/// A memory cgroup's limit less its usage, when it has a limit.
fn cgroup_headroom(dir: &Path, v2: bool) -> Option<u64> {
    let (limit, usage) = if v2 {
        ("memory.max", "memory.current")
    } else {
        ("memory.limit_in_bytes", "memory.usage_in_bytes")
    };
    let read = |f: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    // v2 writes "max" when unlimited (no number); v1 a huge number.
    let limit = read(limit).filter(|&l| l < 1 << 60)?;
    Some(limit.saturating_sub(read(usage)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_in_bytes() {
        let t = "MemTotal:       24684092 kB\nMemAvailable:   1000 kB\nSwapFree:  0 kB\n";
        assert_eq!(meminfo_bytes(t, "MemAvailable"), Some(1024 * 1000));
        assert_eq!(meminfo_bytes(t, "SwapFree"), Some(0));
        assert_eq!(meminfo_bytes(t, "Mem"), None);
        assert_eq!(meminfo_bytes("MemAvailable: x kB", "MemAvailable"), None);
    }

    #[test]
    fn cgroup_dirs_walk_up_both_versions() {
        let t = "4:memory:/a/b\n3:cpu:/c\n0::/u/v\n";
        let d = cgroup_dirs(t);
        assert_eq!(
            d,
            vec![
                ("/sys/fs/cgroup/memory/a/b".to_string(), false),
                ("/sys/fs/cgroup/memory/a".to_string(), false),
                ("/sys/fs/cgroup/u/v".to_string(), true),
                ("/sys/fs/cgroup/u".to_string(), true),
            ]
        );
        assert!(cgroup_dirs("0::/\n4:memory:/\n").is_empty());
    }

    #[test]
    fn a_memfd_beyond_memory_is_refused_and_one_within_is_reserved() {
        // SAFETY: the name is NUL-terminated; the flags are valid.
        let fd = unsafe { libc::memfd_create(c"backing-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: `fd` was just created and is owned by nobody else.
        let file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let free = memory_free().expect("/proc/meminfo");
        let huge = free.saturating_mul(2).max(1 << 40);
        file.set_len(huge).unwrap();
        match reserve(&file, 0, huge, "a test memfd", Space::Memory) {
            Err(ConduitError::NoSpace {
                asked,
                free: Some(f),
                ..
            }) => assert!(asked == huge && f < huge, "{f}"),
            other => panic!("{other:?}"),
        }
        file.set_len(0).unwrap();
        file.set_len(3 << 20).unwrap();
        reserve(&file, 4096, (3 << 20) - 4096, "a test memfd", Space::Memory).unwrap();
        let st = file.metadata().unwrap();
        use std::os::unix::fs::MetadataExt;
        assert!(st.blocks() * 512 >= (3 << 20) - 4096, "{}", st.blocks());
    }
}
