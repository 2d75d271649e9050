//! The receive handler: requests served against the local segment, other
//! handlers dispatched through the handler table, replies matched to
//! outstanding pieces, and malformed or unexpected packets counted and
//! dropped or rejected.

use super::*;

impl<M: Memory> Engine<M> {
    pub(super) fn drop_packet(&mut self) {
        self.counters.dropped += 1;
    }

    pub(super) fn handle(&mut self, p: Packet) {
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
    pub(super) fn ack(&mut self, dst: NodeId, token: u32, status: Status) {
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
    pub(super) fn reject(&mut self, p: &Packet, status: Status) {
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

    pub(super) fn serve(&mut self, p: Packet, category: Category) {
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
                crate::pool::give(p.payload);
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
                let mut bytes = crate::pool::zeroed(g.len as usize);
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
    pub(super) fn serve_am(&mut self, p: Packet, category: Category) {
        self.counters.requests_served += 1;
        let Some(f) = self.handlers.get(p.handler) else {
            return self.ack(p.src, AM_TOKEN, Status::NoHandler);
        };
        if category == Category::Long
            && let Err(e) = self.mem.write(p.offset, &p.payload)
        {
            return self.ack(p.src, AM_TOKEN, e.into());
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

    pub(super) fn take_reply(&mut self, p: Packet, category: Category) {
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
                crate::pool::give(p.payload);
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
    pub(super) fn bad_reply(&mut self, p: &Packet) {
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
    pub(super) fn land_get(&mut self, piece: &Piece, p: &Packet, category: Category) -> Status {
        let PieceKind::Get {
            local,
            buffer_at,
            len,
            long,
        } = piece.kind
        else {
            return Status::Malformed;
        };
        let expected = if long {
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
        if let Some(at) = buffer_at
            && let Some(a) = self.active.get_mut(&piece.cmd)
        {
            a.data[at..at + len].copy_from_slice(&p.payload);
        }
        Status::Ok
    }

    /// The response to the oldest AM request to `src` arrived: the engine's
    /// ACK with `status`, or a user reply to run first.
    pub(super) fn answer_am(
        &mut self,
        src: NodeId,
        status: Status,
        reply: Option<(Packet, Category)>,
    ) {
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

    pub(super) fn run_reply_handler(&mut self, p: &Packet, category: Category) -> Status {
        let Some(f) = self.handlers.get(p.handler) else {
            return Status::NoHandler;
        };
        if category == Category::Long
            && let Err(e) = self.mem.write(p.offset, &p.payload)
        {
            return e.into();
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
