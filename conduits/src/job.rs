//! The job a launcher hands each PE: rank, size, job id, conduit and the
//! bootstrap service through which the PEs meet, all decided once from
//! the typed rows of [`JobVars`] before any conduit attaches (conduits
//! read no environment: `spec/conduit.md` §12).
//!
//! `oshrun` sets `FSHMEM_RANK`, `FSHMEM_SIZE`, `FSHMEM_JOB_ID` and
//! `FSHMEM_CONDUIT` (and `FSHMEM_BOOTSTRAP` for a network conduit). Under
//! another launcher the rank and size come from its variables instead
//! ([`LauncherVars`]: MPICH Hydra's `PMI_RANK`/`PMI_SIZE`, Slurm's
//! `SLURM_PROCID`/`SLURM_NTASKS`, Open MPI's `OMPI_COMM_WORLD_*`), the
//! conduit defaults to `ipv6`, the one that spans hosts, and the bootstrap
//! is the launcher's ([`Service`]). A program started without any of them
//! runs as a singleton job of one PE.

use crate::bootstrap::Service;
use crate::config::{JobVars, LauncherVars};
use crate::error::{ConduitError, Result};
use crate::kinds::ConduitKind;

/// Rank, size, job id, conduit and bootstrap service of this PE.
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
    /// How the PEs meet before any conduit traffic: the network conduits
    /// bootstrap through it at attach ([`crate::bootstrap::open`]).
    pub bootstrap: Service,
}

impl JobEnv {
    /// Reads the job's variables from the process environment
    /// ([`JobVars::from_env`]) and joins the job ([`JobEnv::join`]); a
    /// singleton job when no launcher variables are set. For programs that
    /// read no other configuration; the runtime reads [`JobVars`] with the
    /// rest of its table and calls [`JobEnv::join`].
    pub fn from_env() -> Result<JobEnv> {
        JobEnv::join(&JobVars::from_env()?)
    }

    /// The job `vars` describe ([`JobEnv::from_vars`]), joined by this
    /// process: under Hydra it opens the PMI-1 session early, to name the
    /// job after its KVS name; it records `FSHMEM_LAUNCHER_FD` (for
    /// [`tell_launcher_failed`]) and the rank (for the messages of
    /// [`crate::wait`]); and under a launcher other than oshrun, a job id
    /// given in `FSHMEM_JOB_ID` is claimed for this launch.
    pub fn join(vars: &JobVars) -> Result<JobEnv> {
        let job = Self::interpret(vars, crate::bootstrap::pmi::open_early)?;
        if let Some(fd) = vars.launcher_fd {
            let _ = LAUNCHER_FD.set(fd);
        }
        crate::wait::note_rank(job.rank, under_oshrun());
        // Under oshrun, oshrun claimed the job id. Under another launcher
        // an id given in FSHMEM_JOB_ID may be in use, and each PE claims
        // it before anything of the job exists; an id derived from the
        // launch is that launch's alone.
        if !under_oshrun()
            && vars.job_id.is_some()
            && let Some(instance) = launch_instance(&vars.launcher, &job.bootstrap)
        {
            crate::job_lock::hold_for_pe(&job.job_id, &instance)
                .map_err(ConduitError::Bootstrap)?;
        }
        Ok(job)
    }

    /// The job `vars` describe, without touching the process: no PMI
    /// session is opened (a Hydra job is then named `pmijob`). Every bad
    /// or inconsistent value is an error naming the variable.
    pub fn from_vars(vars: &JobVars) -> Result<JobEnv> {
        Self::interpret(vars, |_, _, _| {
            Err(ConduitError::Bootstrap("no PMI session".to_string()))
        })
    }

