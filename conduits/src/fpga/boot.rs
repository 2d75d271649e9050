//! The job's bootstrap through the boards (see "Bootstrap" in the module
//! documentation): a dissemination barrier of board atomics on counters in
//! each PE's bootstrap area, and an exchange through two generations of
//! slots.

use super::*;

impl JobBootstrap for FpgaConduit {
    fn barrier(&self) -> Result<()> {
        self.quiet(CtxId::DEFAULT)?;
        let epoch = self.barrier_epoch.fetch_add(1, Ordering::AcqRel) + 1;
        let (me, n) = (self.rank, self.size);
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n {
            let to = (me + dist) % n;
            let off = self.layout.counter(round);
            self.raw_atomic(
                CtxId::DEFAULT,
                to,
                off,
                AmoOp::Add,
                AmoWidth::W64,
                1,
                0,
                false,
            )?;
            let from = (me + n - dist) % n;
            self.wait_word(
                off,
                |v| v >= epoch,
                || format!("the bootstrap barrier (round {round}: a signal from PE {from})"),
            )?;
            dist <<= 1;
            round += 1;
        }
        self.quiet(CtxId::DEFAULT)
    }

    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > EXCHANGE_MAX {
            return Err(ConduitError::Bootstrap(format!(
                "exchange contribution of {} bytes exceeds {EXCHANGE_MAX}",
                mine.len()
            )));
        }
        let generation = self.exchange_generation.fetch_add(1, Ordering::AcqRel);
        let mut buf = (mine.len() as u64).to_le_bytes().to_vec();
        buf.extend_from_slice(mine);
        for pe in 0..self.size {
            let at = self.layout.slot(generation, self.size, self.rank);
            self.raw_put(CtxId::DEFAULT, pe, at, buf.as_ptr(), buf.len())?;
        }
        self.barrier()?;
        let mut out = Vec::with_capacity(self.size);
        for r in 0..self.size {
            let at = self.layout.slot(generation, self.size, r);
            let len = (self.load64(at) as usize).min(EXCHANGE_MAX);
            let mut v = vec![0u8; len];
            // SAFETY: the slot lies in the bootstrap area of the segment.
            unsafe { std::ptr::copy_nonoverlapping(self.win(at + 8), v.as_mut_ptr(), len) };
            out.push(v);
        }
        Ok(out)
    }
}
