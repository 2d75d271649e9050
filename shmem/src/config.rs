//! Runtime configuration from the environment, as one typed table.
//!
//! Every variable the runtime reads is a row of [`VARS`]: name, default and
//! help text. [`Config::from_env`] parses them all; a bad value is a
//! [`ShmemError::Config`] naming the variable and the value, never a panic.
//! `SHMEM_INFO=1` prints the table ([`Config::info_table`]) at start-up.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `SHMEM_SYMMETRIC_SIZE` | `64M` | bytes of symmetric heap per PE; suffixes K, M, G, T (powers of 1024, optionally followed by `B` or `iB`, any case) |
//! | `SHMEM_DEBUG` | `0` | print runtime decisions (segment layout, allocations) to stderr, and check that every allocation call is collective (same call, size and offset as PE 0; [`ShmemError::NotCollective`] otherwise). Set it alike on every PE |
//! | `SHMEM_INFO` | `0` | PE 0 prints this table with the values in force at start-up |
//! | `SHMEM_VERSION` | `0` | PE 0 prints the library and OpenSHMEM versions at start-up |
//! | `FSHMEM_WAIT_TIMEOUT` | `off` | seconds (`1.5`, `500ms`, `2s`) a wait (`wait_until`, a barrier or collective, `quiet`, a blocking get, the bootstrap barrier) may make no progress before it reports which PE waits on what and ends the job with status 124; `off` or `0`: wait forever |
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
//!
//! The collective variables are described with the algorithms in
//! [`crate::coll`].
//!
//! Booleans accept `1/0`, `y/n`, `yes/no`, `true/false`, `on/off` (any case);
//! an empty value counts as unset.

use crate::error::{Result, ShmemError};
use std::fmt::Write as _;

/// One variable of the configuration table.
#[derive(Clone, Copy, Debug)]
pub struct VarSpec {
    /// The environment variable.
    pub name: &'static str,
    /// Its default, as it would be written in the environment.
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// The variables the runtime reads, in the order `SHMEM_INFO` lists them.
pub const VARS: &[VarSpec] = &[
    VarSpec {
        name: "SHMEM_SYMMETRIC_SIZE",
        default: "64M",
        help: "bytes of symmetric heap per PE (suffix K, M, G or T = powers of 1024)",
    },
    VarSpec {
        name: "SHMEM_DEBUG",
        default: "0",
        help: "trace segment layout and allocations on stderr; check allocations are collective",
    },
    VarSpec {
        name: "SHMEM_INFO",
        default: "0",
        help: "PE 0 prints this table with the values in force at start-up",
    },
    VarSpec {
        name: "SHMEM_VERSION",
        default: "0",
        help: "PE 0 prints the library and OpenSHMEM versions at start-up",
    },
    VarSpec {
        name: "FSHMEM_TEAMS_MAX",
        default: "32",
        help: "team slots in the collective pool, world and shared included (1..=64)",
    },
    VarSpec {
        name: "FSHMEM_COLL_SCRATCH",
        default: "32K",
        help: "collective scratch bytes per team and parity (reduction/scan chunk budget)",
    },
    VarSpec {
        name: "FSHMEM_BARRIER_ALGO",
        default: "auto",
        help: "barrier/sync algorithm: auto, dissemination, tree",
    },
    VarSpec {
        name: "FSHMEM_BARRIER_TREE_PES",
        default: "64",
        help: "auto: tree barrier for teams of at least this many PEs",
    },
    VarSpec {
        name: "FSHMEM_BCAST_ALGO",
        default: "auto",
        help: "broadcast algorithm: auto, binomial, scatter_allgather",
    },
    VarSpec {
        name: "FSHMEM_BCAST_LARGE",
        default: "16K",
        help: "auto: scatter+allgather from this many bytes (teams of 3+ PEs)",
    },
    VarSpec {
        name: "FSHMEM_REDUCE_ALGO",
        default: "auto",
        help: "reduction algorithm: auto, recursive_doubling, rabenseifner, ring",
    },
    VarSpec {
        name: "FSHMEM_REDUCE_LARGE",
        default: "8K",
        help: "auto: from this many bytes, rabenseifner (2^k PEs) or ring (others)",
    },
    VarSpec {
        name: "FSHMEM_FCOLLECT_ALGO",
        default: "auto",
        help: "fcollect/collect algorithm: auto, ring, bruck, recursive_doubling",
    },
    VarSpec {
        name: "FSHMEM_FCOLLECT_LARGE",
        default: "16K",
        help: "auto: ring from this many result bytes; below, recursive_doubling (2^k PEs) or bruck",
    },
    VarSpec {
        name: "FSHMEM_ALLTOALL_ALGO",
        default: "auto",
        help: "alltoall(s) algorithm: auto, pairwise, linear",
    },
    VarSpec {
        name: "FSHMEM_ALLTOALL_PAIRWISE",
        default: "4K",
        help: "auto: pairwise exchange for blocks of at least this many bytes",
    },
];

/// Default symmetric heap size: 64 MiB.
pub const DEFAULT_SYMMETRIC_SIZE: usize = 64 << 20;

/// The OpenSHMEM specification version this library implements.
pub const OPENSHMEM_VERSION: (u32, u32) = (1, 6);

/// The library version.
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The parsed configuration.
///
/// ```
/// use shmem::Config;
/// let c = Config::from_lookup(|k| (k == "SHMEM_SYMMETRIC_SIZE").then(|| "2G".to_string())).unwrap();
/// assert_eq!(c.symmetric_size, 2 << 30);
/// assert!(!c.debug);
/// let e = Config::from_lookup(|k| (k == "SHMEM_SYMMETRIC_SIZE").then(|| "abc".to_string()));
/// assert!(e.unwrap_err().to_string().contains("SHMEM_SYMMETRIC_SIZE=\"abc\""));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `SHMEM_SYMMETRIC_SIZE`: bytes of user heap per PE.
    pub symmetric_size: usize,
    /// `SHMEM_DEBUG`.
    pub debug: bool,
    /// `SHMEM_INFO`.
    pub info: bool,
    /// `SHMEM_VERSION`.
    pub version: bool,
    /// The `FSHMEM_*` collective settings.
    pub coll: CollConfig,
    /// The conduits' settings (`FSHMEM_CONDUIT`'s transport, timeouts,
    /// `FSHMEM_IPV6_*`, `FSHMEM_FPGA_*`, ...), declared by the conduits.
    pub conduit: conduits::Settings,
}

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

