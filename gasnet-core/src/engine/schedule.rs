//! The scheduler and the AM sequencer: commands leave the queue strictly
//! in submission order, split into pieces within the window of requests
//! awaiting a response, each piece a packet naming a system handler or
//! the user's; completions are recorded when every piece is answered.

use super::*;

impl<M: Memory> Engine<M> {
    pub(super) fn schedule(&mut self) {
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

    pub(super) fn has_window(&self) -> bool {
        self.in_flight < self.config.max_in_flight
    }

    /// Sends as many of `q`'s pieces as the window allows; true when all
    /// are sent (or issuing stopped on an error).
    pub(super) fn issue(&mut self, q: &mut Queued) -> bool {
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
                            match self.mem.read_vec(*offset + at, n) {
                                Ok(v) => v,
                                Err(e) => {
                                    self.record(id, e.into());
                                    return true;
                                }
                            }
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
                let max = if into.long() { MAX_LONG } else { MAX_MEDIUM };
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
                        long: into.long(),
                    };
                    let token = self.open_piece(id, dst, kind);
                    let args = GetArgs {
                        token,
                        offset: base + at,
                        len: n as u32,
                        reply_at: if into.long() { local.or(Some(0)) } else { None },
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
    pub(super) fn open_piece(&mut self, cmd: u64, peer: NodeId, kind: PieceKind) -> u32 {
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
    pub(super) fn close_piece(&mut self, token: u32, peer: NodeId) -> Option<Piece> {
        if self.pieces.get(&token)?.peer != peer {
            return None;
        }
        self.in_flight -= 1;
        self.pieces.remove(&token)
    }

    /// Notes `status` against command `id`, keeping the first error.
    pub(super) fn record(&mut self, id: u64, status: Status) {
        if let Some(a) = self.active.get_mut(&id)
            && a.status.is_ok()
        {
            a.status = status;
        }
    }

    /// One of command `id`'s requests was answered with `status`.
    pub(super) fn settle(&mut self, id: u64, status: Status) {
        self.record(id, status);
        if let Some(a) = self.active.get_mut(&id) {
            a.pending = a.pending.saturating_sub(1);
        }
        self.finish_if_done(id);
    }

    pub(super) fn finish_if_done(&mut self, id: u64) {
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
}
