//! Runtime configuration: one typed table for every layer.
//!
//! Every variable the job reads is declared once, as a row of a
//! [`gasnet_core::config_table!`] (variable, type, default, parser, help,
//! range): the runtime's own rows below ([`Config`], [`CollConfig`]), the
//! conduits' ([`conduits::Settings`]: timeouts, `FSHMEM_IPV6_*`,
//! `FSHMEM_FPGA_*`, `FSHMEM_DEVSIM_*`, `FSHMEM_OFI_*`) and those a launcher
//! sets ([`conduits::config::JobVars`]: oshrun's `FSHMEM_RANK`, ..., and
//! the other launchers' `PMI_*`, `PMIX_*`, `SLURM_*`,
//! `OMPI_COMM_WORLD_*`). [`Config`] includes the other
//! tables, so [`Config::from_env`] reads them all; a bad value is a
//! [`ShmemError::Config`] naming the variable and the value, never a panic
//! nor a silent default. `SHMEM_INFO=1` prints every row with the value in
//! force ([`Config::info_table`]); [`crate::Builder`] sets values in code.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `SHMEM_SYMMETRIC_SIZE` | `64M` | bytes of symmetric heap per PE; suffixes K, M, G, T (powers of 1024, optionally followed by `B` or `iB`, any case) |
//! | `SHMEM_DEBUG` | `0` | print runtime decisions (segment layout, allocations) to stderr, and check that every allocation call is collective (same call, size and offset as PE 0; [`ShmemError::NotCollective`] otherwise). Set it alike on every PE |
//! | `SHMEM_INFO` | `0` | PE 0 prints this table with the values in force at start-up |
//! | `SHMEM_VERSION` | `0` | PE 0 prints the library and OpenSHMEM versions at start-up |
//! | `FSHMEM_TEAMS_MAX` | `32` | team slots in the collective pool (world and shared included; at most 64) |
//! | `FSHMEM_COLL_SCRATCH` | `32K` | scratch bytes per team slot and parity, the reduction/scan chunk budget |
//! | `FSHMEM_BARRIER_ALGO` | `auto` | `auto`, `dissemination` or `tree` |
//! | `FSHMEM_BARRIER_TREE_PES` | `64` | `auto` uses the tree barrier from this team size on |
//! | `FSHMEM_BCAST_ALGO` | `auto` | `auto`, `binomial` or `scatter_allgather` |
//! | `FSHMEM_BCAST_LARGE` | `16K` | `auto` broadcasts at least this many bytes by scatter+allgather (teams of 3 PEs or more) |
//! | `FSHMEM_REDUCE_ALGO` | `auto` | `auto`, `recursive_doubling`, `rabenseifner` or `ring` |
//! | `FSHMEM_REDUCE_LARGE` | `8K` | `auto` reduces at least this many bytes by Rabenseifner (power-of-two teams) or ring (others) |
//! | `FSHMEM_FCOLLECT_ALGO` | `auto` | `auto`, `ring`, `bruck` or `recursive_doubling` |
//! | `FSHMEM_FCOLLECT_LARGE` | `16K` | `auto` gathers a result of at least this many bytes by ring |
//! | `FSHMEM_ALLTOALL_ALGO` | `auto` | `auto`, `pairwise` or `linear` |
//! | `FSHMEM_ALLTOALL_PAIRWISE` | `4K` | `auto` exchanges blocks of at least this many bytes pairwise |
//! | `FSHMEM_COLL_HIER` | `auto` | barriers, broadcasts and reductions in two levels, within each host then among one leader per host: `auto` (when the team spans hosts and a host holds several of its PEs), `on` or `off` |
//! | `FSHMEM_WAIT_TIMEOUT`, `FSHMEM_PEER_TIMEOUT`, ... | | the conduits' rows: [`conduits::config`] |
//! | `FSHMEM_RANK`, `PMI_RANK`, `PMIX_NAMESPACE`, `SLURM_PROCID`, ... | | the launchers' rows ([`conduits::config::JobVars`], [`conduits::config::LauncherVars`]): set by the launcher, read from the environment even by a [`crate::Builder`] that ignores it, listed by `SHMEM_INFO` with the values found |
//!
//! The collective variables are described with the algorithms in
//! [`crate::coll`].
//!
//! Booleans accept `1/0`, `y/n`, `yes/no`, `true/false`, `on/off` (any case);
//! an empty value counts as unset.

use crate::error::{Result, ShmemError};
use gasnet_core::config::{ConfigError, ConfigValue, Plain, Size, within};

