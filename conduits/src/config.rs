//! The conduits' configuration: every variable the transports, the
//! bootstrap and the board launcher read, declared once
//! ([`gasnet_core::config_table!`]).
//!
//! Conduits never read the environment: the runtime (or `oshrun`) reads
//! [`Settings`] once — `Settings::from_lookup(|k| std::env::var(k).ok())` —
//! and hands it to [`crate::Lifecycle::attach`]. A bad value is a
//! [`ConfigError`] naming the variable; `SHMEM_INFO=1` lists these rows
//! beside the runtime's.
//!
//! The variables a launcher sets for each PE are the job's: oshrun's
//! (`FSHMEM_RANK`, ...) in [`JobVars`], the other launchers' (`PMI_RANK`,
//! `PMIX_NAMESPACE`, `SLURM_PROCID`, `OMPI_COMM_WORLD_RANK`, ...) in
//! [`LauncherVars`], which `JobVars` includes. The runtime reads them once
//! with its other tables; [`crate::JobEnv`] interprets them (rank, size,
//! job id, conduit, and the bootstrap service the network conduits open at
//! attach).

use crate::kinds::ConduitKind;
use gasnet_core::config::{ConfigError, ConfigValue, Plain, Size, Unset, within, within_duration};
use gasnet_core::impair::Impair;
use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::time::Duration;

/// How the ipv6 conduit batches datagrams (`FSHMEM_IPV6_BATCH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BatchMode {
    /// One system call per datagram.
    None,
    /// `recvmmsg`/`sendmmsg`.
    Mmsg,
    /// `recvmmsg`/`sendmmsg`, and UDP GSO for runs of equal datagrams.
    #[default]
    Gso,
}

impl ConfigValue for BatchMode {
    fn parse_value(s: &str) -> Result<BatchMode, String> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(BatchMode::None),
            "mmsg" => Ok(BatchMode::Mmsg),
            "gso" => Ok(BatchMode::Gso),
            _ => Err("gso, mmsg or none".to_string()),
        }
    }
    fn show_value(&self) -> String {
        match self {
            BatchMode::None => "none",
            BatchMode::Mmsg => "mmsg",
            BatchMode::Gso => "gso",
        }
        .to_string()
    }
}

/// How the ofi conduit performs atomics (`FSHMEM_OFI_ATOMICS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OfiAtomics {
    /// By the provider when it supports every operation and is trusted,
    /// else as active messages.
    #[default]
    Auto,
    /// Always as active messages.
    Am,
    /// By the provider whenever `fi_query_atomic` allows it.
    Native,
}

impl ConfigValue for OfiAtomics {
    fn parse_value(s: &str) -> Result<OfiAtomics, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(OfiAtomics::Auto),
            "am" => Ok(OfiAtomics::Am),
            "native" => Ok(OfiAtomics::Native),
            _ => Err("auto, am or native".to_string()),
        }
    }
    fn show_value(&self) -> String {
        match self {
            OfiAtomics::Auto => "auto",
            OfiAtomics::Am => "am",
            OfiAtomics::Native => "native",
        }
        .to_string()
    }
}

/// Whether a job on a network conduit routes operations between PEs of
/// one host through shared memory (`FSHMEM_ROUTE`, `spec/conduit.md` §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RouteMode {
    /// PEs of one host (equal host keys) use the smp conduit between them,
    /// the job's conduit between hosts.
    #[default]
    Auto,
    /// Every operation goes through the job's conduit.
    Off,
}

impl ConfigValue for RouteMode {
    fn parse_value(s: &str) -> Result<RouteMode, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(RouteMode::Auto),
            "off" => Ok(RouteMode::Off),
            _ => Err("auto or off".to_string()),
        }
    }
    fn show_value(&self) -> String {
        match self {
            RouteMode::Auto => "auto",
            RouteMode::Off => "off",
        }
        .to_string()
    }
}

/// Longest host key (`FSHMEM_HOST_KEY`), in bytes.
pub const MAX_HOST_KEY: usize = 512;

fn check_host_key(v: &Option<String>) -> Result<(), String> {
    match v {
        Some(k) if k.len() > MAX_HOST_KEY => Err(format!("at most {} bytes", MAX_HOST_KEY)),
        _ => Ok(()),
    }
}

fn check_ofi_name(v: &Option<String>) -> Result<(), String> {
    match v {
        Some(s) if s.contains('\0') => Err("a name fi_info -l lists".to_string()),
        _ => Ok(()),
    }
}

/// The faults a devsim board can inject (`FSHMEM_DEVSIM_FAULT`), for tests
/// of the attach health check; `devsim board --fault` takes the same names.
pub const DEVSIM_FAULTS: &[&str] = &["none", "get", "inline-put", "segment-put", "atomic"];

