//! The reference board: what a board does with descriptors and packets,
//! stated with the reference engine of gasnet-core and the rules the board
//! model (devsim) applies around it. Put, Get and Atomic descriptors become
//! engine commands; AM descriptors are sent as packets by the board itself
//! and complete at once; incoming AMs for host handlers become receive
//! entries; remote failures complete as RemoteError with the target's
//! reason in `detail` (spec/registers.md section 8.1). The network is
//! instant: callers move packets with [`RefNet::pump`].

#![allow(dead_code)]

use gasnet_core::cmd::{self, AmBody, Completion, Descriptor, Local, Status};
use gasnet_core::engine::layout::engine_owned;
use gasnet_core::engine::{self, Command, Config, Engine, GetInto, Memory, PutSource};
use gasnet_core::wire::{Packet, PacketType};
use gasnet_core::{Category, Direction, NodeId};
use std::collections::{HashMap, VecDeque};

use super::SEG_SIZE;

/// A receive entry as the reference delivers it, with its payload.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Delivered {
    pub src: NodeId,
    pub kind: u8,
    pub handler: u8,
    pub args: Vec<u32>,
    pub len: u32,
    /// Long: the segment offset; Medium and Short: 0 (slots differ by timing).
    pub offset: u64,
    /// Medium: the payload from the bounce buffer; else empty.
    pub payload: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    tag: u32,
    opcode: u8,
    target: NodeId,
    sq_index: u16,
    completion: bool,
    bytes: u32,
}

pub struct RefBoard {
    pub node: NodeId,
    pub nodes: u16,
    pub engine: Engine<Vec<u8>>,
    /// Completions in the order written, phase bit cleared.
    pub completions: Vec<Completion>,
    pub delivered: Vec<Delivered>,
    pub out: VecDeque<Packet>,
    pending: HashMap<u64, Pending>,
    next_tag: u64,
}

fn kind(direction: Direction, category: Category) -> u8 {
    let r = if direction == Direction::Reply { 8 } else { 0 };
    let c = match category {
        Category::Short => 0,
        Category::Medium => 1,
        Category::Long => 2,
    };
    0x10 | r | c
}

/// spec/registers.md 8.1: a remote failure's completion.
fn map_status(s: engine::Status) -> (Status, u32) {
    match s {
        engine::Status::Ok => (Status::Ok, 0),
        engine::Status::OutOfRange => (Status::RemoteError, Status::OutOfRange.code() as u32),
        engine::Status::Misaligned => (Status::RemoteError, Status::Misaligned.code() as u32),
        engine::Status::NoHandler => (Status::RemoteError, Status::BadHandler.code() as u32),
        engine::Status::Malformed => (Status::RemoteError, Status::Unsupported.code() as u32),
    }
}

impl RefBoard {
    pub fn new(node: NodeId, nodes: u16, segment: Vec<u8>) -> RefBoard {
        assert_eq!(segment.len() as u64, SEG_SIZE);
        let config = Config {
            max_in_flight: 1 << 20,
            queue_depth: 1 << 20,
        };
        RefBoard {
            node,
            nodes,
            engine: Engine::with_config(node, nodes as usize, segment, config),
            completions: Vec::new(),
            delivered: Vec::new(),
            out: VecDeque::new(),
            pending: HashMap::new(),
            next_tag: 1,
        }
    }

    pub fn segment(&self) -> &[u8] {
        self.engine.memory()
    }

    fn complete(&mut self, p: Pending, s: Status, value: u64, detail: u32) {
        if s.is_ok() && !p.completion {
            return;
        }
        self.completions.push(Completion {
            tag: p.tag,
            status: s,
            opcode: p.opcode,
            target: p.target,
            value: if s.is_ok() { value } else { 0 },
            bytes: if s.is_ok() { p.bytes } else { 0 },
            detail,
            sq_index: p.sq_index,
            phase: false,
        });
    }