/// The thread-safety level of the runtime (`SHMEM_THREAD_*`), ordered from
/// least to most permissive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// One thread in the process (`SHMEM_THREAD_SINGLE`).
    Single,
    /// Only the initializing thread calls the runtime (`SHMEM_THREAD_FUNNELED`).
    Funneled,
    /// Any thread, one at a time (`SHMEM_THREAD_SERIALIZED`).
    Serialized,
    /// Any thread, concurrently (`SHMEM_THREAD_MULTIPLE`).
    Multiple,
}

/// Default symmetric heap size: 64 MiB.
pub const DEFAULT_SYMMETRIC_SIZE: usize = 64 << 20;

/// The OpenSHMEM specification version this library implements.
pub const OPENSHMEM_VERSION: (u32, u32) = (1, 6);

/// The library version.
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A collective's algorithm choice: automatic (by message size and team
/// size, see [`crate::coll`]) or forced by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algo<A> {
    /// Chosen per call by the documented thresholds.
    #[default]
    Auto,
    /// Always this algorithm.
    Forced(A),
}

/// An algorithm with names for `FSHMEM_*_ALGO`.
pub trait AlgoName: Copy + PartialEq + 'static {
    /// Every algorithm with its name.
    const NAMES: &'static [(&'static str, Self)];
}

impl<A: AlgoName> ConfigValue for Algo<A> {
    fn parse_value(s: &str) -> std::result::Result<Algo<A>, String> {
        let v = s.to_ascii_lowercase();
        if v == "auto" {
            return Ok(Algo::Auto);
        }
        A::NAMES
            .iter()
            .find(|(n, _)| *n == v)
            .map(|(_, a)| Algo::Forced(*a))
            .ok_or_else(|| {
                let names: Vec<&str> = A::NAMES.iter().map(|(n, _)| *n).collect();
                format!("auto or one of: {}", names.join(", "))
            })
    }
    fn show_value(&self) -> String {
        match self {
            Algo::Auto => "auto".to_string(),
            Algo::Forced(x) => A::NAMES
                .iter()
                .find(|(_, y)| y == x)
                .map_or("?", |(n, _)| n)
                .to_string(),
        }
    }
}

/// Barrier (and sync) algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierAlgo {
    /// Dissemination: ceil(log2 n) rounds of one signal each.
    Dissemination,
    /// Gather up and release down a radix-4 tree: 2 log4 n steps, 2(n-1) signals.
    Tree,
}

impl AlgoName for BarrierAlgo {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("dissemination", BarrierAlgo::Dissemination),
        ("tree", BarrierAlgo::Tree),
    ];
}

/// Broadcast algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BcastAlgo {
    /// Binomial tree of whole-message puts.
    Binomial,
    /// Root scatters n blocks, then a ring allgather.
    ScatterAllgather,
}

impl AlgoName for BcastAlgo {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("binomial", BcastAlgo::Binomial),
        ("scatter_allgather", BcastAlgo::ScatterAllgather),
    ];
}

/// Reduction algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceAlgo {
    /// Recursive doubling: log2 n rounds exchanging the whole vector.
    RecursiveDoubling,
    /// Rabenseifner: recursive-halving reduce-scatter, recursive-doubling allgather.
    Rabenseifner,
    /// Ring reduce-scatter then ring allgather: 2(n-1) steps of n-th blocks.
    Ring,
}

impl AlgoName for ReduceAlgo {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("recursive_doubling", ReduceAlgo::RecursiveDoubling),
        ("rabenseifner", ReduceAlgo::Rabenseifner),
        ("ring", ReduceAlgo::Ring),
    ];
}

/// Fcollect/collect algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcollectAlgo {
    /// n-1 steps passing blocks around a ring.
    Ring,
    /// Bruck: ceil(log2 n) rounds, any n.
    Bruck,
    /// Recursive doubling: log2 n rounds (power-of-two teams; others use Bruck).
    RecursiveDoubling,
}

impl AlgoName for FcollectAlgo {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("ring", FcollectAlgo::Ring),
        ("bruck", FcollectAlgo::Bruck),
        ("recursive_doubling", FcollectAlgo::RecursiveDoubling),
    ];
}

/// Alltoall(s) algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlltoallAlgo {
    /// Step s sends to me+s and waits for me-s before the next step.
    Pairwise,
    /// All sends in the shifted order, then all waits.
    Linear,
}