/// The cores a devsim board can run (`FSHMEM_DEVSIM_CORE`, `devsim board
/// --core`): the reference engine, or the RTL core of `hw/` (a devsim built
/// with its `rtl` feature).
pub const DEVSIM_CORES: &[&str] = &["engine", "rtl"];

fn check_core(c: &str) -> Result<(), String> {
    if DEVSIM_CORES.contains(&c) {
        Ok(())
    } else {
        Err(format!("one of {}", DEVSIM_CORES.join(", ")))
    }
}

fn check_fault(f: &str) -> Result<(), String> {
    if DEVSIM_FAULTS.contains(&f) {
        Ok(())
    } else {
        Err(format!("one of {}", DEVSIM_FAULTS.join(", ")))
    }
}

fn check_prefix(p: &Option<String>) -> Result<(), String> {
    let Some(p) = p else { return Ok(()) };
    let ok = p.split_once('/').is_some_and(|(a, len)| {
        a.parse::<Ipv6Addr>().is_ok() && len.parse::<u32>().is_ok_and(|l| l <= 128)
    });
    if ok {
        Ok(())
    } else {
        Err("an IPv6 prefix such as fd00:f5::/64".to_string())
    }
}

gasnet_core::config_table! {
    /// Settings of every conduit, the bootstrap and the devsim board
    /// launcher, typed; handed to [`crate::Lifecycle::attach`].
    pub struct Settings {
        wait_timeout: Option<Duration> = "FSHMEM_WAIT_TIMEOUT", default "off", Plain,
            help "a wait that makes no progress this long reports who waits on what and ends the job (off: forever)";
        peer_timeout: Duration = "FSHMEM_PEER_TIMEOUT", default "10s", Plain,
            help "ipv6 and board links: silence of a needed peer before it is declared failed",
            check |d: &Duration| within_duration(*d, Duration::from_millis(10), Duration::from_secs(86_400));
        bootstrap_timeout: Duration = "FSHMEM_BOOTSTRAP_TIMEOUT", default "60s", Plain,
            help "how long the rendezvous bootstrap waits for every PE to join";
        route: RouteMode = "FSHMEM_ROUTE", default "auto", Plain,
            help "ipv6, ofi: PEs of one host (same host key) reach each other through shared memory (auto) or through the job's conduit (off)";
        host_key: Option<String> = "FSHMEM_HOST_KEY", default "", Unset,
            help "this PE's host: PEs with equal keys share memory (set by oshrun; default: host name, boot id and namespaces)",
            check check_host_key;
        pmix_library: Option<PathBuf> = "FSHMEM_PMIX_LIBRARY", default "", Unset,
            help "the PMIx library loaded under a PMIx launcher (default libpmix.so.2)";
        ipv6_addr: Option<Ipv6Addr> = "FSHMEM_IPV6_ADDR", default "", Unset,
            help "ipv6: the address to bind the data socket to (default: the route to the rendezvous, a unique-local address, ::1)";
        ipv6_prefix: Option<String> = "FSHMEM_IPV6_PREFIX", default "", Unset,
            help "ipv6: bind to this host's address in this prefix (e.g. fd00:f5::/64)",
            check check_prefix;
        ipv6_mtu: Option<usize> = "FSHMEM_IPV6_MTU", default "", Unset,
            help "ipv6: path MTU to assume (default: the route's)",
            check |m: &Option<usize>| m.map_or(Ok(()), |m| within(m, 1280, 65575));
        ipv6_impair: Option<Impair> = "FSHMEM_IPV6_IMPAIR", default "", Unset,
            help "ipv6, tests only: loss=P,dup=P,reorder=P percent of datagrams sent; cut=N@S cuts PE N off at UNIX time S";
        ipv6_batch: BatchMode = "FSHMEM_IPV6_BATCH", default "gso", Plain,
            help "ipv6: datagram batching, gso, mmsg or none";
        ipv6_stats: bool = "FSHMEM_IPV6_STATS", default "0", Plain,
            help "ipv6: print the reliable transport's counters to stderr at finalize";
        fpga_device: Option<PathBuf> = "FSHMEM_FPGA_DEVICE", default "", Unset,
            help "fpga: the board (a devsim directory or a PCI address; default: the rank-th board found)";
        fpga_window: u64 = "FSHMEM_FPGA_WINDOW", default "1G", Size,
            help "devsim: bytes of each board's DDR window (sparse)",
            check |w: &u64| within(*w, 1 << 20, 1 << 40);
        devsim: Option<PathBuf> = "FSHMEM_DEVSIM", default "", Unset,
            help "the devsim program that starts boards (default: devsim beside the launcher, then PATH)";
        devsim_impair: Option<Impair> = "FSHMEM_DEVSIM_IMPAIR", default "", Unset,
            help "devsim, tests only: loss=P,dup=P,reorder=P percent of link datagrams; cut=N@S cuts board N off at UNIX time S";
        ofi_provider: Option<String> = "FSHMEM_OFI_PROVIDER", default "", Unset,
            help "ofi: the provider as fi_info -l names it (tcp;ofi_rxm, shm, verbs;ofi_rxm; default: the first fi_getinfo offers)",
            check check_ofi_name;
        ofi_domain: Option<String> = "FSHMEM_OFI_DOMAIN", default "", Unset,
            help "ofi: the domain (interface), e.g. lo (default: the provider's first)",
            check check_ofi_name;
        ofi_atomics: OfiAtomics = "FSHMEM_OFI_ATOMICS", default "auto", Plain,
            help "ofi: atomics by the provider when it can and is trusted (auto), always as AMs (am), or by the provider whenever offered (native)";
        devsim_fault: String = "FSHMEM_DEVSIM_FAULT", default "none", Plain,
            help "devsim, tests only: inject a fault (get, inline-put, segment-put, atomic)",
            check |f: &String| check_fault(f);
        devsim_core: String = "FSHMEM_DEVSIM_CORE", default "engine", Plain,
            help "devsim: the boards' core, the reference engine or the RTL core of hw/ (rtl: a devsim built with its rtl feature)",
            check |c: &String| check_core(c);
        devsim_mem_latency: usize = "FSHMEM_DEVSIM_MEM_LATENCY", default "30", Plain,
            help "devsim rtl core: board memory latency in core cycles (reads, and write responses)",
            check |n: &usize| within(*n, 1, 100_000);
        devsim_compute: bool = "FSHMEM_DEVSIM_COMPUTE", default "1", Plain,
            help "devsim: the boards have their compute core (CAPS.COMPUTE: the GEMM engine on handlers 224..=255); 0: boards without one";
    }
}