/// Barrier (and sync) algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierAlgo {
    /// Dissemination: ceil(log2 n) rounds of one signal each.
    Dissemination,
    /// Gather up and release down a radix-4 tree: 2 log4 n steps, 2(n-1) signals.
    Tree,
}

/// Broadcast algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BcastAlgo {
    /// Binomial tree of whole-message puts.
    Binomial,
    /// Root scatters n blocks, then a ring allgather.
    ScatterAllgather,
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

/// Alltoall(s) algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlltoallAlgo {
    /// Step s sends to me+s and waits for me-s before the next step.
    Pairwise,
    /// All sends in the shifted order, then all waits.
    Linear,
}

/// The collective settings (`FSHMEM_*` variables of [`VARS`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollConfig {
    /// `FSHMEM_TEAMS_MAX`.
    pub teams_max: usize,
    /// `FSHMEM_COLL_SCRATCH`.
    pub scratch: usize,
    /// `FSHMEM_BARRIER_ALGO`.
    pub barrier: Algo<BarrierAlgo>,
    /// `FSHMEM_BARRIER_TREE_PES`.
    pub barrier_tree_pes: usize,
    /// `FSHMEM_BCAST_ALGO`.
    pub bcast: Algo<BcastAlgo>,
    /// `FSHMEM_BCAST_LARGE`.
    pub bcast_large: usize,
    /// `FSHMEM_REDUCE_ALGO`.
    pub reduce: Algo<ReduceAlgo>,
    /// `FSHMEM_REDUCE_LARGE`.
    pub reduce_large: usize,
    /// `FSHMEM_FCOLLECT_ALGO`.
    pub fcollect: Algo<FcollectAlgo>,
    /// `FSHMEM_FCOLLECT_LARGE`.
    pub fcollect_large: usize,
    /// `FSHMEM_ALLTOALL_ALGO`.
    pub alltoall: Algo<AlltoallAlgo>,
    /// `FSHMEM_ALLTOALL_PAIRWISE`.
    pub alltoall_pairwise: usize,
}

impl Default for CollConfig {
    fn default() -> Self {
        CollConfig {
            teams_max: 32,
            scratch: 32 << 10,
            barrier: Algo::Auto,
            barrier_tree_pes: 64,
            bcast: Algo::Auto,
            bcast_large: 16 << 10,
            reduce: Algo::Auto,
            reduce_large: 8 << 10,
            fcollect: Algo::Auto,
            fcollect_large: 16 << 10,
            alltoall: Algo::Auto,
            alltoall_pairwise: 4 << 10,
        }
    }
}

