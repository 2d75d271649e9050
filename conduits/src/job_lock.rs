//! A job's claim on its id, so that two jobs never share memory by
//! accident.
//!
//! Everything a job shares on a host is named by its id: the smp conduit's
//! segment and control files, the fpga boards' directories
//! (`fshmem-<job>-*` in `/dev/shm`), and what the launcher removes when the
//! job ends. A second job started with an id in use would map, overwrite or
//! delete the first one's. So the id is claimed before anything of the job
//! exists, by every process that stands for the job on a host: `oshrun`,
//! or, under another launcher (Hydra, `mpirun`, `srun`, the rendezvous)
//! when `FSHMEM_JOB_ID` names the job, each PE itself ([`hold_for_pe`]);
//! an id derived from the launch (see [`crate::job`]) is that launch's
//! alone and needs no claim.
//!
//! A claim names the job's *instance*: `oshrun pid P`, or what identifies
//! the launch to its launcher (the pid of Hydra's PMI server, the PMIx
//! namespace, Slurm's step, the rendezvous address), the same on every PE
//! of one launch and different for two launches. Two files in `/dev/shm`
//! carry it:
//! - `fshmem-<job>-live`: every holder keeps a shared `flock` on it for
//!   its life, so it is locked exactly while some process of the job
//!   lives (the kernel drops the locks of a process however it ends, so a
//!   crashed job never blocks its id);
//! - `fshmem-<job>-lock`: the instance, written by the first holder; an
//!   exclusive `flock` on it, held for a moment, makes each claim's
//!   look-and-write one step.
//!
//! A claim whose instance differs from the one written while `live` is
//! locked is refused, naming the holder. The last holder to release
//! removes both files. After a crash (every holder killed) they stay, two
//! small files without meaning, until the next job of that id takes them
//! over and removes them as it ends.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The directory of the claim files: `/dev/shm`, beside the job's other
/// files, or the temporary directory on a system without one.
fn dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The file that holds job `job_id`'s instance (see the module's notes).
pub fn lock_path(job_id: &str) -> PathBuf {
    dir().join(format!("fshmem-{job_id}-lock"))
}

/// The file every holder of job `job_id` keeps a shared lock on.
pub fn live_path(job_id: &str) -> PathBuf {
    dir().join(format!("fshmem-{job_id}-live"))
}

