//! Bootstrap: how the PEs of a job find each other before any conduit
//! traffic flows — their rank and size, an all-gather of small blobs (the
//! ipv6 conduit exchanges socket addresses with it) and a barrier.
//!
//! Three ways, chosen once with the job from the launcher's typed
//! variables ([`Service::choose`], kept in [`crate::JobEnv::bootstrap`])
//! and opened by the network conduits at attach ([`open`]):
//!
//! - [`rendezvous`]: `FSHMEM_BOOTSTRAP=host:port` names a small TCP server
//!   (`oshrun --conduit ipv6` runs one; otherwise rank 0 starts it in a
//!   thread when the address is its own). Rank and size come from
//!   `FSHMEM_RANK`/`FSHMEM_SIZE`, `PMI_RANK`/`PMI_SIZE` or Slurm's
//!   `SLURM_PROCID`/`SLURM_NTASKS` (see [`crate::JobEnv`]) — so it also
//!   serves `srun` and any other launcher.
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

/// The bootstrap service a launcher provides, chosen once with the job
/// ([`crate::JobEnv::bootstrap`]) from its typed variables, so that no
/// conduit reads the environment: the first that applies of
/// `FSHMEM_BOOTSTRAP`, `PMI_FD`, and `PMIX_NAMESPACE` with `PMIX_RANK`;
/// else [`Service::Single`] for a job of one PE, [`Service::Missing`] for
/// more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Service {
    /// `FSHMEM_BOOTSTRAP=host:port`: the [`rendezvous`] server (oshrun's,
    /// or one rank 0 starts when the address is its own).
    Rendezvous(String),
    /// PMI-1 on descriptor `fd` (`PMI_FD`), this process being `rank` of
    /// `size` (`PMI_RANK`, `PMI_SIZE`): MPICH Hydra, `srun --mpi=pmi2`.
    Pmi {
        /// The connected socket to the process manager.
        fd: i32,
        /// `PMI_RANK`.
        rank: usize,
        /// `PMI_SIZE`.
        size: usize,
    },
    /// PMIx, in namespace `namespace` (`PMIX_NAMESPACE`): Open MPI's
    /// `mpirun`, `srun --mpi=pmix`. The client library is loaded at attach
    /// (the `FSHMEM_PMIX_LIBRARY` setting).
    Pmix {
        /// The job's PMIx namespace.
        namespace: String,
    },
    /// A job of one PE: every collective returns at once ([`Single`]).
    Single,
    /// Several PEs and no service: enough for conduits that need none
    /// (smp, fpga); a network conduit's attach fails saying what to set
    /// (Slurm's `srun --mpi=none`, ranks set by hand).
    Missing,
}

impl Service {
    /// The service for a job of `size` PEs whose launcher set `vars`.
    /// `PMI_FD` without `PMI_RANK` and `PMI_SIZE` is an error naming them.
    pub fn choose(vars: &crate::config::JobVars, size: usize) -> Result<Service> {
        let l = &vars.launcher;
        if let Some(addr) = &vars.bootstrap {
            return Ok(Service::Rendezvous(addr.clone()));
        }
        if let Some(fd) = l.pmi_fd {
            let (Some(rank), Some(size)) = (l.pmi_rank, l.pmi_size) else {
                return Err(ConduitError::Bootstrap(format!(
                    "PMI: PMI_FD={fd} is set, but not PMI_RANK and PMI_SIZE, which a PMI \
                     process manager sets with it"
                )));
            };
            // The table's range check keeps the descriptor an `i32`.
            let fd = i32::try_from(fd).map_err(|_| {
                ConduitError::Bootstrap(format!("PMI: PMI_FD={fd} is not a descriptor"))
            })?;
            return Ok(Service::Pmi { fd, rank, size });
        }
        if let (Some(ns), Some(_)) = (&l.pmix_namespace, l.pmix_rank) {
            return Ok(Service::Pmix {
                namespace: ns.clone(),
            });
        }
        Ok(if size == 1 {
            Service::Single
        } else {
            Service::Missing
        })
    }

    /// A name for messages and `SHMEM_INFO`.
    pub fn describe(&self) -> String {
        match self {
            Service::Rendezvous(a) => format!("rendezvous {a}"),
            Service::Pmi { fd, .. } => format!("PMI-1 on descriptor {fd}"),
            Service::Pmix { namespace } => format!("PMIx namespace {namespace}"),
            Service::Single => "singleton".to_string(),
            Service::Missing => "none".to_string(),
        }
    }
}

/// Builds the bootstrap of PE `rank` of `size` through `service`: joins
/// the rendezvous (within the `FSHMEM_BOOTSTRAP_TIMEOUT` setting), opens
/// the PMI-1 session (or takes the one opened early to name the job),
/// initializes PMIx (the `FSHMEM_PMIX_LIBRARY` setting names the
/// library), or nothing for a singleton; the service must agree on rank
/// and size. [`Service::Missing`] is an error saying what to set.
pub fn open(
    service: &Service,
    rank: usize,
    size: usize,
    settings: &crate::config::Settings,
) -> Result<Box<dyn Bootstrap>> {
    let agree = |what: &str, b: &dyn Bootstrap| {
        if b.rank() != rank || b.size() != size {
            return Err(ConduitError::Bootstrap(format!(
                "{what} says rank {} of {}, the job environment rank {rank} of {size}",
                b.rank(),
                b.size()
            )));
        }
        Ok(())
    };
    match service {
        Service::Rendezvous(addr) => {
            let c = rendezvous::Client::join(addr, rank, size, settings.bootstrap_timeout)?;
            Ok(Box::new(c))
        }
        Service::Pmi {
            fd,
            rank: r,
            size: s,
        } => {
            let p = match pmi::take_opened() {
                Some(p) => p,
                None => pmi::Pmi::open(*fd, *r, *s)?,
            };
            agree("PMI", &p)?;
            Ok(Box::new(p))
        }
        Service::Pmix { .. } => {
            let library = settings.pmix_library.as_deref().and_then(|p| p.to_str());
            let p = pmix::Pmix::init(library)?;
            agree("PMIx", &p)?;
            Ok(Box::new(p))
        }
        Service::Single if size == 1 => Ok(Box::new(Single)),
        Service::Single | Service::Missing => Err(ConduitError::Bootstrap(format!(
            "PE {rank} of {size}: no bootstrap service; set FSHMEM_BOOTSTRAP=host:port \
             (a rendezvous server, run by rank 0 when the address is its own), start the job \
             with a PMI or PMIx launcher (mpiexec, mpirun, srun --mpi=pmix) or with \
             oshrun --conduit ipv6"
        ))),
    }
}
