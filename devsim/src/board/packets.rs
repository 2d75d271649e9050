//! The board's link side: packets in (system handlers to the engine, user
//! AMs to the receive queue, compute requests to the compute core), AMs out,
//! the engine's packets and completions, and the compute core's actions.

use super::*;

impl BoardModel {
    pub(super) fn on_packet(&mut self, p: Packet) {
        if self.engine.is_none() {
            self.held.push_back(p);
            return;
        }
        let PacketType::Am {
            category,
            direction,
        } = p.ptype
        else {
            return;
        };
        if engine_owned(p.handler) {
            if let Some(e) = self.engine.as_mut() {
                e.receive(p);
            }
            return;
        }
        self.cnt_am_rx += 1;
        self.cnt_am_bytes_rx += p.payload.len() as u64;
        let whole = p.frag_offset == 0 && p.total_len as usize == p.payload.len();
        if !whole || check_shape(category, p.args.len(), p.payload.len()).is_err() {
            self.set_err(err::BAD_PACKET, 0);
            return;
        }
        if p.handler >= FIRST_COMPUTE && direction == Direction::Request && self.compute.is_some() {
            let Some(mem) = self.seg() else { return };
            let cfg = self.cfg.unwrap_or(Cfg {
                node: 0,
                nodes: 1,
                seg_base: 0,
                seg_size: 0,
                rx_bounce: 0,
            });
            let mut ctx = ComputeCtx {
                mem,
                node: cfg.node as NodeId,
                nodes: cfg.nodes as usize,
                actions: &mut self.actions,
            };
            if let Some(core) = self.compute.as_mut() {
                core.request(&mut ctx, p.src, p.handler, &p.args);
            }
            self.apply_actions();
            return;
        }
        if category == Category::Long {
            let ok = self
                .seg()
                .is_some_and(|m| m.write_shared(p.offset, &p.payload).is_ok());
            if !ok {
                self.set_err(err::BAD_PACKET, p.src as u32);
                return;
            }
        }
        self.rq_backlog.push_back(p);
        self.flush_rq();
    }

