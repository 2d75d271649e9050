//! The host side of the command queue: tags, the staging ring, what each
//! completion is for, and the per-context counts that make `quiet` per
//! context. Every operation of the conduit becomes descriptors here.

use super::*;

pub(super) const fn round_up(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// A ring allocator over the staging area: allocations are freed in any
/// order and reclaimed in allocation order.
#[derive(Debug)]
pub(super) struct Stage {
    pub(super) base: u64,
    pub(super) size: u64,
    pub(super) head: u64,
    pub(super) tail: u64,
    pub(super) allocs: VecDeque<(u64, u64, bool)>,
    pub(super) next_id: u64,
}

impl Stage {
    pub(super) fn new(base: u64, size: u64) -> Stage {
        Stage {
            base,
            size,
            head: 0,
            tail: 0,
            allocs: VecDeque::new(),
            next_id: 0,
        }
    }

    /// `(id, segment offset)` of `len` free bytes, or `None` for now.
    pub(super) fn alloc(&mut self, len: u64) -> Option<(u64, u64)> {
        let len = round_up(len.max(1), 64);
        let mut start = self.tail;
        let off = start % self.size;
        if off + len > self.size {
            start += self.size - off;
        }
        if start + len - self.head > self.size {
            return None;
        }
        self.next_id += 1;
        self.allocs.push_back((self.next_id, start + len, false));
        self.tail = start + len;
        Some((self.next_id, self.base + start % self.size))
    }

    pub(super) fn free(&mut self, id: u64) {
        if let Some(a) = self.allocs.iter_mut().find(|a| a.0 == id) {
            a.2 = true;
        }
        while let Some(&(_, end, true)) = self.allocs.front() {
            self.head = end;
            self.allocs.pop_front();
        }
        if self.allocs.is_empty() {
            self.head = self.tail;
        }
    }
}

/// What to do when a tagged completion arrives.
#[derive(Debug)]
pub(super) enum Waiter {
    /// Free a staging allocation.
    Free(u64),
    /// Copy a landed get out of staging into host memory, then free it.
    CopyOut {
        id: u64,
        from: u64,
        dst: *mut u8,
        len: usize,
    },
    /// Keep the completion for a blocking caller.
    Keep,
    /// Nothing but counting it for its context's quiet.
    Count,
}

/// The tag bit that marks a command whose completion is only counted for
/// its context's quiet (inline puts, non-fetching atomics): such a tag is
/// this bit with the context's index, so its completion finds its context
/// without an entry in [`Host::waiting`], and the hot path inserts nothing.
/// Tags the board echoes need not be distinct (`spec/registers.md` §7);
/// [`FpgaConduit::fresh_tag`] keeps the other tags below this bit.
pub(super) const COUNT_TAG: u32 = 1 << 31;

/// One context's bookkeeping.
#[derive(Debug, Default)]
pub(super) struct CtxState {
    /// Created and not destroyed (the default context always is).
    pub(super) live: bool,
    /// Commands of it whose completion has not arrived.
    pub(super) outstanding: u64,
    /// The first error of its commands since its last quiet (blocking
    /// callers get theirs directly).
    pub(super) error: Option<ConduitError>,
}

/// Hashes a command tag for the maps keyed by tags, which sit on the path
/// of every put: tags are distinct counters chosen by this PE (no
/// adversary), so one multiplication by an odd constant spreads them over
/// the table's bits instead of the default SipHash (about 40 ns of the
/// 8-byte put's submit cost).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TagHasher(u64);

impl std::hash::Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, tag: u32) {
        self.0 = (u64::from(tag) ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A map keyed by command tags.
pub(super) type TagMap<V> = HashMap<u32, V, std::hash::BuildHasherDefault<TagHasher>>;

#[derive(Debug)]
pub(super) struct Host {
    pub(super) rings: Rings,
    pub(super) next_tag: u32,
    /// Each tagged command's context and what its completion is for.
    pub(super) waiting: TagMap<(u32, Waiter)>,
    pub(super) ctxs: Vec<CtxState>,
    pub(super) done: TagMap<Completion>,
    pub(super) stage: Stage,
    /// Something was issued since the last fence.
    pub(super) dirty: bool,
}

impl Host {
    /// The state of context `ctx`, if it exists.
    pub(super) fn ctx(&mut self, ctx: CtxId) -> Result<&mut CtxState> {
        match self.ctxs.get_mut(ctx.index()) {
            Some(c) if c.live => Ok(c),
            _ => Err(ConduitError::NoContext { ctx: ctx.0 }),
        }
    }

    /// Registers tagged command `tag` of `ctx`, to be handled by `w` when
    /// its completion arrives.
    pub(super) fn expect(&mut self, ctx: CtxId, tag: u32, w: Waiter) {
        if let Some(c) = self.ctxs.get_mut(ctx.index()) {
            c.outstanding += 1;
        }
        self.waiting.insert(tag, (ctx.0, w));
    }

    /// The tag of a command of `ctx` whose completion is only counted
    /// ([`COUNT_TAG`]), counted as outstanding from now on.
    #[inline]
    pub(super) fn counted(&mut self, ctx: CtxId) -> u32 {
        if let Some(c) = self.ctxs.get_mut(ctx.index()) {
            c.outstanding += 1;
        }
        COUNT_TAG | ctx.0
    }
}

pub(super) fn status_error(pe: usize, c: &Completion) -> ConduitError {
    ConduitError::PeerFailed {
        pe,
        reason: format!(
            "board reported {} for opcode {:#04x} (tag {}, detail {})",
            c.status, c.opcode, c.tag, c.detail
        ),
    }
}

impl FpgaConduit {
    pub(super) fn lock(&self) -> MutexGuard<'_, Host> {
        self.host.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[inline(always)]
    pub(super) fn win(&self, off: u64) -> *mut u8 {
        self.seg.wrapping_add(off as usize)
    }

    /// Handles one completion.
    pub(super) fn settle(&self, h: &mut Host, c: Completion) {
        let (ctx, w) = if c.tag & COUNT_TAG != 0 {
            (c.tag & !COUNT_TAG, Waiter::Count)
        } else {
            match h.waiting.remove(&c.tag) {
                Some(e) => e,
                None => return,
            }
        };
        if let Some(st) = h.ctxs.get_mut(ctx as usize) {
            st.outstanding = st.outstanding.saturating_sub(1);
            if !c.status.is_ok() && st.error.is_none() && !matches!(w, Waiter::Keep) {
                st.error = Some(status_error(c.target as usize, &c));
            }
        }
        match w {
            Waiter::Free(id) => h.stage.free(id),
            Waiter::CopyOut { id, from, dst, len } => {
                if c.status.is_ok() {
                    // SAFETY: `from..from+len` is a staging allocation in the
                    // window; `dst` is valid for `len` bytes until the quiet
                    // that reaps this (get_nbi's contract) or until the
                    // blocking get returns.
                    unsafe { std::ptr::copy_nonoverlapping(self.win(from), dst, len) };
                }
                h.stage.free(id);
            }
            Waiter::Keep => {
                h.done.insert(c.tag, c);
            }
            Waiter::Count => {}
        }
    }

    /// Reaps every completion the board has written; returns how many.
    pub(super) fn reap(&self, h: &mut Host) -> usize {
        let mut n = 0;
        while let Some(r) = h.rings.poll_cq(&self.board.bar0) {
            n += 1;
            match r {
                Ok(c) => self.settle(h, c),
                Err(e) => {
                    // Its tag is unknown: every context learns of it.
                    for st in h.ctxs.iter_mut().filter(|c| c.live) {
                        st.error.get_or_insert(ConduitError::PeerFailed {
                            pe: self.rank,
                            reason: format!("board wrote a malformed completion: {e}"),
                        });
                    }
                }
            }
        }
        n
    }

    /// A tag for a command whose completion has an entry in
    /// [`Host::waiting`]: nonzero and below [`COUNT_TAG`].
    pub(super) fn fresh_tag(h: &mut Host) -> u32 {
        h.next_tag = (h.next_tag.wrapping_add(1) & !COUNT_TAG).max(1);
        h.next_tag
    }

    /// Writes a descriptor, reaping completions while the ring is full.
    pub(super) fn submit(&self, h: &mut MutexGuard<'_, Host>, d: &Descriptor) -> Result<()> {
        let enc = cmd::encode_slots(d);
        let mut b = Backoff::new();
        while !h.rings.try_submit(&self.board.bar0, enc.as_slots()) {
            if self.reap(h) > 0 {
                b.reset();
                continue;
            }
            self.step_wait(&mut b, || "room in its board's command queue".to_string())?;
        }
        self.board.wake();
        h.dirty = true;
        Ok(())
    }

    /// A staging allocation of `len` bytes, reaping completions until one
    /// is free.
    pub(super) fn stage(&self, h: &mut MutexGuard<'_, Host>, len: usize) -> Result<(u64, u64)> {
        let mut b = Backoff::new();
        loop {
            if let Some(a) = h.stage.alloc(len as u64) {
                return Ok(a);
            }
            if self.reap(h) > 0 {
                b.reset();
                continue;
            }
            self.step_wait(&mut b, || {
                format!("{len} bytes of staging space (completions of earlier puts and gets)")
            })?;
        }
    }

    /// Waits for the completion of `tag` (registered as [`Waiter::Keep`]).
    pub(super) fn wait_tag(&self, tag: u32) -> Result<Completion> {
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                if let Some(c) = h.done.remove(&tag) {
                    return Ok(c);
                }
            }
            self.step_wait(&mut b, || {
                format!("the completion of command {tag} from its board")
            })?;
        }
    }

