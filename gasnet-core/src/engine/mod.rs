//! The reference core engine: the software twin of the hardware GASNet core.
//!
//! A board's core has three parts, and so does [`Engine`]:
//!
//! - the **scheduler** takes [`Command`]s from the host ([`Engine::submit`]),
//!   queues them and issues them strictly in submission order, splitting
//!   large transfers into pieces and limiting how many requests await a
//!   response ([`Config::max_in_flight`]);
//! - the **AM sequencer** turns each piece into a [`Packet`] naming a system
//!   handler (`PUT`, `GET`, `AMO`) or the user's handler;
//! - the **receive handler** ([`Engine::receive`]) serves incoming requests
//!   against the local segment ([`Memory`]), dispatches other handlers
//!   through the [`HandlerTable`], matches replies to outstanding pieces and
//!   produces [`Completion`]s ([`Engine::poll_completion`]).
//!
//! The engine performs no I/O. The caller owns the link: it moves packets
//! from [`Engine::next_outgoing`] to the destination's `receive`, and must
//! deliver them reliably and **in order per (source, destination) pair** —
//! the guarantee the IPv6 bridge's reliable transport and a board link both
//! give. Packets a node addresses to itself never leave the engine. Packets
//! carry no transport state: `seq`, `ack`, `flags` and `frag_offset` are 0
//! and `total_len` is the payload length; the transport below fills in its
//! fields and reassembles fragments before `receive`.
//!
//! ```
//! use gasnet_core::engine::{Command, Engine, GetInto, PutSource, Status};
//!
//! let mut a = Engine::new(0, 2, vec![0u8; 1024]);
//! let mut b = Engine::new(1, 2, vec![0u8; 1024]);
//! let source = PutSource::Bytes(b"hello".to_vec());
//! a.submit(1, Command::Put { dst: 1, offset: 16, source }).unwrap();
//! a.submit(2, Command::Get { dst: 1, offset: 16, len: 5, into: GetInto::Buffer })
//!     .unwrap();
//! // A link that delivers everything at once, in order.
//! while a.outstanding() > 0 {
//!     while let Some(p) = a.next_outgoing() {
//!         b.receive(p);
//!     }
//!     while let Some(p) = b.next_outgoing() {
//!         a.receive(p);
//!     }
//! }
//! let put = a.poll_completion().unwrap();
//! assert_eq!((put.tag, put.status), (1, Status::Ok));
//! let get = a.poll_completion().unwrap();
//! assert_eq!((get.tag, get.data.as_slice()), (2, &b"hello"[..]));
//! ```
//!
//! # Pieces
//!
//! A put becomes Long `PUT` requests of at most [`MAX_LONG`] bytes at
//! consecutive offsets. A get becomes `GET` requests of at most
//! [`MAX_LONG`] bytes answered by Long `GET_REPLY`s when its bytes land in
//! the segment ([`GetInto::Segment`], [`GetInto::Both`]) or when the
//! requester asks for them so ([`GetInto::BufferLong`]), or of at most
//! [`MAX_MEDIUM`] bytes answered by Medium `GET_REPLY`s when they land only
//! in the completion ([`GetInto::Buffer`]). An atomic is one `AMO` request.
//! An AM request is one packet to the user's handler. The argument layouts
//! are in [`layout`]. A command completes when all its pieces have been
//! answered; zero-length puts and gets complete without sending anything.
//!
//! # Responses and errors
//!
//! Every request gets exactly one response. System requests are answered by
//! token: `PUT` and non-fetching `AMO` by `ACK`, `GET` by `GET_REPLY`,
//! fetching `AMO` by `AMO_REPLY`, and any failure (offset out of range,
//! misaligned atomic, malformed arguments) by `ACK [token, status]`.
//! AM requests carry only the user's arguments, so they are answered in
//! order: by the handler's reply if it sent one, else by the engine's
//! `ACK [0, status]` after the handler returned (status `NoHandler` if none
//! is registered, `OutOfRange` if a Long payload did not fit, in which case
//! the handler does not run). Per-pair ordered delivery makes the oldest
//! unanswered AM request to a node the one a response from it answers.
//! A user handler's reply must name a handler the engine does not serve
//! (see [`layout::engine_owned`]); a reply handler cannot reply
//! ([`Token`] enforces it). The first error a command's pieces meet becomes
//! its completion's [`Status`]. Nothing a peer sends makes the engine
//! panic: a malformed reply that names an outstanding request fails that
//! request with [`Status::Malformed`]; packets it cannot attribute (wrong
//! destination, transport control packets, unsolicited replies, requests
//! naming reply handlers) are dropped and counted in [`Counters::dropped`].
//! A Long payload is written only once the handler is known to exist.
//! Handlers must not panic.
//!
//! # Ordering, fence and quiet
//!
//! Commands are issued in submission order (all pieces of one before any
//! of the next), the link delivers in order per pair, and the receiver
//! executes requests in arrival order. So every command reaches a given
//! target after every earlier command to that target, whatever their kinds:
//! a put followed by a put to the same address leaves the second value, and
//! a get after a put sees the put. That is already what OpenSHMEM's
//! `fence` promises (ordering per target PE), so [`Command::Fence`] only has
//! to keep its place in the queue: it completes when it reaches the head,
//! and costs no round trip. A link without per-pair order would instead
//! need a fence to wait for earlier commands to complete; this engine does
//! not support such links.
//!
//! `quiet` is [`Engine::outstanding`] reaching 0: every submitted command
//! has completed, which for puts and atomics means the target has applied
//! them (their `ACK` is sent after the write). Completions then wait in
//! [`Engine::poll_completion`].

