//! POSIX shared-memory files and their mappings.
//!
//! Every object of a job lives in a file of [`SHM_DIR`] named
//! `fshmem-<job>-<what>`: `<what>` is a PE's rank for its segment and `ctl`
//! for the job control block. Files are created exclusively, sized with
//! `ftruncate` (so they read as zeros), their pages reserved with
//! `posix_fallocate` (so that a full `/dev/shm` is an error at start-up,
//! not a SIGBUS later), and mapped shared by every PE.

use crate::aligned::AlignedMap;
use crate::error::{ConduitError, Result};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where the job's shared-memory files live.
pub const SHM_DIR: &str = "/dev/shm";

/// The common prefix of a job's file names, `fshmem-<job>-`.
pub fn job_prefix(job_id: &str) -> String {
    format!("fshmem-{job_id}-")
}

/// The file holding `what` (a rank, or `ctl`) of job `job_id`.
pub fn job_file(job_id: &str, what: &str) -> PathBuf {
    Path::new(SHM_DIR).join(format!("{}{what}", job_prefix(job_id)))
}

/// Every file of job `job_id` present in [`SHM_DIR`]: names
/// `fshmem-<job>-ctl` and `fshmem-<job>-<rank>`, and those of the job's
/// hosts when its PEs span several (`fshmem-<job>.h<host>-ctl`, ...,
/// see [`crate::route`]) only, so that job `a` never matches the files of
/// job `a-1` (a job id has no `.`).
pub fn job_files(job_id: &str) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(SHM_DIR) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = dir
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            name.to_str().is_some_and(|n| is_job_file(n, job_id))
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Whether `name` (in [`SHM_DIR`]) is a file of job `job_id`.
fn is_job_file(name: &str, job_id: &str) -> bool {
    let Some(rest) = name
        .strip_prefix("fshmem-")
        .and_then(|r| r.strip_prefix(job_id))
    else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let rest = match rest.strip_prefix(".h").and_then(|r| r.split_once('-')) {
        Some((host, r)) if digits(host) => r,
        Some(_) => return false,
        None => match rest.strip_prefix('-') {
            Some(r) => r,
            None => return false,
        },
    };
    // The ofi conduit's shm regions (crate::job::ofi_shm_name) too.
    rest == "ctl" || digits(rest) || rest.strip_prefix("ofi").is_some_and(digits)
}

/// Removes every file of job `job_id` ([`job_files`]); returns how many were
/// removed. Used by launchers after a job ends, however it ended.
pub fn remove_job_files(job_id: &str) -> usize {
    job_files(job_id)
        .into_iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count()
}

/// A file this process created; removed on drop unless [`Created::keep`]
/// was called, so that a failed bootstrap leaves nothing behind.
pub(crate) struct Created {
    path: Option<PathBuf>,
}

impl Created {
    /// Removes the file now.
    pub(crate) fn remove(mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Creates `path` exclusively with `len` zero bytes.
pub(crate) fn create(path: &Path, len: usize) -> Result<(File, Created)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == ErrorKind::AlreadyExists {
                ConduitError::Bootstrap(format!(
                    "{} already exists: another job uses this job id, or a crashed job left \
                     it behind (remove it, or choose another FSHMEM_JOB_ID)",
                    path.display()
                ))
            } else {
                ConduitError::Io(format!("cannot create {}: {e}", path.display()))
            }
        })?;
    let guard = Created {
        path: Some(path.to_path_buf()),
    };
    file.set_len(len as u64).map_err(|e| {
        ConduitError::Io(format!(
            "cannot size {} to {len} bytes: {e}",
            path.display()
        ))
    })?;
    crate::backing::reserve(
        &file,
        0,
        len as u64,
        &path.display().to_string(),
        crate::backing::Space::Dir(path.parent().unwrap_or(Path::new(SHM_DIR))),
    )?;
    Ok((file, guard))
}

/// Opens an existing `path` for reading and writing; `Ok(None)` when it does
/// not exist (yet).
pub(crate) fn open(path: &Path) -> Result<Option<File>> {
    match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConduitError::Io(format!(
            "cannot open {}: {e}",
            path.display()
        ))),
    }
}

/// A shared mapping of the first `len` bytes of a file. The memory is
/// written by other processes, so it is only ever reached through raw
/// pointers and atomics, never through Rust references to plain data.
pub(crate) struct Region {
    map: AlignedMap,
}

impl Region {
    /// Maps `len` bytes of `file` shared, read-write, page aligned.
    pub(crate) fn map(file: &File, len: usize, what: &Path) -> Result<Region> {
        Region::map_aligned(file, len, 1, what)
    }

    /// Maps `len` bytes of `file` shared, read-write, at a multiple of
    /// `align` (a power of two; segments use [`crate::aligned::SEGMENT_ALIGN`]).
    pub(crate) fn map_aligned(
        file: &File,
        len: usize,
        align: usize,
        what: &Path,
    ) -> Result<Region> {
        let map = AlignedMap::map(file.as_raw_fd(), 0, len, align)
            .map_err(|e| ConduitError::Io(format!("cannot map {}: {e}", what.display())))?;
        Ok(Region { map })
    }

    /// Base address of the mapping.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.map.ptr()
    }
}

#[cfg(test)]
mod tests {
    use super::is_job_file;

    #[test]
    fn job_files_are_the_jobs_and_its_hosts_only() {
        for n in [
            "fshmem-a-ctl",
            "fshmem-a-3",
            "fshmem-a.h0-ctl",
            "fshmem-a.h12-7",
            "fshmem-a-ofi0",
            "fshmem-a.h1-ofi12",
        ] {
            assert!(is_job_file(n, "a"), "{n}");
        }
        for n in [
            "fshmem-a-1-ctl",
            "fshmem-a-1-3",
            "fshmem-ab-3",
            "fshmem-a-",
            "fshmem-a.h-ctl",
            "fshmem-a.hx-3",
            "fshmem-a.h1-board0",
            "fshmem-a-ofi",
            "fshmem-a-ofix",
            "fshmem-ab-ofi1",
            "other-a-3",
        ] {
            assert!(!is_job_file(n, "a"), "{n}");
        }
    }
}