impl AlgoName for AlltoallAlgo {
    const NAMES: &'static [(&'static str, Self)] = &[
        ("pairwise", AlltoallAlgo::Pairwise),
        ("linear", AlltoallAlgo::Linear),
    ];
}

/// Whether collectives go in two levels, within each host then among one
/// leader per host (`FSHMEM_COLL_HIER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HierMode {
    /// When the team spans several hosts and one of them holds several of
    /// its PEs.
    #[default]
    Auto,
    /// Always (a team on one host runs the intra-host level only).
    On,
    /// Never: the flat algorithms over the whole team.
    Off,
}

impl ConfigValue for HierMode {
    fn parse_value(s: &str) -> std::result::Result<HierMode, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(HierMode::Auto),
            "on" => Ok(HierMode::On),
            "off" => Ok(HierMode::Off),
            _ => Err("auto, on or off".to_string()),
        }
    }
    fn show_value(&self) -> String {
        match self {
            HierMode::Auto => "auto",
            HierMode::On => "on",
            HierMode::Off => "off",
        }
        .to_string()
    }
}

gasnet_core::config_table! {
    /// The collective settings: team slots, scratch, and the algorithm
    /// choices of [`crate::coll`].
    pub struct CollConfig {
        teams_max: usize = "FSHMEM_TEAMS_MAX", default "32", Plain,
            help "team slots in the collective pool, world and shared included (1..=64)",
            check |v: &usize| within(*v, 1, 64);
        scratch: usize = "FSHMEM_COLL_SCRATCH", default "32K", Size,
            help "collective scratch bytes per team and parity (reduction/scan chunk budget)",
            check |v: &usize| if (1 << 10..=1 << 30).contains(v) {
                Ok(())
            } else {
                Err("a size from 1K to 1G".to_string())
            };
        barrier: Algo<BarrierAlgo> = "FSHMEM_BARRIER_ALGO", default "auto", Plain,
            help "barrier/sync algorithm: auto, dissemination, tree";
        barrier_tree_pes: usize = "FSHMEM_BARRIER_TREE_PES", default "64", Plain,
            help "auto: tree barrier for teams of at least this many PEs",
            check |v: &usize| within(*v, 1, usize::MAX);
        bcast: Algo<BcastAlgo> = "FSHMEM_BCAST_ALGO", default "auto", Plain,
            help "broadcast algorithm: auto, binomial, scatter_allgather";
        bcast_large: usize = "FSHMEM_BCAST_LARGE", default "16K", Size,
            help "auto: scatter+allgather from this many bytes (teams of 3+ PEs)";
        reduce: Algo<ReduceAlgo> = "FSHMEM_REDUCE_ALGO", default "auto", Plain,
            help "reduction algorithm: auto, recursive_doubling, rabenseifner, ring";
        reduce_large: usize = "FSHMEM_REDUCE_LARGE", default "8K", Size,
            help "auto: from this many bytes, rabenseifner (2^k PEs) or ring (others)";
        fcollect: Algo<FcollectAlgo> = "FSHMEM_FCOLLECT_ALGO", default "auto", Plain,
            help "fcollect/collect algorithm: auto, ring, bruck, recursive_doubling";
        fcollect_large: usize = "FSHMEM_FCOLLECT_LARGE", default "16K", Size,
            help "auto: ring from this many result bytes; below, recursive_doubling (2^k PEs) or bruck";
        alltoall: Algo<AlltoallAlgo> = "FSHMEM_ALLTOALL_ALGO", default "auto", Plain,
            help "alltoall(s) algorithm: auto, pairwise, linear";
        alltoall_pairwise: usize = "FSHMEM_ALLTOALL_PAIRWISE", default "4K", Size,
            help "auto: pairwise exchange for blocks of at least this many bytes";
        hier: HierMode = "FSHMEM_COLL_HIER", default "auto", Plain,
            help "barrier, broadcast, reductions within each host, then among host leaders: auto, on, off";
    }
}

