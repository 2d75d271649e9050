//! One-sided operations of the ofi conduit: `fi_write`, `fi_read` and the
//! provider's atomics on one endpoint (engine AMs for atomics the provider
//! lacks), and the contract's [`Rma`] over them. A non-default context's
//! put path goes through the `queue` module.

use super::*;
use std::ffi::c_void;

/// `fi_write` of `n` bytes at `p` to `pe`'s segment at `offset`, whose
/// completion carries `op`.
///
/// # Safety
/// `p..p+n` stays readable until the operation completes; the target range
/// was checked against the segment.
pub(super) unsafe fn write_to(
    f: &Fabric,
    pe: usize,
    offset: usize,
    p: *const u8,
    n: usize,
    op: *mut c_void,
) -> isize {
    let peer = f.peers[pe];
    // SAFETY: per this function's contract; the endpoint is open while the
    // fabric is.
    unsafe {
        api::write(
            f.ep,
            p.cast(),
            n,
            peer.addr,
            peer.base + offset as u64,
            peer.key,
            op,
        )
    }
}

/// `fi_read` of `n` bytes from `pe`'s segment at `offset` into `p`, whose
/// completion carries `op`.
///
/// # Safety
/// `p..p+n` stays writable and untouched until the operation completes;
/// the source range was checked against the segment.
pub(super) unsafe fn read_from(
    f: &Fabric,
    pe: usize,
    offset: usize,
    p: *mut u8,
    n: usize,
    op: *mut c_void,
) -> isize {
    let peer = f.peers[pe];
    // SAFETY: per this function's contract.
    unsafe {
        api::read(
            f.ep,
            p.cast(),
            n,
            peer.addr,
            peer.base + offset as u64,
            peer.key,
            op,
        )
    }
}

/// The provider's atomic `op` on the `width` word of `pe` at `offset`,
/// with its operand, compare value and result in `h`'s slot, whose
/// completion carries `id`.
///
/// # Safety
/// `h` (a [`Hold::Amo`]) is kept until the operation completes; the word
/// was checked in range and aligned.
pub(super) unsafe fn amo_to(
    f: &Fabric,
    pe: usize,
    offset: usize,
    op: AmoOp,
    width: AmoWidth,
    h: &Hold,
    id: *mut c_void,
) -> isize {
    let (dt, o, flags) = fi_amo(op, width);
    let peer = f.peers[pe];
    let addr = peer.base + offset as u64;
    let (a, cmp, res) = h.amo_ptrs();
    if a.is_null() {
        return -(FI_EINVAL as isize);
    }
    // SAFETY: the slot's three words live until completion and the word is
    // in range (this function's contract).
    unsafe {
        match flags {
            0 => api::atomic(f.ep, a.cast(), peer.addr, addr, peer.key, dt, o, id),
            FI_FETCH_ATOMIC => api::fetch_atomic(
                f.ep,
                a.cast(),
                res.cast(),
                peer.addr,
                addr,
                peer.key,
                dt,
                o,
                id,
            ),
            _ => api::compare_atomic(
                f.ep,
                a.cast(),
                cmp.cast(),
                res.cast(),
                peer.addr,
                addr,
                peer.key,
                dt,
                o,
                id,
            ),
        }
    }
}

