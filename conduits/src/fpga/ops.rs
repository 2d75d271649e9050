//! The conduit's operations as board commands: puts (inline, or staged
//! through the staging ring), gets, atomics, fences and quiets on a
//! context, each written to the board under the host's lock or queued on
//! its context (the `host` module tells how); and the window loads and
//! waits of the bootstrap area.

use super::host::{COUNT_TAG, ITEM_BYTES, Queued, pieces, status_error};
use super::*;

impl FpgaConduit {
    pub(super) fn common(tag: u32, completion: bool) -> Common {
        Common {
            tag,
            completion,
            fence_before: false,
        }
    }

    /// Puts `len` bytes at `src` to segment offset `offset` of `pe` on
    /// context `ctx` (no range check: internal areas are beyond the
    /// symmetric segment). On a non-default context it never waits for
    /// the host's lock held by another thread (module documentation).
    pub(super) fn raw_put(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let st = self.slot(ctx)?;
        if pe == self.rank {
            // SAFETY: the destination lies in this PE's segment (callers
            // checked the range); `src` is valid for `len` bytes (caller).
            // Both may be segment memory that other threads of this
            // process load or store atomically, so the copy is atomic
            // too, with `memmove`'s semantics for overlap.
            unsafe { crate::segmem::copy_shared(src, self.win(offset), len) };
            return Ok(());
        }
        if len <= MAX_INLINE {
            let mut data = [0u8; MAX_INLINE];
            // SAFETY: `src` is valid for `len <= MAX_INLINE` bytes
            // (caller) and may be segment memory, so it is read with
            // atomic loads into this stack buffer, never through a slice.
            unsafe { crate::segmem::copy_out(src, data.as_mut_ptr(), len) };
            let inline = Inline::new(&data[..len])
                .map_err(|_| ConduitError::Unsupported("inline put longer than 32 bytes"))?;
            let d = Descriptor::Put {
                common: Self::common(COUNT_TAG | ctx.0, true),
                target: pe as NodeId,
                remote: offset,
                source: cmd::PutSource::Inline(inline),
            };
            return self.issue(ctx, st, d);
        }
        match self.lock_for(ctx, ITEM_BYTES + len as u64) {
            Some(mut h) => {
                st.count(ctx, pieces(len));
                self.send_staged(&mut h, ctx, pe, offset, src, len)
            }
            None => {
                st.count(ctx, pieces(len));
                let mut data = vec![0u8; len];
                // SAFETY: `src` is valid for `len` bytes (caller) and may be
                // segment memory, read with atomic loads; the queue owns
                // the copy, so the caller may reuse its buffer at once.
                unsafe { crate::segmem::copy_out(src, data.as_mut_ptr(), len) };
                let q = Queued::Put {
                    ctx: ctx.0,
                    pe,
                    offset,
                    data,
                };
                self.enqueue(st, q);
                Ok(())
            }
        }
    }

    /// Issues descriptor `d` of `ctx` (state `st`) whose tag is count-only
    /// ([`COUNT_TAG`]): written now, or queued if `ctx` is not the default
    /// context and another thread holds the lock.
    #[inline]
    pub(super) fn issue(&self, ctx: CtxId, st: &CtxState, d: Descriptor) -> Result<()> {
        match self.lock_for(ctx, ITEM_BYTES) {
            Some(mut h) => {
                st.count(ctx, 1);
                let r = self.submit(&mut h, &d);
                if r.is_err() {
                    self.give_up(ctx.0, 1);
                }
                r
            }
            None => {
                st.count(ctx, 1);
                self.enqueue(st, Queued::Desc { ctx: ctx.0, d });
                Ok(())
            }
        }
    }

    /// A fence on `ctx`: a Fence descriptor now, or queued after `ctx`'s
    /// queued items if another thread holds the lock.
    pub(super) fn fence_ctx(&self, ctx: CtxId) -> Result<()> {
        let st = self.slot(ctx)?;
        match self.lock_for(ctx, ITEM_BYTES) {
            Some(mut h) => self.write_fence(&mut h),
            None => {
                self.enqueue(st, Queued::Fence { ctx: ctx.0 });
                Ok(())
            }
        }
    }

    /// Writes a Fence descriptor if anything was issued since the last.
    pub(super) fn write_fence(&self, h: &mut Host) -> Result<()> {
        if !h.dirty {
            return Ok(());
        }
        let tag = Self::fresh_tag(h);
        let d = Descriptor::Fence {
            common: Self::common(tag, false),
        };
        self.submit(h, &d)?;
        h.dirty = false;
        Ok(())
    }

    /// Stages and writes a put of `len` bytes at `src` whose
    /// [`pieces`] were counted for `ctx` already. On failure the pieces
    /// not written count as completed and the error is returned.
    pub(super) fn send_staged(
        &self,
        h: &mut Host,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let mut at = 0;
        while at < len {
            let n = (len - at).min(CHUNK);
            let r = self.stage(h, n).and_then(|(id, st)| {
                // SAFETY: `src+at..+n` is valid (caller) and may be segment
                // memory, read with atomic loads; the staging slice is ours
                // until its put completes, and no other thread touches it.
                unsafe { crate::segmem::copy_out(src.add(at), self.win(st), n) };
                let tag = Self::fresh_tag(h);
                h.waiting.insert(tag, (ctx.0, Waiter::Free(id)));
                let d = Descriptor::Put {
                    common: Self::common(tag, true),
                    target: pe as NodeId,
                    remote: offset + at as u64,
                    source: cmd::PutSource::Local {
                        addr: Local::Segment(st),
                        len: n as u32,
                    },
                };
                self.submit(h, &d).inspect_err(|_| {
                    h.waiting.remove(&tag);
                    h.stage.free(id);
                })
            });
            if let Err(e) = r {
                self.give_up(ctx.0, pieces(len - at));
                return Err(e);
            }
            at += n;
        }
        Ok(())
    }