mod command;
pub mod layout;
mod memory;
mod receive;
mod schedule;
#[cfg(test)]
mod tests;

pub use command::{Command, Completion, Config, Counters, GetInto, PutSource, SubmitError, Tag};
pub use layout::Status;
pub use memory::{MemError, Memory, check_range};

use crate::am::{AmError, AmMessage, HandlerTable, ReplySink, Token, check_shape};
use crate::types::{Category, Direction, MAX_LONG, MAX_MEDIUM, NodeId, handlers};
use crate::wire::{Packet, PacketType};
use layout::{AM_TOKEN, AmoArgs, GetArgs, engine_owned, join, split};
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

/// A command in the scheduler's queue, possibly partly issued.
#[derive(Debug)]
struct Queued {
    id: u64,
    cmd: Command,
    /// Bytes of a put or get issued so far.
    cursor: u64,
}

/// A submitted, not yet completed command.
#[derive(Debug)]
struct Active {
    tag: Tag,
    /// Requests sent and not yet answered.
    pending: usize,
    /// Whether every piece has been sent (or issuing stopped on an error).
    issued: bool,
    status: Status,
    value: u64,
    data: Vec<u8>,
}

/// A system request awaiting its response, by token.
#[derive(Debug)]
struct Piece {
    cmd: u64,
    peer: NodeId,
    kind: PieceKind,
}

#[derive(Debug)]
enum PieceKind {
    Put,
    Amo,
    Get {
        /// Where a Long reply must land in the local segment.
        local: Option<u64>,
        /// Where the bytes go in the completion's buffer, if buffered.
        buffer_at: Option<usize>,
        len: usize,
        /// The reply is Long (else Medium).
        long: bool,
    },
}

/// Routes packets: to the link, or straight back in when addressed to this
/// node. It is also the [`ReplySink`] of handler tokens.
struct Router<'a> {
    id: NodeId,
    outgoing: &'a mut VecDeque<Packet>,
    loopback: &'a mut VecDeque<Packet>,
    counters: &'a mut Counters,
}

impl Router<'_> {
    fn send(&mut self, p: Packet) {
        if p.dst == self.id {
            self.counters.loopback_packets += 1;
            self.loopback.push_back(p);
        } else {
            self.outgoing.push_back(p);
        }
    }
}

impl ReplySink for Router<'_> {
    fn send_reply(
        &mut self,
        dst: NodeId,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> Result<(), AmError> {
        if engine_owned(handler) {
            return Err(AmError::ReservedIndex(handler));
        }
        let p = am_packet(
            self.id,
            dst,
            category,
            Direction::Reply,
            handler,
            args.to_vec(),
            payload.to_vec(),
            offset,
        );
        self.send(p);
        Ok(())
    }
}

