//! The router's one-sided operations (`spec/conduit.md` §10.3, §10.5):
//! each goes to the on-node or the off-node conduit by its target PE, on
//! the pair of contexts its router context stands for; fence and quiet
//! cover both.

use super::ctx::{BUSY, FREE, LIVE};
use super::{MAX_CONTEXTS, OnNode, Path, Routed};
use crate::contract::{Conduit, CtxId, Rma, Segments, SignalOp};
use crate::error::{ConduitError, Result};
use crate::{AmoOp, AmoWidth};
use std::sync::atomic::Ordering;

impl<On: OnNode, Off: Conduit> Routed<On, Off> {
    /// Quiets off-node context `c_off` of router context `ctx` unless
    /// every off-node operation counted on `ctx` is complete.
    ///
    /// An operation that returned before this call is counted in the
    /// `issued` read here (the count is raised before it returns). If
    /// `off_quieted` already reaches `issued`, an off-node quiet that had
    /// read a count including that operation (so that saw it issued, by
    /// the count's Release and Acquire) has returned: it completed it.
    /// `off_quieted` moves only after that quiet returns, so a quiet still
    /// running on another thread never lets this one skip.
    #[inline(always)]
    fn quiet_off(&self, ctx: CtxId, c_off: CtxId) -> Result<()> {
        let p = self.slot(ctx);
        let Some(issued) = p.off_pending() else {
            return Ok(());
        };
        self.off.quiet(c_off).map_err(|e| self.off_err(e))?;
        p.off_quieted.fetch_max(issued, Ordering::Release);
        Ok(())
    }
}

impl<On: OnNode, Off: Conduit> Rma for Routed<On, Off> {
    fn ctx_create(&self) -> Result<CtxId> {
        for (i, p) in self.ctxs.iter().enumerate().skip(1) {
            if p.state
                .compare_exchange(FREE, BUSY, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let on = match self.on.ctx_create() {
                Ok(c) => c,
                Err(e) => {
                    p.state.store(FREE, Ordering::Release);
                    return Err(self.lift(e));
                }
            };
            let off = match self.off.ctx_create() {
                Ok(c) => c,
                Err(e) => {
                    let _ = self.on.ctx_destroy(on);
                    p.state.store(FREE, Ordering::Release);
                    return Err(self.off_err(e));
                }
            };
            p.on.store(on.0, Ordering::Relaxed);
            p.off.store(off.0, Ordering::Relaxed);
            // A new off-node context has nothing outstanding.
            p.off_quieted
                .fetch_max(p.off_issued.load(Ordering::Acquire), Ordering::Release);
            p.state.store(LIVE, Ordering::Release);
            return Ok(CtxId(i as u32));
        }
        Err(ConduitError::ContextLimit { max: MAX_CONTEXTS })
    }

    fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
        if ctx == CtxId::DEFAULT {
            return Err(ConduitError::NoContext { ctx: ctx.0 });
        }
        let (on, off) = self.pair(ctx)?;
        let p = &self.ctxs[ctx.index()];
        if p.state
            .compare_exchange(LIVE, BUSY, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return Err(ConduitError::NoContext { ctx: ctx.0 });
        }
        let r_on = self.on.ctx_destroy(on).map_err(|e| self.lift(e));
        let r_off = self.off.ctx_destroy(off).map_err(|e| self.off_err(e));
        p.state.store(FREE, Ordering::Release);
        r_on.and(r_off)
    }