impl OfiConduit {
    /// `fi_write` of `len` bytes at `src` to `pe` at `offset`, on context
    /// `ctx`.
    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        hold: Hold,
        src: *const u8,
        len: usize,
        waiter: Waiter,
    ) -> Result<u64> {
        self.issue("fi_write", ctx, pe, hold, waiter, |f, h, op| {
            let (p, n) = match h {
                Hold::Bytes(_) => h.bytes(),
                _ => (src, len),
            };
            // SAFETY: the source stays readable until completion (held by
            // the op, or by the caller's contract); the target range was
            // checked against the segment.
            unsafe { write_to(f, pe, offset, p, n, op) }
        })
    }

    /// `fi_read` of `len` bytes from `pe` at `offset` into `dst`, on
    /// context `ctx`.
    ///
    /// # Safety
    /// `dst..dst+len` stays writable and untouched until completion.
    unsafe fn read(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
        waiter: Waiter,
    ) -> Result<u64> {
        self.issue("fi_read", ctx, pe, Hold::None, waiter, |f, _, op| {
            // SAFETY: per this function's contract; range checked.
            unsafe { read_from(f, pe, offset, dst, len, op) }
        })
    }

    /// An atomic through the provider, on context `ctx`.
    #[allow(clippy::too_many_arguments)]
    fn native_atomic(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        let (_, _, flags) = fi_amo(op, width);
        let waiter = if op.fetches() {
            Waiter::Blocking
        } else {
            Waiter::Nbi
        };
        let call = match flags {
            0 => "fi_atomic",
            FI_FETCH_ATOMIC => "fi_fetch_atomic",
            _ => "fi_compare_atomic",
        };
        let id = self.issue(
            call,
            ctx,
            pe,
            Hold::Amo(AmoSlot::new(operand, compare)),
            waiter,
            // SAFETY: the hold becomes the op's, kept until completion;
            // the word was checked in range and aligned.
            |f, h, id| unsafe { amo_to(f, pe, offset, op, width, h, id) },
        )?;
        if !op.fetches() {
            return Ok(0);
        }
        let v = self.wait_op(id, || {
            format!("the value of a fetching atomic {op:?} on PE {pe} at offset {offset:#x}")
        })?;
        Ok(v & width.mask())
    }
}

/// Every context counts its own operations (see the module's notes):
/// `quiet`/`fence` on a context wait for that context only. On a context
/// other than the default one, a put, `put_nbi`, `get_nbi`, non-fetching
/// atomic, put-with-signal or fence never waits for the core's lock held by
/// another thread (the `queue` module).
impl Rma for OfiConduit {
    fn ctx_create(&self) -> Result<CtxId> {
        let mut c = self.lock();
        self.live(&c)?;
        if c.ctxs.len() >= MAX_CONTEXTS {
            return Err(ConduitError::ContextLimit { max: MAX_CONTEXTS });
        }
        let id = (1..MAX_CONTEXTS as u32)
            .find(|i| !c.ctxs.contains_key(i))
            .ok_or(ConduitError::ContextLimit { max: MAX_CONTEXTS })?;
        c.ctxs.insert(id, CtxState::default());
        let slot = &self.sh.slots[id as usize];
        // Its queue, made when the id is first used, serves every context
        // that reuses the id.
        slot.queue.get_or_init(|| {
            let (tx, rx) = queue::channel();
            c.add_queue(rx);
            tx
        });
        slot.live.store(true, Ordering::Release);
        Ok(CtxId(id))
    }

    fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
        if ctx == CtxId::DEFAULT {
            return Err(ConduitError::NoContext { ctx: ctx.0 });
        }
        let r = self.quiet_ctx(ctx);
        if matches!(r, Err(ConduitError::NoContext { .. })) {
            return r;
        }
        self.slot(ctx)?.live.store(false, Ordering::Release);
        self.lock().remove_ctx(ctx.0);
        r
    }

    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len)?;
        let slot = self.slot(ctx)?;
        if pe == self.rank {
            // SAFETY: the destination lies in our segment (checked), reached
            // by raw pointer and written with relaxed atomics (`segmem`),
            // which allows overlap with `src`.
            unsafe { crate::segmem::copy_shared(src.as_ptr(), self.local(offset), src.len()) };
            return self.check_live();
        }
        if src.is_empty() {
            return self.check_live();
        }
        if ctx != CtxId::DEFAULT {
            self.check_live()?;
            if let Some(items) = self.put_copies(pe, offset, src) {
                return self.issue_ctx(ctx, slot, items);
            }
            // Past the bound on copies held: as on the default context,
            // after the context's earlier items (back-pressure).
        }
        if src.len() <= BOUNCE_MAX {
            self.write(
                ctx,
                pe,
                offset,
                Hold::Bytes(src.to_vec()),
                std::ptr::null(),
                src.len(),
                Waiter::Nbi,
            )?;
            return Ok(());
        }
        // A long put: issued from the caller's buffer in pieces the
        // provider takes, then waited for (the source must stay intact).
        let piece = self.piece;
        let mut ids = Vec::new();
        for (k, part) in src.chunks(piece).enumerate() {
            ids.push(self.write(
                ctx,
                pe,
                offset + k * piece,
                Hold::None,
                part.as_ptr(),
                part.len(),
                Waiter::Blocking,
            )?);
        }
        for id in ids {
            self.wait_op(id, || {
                format!(
                    "the provider to send a put of {} bytes to PE {pe}",
                    src.len()
                )
            })?;
        }
        Ok(())
    }

    unsafe fn put_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the destination lies in our segment (checked); the
            // caller guarantees `src` for `len` bytes, read by raw pointer
            // (it may be segment memory) with relaxed atomics.
            unsafe { crate::segmem::copy_shared(src, self.local(offset), len) };
            return self.check_live();
        }
        if len == 0 {
            return self.put(ctx, pe, offset, &[]);
        }
        let piece = self.piece;
        if ctx != CtxId::DEFAULT {
            let slot = self.slot(ctx)?;
            self.check_live()?;
            // The caller keeps `src` intact until quiet.
            let items = (0..len).step_by(piece).map(|at| Item::PutFrom {
                pe,
                offset: offset + at,
                src: queue::SendPtr(src.wrapping_add(at).cast_mut()),
                len: piece.min(len - at),
            });
            return self.issue_ctx(ctx, slot, items);
        }
        let mut at = 0;
        while at < len {
            let n = piece.min(len - at);
            // The caller keeps `src` intact until quiet.
            self.write(
                ctx,
                pe,
                offset + at,
                Hold::None,
                src.wrapping_add(at),
                n,
                Waiter::Nbi,
            )?;
            at += n;
        }
        Ok(())
    }

    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(pe, self.size, offset, dst.len(), self.segment_len)?;
        self.slot(ctx)?;
        if pe == self.rank {
            // SAFETY: the source lies in our segment (checked), read by raw
            // pointer with relaxed atomics (`segmem`).
            unsafe { crate::segmem::copy_out(self.local(offset), dst.as_mut_ptr(), dst.len()) };
            return self.check_live();
        }
        if dst.is_empty() {
            return self.check_live();
        }
        let len = dst.len();
        let p = dst.as_mut_ptr();
        let mut ids = Vec::new();
        let piece = self.piece;
        let mut at = 0;
        while at < len {
            let n = piece.min(len - at);
            // SAFETY: `dst` is borrowed mutably for this whole call, which
            // waits for every piece before it returns.
            ids.push(unsafe {
                self.read(
                    ctx,
                    pe,
                    offset + at,
                    p.wrapping_add(at),
                    n,
                    Waiter::Blocking,
                )?
            });
            at += n;
        }
        for id in ids {
            self.wait_op(id, || {
                format!(
                    "the data of a blocking get of {len} bytes from PE {pe} at offset {offset:#x}"
                )
            })?;
        }
        Ok(())
    }

    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        let slot = self.slot(ctx)?;
        if pe == self.rank {
            // SAFETY: the source lies in our segment (checked); the caller
            // guarantees `dst` is valid for `len` bytes (it may be segment
            // memory: raw pointers and relaxed atomics on both sides).
            unsafe { crate::segmem::copy_shared(self.local(offset), dst, len) };
            return self.check_live();
        }
        if len == 0 {
            return self.check_live();
        }
        let piece = self.piece;
        if ctx != CtxId::DEFAULT {
            self.check_live()?;
            // The caller keeps `dst` valid and untouched until quiet.
            let items = (0..len).step_by(piece).map(|at| Item::GetInto {
                pe,
                offset: offset + at,
                dst: queue::SendPtr(dst.wrapping_add(at)),
                len: piece.min(len - at),
            });
            return self.issue_ctx(ctx, slot, items);
        }
        let mut at = 0;
        while at < len {
            let n = piece.min(len - at);
            // SAFETY: the caller keeps `dst` valid and untouched until quiet.
            unsafe { self.read(ctx, pe, offset + at, dst.wrapping_add(at), n, Waiter::Nbi)? };
            at += n;
        }
        Ok(())
    }

    fn atomic(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
        compare: u64,
    ) -> Result<u64> {
        check_word(pe, self.size, offset, width.bytes(), self.segment_len)?;
        let slot = self.slot(ctx)?;
        let lock_free = ctx != CtxId::DEFAULT && !op.fetches();
        if self.native_atomics {
            if lock_free {
                self.check_live()?;
                let item = Item::Amo {
                    pe,
                    offset,
                    op,
                    width,
                    operand,
                };
                self.issue_ctx(ctx, slot, [item])?;
                return Ok(0);
            }
            return self.native_atomic(ctx, pe, offset, op, width, operand, compare);
        }
        if pe == self.rank {
            // SAFETY: in range and aligned (checked); the segment is page
            // aligned.
            let old = unsafe {
                crate::cpu_amo::atomic_at(self.local(offset), op, width, operand, compare)
            };
            self.check_live()?;
            return Ok(old & width.mask());
        }
        let cmd = Command::Amo {
            dst: pe as NodeId,
            op,
            width,
            offset: offset as u64,
            operand,
            compare,
        };
        if lock_free {
            self.check_live()?;
            let item = Item::Engine {
                pe,
                tag: self.tag(),
                cmd,
            };
            self.issue_ctx(ctx, slot, [item])?;
            return Ok(0);
        }
        if !op.fetches() {
            self.submit(ctx, pe, cmd, Waiter::Nbi)?;
            return Ok(0);
        }
        let tag = self.submit(ctx, pe, cmd, Waiter::Blocking)?;
        let c = self.drive_until(
            |c| c.engine_done.remove(&tag).transpose(),
            || format!("the value of a fetching atomic {op:?} on PE {pe} at offset {offset:#x}"),
        )?;
        Ok(c.value)
    }

    fn put_signal(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: &[u8],
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len)?;
        check_word(pe, self.size, sig_offset, 8, self.segment_len)?;
        let op = match sig_op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        };
        self.put(ctx, pe, offset, src)?;
        if pe == self.rank {
            std::sync::atomic::fence(Ordering::Release);
        } else if ctx == CtxId::DEFAULT {
            // The data must be delivered before the signal is.
            self.quiet_ctx(ctx)?;
        } else {
            // The same, without waiting: the signal is held back until the
            // put has completed.
            self.issue_ctx(ctx, self.slot(ctx)?, [Item::Fence])?;
        }
        self.atomic(ctx, pe, sig_offset, op, AmoWidth::W64, sig_value, 0)?;
        Ok(())
    }

    fn fence(&self, ctx: CtxId) -> Result<()> {
        if ctx == CtxId::DEFAULT {
            // No ordering asked of the provider: a fence is its context's
            // quiet.
            return self.quiet_ctx(ctx);
        }
        // Another context's later operations are held back until its
        // earlier ones completed, without waiting here.
        let slot = self.slot(ctx)?;
        self.check_live()?;
        self.issue_ctx(ctx, slot, [Item::Fence])
    }

    fn quiet(&self, ctx: CtxId) -> Result<()> {
        self.quiet_ctx(ctx)
    }

    /// Atomics carried as active messages are applied by the target's
    /// engine with CPU atomics; the provider's own are not.
    fn cpu_atomics(&self) -> bool {
        !self.native_atomics
    }
}