/// Builds an AM packet with the transport fields left for the transport.
#[allow(clippy::too_many_arguments)]
fn am_packet(
    src: NodeId,
    dst: NodeId,
    category: Category,
    direction: Direction,
    handler: u8,
    args: Vec<u32>,
    payload: Vec<u8>,
    offset: u64,
) -> Packet {
    Packet {
        ptype: PacketType::Am {
            category,
            direction,
        },
        src,
        dst,
        flags: 0,
        handler,
        args,
        offset: if category == Category::Long {
            offset
        } else {
            0
        },
        seq: 0,
        ack: 0,
        frag_offset: 0,
        total_len: payload.len() as u32,
        payload,
    }
}

/// The reference core engine of one node. See the [module docs](self).
pub struct Engine<M: Memory> {
    id: NodeId,
    nodes: usize,
    mem: M,
    handlers: HandlerTable,
    config: Config,
    queue: VecDeque<Queued>,
    active: HashMap<u64, Active>,
    pieces: HashMap<u32, Piece>,
    /// Per peer: AM requests awaiting their response, oldest first.
    am_waiting: Vec<VecDeque<u64>>,
    in_flight: usize,
    next_cmd: u64,
    next_token: u32,
    outgoing: VecDeque<Packet>,
    loopback: VecDeque<Packet>,
    completions: VecDeque<Completion>,
    counters: Counters,
}

impl<M: Memory> std::fmt::Debug for Engine<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("id", &self.id)
            .field("nodes", &self.nodes)
            .field("segment_len", &self.mem.len())
            .field("queued", &self.queue.len())
            .field("outstanding", &self.active.len())
            .field("in_flight", &self.in_flight)
            .field("outgoing", &self.outgoing.len())
            .field("completions", &self.completions.len())
            .field("counters", &self.counters)
            .finish()
    }
}

impl<M: Memory> Engine<M> {
    /// The engine of node `id` in a job of `nodes` nodes, serving `memory`
    /// as its segment, with the default [`Config`].
    ///
    /// # Panics
    ///
    /// If `id` is not below `nodes`.
    pub fn new(id: NodeId, nodes: usize, memory: M) -> Self {
        Self::with_config(id, nodes, memory, Config::default())
    }

    /// As [`Engine::new`], with explicit limits.
    ///
    /// # Panics
    ///
    /// If `id` is not below `nodes`.
    pub fn with_config(id: NodeId, nodes: usize, memory: M, config: Config) -> Self {
        assert!((id as usize) < nodes, "node {id} is not below {nodes}");
        Engine {
            id,
            nodes,
            mem: memory,
            handlers: HandlerTable::new(),
            config: Config {
                max_in_flight: config.max_in_flight.max(1),
                ..config
            },
            queue: VecDeque::new(),
            active: HashMap::default(),
            pieces: HashMap::default(),
            am_waiting: vec![VecDeque::new(); nodes],
            in_flight: 0,
            next_cmd: 0,
            next_token: AM_TOKEN,
            outgoing: VecDeque::new(),
            loopback: VecDeque::new(),
            completions: VecDeque::new(),
            counters: Counters::default(),
        }
    }

    /// This node.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The number of nodes in the job.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The limits in force.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The local segment.
    pub fn memory(&self) -> &M {
        &self.mem
    }

    /// The local segment, for the host's own loads and stores.
    pub fn memory_mut(&mut self) -> &mut M {
        &mut self.mem
    }

    /// The handler table.
    pub fn handlers(&self) -> &HandlerTable {
        &self.handlers
    }

    /// The handler table, to register user handlers (and system handlers
    /// the engine does not serve itself, such as `BARRIER`).
    pub fn handlers_mut(&mut self) -> &mut HandlerTable {
        &mut self.handlers
    }

    /// The event counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Commands submitted and not yet completed. `quiet` waits for 0.
    pub fn outstanding(&self) -> usize {
        self.active.len()
    }

    /// Whether [`Engine::next_outgoing`] has a packet.
    pub fn has_outgoing(&self) -> bool {
        !self.outgoing.is_empty()
    }