    #[inline(always)]
    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        let (c_on, c_off) = self.pair(ctx)?;
        match self.path(pe)? {
            Path::On(l) => self.on.put(c_on, l, offset, src).map_err(|e| self.lift(e)),
            Path::Off => self.slot(ctx).issued_off(
                self.off
                    .put(c_off, pe, offset, src)
                    .map_err(|e| self.off_err(e)),
            ),
        }
    }

    #[inline(always)]
    unsafe fn put_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        let (c_on, c_off) = self.pair(ctx)?;
        match self.path(pe)? {
            Path::On(l) => {
                // SAFETY: the caller upholds put_nbi's contract for `ctx`; the
                // router's quiet of `ctx` quiets `c_on`, so it holds for it.
                let r = unsafe { self.on.put_nbi(c_on, l, offset, src, len) };
                r.map_err(|e| self.lift(e))
            }
            Path::Off => {
                // SAFETY: as above, for `c_off`.
                let r = unsafe { self.off.put_nbi(c_off, pe, offset, src, len) };
                self.slot(ctx).issued_off(r.map_err(|e| self.off_err(e)))
            }
        }
    }

    #[inline(always)]
    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        let (c_on, c_off) = self.pair(ctx)?;
        match self.path(pe)? {
            Path::On(l) => self.on.get(c_on, l, offset, dst).map_err(|e| self.lift(e)),
            Path::Off => self
                .off
                .get(c_off, pe, offset, dst)
                .map_err(|e| self.off_err(e)),
        }
    }

    #[inline(always)]
    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        let (c_on, c_off) = self.pair(ctx)?;
        match self.path(pe)? {
            Path::On(l) => {
                // SAFETY: the caller upholds get_nbi's contract for `ctx`; the
                // router's quiet of `ctx` quiets `c_on`, so it holds for it.
                let r = unsafe { self.on.get_nbi(c_on, l, offset, dst, len) };
                r.map_err(|e| self.lift(e))
            }
            Path::Off => {
                // SAFETY: as above, for `c_off`.
                let r = unsafe { self.off.get_nbi(c_off, pe, offset, dst, len) };
                self.slot(ctx).issued_off(r.map_err(|e| self.off_err(e)))
            }
        }
    }

    #[inline(always)]
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
        let (c_on, c_off) = self.pair(ctx)?;
        match self.path(pe)? {
            Path::On(l) if self.atomics_on_node => self
                .on
                .atomic(c_on, l, offset, op, width, operand, compare)
                .map_err(|e| self.lift(e)),
            _ => self.slot(ctx).issued_off(
                self.off
                    .atomic(c_off, pe, offset, op, width, operand, compare)
                    .map_err(|e| self.off_err(e)),
            ),
        }
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
        let (c_on, c_off) = self.pair(ctx)?;
        match self.path(pe)? {
            Path::On(l) if self.atomics_on_node => self
                .on
                .put_signal(c_on, l, offset, src, sig_offset, sig_op, sig_value)
                .map_err(|e| self.lift(e)),
            Path::On(l) => {
                // The signal is an atomic, which must go off-node (§10.5):
                // the data is complete before it is issued.
                crate::error::check_word(pe, self.size, sig_offset, 8, self.segment_len())?;
                self.on
                    .put(c_on, l, offset, src)
                    .and_then(|()| self.on.quiet(c_on))
                    .map_err(|e| self.lift(e))?;
                let r = self.off.atomic(
                    c_off,
                    pe,
                    sig_offset,
                    sig_op.amo(),
                    AmoWidth::W64,
                    sig_value,
                    0,
                );
                self.slot(ctx)
                    .issued_off(r.map_err(|e| self.off_err(e)))
                    .map(drop)
            }
            Path::Off => self.slot(ctx).issued_off(
                self.off
                    .put_signal(c_off, pe, offset, src, sig_offset, sig_op, sig_value)
                    .map_err(|e| self.off_err(e)),
            ),
        }
    }

    /// Fences both conduits' contexts. When atomics to this host travel
    /// off-node while puts travel on-node, one target is reached by two
    /// paths, whose relative order only completion gives: both are
    /// quieted instead. The off-node context is left alone when every
    /// off-node operation of `ctx` is complete: there is nothing to order.
    #[inline(always)]
    fn fence(&self, ctx: CtxId) -> Result<()> {
        let (c_on, c_off) = self.pair(ctx)?;
        if self.atomics_on_node {
            self.on.fence(c_on).map_err(|e| self.lift(e))?;
            match self.slot(ctx).off_pending() {
                Some(_) => self.off.fence(c_off).map_err(|e| self.off_err(e)),
                None => Ok(()),
            }
        } else {
            self.on.quiet(c_on).map_err(|e| self.lift(e))?;
            self.quiet_off(ctx, c_off)
        }
    }

    /// Quiets the on-node context, then the off-node one unless every
    /// off-node operation of `ctx` is known complete (a job whose traffic
    /// stays within the host never waits on the network conduit here).
    /// The on-node quiet is always made: on smp it is a fence, which also
    /// orders the stores a program makes through `shmem_ptr`.
    #[inline(always)]
    fn quiet(&self, ctx: CtxId) -> Result<()> {
        let (c_on, c_off) = self.pair(ctx)?;
        self.on.quiet(c_on).map_err(|e| self.lift(e))?;
        self.quiet_off(ctx, c_off)
    }

    fn cpu_atomics(&self) -> bool {
        self.atomics_on_node
    }
}
