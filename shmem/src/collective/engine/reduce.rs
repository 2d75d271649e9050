//! Reductions (recursive doubling, Rabenseifner, ring; non-power-of-two
//! teams folded in and out) and scans, in chunks when a vector exceeds a
//! scratch area.

use super::*;

impl Coll<'_> {
    fn reduce_algo(&self, nbytes: usize) -> ReduceAlgo {
        choose_reduce(self.cfg(), self.n(), nbytes)
    }

    /// All-reduce of `count` values of `T` from every PE's `src` into every
    /// PE's `dest` (which may be `src`).
    pub(crate) fn reduce<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        dest: usize,
        src: usize,
        count: usize,
    ) -> Result<()> {
        let es = size_of::<T>();
        let n = self.n();
        if count == 0 {
            return Ok(());
        }
        if n == 1 {
            self.copy_local(dest, src, count * es);
            return Ok(());
        }
        if let Some(h) = self.hier() {
            return self.hier_reduce::<O, T>(&h, dest, src, count);
        }
        let algo = self.reduce_algo(count * es);
        let p2 = 1usize << (usize::BITS - 1 - n.leading_zeros());
        let sl = self.scratch_len();
        let chunk = reduce_chunk(algo, n, sl, es);
        let mut c0 = 0;
        while c0 < count {
            let m = chunk.min(count - c0);
            let sc = self.next_scratch();
            let acc: Vec<T> = self.read(src + c0 * es, m);
            self.reduce_chunk::<O, T>(algo, dest + c0 * es, sc, acc, p2)?;
            c0 += m;
        }
        Ok(())
    }

    /// One chunk of an all-reduce by `algo`: `acc` is this PE's part, the
    /// result goes to `dest`, scratch offset `sc` is this step's.
    pub(super) fn reduce_chunk<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        algo: ReduceAlgo,
        dest: usize,
        sc: usize,
        acc: Vec<T>,
        p2: usize,
    ) -> Result<()> {
        match algo {
            ReduceAlgo::RecursiveDoubling => self.rd_chunk::<O, T>(dest, sc, acc, p2),
            ReduceAlgo::Rabenseifner => self.rab_chunk::<O, T>(dest, sc, acc, p2),
            ReduceAlgo::Ring => self.ring_chunk::<O, T>(dest, sc, acc),
        }
    }

    /// The fold of a non-power-of-two team onto `p2` PEs: the first
    /// `2 (n - p2)` PEs pair up, the even one of each pair hands its vector
    /// to the odd one (scratch offset `sc`) and sits out. Returns this PE's
    /// rank among the `p2` (None for those sitting out).
    fn fold_in<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        sc: usize,
        acc: &mut [T],
        p2: usize,
    ) -> Result<Option<usize>> {
        let (n, me) = (self.n(), self.me());
        let rem = n - p2;
        if me < 2 * rem {
            if me % 2 == 0 {
                self.send(me + 1, sc, bytes_of(acc))?;
                Ok(None)
            } else {
                self.wait(me - 1)?;
                let inc: Vec<T> = self.read(sc, acc.len());
                combine_into::<O, T>(acc, &inc);
                Ok(Some(me / 2))
            }
        } else {
            Ok(Some(me - rem))
        }
    }

    /// The team rank of folded rank `nr`.
    fn unfold(&self, nr: usize, p2: usize) -> usize {
        let rem = self.n() - p2;
        if nr < rem { 2 * nr + 1 } else { nr + rem }
    }

    /// After the folded algorithm left the result in `dest` on the odd PE
    /// of a pair, it hands it to the even one.
    fn fold_out(&mut self, dest: usize, len: usize, p2: usize, sat_out: bool) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        if sat_out {
            self.wait(me + 1)
        } else if me < 2 * (n - p2) {
            self.send_seg(me - 1, dest, dest, len)
        } else {
            Ok(())
        }
    }

    fn rd_chunk<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        dest: usize,
        sc: usize,
        mut acc: Vec<T>,
        p2: usize,
    ) -> Result<()> {
        let cb = acc.len() * size_of::<T>();
        let nr = self.fold_in::<O, T>(sc, &mut acc, p2)?;
        if let Some(nr) = nr {
            let mut mask = 1;
            let mut r = 1;
            while mask < p2 {
                let partner = self.unfold(nr ^ mask, p2);
                let slot = sc + r * cb;
                self.send(partner, slot, bytes_of(&acc))?;
                self.wait(partner)?;
                let inc: Vec<T> = self.read(slot, acc.len());
                combine_into::<O, T>(&mut acc, &inc);
                mask <<= 1;
                r += 1;
            }
            self.write(dest, &acc);
        }
        self.fold_out(dest, cb, p2, nr.is_none())
    }

    fn rab_chunk<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        dest: usize,
        sc: usize,
        mut acc: Vec<T>,
        p2: usize,
    ) -> Result<()> {
        let es = size_of::<T>();
        let m = acc.len();
        let nr = self.fold_in::<O, T>(sc, &mut acc, p2)?;
        if let Some(nr) = nr {
            let bs = |i: usize| i * m / p2;
            let (mut lo, mut hi) = (0usize, p2);
            let mut roff = sc + m * es;
            let mut stack = Vec::new();
            let mut mask = p2 >> 1;
            // Reduce-scatter by recursive halving.
            while mask > 0 {
                let partner = self.unfold(nr ^ mask, p2);
                let mid = (lo + hi) / 2;
                let (keep, give) = if nr & mask == 0 {
                    ((lo, mid), (mid, hi))
                } else {
                    ((mid, hi), (lo, mid))
                };
                self.send(partner, roff, bytes_of(&acc[bs(give.0)..bs(give.1)]))?;
                self.wait(partner)?;
                let k = bs(keep.1) - bs(keep.0);
                let inc: Vec<T> = self.read(roff, k);
                combine_into::<O, T>(&mut acc[bs(keep.0)..bs(keep.1)], &inc);
                roff += k * es;
                stack.push((mask, lo, hi));
                (lo, hi) = keep;
                mask >>= 1;
            }
            self.write(dest + bs(lo) * es, &acc[bs(lo)..bs(hi)]);
            // Allgather by recursive doubling, straight into `dest`.
            while let Some((mask, plo, phi)) = stack.pop() {
                let partner = self.unfold(nr ^ mask, p2);
                let o = dest + bs(lo) * es;
                self.send_seg(partner, o, o, (bs(hi) - bs(lo)) * es)?;
                self.wait(partner)?;
                (lo, hi) = (plo, phi);
            }
        }
        self.fold_out(dest, m * es, p2, nr.is_none())
    }

    fn ring_chunk<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        dest: usize,
        sc: usize,
        mut acc: Vec<T>,
    ) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        let es = size_of::<T>();
        let m = acc.len();
        let bs = |i: usize| i * m / n;
        let bmax = m.div_ceil(n) * es;
        let (right, left) = ((me + 1) % n, (me + n - 1) % n);
        for s in 0..n - 1 {
            let sb = (me + n - s) % n;
            let rb = (me + 2 * n - s - 1) % n;
            let slot = sc + s * bmax;
            self.send(right, slot, bytes_of(&acc[bs(sb)..bs(sb + 1)]))?;
            self.wait(left)?;
            let inc: Vec<T> = self.read(slot, bs(rb + 1) - bs(rb));
            combine_into::<O, T>(&mut acc[bs(rb)..bs(rb + 1)], &inc);
        }
        let own = (me + 1) % n;
        self.write(dest + bs(own) * es, &acc[bs(own)..bs(own + 1)]);
        for s in 0..n - 1 {
            let b = (me + 1 + n - s) % n;
            let o = dest + bs(b) * es;
            self.send_seg(right, o, o, (bs(b + 1) - bs(b)) * es)?;
            self.wait(left)?;
        }
        Ok(())
    }

    /// AND of one word over the team (team creation's slot agreement),
    /// through the slot's auxiliary words.
    pub(crate) fn and_u64(&mut self, mine: u64) -> Result<u64> {
        let (a0, a1) = (self.aux(0), self.aux(1));
        self.write(a0, &[mine]);
        self.reduce::<crate::collective::ops::And, u64>(a1, a0, 1)?;
        Ok(self.read::<u64>(a1, 1)[0])
    }

    // ----------------------------------------------------------------
    // scans

    /// Inclusive (or exclusive) prefix reduction in team order, by
    /// recursive doubling (Hillis-Steele) through scratch, a team sync
    /// after each chunk.
    pub(crate) fn scan<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        dest: usize,
        src: usize,
        count: usize,
        exclusive: bool,
    ) -> Result<()> {
        let es = size_of::<T>();
        let (n, me) = (self.n(), self.me());
        if count == 0 {
            return Ok(());
        }
        let rounds = (usize::BITS - (n - 1).leading_zeros()).max(1) as usize;
        let chunk = (self.scratch_len() / rounds / es).max(1);
        let mut c0 = 0;
        while c0 < count {
            let m = chunk.min(count - c0);
            let cb = m * es;
            let sc = self.next_scratch();
            let mut acc: Vec<T> = self.read(src + c0 * es, m);
            let mut excl: Option<Vec<T>> = None;
            let (mut d, mut r) = (1, 0);
            while d < n {
                if me + d < n {
                    self.send(me + d, sc + r * cb, bytes_of(&acc))?;
                }
                if me >= d {
                    self.wait(me - d)?;
                    let inc: Vec<T> = self.read(sc + r * cb, m);
                    excl = Some(match excl {
                        None => inc.clone(),
                        Some(mut e) => {
                            combine_into::<O, T>(&mut e, &inc);
                            e
                        }
                    });
                    combine_into::<O, T>(&mut acc, &inc);
                }
                d <<= 1;
                r += 1;
            }
            let out = if exclusive {
                excl.unwrap_or_else(|| vec![T::identity(); m])
            } else {
                acc
            };
            self.write(dest + c0 * es, &out);
            self.sync()?;
            c0 += m;
        }
        Ok(())
    }
}
