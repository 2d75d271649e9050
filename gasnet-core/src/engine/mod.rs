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
//! the segment ([`GetInto::Segment`], [`GetInto::Both`]), or of at most
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

pub use command::{Command, Completion, Config, Counters, GetInto, PutSource, SubmitError, Tag};
pub use layout::Status;
pub use memory::{MemError, Memory, check_range};

use crate::am::{AmError, AmMessage, HandlerTable, ReplySink, Token, check_shape};
use crate::types::{Category, Direction, MAX_LONG, MAX_MEDIUM, NodeId, handlers};
use crate::wire::{Packet, PacketType};
use layout::{AM_TOKEN, AmoArgs, GetArgs, engine_owned, join, split};
use std::collections::{HashMap, VecDeque};

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
            active: HashMap::new(),
            pieces: HashMap::new(),
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

    // ---- scheduler and AM sequencer ----

    fn schedule(&mut self) {
        while let Some(mut q) = self.queue.pop_front() {
            if self.issue(&mut q) {
                if let Some(a) = self.active.get_mut(&q.id) {
                    a.issued = true;
                }
                self.finish_if_done(q.id);
            } else {
                self.queue.push_front(q);
                break;
            }
        }
    }

    fn has_window(&self) -> bool {
        self.in_flight < self.config.max_in_flight
    }

    /// Sends as many of `q`'s pieces as the window allows; true when all
    /// are sent (or issuing stopped on an error).
    fn issue(&mut self, q: &mut Queued) -> bool {
        let id = q.id;
        match &mut q.cmd {
            Command::Fence | Command::Nop => true,
            Command::Put {
                dst,
                offset,
                source,
            } => {
                let (dst, base, total) = (*dst, *offset, source.len());
                while q.cursor < total {
                    if !self.has_window() {
                        return false;
                    }
                    let at = q.cursor;
                    let n = (total - at).min(MAX_LONG as u64) as usize;
                    let payload = match source {
                        PutSource::Bytes(b) if at == 0 && n == b.len() => std::mem::take(b),
                        PutSource::Bytes(b) => b[at as usize..at as usize + n].to_vec(),
                        PutSource::Local { offset, .. } => {
                            let mut v = vec![0; n];
                            if let Err(e) = self.mem.read(*offset + at, &mut v) {
                                self.record(id, e.into());
                                return true;
                            }
                            v
                        }
                    };
                    let token = self.open_piece(id, dst, PieceKind::Put);
                    self.send(am_packet(
                        self.id,
                        dst,
                        Category::Long,
                        Direction::Request,
                        handlers::PUT,
                        vec![token],
                        payload,
                        base + at,
                    ));
                    q.cursor += n as u64;
                }
                true
            }
            Command::Get {
                dst,
                offset,
                len,
                into,
            } => {
                let (dst, base, total, into) = (*dst, *offset, *len, *into);
                let max = if into.segment().is_some() {
                    MAX_LONG
                } else {
                    MAX_MEDIUM
                };
                while q.cursor < total {
                    if !self.has_window() {
                        return false;
                    }
                    let at = q.cursor;
                    let n = (total - at).min(max as u64) as usize;
                    let local = into.segment().map(|o| o + at);
                    let kind = PieceKind::Get {
                        local,
                        buffer_at: into.buffered().then_some(at as usize),
                        len: n,
                    };
                    let token = self.open_piece(id, dst, kind);
                    let args = GetArgs {
                        token,
                        offset: base + at,
                        len: n as u32,
                        reply_at: local,
                    };
                    self.send(am_packet(
                        self.id,
                        dst,
                        Category::Short,
                        Direction::Request,
                        handlers::GET,
                        args.encode(),
                        Vec::new(),
                        0,
                    ));
                    q.cursor += n as u64;
                }
                true
            }
            Command::Amo {
                dst,
                op,
                width,
                offset,
                operand,
                compare,
            } => {
                if !self.has_window() {
                    return false;
                }
                let dst = *dst;
                let token = self.open_piece(id, dst, PieceKind::Amo);
                let args = AmoArgs {
                    token,
                    op: *op,
                    width: *width,
                    offset: *offset,
                    operand: *operand,
                    compare: *compare,
                };
                self.send(am_packet(
                    self.id,
                    dst,
                    Category::Short,
                    Direction::Request,
                    handlers::AMO,
                    args.encode(),
                    Vec::new(),
                    0,
                ));
                true
            }
            Command::AmRequest {
                dst,
                category,
                handler,
                args,
                payload,
                offset,
            } => {
                if !self.has_window() {
                    return false;
                }
                let dst = *dst;
                self.am_waiting[dst as usize].push_back(id);
                self.in_flight += 1;
                if let Some(a) = self.active.get_mut(&id) {
                    a.pending += 1;
                }
                self.send(am_packet(
                    self.id,
                    dst,
                    *category,
                    Direction::Request,
                    *handler,
                    std::mem::take(args),
                    std::mem::take(payload),
                    *offset,
                ));
                true
            }
        }
    }

    /// Registers a system request of command `cmd` to `peer`; returns its token.
    fn open_piece(&mut self, cmd: u64, peer: NodeId, kind: PieceKind) -> u32 {
        loop {
            self.next_token = self.next_token.wrapping_add(1);
            if self.next_token != AM_TOKEN && !self.pieces.contains_key(&self.next_token) {
                break;
            }
        }
        self.pieces
            .insert(self.next_token, Piece { cmd, peer, kind });
        self.in_flight += 1;
        if let Some(a) = self.active.get_mut(&cmd) {
            a.pending += 1;
        }
        self.next_token
    }

    /// Removes the piece `token` if `peer` is the node it was sent to.
    fn close_piece(&mut self, token: u32, peer: NodeId) -> Option<Piece> {
        if self.pieces.get(&token)?.peer != peer {
            return None;
        }
        self.in_flight -= 1;
        self.pieces.remove(&token)
    }

    /// Notes `status` against command `id`, keeping the first error.
    fn record(&mut self, id: u64, status: Status) {
        if let Some(a) = self.active.get_mut(&id) {
            if a.status.is_ok() {
                a.status = status;
            }
        }
    }

    /// One of command `id`'s requests was answered with `status`.
    fn settle(&mut self, id: u64, status: Status) {
        self.record(id, status);
        if let Some(a) = self.active.get_mut(&id) {
            a.pending = a.pending.saturating_sub(1);
        }
        self.finish_if_done(id);
    }

    fn finish_if_done(&mut self, id: u64) {
        let done = self
            .active
            .get(&id)
            .is_some_and(|a| a.issued && a.pending == 0);
        if let Some(a) = done.then(|| self.active.remove(&id)).flatten() {
            self.counters.commands_completed += 1;
            self.completions.push_back(Completion {
                tag: a.tag,
                status: a.status,
                value: a.value,
                data: a.data,
            });
        }
    }

    // ---- receive handler ----

    fn drop_packet(&mut self) {
        self.counters.dropped += 1;
    }

    fn handle(&mut self, p: Packet) {
        if p.dst != self.id || p.src as usize >= self.nodes {
            return self.drop_packet();
        }
        let PacketType::Am {
            category,
            direction,
        } = p.ptype
        else {
            return self.drop_packet();
        };
        let whole = p.frag_offset == 0 && p.total_len as usize == p.payload.len();
        let shaped = check_shape(category, p.args.len(), p.payload.len()).is_ok();
        match direction {
            Direction::Request if whole && shaped => self.serve(p, category),
            Direction::Request => self.reject(&p, Status::Malformed),
            Direction::Reply if whole && shaped => self.take_reply(p, category),
            Direction::Reply => self.bad_reply(&p),
        }
    }

    /// Queues `ACK [token, status]` to `dst`.
    fn ack(&mut self, dst: NodeId, token: u32, status: Status) {
        if !status.is_ok() {
            self.counters.error_replies += 1;
        }
        self.send(am_packet(
            self.id,
            dst,
            Category::Short,
            Direction::Reply,
            handlers::ACK,
            vec![token, status.code()],
            Vec::new(),
            0,
        ));
    }

    /// Answers a request that cannot be served with an error, if the
    /// requester can attribute the answer; otherwise drops it.
    fn reject(&mut self, p: &Packet, status: Status) {
        match p.handler {
            handlers::PUT | handlers::GET | handlers::AMO | handlers::PING => {
                match p.args.first() {
                    Some(&token) if token != AM_TOKEN => self.ack(p.src, token, status),
                    _ => self.drop_packet(),
                }
            }
            h if engine_owned(h) => self.drop_packet(),
            _ => self.ack(p.src, AM_TOKEN, status),
        }
    }

    fn serve(&mut self, p: Packet, category: Category) {
        let src = p.src;
        let token = p.args.first().copied().unwrap_or(AM_TOKEN);
        match p.handler {
            handlers::PUT | handlers::GET | handlers::AMO | handlers::PING if token == AM_TOKEN => {
                self.drop_packet()
            }
            handlers::PUT => {
                if category != Category::Long || p.args.len() != 1 {
                    return self.reject(&p, Status::Malformed);
                }
                self.counters.requests_served += 1;
                let status = match self.mem.write(p.offset, &p.payload) {
                    Ok(()) => Status::Ok,
                    Err(e) => e.into(),
                };
                self.ack(src, token, status);
            }
            handlers::GET => {
                let Some(g) = GetArgs::decode(&p.args).filter(|g| {
                    let max = if g.reply_at.is_some() {
                        MAX_LONG
                    } else {
                        MAX_MEDIUM
                    };
                    category == Category::Short && g.len as usize <= max
                }) else {
                    return self.reject(&p, Status::Malformed);
                };
                self.counters.requests_served += 1;
                let mut bytes = vec![0; g.len as usize];
                if let Err(e) = self.mem.read(g.offset, &mut bytes) {
                    return self.ack(src, token, e.into());
                }
                let reply_category = match g.reply_at {
                    Some(_) => Category::Long,
                    None => Category::Medium,
                };
                self.send(am_packet(
                    self.id,
                    src,
                    reply_category,
                    Direction::Reply,
                    handlers::GET_REPLY,
                    vec![token],
                    bytes,
                    g.reply_at.unwrap_or(0),
                ));
            }
            handlers::AMO => {
                let Some(a) = AmoArgs::decode(&p.args).filter(|_| category == Category::Short)
                else {
                    return self.reject(&p, Status::Malformed);
                };
                self.counters.requests_served += 1;
                match self
                    .mem
                    .atomic(a.op, a.width, a.offset, a.operand, a.compare)
                {
                    Err(e) => self.ack(src, token, e.into()),
                    Ok(_) if !a.op.fetches() => self.ack(src, token, Status::Ok),
                    Ok(old) => {
                        let (lo, hi) = split(old & a.width.mask());
                        self.send(am_packet(
                            self.id,
                            src,
                            Category::Short,
                            Direction::Reply,
                            handlers::AMO_REPLY,
                            vec![token, lo, hi],
                            Vec::new(),
                            0,
                        ));
                    }
                }
            }
            handlers::PING => {
                if category != Category::Short || p.args.len() != 1 {
                    return self.reject(&p, Status::Malformed);
                }
                self.counters.requests_served += 1;
                self.ack(src, token, Status::Ok);
            }
            h if engine_owned(h) => self.drop_packet(),
            _ => self.serve_am(p, category),
        }
    }

    /// Runs a request handler the engine does not serve itself, and makes
    /// sure the requester gets exactly one response.
    fn serve_am(&mut self, p: Packet, category: Category) {
        self.counters.requests_served += 1;
        let Some(f) = self.handlers.get(p.handler) else {
            return self.ack(p.src, AM_TOKEN, Status::NoHandler);
        };
        if category == Category::Long {
            if let Err(e) = self.mem.write(p.offset, &p.payload) {
                return self.ack(p.src, AM_TOKEN, e.into());
            }
        }
        let msg = AmMessage {
            src: p.src,
            category,
            direction: Direction::Request,
            handler: p.handler,
            args: &p.args,
            payload: &p.payload,
            offset: if category == Category::Long {
                p.offset
            } else {
                0
            },
        };
        let mut router = Router {
            id: self.id,
            outgoing: &mut self.outgoing,
            loopback: &mut self.loopback,
            counters: &mut self.counters,
        };
        let mut token = Token::new(p.src, Direction::Request, &mut router);
        f(&mut token, &msg);
        if !token.has_replied() {
            self.ack(p.src, AM_TOKEN, Status::Ok);
        }
    }

    fn take_reply(&mut self, p: Packet, category: Category) {
        let src = p.src;
        let token = p.args.first().copied().unwrap_or(AM_TOKEN);
        match p.handler {
            handlers::ACK => {
                if p.args.len() != 2 || category != Category::Short {
                    return self.bad_reply(&p);
                }
                let status = Status::from_code(p.args[1]);
                if token == AM_TOKEN {
                    return self.answer_am(src, status, None);
                }
                match self.close_piece(token, src) {
                    Some(piece) => self.settle(piece.cmd, status),
                    None => self.drop_packet(),
                }
            }
            handlers::GET_REPLY => {
                if p.args.len() != 1 {
                    return self.bad_reply(&p);
                }
                let Some(piece) = self.close_piece(token, src) else {
                    return self.drop_packet();
                };
                let status = self.land_get(&piece, &p, category);
                self.settle(piece.cmd, status);
            }
            handlers::AMO_REPLY => {
                if p.args.len() != 3 || category != Category::Short {
                    return self.bad_reply(&p);
                }
                let Some(piece) = self.close_piece(token, src) else {
                    return self.drop_packet();
                };
                let status = match piece.kind {
                    PieceKind::Amo => {
                        if let Some(a) = self.active.get_mut(&piece.cmd) {
                            a.value = join(p.args[1], p.args[2]);
                        }
                        Status::Ok
                    }
                    _ => Status::Malformed,
                };
                self.settle(piece.cmd, status);
            }
            h if engine_owned(h) => self.drop_packet(),
            _ => self.answer_am(src, Status::Ok, Some((p, category))),
        }
    }

    /// A reply too malformed to use: if it names an outstanding request, that
    /// request fails with [`Status::Malformed`] rather than waiting forever.
    fn bad_reply(&mut self, p: &Packet) {
        let token = p.args.first().copied();
        match p.handler {
            handlers::ACK if token == Some(AM_TOKEN) => {
                self.answer_am(p.src, Status::Malformed, None)
            }
            handlers::ACK | handlers::GET_REPLY | handlers::AMO_REPLY => {
                match token.and_then(|t| self.close_piece(t, p.src)) {
                    Some(piece) => self.settle(piece.cmd, Status::Malformed),
                    None => self.drop_packet(),
                }
            }
            h if engine_owned(h) => self.drop_packet(),
            _ => self.answer_am(p.src, Status::Malformed, None),
        }
    }

    /// Checks a `GET_REPLY` against the piece it answers and stores its bytes.
    fn land_get(&mut self, piece: &Piece, p: &Packet, category: Category) -> Status {
        let PieceKind::Get {
            local,
            buffer_at,
            len,
        } = piece.kind
        else {
            return Status::Malformed;
        };
        let expected = if local.is_some() {
            Category::Long
        } else {
            Category::Medium
        };
        if category != expected || p.payload.len() != len {
            return Status::Malformed;
        }
        if let Some(at) = local {
            if p.offset != at {
                return Status::Malformed;
            }
            if let Err(e) = self.mem.write(at, &p.payload) {
                return e.into();
            }
        }
        if let Some(at) = buffer_at {
            if let Some(a) = self.active.get_mut(&piece.cmd) {
                a.data[at..at + len].copy_from_slice(&p.payload);
            }
        }
        Status::Ok
    }

    /// The response to the oldest AM request to `src` arrived: the engine's
    /// ACK with `status`, or a user reply to run first.
    fn answer_am(&mut self, src: NodeId, status: Status, reply: Option<(Packet, Category)>) {
        let Some(id) = self.am_waiting[src as usize].pop_front() else {
            return self.drop_packet();
        };
        self.in_flight -= 1;
        let status = match reply {
            Some((p, category)) => self.run_reply_handler(&p, category),
            None => status,
        };
        self.settle(id, status);
    }

    fn run_reply_handler(&mut self, p: &Packet, category: Category) -> Status {
        let Some(f) = self.handlers.get(p.handler) else {
            return Status::NoHandler;
        };
        if category == Category::Long {
            if let Err(e) = self.mem.write(p.offset, &p.payload) {
                return e.into();
            }
        }
        let msg = AmMessage {
            src: p.src,
            category,
            direction: Direction::Reply,
            handler: p.handler,
            args: &p.args,
            payload: &p.payload,
            offset: if category == Category::Long {
                p.offset
            } else {
                0
            },
        };
        let mut router = Router {
            id: self.id,
            outgoing: &mut self.outgoing,
            loopback: &mut self.loopback,
            counters: &mut self.counters,
        };
        f(&mut Token::new(p.src, Direction::Reply, &mut router), &msg);
        Status::Ok
    }
}

