//! The vocabulary shared by every layer: node ids, AM categories, limits and
//! the reserved handler indices.

/// Identifies a core (a PE's endpoint or a board) within a job: `0..node_count`.
pub type NodeId = u16;

/// Largest node count the wire format can address.
pub const MAX_NODES: usize = u16::MAX as usize;

/// Most 32-bit arguments an active message carries.
pub const MAX_ARGS: usize = 16;

/// Largest Medium payload, in bytes (the bounce buffer a receiver provides).
pub const MAX_MEDIUM: usize = 4096;

/// Largest Long payload carried by one AM, in bytes. Longer transfers are
/// segmented into several Long messages at consecutive segment offsets.
pub const MAX_LONG: usize = 65536;

/// The three GASNet active-message categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// Arguments only.
    Short,
    /// Arguments plus a payload of at most [`MAX_MEDIUM`] bytes delivered to
    /// the handler from a bounce buffer.
    Medium,
    /// Arguments plus a payload of at most [`MAX_LONG`] bytes written into the
    /// destination's segment at a given offset before the handler runs.
    Long,
}

/// Whether a message is a request (may be replied to) or a reply (may not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// A request: its handler receives a token that can reply once.
    Request,
    /// A reply: its handler's token cannot reply.
    Reply,
}

/// Reserved handler indices. System handlers occupy `0..FIRST_USER`; user
/// handlers are registered at `FIRST_USER..=255`; the top of the user range
/// from [`handlers::FIRST_COMPUTE`] is dispatched to a board's compute core
/// when one is present.
///
/// Every reserved index is listed here, including the conduit- and
/// transport-private ones ([`handlers::EXIT`], [`handlers::PROBE`]); the
/// indices `13..=61` are free for future system handlers.
pub mod handlers {
    /// Never a valid handler; a packet naming it is rejected.
    pub const INVALID: u8 = 0;
    /// Long request: payload written at the offset; replies with [`ACK`].
    pub const PUT: u8 = 1;
    /// Short request: args = (token, offset lo, offset hi, len); replies
    /// with [`GET_REPLY`].
    pub const GET: u8 = 2;
    /// Medium/Long reply carrying the bytes of a [`GET`].
    pub const GET_REPLY: u8 = 3;
    /// Short request for an atomic: see [`crate::amo`] for the argument layout.
    pub const AMO: u8 = 4;
    /// Short reply carrying an atomic's fetched value.
    pub const AMO_REPLY: u8 = 5;
    /// Short reply acknowledging remote completion of a put or non-fetching
    /// atomic; args\[0\] is the requester's token.
    pub const ACK: u8 = 6;
    /// Short request: a barrier arrival; args = (epoch, round).
    pub const BARRIER: u8 = 7;
    /// Short request: put-with-signal's signal update after the payload.
    pub const SIGNAL: u8 = 8;
    /// Medium request: bootstrap/collective exchange fragment.
    pub const EXCHANGE: u8 = 9;
    /// Short request: a liveness probe answered with [`ACK`].
    pub const PING: u8 = 10;
    /// Short request of the `shmem` layer's delivery check: its handler
    /// replies [`FLUSH_DONE`] with the same arguments. Sent after Long
    /// messages, it tells their sender that their payloads are written
    /// (active messages from one PE to one target are delivered in order).
    pub const FLUSH: u8 = 11;
    /// Short reply to [`FLUSH`].
    pub const FLUSH_DONE: u8 = 12;
    /// Conduit-private, ipv6: Short request ending the receiving PE's
    /// process with the status in args\[0\] (`shmem_global_exit` from a
    /// peer). Never reaches the `shmem` layer.
    pub const EXIT: u8 = 62;
    /// Transport-private: the reliable link layer's keepalive probe (ipv6
    /// bridge and devsim board links), a Short *reply* that the receiving
    /// transport acknowledges and discards; it never reaches an engine.
    pub const PROBE: u8 = 63;
    /// First index user code may register.
    pub const FIRST_USER: u8 = 64;
    /// First index dispatched to a board's compute core (devsim's GEMM tile
    /// engine); below it, user handlers run on the host.
    pub const FIRST_COMPUTE: u8 = 224;
}
