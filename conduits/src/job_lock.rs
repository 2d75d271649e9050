//! A launcher's claim on a job id, so that two jobs never share memory by
//! accident.
//!
//! Everything a job shares is named by its id: the smp conduit's segment
//! and control files, the fpga boards' directories (`fshmem-<job>-*` in
//! `/dev/shm`), and what the launcher removes when the job ends. A second
//! job started with an id in use would map, overwrite or delete the first
//! one's. `oshrun` therefore claims the id before it starts anything:
//! [`JobLock::claim`] takes an exclusive `flock` on `fshmem-<job>-lock` in
//! the shared-memory directory, held for the launcher's life. The kernel
//! releases the lock when the launcher dies however it dies, so a crashed
//! job never blocks its id; a clean end also removes the file.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The file whose lock stands for job `job_id`.
/// It lives in `/dev/shm`, beside the job's other files, or in the
/// temporary directory on a system without one.
pub fn lock_path(job_id: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("fshmem-{job_id}-lock"))
}

/// Job `job_id`, claimed by this process until dropped.
#[derive(Debug)]
pub struct JobLock {
    path: PathBuf,
    /// Holds the lock; closing it releases the lock.
    _file: File,
}

impl JobLock {
    /// Claims `job_id` for this process. Fails with one line naming the
    /// id (and the pid of the process holding it, when known) if another
    /// launcher holds it.
    pub fn claim(job_id: &str) -> Result<JobLock, String> {
        let path = lock_path(job_id);
        let io = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", path.display());
        // A holder removes the file as it ends: if this process opened the
        // file just before that, its lock is on a file no longer in the
        // directory, and it tries again with the new one.
        for _ in 0..100 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&path)
                .map_err(|e| io("open", e))?;
            // SAFETY: flock on a descriptor this function owns; it touches
            // no memory.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(io("lock", e));
                }
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let by = if holder.is_empty() {
                    String::new()
                } else {
                    format!(" (oshrun pid {holder})")
                };
                return Err(format!(
                    "job id {job_id} is in use by another job{by}: two jobs with one id would \
                     share memory; choose another --job-id"
                ));
            }
            let mine = file.metadata().map_err(|e| io("stat", e))?;
            let same = std::fs::metadata(&path)
                .is_ok_and(|m| m.dev() == mine.dev() && m.ino() == mine.ino());
            if !same {
                continue;
            }
            file.set_len(0).map_err(|e| io("truncate", e))?;
            file.rewind().map_err(|e| io("rewind", e))?;
            write!(file, "{}", std::process::id()).map_err(|e| io("write", e))?;
            return Ok(JobLock { path, _file: file });
        }
        Err(format!(
            "cannot claim job id {job_id}: {} kept changing",
            path.display()
        ))
    }
}

impl Drop for JobLock {
    fn drop(&mut self) {
        // Removed while still locked: a launcher that opened it meanwhile
        // finds it gone after locking and opens a new one.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_id_is_refused_until_released() {
        let id = format!("joblock-test-{}", std::process::id());
        let first = JobLock::claim(&id).expect("first claim");
        let e = JobLock::claim(&id).expect_err("second claim of a held id");
        assert!(
            e.contains(&format!(
                "job id {id} is in use by another job (oshrun pid {})",
                std::process::id()
            )),
            "{e}"
        );
        drop(first);
        assert!(!lock_path(&id).exists());
        let again = JobLock::claim(&id).expect("claim after release");
        drop(again);
        assert!(!lock_path(&id).exists());
    }
}
