//! Configuring the runtime in code: [`Builder`].
//!
//! A program that knows what it wants (a heap size, a thread level, a
//! conduit, timeouts) says so in code instead of through the environment.
//! Every value set goes through the same typed table as the environment's
//! ([`crate::config`]): a bad value is the same error naming the variable,
//! and what is not set in code still comes from the environment.
//!
//! The job's rows are the launcher's: rank, size, job id, bootstrap
//! (`FSHMEM_RANK`, `PMI_RANK`, `FSHMEM_BOOTSTRAP`, ...) always come from
//! the environment, and setting one in code is an error naming it. The
//! conduit is the exception: [`Builder::conduit`] (or
//! `var("FSHMEM_CONDUIT", ..)`) chooses it in code.

use crate::config::Config;
use crate::config::ThreadLevel;
use crate::error::{Result, ShmemError};
use crate::{Shmem, runtime};
use conduits::ConduitKind;
use conduits::config::JobVars;
use gasnet_core::config::{ConfigValue, format_duration, format_size};
use std::time::Duration;

/// The job row a program may set in code: the conduit.
const CONDUIT_VAR: &str = "FSHMEM_CONDUIT";

/// Builds the runtime: configuration in code, then [`Builder::init`].
///
/// ```no_run
/// use shmem::{Builder, ThreadLevel};
/// use std::time::Duration;
/// let sh = Builder::new()
///     .symmetric_size(256 << 20)
///     .thread_level(ThreadLevel::Multiple)
///     .wait_timeout(Some(Duration::from_secs(60)))
///     .peer_timeout(Duration::from_secs(5))
///     .init()?;
/// assert_eq!(sh.config().symmetric_size, 256 << 20);
/// assert_eq!(sh.query_thread(), ThreadLevel::Multiple);
/// # Ok::<(), shmem::ShmemError>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a Builder does nothing until init() is called"]
pub struct Builder {
    /// Variables set in code, in order (a later one wins).
    vars: Vec<(&'static str, String)>,
    level: ThreadLevel,
    /// Whether variables not set in code come from the environment.
    environment: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// A builder whose unset variables come from the environment, at
    /// [`ThreadLevel::Multiple`].
    pub fn new() -> Builder {
        Builder {
            vars: Vec::new(),
            level: ThreadLevel::Multiple,
            environment: true,
        }
    }

    /// A builder that ignores the configuration variables of the
    /// environment: what is not set in code takes its default. (The job —
    /// rank, size, the launcher's bootstrap — still comes from the
    /// launcher's environment.)
    pub fn without_environment() -> Builder {
        Builder {
            environment: false,
            ..Builder::new()
        }
    }

    /// Sets variable `name` of the configuration table to `value`, exactly
    /// as the environment would (`"SHMEM_DEBUG"`, `"1"`). An unknown name, a
    /// bad value, or a row the launcher sets (`FSHMEM_RANK`, `PMI_SIZE`,
    /// ...; `FSHMEM_CONDUIT` excepted) is an error at [`Builder::init`]
    /// naming the variable.
    pub fn var(mut self, name: &'static str, value: impl Into<String>) -> Builder {
        self.vars.push((name, value.into()));
        self
    }

    /// The conduit (`FSHMEM_CONDUIT`, which it overrides). The launcher
    /// must provide what the conduit needs (`oshrun --conduit` does).
    pub fn conduit(self, kind: ConduitKind) -> Builder {
        self.var("FSHMEM_CONDUIT", kind.show_value())
    }

    /// Bytes of symmetric heap per PE (`SHMEM_SYMMETRIC_SIZE`).
    pub fn symmetric_size(self, bytes: usize) -> Builder {
        self.var("SHMEM_SYMMETRIC_SIZE", format_size(bytes as u64))
    }

    /// The thread level (`shmem_init_thread`'s request; every level is
    /// provided).
    pub fn thread_level(mut self, level: ThreadLevel) -> Builder {
        self.level = level;
        self
    }

    /// How long a wait may make no progress before the job ends with a
    /// report (`FSHMEM_WAIT_TIMEOUT`; `None`: forever).
    pub fn wait_timeout(self, t: Option<Duration>) -> Builder {
        self.var("FSHMEM_WAIT_TIMEOUT", t.show_value())
    }

    /// Silence of a needed peer before it is declared failed
    /// (`FSHMEM_PEER_TIMEOUT`, ipv6 and board links).
    pub fn peer_timeout(self, t: Duration) -> Builder {
        self.var("FSHMEM_PEER_TIMEOUT", format_duration(t))
    }

    /// Tracing and the collective-allocation check (`SHMEM_DEBUG`).
    pub fn debug(self, on: bool) -> Builder {
        self.var("SHMEM_DEBUG", on.show_value())
    }

    /// PE 0 prints the configuration at start-up (`SHMEM_INFO`).
    pub fn info(self, on: bool) -> Builder {
        self.var("SHMEM_INFO", on.show_value())
    }

    /// The configuration [`Builder::init`] would start with, checked: the
    /// values set in code, the job's rows from the launcher's environment,
    /// the rest from the environment (unless
    /// [`Builder::without_environment`]) or their defaults.
    pub fn config(&self) -> Result<Config> {
        let known = Config::all_vars();
        let launcher = JobVars::all_vars();
        let is_launchers = |name: &str| launcher.iter().any(|v| v.name == name);
        for (name, value) in &self.vars {
            if !known.iter().any(|v| v.name == *name) {
                return Err(ShmemError::Config {
                    var: name,
                    value: value.clone(),
                    expected: "a variable of the configuration table (SHMEM_INFO=1 lists them)"
                        .to_string(),
                });
            }
            if *name != CONDUIT_VAR && is_launchers(name) {
                return Err(ShmemError::Config {
                    var: name,
                    value: value.clone(),
                    expected: "no value from the program: the launcher sets it for each PE \
                               (oshrun, mpiexec, mpirun, srun)"
                        .to_string(),
                });
            }
        }
        let env = self.environment;
        Ok(Config::from_lookup(|k| {
            self.vars
                .iter()
                .rev()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.clone())
                .or_else(|| {
                    if env || is_launchers(k) {
                        std::env::var(k).ok()
                    } else {
                        None
                    }
                })
        })?)
    }

    /// `shmem_init` with this configuration. Collective over all PEs.
    pub fn init(self) -> Result<Shmem> {
        let config = self.config()?;
        crate::start(config, self.level, runtime::StartOptions::default())
    }
}
