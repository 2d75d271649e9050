//! Active messages on smp: the inbound rings drained by one thread at a
//! time, handlers dispatched from them, replies and requests pushed into
//! the target's ring (serving this PE's own rings while the target's is
//! full).

use super::*;

/// Releases a drain flag on drop.
pub(super) struct DrainGuard<'a>(&'a AtomicBool);

impl Drop for DrainGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

pub(super) fn try_take(flag: &AtomicBool) -> Option<DrainGuard<'_>> {
    flag.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .ok()
        .map(|_| DrainGuard(flag))
}

/// Sends a handler's reply into the requester's reply ring.
pub(super) struct Replier<'a> {
    c: &'a SmpConduit,
}

impl ReplySink for Replier<'_> {
    fn send_reply(
        &mut self,
        dst: gasnet_core::NodeId,
        category: Category,
        handler: u8,
        args: &[u32],
        payload: &[u8],
        offset: u64,
    ) -> std::result::Result<(), AmError> {
        let c = self.c;
        let dst = dst as usize;
        let transport = |e: ConduitError| AmError::Transport(e.to_string());
        check_pe(dst, c.size).map_err(transport)?;
        if category == Category::Long {
            c.write_long(dst, offset as usize, payload)
                .map_err(transport)?;
        }
        let h = Header {
            src: c.rank as u32,
            handler,
            category,
            direction: Direction::Reply,
            len: payload.len() as u32,
            offset,
        };
        let medium = if category == Category::Medium {
            payload
        } else {
            &[]
        };
        c.push(dst, c.ctl.replies(dst), &h, args, medium, false)
            .map_err(transport)
    }
}

impl ActiveMessages for SmpConduit {
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
        check_shape(category, args.len(), payload.len())?;
        if category == Category::Long {
            self.write_long(pe, offset, payload)?;
        }
        let h = Header {
            src: self.rank as u32,
            handler,
            category,
            direction: Direction::Request,
            len: payload.len() as u32,
            offset: if category == Category::Long {
                offset as u64
            } else {
                0
            },
        };
        let medium = if category == Category::Medium {
            payload
        } else {
            &[]
        };
        self.push(pe, self.ctl.requests(pe), &h, args, medium, true)?;
        self.progress()
    }

    fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register_user(index, f)?;
        Ok(())
    }

    fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .register_system(index, f)?;
        Ok(())
    }

    fn poll(&self) -> Result<()> {
        // The fast check first: an idle poll (every step of a wait) costs a
        // few loads, not the drain's compare-and-swaps.
        self.progress()?;
        // Waits of the layers above (wait_until, collectives) poll on every
        // step: a dead or departed peer must turn them into an error too.
        if self.polls.fetch_add(1, Ordering::Relaxed) % LIVENESS_POLLS == LIVENESS_POLLS - 1 {
            self.check_peers()?;
        }
        Ok(())
    }
}

impl SmpConduit {
    /// Serves the reply ring and, if `requests`, the request ring, unless
    /// another thread (or an enclosing handler) is already serving it.
    pub(super) fn drain(&self, requests: bool) -> Result<()> {
        let mut first_err = None;
        if let Some(_g) = try_take(&self.reply_drain) {
            // SAFETY: the reply_drain flag makes this thread the ring's only consumer.
            while let Some(r) = unsafe { self.my_replies.pop_with(|m| self.dispatch(m)) } {
                if let Err(e) = r {
                    first_err.get_or_insert(e);
                }
            }
        }
        if requests && let Some(_g) = try_take(&self.request_drain) {
            // SAFETY: the request_drain flag makes this thread the ring's only consumer.
            while let Some(r) = unsafe { self.my_requests.pop_with(|m| self.dispatch(m)) } {
                if let Err(e) = r {
                    first_err.get_or_insert(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Runs the handler a received message names.
    pub(super) fn dispatch(&self, m: Option<Received<'_>>) -> Result<()> {
        let m = m.ok_or_else(|| {
            ConduitError::Am(AmError::Transport(
                "smp: a malformed message was found in the ring and dropped".to_string(),
            ))
        })?;
        let h = m.header;
        // A Long payload lies in this PE's segment, where any PE may write
        // while the handler runs: the handler gets a copy, never a
        // reference into shared memory (as on ipv6 and fpga, whose handlers
        // read the received packet).
        let long: Vec<u8>;
        let payload: &[u8] = match h.category {
            Category::Long => {
                check_range(
                    self.rank,
                    self.size,
                    h.offset as usize,
                    h.len as usize,
                    self.segment_len,
                )?;
                let len = h.len as usize;
                let mut v = Vec::with_capacity(len);
                // SAFETY: the range was checked against this PE's segment,
                // which is mapped for the conduit's lifetime, and `v` is a
                // distinct allocation with room for `len` bytes; the copy
                // goes through raw pointers with relaxed atomics
                // (`segmem`: this PE's segment, which other threads of the
                // process may access), and it initialises all `len` bytes
                // before `set_len`. The sender wrote them before publishing
                // the message (Release/Acquire on the slot sequence).
                unsafe {
                    crate::segmem::copy_out(
                        self.segs[self.rank].add(h.offset as usize),
                        v.as_mut_ptr(),
                        len,
                    );
                    v.set_len(len);
                }
                long = v;
                &long
            }
            _ => m.medium,
        };
        let f = {
            let table = self.handlers.read().unwrap_or_else(|e| e.into_inner());
            table.get(h.handler).cloned()
        }
        .ok_or(AmError::NoHandler(h.handler))?;
        let msg = AmMessage {
            src: h.src as u16,
            category: h.category,
            direction: h.direction,
            handler: h.handler,
            args: m.args,
            payload,
            offset: if h.category == Category::Long {
                h.offset
            } else {
                0
            },
        };
        let mut sink = Replier { c: self };
        let mut token = Token::new(msg.src, msg.direction, &mut sink);
        f(&mut token, &msg);
        Ok(())
    }

    /// Enqueues into `ring` (which belongs to `pe`), serving this PE's own
    /// rings while the ring is full.
    pub(super) fn push(
        &self,
        pe: usize,
        ring: Ring,
        h: &Header,
        args: &[u32],
        medium: &[u8],
        serve_requests: bool,
    ) -> Result<()> {
        let mut backoff = Backoff::new();
        while !ring.try_push(h, args, medium) {
            self.check_global_exit();
            self.drain(serve_requests)?;
            if backoff.every(LIVENESS_PERIOD) {
                self.check_peer(pe, true)?;
            }
            if let Some(waited) = backoff.timed_out() {
                return Err(ConduitError::Timeout {
                    what: format!("room in PE {pe}'s full message ring"),
                    waited,
                });
            }
            backoff.snooze();
        }
        Ok(())
    }

    /// Copies a Long payload into `pe`'s segment at `offset`.
    pub(super) fn write_long(&self, pe: usize, offset: usize, payload: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, payload.len(), self.segment_len)?;
        // SAFETY: the range lies inside pe's segment, mapped for the conduit's
        // lifetime and reached by raw pointer, written with relaxed atomics
        // (`segmem`) from the caller's private payload.
        unsafe {
            crate::segmem::copy_in(payload.as_ptr(), self.segs[pe].add(offset), payload.len())
        };
        Ok(())
    }
}