/// Checks that a remote range does not overflow 64 bits.
fn remote_range(offset: u64, len: u64) -> Result<(), SubmitError> {
    offset
        .checked_add(len)
        .map(|_| ())
        .ok_or(SubmitError::RemoteOverflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>() {}

    #[test]
    fn engine_can_move_to_a_progress_thread() {
        assert_send::<Engine<Vec<u8>>>();
    }

    #[test]
    fn tokens_wrap_around_and_never_use_the_am_token() {
        let mut e = Engine::new(0, 2, vec![0u8; 64]);
        e.next_token = u32::MAX - 1;
        for tag in 0..3 {
            let source = PutSource::Bytes(vec![1]);
            e.submit(
                tag,
                Command::Put {
                    dst: 1,
                    offset: 0,
                    source,
                },
            )
            .unwrap();
        }
        let tokens: Vec<u32> = std::iter::from_fn(|| e.next_outgoing())
            .map(|p| p.args[0])
            .collect();
        assert_eq!(tokens, vec![u32::MAX, 1, 2]);
        assert_eq!(e.in_flight, 3);
    }

    #[test]
    fn malformed_replies_to_outstanding_requests_fail_them() {
        let mut e = Engine::new(0, 2, vec![0u8; 64]);
        let cmd = Command::Get {
            dst: 1,
            offset: 0,
            len: 8,
            into: GetInto::Buffer,
        };
        e.submit(5, cmd).unwrap();
        let req = e.next_outgoing().unwrap();
        // A fragment of the reply: the transport should have reassembled it.
        let mut frag = am_packet(
            1,
            0,
            Category::Medium,
            Direction::Reply,
            handlers::GET_REPLY,
            vec![req.args[0]],
            vec![0; 4],
            0,
        );
        frag.total_len = 8;
        e.receive(frag);
        let c = e.poll_completion().unwrap();
        assert_eq!((c.tag, c.status), (5, Status::Malformed));
        assert_eq!((e.outstanding(), e.in_flight), (0, 0));

        let cmd = Command::AmRequest {
            dst: 1,
            category: Category::Short,
            handler: 64,
            args: vec![],
            payload: vec![],
            offset: 0,
        };
        e.submit(6, cmd).unwrap();
        e.next_outgoing().unwrap();
        let short_ack = am_packet(
            1,
            0,
            Category::Short,
            Direction::Reply,
            handlers::ACK,
            vec![AM_TOKEN],
            vec![],
            0,
        );
        e.receive(short_ack);
        let c = e.poll_completion().unwrap();
        assert_eq!((c.tag, c.status), (6, Status::Malformed));
        assert_eq!((e.outstanding(), e.in_flight), (0, 0));
        assert_eq!(e.counters().dropped, 0);
    }
}