/// Parses an algorithm variable: `auto` or one of `names` (any case).
fn parse_algo<A: Copy>(var: &'static str, value: &str, names: &[(&str, A)]) -> Result<Algo<A>> {
    let v = value.trim().to_ascii_lowercase();
    if v == "auto" {
        return Ok(Algo::Auto);
    }
    names
        .iter()
        .find(|(n, _)| *n == v)
        .map(|(_, a)| Algo::Forced(*a))
        .ok_or_else(|| ShmemError::Config {
            var,
            value: value.to_string(),
            expected: format!(
                "auto or one of: {}",
                names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        })
}

fn algo_name<A: PartialEq + Copy>(a: Algo<A>, names: &[(&str, A)]) -> String {
    match a {
        Algo::Auto => "auto".to_string(),
        Algo::Forced(x) => names
            .iter()
            .find(|(_, y)| *y == x)
            .map_or("?", |(n, _)| n)
            .to_string(),
    }
}

const BARRIER_NAMES: &[(&str, BarrierAlgo)] = &[
    ("dissemination", BarrierAlgo::Dissemination),
    ("tree", BarrierAlgo::Tree),
];
const BCAST_NAMES: &[(&str, BcastAlgo)] = &[
    ("binomial", BcastAlgo::Binomial),
    ("scatter_allgather", BcastAlgo::ScatterAllgather),
];
const REDUCE_NAMES: &[(&str, ReduceAlgo)] = &[
    ("recursive_doubling", ReduceAlgo::RecursiveDoubling),
    ("rabenseifner", ReduceAlgo::Rabenseifner),
    ("ring", ReduceAlgo::Ring),
];
const FCOLLECT_NAMES: &[(&str, FcollectAlgo)] = &[
    ("ring", FcollectAlgo::Ring),
    ("bruck", FcollectAlgo::Bruck),
    ("recursive_doubling", FcollectAlgo::RecursiveDoubling),
];
const ALLTOALL_NAMES: &[(&str, AlltoallAlgo)] = &[
    ("pairwise", AlltoallAlgo::Pairwise),
    ("linear", AlltoallAlgo::Linear),
];

/// Parses a count variable within `lo..=hi`.
fn parse_count(var: &'static str, value: &str, lo: usize, hi: usize) -> Result<usize> {
    match value.trim().parse::<usize>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(ShmemError::Config {
            var,
            value: value.to_string(),
            expected: format!("an integer from {lo} to {hi}"),
        }),
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            symmetric_size: DEFAULT_SYMMETRIC_SIZE,
            debug: false,
            info: false,
            version: false,
            coll: CollConfig::default(),
            conduit: conduits::Settings::default(),
        }
    }
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Config> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the configuration through `get` (testable without touching the
    /// process environment). Unset or empty variables take their defaults.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config> {
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let mut c = Config::default();
        if let Some(v) = get("SHMEM_SYMMETRIC_SIZE") {
            c.symmetric_size = parse_size("SHMEM_SYMMETRIC_SIZE", &v)?;
        }
        if let Some(v) = get("SHMEM_DEBUG") {
            c.debug = parse_bool("SHMEM_DEBUG", &v)?;
        }
        if let Some(v) = get("SHMEM_INFO") {
            c.info = parse_bool("SHMEM_INFO", &v)?;
        }
        if let Some(v) = get("SHMEM_VERSION") {
            c.version = parse_bool("SHMEM_VERSION", &v)?;
        }
        c.conduit = conduits::Settings::from_lookup(get).map_err(|e| ShmemError::Config {
            var: e.var,
            value: e.value,
            expected: e.expected,
        })?;
        let k = &mut c.coll;
        if let Some(v) = get("FSHMEM_TEAMS_MAX") {
            k.teams_max = parse_count("FSHMEM_TEAMS_MAX", &v, 1, 64)?;
        }
        if let Some(v) = get("FSHMEM_COLL_SCRATCH") {
            k.scratch = parse_size("FSHMEM_COLL_SCRATCH", &v)?;
            if !(1024..=1 << 30).contains(&k.scratch) {
                return Err(ShmemError::Config {
                    var: "FSHMEM_COLL_SCRATCH",
                    value: v,
                    expected: "a size from 1K to 1G".to_string(),
                });
            }
        }
        if let Some(v) = get("FSHMEM_BARRIER_ALGO") {
            k.barrier = parse_algo("FSHMEM_BARRIER_ALGO", &v, BARRIER_NAMES)?;
        }
        if let Some(v) = get("FSHMEM_BARRIER_TREE_PES") {
            k.barrier_tree_pes = parse_count("FSHMEM_BARRIER_TREE_PES", &v, 1, usize::MAX)?;
        }
        if let Some(v) = get("FSHMEM_BCAST_ALGO") {
            k.bcast = parse_algo("FSHMEM_BCAST_ALGO", &v, BCAST_NAMES)?;
        }
        if let Some(v) = get("FSHMEM_BCAST_LARGE") {
            k.bcast_large = parse_size("FSHMEM_BCAST_LARGE", &v)?;
        }
        if let Some(v) = get("FSHMEM_REDUCE_ALGO") {
            k.reduce = parse_algo("FSHMEM_REDUCE_ALGO", &v, REDUCE_NAMES)?;
        }
        if let Some(v) = get("FSHMEM_REDUCE_LARGE") {
            k.reduce_large = parse_size("FSHMEM_REDUCE_LARGE", &v)?;
        }
        if let Some(v) = get("FSHMEM_FCOLLECT_ALGO") {
            k.fcollect = parse_algo("FSHMEM_FCOLLECT_ALGO", &v, FCOLLECT_NAMES)?;
        }
        if let Some(v) = get("FSHMEM_FCOLLECT_LARGE") {
            k.fcollect_large = parse_size("FSHMEM_FCOLLECT_LARGE", &v)?;
        }
        if let Some(v) = get("FSHMEM_ALLTOALL_ALGO") {
            k.alltoall = parse_algo("FSHMEM_ALLTOALL_ALGO", &v, ALLTOALL_NAMES)?;
        }
        if let Some(v) = get("FSHMEM_ALLTOALL_PAIRWISE") {
            k.alltoall_pairwise = parse_size("FSHMEM_ALLTOALL_PAIRWISE", &v)?;
        }
        Ok(c)
    }

    /// The value in force of variable `name` as text, if it is in [`VARS`].
    pub fn value_of(&self, name: &str) -> Option<String> {
        let b = |x: bool| if x { "1" } else { "0" }.to_string();
        match name {
            "SHMEM_SYMMETRIC_SIZE" => Some(format_size(self.symmetric_size)),
            "SHMEM_DEBUG" => Some(b(self.debug)),
            "SHMEM_INFO" => Some(b(self.info)),
            "SHMEM_VERSION" => Some(b(self.version)),
            "FSHMEM_TEAMS_MAX" => Some(self.coll.teams_max.to_string()),
            "FSHMEM_COLL_SCRATCH" => Some(format_size(self.coll.scratch)),
            "FSHMEM_BARRIER_ALGO" => Some(algo_name(self.coll.barrier, BARRIER_NAMES)),
            "FSHMEM_BARRIER_TREE_PES" => Some(self.coll.barrier_tree_pes.to_string()),
            "FSHMEM_BCAST_ALGO" => Some(algo_name(self.coll.bcast, BCAST_NAMES)),
            "FSHMEM_BCAST_LARGE" => Some(format_size(self.coll.bcast_large)),
            "FSHMEM_REDUCE_ALGO" => Some(algo_name(self.coll.reduce, REDUCE_NAMES)),
            "FSHMEM_REDUCE_LARGE" => Some(format_size(self.coll.reduce_large)),
            "FSHMEM_FCOLLECT_ALGO" => Some(algo_name(self.coll.fcollect, FCOLLECT_NAMES)),
            "FSHMEM_FCOLLECT_LARGE" => Some(format_size(self.coll.fcollect_large)),
            "FSHMEM_ALLTOALL_ALGO" => Some(algo_name(self.coll.alltoall, ALLTOALL_NAMES)),
            "FSHMEM_ALLTOALL_PAIRWISE" => Some(format_size(self.coll.alltoall_pairwise)),
            _ => self.conduit.value_of(name),
        }
    }

    /// The table `SHMEM_INFO=1` prints: every variable with its value in
    /// force, its default and its help.
    ///
    /// ```
    /// let t = shmem::Config::default().info_table();
    /// assert!(t.contains("SHMEM_SYMMETRIC_SIZE") && t.contains("64M"));
    /// ```
    pub fn info_table(&self) -> String {
        let mut s = format!(
            "fshmem {LIBRARY_VERSION} (OpenSHMEM {}.{}) environment:\n",
            OPENSHMEM_VERSION.0, OPENSHMEM_VERSION.1
        );
        let w = VARS
            .iter()
            .map(|v| v.name.len())
            .chain(conduits::Settings::VARS.iter().map(|v| v.name.len()))
            .max()
            .unwrap_or(0);
        for v in VARS {
            let val = self.value_of(v.name).unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:w$}  = {:<8} (default {:<4}) {}",
                v.name, val, v.default, v.help
            );
        }
        for (v, val) in self.conduit.rows() {
            let val = if val.is_empty() { "-".to_string() } else { val };
            let def = if v.default.is_empty() { "-" } else { v.default };
            let _ = writeln!(
                s,
                "  {:w$}  = {:<8} (default {:<4}) {}",
                v.name, val, def, v.help
            );
        }
        s
    }
}

