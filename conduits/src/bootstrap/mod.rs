//! Bootstrap: how the PEs of a job find each other before any conduit
//! traffic flows — their rank and size, an all-gather of small blobs (the
//! ipv6 conduit exchanges socket addresses with it) and a barrier.
//!
//! Three ways, chosen by [`from_env`] from the process environment:
//!
//! - [`rendezvous`]: `FSHMEM_BOOTSTRAP=host:port` names a small TCP server
//!   (`oshrun --conduit ipv6` runs one; otherwise rank 0 starts it in a
//!   thread when the address is its own). Rank and size come from
//!   `FSHMEM_RANK`/`FSHMEM_SIZE`, `PMI_RANK`/`PMI_SIZE` or Slurm's
//!   `SLURM_PROCID`/`SLURM_NTASKS` — so it also serves `srun` and any
//!   other launcher.
//! - [`pmi`]: MPICH Hydra's PMI-1 wire protocol on the descriptor
//!   `PMI_FD`, so `mpiexec -n N prog` works with no other setup (Slurm's
//!   `srun --mpi=pmi2` serves PMI-1 clients on the same descriptor).
//! - [`pmix`]: a PMIx server's client library, loaded at run time, when
//!   `PMIX_NAMESPACE` is set: Open MPI's `mpirun -n N prog` and Slurm's
//!   `srun --mpi=pmix` (`FSHMEM_PMIX_LIBRARY` names the library when it is
//!   not `libpmix.so.2` on the loader's path).
//! - a singleton job of one PE needs neither.
//!
//! Every decoder of bootstrap messages takes untrusted bytes and reports
//! malformed input as an error, never a panic.

pub mod pmi;
pub mod pmix;
pub mod rendezvous;

use crate::error::{ConduitError, Result};
use std::net::SocketAddr;

/// Largest blob one PE contributes to [`Bootstrap::allgather`].
pub const MAX_BLOB: usize = 64 << 10;

/// Checks the job shape a network conduit attaches with: `rank` of `size`
/// PEs must be a valid node of the wire protocol and agree with what the
/// bootstrap says; `conduit` names the conduit in the error.
#[cfg_attr(not(any(feature = "ipv6", feature = "ofi")), allow(dead_code))]
pub(crate) fn check_shape(
    conduit: &str,
    rank: usize,
    size: usize,
    boot: &dyn Bootstrap,
) -> Result<()> {
    if size == 0 || size > gasnet_core::MAX_NODES || rank >= size {
        return Err(ConduitError::Bootstrap(format!(
            "{conduit}: rank {rank} of {size} PEs is not valid"
        )));
    }
    if boot.rank() != rank || boot.size() != size {
        return Err(ConduitError::Bootstrap(format!(
            "{conduit}: the bootstrap ({}) says rank {} of {}, the job rank {rank} of {size}",
            boot.describe(),
            boot.rank(),
            boot.size()
        )));
    }
    Ok(())
}

/// The bootstrap services of one PE. Collective calls must be made by
/// every PE in the same order.
pub trait Bootstrap: Send + std::fmt::Debug {
    /// This PE's rank.
    fn rank(&self) -> usize;

    /// The number of PEs.
    fn size(&self) -> usize;

    /// Every PE contributes `mine` (at most [`MAX_BLOB`] bytes) and gets
    /// every PE's contribution, indexed by rank. Collective.
    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;

    /// Returns once every PE has entered. Collective.
    fn barrier(&mut self) -> Result<()>;

    /// Leaves the bootstrap (after the last collective). Not collective.
    fn finalize(&mut self) -> Result<()>;

    /// The local address this host uses to reach the bootstrap service,
    /// when it is a network service: a good address to bind the data
    /// sockets to.
    fn local_addr(&self) -> Option<SocketAddr> {
        None
    }

    /// A name for messages (`rendezvous [::1]:4000`, `pmi`, ...).
    fn describe(&self) -> String;

