//! Collectives in two levels, for teams whose PEs span hosts: within each
//! host through shared memory (a store costs tens of nanoseconds), then
//! among one *leader* per host through the network (a message costs tens
//! of microseconds), so that the network carries one message per host
//! pair and step instead of one per PE pair.
//!
//! A host's leader is its member of lowest team rank (for a broadcast, the
//! root on the root's host). The leader level runs the flat algorithms of
//! the engine on a view of the team made of the leaders, chosen for their
//! number by the same thresholds and variables; the host level is direct:
//!
//! | collective | within a host, before | leaders | within a host, after |
//! |---|---|---|---|
//! | sync, barrier | each member signals its leader | the barrier algorithm | the leader signals each member |
//! | entry sync of a data collective | each member sends its argument summary | the same, merging summaries | the leader sends the team's summary |
//! | broadcast | — | the broadcast algorithm from the root | the leader puts the data into each member's destination |
//! | reductions | each member signals that its source is ready; the leader reads the sources (on-node gets) and combines them | the reduction algorithm on the combined vectors | the leader puts the result into each member's destination |
//!
//! Every member advances the team's scratch step as the flat algorithms
//! do, so the parity that picks a scratch area stays the same on every
//! PE; only leaders use scratch here. `FSHMEM_COLL_HIER` (`auto`, `on`,
//! `off`) chooses: `auto` takes two levels when the team spans several
//! hosts and one of them holds several of its PEs; `on` also runs them on
//! one host (the host level alone), or with one PE per host (the leader
//! level alone).

use super::{Coll, choose_barrier, choose_reduce, reduce_chunk};
use crate::agree::Summary;
use crate::collective::ops::{ReduceOp, Reducible, combine_into};
use crate::config::{BarrierAlgo, HierMode};
use crate::error::Result;
use crate::pod::bytes_of_mut;
use crate::pool::Hier;
use conduits::prelude::*;
use std::sync::Arc;

