//! The job environment a launcher hands each PE.
//!
//! `oshrun` sets `FSHMEM_RANK`, `FSHMEM_SIZE`, `FSHMEM_JOB_ID` and
//! `FSHMEM_CONDUIT`. Under another launcher the rank and size come from
//! its variables instead (MPICH Hydra's `PMI_RANK`/`PMI_SIZE`, Slurm's
//! `SLURM_PROCID`/`SLURM_NTASKS`) and the conduit defaults to `ipv6`, the
//! one that spans hosts (see [`crate::bootstrap`]). A program started
//! without any of them runs as a singleton job of one PE.

use crate::config::JobVars;
use crate::error::{ConduitError, Result};
use crate::kinds::ConduitKind;

/// Rank, size, job id and conduit of this PE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEnv {
    /// This PE's rank.
    pub rank: usize,
    /// Number of PEs.
    pub size: usize,
    /// Names the job's shared resources (shared memory, sockets, files);
    /// only `[A-Za-z0-9_-]`.
    pub job_id: String,
    /// The transport.
    pub conduit: ConduitKind,
}

impl JobEnv {
    /// Reads the job from the process environment; a singleton job when no
    /// launcher variables are set.
    pub fn from_env() -> Result<JobEnv> {
        let get = |k: &str| std::env::var(k).ok();
        let job = Self::from_lookup(get)?;
        if let Some(fd) = JobVars::from_lookup(get)?.launcher_fd {
            let _ = LAUNCHER_FD.set(fd);
        }
        Ok(job)
    }

    /// Reads the job through `get` (testable without touching the process
    /// environment). Every bad value is an error naming the variable.
    ///
    /// ```
    /// use conduits::JobEnv;
    /// let env = |k: &str| match k {
    ///     "FSHMEM_RANK" => Some("1".to_string()),
    ///     "FSHMEM_SIZE" => Some("4".to_string()),
    ///     "FSHMEM_JOB_ID" => Some("j42".to_string()),
    ///     _ => None,
    /// };
    /// let job = JobEnv::from_lookup(env).unwrap();
    /// assert_eq!((job.rank, job.size), (1, 4));
    /// ```
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<JobEnv> {
        let vars = JobVars::from_lookup(&get)?;
        let launcher = match (vars.rank, vars.size) {
            (None, None) => crate::bootstrap::launcher_rank_size(&get)?,
            _ => None,
        };
        let conduit = match vars.conduit {
            Some(k) => k,
            None if launcher.is_some() => ConduitKind::Ipv6,
            None => ConduitKind::Smp,
        };
        let (rank, size, job_id) = match (vars.rank, vars.size) {
            (None, None) => match launcher {
                Some((rank, size, who)) => {
                    let job = vars
                        .job_id
                        .or_else(|| get("SLURM_JOB_ID").map(|j| format!("slurm{j}")))
                        .unwrap_or_else(|| format!("{who}job"));
                    (rank, size, job)
                }
                None => (0, 1, format!("single{}", std::process::id())),
            },
            (Some(rank), Some(size)) => {
                if rank >= size {
                    return Err(ConduitError::Bootstrap(format!(
                        "FSHMEM_RANK={rank} must be below FSHMEM_SIZE={size}"
                    )));
                }
                let job = vars.job_id.ok_or_else(|| {
                    ConduitError::Bootstrap("FSHMEM_JOB_ID is not set".to_string())
                })?;
                (rank, size, job)
            }
            _ => {
                return Err(ConduitError::Bootstrap(
                    "FSHMEM_RANK and FSHMEM_SIZE must be set together".to_string(),
                ));
            }
        };
        if job_id.is_empty()
            || job_id.len() > 64
            || !job_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(ConduitError::Bootstrap(format!(
                "FSHMEM_JOB_ID={job_id:?} must be 1..=64 characters of [A-Za-z0-9_-]"
            )));
        }
        Ok(JobEnv {
            rank,
            size,
            job_id,
            conduit,
        })
    }
}

