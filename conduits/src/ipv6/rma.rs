//! One-sided operations of the ipv6 conduit: engine commands per context
//! (`quiet` per context), operations on this PE's own segment done
//! directly.

use super::*;
use crate::segmem;

impl Rma for Ipv6Conduit {
    fn ctx_create(&self) -> Result<CtxId> {
        for (i, c) in self.shared.ctxs.iter().enumerate().skip(1) {
            if c.live
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                // Its queue, made when the slot is first used, serves every
                // context that reuses the slot.
                c.queue.get_or_init(|| {
                    let (tx, rx) = mpsc::channel();
                    progress::lock(&self.core, &self.shared).add_queue(rx);
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
        let r = self.quiet(ctx);
        self.ctx(ctx)?.live.store(false, Ordering::Release);
        r
    }

    fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
        // SAFETY: a slice is valid for reads of its length.
        unsafe { self.put_raw(ctx, pe, offset, src.as_ptr(), src.len()) }
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
        let local = self.in_segment(src, len);
        match local {
            // A source in this PE's segment is read as each piece is
            // issued (`PutSource::Local`, as a board's DMA reads it),
            // into a buffer of the payload pool: not copied whole at the
            // call, which for a long stream of puts filled buffers far
            // ahead of the wire (a cold one each, and a copy per byte on
            // the calling thread besides the sending one's). The caller
            // keeps the source unmodified until the quiet (this function's
            // contract), which is what lets the read wait.
            Some(at) if pe != self.rank && len != 0 => {
                let chunk = self.chunks[pe];
                for k in (0..len).step_by(chunk) {
                    let n = chunk.min(len - k);
                    let cmd = Command::Put {
                        dst: pe as NodeId,
                        offset: (offset + k) as u64,
                        source: PutSource::Local {
                            offset: at + k as u64,
                            len: n as u64,
                        },
                    };
                    self.submit(ctx, cmd, Want::Nbi)?;
                }
                Ok(())
            }
            // SAFETY: the caller guarantees `src` is valid for `len`
            // bytes; the bytes are copied before this returns.
            _ => unsafe { self.put_raw(ctx, pe, offset, src, len) },
        }
    }

    unsafe fn put_from(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.put_raw(ctx, pe, offset, src, len) }
    }

    fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
        // SAFETY: a mutable slice is valid for writes of its length.
        unsafe { self.get_raw(ctx, pe, offset, dst.as_mut_ptr(), dst.len()) }
    }

