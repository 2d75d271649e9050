//! The data-movement collectives: broadcast, fcollect and collect,
//! alltoall and alltoalls.

use super::*;

impl Coll<'_> {
    fn bcast_algo(&self, nbytes: usize) -> BcastAlgo {
        choose_bcast(self.cfg(), self.n(), nbytes)
    }

    /// Broadcast of `nbytes` from `src` on team PE `root` to `dest` on every
    /// PE (the root included).
    pub(crate) fn broadcast(
        &mut self,
        dest: usize,
        src: usize,
        nbytes: usize,
        root: usize,
    ) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        if nbytes == 0 {
            return Ok(());
        }
        if me == root {
            self.copy_local(dest, src, nbytes);
        }
        if n == 1 {
            return Ok(());
        }
        if let Some(h) = self.hier() {
            return self.hier_broadcast(&h, dest, nbytes, root);
        }
        let v = (me + n - root) % n;
        let abs = |r: usize| (r + root) % n;
        match self.bcast_algo(nbytes) {
            BcastAlgo::Binomial => {
                let mut mask = 1;
                while mask < n {
                    if v & mask != 0 {
                        self.wait(abs(v - mask))?;
                        break;
                    }
                    mask <<= 1;
                }
                mask >>= 1;
                while mask > 0 {
                    if v + mask < n {
                        self.send_seg(abs(v + mask), dest, dest, nbytes)?;
                    }
                    mask >>= 1;
                }
            }
            BcastAlgo::ScatterAllgather => {
                let b = nbytes.div_ceil(n);
                let blk = |j: usize| {
                    let lo = (j * b).min(nbytes);
                    (lo, ((j + 1) * b).min(nbytes) - lo)
                };
                if v == 0 {
                    for j in 1..n {
                        let (o, l) = blk(j);
                        self.send_seg(abs(j), dest + o, dest + o, l)?;
                    }
                } else {
                    self.wait(root)?;
                }
                let (right, left) = (abs((v + 1) % n), abs((v + n - 1) % n));
                for s in 0..n - 1 {
                    if !(v + 1).is_multiple_of(n) {
                        let (o, l) = blk((v + n - s) % n);
                        self.send_seg(right, dest + o, dest + o, l)?;
                    }
                    if v != 0 {
                        self.wait(left)?;
                    }
                }
            }
        }
        Ok(())
    }

    // ----------------------------------------------------------------
    // fcollect / collect

    fn fcollect_algo(&self, total: usize) -> FcollectAlgo {
        choose_fcollect(self.cfg(), self.n(), total)
    }

    /// Allgather of variable blocks: team PE `i`'s block is
    /// `pre[i]..pre[i+1]` bytes of `dest`; this PE's is already in place.
    fn allgather(&mut self, dest: usize, pre: &[usize]) -> Result<()> {
        let (n, me) = (self.n(), self.me());
        if n == 1 {
            return Ok(());
        }
        // Bytes of blocks a..a+k (a + k <= n).
        let span = |a: usize, k: usize| (dest + pre[a], pre[a + k] - pre[a]);
        match self.fcollect_algo(pre[n]) {
            FcollectAlgo::Ring => {
                let (right, left) = ((me + 1) % n, (me + n - 1) % n);
                for s in 0..n - 1 {
                    let (o, l) = span((me + n - s) % n, 1);
                    self.send_seg(right, o, o, l)?;
                    self.wait(left)?;
                }
            }
            FcollectAlgo::RecursiveDoubling => {
                let mut d = 1;
                while d < n {
                    let partner = me ^ d;
                    let (o, l) = span(me & !(d - 1), d);
                    self.send_seg(partner, o, o, l)?;
                    self.wait(partner)?;
                    d <<= 1;
                }
            }
            FcollectAlgo::Bruck => {
                let mut d = 1;
                while d < n {
                    let cnt = d.min(n - d);
                    let to = (me + n - d) % n;
                    // Blocks me..me+cnt (mod n): one or two runs.
                    let first = cnt.min(n - me);
                    let (o1, l1) = span(me, first);
                    let (o2, l2) = span(0, cnt - first);
                    self.send_seg(to, o1, o1, l1)?;
                    self.send_seg(to, o2, o2, l2)?;
                    self.wait_n((me + d) % n, 2)?;
                    d <<= 1;
                }
            }
        }
        Ok(())
    }

    /// fcollect: `nbytes` from every PE's `src`, in team order, into `dest`.
    pub(crate) fn fcollect(&mut self, dest: usize, src: usize, nbytes: usize) -> Result<()> {
        if nbytes == 0 {
            return Ok(());
        }
        let n = self.n();
        self.copy_local(dest + self.me() * nbytes, src, nbytes);
        let pre: Vec<usize> = (0..=n).map(|i| i * nbytes).collect();
        self.allgather(dest, &pre)
    }

    /// collect: `nbytes` (this PE's, possibly different on each) from every
    /// PE, concatenated in team order into `dest`, which holds
    /// `dest_cap` bytes. Returns the total.
    pub(crate) fn collect(
        &mut self,
        dest: usize,
        dest_cap: usize,
        src: usize,
        nbytes: usize,
    ) -> Result<usize> {
        let (n, me) = (self.n(), self.me());
        // Every PE's size, gathered in scratch.
        let sc = self.next_scratch();
        self.write(sc + 8 * me, &[nbytes as u64]);
        let pre8: Vec<usize> = (0..=n).map(|i| 8 * i).collect();
        self.allgather(sc, &pre8)?;
        let sizes: Vec<u64> = self.read(sc, n);
        let mut pre = Vec::with_capacity(n + 1);
        pre.push(0usize);
        for s in &sizes {
            pre.push(pre.last().copied().unwrap_or(0) + *s as usize);
        }
        let total = pre[n];
        if total > dest_cap {
            // Every PE sees the same total; all fail alike.
            return Err(ShmemError::Invalid {
                pe: self.rt.my_pe(),
                call: self.call,
                reason: format!(
                    "the collected data is {total} bytes, the destination holds {dest_cap}"
                ),
            });
        }
        if total == 0 {
            return Ok(0);
        }
        self.copy_local(dest + pre[me], src, nbytes);
        self.allgather(dest, &pre)?;
        Ok(total)
    }

    // ----------------------------------------------------------------
    // alltoall

    fn alltoall_algo(&self, block: usize) -> AlltoallAlgo {
        choose_alltoall(self.cfg(), block)
    }

    /// alltoall: block `j` (`nbytes` at `src + j * nbytes`) goes to team PE
    /// `j`'s `dest + me * nbytes`.
    pub(crate) fn alltoall(&mut self, dest: usize, src: usize, nbytes: usize) -> Result<()> {
        if nbytes == 0 {
            return Ok(());
        }
        let (n, me) = (self.n(), self.me());
        self.copy_local(dest + me * nbytes, src + me * nbytes, nbytes);
        let pairwise = self.alltoall_algo(nbytes) == AlltoallAlgo::Pairwise;
        for s in 1..n {
            let to = (me + s) % n;
            self.send_seg(to, dest + me * nbytes, src + to * nbytes, nbytes)?;
            if pairwise {
                self.wait((me + n - s) % n)?;
            }
        }
        if !pairwise {
            for s in 1..n {
                self.wait((me + n - s) % n)?;
            }
        }
        Ok(())
    }

    /// alltoalls: element `k` of block `j` is at `src + ((j * nelems + k) *
    /// sst) * es` and lands at `dest + ((me * nelems + k) * dst) * es` on
    /// team PE `j`.
    pub(crate) fn alltoalls(
        &mut self,
        dest: usize,
        src: usize,
        dst: usize,
        sst: usize,
        es: usize,
        nelems: usize,
    ) -> Result<()> {
        if nelems == 0 {
            return Ok(());
        }
        let (n, me) = (self.n(), self.me());
        let d_at = |k: usize| dest + (me * nelems + k) * dst * es;
        let s_at = |j: usize, k: usize| src + (j * nelems + k) * sst * es;
        for k in 0..nelems {
            self.copy_local(d_at(k), s_at(me, k), es);
        }
        let pairwise = self.alltoall_algo(nelems * es) == AlltoallAlgo::Pairwise;
        for s in 1..n {
            let to = (me + s) % n;
            let pe = self.t.members[to];
            for k in 0..nelems {
                self.rt
                    .conduit
                    .put(CtxId::DEFAULT, pe, d_at(k), &self.seg(s_at(to, k), es))
                    .map_err(|e| self.err(e))?;
            }
            self.rt
                .conduit
                .fence(CtxId::DEFAULT)
                .map_err(|e| self.err(e))?;
            self.signal(to)?;
            if pairwise {
                self.wait((me + n - s) % n)?;
            }
        }
        if !pairwise {
            for s in 1..n {
                self.wait((me + n - s) % n)?;
            }
        }
        Ok(())
    }
}
