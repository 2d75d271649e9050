//! The contract's one-sided operations on a board (see "Commands" and
//! "Contexts" in the module documentation): contexts, puts, gets,
//! atomics, put-with-signal, fence and quiet, each checked and handed to
//! the host side of the command queue (the `host` and `ops` modules).

use super::*;

impl Rma for FpgaConduit {
    fn ctx_create(&self) -> Result<CtxId> {
        for (i, c) in self.ctxs.iter().enumerate().skip(1) {
            if c.live
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // Its queue, made when the slot is first used, serves every
                // context that reuses the slot.
                c.queue.get_or_init(|| {
                    let (tx, rx) = mpsc::channel();
                    self.lock().queues.push(rx);
                    tx
                });
                return Ok(CtxId(i as u32));
            }
        }
        Err(ConduitError::ContextLimit { max: MAX_CONTEXTS })
    }

    fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
        if ctx == CtxId::DEFAULT {
            return Err(ConduitError::NoContext { ctx: ctx.0 });
        }
        let r = self.quiet_ctx(ctx);
        let c = self.slot(ctx)?;
        c.take_error();
        c.live.store(false, Ordering::Release);
        r
    }

    #[inline]
    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        check_range(pe, self.size, offset, src.len(), self.segment_len())?;
        self.raw_put(ctx, pe, offset as u64, src.as_ptr(), src.len())
    }

    unsafe fn put_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len())?;
        self.raw_put(ctx, pe, offset as u64, src, len)
    }

    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        check_range(pe, self.size, offset, dst.len(), self.segment_len())?;
        let tags = self.raw_get(ctx, pe, offset as u64, dst.as_mut_ptr(), dst.len())?;
        self.wait_tags(ctx, &tags)
    }

    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len())?;
        self.raw_get(ctx, pe, offset as u64, dst, len).map(|_| ())
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
        check_word(pe, self.size, offset, width.bytes(), self.segment_len())?;
        self.raw_atomic(ctx, pe, offset as u64, op, width, operand, compare, false)
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
        check_range(pe, self.size, offset, src.len(), self.segment_len())?;
        check_word(pe, self.size, sig_offset, 8, self.segment_len())?;
        self.raw_put(ctx, pe, offset as u64, src.as_ptr(), src.len())?;
        let op = match sig_op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        };
        self.raw_atomic(
            ctx,
            pe,
            sig_offset as u64,
            op,
            AmoWidth::W64,
            sig_value,
            0,
            true,
        )
        .map(|_| ())
    }

    fn fence(&self, ctx: CtxId) -> Result<()> {
        self.fence_ctx(ctx)
    }

    fn quiet(&self, ctx: CtxId) -> Result<()> {
        self.quiet_ctx(ctx)
    }
}