impl Coll<'_> {
    /// The team's hosts when this collective runs in two levels
    /// (`FSHMEM_COLL_HIER`); `None` for the flat algorithms, and always
    /// inside the leader level.
    pub(super) fn hier(&self) -> Option<Arc<Hier>> {
        if self.view.is_some() {
            return None;
        }
        let mode = self.cfg().hier;
        if mode == HierMode::Off {
            return None;
        }
        let h = self
            .t
            .hier
            .get_or_init(|| Arc::new(Hier::new(self.t, |pe| self.rt.conduit.host_of(pe))));
        (mode == HierMode::On || h.spans_shared_hosts()).then(|| h.clone())
    }

    /// Runs `f` with the algorithms' ranks those of `leaders` (team ranks;
    /// this PE is one of them).
    fn among<R>(&mut self, leaders: Vec<usize>, f: impl FnOnce(&mut Self) -> R) -> R {
        let me = leaders
            .iter()
            .position(|&r| r == self.t.me)
            .expect("a leader runs the leader level");
        self.view = Some((leaders, me));
        let r = f(self);
        self.view = None;
        r
    }

    /// The flat barrier among the leaders.
    fn leaders_sync(&mut self, leaders: Vec<usize>) -> Result<()> {
        self.among(leaders, |c| c.sync())
    }

    /// [`Coll::sync`] in two levels.
    pub(super) fn hier_sync(&mut self, h: &Hier) -> Result<()> {
        let me = self.t.me;
        let host = h.host(me);
        let leader = host[0];
        if me != leader {
            self.signal(leader)?;
            return self.wait(leader);
        }
        for &m in &host[1..] {
            self.wait(m)?;
        }
        self.leaders_sync(h.leaders(None))?;
        for &m in &host[1..] {
            self.signal(m)?;
        }
        Ok(())
    }

    /// The entry sync of a data collective in two levels, carrying the
    /// argument summaries (at byte `at` of each sender's cell) as
    /// [`Coll::sync_agree`] does; returns the team's summary.
    pub(super) fn hier_agree(&mut self, h: &Hier, at: usize, mut sum: Summary) -> Result<Summary> {
        let me = self.t.me;
        let host = h.host(me);
        let leader = host[0];
        if me != leader {
            self.send_summary(leader, at, &sum)?;
            // The leader's summary is the whole team's, this PE's call
            // included; merging it again changes nothing, except when the
            // leader made a collective without the check and left an old
            // summary there, which this PE's call then contradicts.
            let mut all = self.wait_summary(leader, at)?;
            all.merge(&sum);
            return Ok(all);
        }
        for &m in &host[1..] {
            sum.merge(&self.wait_summary(m, at)?);
        }
        let leaders = h.leaders(None);
        sum = self.among(leaders, |c| -> Result<Summary> {
            let (n, me) = (c.n(), c.me());
            match choose_barrier(c.cfg(), n) {
                BarrierAlgo::Dissemination => {
                    let mut d = 1;
                    while d < n {
                        c.send_summary((me + d) % n, at, &sum)?;
                        sum.merge(&c.wait_summary((me + n - d) % n, at)?);
                        d <<= 1;
                    }
                }
                BarrierAlgo::Tree => {
                    let r = super::TREE_RADIX;
                    let kids = (me * r + 1)..((me * r + r + 1).min(n));
                    for k in kids.clone() {
                        sum.merge(&c.wait_summary(k, at)?);
                    }
                    if me != 0 {
                        let parent = (me - 1) / r;
                        c.send_summary(parent, at, &sum)?;
                        // As for a host's members above.
                        let mine = sum;
                        sum = c.wait_summary(parent, at)?;
                        sum.merge(&mine);
                    }
                    for k in kids {
                        c.send_summary(k, at, &sum)?;
                    }
                }
            }
            Ok(sum)
        })?;
        for &m in &host[1..] {
            self.send_summary(m, at, &sum)?;
        }
        Ok(sum)
    }

    /// [`Coll::broadcast`] in two levels (the root has copied its source
    /// into its `dest`).
    pub(super) fn hier_broadcast(
        &mut self,
        h: &Hier,
        dest: usize,
        nbytes: usize,
        root: usize,
    ) -> Result<()> {
        let me = self.t.me;
        let host = h.host(me);
        let leaders = h.leaders(Some(root));
        let leader = leaders[h.host_of[me]];
        if me != leader {
            return self.wait(leader);
        }
        if leaders.len() > 1 {
            let root_at = h.host_of[root];
            // The root already holds the data in `dest`: the leader level
            // broadcasts `dest` to `dest`.
            self.among(leaders, |c| c.broadcast(dest, dest, nbytes, root_at))?;
        }
        for &m in host.iter().filter(|&&m| m != me) {
            self.send_seg(m, dest, dest, nbytes)?;
        }
        Ok(())
    }

    /// The all-reduce of [`Coll::reduce`] in two levels.
    pub(super) fn hier_reduce<O: ReduceOp, T: Reducible<O>>(
        &mut self,
        h: &Hier,
        dest: usize,
        src: usize,
        count: usize,
    ) -> Result<()> {
        let es = size_of::<T>();
        let me = self.t.me;
        let host: Vec<usize> = h.host(me).to_vec();
        let leader = host[0];
        let nl = h.host_count();
        let algo = choose_reduce(self.cfg(), nl, count * es);
        let chunk = reduce_chunk(algo, nl, self.scratch_len(), es);
        let p2 = 1usize << (usize::BITS - 1 - nl.leading_zeros());
        let leaders = h.leaders(None);
        if me != leader {
            // The source is ready; the leader reads it, and puts each
            // chunk of the result into `dest`.
            self.signal(leader)?;
            let mut c0 = 0;
            while c0 < count {
                let _ = self.next_scratch();
                self.wait(leader)?;
                c0 += chunk.min(count - c0);
            }
            return Ok(());
        }
        for &m in &host[1..] {
            self.wait(m)?;
        }
        let mut c0 = 0;
        while c0 < count {
            let m = chunk.min(count - c0);
            let sc = self.next_scratch();
            let mut acc: Vec<T> = self.read(src + c0 * es, m);
            let mut theirs: Vec<T> = acc.clone();
            for &r in &host[1..] {
                self.rt
                    .conduit
                    .get(
                        CtxId::DEFAULT,
                        self.t.members[r],
                        src + c0 * es,
                        bytes_of_mut(&mut theirs),
                    )
                    .map_err(|e| self.err(e))?;
                combine_into::<O, T>(&mut acc, &theirs);
            }
            let d = dest + c0 * es;
            if nl > 1 {
                self.among(leaders.clone(), |c| {
                    c.reduce_chunk::<O, T>(algo, d, sc, acc, p2)
                })?;
            } else {
                self.write(d, &acc);
            }
            for &r in &host[1..] {
                self.send_seg(r, d, d, m * es)?;
            }
            c0 += m;
        }
        Ok(())
    }
}
