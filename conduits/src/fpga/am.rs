//! Active messages on a board: AM descriptors out (payloads staged),
//! receive-queue entries in, handlers run from `poll`, replies as AM reply
//! descriptors.

use super::*;

/// One received active message, copied out of the receive queue.
#[derive(Debug)]
pub(super) struct RxMsg {
    pub(super) entry: RxEntry,
    pub(super) payload: Vec<u8>,
}

/// Sends a handler's reply as an AM reply descriptor.
pub(super) struct Replier<'a> {
    c: &'a FpgaConduit,
}

impl ReplySink for Replier<'_> {
    fn send_reply(
        &mut self,
        dst: NodeId,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> std::result::Result<(), AmError> {
        self.c
            .send_am(
                dst as usize,
                Direction::Reply,
                category,
                handler,
                args,
                payload,
                offset,
            )
            .map_err(|e| AmError::Transport(e.to_string()))
    }
}

impl FpgaConduit {
    /// Sends an AM descriptor (request or reply); payload staged.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_am(
        &self,
        pe: usize,
        direction: Direction,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> Result<()> {
        gasnet_core::am::check_shape(category, args.len(), payload.len())?;
        if handler == 0 || engine_owned(handler) {
            return Err(AmError::ReservedIndex(handler).into());
        }
        let args = Args::new(args).map_err(|_| AmError::TooManyArgs(args.len()))?;
        let mut h = self.lock();
        let tag = Self::fresh_tag(&mut h);
        let body = match category {
            Category::Short => AmBody::Short,
            _ => {
                let (id, st) = self.stage(&mut h, payload.len())?;
                // SAFETY: the staging slice is ours until this AM completes.
                unsafe {
                    std::ptr::copy_nonoverlapping(payload.as_ptr(), self.win(st), payload.len())
                };
                h.expect(CtxId::DEFAULT, tag, Waiter::Free(id));
                let local = Local::Segment(st);
                let len = payload.len() as u32;
                if category == Category::Long {
                    AmBody::Long {
                        local,
                        len,
                        remote: offset,
                    }
                } else {
                    AmBody::Medium { local, len }
                }
            }
        };
        let d = Descriptor::Am {
            common: Self::common(tag, category != Category::Short),
            target: pe as NodeId,
            direction,
            handler,
            args,
            body,
        };
        self.submit(&mut h, &d)
    }

    /// Copies every receive entry into the software queue and frees it.
    pub(super) fn drain_rq(&self) {
        let mut got = Vec::new();
        {
            let mut h = self.lock();
            while let Some((_, r)) = h.rings.peek_rq(&self.board.bar0) {
                if let Ok(e) = r {
                    let mut payload = vec![0u8; e.len as usize];
                    let from = match e.category {
                        Category::Short => None,
                        // Medium: a BAR2 offset; Long: a segment offset
                        // (the same thing, SEG_BASE being 0).
                        _ => Some(e.addr),
                    };
                    if let Some(from) = from
                        && from
                            .checked_add(e.len as u64)
                            .is_some_and(|end| end <= self.layout.window)
                    {
                        // SAFETY: the range lies in the window (checked);
                        // the bounce buffer is ours until free_rq.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                self.win(from),
                                payload.as_mut_ptr(),
                                payload.len(),
                            )
                        };
                    }
                    got.push(RxMsg { entry: e, payload });
                }
                h.rings.free_rq(&self.board.bar0);
            }
        }
        if !got.is_empty() {
            self.rx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(got);
        }
    }

    /// Runs queued handlers (not re-entrantly).
    pub(super) fn dispatch(&self) {
        if self
            .dispatching
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        loop {
            let m = self
                .rx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front();
            let Some(m) = m else { break };
            let e = &m.entry;
            let f = self
                .handlers
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(e.handler)
                .cloned();
            let Some(f) = f else {
                // An error of the program, as on the other conduits: the
                // next poll reports it (the first one, if several).
                self.unhandled
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(AmError::NoHandler(e.handler));
                continue;
            };
            let msg = AmMessage {
                src: e.src,
                category: e.category,
                direction: e.direction,
                handler: e.handler,
                args: e.args.as_slice(),
                payload: &m.payload,
                offset: if e.category == Category::Long {
                    e.addr
                } else {
                    0
                },
            };
            let mut sink = Replier { c: self };
            let mut token = Token::new(e.src, e.direction, &mut sink);
            f(&mut token, &msg);
        }
        self.dispatching.store(false, Ordering::Release);
    }
}

impl ActiveMessages for FpgaConduit {
    fn am_request(
        &self,
        pe: usize,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: usize,
    ) -> Result<()> {
        check_pe(pe, self.size)?;
        if category == Category::Long {
            check_range(pe, self.size, offset, payload.len(), self.segment_len())?;
        }
        self.send_am(
            pe,
            Direction::Request,
            category,
            handler,
            args,
            payload,
            offset as u64,
        )
    }

    /// A board with a compute core runs the requests to handlers
    /// `FIRST_COMPUTE..=255` itself: a host handler there is refused.
    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        if index >= gasnet_core::handlers::FIRST_COMPUTE && self.compute_cores() {
            return Err(AmError::ComputeIndex(index).into());
        }
        self.handlers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .register_user(index, f)?;
        Ok(())
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.handlers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .register_system(index, f)?;
        Ok(())
    }

    fn poll(&self) -> Result<()> {
        {
            let mut h = self.lock();
            self.reap(&mut h);
        }
        self.drain_rq();
        self.dispatch();
        if let Some(e) = self
            .unhandled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            return Err(e.into());
        }
        // Liveness (and a global exit), rate-limited: a few system calls
        // every 10 ms at most.
        if self
            .polls
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(POLL_CHECK_CALLS)
            && self.check_due()
        {
            self.slow_checks()?;
        }
        Ok(())
    }

    fn compute_cores(&self) -> bool {
        self.board.id.caps & cmd::caps::COMPUTE != 0
    }
}