gasnet_core::config_table! {
    /// The whole configuration: the runtime's rows, and the tables of the
    /// collectives, the conduits and the launcher, included.
    ///
    /// ```
    /// use shmem::Config;
    /// let c = Config::from_lookup(|k| (k == "SHMEM_SYMMETRIC_SIZE").then(|| "2G".to_string())).unwrap();
    /// assert_eq!(c.symmetric_size, 2 << 30);
    /// assert!(!c.debug);
    /// let e = Config::from_lookup(|k| (k == "SHMEM_SYMMETRIC_SIZE").then(|| "abc".to_string()));
    /// assert!(e.unwrap_err().to_string().contains("SHMEM_SYMMETRIC_SIZE=\"abc\""));
    /// let e = Config::from_lookup(|k| (k == "FSHMEM_PEER_TIMEOUT").then(|| "soon".to_string()));
    /// assert!(e.unwrap_err().to_string().contains("FSHMEM_PEER_TIMEOUT"));
    /// ```
    pub struct Config {
        symmetric_size: usize = "SHMEM_SYMMETRIC_SIZE", default "64M", Size,
            help "bytes of symmetric heap per PE (suffix K, M, G or T = powers of 1024)";
        debug: bool = "SHMEM_DEBUG", default "0", Plain,
            help "trace segment layout and allocations on stderr; check allocations are collective";
        info: bool = "SHMEM_INFO", default "0", Plain,
            help "PE 0 prints this table with the values in force at start-up";
        version: bool = "SHMEM_VERSION", default "0", Plain,
            help "PE 0 prints the library and OpenSHMEM versions at start-up";
    }
    include {
        /// The `FSHMEM_*` collective settings.
        coll: CollConfig,
        /// The conduits' settings (timeouts, `FSHMEM_IPV6_*`,
        /// `FSHMEM_FPGA_*`, `FSHMEM_DEVSIM_*`, `FSHMEM_OFI_*`).
        conduit: conduits::Settings,
        /// What the launcher set (`FSHMEM_RANK`, `FSHMEM_CONDUIT`,
        /// `PMI_RANK`, `SLURM_PROCID`, ...), read here once;
        /// [`conduits::JobEnv::join`] interprets it at start-up.
        job: conduits::config::JobVars,
    }
}

impl From<ConfigError> for ShmemError {
    fn from(e: ConfigError) -> Self {
        ShmemError::Config {
            var: e.var,
            value: e.value,
            expected: e.expected,
        }
    }
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Config> {
        Ok(Config::from_lookup(|k| std::env::var(k).ok())?)
    }

    /// The table `SHMEM_INFO=1` prints: every variable of every layer with
    /// its value in force, its default and its help.
    ///
    /// ```
    /// let t = shmem::Config::default().info_table();
    /// assert!(t.contains("SHMEM_SYMMETRIC_SIZE") && t.contains("64M"));
    /// assert!(t.contains("FSHMEM_PEER_TIMEOUT") && t.contains("FSHMEM_DEVSIM_IMPAIR"));
    /// ```
    pub fn info_table(&self) -> String {
        format!(
            "fshmem {LIBRARY_VERSION} (OpenSHMEM {}.{}) environment:\n{}",
            OPENSHMEM_VERSION.0,
            OPENSHMEM_VERSION.1,
            gasnet_core::config::format_rows(&self.rows())
        )
    }
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
    fn defaults_without_variables() {
        assert_eq!(Config::from_lookup(env(&[])).unwrap(), Config::default());
        assert_eq!(
            Config::from_lookup(env(&[("SHMEM_SYMMETRIC_SIZE", "  ")])).unwrap(),
            Config::default()
        );
    }

    fn parse_size(_var: &str, s: &str) -> std::result::Result<usize, String> {
        gasnet_core::config::parse_size(s)
    }

    fn format_size(n: usize) -> String {
        gasnet_core::config::format_size(n as u64)
    }

    #[test]
    fn sizes_with_suffixes() {
        let cases = [
            ("0", 0),
            ("1", 1),
            ("100B", 100),
            ("1K", 1 << 10),
            ("3kb", 3 << 10),
            ("2KiB", 2 << 10),
            ("64M", 64 << 20),
            ("64mib", 64 << 20),
            (" 8 G ", 8 << 30),
            ("1GiB", 1 << 30),
            ("2T", 2 << 40),
        ];
        for (s, n) in cases {
            assert_eq!(parse_size("SHMEM_SYMMETRIC_SIZE", s).unwrap(), n, "{s}");
        }
    }