/// Names the file descriptor (a pipe's write end) through which a PE tells
/// its launcher which PE failed first; `oshrun` sets it.
pub const LAUNCHER_FD_VAR: &str = "FSHMEM_LAUNCHER_FD";

/// The descriptor [`LAUNCHER_FD_VAR`] named when the job was read.
static LAUNCHER_FD: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Tells the launcher (through [`LAUNCHER_FD_VAR`]) that this PE found PE
/// `pe` failed and is about to leave because of it, so that the launcher,
/// which may see this PE end first, names `pe` as the cause. Once per
/// process; a no-op without the variable or when the descriptor is no
/// longer a pipe.
///
/// The message is one line, `failed <pe>`, written with a single `write`
/// of fewer than `PIPE_BUF` bytes, so lines from several PEs never mix.
pub fn tell_launcher_failed(pe: usize) {
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(fd) = LAUNCHER_FD
        .get()
        .and_then(|&v| libc::c_int::try_from(v).ok())
    else {
        return;
    };
    if TOLD.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    // SAFETY: `stat` is plain old data, valid when zeroed.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes only into `st`; a closed descriptor fails.
    let r = unsafe { libc::fstat(fd, &mut st) };
    if r != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return;
    }
    let line = format!("failed {pe}\n");
    // SAFETY: writes `line.len()` bytes from a live buffer to a pipe.
    let _ = unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
}

/// The name of rank `rank`'s shared-memory region when the ofi conduit
/// runs on libfabric's `shm` provider: a file of the job in `/dev/shm`
/// (`fshmem-<job>-ofi<rank>`), which launchers remove with the job's other
/// files however the job ended.
pub fn ofi_shm_name(job_id: &str, rank: usize) -> String {
    format!("fshmem-{job_id}-ofi{rank}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |k| v.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone())
    }

    #[test]
    fn singleton_without_launcher() {
        let j = JobEnv::from_lookup(env(&[])).unwrap();
        assert_eq!((j.rank, j.size, j.conduit), (0, 1, ConduitKind::Smp));
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = JobEnv::from_lookup(env(&[("FSHMEM_RANK", "x"), ("FSHMEM_SIZE", "2")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("FSHMEM_RANK"), "{e}");
        let e = JobEnv::from_lookup(env(&[
            ("FSHMEM_RANK", "2"),
            ("FSHMEM_SIZE", "2"),
            ("FSHMEM_JOB_ID", "a"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("below"), "{e}");
        let e = JobEnv::from_lookup(env(&[
            ("FSHMEM_RANK", "0"),
            ("FSHMEM_SIZE", "2"),
            ("FSHMEM_JOB_ID", "a/b"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("FSHMEM_JOB_ID"), "{e}");
        let e = JobEnv::from_lookup(env(&[("FSHMEM_CONDUIT", "tcp")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("tcp"), "{e}");
        assert!(JobEnv::from_lookup(env(&[("FSHMEM_SIZE", "2")])).is_err());
    }

    #[test]
    fn launchers_supply_rank_and_size() {
        let j = JobEnv::from_lookup(env(&[("PMI_RANK", "2"), ("PMI_SIZE", "3")])).unwrap();
        assert_eq!((j.rank, j.size, j.conduit), (2, 3, ConduitKind::Ipv6));
        let j = JobEnv::from_lookup(env(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "77"),
        ]))
        .unwrap();
        assert_eq!((j.rank, j.size, j.job_id.as_str()), (1, 4, "slurm77"));
        let e = JobEnv::from_lookup(env(&[("PMI_RANK", "3"), ("PMI_SIZE", "3")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("PMI_RANK"), "{e}");
        // oshrun's variables win over a launcher's.
        let j = JobEnv::from_lookup(env(&[
            ("FSHMEM_RANK", "0"),
            ("FSHMEM_SIZE", "1"),
            ("FSHMEM_JOB_ID", "a"),
            ("PMI_RANK", "5"),
            ("PMI_SIZE", "9"),
        ]))
        .unwrap();
        assert_eq!((j.rank, j.size, j.conduit), (0, 1, ConduitKind::Smp));
    }
}