impl Settings {
    /// Reads the settings from the process environment.
    pub fn from_env() -> Result<Settings, ConfigError> {
        Settings::from_lookup(|k| std::env::var(k).ok())
    }
}

gasnet_core::config_table! {
    /// The variables a launcher sets for each PE (`oshrun` sets them all;
    /// under another launcher its own variables stand in, see
    /// [`crate::JobEnv`]).
    pub struct JobVars {
        rank: Option<usize> = "FSHMEM_RANK", default "", Unset,
            help "set by the launcher: this PE's rank";
        size: Option<usize> = "FSHMEM_SIZE", default "", Unset,
            help "set by the launcher: the number of PEs",
            check |s: &Option<usize>| s.map_or(Ok(()), |s| within(s, 1, gasnet_core::MAX_NODES));
        job_id: Option<String> = "FSHMEM_JOB_ID", default "", Unset,
            help "set by oshrun: names the job's shared resources ([A-Za-z0-9_-], 1..=64); \
                  derived under other launchers (rendezvous address, PMI KVS name, PMIx \
                  namespace, Slurm job and step)",
            check |j: &Option<String>| match j {
                Some(j) if j.len() > 64
                    || !j.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
                {
                    Err("1..=64 characters of [A-Za-z0-9_-]".to_string())
                }
                _ => Ok(()),
            };
        conduit: Option<ConduitKind> = "FSHMEM_CONDUIT", default "", Unset,
            help "the conduit (smp, ipv6, fpga, ofi; default smp, or ipv6 under another launcher)";
        bootstrap: Option<String> = "FSHMEM_BOOTSTRAP", default "", Unset,
            help "ipv6: host:port of the rendezvous server (set by oshrun --conduit ipv6)";
        launcher_fd: Option<usize> = "FSHMEM_LAUNCHER_FD", default "", Unset,
            help "set by oshrun: the pipe on which a PE names the PE that failed first";
    }
    include {
        /// The variables of the other launchers (Hydra, PMIx, Slurm, Open
        /// MPI), which stand in for oshrun's.
        launcher: LauncherVars,
    }
}

