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
        let job = Self::from_lookup_with(get, || crate::bootstrap::pmi::open_early(&get))?;
        if let Some(fd) = JobVars::from_lookup(get)?.launcher_fd {
            let _ = LAUNCHER_FD.set(fd);
        }
        crate::wait::note_rank(job.rank, under_oshrun());
        // Under oshrun, oshrun claimed the job id. Under another launcher
        // an id given in FSHMEM_JOB_ID may be in use, and each PE claims
        // it before anything of the job exists; an id derived from the
        // launch is that launch's alone.
        if !under_oshrun()
            && get("FSHMEM_JOB_ID").is_some()
            && let Some(instance) = launch_instance(&get)
        {
            crate::job_lock::hold_for_pe(&job.job_id, &instance)
                .map_err(ConduitError::Bootstrap)?;
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
        Self::from_lookup_with(get, || {
            Err(ConduitError::Bootstrap("no PMI session".to_string()))
        })
    }

    /// [`JobEnv::from_lookup`], with `kvsname` giving the PMI-1 session's
    /// KVS name (which names a Hydra job) when the job id is derived from
    /// it.
    fn from_lookup_with(
        get: impl Fn(&str) -> Option<String>,
        kvsname: impl FnOnce() -> Result<String>,
    ) -> Result<JobEnv> {
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
                    let job = match vars.job_id {
                        Some(j) => j,
                        None => {
                            derived_job_id(&get, kvsname).unwrap_or_else(|| format!("{who}job"))
                        }
                    };
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
                let job = match vars.job_id {
                    Some(j) => j,
                    None => get("FSHMEM_BOOTSTRAP")
                        .map(|a| job_id_from("rv", &a))
                        .ok_or_else(|| {
                            ConduitError::Bootstrap(
                                "FSHMEM_JOB_ID is not set: with FSHMEM_RANK and FSHMEM_SIZE, \
                                 set FSHMEM_JOB_ID to one value for every PE of the job \
                                 (1-64 characters of [A-Za-z0-9_-]; it names the job's \
                                 shared memory), or FSHMEM_BOOTSTRAP, from which it is \
                                 derived"
                                    .to_string(),
                            )
                        })?,
                };
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

/// The job id of a job started without oshrun and without `FSHMEM_JOB_ID`,
/// from what identifies the job to its bootstrap service, the same on
/// every PE and different for two jobs that run at once: the rendezvous
/// address (`FSHMEM_BOOTSTRAP`, one server per address), Hydra's KVS name
/// (through `kvsname`, when `PMI_FD` is set), the PMIx namespace, or
/// Slurm's job and step ids. `None` when none is there (a PMI session
/// that cannot be opened names nothing; the bootstrap reports it).
fn derived_job_id(
    get: &impl Fn(&str) -> Option<String>,
    kvsname: impl FnOnce() -> Result<String>,
) -> Option<String> {
    if let Some(a) = get("FSHMEM_BOOTSTRAP") {
        return Some(job_id_from("rv", &a));
    }
    if get("PMI_FD").is_some()
        && let Ok(k) = kvsname()
    {
        return Some(job_id_from("pmi", &k));
    }
    if crate::bootstrap::pmix::launched(get)
        && let Some(ns) = get("PMIX_NAMESPACE")
    {
        return Some(job_id_from("pmix", &ns));
    }
    get("SLURM_JOB_ID").map(|j| match get("SLURM_STEP_ID") {
        Some(s) => job_id_from("slurm", &format!("{j}_{s}")),
        None => job_id_from("slurm", &j),
    })
}

/// The launch this process belongs to, in words, for claiming its job id
/// ([`crate::job_lock`]), the same on every PE of one launch on a host and
/// different for two launches: the rendezvous address, the PMIx
/// namespace, Slurm's step, or the PMI server at the other end of
/// `PMI_FD` (Hydra's proxy, one per job and host). `None` for a singleton
/// and for ranks started by hand without a rendezvous, which nothing
/// identifies.
///
/// Under Hydra the KVS name would do too, but asking PMI for it opens the
/// session, and a rank that leaves (refused) while a peer is still in the
/// middle of its PMI handshake makes the proxy fail and lose the ranks'
/// output.
fn launch_instance(get: &impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(a) = get("FSHMEM_BOOTSTRAP") {
        return Some(format!("the rendezvous at {a}"));
    }
    if crate::bootstrap::pmix::launched(get)
        && let Some(ns) = get("PMIX_NAMESPACE")
    {
        return Some(format!("PMIx namespace {ns}"));
    }
    if let (Some(j), Some(s)) = (get("SLURM_JOB_ID"), get("SLURM_STEP_ID")) {
        return Some(format!("Slurm step {j}.{s}"));
    }
    let pid = get("PMI_FD").and_then(|fd| peer_pid(fd.trim().parse().ok()?))?;
    Some(format!("the job whose PMI server is pid {pid}"))
}

/// The pid of the process at the other end of the Unix socket `fd`.
fn peer_pid(fd: libc::c_int) -> Option<i32> {
    // SAFETY: `ucred` is plain data, valid when zeroed.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, which is
    // that large; a descriptor that is no socket is an error, not UB.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid)
}

/// A job id made of `prefix` and `name`: characters outside
/// `[A-Za-z0-9_-]` become `_`; past 64 characters the tail is a hash of
/// the whole name, so that ids stay distinct.
fn job_id_from(prefix: &str, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let id = format!("{prefix}{clean}");
    if id.len() <= 64 {
        return id;
    }
    let h = gasnet_core::hash::fnv1a(name.as_bytes());
    format!("{}-{h:016x}", &id[..47])
}

/// The rank a launcher gave this process, as far as its variables tell
/// (`FSHMEM_RANK`, `PMI_RANK`, `PMIX_RANK`, `SLURM_PROCID`,
/// `OMPI_COMM_WORLD_RANK`), for naming the PE in an error raised before
/// the job is known; 0 when none is a number.
pub fn rank_hint(get: impl Fn(&str) -> Option<String>) -> usize {
    [
        "FSHMEM_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "SLURM_PROCID",
        "OMPI_COMM_WORLD_RANK",
    ]
    .iter()
    .find_map(|k| get(k)?.trim().parse().ok())
    .unwrap_or(0)
}

/// Names the file descriptor (a pipe's write end) through which a PE tells
/// its launcher which PE failed first; `oshrun` sets it.
pub const LAUNCHER_FD_VAR: &str = "FSHMEM_LAUNCHER_FD";

/// The descriptor [`LAUNCHER_FD_VAR`] named when the job was read.
static LAUNCHER_FD: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Whether oshrun started this process (it set [`LAUNCHER_FD_VAR`]): oshrun
/// then reports how the job ended, naming the PE that failed first.
pub fn under_oshrun() -> bool {
    LAUNCHER_FD.get().is_some()
}

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
    fn job_ids_are_derived_from_the_bootstrap() {
        let rv = [
            ("FSHMEM_RANK", "1"),
            ("FSHMEM_SIZE", "2"),
            ("FSHMEM_BOOTSTRAP", "[::1]:4000"),
        ];
        assert_eq!(
            JobEnv::from_lookup(env(&rv)).unwrap().job_id,
            "rv___1__4000"
        );
        let e = JobEnv::from_lookup(env(&rv[..2])).unwrap_err().to_string();
        assert!(
            e.contains("FSHMEM_JOB_ID is not set") && e.contains("FSHMEM_BOOTSTRAP"),
            "{e}"
        );
        let kvs = || Ok("kvs_123_0".to_string());
        let pmi = env(&[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("PMI_FD", "5")]);
        assert_eq!(
            JobEnv::from_lookup_with(pmi, kvs).unwrap().job_id,
            "pmikvs_123_0"
        );
        let long = "x".repeat(100);
        let (a, b) = (
            job_id_from("p", &long),
            job_id_from("p", &(long.clone() + "y")),
        );
        assert!(a.len() <= 64 && b.len() <= 64 && a != b, "{a} {b}");
        assert_eq!(a, job_id_from("p", &long));
        assert_eq!(rank_hint(env(&[("PMIX_RANK", "3")])), 3);
        assert_eq!(rank_hint(env(&[("FSHMEM_RANK", "x")])), 0);
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
        let j = JobEnv::from_lookup(env(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "77"),
            ("SLURM_STEP_ID", "3"),
            ("PMIX_NAMESPACE", "slurm.pmix.77.3"),
            ("PMIX_RANK", "1"),
        ]))
        .unwrap();
        assert_eq!(j.job_id, "pmixslurm_pmix_77_3");
        let j = JobEnv::from_lookup(env(&[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "77"),
            ("SLURM_STEP_ID", "3"),
        ]))
        .unwrap();
        assert_eq!(j.job_id, "slurm77_3");
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