/// `flock(fd, op)`, with the error of the call.
fn flock(f: &File, op: libc::c_int) -> std::io::Result<()> {
    // SAFETY: flock on a descriptor `f` owns; it touches no memory.
    match unsafe { libc::flock(f.as_raw_fd(), op) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Opens (creating) `path` for reading and writing, owner only.
fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Whether `f` is still the file at `path` (a holder that released last
/// may have removed it after this process opened it).
fn still_there(f: &File, path: &Path) -> bool {
    let (Ok(mine), Ok(now)) = (f.metadata(), std::fs::metadata(path)) else {
        return false;
    };
    mine.dev() == now.dev() && mine.ino() == now.ino()
}

/// Job `job_id`, claimed by this process for `instance` until dropped.
#[derive(Debug)]
pub struct JobLock {
    job_id: String,
    /// Holds the shared lock on `fshmem-<job>-live`.
    live: File,
}

impl JobLock {
    /// Claims `job_id` for the job instance `instance` (for example
    /// `oshrun pid 1234`). Fails with one line naming the id and the
    /// instance that holds it, if a live process of another instance does;
    /// the caller adds how to choose another id.
    pub fn claim(job_id: &str, instance: &str) -> Result<JobLock, String> {
        let (lock_at, live_at) = (lock_path(job_id), live_path(job_id));
        let io =
            |what: &str, p: &Path, e: std::io::Error| format!("cannot {what} {}: {e}", p.display());
        // The files are removed by a last holder as it ends: a lock taken
        // on a file no longer in the directory is retried on the new one.
        for _ in 0..100 {
            let mut lock = open(&lock_at).map_err(|e| io("open", &lock_at, e))?;
            flock(&lock, libc::LOCK_EX).map_err(|e| io("lock", &lock_at, e))?;
            if !still_there(&lock, &lock_at) {
                continue;
            }
            // Under the exclusive lock: nobody else claims or releases.
            let live = open(&live_at).map_err(|e| io("open", &live_at, e))?;
            let held = match flock(&live, libc::LOCK_EX | libc::LOCK_NB) {
                Ok(()) => false,
                Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => true,
                Err(e) => return Err(io("lock", &live_at, e)),
            };
            if held {
                let mut holder = String::new();
                let _ = lock.read_to_string(&mut holder);
                let holder = holder.trim();
                if holder != instance {
                    let by = match holder {
                        "" => String::new(),
                        h => format!(" ({h})"),
                    };
                    return Err(format!(
                        "job id {job_id} is in use by another job{by}: two jobs with one id \
                         would share memory"
                    ));
                }
            } else {
                lock.set_len(0).map_err(|e| io("truncate", &lock_at, e))?;
                lock.rewind().map_err(|e| io("rewind", &lock_at, e))?;
                write!(lock, "{instance}").map_err(|e| io("write", &lock_at, e))?;
            }
            // Shared: other holders of this instance share it; converting
            // the exclusive lock is not atomic, but every claim and
            // release waits for `lock`, held until this returns.
            flock(&live, libc::LOCK_SH).map_err(|e| io("lock", &live_at, e))?;
            return Ok(JobLock {
                job_id: job_id.to_string(),
                live,
            });
        }
        Err(format!(
            "cannot claim job id {job_id}: {} kept changing",
            lock_at.display()
        ))
    }
}

impl Drop for JobLock {
    fn drop(&mut self) {
        let (lock_at, live_at) = (lock_path(&self.job_id), live_path(&self.job_id));
        let Ok(lock) = open(&lock_at) else { return };
        if flock(&lock, libc::LOCK_EX).is_err() || !still_there(&lock, &lock_at) {
            // Removed meanwhile: nothing left to clean.
            return;
        }
        // The last holder (nobody shares `live` once ours is gone) removes
        // both files, while still holding `lock`: a claim that opened them
        // meanwhile finds them gone once it gets the lock, and starts anew.
        let _ = flock(&self.live, libc::LOCK_UN);
        if flock(&self.live, libc::LOCK_EX | libc::LOCK_NB).is_ok() {
            let _ = std::fs::remove_file(&live_at);
            let _ = std::fs::remove_file(&lock_at);
        }
    }
}

/// The claim a PE holds when no oshrun claimed the job for it.
static PE_CLAIM: Mutex<Option<JobLock>> = Mutex::new(None);

/// Claims `job_id` for this PE, as job instance `instance` (see the
/// module's notes), and holds it until [`release_for_pe`]. A no-op if
/// this process already holds it. The error is one line naming the id,
/// the holder and `FSHMEM_JOB_ID`.
pub fn hold_for_pe(job_id: &str, instance: &str) -> Result<(), String> {
    let mut claim = PE_CLAIM.lock().unwrap_or_else(|e| e.into_inner());
    if claim.as_ref().is_some_and(|c| c.job_id == job_id) {
        return Ok(());
    }
    *claim = None;
    let c = JobLock::claim(job_id, instance)
        .map_err(|e| format!("{e}; give this job another FSHMEM_JOB_ID"))?;
    *claim = Some(c);
    Ok(())
}

/// Releases this PE's claim ([`hold_for_pe`]), if it holds one: the job
/// has ended for it (finalized, or leaving through a global exit).
pub fn release_for_pe() {
    let c = PE_CLAIM.lock().unwrap_or_else(|e| e.into_inner()).take();
    drop(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_id_is_refused_to_another_instance_until_released() {
        let id = format!("joblock-test-{}", std::process::id());
        let first = JobLock::claim(&id, "oshrun pid 1").expect("first claim");
        let e = JobLock::claim(&id, "oshrun pid 2").expect_err("another instance's claim");
        assert!(
            e.contains(&format!(
                "job id {id} is in use by another job (oshrun pid 1)"
            )),
            "{e}"
        );
        // Holders of one instance share the id; the last one out removes
        // the files.
        let second = JobLock::claim(&id, "oshrun pid 1").expect("the same instance");
        drop(first);
        assert!(lock_path(&id).exists() && live_path(&id).exists());
        assert!(JobLock::claim(&id, "oshrun pid 2").is_err());
        drop(second);
        assert!(!lock_path(&id).exists() && !live_path(&id).exists());
        let again = JobLock::claim(&id, "oshrun pid 2").expect("claim after release");
        drop(again);
        assert!(!lock_path(&id).exists() && !live_path(&id).exists());
    }

    #[test]
    fn files_a_crashed_job_left_are_taken_over() {
        let id = format!("joblock-crash-{}", std::process::id());
        // A crashed holder: its files remain, nobody holds the lock.
        std::fs::write(lock_path(&id), "oshrun pid 1").expect("write");
        std::fs::write(live_path(&id), "").expect("write");
        let c = JobLock::claim(&id, "oshrun pid 2").expect("a claim over stale files");
        let text = std::fs::read_to_string(lock_path(&id)).expect("read");
        assert_eq!(text, "oshrun pid 2");
        drop(c);
        assert!(!lock_path(&id).exists() && !live_path(&id).exists());
    }
}
