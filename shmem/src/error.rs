//! The error type of every `shmem` call.
//!
//! Each error names the PE that saw it, the OpenSHMEM call that failed
//! (`shmem_put`, `shmem_malloc`, ...) and the offending value, so that one
//! line on stderr tells a user what went wrong:
//!
//! ```text
//! PE 1: shmem_put: target PE 7 out of range (job has 4 PEs)
//! ```

use crate::alloc::AllocError;
use conduits::ConduitError;
use std::fmt;

/// Result of a `shmem` call.
pub type Result<T> = std::result::Result<T, ShmemError>;

/// What went wrong in a `shmem` call.
///
/// ```
/// use shmem::ShmemError;
/// let e = ShmemError::PeOutOfRange { pe: 1, call: "shmem_put", target: 7, n_pes: 4 };
/// assert_eq!(e.to_string(), "PE 1: shmem_put: target PE 7 out of range (job has 4 PEs)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShmemError {
    /// An environment variable holds a value that is not valid for it.
    Config {
        /// The variable, e.g. `SHMEM_SYMMETRIC_SIZE`.
        var: &'static str,
        /// The value found.
        value: String,
        /// What was expected.
        expected: String,
    },
    /// `init` was called while the runtime is already running.
    AlreadyInitialized,
    /// `init` was called after the runtime was finalized (OpenSHMEM does not
    /// allow re-initialization).
    Finalized,
    /// A call that needs the runtime was made before `init`.
    NotInitialized {
        /// The call.
        call: &'static str,
    },
    /// A target PE outside `0..n_pes`.
    PeOutOfRange {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// The PE asked for.
        target: usize,
        /// The job size.
        n_pes: usize,
    },
    /// Elements `start..start+count` do not lie inside a symmetric object (or
    /// a local buffer) of `len` elements.
    OutOfBounds {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// First element asked for.
        start: usize,
        /// Number of elements asked for.
        count: usize,
        /// Length of the object.
        len: usize,
    },
    /// An address handed to a C routine does not lie in symmetric memory
    /// (the symmetric heap or the program's symmetric static data).
    NotSymmetricAddress {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// The address.
        addr: usize,
        /// Bytes accessed from it.
        len: usize,
    },
    /// The symmetric heap cannot satisfy an allocation, or an allocation
    /// argument is invalid.
    Alloc {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// What the allocator reported.
        source: AllocError,
    },
    /// A size computation (`count * size_of::<T>()`) overflowed.
    SizeOverflow {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// Elements asked for.
        count: usize,
        /// Size of one element in bytes.
        elem_size: usize,
    },
    /// With `SHMEM_DEBUG`: this PE's collective allocation call differs
    /// from PE 0's (a different call, size or resulting offset), so the
    /// PEs did not make the same calls in the same order.
    NotCollective {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// This PE's (call code, bytes, heap offset).
        mine: [u64; 3],
        /// PE 0's (call code, bytes, heap offset).
        pe0: [u64; 3],
    },
    /// A collective allocation call (`shmem_malloc`, `shmem_calloc`,
    /// `shmem_align`, `shmem_realloc`, `shmem_free`) was not the same on
    /// every PE: PE `other_pe` made another call, asked for another size or
    /// freed another object than PE `first_pe` in the same collective
    /// allocation step. Checked on every allocation (not only under
    /// `SHMEM_DEBUG`); every PE of the step reports it and none keeps the
    /// memory.
    NotSymmetric {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// Which collective allocation of the job this was (from 0).
        step: u64,
        /// The PE whose request the others were compared with.
        first_pe: usize,
        /// Its call.
        first_call: &'static str,
        /// Its size in bytes.
        first_bytes: u64,
        /// A PE whose request differs.
        other_pe: usize,
        /// Its call.
        other_call: &'static str,
        /// Its size in bytes.
        other_bytes: u64,
    },
    /// An argument of a team, collective or context call is invalid (a
    /// split outside the parent team, a root out of range, a destination too
    /// short, a store on a `NOSTORE` context...).
    Invalid {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The PEs of a team called a data collective with different
    /// arguments (another root, element count, element size, operator or
    /// stride, or another collective). Found on the collective's entry
    /// synchronization, before any data moves; every PE of the team
    /// reports the same two PEs.
    CollectiveMismatch {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// The lowest PE of the team (world number).
        first_pe: usize,
        /// Its call and arguments.
        first: String,
        /// The lowest PE whose call differs from `first_pe`'s.
        other_pe: usize,
        /// Its call and arguments.
        other: String,
    },
    /// The pool of team slots (`FSHMEM_TEAMS_MAX`) has no slot free on
    /// every PE of the parent team.
    TeamsExhausted {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// The pool size.
        max: usize,
    },
    /// The conduit failed.
    Conduit {
        /// The calling PE.
        pe: usize,
        /// The call.
        call: &'static str,
        /// The conduit's error.
        source: ConduitError,
    },
}

