//! What the host side hands the engine, and what it gets back.

use super::layout::Status;
use crate::am::AmError;
use crate::amo::{AmoOp, AmoWidth};
use crate::types::{Category, NodeId};
use std::fmt;

/// The host's name for a command, returned unchanged in its [`Completion`].
/// The engine does not interpret it; tags need not be unique.
pub type Tag = u64;

/// Where a put's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutSource {
    /// Bytes owned by the command.
    Bytes(Vec<u8>),
    /// `len` bytes of the local segment at `offset`, read as the put is
    /// issued (a DMA read): they must not change until the put completes.
    Local {
        /// Offset in the local segment.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
}

impl PutSource {
    /// The number of bytes to put.
    pub fn len(&self) -> u64 {
        match self {
            PutSource::Bytes(b) => b.len() as u64,
            PutSource::Local { len, .. } => *len,
        }
    }

    /// Whether there are no bytes to put.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a get's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetInto {
    /// Into the local segment at this offset, by Long `GET_REPLY`s of at
    /// most [`crate::MAX_LONG`] bytes.
    Segment(u64),
    /// Into [`Completion::data`], by Medium `GET_REPLY`s of at most
    /// [`crate::MAX_MEDIUM`] bytes.
    Buffer,
    /// Both: Long replies written into the segment at this offset and also
    /// copied into [`Completion::data`].
    Both(u64),
    /// Into [`Completion::data`] as [`GetInto::Buffer`], but by Long
    /// `GET_REPLY`s of at most [`crate::MAX_LONG`] bytes: the requests
    /// name `dst` 0, which the responder only echoes, and this engine
    /// copies each reply's payload into the buffer instead of writing its
    /// segment. For a requester whose replies its own engine receives (the
    /// IPv6 bridge): a fifteenth of the packets of Medium replies. A board
    /// core writes every Long reply at its `dst`, so a board's host asks
    /// for [`GetInto::Buffer`].
    BufferLong,
}

impl GetInto {
    /// The local segment offset, if the bytes land in the segment.
    pub fn segment(self) -> Option<u64> {
        match self {
            GetInto::Segment(o) | GetInto::Both(o) => Some(o),
            GetInto::Buffer | GetInto::BufferLong => None,
        }
    }

    /// Whether the bytes are returned in [`Completion::data`].
    pub fn buffered(self) -> bool {
        !matches!(self, GetInto::Segment(_))
    }

    /// Whether the replies are Long (of at most [`crate::MAX_LONG`] bytes)
    /// rather than Medium.
    pub fn long(self) -> bool {
        !matches!(self, GetInto::Buffer)
    }
}

/// A command for the scheduler. Commands are issued strictly in submission
/// order; see the [module docs](super) for when each completes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Write bytes into `dst`'s segment at `offset`. Completes when every
    /// piece is acknowledged.
    Put {
        /// Target node.
        dst: NodeId,
        /// Offset in the target's segment.
        offset: u64,
        /// The bytes.
        source: PutSource,
    },
    /// Read `len` bytes of `dst`'s segment at `offset`. Completes when
    /// every piece is answered and written.
    Get {
        /// Target node.
        dst: NodeId,
        /// Offset in the target's segment.
        offset: u64,
        /// Length in bytes.
        len: u64,
        /// Where the bytes go.
        into: GetInto,
    },
    /// An atomic on a word of `dst`'s segment. Completes when answered; the
    /// completion's value is the old word for fetching ops.
    Amo {
        /// Target node.
        dst: NodeId,
        /// The operation.
        op: AmoOp,
        /// The word width.
        width: AmoWidth,
        /// Offset of the word (aligned to `width`).
        offset: u64,
        /// The operand.
        operand: u64,
        /// The comparand of [`AmoOp::CompareSwap`]; ignored otherwise.
        compare: u64,
    },
    /// An active-message request to a handler the engine does not serve
    /// itself (user handlers, and system handlers such as `BARRIER` that
    /// the runtime registers). Completes when the target's response (the
    /// handler's reply, after its reply handler ran here, or the engine's
    /// acknowledgement) has arrived.
    AmRequest {
        /// Target node.
        dst: NodeId,
        /// Short, Medium or Long.
        category: Category,
        /// Handler index at the target.
        handler: u8,
        /// Arguments (at most [`crate::MAX_ARGS`]).
        args: Vec<u32>,
        /// Payload (empty for Short).
        payload: Vec<u8>,
        /// Long: offset in the target's segment the payload is written at.
        offset: u64,
    },
    /// An ordering point: every command submitted before it takes effect at
    /// each target before any command submitted after it. Completes as soon
    /// as it reaches the head of the queue (see the module docs).
    Fence,
    /// Does nothing; completes when it reaches the head of the queue.
    Nop,
}