    /// Reads the job through `get` (testable without touching the process
    /// environment): [`JobVars::from_lookup`], then [`JobEnv::from_vars`].
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
        JobEnv::from_vars(&JobVars::from_lookup(get)?)
    }

    /// [`JobEnv::from_vars`], with `kvsname` opening the PMI-1 session on
    /// descriptor, rank and size and giving its KVS name (which names a
    /// Hydra job) when the job id is derived from it.
    fn interpret(
        vars: &JobVars,
        kvsname: impl FnOnce(i32, usize, usize) -> Result<String>,
    ) -> Result<JobEnv> {
        let launcher = match (vars.rank, vars.size) {
            (None, None) => vars.launcher.rank_size()?,
            _ => None,
        };
        let conduit = match vars.conduit {
            Some(k) => k,
            None if launcher.is_some() => ConduitKind::Ipv6,
            None => ConduitKind::Smp,
        };
        let (rank, size) = match (vars.rank, vars.size, launcher) {
            (None, None, Some((rank, size, _))) => (rank, size),
            (None, None, None) => (0, 1),
            (Some(rank), Some(size), _) => {
                if rank >= size {
                    return Err(ConduitError::Bootstrap(format!(
                        "FSHMEM_RANK={rank} must be below FSHMEM_SIZE={size}"
                    )));
                }
                (rank, size)
            }
            _ => {
                return Err(ConduitError::Bootstrap(
                    "FSHMEM_RANK and FSHMEM_SIZE must be set together".to_string(),
                ));
            }
        };
        let bootstrap = Service::choose(vars, size)?;
        let job_id = match (vars.rank, launcher, &vars.job_id) {
            (None, None, _) => format!("single{}", std::process::id()),
            (_, _, Some(j)) => j.clone(),
            (None, Some((_, _, who)), None) => derived_job_id(&vars.launcher, &bootstrap, kvsname)
                .unwrap_or_else(|| format!("{who}job")),
            (Some(_), _, None) => match &bootstrap {
                Service::Rendezvous(a) => job_id_from("rv", a),
                _ => {
                    return Err(ConduitError::Bootstrap(
                        "FSHMEM_JOB_ID is not set: with FSHMEM_RANK and FSHMEM_SIZE, set \
                         FSHMEM_JOB_ID to one value for every PE of the job (1-64 characters \
                         of [A-Za-z0-9_-]; it names the job's shared memory), or \
                         FSHMEM_BOOTSTRAP, from which it is derived"
                            .to_string(),
                    ));
                }
            },
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
            bootstrap,
        })
    }
}

impl LauncherVars {
    /// Rank and size as another launcher gave them, for a job without
    /// `FSHMEM_RANK`/`FSHMEM_SIZE`: Hydra's PMI variables, then Slurm's,
    /// then Open MPI's `mpirun`'s, with the launcher's name. `None` when
    /// none is set; a rank not below its size, or one of a pair without
    /// the other, is an error naming the variables.
    ///
    /// ```
    /// use conduits::config::LauncherVars;
    /// let env = |k: &str| match k {
    ///     "SLURM_PROCID" => Some("3".to_string()),
    ///     "SLURM_NTASKS" => Some("8".to_string()),
    ///     _ => None,
    /// };
    /// let l = LauncherVars::from_lookup(env).unwrap();
    /// assert_eq!(l.rank_size().unwrap(), Some((3, 8, "slurm")));
    /// ```
    pub fn rank_size(&self) -> Result<Option<(usize, usize, &'static str)>> {
        for (r, s, who, rank, size) in [
            ("PMI_RANK", "PMI_SIZE", "pmi", self.pmi_rank, self.pmi_size),
            (
                "SLURM_PROCID",
                "SLURM_NTASKS",
                "slurm",
                self.slurm_procid,
                self.slurm_ntasks,
            ),
            (
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "ompi",
                self.ompi_rank,
                self.ompi_size,
            ),
        ] {
            match (rank, size) {
                (Some(rank), Some(size)) => {
                    if size == 0 || rank >= size {
                        return Err(ConduitError::Bootstrap(format!(
                            "{r}={rank} must be below {s}={size}"
                        )));
                    }
                    return Ok(Some((rank, size, who)));
                }
                (None, None) => {}
                _ => {
                    return Err(ConduitError::Bootstrap(format!(
                        "{r} and {s} must be set together"
                    )));
                }
            }
        }
        Ok(None)
    }
}