    unsafe fn get_into(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.get_raw(ctx, pe, offset, dst, len) }
    }

    unsafe fn get_nbi(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        if unsafe { self.get_at_once(pe, offset, dst, len) }? {
            return Ok(());
        }
        let seg = self.in_segment(dst, len);
        self.submit_get(
            ctx,
            pe,
            offset,
            len,
            |at, n| match seg {
                Some(s) => (GetInto::Segment(s + at as u64), Want::Nbi),
                None => (
                    GetInto::BufferLong,
                    Want::NbiGet {
                        dst: SendPtr(dst.wrapping_add(at)),
                        len: n,
                    },
                ),
            },
            |_| {},
        )
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
        if pe == self.rank {
            // SAFETY: in range and aligned (checked); the segment is page
            // aligned.
            let old = unsafe {
                crate::cpu_amo::atomic_at(self.local(offset), op, width, operand, compare)
            };
            self.check_failed()?;
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
        if !op.fetches() {
            self.submit(ctx, cmd, Want::Nbi)?;
            return Ok(0);
        }
        let tag = self.submit(ctx, cmd, Want::Value)?;
        Ok(self
            .wait_value(tag, || {
                format!("the value of a fetching atomic {op:?} on PE {pe} at offset {offset:#x}")
            })?
            .value)
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
        // SAFETY: a slice is valid for reads of its length.
        unsafe {
            self.put_signal_from(
                ctx,
                pe,
                offset,
                src.as_ptr(),
                src.len(),
                sig_offset,
                sig_op,
                sig_value,
            )
        }
    }

    unsafe fn put_signal_from(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
        sig_offset: usize,
        sig_op: SignalOp,
        sig_value: u64,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        check_word(pe, self.size, sig_offset, 8, self.segment_len)?;
        let op = match sig_op {
            SignalOp::Set => AmoOp::Set,
            SignalOp::Add => AmoOp::Add,
        };
        if pe == self.rank {
            // SAFETY: the caller guarantees `src` for `len` bytes.
            unsafe { self.put_raw(ctx, pe, offset, src, len) }?;
            std::sync::atomic::fence(Ordering::Release);
            self.atomic(ctx, pe, sig_offset, op, AmoWidth::W64, sig_value, 0)?;
            return Ok(());
        }
        // Issued in order to one target and delivered in order: the data is
        // applied before the signal.
        // SAFETY: the caller guarantees `src` for `len` bytes.
        unsafe { self.put_raw(ctx, pe, offset, src, len) }?;
        self.atomic(ctx, pe, sig_offset, op, AmoWidth::W64, sig_value, 0)?;
        Ok(())
    }

    fn fence(&self, ctx: CtxId) -> Result<()> {
        self.ctx(ctx)?;
        self.check_failed()
    }

    fn quiet(&self, ctx: CtxId) -> Result<()> {
        let c = self.ctx(ctx)?;
        let target = c.issued.load(Ordering::Acquire);
        self.drive_until(
            || c.completed.load(Ordering::Acquire) >= target,
            || {
                let done = c.completed.load(Ordering::Acquire);
                format!(
                    "{} of its operations on {ctx} to complete in quiet (acknowledged by their targets)",
                    target.saturating_sub(done)
                )
            },
        )?;
        match c.nbi_error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The progress engine applies remote atomics as CPU atomics on the
    /// mapped segment (`SegMemory`), as does a local atomic.
    fn cpu_atomics(&self) -> bool {
        true
    }
}

impl Ipv6Conduit {
    /// Submits a get of `len` bytes at `offset` on `pe` as commands of at
    /// most the peer's chunk, in order. `land(at, n)` names where the piece
    /// starting at byte `at` of the transfer (`n` bytes) lands and what the
    /// caller wants of its completion; `issued` gets each piece's tag.
    fn submit_get(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        len: usize,
        land: impl Fn(usize, usize) -> (GetInto, Want),
        mut issued: impl FnMut(u64),
    ) -> Result<()> {
        let chunk = self.chunks[pe];
        for at in (0..len).step_by(chunk) {
            let n = chunk.min(len - at);
            let (into, want) = land(at, n);
            let cmd = Command::Get {
                dst: pe as NodeId,
                offset: (offset + at) as u64,
                len: n as u64,
                into,
            };
            issued(self.submit(ctx, cmd, want)?);
        }
        Ok(())
    }
}

impl Ipv6Conduit {
    /// What a blocking and a non-blocking get share: the range check, then
    /// a get that needs no message, done here. A get from this PE's own
    /// segment copies at once (raw pointers and relaxed atomics on both
    /// sides, overlap allowed: `dst` may be segment memory); an empty get
    /// has nothing to move. `Ok(true)` when the get is done, after the
    /// check for a failed peer that every completed operation makes.
    ///
    /// # Safety
    /// `dst..dst + len` is valid for writes for the call.
    unsafe fn get_at_once(
        &self,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<bool> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the source lies in our segment (checked); the caller
            // vouches for `dst`; `copy_shared` allows overlap.
            unsafe { segmem::copy_shared(self.local(offset), dst, len) };
        } else if len != 0 {
            return Ok(false);
        }
        self.check_failed().map(|()| true)
    }

    /// A blocking put of the `len` bytes at `src`: this PE's own segment
    /// directly, else one engine command per chunk, each carrying a copy
    /// of its bytes (so `src` may be reused on return). `src` is read with
    /// raw pointers and relaxed atomics only ([`segmem::copy_out`]): it may
    /// be segment memory the progress thread writes.
    ///
    /// # Safety
    /// `src..src + len` is valid for reads for the call.
    unsafe fn put_raw(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        src: *const u8,
        len: usize,
    ) -> Result<()> {
        check_range(pe, self.size, offset, len, self.segment_len)?;
        if pe == self.rank {
            // SAFETY: the destination lies in our segment (checked), the
            // caller vouches for `src`; `copy_shared` allows overlap.
            unsafe { segmem::copy_shared(src, self.local(offset), len) };
            return self.check_failed();
        }
        if len == 0 {
            return self.check_failed();
        }
        let chunk = self.chunks[pe];
        let mut at = 0;
        while at < len {
            let n = chunk.min(len - at);
            // SAFETY: `at + n <= len` bytes of `src` (the caller's
            // contract) into the `n` bytes `filled` provides.
            let bytes =
                unsafe { gasnet_core::pool::filled(n, |p| segmem::copy_out(src.add(at), p, n)) };
            let cmd = Command::Put {
                dst: pe as NodeId,
                offset: (offset + at) as u64,
                source: PutSource::Bytes(bytes),
            };
            self.submit(ctx, cmd, Want::Nbi)?;
            at += n;
        }
        Ok(())
    }

    /// A blocking get into the `len` bytes at `dst`: from this PE's own
    /// segment directly; else the engine writes the data straight into
    /// the segment when `dst` lies in it, or hands it back to be copied.
    /// `dst` is written with raw pointers and relaxed atomics only: it may
    /// be segment memory (and, in the segment, the progress thread writes
    /// it while this waits).
    ///
    /// # Safety
    /// `dst..dst + len` is valid for writes for the call.
    unsafe fn get_raw(
        &self,
        ctx: CtxId,
        pe: usize,
        offset: usize,
        dst: *mut u8,
        len: usize,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        if unsafe { self.get_at_once(pe, offset, dst, len) }? {
            return Ok(());
        }
        let seg = self.in_segment(dst, len);
        let chunk = self.chunks[pe];
        let mut tags = Vec::with_capacity(len.div_ceil(chunk));
        self.submit_get(
            ctx,
            pe,
            offset,
            len,
            |at, _| {
                let into = match seg {
                    Some(s) => GetInto::Segment(s + at as u64),
                    None => GetInto::BufferLong,
                };
                (into, Want::Value)
            },
            |tag| tags.push(tag),
        )?;
        for (k, tag) in tags.into_iter().enumerate() {
            let c = self.wait_value(tag, || match seg {
                Some(_) => format!(
                    "the data of a blocking get of {len} bytes from PE {pe} at offset {offset:#x}"
                ),
                None => format!("the data of a blocking get from PE {pe} at offset {offset:#x}"),
            })?;
            if seg.is_none() {
                let at = k * chunk;
                let n = chunk.min(len - at);
                if c.data.len() < n {
                    return Err(ConduitError::Io(format!(
                        "a get of {n} bytes from PE {pe} at offset {:#x} was answered with {}",
                        offset + at,
                        c.data.len()
                    )));
                }
                // SAFETY: `at + n <= len` bytes of `dst` (the caller's
                // contract), from the reply's private buffer.
                unsafe { segmem::copy_in(c.data.as_ptr(), dst.add(at), n) };
            }
        }
        Ok(())
    }
}
