//! The board's host side: the command queue (descriptor fetch, decode and
//! start, fences, the malformed-descriptor rules) and the completion queue
//! with its phase bit (`spec/registers.md` §6–§8).

use super::*;

impl BoardModel {
    pub(super) fn read_sq(&mut self) -> bool {
        let mut did = false;
        for _ in 0..SQ_PER_STEP {
            if self.cq_backlog.len() >= cmd::CQ_ENTRIES as usize {
                self.cnt_stalls += 1;
                self.bar0
                    .reg(regs::STATUS)
                    .fetch_or(status::CQ_STALL, Ordering::AcqRel);
                return did;
            }
            if let Some((d, idx)) = self.current.take() {
                if !self.start(d, idx) {
                    self.current = Some((d, idx));
                    return did;
                }
                did = true;
                continue;
            }
            let bell = self.r(regs::DOORBELL);
            if bell >= cmd::SQ_ENTRIES {
                if self.r(regs::ERR_STATUS) & err::DOORBELL_RANGE == 0 {
                    self.set_err(err::DOORBELL_RANGE, bell);
                }
                return did;
            }
            self.w(regs::SQ_TAIL, bell);
            if self.sq_head == bell {
                return did;
            }
            let n = cmd::SQ_ENTRIES;
            let idx = self.sq_head;
            let head = self.slot(idx);
            let k = match cmd::slot_count(&head) {
                Ok(k) => k as u32,
                Err(_) => 1,
            };
            let avail = (bell + n - idx) % n;
            if avail < k {
                return did;
            }
            let next = (k == 2).then(|| self.slot((idx + 1) % n));
            self.sq_head = (idx + k) % n;
            self.w(regs::SQ_HEAD, self.sq_head);
            did = true;
            match cmd::decode_chain(&head, next.as_ref().map(|s| &s[..])) {
                Ok(d) => {
                    if !self.start(d, idx as u16) {
                        self.current = Some((d, idx as u16));
                        return did;
                    }
                }
                Err(e) => {
                    let c = Completion::rejected(&head, idx as u16, false, &e);
                    self.cnt_errors += 1;
                    self.push_completion(c);
                }
            }
        }
        self.bar0
            .reg(regs::STATUS)
            .fetch_and(!status::CQ_STALL, Ordering::AcqRel);
        did
    }

    pub(super) fn slot(&self, idx: u32) -> [u8; SLOT_BYTES] {
        let mut s = [0u8; SLOT_BYTES];
        // SAFETY: the slot lies in BAR0's command ring; the doorbell covered
        // it, so the host finished writing it (its stores precede the
        // doorbell, read with Acquire).
        unsafe {
            std::ptr::copy(
                self.bar0
                    .ptr()
                    .add(regs::SQ_RING + SLOT_BYTES * idx as usize),
                s.as_mut_ptr(),
                SLOT_BYTES,
            )
        };
        s
    }

    pub(super) fn quiet(&self) -> bool {
        self.engine.as_ref().is_none_or(|e| e.outstanding() == 0)
            && !self.pending.values().any(|p| p.compute.is_none())
    }