/// Parses a byte size: a decimal integer with an optional suffix K, M, G or
/// T (powers of 1024), optionally followed by `B` or `iB`, in any case, with
/// optional spaces between; a plain trailing `B` means bytes.
///
/// ```
/// use shmem::config::parse_size;
/// assert_eq!(parse_size("X", "512").unwrap(), 512);
/// assert_eq!(parse_size("X", "4k").unwrap(), 4096);
/// assert_eq!(parse_size("X", "64M").unwrap(), 64 << 20);
/// assert_eq!(parse_size("X", "1 GiB").unwrap(), 1 << 30);
/// assert!(parse_size("X", "1.5G").is_err());
/// assert!(parse_size("X", "-1").is_err());
/// ```
pub fn parse_size(var: &'static str, value: &str) -> Result<usize> {
    let bad = || ShmemError::Config {
        var,
        value: value.to_string(),
        expected: "a byte count with an optional K, M, G or T suffix (e.g. 512M)".to_string(),
    };
    let t = value.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(bad());
    }
    let n: u128 = t[..digits_end].parse().map_err(|_| bad())?;
    let suffix = t[digits_end..].trim().to_ascii_lowercase();
    let shift = match suffix.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    let bytes = n.checked_shl(shift).filter(|b| b >> shift == n);
    match bytes.and_then(|b| usize::try_from(b).ok()) {
        Some(b) if b <= isize::MAX as usize => Ok(b),
        _ => Err(ShmemError::Config {
            var,
            value: value.to_string(),
            expected: format!(
                "a size that fits the address space (at most {})",
                isize::MAX
            ),
        }),
    }
}

