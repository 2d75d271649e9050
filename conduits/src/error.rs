//! Errors every conduit reports. Each names the PE and the offending value so
//! the runtime can print one clear line.

use gasnet_core::AmError;
use std::fmt;

/// Result of a conduit call.
pub type Result<T> = std::result::Result<T, ConduitError>;

/// What went wrong in a conduit call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConduitError {
    /// A target PE outside `0..size`.
    PeOutOfRange {
        /// The PE asked for.
        pe: usize,
        /// The job size.
        size: usize,
    },
    /// `offset..offset+len` does not lie inside the segment.
    OutOfSegment {
        /// Target PE.
        pe: usize,
        /// Offset asked for.
        offset: usize,
        /// Length asked for.
        len: usize,
        /// The segment length.
        segment_len: usize,
    },
    /// An atomic on a word not aligned to its width.
    Misaligned {
        /// Target PE.
        pe: usize,
        /// Offset asked for.
        offset: usize,
        /// Required alignment in bytes.
        align: usize,
    },
    /// A peer died, exited early or stopped answering.
    PeerFailed {
        /// The failed PE.
        pe: usize,
        /// What was observed.
        reason: String,
    },
    /// A wait made no progress for the wait timeout
    /// ([`crate::wait::set_timeout`], `FSHMEM_WAIT_TIMEOUT`).
    Timeout {
        /// What the wait was for, e.g. "the bootstrap barrier (3 of 4 PEs
        /// arrived)".
        what: String,
        /// How long it waited without progress.
        waited: std::time::Duration,
    },
    /// The job environment or bootstrap is wrong or failed.
    Bootstrap(String),
    /// An operating-system call failed.
    Io(String),
    /// The memory behind a segment (or another shared file) cannot be
    /// reserved: its file system (for smp, `/dev/shm`) has too little
    /// space left. Reported at start-up instead of a SIGBUS when a page is
    /// first touched.
    NoSpace {
        /// What was to be backed, e.g. `/dev/shm/fshmem-<job>-0`.
        what: String,
        /// Bytes asked for.
        asked: u64,
        /// Bytes the file system had free after the attempt, if known.
        free: Option<u64>,
    },
    /// An active-message error.
    Am(AmError),
    /// The conduit does not support this call.
    Unsupported(&'static str),
    /// A context that does not exist (never created, or destroyed).
    NoContext {
        /// The context asked for.
        ctx: u32,
    },
    /// Every context the conduit can track is in use.
    ContextLimit {
        /// How many contexts the conduit tracks, the default one included.
        max: usize,
    },
    /// A configuration variable has a bad value (boxed: a cold error
    /// should not make every `Result` of the hot paths bigger).
    Config(Box<gasnet_core::config::ConfigError>),
}

impl fmt::Display for ConduitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConduitError::PeOutOfRange { pe, size } => {
                write!(f, "PE {pe} is out of range (job has {size} PEs: 0..{size})")
            }
            ConduitError::OutOfSegment {
                pe,
                offset,
                len,
                segment_len,
            } => write!(
                f,
                "bytes {offset}..{} on PE {pe} lie outside the {segment_len}-byte symmetric segment",
                offset.saturating_add(*len)
            ),
            ConduitError::Misaligned { pe, offset, align } => write!(
                f,
                "atomic at offset {offset:#x} on PE {pe} is not {align}-byte aligned"
            ),
            ConduitError::PeerFailed { pe, reason } => write!(f, "PE {pe} failed: {reason}"),
            ConduitError::Timeout { what, waited } => write!(
                f,
                "no progress for {:.1} s waiting for {what}",
                waited.as_secs_f64()
            ),
            ConduitError::Bootstrap(s) => write!(f, "bootstrap: {s}"),
            ConduitError::Io(s) => write!(f, "I/O: {s}"),
            ConduitError::NoSpace { what, asked, free } => {
                write!(f, "cannot reserve {asked} bytes for {what}")?;
                match free {
                    Some(free) => write!(f, ": only {free} bytes are free there"),
                    None => f.write_str(": no space left"),
                }
            }
            ConduitError::Am(e) => write!(f, "active message: {e}"),
            ConduitError::Unsupported(s) => write!(f, "unsupported: {s}"),
            ConduitError::NoContext { ctx } => {
                write!(
                    f,
                    "context {ctx} does not exist (never created, or destroyed)"
                )
            }
            ConduitError::ContextLimit { max } => write!(
                f,
                "no free context: all {max} contexts this conduit tracks are in use"
            ),
            ConduitError::Config(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ConduitError {}

impl From<AmError> for ConduitError {
    fn from(e: AmError) -> Self {
        ConduitError::Am(e)
    }
}

impl From<gasnet_core::config::ConfigError> for ConduitError {
    fn from(e: gasnet_core::config::ConfigError) -> Self {
        ConduitError::Config(Box::new(e))
    }
}

impl From<std::io::Error> for ConduitError {
    fn from(e: std::io::Error) -> Self {
        ConduitError::Io(e.to_string())
    }
}

/// Checks that `pe` is a rank of a job of `size` PEs.
///
/// ```
/// use conduits::error::check_pe;
/// assert!(check_pe(1, 2).is_ok());
/// assert!(check_pe(2, 2).is_err());
/// ```
pub fn check_pe(pe: usize, size: usize) -> Result<()> {
    if pe >= size {
        return Err(ConduitError::PeOutOfRange { pe, size });
    }
    Ok(())
}

/// Checks that `pe` exists and that a word of `align` bytes at `offset`
/// (an atomic's target, a signal word) lies in a segment of `segment_len`
/// bytes and is aligned to its size.
///
/// ```
/// use conduits::error::check_word;
/// assert!(check_word(0, 2, 8, 8, 64).is_ok());
/// assert!(check_word(0, 2, 4, 8, 64).is_err());
/// assert!(check_word(0, 2, 64, 8, 64).is_err());
/// ```
pub fn check_word(
    pe: usize,
    size: usize,
    offset: usize,
    align: usize,
    segment_len: usize,
) -> Result<()> {
    check_range(pe, size, offset, align, segment_len)?;
    if !offset.is_multiple_of(align) {
        return Err(ConduitError::Misaligned { pe, offset, align });
    }
    Ok(())
}

/// Checks that `pe` exists and `offset..offset+len` lies in a segment of
/// `segment_len` bytes.
///
/// ```
/// use conduits::error::check_range;
/// assert!(check_range(1, 2, 0, 8, 64).is_ok());
/// assert!(check_range(2, 2, 0, 8, 64).is_err());
/// assert!(check_range(0, 2, 60, 8, 64).is_err());
/// ```
pub fn check_range(
    pe: usize,
    size: usize,
    offset: usize,
    len: usize,
    segment_len: usize,
) -> Result<()> {
    check_pe(pe, size)?;
    match offset.checked_add(len) {
        Some(end) if end <= segment_len => Ok(()),
        _ => Err(ConduitError::OutOfSegment {
            pe,
            offset,
            len,
            segment_len,
        }),
    }
}