    /// Between collectives, without blocking: fails with the failure the
    /// bootstrap service has announced (a PE that vanished, the service
    /// itself gone), if any. Services that cannot tell return `Ok`.
    fn check(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A job of one PE: every collective returns at once.
#[derive(Debug, Default)]
pub struct Single;

impl Bootstrap for Single {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        check_blob(mine)?;
        Ok(vec![mine.to_vec()])
    }
    fn barrier(&mut self) -> Result<()> {
        Ok(())
    }
    fn finalize(&mut self) -> Result<()> {
        Ok(())
    }
    fn describe(&self) -> String {
        "singleton".to_string()
    }
}

pub(crate) fn check_blob(mine: &[u8]) -> Result<()> {
    if mine.len() > MAX_BLOB {
        return Err(ConduitError::Bootstrap(format!(
            "all-gather contribution of {} bytes exceeds {MAX_BLOB}",
            mine.len()
        )));
    }
    Ok(())
}

/// Where rank and size come from when `FSHMEM_RANK`/`FSHMEM_SIZE` are not
/// set: Hydra's PMI variables, then Slurm's, then Open MPI's `mpirun`'s.
/// `None` when none is set.
///
/// ```
/// use conduits::bootstrap::launcher_rank_size;
/// let env = |k: &str| match k {
///     "SLURM_PROCID" => Some("3".to_string()),
///     "SLURM_NTASKS" => Some("8".to_string()),
///     _ => None,
/// };
/// assert_eq!(launcher_rank_size(env).unwrap(), Some((3, 8, "slurm")));
/// ```
pub fn launcher_rank_size(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<(usize, usize, &'static str)>> {
    for (r, s, who) in [
        ("PMI_RANK", "PMI_SIZE", "pmi"),
        ("SLURM_PROCID", "SLURM_NTASKS", "slurm"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "ompi"),
    ] {
        match (get(r), get(s)) {
            (Some(rank), Some(size)) => {
                let parse = |var: &str, v: &str| {
                    v.trim().parse::<usize>().map_err(|_| {
                        ConduitError::Bootstrap(format!(
                            "{var}={v:?} is not a non-negative integer"
                        ))
                    })
                };
                let (rank, size) = (parse(r, &rank)?, parse(s, &size)?);
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

/// Builds the bootstrap for PE `rank` of `size` from the launcher's
/// environment read through `get`: the rendezvous when `FSHMEM_BOOTSTRAP`
/// is set (joined within the `FSHMEM_BOOTSTRAP_TIMEOUT` setting), PMI-1
/// when `PMI_FD` is, PMIx (the `FSHMEM_PMIX_LIBRARY` setting names the
/// library) when `PMIX_NAMESPACE` and `PMIX_RANK` are, nothing for a
/// singleton; otherwise an error saying what to set.
pub fn from_env(
    rank: usize,
    size: usize,
    get: impl Fn(&str) -> Option<String>,
    settings: &crate::config::Settings,
) -> Result<Box<dyn Bootstrap>> {
    if let Some(addr) = get("FSHMEM_BOOTSTRAP") {
        let c = rendezvous::Client::join(&addr, rank, size, settings.bootstrap_timeout)?;
        return Ok(Box::new(c));
    }
    if get("PMI_FD").is_some() {
        let p = match pmi::take_opened() {
            Some(p) => p,
            None => pmi::Pmi::from_env(&get)?,
        };
        if p.rank() != rank || p.size() != size {
            return Err(ConduitError::Bootstrap(format!(
                "PMI says rank {} of {}, the job environment rank {rank} of {size}",
                p.rank(),
                p.size()
            )));
        }
        return Ok(Box::new(p));
    }
    if pmix::launched(&get) {
        let library = settings.pmix_library.as_deref().and_then(|p| p.to_str());
        let p = pmix::Pmix::init(library)?;
        if p.rank() != rank || p.size() != size {
            return Err(ConduitError::Bootstrap(format!(
                "PMIx says rank {} of {}, the job environment rank {rank} of {size}",
                p.rank(),
                p.size()
            )));
        }
        return Ok(Box::new(p));
    }
    if size == 1 {
        return Ok(Box::new(Single));
    }
    Err(ConduitError::Bootstrap(format!(
        "PE {rank} of {size}: no bootstrap service; set FSHMEM_BOOTSTRAP=host:port \
         (a rendezvous server, run by rank 0 when the address is its own), start the job \
         with a PMI or PMIx launcher (mpiexec, mpirun, srun --mpi=pmix) or with \
         oshrun --conduit ipv6"
    )))
}