/// Parses a timeout: `off` or `0` (none), or a positive number of seconds
/// with an optional unit `s` or `ms`.
///
/// ```
/// use shmem::config::parse_timeout;
/// use std::time::Duration;
/// assert_eq!(parse_timeout("X", "1.5").unwrap(), Some(Duration::from_millis(1500)));
/// assert_eq!(parse_timeout("X", "250ms").unwrap(), Some(Duration::from_millis(250)));
/// assert_eq!(parse_timeout("X", "off").unwrap(), None);
/// assert!(parse_timeout("X", "-1").is_err());
/// assert!(parse_timeout("X", "soon").is_err());
/// ```
pub fn parse_timeout(var: &'static str, value: &str) -> Result<Option<std::time::Duration>> {
    let t = value.trim().to_ascii_lowercase();
    if t == "off" || t == "0" || t == "no" || t == "none" {
        return Ok(None);
    }
    let (num, scale) = match t.strip_suffix("ms") {
        Some(n) => (n, 1e-3),
        None => (t.strip_suffix('s').unwrap_or(&t), 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x * scale <= 1e9 => {
            Ok(Some(std::time::Duration::from_secs_f64(x * scale)))
        }
        _ => Err(ShmemError::Config {
            var,
            value: value.to_string(),
            expected: "a positive number of seconds (e.g. 1.5, 500ms, 2s) or off".to_string(),
        }),
    }
}

/// Formats a byte size with the largest exact K/M/G/T suffix.
///
/// ```
/// assert_eq!(shmem::config::format_size(64 << 20), "64M");
/// assert_eq!(shmem::config::format_size(1000), "1000");
/// ```
pub fn format_size(n: usize) -> String {
    for (shift, s) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n != 0 && n % (1usize << shift) == 0 {
            return format!("{}{s}", n >> shift);
        }
    }
    n.to_string()
}

/// Parses a boolean variable.
///
/// ```
/// use shmem::config::parse_bool;
/// assert!(parse_bool("X", "yes").unwrap());
/// assert!(!parse_bool("X", "0").unwrap());
/// assert!(parse_bool("X", "2").is_err());
/// ```
pub fn parse_bool(var: &'static str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Ok(true),
        "0" | "n" | "no" | "false" | "off" => Ok(false),
        _ => Err(ShmemError::Config {
            var,
            value: value.to_string(),
            expected: "a boolean (1/0, yes/no, true/false, on/off)".to_string(),
        }),
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
        let names = VARS.iter().map(|v| v.name);
        for name in names.chain(conduits::Settings::VARS.iter().map(|v| v.name)) {
            assert!(t.contains(name), "{t}");
        }
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
        for v in VARS {
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