    /// Starts a descriptor; `false` when it must wait (fence, AM order, a
    /// full engine).
    pub(super) fn start(&mut self, d: Descriptor, idx: u16) -> bool {
        let Some(cfg) = self.cfg else { return false };
        let common = *d.common();
        let fence = matches!(d, Descriptor::Fence { .. }) || common.fence_before;
        if fence && !self.quiet() {
            return false;
        }
        let pend = |bytes: u32, target: NodeId| Pending {
            tag: common.tag,
            opcode: d.opcode(),
            target,
            sq_index: idx,
            completion: common.completion,
            bytes,
            local: 0,
            compute: None,
        };
        let target = match d {
            Descriptor::Put { target, .. }
            | Descriptor::Get { target, .. }
            | Descriptor::Am { target, .. }
            | Descriptor::Amo { target, .. } => target,
            _ => 0,
        };
        if target as u32 >= cfg.nodes {
            self.reject(&d, idx, Status::BadTarget, target as u32);
            return true;
        }
        let local_ok = |l: Local, len: u32| match l {
            Local::Iova(_) => Err((Status::Unsupported, cmd::flags::LOCAL_IOVA as u32)),
            Local::Segment(o) => match o.checked_add(len as u64) {
                Some(end) if end <= cfg.seg_size => Ok(o),
                _ => Err((Status::OutOfRange, o as u32)),
            },
        };
        let command = match d {
            Descriptor::Nop { .. } | Descriptor::Fence { .. } => {
                self.complete(pend(0, 0), Status::Ok, 0, 0);
                return true;
            }
            Descriptor::Put {
                target,
                remote,
                source,
                ..
            } => {
                let (source, len) = match source {
                    cmd::PutSource::Inline(i) => {
                        let mut b = i.as_slice().to_vec();
                        if self.fault == Fault::InlinePut && !b.is_empty() {
                            b[0] ^= 0xFF;
                        }
                        (PutSource::Bytes(b), i.len() as u32)
                    }
                    cmd::PutSource::Local { addr, len } => match local_ok(addr, len) {
                        Err((s, det)) => {
                            self.reject(&d, idx, s, det);
                            return true;
                        }
                        Ok(o) if self.fault == Fault::SegmentPut && len > 0 => {
                            let mut b = vec![0u8; len as usize];
                            let _ = self.seg().map(|m| m.read(o, &mut b));
                            b[0] ^= 0xFF;
                            (PutSource::Bytes(b), len)
                        }
                        Ok(o) => (
                            PutSource::Local {
                                offset: o,
                                len: len as u64,
                            },
                            len,
                        ),
                    },
                };
                (
                    Command::Put {
                        dst: target,
                        offset: remote,
                        source,
                    },
                    len,
                )
            }
            Descriptor::Get {
                target,
                remote,
                local,
                len,
                ..
            } => match local_ok(local, len) {
                Err((s, det)) => {
                    self.reject(&d, idx, s, det);
                    return true;
                }
                Ok(o) => (
                    Command::Get {
                        dst: target,
                        offset: remote,
                        len: len as u64,
                        into: GetInto::Segment(o),
                    },
                    len,
                ),
            },
            Descriptor::Amo {
                target,
                op,
                width,
                remote,
                operand,
                compare,
                ..
            } => (
                Command::Amo {
                    dst: target,
                    op,
                    width,
                    offset: remote,
                    operand,
                    compare,
                },
                0,
            ),
            Descriptor::Am {
                target,
                direction,
                handler,
                args,
                body,
                ..
            } => return self.start_am(d, idx, target, direction, handler, args, body),
        };
        let (command, bytes) = command;
        let tag = self.fresh_tag();
        match self.engine.as_mut().map(|e| e.submit(tag, command)) {
            Some(Ok(())) => {
                let local = match d {
                    Descriptor::Get {
                        local: Local::Segment(o),
                        ..
                    } => o,
                    _ => 0,
                };
                let mut p = pend(bytes, target);
                p.local = local;
                self.pending.insert(tag, p);
            }
            // The engine holds as many commands as it can: the descriptor
            // stays in the command ring until one completes, and the host
            // sees a full ring (back-pressure, `spec/registers.md` §6).
            Some(Err(engine::SubmitError::QueueFull)) => return false,
            Some(Err(e)) => {
                let (s, det) = match e {
                    engine::SubmitError::BadNode(n) => (Status::BadTarget, n as u32),
                    engine::SubmitError::LocalOutOfRange { offset, .. } => {
                        (Status::OutOfRange, offset as u32)
                    }
                    engine::SubmitError::RemoteOverflow => (Status::OutOfRange, 0),
                    _ => (Status::Unsupported, 0),
                };
                self.reject(&d, idx, s, det);
            }
            None => return false,
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_am(
        &mut self,
        d: Descriptor,
        idx: u16,
        target: NodeId,
        direction: Direction,
        handler: u8,
        args: cmd::Args,
        body: AmBody,
    ) -> bool {
        let busy = self.engine.as_ref().is_some_and(|e| e.outstanding() > 0);
        if busy && !self.marker_passed {
            if self.marker.is_none() {
                let tag = MARKER_TAG + self.fresh_tag();
                if let Some(e) = self.engine.as_mut()
                    && e.submit(tag, Command::Nop).is_ok()
                {
                    self.marker = Some(tag);
                }
                self.drain_engine();
            }
            if !self.marker_passed {
                return false;
            }
        }
        self.marker_passed = false;
        self.drain_engine();
        let Some(cfg) = self.cfg else { return false };
        let (category, payload, remote) = match body {
            AmBody::Short => (Category::Short, Vec::new(), 0),
            AmBody::Medium { local, len } | AmBody::Long { local, len, .. } => {
                let o = match local {
                    Local::Iova(_) => {
                        self.reject(&d, idx, Status::Unsupported, cmd::flags::LOCAL_IOVA as u32);
                        return true;
                    }
                    Local::Segment(o) => o,
                };
                if o.checked_add(len as u64).is_none_or(|e| e > cfg.seg_size) {
                    self.reject(&d, idx, Status::OutOfRange, o as u32);
                    return true;
                }
                let mut b = vec![0u8; len as usize];
                let _ = self.seg().map(|m| m.read(o, &mut b));
                match body {
                    AmBody::Long { remote, .. } => (Category::Long, b, remote),
                    _ => (Category::Medium, b, 0),
                }
            }
        };
        let len = payload.len() as u32;
        self.send_am(
            target,
            category,
            direction,
            handler,
            args.as_slice().to_vec(),
            payload,
            remote,
        );
        let p = Pending {
            tag: d.common().tag,
            opcode: d.opcode(),
            target,
            sq_index: idx,
            completion: d.common().completion,
            bytes: len,
            local: 0,
            compute: None,
        };
        self.complete(p, Status::Ok, 0, 0);
        true
    }

    pub(super) fn reject(&mut self, d: &Descriptor, idx: u16, s: Status, detail: u32) {
        let target = match *d {
            Descriptor::Put { target, .. }
            | Descriptor::Get { target, .. }
            | Descriptor::Am { target, .. }
            | Descriptor::Amo { target, .. } => target,
            _ => 0,
        };
        let p = Pending {
            tag: d.common().tag,
            opcode: d.opcode(),
            target,
            sq_index: idx,
            completion: true,
            bytes: 0,
            local: 0,
            compute: None,
        };
        self.complete(p, s, 0, detail);
    }

    pub(super) fn complete(&mut self, p: Pending, s: Status, value: u64, detail: u32) {
        self.cnt_commands += 1;
        if !s.is_ok() {
            self.cnt_errors += 1;
        } else if !p.completion {
            return;
        }
        if s.is_ok()
            && p.opcode == cmd::opcode::GET
            && self.fault == Fault::GetData
            && let (Some(m), true) = (self.seg(), p.bytes > 0)
        {
            let mut b = [0u8; 1];
            let _ = m.read(p.local, &mut b);
            let _ = m.write_shared(p.local, &[b[0] ^ 0xFF]);
        }
        self.push_completion(Completion {
            tag: p.tag,
            status: s,
            opcode: p.opcode,
            target: p.target,
            value,
            bytes: if s.is_ok() { p.bytes } else { 0 },
            detail,
            sq_index: p.sq_index,
            phase: false,
        });
    }

    pub(super) fn push_completion(&mut self, c: Completion) {
        self.cq_backlog.push_back(c);
        self.flush_cq();
    }

    pub(super) fn flush_cq(&mut self) -> bool {
        let mut did = false;
        while let Some(mut c) = self.cq_backlog.pop_front() {
            let head = self.r(regs::CQ_HEAD) % cmd::CQ_ENTRIES;
            if (self.cq_tail + 1) % cmd::CQ_ENTRIES == head {
                self.cq_backlog.push_front(c);
                self.cnt_stalls += 1;
                break;
            }
            c.phase = self.cq_phase;
            let b = c.encode();
            let at = regs::CQ_RING + COMPLETION_BYTES * self.cq_tail as usize;
            // SAFETY: the entry lies in BAR0's completion ring and the host
            // freed it (checked above); the phase word is stored last.
            unsafe { std::ptr::copy(b.as_ptr(), self.bar0.ptr().add(at), 28) };
            let w = u32::from_le_bytes([b[28], b[29], b[30], b[31]]);
            self.bar0.write32(at + 28, w);
            self.cq_tail = (self.cq_tail + 1) % cmd::CQ_ENTRIES;
            if self.cq_tail == 0 {
                self.cq_phase = !self.cq_phase;
            }
            self.w(regs::CQ_TAIL, self.cq_tail);
            self.bar0
                .reg(regs::IRQ_STATUS)
                .fetch_or(cmd::irq::CQ, Ordering::AcqRel);
            did = true;
        }
        did
    }
}