/// The job id of a job started without oshrun and without `FSHMEM_JOB_ID`,
/// from what identifies the job to its bootstrap service, the same on
/// every PE and different for two jobs that run at once: the rendezvous
/// address (one server per address), Hydra's KVS name (through `kvsname`),
/// the PMIx namespace, or Slurm's job and step ids. `None` when none is
/// there (a PMI session that cannot be opened names nothing; the
/// bootstrap reports it).
fn derived_job_id(
    launcher: &LauncherVars,
    service: &Service,
    kvsname: impl FnOnce(i32, usize, usize) -> Result<String>,
) -> Option<String> {
    match service {
        Service::Rendezvous(a) => return Some(job_id_from("rv", a)),
        Service::Pmi { fd, rank, size } => {
            if let Ok(k) = kvsname(*fd, *rank, *size) {
                return Some(job_id_from("pmi", &k));
            }
        }
        Service::Pmix { namespace } => return Some(job_id_from("pmix", namespace)),
        Service::Single | Service::Missing => {}
    }
    let j = launcher.slurm_job_id.as_ref()?;
    Some(match &launcher.slurm_step_id {
        Some(s) => job_id_from("slurm", &format!("{j}_{s}")),
        None => job_id_from("slurm", j),
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
fn launch_instance(launcher: &LauncherVars, service: &Service) -> Option<String> {
    match service {
        Service::Rendezvous(a) => return Some(format!("the rendezvous at {a}")),
        Service::Pmix { namespace } => return Some(format!("PMIx namespace {namespace}")),
        _ => {}
    }
    if let (Some(j), Some(s)) = (&launcher.slurm_job_id, &launcher.slurm_step_id) {
        return Some(format!("Slurm step {j}.{s}"));
    }
    let Service::Pmi { fd, .. } = service else {
        return None;
    };
    let pid = peer_pid(*fd)?;
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
        assert_eq!(j.bootstrap, Service::Single);
    }

    #[test]
    fn bad_launcher_values_name_the_variable() {
        for (var, bad) in [
            ("PMI_RANK", "one"),
            ("PMI_SIZE", "-2"),
            ("PMI_FD", "fd5"),
            ("PMI_FD", "4294967296"),
            ("PMIX_RANK", "x"),
            ("SLURM_PROCID", "1.5"),
            ("SLURM_NTASKS", "many"),
            ("OMPI_COMM_WORLD_RANK", "?"),
            ("OMPI_COMM_WORLD_SIZE", "4 PEs"),
        ] {
            let e = JobEnv::from_lookup(env(&[(var, bad)])).unwrap_err();
            let ConduitError::Config(c) = &e else {
                panic!("{var}={bad}: not a configuration error: {e}");
            };
            assert_eq!(c.var, var, "{e}");
            assert!(e.to_string().contains(&format!("{var}={bad:?}")), "{e}");
        }
        // A PMI descriptor without the rank and size Hydra sets with it.
        let e = JobEnv::from_lookup(env(&[
            ("FSHMEM_RANK", "0"),
            ("FSHMEM_SIZE", "2"),
            ("FSHMEM_JOB_ID", "a"),
            ("PMI_FD", "5"),
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("PMI_FD") && e.contains("PMI_RANK"), "{e}");
    }

    #[test]
    fn the_bootstrap_service_is_chosen_once_from_the_launcher() {
        let service = |pairs: &[(&str, &str)]| JobEnv::from_lookup(env(pairs)).unwrap().bootstrap;
        let pmix = [
            ("PMIX_NAMESPACE", "ns7"),
            ("PMIX_RANK", "1"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "3"),
        ];
        assert_eq!(
            service(&pmix),
            Service::Pmix {
                namespace: "ns7".into()
            }
        );
        let pmi = [("PMI_FD", "6"), ("PMI_RANK", "1"), ("PMI_SIZE", "3")];
        assert_eq!(
            service(&pmi),
            Service::Pmi {
                fd: 6,
                rank: 1,
                size: 3
            }
        );
        // The rendezvous wins over a launcher's service.
        let both = [pmi[0], pmi[1], pmi[2], ("FSHMEM_BOOTSTRAP", "[::1]:9")];
        assert_eq!(service(&both), Service::Rendezvous("[::1]:9".into()));
        // Slurm alone (srun --mpi=none) provides none.
        let slurm = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")];
        assert_eq!(service(&slurm), Service::Missing);
        assert_eq!(
            service(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")]),
            Service::Single
        );
        // PMIX_NAMESPACE without PMIX_RANK is no PMIx launch.
        let half = [("PMIX_NAMESPACE", "ns"), slurm[0], slurm[1]];
        assert_eq!(service(&half), Service::Missing);
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
        let kvs = |fd, rank, size| {
            assert_eq!((fd, rank, size), (5, 0, 2));
            Ok("kvs_123_0".to_string())
        };
        let pmi = env(&[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("PMI_FD", "5")]);
        let vars = JobVars::from_lookup(pmi).unwrap();
        assert_eq!(
            JobEnv::interpret(&vars, kvs).unwrap().job_id,
            "pmikvs_123_0"
        );
        // Without a session, a Hydra job is named after its launcher.
        assert_eq!(JobEnv::from_vars(&vars).unwrap().job_id, "pmijob");
        let long = "x".repeat(100);
        let (a, b) = (
            job_id_from("p", &long),
            job_id_from("p", &(long.clone() + "y")),
        );
        assert!(a.len() <= 64 && b.len() <= 64 && a != b, "{a} {b}");
        assert_eq!(a, job_id_from("p", &long));
        let hint = |pairs| JobVars::from_lookup(env(pairs)).unwrap().rank_hint();
        assert_eq!(hint(&[("PMIX_RANK", "3")]), 3);
        assert_eq!(hint(&[("SLURM_PROCID", "2"), ("FSHMEM_RANK", "5")]), 5);
        assert_eq!(hint(&[]), 0);
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