    /// Starts gets of `len` bytes into `dst` on context `ctx`; returns
    /// their tags.
    pub(super) fn raw_get(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        dst: *mut u8,
        len: usize,
    ) -> Result<Vec<u32>> {
        self.slot(ctx)?;
        if pe == self.rank {
            // SAFETY: the source lies in this PE's segment (range checked by
            // callers); `dst` is valid for `len` bytes (caller). Both may be
            // segment memory other threads of this process access
            // atomically, so the copy is atomic too (overlap allowed).
            unsafe { crate::segmem::copy_shared(self.win(offset), dst, len) };
            return Ok(Vec::new());
        }
        let mut h = self.lock();
        let mut tags = Vec::new();
        let mut at = 0;
        while at < len {
            let n = (len - at).min(CHUNK);
            let (id, st) = self.stage(&mut h, n)?;
            let tag = Self::fresh_tag(&mut h);
            h.expect(
                ctx,
                tag,
                Waiter::CopyOut {
                    id,
                    from: st,
                    dst: dst.wrapping_add(at),
                    len: n,
                },
            );
            let d = Descriptor::Get {
                common: Self::common(tag, true),
                target: pe as NodeId,
                remote: offset + at as u64,
                local: Local::Segment(st),
                len: n as u32,
            };
            if let Err(e) = self.submit(&mut h, &d) {
                // Never written: its count and staging go, or a quiet of
                // `ctx` would wait for it.
                h.waiting.remove(&tag);
                h.stage.free(id);
                self.give_up(ctx.0, 1);
                return Err(e);
            }
            tags.push(tag);
            at += n;
        }
        Ok(tags)
    }

    /// Waits until none of `tags` (commands of `ctx`) is outstanding;
    /// reports the first error of `ctx`.
    pub(super) fn wait_tags(&self, ctx: CtxId, tags: &[u32]) -> Result<()> {
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                if !tags.iter().any(|t| h.waiting.contains_key(t)) {
                    return match h.ctx(ctx)?.take_error() {
                        Some(e) => Err(e),
                        None => Ok(()),
                    };
                }
            }
            self.step_wait(&mut b, || {
                format!("the completions of {} gets from its board", tags.len())
            })?;
        }
    }

    /// An atomic on context `ctx` without range checks (internal areas).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn raw_atomic(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
        fence_before: bool,
    ) -> Result<u64> {
        let fetch = op.fetches();
        let st = self.slot(ctx)?;
        let desc = |tag| Descriptor::Amo {
            common: Common {
                tag,
                completion: true,
                fence_before,
            },
            target: pe as NodeId,
            op,
            width,
            remote: offset,
            operand: operand & width.mask(),
            compare: if op == AmoOp::CompareSwap {
                compare & width.mask()
            } else {
                0
            },
        };
        if !fetch {
            return self.issue(ctx, st, desc(COUNT_TAG | ctx.0)).map(|()| 0);
        }
        let tag = {
            let mut h = self.lock();
            let tag = Self::fresh_tag(&mut h);
            h.expect(ctx, tag, Waiter::Keep);
            if let Err(e) = self.submit(&mut h, &desc(tag)) {
                h.waiting.remove(&tag);
                self.give_up(ctx.0, 1);
                return Err(e);
            }
            tag
        };
        let c = self.wait_tag(tag)?;
        if !c.status.is_ok() {
            return Err(status_error(pe, &c));
        }
        Ok(c.value)
    }

    /// Waits until every command context `ctx` issued before the call has
    /// completed; reports its first error since the last quiet.
    pub(super) fn quiet_ctx(&self, ctx: CtxId) -> Result<()> {
        let st = self.slot(ctx)?;
        let target = st.issued.load(Ordering::Acquire);
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                let st = h.ctx(ctx)?;
                if st.completed.load(Ordering::Acquire) >= target {
                    return match st.take_error() {
                        Some(e) => Err(e),
                        None => Ok(()),
                    };
                }
            }
            self.step_wait(&mut b, || {
                let n = target.saturating_sub(st.completed.load(Ordering::Acquire));
                format!(
                    "{n} commands of {ctx} to complete in quiet (acknowledged by their targets)"
                )
            })?;
        }
    }

    pub(super) fn load64(&self, off: u64) -> u64 {
        // SAFETY: internal words are 8-byte aligned inside the segment; the
        // board updates them only with atomics.
        unsafe { AtomicU64::from_ptr(self.win(off).cast()).load(Ordering::Acquire) }
    }

    /// Waits on an internal word until `done` holds, polling; `what`
    /// names it for a timeout report.
    pub(super) fn wait_word(
        &self,
        off: u64,
        done: impl Fn(u64) -> bool,
        what: impl Fn() -> String,
    ) -> Result<()> {
        let mut b = Backoff::new();
        while !done(self.load64(off)) {
            self.poll()?;
            self.step_wait(&mut b, &what)?;
        }
        Ok(())
    }
}