    /// A descriptor read from slot `sq_index` (and its continuation).
    pub fn submit(&mut self, head: &[u8; 64], cont: Option<&[u8; 64]>, sq_index: u16) {
        let d = match cmd::decode_chain(head, cont.map(|c| &c[..])) {
            Ok(d) => d,
            Err(e) => {
                self.completions
                    .push(Completion::rejected(head, sq_index, false, &e));
                return;
            }
        };
        let common = *d.common();
        let target = match d {
            Descriptor::Put { target, .. }
            | Descriptor::Get { target, .. }
            | Descriptor::Am { target, .. }
            | Descriptor::Amo { target, .. } => target,
            _ => 0,
        };
        let mut p = Pending {
            tag: common.tag,
            opcode: d.opcode(),
            target,
            sq_index,
            completion: common.completion,
            bytes: 0,
        };
        if target >= self.nodes {
            return self.complete(p, Status::BadTarget, 0, target as u32);
        }
        let local_ok = |l: Local, len: u32| match l {
            Local::Iova(_) => Err((Status::Unsupported, cmd::flags::LOCAL_IOVA as u32)),
            Local::Segment(o) => match o.checked_add(len as u64) {
                Some(end) if end <= SEG_SIZE => Ok(o),
                _ => Err((Status::OutOfRange, o as u32)),
            },
        };
        let command = match d {
            Descriptor::Nop { .. } | Descriptor::Fence { .. } => {
                return self.complete(p, Status::Ok, 0, 0);
            }
            Descriptor::Put { remote, source, .. } => match source {
                cmd::PutSource::Inline(i) => {
                    p.bytes = i.len() as u32;
                    Command::Put {
                        dst: target,
                        offset: remote,
                        source: PutSource::Bytes(i.as_slice().to_vec()),
                    }
                }
                cmd::PutSource::Local { addr, len } => match local_ok(addr, len) {
                    Err((s, det)) => return self.complete(p, s, 0, det),
                    Ok(o) => {
                        p.bytes = len;
                        Command::Put {
                            dst: target,
                            offset: remote,
                            source: PutSource::Local {
                                offset: o,
                                len: len as u64,
                            },
                        }
                    }
                },
            },
            Descriptor::Get {
                remote, local, len, ..
            } => match local_ok(local, len) {
                Err((s, det)) => return self.complete(p, s, 0, det),
                Ok(o) => {
                    p.bytes = len;
                    Command::Get {
                        dst: target,
                        offset: remote,
                        len: len as u64,
                        into: GetInto::Segment(o),
                    }
                }
            },
            Descriptor::Amo {
                op,
                width,
                remote,
                operand,
                compare,
                ..
            } => Command::Amo {
                dst: target,
                op,
                width,
                offset: remote,
                operand,
                compare,
            },
            Descriptor::Am {
                direction,
                handler,
                args,
                body,
                ..
            } => {
                let (category, payload, remote) = match body {
                    AmBody::Short => (Category::Short, Vec::new(), 0),
                    AmBody::Medium { local, len } | AmBody::Long { local, len, .. } => {
                        let o = match local_ok(local, len) {
                            Err((s, det)) => return self.complete(p, s, 0, det),
                            Ok(o) => o,
                        };
                        let mut b = vec![0u8; len as usize];
                        self.engine.memory().read(o, &mut b).expect("in range");
                        match body {
                            AmBody::Long { remote, .. } => (Category::Long, b, remote),
                            _ => (Category::Medium, b, 0),
                        }
                    }
                };
                p.bytes = payload.len() as u32;
                let packet = Packet {
                    ptype: PacketType::Am {
                        category,
                        direction,
                    },
                    src: self.node,
                    dst: target,
                    flags: 0,
                    handler,
                    args: args.as_slice().to_vec(),
                    offset: if category == Category::Long {
                        remote
                    } else {
                        0
                    },
                    seq: 0,
                    ack: 0,
                    frag_offset: 0,
                    total_len: payload.len() as u32,
                    payload,
                };
                if target == self.node {
                    self.receive(packet);
                } else {
                    self.out.push_back(packet);
                }
                return self.complete(p, Status::Ok, 0, 0);
            }
        };
        let tag = self.next_tag;
        self.next_tag += 1;
        match self.engine.submit(tag, command) {
            Ok(()) => {
                self.pending.insert(tag, p);
            }
            Err(engine::SubmitError::RemoteOverflow) => self.complete(p, Status::OutOfRange, 0, 0),
            Err(e) => panic!("the reference engine refused a checked command: {e}"),
        }
        self.drain_engine();
    }

    /// A packet from the network.
    pub fn receive(&mut self, p: Packet) {
        let PacketType::Am {
            category,
            direction,
        } = p.ptype
        else {
            return;
        };
        if engine_owned(p.handler) {
            self.engine.receive(p);
            self.drain_engine();
            return;
        }
        let mut offset = 0;
        let mut payload = Vec::new();
        match category {
            Category::Short => {}
            Category::Medium => payload = p.payload.clone(),
            Category::Long => {
                if self
                    .engine
                    .memory_mut()
                    .write(p.offset, &p.payload)
                    .is_err()
                {
                    return;
                }
                offset = p.offset;
            }
        }
        self.delivered.push(Delivered {
            src: p.src,
            kind: kind(direction, category),
            handler: p.handler,
            args: p.args.clone(),
            len: p.payload.len() as u32,
            offset,
            payload,
        });
    }

    fn drain_engine(&mut self) {
        while let Some(p) = self.engine.next_outgoing() {
            self.out.push_back(p);
        }
        while let Some(c) = self.engine.poll_completion() {
            let Some(p) = self.pending.remove(&c.tag) else {
                continue;
            };
            let (s, det) = map_status(c.status);
            self.complete(p, s, c.value, det);
        }
    }
}

/// Reference boards joined by an instant, in-order network.
pub struct RefNet {
    pub boards: Vec<RefBoard>,
    /// Every packet that crossed the network, in order: (src, dst, packet).
    pub wire: Vec<Packet>,
}

impl RefNet {
    pub fn new(segments: Vec<Vec<u8>>) -> RefNet {
        let n = segments.len() as u16;
        RefNet {
            boards: segments
                .into_iter()
                .enumerate()
                .map(|(i, s)| RefBoard::new(i as NodeId, n, s))
                .collect(),
            wire: Vec::new(),
        }
    }

    /// Moves packets until none is left.
    pub fn pump(&mut self) {
        loop {
            let mut moved = false;
            for i in 0..self.boards.len() {
                while let Some(p) = self.boards[i].out.pop_front() {
                    moved = true;
                    self.wire.push(p.clone());
                    let d = p.dst as usize;
                    self.boards[d].receive(p);
                }
            }
            if !moved {
                return;
            }
        }
    }
}