    pub(super) fn flush_rq(&mut self) -> bool {
        let mut did = false;
        let Some(cfg) = self.cfg else { return false };
        while !self.rq_backlog.is_empty() {
            let head = self.r(regs::RQ_HEAD) % cmd::RQ_ENTRIES;
            if (self.rq_tail + 1) % cmd::RQ_ENTRIES == head {
                self.bar0
                    .reg(regs::STATUS)
                    .fetch_or(status::RQ_STALL, Ordering::AcqRel);
                self.cnt_stalls += 1;
                return did;
            }
            let Some(p) = self.rq_backlog.pop_front() else {
                break;
            };
            let PacketType::Am {
                category,
                direction,
            } = p.ptype
            else {
                continue;
            };
            let slot = self.rq_tail;
            let addr = match category {
                Category::Short => 0,
                Category::Medium => {
                    let at = cfg.rx_bounce + cmd::RX_BOUNCE_BYTES * slot as u64;
                    // SAFETY: the bounce area lies in the window (checked at
                    // enable) and a Medium payload is at most 4096 bytes.
                    unsafe {
                        std::ptr::copy(
                            p.payload.as_ptr(),
                            self.bar2.ptr().add(at as usize),
                            p.payload.len(),
                        )
                    };
                    at
                }
                Category::Long => p.offset,
            };
            let Ok(args) = cmd::Args::new(&p.args) else {
                continue;
            };
            let e = RxEntry {
                src: p.src,
                direction,
                category,
                handler: p.handler,
                args,
                len: p.payload.len() as u32,
                addr,
                phase: self.rq_phase,
            };
            let bytes = e.encode();
            let at = regs::RQ_RING + RX_ENTRY_BYTES * slot as usize;
            // SAFETY: the entry lies in BAR0's receive ring; the host does not
            // read it until its phase byte changes, which the atomic store
            // below does last.
            unsafe {
                let dst = self.bar0.ptr().add(at);
                std::ptr::copy(bytes.as_ptr().add(4), dst.add(4), RX_ENTRY_BYTES - 4);
            }
            let w0 = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            self.bar0.write32(at, w0);
            self.rq_tail = (self.rq_tail + 1) % cmd::RQ_ENTRIES;
            if self.rq_tail == 0 {
                self.rq_phase = !self.rq_phase;
            }
            self.w(regs::RQ_TAIL, self.rq_tail);
            self.bar0
                .reg(regs::IRQ_STATUS)
                .fetch_or(cmd::irq::RQ, Ordering::AcqRel);
            did = true;
        }
        self.bar0
            .reg(regs::STATUS)
            .fetch_and(!status::RQ_STALL, Ordering::AcqRel);
        did
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_am(
        &mut self,
        dst: NodeId,
        category: Category,
        direction: Direction,
        handler: u8,
        args: Vec<u32>,
        payload: Vec<u8>,
        offset: u64,
    ) {
        let me = self.cfg.map(|c| c.node as NodeId).unwrap_or(0);
        let p = Packet {
            ptype: PacketType::Am {
                category,
                direction,
            },
            src: me,
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
        };
        if dst == me {
            self.on_packet(p);
        } else {
            self.cnt_am_tx += 1;
            self.cnt_am_bytes_tx += p.payload.len() as u64;
            if self.link.send(&p).is_err() {
                self.set_err(err::LINK0_DOWN << (dst % 2), dst as u32 % 2);
            }
        }
    }

    pub(super) fn drain_engine(&mut self) -> bool {
        let mut did = false;
        loop {
            let Some(e) = self.engine.as_mut() else {
                return did;
            };
            let Some(p) = e.next_outgoing() else { break };
            did = true;
            if self.link.send(&p).is_err() {
                self.set_err(err::LINK0_DOWN << (p.dst % 2), p.dst as u32 % 2);
            }
        }
        loop {
            let Some(e) = self.engine.as_mut() else {
                return did;
            };
            let Some(c) = e.poll_completion() else { break };
            did = true;
            if Some(c.tag) == self.marker {
                self.marker = None;
                self.marker_passed = true;
                continue;
            }
            let Some(p) = self.pending.remove(&c.tag) else {
                continue;
            };
            if let Some(id) = p.compute {
                if let Some(mem) = self.seg() {
                    let cfg = self.cfg.unwrap_or(Cfg {
                        node: 0,
                        nodes: 1,
                        seg_base: 0,
                        seg_size: 0,
                        rx_bounce: 0,
                    });
                    let mut ctx = ComputeCtx {
                        mem,
                        node: cfg.node as NodeId,
                        nodes: cfg.nodes as usize,
                        actions: &mut self.actions,
                    };
                    if let Some(core) = self.compute.as_mut() {
                        core.put_done(&mut ctx, id, c.status.is_ok());
                    }
                }
                self.apply_actions();
                continue;
            }
            let (st, detail) = map_status(c.status);
            let value = if self.fault == Fault::Atomic && p.opcode == cmd::opcode::AMO {
                c.value ^ 1
            } else {
                c.value
            };
            self.complete(p, st, value, detail);
        }
        did
    }

    pub(super) fn run_compute(&mut self) -> bool {
        if !self.compute.as_ref().is_some_and(|c| c.busy()) {
            return false;
        }
        let Some(mem) = self.seg() else { return false };
        let Some(cfg) = self.cfg else { return false };
        let mut ctx = ComputeCtx {
            mem,
            node: cfg.node as NodeId,
            nodes: cfg.nodes as usize,
            actions: &mut self.actions,
        };
        let did = self.compute.as_mut().is_some_and(|c| c.step(&mut ctx));
        self.apply_actions();
        did
    }

    pub(super) fn apply_actions(&mut self) {
        let actions = std::mem::take(&mut self.actions);
        for a in actions {
            match a {
                Action::Put {
                    id,
                    dst,
                    offset,
                    local,
                    len,
                } => {
                    let tag = self.fresh_tag();
                    let cmd = Command::Put {
                        dst,
                        offset,
                        source: PutSource::Local {
                            offset: local,
                            len: len as u64,
                        },
                    };
                    let ok = self
                        .engine
                        .as_mut()
                        .is_some_and(|e| e.submit(tag, cmd).is_ok());
                    if ok {
                        self.pending.insert(
                            tag,
                            Pending {
                                tag: 0,
                                opcode: cmd::opcode::PUT,
                                target: dst,
                                sq_index: 0,
                                completion: false,
                                bytes: len,
                                local: 0,
                                compute: Some(id),
                            },
                        );
                    } else if let Some(mem) = self.seg() {
                        let mut ctx = ComputeCtx {
                            mem,
                            node: self.cfg.map(|c| c.node as NodeId).unwrap_or(0),
                            nodes: self.cfg.map(|c| c.nodes as usize).unwrap_or(1),
                            actions: &mut self.actions,
                        };
                        if let Some(core) = self.compute.as_mut() {
                            core.put_done(&mut ctx, id, false);
                        }
                    }
                }
                Action::Reply { dst, handler, args } => {
                    self.send_am(
                        dst,
                        Category::Short,
                        Direction::Reply,
                        handler,
                        args,
                        Vec::new(),
                        0,
                    );
                }
                Action::Reject(r) => {
                    crate::report(&format!(
                        "devsim board {}: the compute core dropped {r} (ERR_STATUS.COMPUTE)",
                        self.strap_node
                    ));
                    self.set_err(err::COMPUTE, r.info());
                }
            }
        }
        if !self.actions.is_empty() {
            self.apply_actions();
        }
    }

    pub(super) fn fresh_tag(&mut self) -> u64 {
        self.next_tag += 1;
        self.next_tag
    }
}