    pub(super) fn common(tag: u32, completion: bool) -> Common {
        Common {
            tag,
            completion,
            fence_before: false,
        }
    }

    /// Puts `len` bytes at `src` to segment offset `offset` of `pe` on
    /// context `ctx` (no range check: internal areas are beyond the
    /// symmetric segment).
    pub(super) fn raw_put(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let mut h = self.lock();
        h.ctx(ctx)?;
        if pe == self.rank {
            drop(h);
            // SAFETY: the destination lies in this PE's segment (callers
            // checked the range); `src` is valid for `len` bytes (caller).
            unsafe { std::ptr::copy(src, self.win(offset), len) };
            return Ok(());
        }
        if len <= MAX_INLINE {
            // SAFETY: `src` is valid for `len` bytes (caller).
            let data = unsafe { std::slice::from_raw_parts(src, len) };
            let inline = Inline::new(data)
                .map_err(|_| ConduitError::Unsupported("inline put longer than 32 bytes"))?;
            let tag = h.counted(ctx);
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: pe as NodeId,
                remote: offset,
                source: cmd::PutSource::Inline(inline),
            };
            return self.submit(&mut h, &d);
        }
        let mut at = 0;
        while at < len {
            let n = (len - at).min(CHUNK);
            let (id, st) = self.stage(&mut h, n)?;
            // SAFETY: `src+at..+n` is valid (caller); the staging slice is
            // ours until its put completes.
            unsafe { std::ptr::copy_nonoverlapping(src.add(at), self.win(st), n) };
            let tag = Self::fresh_tag(&mut h);
            h.expect(ctx, tag, Waiter::Free(id));
            let d = Descriptor::Put {
                common: Self::common(tag, true),
                target: pe as NodeId,
                remote: offset + at as u64,
                source: cmd::PutSource::Local {
                    addr: Local::Segment(st),
                    len: n as u32,
                },
            };
            self.submit(&mut h, &d)?;
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
        let mut h = self.lock();
        h.ctx(ctx)?;
        if pe == self.rank {
            drop(h);
            // SAFETY: the source lies in this PE's segment (range checked by
            // callers); `dst` is valid for `len` bytes (caller).
            unsafe { std::ptr::copy(self.win(offset), dst, len) };
            return Ok(Vec::new());
        }
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
            self.submit(&mut h, &d)?;
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
                    return match h.ctx(ctx)?.error.take() {
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
        let tag = {
            let mut h = self.lock();
            h.ctx(ctx)?;
            let tag = if fetch {
                let tag = Self::fresh_tag(&mut h);
                h.expect(ctx, tag, Waiter::Keep);
                tag
            } else {
                h.counted(ctx)
            };
            let d = Descriptor::Amo {
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
            self.submit(&mut h, &d)?;
            tag
        };
        if !fetch {
            return Ok(0);
        }
        let c = self.wait_tag(tag)?;
        if !c.status.is_ok() {
            return Err(status_error(pe, &c));
        }
        Ok(c.value)
    }

    /// Waits until context `ctx` has no outstanding command; reports its
    /// first error since the last quiet.
    pub(super) fn quiet_ctx(&self, ctx: CtxId) -> Result<()> {
        let mut b = Backoff::new();
        loop {
            {
                let mut h = self.lock();
                self.reap(&mut h);
                let c = h.ctx(ctx)?;
                if c.outstanding == 0 {
                    return match c.error.take() {
                        Some(e) => Err(e),
                        None => Ok(()),
                    };
                }
            }
            self.step_wait(&mut b, || {
                let n = self.lock().ctx(ctx).map_or(0, |c| c.outstanding);
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