    /// Whether nothing is outstanding and nothing waits to be sent.
    pub fn is_idle(&self) -> bool {
        self.active.is_empty() && self.outgoing.is_empty()
    }

    /// Queues a command under `tag`; its [`Completion`] will carry the tag.
    /// Checks what can be checked locally (target node, local ranges, AM
    /// shape) and refuses the command, queuing nothing, if that fails.
    pub fn submit(&mut self, tag: Tag, cmd: Command) -> Result<(), SubmitError> {
        if self.active.len() >= self.config.queue_depth {
            return Err(SubmitError::QueueFull);
        }
        let mut data = Vec::new();
        match &cmd {
            Command::Put {
                dst,
                offset,
                source,
            } => {
                self.check_node(*dst)?;
                remote_range(*offset, source.len())?;
                if let PutSource::Local { offset, len } = *source {
                    self.local_range(offset, len)?;
                }
            }
            Command::Get {
                dst,
                offset,
                len,
                into,
            } => {
                self.check_node(*dst)?;
                remote_range(*offset, *len)?;
                if let Some(at) = into.segment() {
                    self.local_range(at, *len)?;
                }
                if into.buffered() {
                    let n = usize::try_from(*len).map_err(|_| SubmitError::TooLong(*len))?;
                    data = vec![0; n];
                }
            }
            Command::Amo { dst, .. } => self.check_node(*dst)?,
            Command::AmRequest {
                dst,
                category,
                handler,
                args,
                payload,
                offset,
            } => {
                self.check_node(*dst)?;
                if engine_owned(*handler) {
                    return Err(SubmitError::ReservedHandler(*handler));
                }
                check_shape(*category, args.len(), payload.len()).map_err(SubmitError::Shape)?;
                if *category == Category::Long {
                    remote_range(*offset, payload.len() as u64)?;
                }
            }
            Command::Fence | Command::Nop => {}
        }
        let id = self.next_cmd;
        self.next_cmd += 1;
        self.active.insert(
            id,
            Active {
                tag,
                pending: 0,
                issued: false,
                status: Status::Ok,
                value: 0,
                data,
            },
        );
        self.queue.push_back(Queued { id, cmd, cursor: 0 });
        self.run();
        Ok(())
    }

    /// The next packet for the link, if any.
    pub fn next_outgoing(&mut self) -> Option<Packet> {
        let p = self.outgoing.pop_front()?;
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += p.payload.len() as u64;
        Some(p)
    }

    /// Processes a packet from the link: serves a request (queuing its
    /// response) or matches a reply (possibly completing a command, and
    /// letting the scheduler issue more).
    pub fn receive(&mut self, packet: Packet) {
        self.counters.packets_received += 1;
        self.counters.bytes_received += packet.payload.len() as u64;
        self.handle(packet);
        self.run();
    }

    /// The next completion, in the order commands completed.
    pub fn poll_completion(&mut self) -> Option<Completion> {
        self.completions.pop_front()
    }

    fn check_node(&self, dst: NodeId) -> Result<(), SubmitError> {
        if (dst as usize) < self.nodes {
            Ok(())
        } else {
            Err(SubmitError::BadNode(dst))
        }
    }

    fn local_range(&self, offset: u64, len: u64) -> Result<(), SubmitError> {
        check_range(self.mem.len(), offset, len)
            .map_err(|_| SubmitError::LocalOutOfRange { offset, len })
    }

    fn router(&mut self) -> Router<'_> {
        Router {
            id: self.id,
            outgoing: &mut self.outgoing,
            loopback: &mut self.loopback,
            counters: &mut self.counters,
        }
    }

    fn send(&mut self, p: Packet) {
        self.router().send(p);
    }

    /// Issues what the scheduler can, and serves packets this node sent
    /// itself, until neither makes progress.
    fn run(&mut self) {
        loop {
            self.schedule();
            match self.loopback.pop_front() {
                Some(p) => self.handle(p),
                None => break,
            }
        }
    }
}

/// Checks that a remote range does not overflow 64 bits.
fn remote_range(offset: u64, len: u64) -> Result<(), SubmitError> {
    offset
        .checked_add(len)
        .map(|_| ())
        .ok_or(SubmitError::RemoteOverflow)
}
