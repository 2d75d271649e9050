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
];

/// Default symmetric heap size: 64 MiB.
pub const DEFAULT_SYMMETRIC_SIZE: usize = 64 << 20;

/// The OpenSHMEM specification version this library implements.
pub const OPENSHMEM_VERSION: (u32, u32) = (1, 5);

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `SHMEM_SYMMETRIC_SIZE`: bytes of user heap per PE.
    pub symmetric_size: usize,
    /// `SHMEM_DEBUG`.
    pub debug: bool,
    /// `SHMEM_INFO`.
    pub info: bool,
    /// `SHMEM_VERSION`.
    pub version: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            symmetric_size: DEFAULT_SYMMETRIC_SIZE,
            debug: false,
            info: false,
            version: false,
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
            _ => None,
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
        let w = VARS.iter().map(|v| v.name.len()).max().unwrap_or(0);
        for v in VARS {
            let val = self.value_of(v.name).unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:w$}  = {:<8} (default {:<4}) {}",
                v.name, val, v.default, v.help
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
        for v in VARS {
            assert!(t.contains(v.name), "{t}");
        }
        assert!(t.contains("3M"), "{t}");
        assert!(t.contains(LIBRARY_VERSION), "{t}");
    }

    #[test]
    fn format_round_trips() {
        for n in [0, 1, 1000, 4096, 64 << 20, (3 << 30) + 1, 5 << 40] {
            assert_eq!(parse_size("X", &format_size(n)).unwrap(), n);
        }
    }
}