/// The result of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The command's tag.
    pub tag: Tag,
    /// [`Status::Ok`], or the first error any piece met.
    pub status: Status,
    /// A fetching atomic's old value (masked to its width); otherwise 0.
    pub value: u64,
    /// A buffered get's bytes ([`GetInto::Buffer`] or [`GetInto::Both`]);
    /// otherwise empty. Meaningful only when `status` is Ok.
    pub data: Vec<u8>,
}

/// Why a command was refused at submission (nothing was queued).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubmitError {
    /// The target is not a node of the job.
    BadNode(NodeId),
    /// The command queue holds [`Config::queue_depth`] commands.
    QueueFull,
    /// A local segment range (put source, get destination) is out of range.
    LocalOutOfRange {
        /// First byte.
        offset: u64,
        /// Length.
        len: u64,
    },
    /// A remote range overflows 64 bits.
    RemoteOverflow,
    /// A buffered get longer than this machine's address space.
    TooLong(u64),
    /// An AM request naming a handler the engine serves itself.
    ReservedHandler(u8),
    /// An AM request whose shape its category does not allow.
    Shape(AmError),
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitError::BadNode(n) => write!(f, "node {n} is not part of the job"),
            SubmitError::QueueFull => f.write_str("command queue full"),
            SubmitError::LocalOutOfRange { offset, len } => write!(
                f,
                "{len} bytes at local offset {offset} exceed the local segment"
            ),
            SubmitError::RemoteOverflow => f.write_str("remote range overflows 64 bits"),
            SubmitError::TooLong(n) => write!(f, "a {n}-byte buffer cannot be allocated"),
            SubmitError::ReservedHandler(h) => {
                write!(f, "handler {h} is served by the engine, not by AM requests")
            }
            SubmitError::Shape(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SubmitError {}

/// Engine limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Most request packets awaiting their response at once (flow control:
    /// at most this many × [`crate::MAX_LONG`] bytes of puts are buffered).
    /// At least 1.
    pub max_in_flight: usize,
    /// Most commands submitted and not yet completed; beyond it
    /// [`SubmitError::QueueFull`].
    pub queue_depth: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_in_flight: 64,
            queue_depth: 4096,
        }
    }
}

/// Event counters, for a board's performance registers. Bytes are payload
/// bytes (headers depend on the link's encoding). Packets a node sends to
/// itself never reach the link and count only as `loopback_packets`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets handed to the link by `next_outgoing`.
    pub packets_sent: u64,
    /// Payload bytes of those packets.
    pub bytes_sent: u64,
    /// Packets passed to `receive`.
    pub packets_received: u64,
    /// Payload bytes of those packets.
    pub bytes_received: u64,
    /// Packets delivered from this node to itself.
    pub loopback_packets: u64,
    /// Requests served (system and AM).
    pub requests_served: u64,
    /// Requests answered with an error status.
    pub error_replies: u64,
    /// Packets discarded: wrong destination, transport control packets,
    /// fragments, unsolicited or unmatched replies.
    pub dropped: u64,
    /// Commands completed (with any status).
    pub commands_completed: u64,
}