    #[test]
    fn bad_sizes_name_variable_and_value() {
        for s in [
            "abc",
            "M",
            "12Q",
            "1.5G",
            "-4K",
            "+4",
            "4 K B",
            "99999999999999999999999999999999",
            "16777216T",
        ] {
            let e = Config::from_lookup(env(&[("SHMEM_SYMMETRIC_SIZE", s)])).unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with("SHMEM_SYMMETRIC_SIZE="), "{msg}");
            assert!(msg.contains(&format!("{s:?}")), "{msg}");
        }
    }

    #[test]
    fn booleans() {
        let c = Config::from_lookup(env(&[
            ("SHMEM_DEBUG", "on"),
            ("SHMEM_INFO", "TRUE"),
            ("SHMEM_VERSION", "0"),
        ]))
        .unwrap();
        assert!(c.debug && c.info && !c.version);
        let e = Config::from_lookup(env(&[("SHMEM_INFO", "maybe")])).unwrap_err();
        assert!(e.to_string().contains("SHMEM_INFO=\"maybe\""), "{e}");
    }

    #[test]
    fn info_table_lists_every_variable_with_value() {
        let c = Config {
            symmetric_size: 3 << 20,
            ..Config::default()
        };
        let t = c.info_table();
        for v in Config::all_vars() {
            assert!(t.contains(v.name), "{t}");
        }
        assert!(
            t.contains("FSHMEM_RANK") && t.contains("FSHMEM_TEAMS_MAX"),
            "{t}"
        );
        for name in [
            "FSHMEM_PEER_TIMEOUT",
            "FSHMEM_WAIT_TIMEOUT",
            "FSHMEM_IPV6_IMPAIR",
            "FSHMEM_FPGA_DEVICE",
            "FSHMEM_DEVSIM_IMPAIR",
        ] {
            assert!(t.contains(name), "{name} missing from {t}");
        }
        assert!(t.contains("3M"), "{t}");
        assert!(t.contains(LIBRARY_VERSION), "{t}");
    }

    #[test]
    fn launcher_rows_are_listed_with_the_values_found() {
        let c = Config::from_lookup(env(&[
            ("PMIX_NAMESPACE", "slurm.pmix.7.0"),
            ("PMIX_RANK", "2"),
            ("SLURM_NTASKS", "4"),
        ]))
        .unwrap();
        let t = c.info_table();
        let line = |var: &str| {
            t.lines()
                .find(|l| l.trim_start().starts_with(&format!("{var} ")))
                .unwrap_or_else(|| panic!("{var} missing from {t}"))
                .to_string()
        };
        assert!(line("PMIX_NAMESPACE").contains("= slurm.pmix.7.0"), "{t}");
        assert!(line("SLURM_NTASKS").contains("= 4 "), "{t}");
        for unset in ["PMI_RANK", "PMI_FD", "OMPI_COMM_WORLD_RANK", "SLURM_JOB_ID"] {
            assert!(line(unset).contains("= - "), "{t}");
        }
        assert_eq!(
            c.job.found(),
            ["PMIX_NAMESPACE", "PMIX_RANK", "SLURM_NTASKS"]
        );
        let e = Config::from_lookup(env(&[("SLURM_PROCID", "first")])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("SLURM_PROCID=\"first\" is not valid"),
            "{e}"
        );
    }

    #[test]
    fn collective_variables() {
        let c = Config::from_lookup(env(&[
            ("FSHMEM_REDUCE_ALGO", "Ring"),
            ("FSHMEM_BCAST_LARGE", "1M"),
            ("FSHMEM_TEAMS_MAX", "8"),
        ]))
        .unwrap();
        assert_eq!(c.coll.reduce, Algo::Forced(ReduceAlgo::Ring));
        assert_eq!(c.coll.bcast_large, 1 << 20);
        assert_eq!(c.coll.teams_max, 8);
        assert_eq!(c.value_of("FSHMEM_REDUCE_ALGO").unwrap(), "ring");
        for (var, bad) in [
            ("FSHMEM_REDUCE_ALGO", "fast"),
            ("FSHMEM_BARRIER_ALGO", "butterfly"),
            ("FSHMEM_TEAMS_MAX", "65"),
            ("FSHMEM_TEAMS_MAX", "0"),
            ("FSHMEM_COLL_SCRATCH", "10"),
            ("FSHMEM_FCOLLECT_LARGE", "x"),
        ] {
            let e = Config::from_lookup(env(&[(var, bad)])).unwrap_err();
            assert!(e.to_string().starts_with(&format!("{var}=")), "{e}");
        }
        for v in Config::all_vars() {
            assert!(Config::default().value_of(v.name).is_some(), "{}", v.name);
        }
    }

    #[test]
    fn format_round_trips() {
        for n in [0, 1, 1000, 4096, 64 << 20, (3 << 30) + 1, 5 << 40] {
            assert_eq!(parse_size("X", &format_size(n)).unwrap(), n);
        }
    }
}
