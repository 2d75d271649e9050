//! The packet that travels between cores — over a board link or the IPv6
//! bridge — exactly as `spec/wire.md` specifies it.

use crate::types::{Category, Direction, NodeId};

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// An active message.
    Am {
        /// Short, Medium or Long.
        category: Category,
        /// Request or reply.
        direction: Direction,
    },
    /// A transport-level acknowledgement: `ack` is cumulative (every
    /// sequence number below it has arrived). Carries no AM.
    Ack,
    /// A transport-level selective negative acknowledgement: `ack` is
    /// cumulative as for [`PacketType::Ack`] and the payload names the
    /// missing sequence numbers (see `spec/wire.md`).
    Nack,
}

/// A decoded wire packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// What the packet is.
    pub ptype: PacketType,
    /// Sending node.
    pub src: NodeId,
    /// Receiving node.
    pub dst: NodeId,
    /// Transport flags (`spec/wire.md`).
    pub flags: u8,
    /// AM handler index (0 for Ack/Nack).
    pub handler: u8,
    /// AM arguments, at most [`crate::MAX_ARGS`].
    pub args: Vec<u32>,
    /// Long: segment offset the whole AM payload is written at. Else 0.
    pub offset: u64,
    /// Sender's per-destination sequence number (reliable transports; 0 on
    /// links that are reliable by construction).
    pub seq: u32,
    /// Cumulative acknowledgement piggy-backed for the reverse direction.
    pub ack: u32,
    /// Byte offset of this packet's payload within the whole AM payload
    /// (fragmentation to a path MTU); 0 when unfragmented.
    pub frag_offset: u32,
    /// Length of the whole AM payload this packet is a fragment of; equals
    /// `payload.len()` when unfragmented.
    pub total_len: u32,
    /// This packet's payload bytes.
    pub payload: Vec<u8>,
}