impl ShmemError {
    /// Wraps a conduit error with the PE and call that saw it. A peer's
    /// failure is also told to the launcher, which may see this PE end
    /// before the failed one and would otherwise blame this PE.
    pub fn conduit(pe: usize, call: &'static str, source: ConduitError) -> ShmemError {
        if let ConduitError::PeerFailed { pe: failed, .. } = &source {
            let failed = *failed;
            conduits::job::tell_launcher_failed(failed);
        }
        ShmemError::Conduit { pe, call, source }
    }
}

impl fmt::Display for ShmemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShmemError::Config {
                var,
                value,
                expected,
            } => write!(f, "{var}={value:?} is not valid: expected {expected}"),
            ShmemError::AlreadyInitialized => {
                f.write_str("shmem_init: the runtime is already initialized")
            }
            ShmemError::Finalized => {
                f.write_str("shmem_init: the runtime was finalized and cannot be initialized again")
            }
            ShmemError::NotInitialized { call } => {
                write!(
                    f,
                    "{call}: the runtime is not initialized (call shmem::init first)"
                )
            }
            ShmemError::PeOutOfRange {
                pe,
                call,
                target,
                n_pes,
            } => {
                // A negative C `int` reaches the runtime sign-extended: show
                // it as the program wrote it.
                let t = *target as isize;
                if t < 0 {
                    write!(
                        f,
                        "PE {pe}: {call}: target PE {t} out of range (job has {n_pes} PEs)"
                    )
                } else {
                    write!(
                        f,
                        "PE {pe}: {call}: target PE {target} out of range (job has {n_pes} PEs)"
                    )
                }
            }
            ShmemError::OutOfBounds {
                pe,
                call,
                start,
                count,
                len,
            } => write!(
                f,
                "PE {pe}: {call}: elements {start}..{} out of bounds (object has {len} elements)",
                start.saturating_add(*count)
            ),
            ShmemError::NotSymmetricAddress {
                pe,
                call,
                addr,
                len,
            } => write!(
                f,
                "PE {pe}: {call}: address {addr:#x} ({len} bytes) is outside symmetric memory"
            ),
            ShmemError::Alloc { pe, call, source } => write!(f, "PE {pe}: {call}: {source}"),
            ShmemError::SizeOverflow {
                pe,
                call,
                count,
                elem_size,
            } => write!(
                f,
                "PE {pe}: {call}: {count} elements of {elem_size} bytes overflow the address space"
            ),
            ShmemError::NotCollective {
                pe,
                call,
                mine,
                pe0,
            } => write!(
                f,
                "PE {pe}: {call}: not collective: this PE asked for {} bytes ({} at heap offset {:#x}), \
                 PE 0 for {} bytes ({} at heap offset {:#x})",
                mine[1],
                call_name(mine[0]),
                mine[2],
                pe0[1],
                call_name(pe0[0]),
                pe0[2]
            ),
            ShmemError::NotSymmetric {
                pe,
                call,
                step,
                first_pe,
                first_call,
                first_bytes,
                other_pe,
                other_call,
                other_bytes,
            } => write!(
                f,
                "PE {pe}: {call}: not the same on every PE: in collective allocation #{step}, \
                 PE {other_pe} called {other_call} with {other_bytes} bytes but \
                 PE {first_pe} called {first_call} with {first_bytes} bytes"
            ),
            ShmemError::Invalid { pe, call, reason } => write!(f, "PE {pe}: {call}: {reason}"),
            ShmemError::CollectiveMismatch {
                pe,
                call,
                first_pe,
                first,
                other_pe,
                other,
            } => write!(
                f,
                "PE {pe}: {call}: the PEs disagree: PE {first_pe} called {first}, \
                 PE {other_pe} called {other}"
            ),
            ShmemError::TeamsExhausted { pe, call, max } => write!(
                f,
                "PE {pe}: {call}: no team slot free on every PE of the parent team \
                 ({max} slots; destroy teams or raise FSHMEM_TEAMS_MAX)"
            ),
            ShmemError::Conduit { pe, call, source } => write!(f, "PE {pe}: {call}: {source}"),
        }
    }
}

/// The allocation calls [`ShmemError::NotCollective`] compares, by code.
pub(crate) const ALLOC_CALLS: [&str; 5] = [
    "shmem_malloc",
    "shmem_calloc",
    "shmem_align",
    "shmem_realloc",
    "shmem_free",
];

/// The code of an allocation call in [`ShmemError::NotCollective`].
pub(crate) fn call_code(call: &str) -> u64 {
    ALLOC_CALLS
        .iter()
        .position(|c| *c == call)
        .map_or(u64::MAX, |i| i as u64)
}

/// The name of an allocation call by its [`call_code`].
pub(crate) fn call_name(code: u64) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|i| ALLOC_CALLS.get(i))
        .copied()
        .unwrap_or("?")
}

impl std::error::Error for ShmemError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShmemError::Alloc { source, .. } => Some(source),
            ShmemError::Conduit { source, .. } => Some(source),
            _ => None,
        }
    }
}