gasnet_core::config_table! {
    /// What the other launchers set for each process: MPICH Hydra's
    /// `mpiexec` (PMI-1), a PMIx server (Open MPI's `mpirun`, `srun
    /// --mpi=pmix`), Slurm's `srun` and Open MPI's `mpirun`. Read once with
    /// the job ([`crate::JobEnv`] interprets them: rank, size, job id and
    /// the bootstrap service); `SHMEM_INFO=1` shows the ones found.
    pub struct LauncherVars {
        pmi_fd: Option<usize> = "PMI_FD", default "", Unset,
            help "set by MPICH Hydra (mpiexec) and srun --mpi=pmi2: the descriptor of the PMI-1 connection",
            check |fd: &Option<usize>| fd.map_or(Ok(()), |fd| within(fd, 0, i32::MAX as usize));
        pmi_rank: Option<usize> = "PMI_RANK", default "", Unset,
            help "set by Hydra and srun --mpi=pmi2: this process's rank";
        pmi_size: Option<usize> = "PMI_SIZE", default "", Unset,
            help "set by Hydra and srun --mpi=pmi2: the number of processes";
        pmix_namespace: Option<String> = "PMIX_NAMESPACE", default "", Unset,
            help "set by a PMIx launcher (Open MPI's mpirun, srun --mpi=pmix): the job's namespace";
        pmix_rank: Option<usize> = "PMIX_RANK", default "", Unset,
            help "set by a PMIx launcher: this process's rank in the namespace";
        slurm_procid: Option<usize> = "SLURM_PROCID", default "", Unset,
            help "set by Slurm's srun: this task's rank";
        slurm_ntasks: Option<usize> = "SLURM_NTASKS", default "", Unset,
            help "set by Slurm's srun: the number of tasks";
        slurm_job_id: Option<String> = "SLURM_JOB_ID", default "", Unset,
            help "set by Slurm: the job id (names the fshmem job with the step)";
        slurm_step_id: Option<String> = "SLURM_STEP_ID", default "", Unset,
            help "set by Slurm's srun: the step id";
        ompi_rank: Option<usize> = "OMPI_COMM_WORLD_RANK", default "", Unset,
            help "set by Open MPI's mpirun: this process's rank";
        ompi_size: Option<usize> = "OMPI_COMM_WORLD_SIZE", default "", Unset,
            help "set by Open MPI's mpirun: the number of processes";
    }
}

impl JobVars {
    /// Reads the job's variables from the process environment (the
    /// launcher's, for a program that reads no other configuration).
    pub fn from_env() -> Result<JobVars, ConfigError> {
        JobVars::from_lookup(|k| std::env::var(k).ok())
    }

    /// The rank a launcher gave this process, as far as its variables tell
    /// (`FSHMEM_RANK`, then `PMI_RANK`, `PMIX_RANK`, `SLURM_PROCID`,
    /// `OMPI_COMM_WORLD_RANK`), for naming the PE in an error raised
    /// before the job is known; 0 when none is set.
    ///
    /// ```
    /// use conduits::config::JobVars;
    /// let v = JobVars::from_lookup(|k| (k == "PMIX_RANK").then(|| "3".to_string())).unwrap();
    /// assert_eq!(v.rank_hint(), 3);
    /// assert_eq!(JobVars::default().rank_hint(), 0);
    /// ```
    pub fn rank_hint(&self) -> usize {
        let l = &self.launcher;
        [
            self.rank,
            l.pmi_rank,
            l.pmix_rank,
            l.slurm_procid,
            l.ompi_rank,
        ]
        .into_iter()
        .flatten()
        .next()
        .unwrap_or(0)
    }

    /// The names of the launcher variables that are set, for messages and
    /// `SHMEM_INFO` (`PMIX_NAMESPACE, PMIX_RANK, ...`).
    pub fn found(&self) -> Vec<&'static str> {
        JobVars::all_vars()
            .iter()
            .filter(|v| self.value_of(v.name).is_some_and(|s| !s.is_empty()))
            .map(|v| v.name)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_parses_and_bad_values_name_their_variable() {
        let s = Settings::default();
        assert_eq!(s.peer_timeout, Duration::from_secs(10));
        assert_eq!(s.ipv6_batch, BatchMode::Gso);
        assert_eq!(s.fpga_window, 1 << 30);
        assert!(s.devsim_compute);
        for (var, bad) in [
            ("FSHMEM_PEER_TIMEOUT", "soon"),
            ("FSHMEM_PEER_TIMEOUT", "1ms"),
            ("FSHMEM_IPV6_ADDR", "10.0.0.1"),
            ("FSHMEM_IPV6_PREFIX", "fd00::"),
            ("FSHMEM_IPV6_MTU", "100"),
            ("FSHMEM_IPV6_IMPAIR", "loss=90"),
            ("FSHMEM_IPV6_BATCH", "fast"),
            ("FSHMEM_ROUTE", "always"),
            ("FSHMEM_FPGA_WINDOW", "1.5G"),
            ("FSHMEM_DEVSIM_FAULT", "melt"),
            ("FSHMEM_DEVSIM_COMPUTE", "some"),
            ("FSHMEM_WAIT_TIMEOUT", "-3"),
        ] {
            let e = Settings::from_lookup(|k| (k == var).then(|| bad.to_string())).unwrap_err();
            assert_eq!(e.var, var, "{e}");
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
        let e =
            JobVars::from_lookup(|k| (k == "FSHMEM_CONDUIT").then(|| "tcp".into())).unwrap_err();
        assert!(e.to_string().contains("smp, ipv6, fpga or ofi"), "{e}");
    }
}
