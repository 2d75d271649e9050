//! The argument check of the deprecated active-set collectives (C ABI:
//! `shmem_broadcast32`, `shmem_int_sum_to_all`, `shmem_barrier`...).
//!
//! A team's PEs meet on the team's slot, so its entry sync can compare
//! their calls (`collective::agree`). PEs that pass different active sets
//! (`PE_start`, `logPE_stride`, `PE_size`) would each wait on the slot of
//! their own set and never meet. So every active-set call starts with an
//! *announcement* on an area that all active sets share, whose cells are
//! indexed by world PE: each PE of the set, as the caller sees it, puts its
//! whole call record (routine, arguments, set) into its cell on every other
//! PE of that set, then waits for the record of each of them. Counted per
//! pair of PEs, a PE's `k`-th announcement to another is the `k`-th call
//! that involves both as it sees them, so the check is exact whatever
//! other sets each took part in meanwhile: when a record that arrives
//! differs from the PE's own, the two PEs disagree. When every record
//! agrees, everyone of the set has arrived: the announcement is the
//! collective's entry barrier, and its data then moves on the set's slot.
//!
//! A PE knows of a disagreement once a differing record arrives; it names
//! the lowest PE whose record it holds and the lowest PE whose call differs
//! from that one's, once every expected record arrived (or five seconds
//! after the last one, if some never come). A PE may also wait for a
//! record that never comes because the other PE's set leaves it out. That
//! PE went on; once it reached `shmem_finalize` (which waits for this one)
//! it will never call again: the waiting PE reads, with one-sided gets,
//! whether its peer is finalizing and how many announcements it had sent
//! it, and when none is on its way, it names its own call and the peer's
//! last active-set call. (A peer that never finalizes, busy elsewhere or
//! waiting outside the collectives, leaves the wait as any other: endless,
//! unless `FSHMEM_WAIT_TIMEOUT` bounds it, naming the PE awaited.)
//!
//! Every PE must then report the same disagreement and the job end with
//! status 1. The PE that found it claims PE 0's *finding* (first claim
//! wins), writes the two records there, and sets a *notice* word on every
//! PE. Every collective wait of the runtime looks at its notice while it
//! waits (a local load), so PEs blocked anywhere in a collective, the
//! finalization's barrier included, fetch the finding and print it. Each
//! counts its report on PE 0 and leaves once all have (or none more came
//! for a few seconds: a PE busy outside the library does not hold the
//! others forever); the job ends by a global exit with status 1. Nothing
//! moves before the announcement completes, so no PE writes past what
//! another asked for.
//!
//! The area's layout, and what a finalizing PE publishes in it, are the
//! runtime's ([`crate::runtime::active_area`]).

use crate::agree::{ActiveSet, Args, RECORD_LEN, Record};
use crate::error::{Result, ShmemError};
use crate::runtime::Runtime;
use crate::runtime::active_area::{
    Area, CELL, CLAIM, FINALIZING, FINDING, LAST, NOTICE, READY, REPORTED, SENT,
};
use conduits::prelude::*;
use conduits::{AmoOp, AmoWidth, SignalOp};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a PE that holds a differing record waits for the records
/// still missing before it names the disagreement from what it has (a
/// fallback: usually another PE of the set has every record and names
/// the lowest pair first, or the finalization rule applies).
const PARTIAL_AFTER: Duration = Duration::from_secs(5);
/// How long a waiting PE waits before it first asks whether the PE it
/// waits for is finalizing, and then between asks.
const FINALIZE_PROBE: Duration = Duration::from_millis(20);
/// How long the reporting PEs wait, without a new report, for PEs that do
/// not report (busy outside the library) before the job ends.
const REPORT_GRACE: Duration = Duration::from_secs(3);

/// The announcement that starts active-set call `call` with `args` on
/// `set`: returns once every PE of the set has announced the same call;
/// when two PEs disagree, reports it (see the module) and ends the job.
/// This PE must be a member of `set`. Announcements of one PE are made one
/// at a time (the area's lock is held throughout; its buffers are reused,
/// so a call allocates nothing).
pub(crate) fn announce(rt: &Runtime, call: &'static str, set: ActiveSet, args: Args) -> Result<()> {
    let Some(area) = rt.active_area.as_ref() else {
        return Ok(());
    };
    let (me, n) = (rt.my_pe(), rt.n_pes());
    let mine = Record::new(me, call, args.on_set(set));
    let mut guard = area.state.lock().unwrap_or_else(|p| p.into_inner());
    let st = &mut *guard;
    st.last = Some(mine);
    st.pending.clear();
    st.known.clear();
    let bytes = mine.encode();
    let cell = area.cell(n, me);
    for i in 0..set.size {
        let q = set.start + (i << set.log_stride);
        if q == me {
            continue;
        }
        let k = st.sent[q];
        st.sent[q] += 1;
        let place = cell + 8 + RECORD_LEN * (k % 2) as usize;
        match rt.conduit.peer_segment(q) {
            // A PE of this host: straight into its segment, as the
            // collectives' own messages go (`collective::engine`); whether
            // a PE is reached so never changes, so every message to one
            // counter takes one path.
            Some(base) => {
                debug_assert!(cell + CELL <= rt.conduit.segment_len());
                // SAFETY: `base` maps PE `q`'s segment, as long as this
                // PE's; the place and the counter lie in the area inside
                // it (the area's length holds `n` cells). The bytes are
                // copied from a local buffer with relaxed atomic stores
                // (`conduits::segmem`), so the copy races with no access
                // of this process; the counter is only ever accessed
                // atomically, and its owner reads the place after seeing
                // the count (acquire).
                unsafe {
                    conduits::segmem::copy_in(bytes.as_ptr(), base.add(place), bytes.len());
                    AtomicU64::from_ptr(base.add(cell).cast()).fetch_add(1, Ordering::AcqRel);
                }
            }
            None => rt
                .conduit
                .put_signal(CtxId::DEFAULT, q, place, &bytes, cell, SignalOp::Add, 1)
                .map_err(|e| rt.err(call, e))?,
        }
        st.expected[q] += 1;
        st.pending.push((q, st.expected[q]));
    }
    let mut differs = false;
    let mut backoff = conduits::wait::Backoff::new();
    // Read only once the wait has stopped spinning.
    let mut last_news: Option<Instant> = None;
    let mut next_probe: Option<Instant> = None;
    while !st.pending.is_empty() {
        let before = st.pending.len();
        let known = &mut st.known;
        st.pending.retain(|&(q, k)| {
            let cell = area.cell(n, q);
            if rt.load_word(cell, AmoWidth::W64) < k {
                return true;
            }
            let mut b = [0u8; RECORD_LEN];
            let place = cell + 8 + RECORD_LEN * ((k - 1) % 2) as usize;
            // SAFETY: the place lies in this PE's area, inside its
            // segment; it is copied with relaxed atomic loads
            // (`conduits::segmem`) into the local `b`. The sender wrote it
            // before the count that said it arrived (acquire above) and
            // writes it again only two of its calls with this PE later,
            // after this PE's next announcement.
            unsafe { conduits::segmem::copy_out(rt.local_addr(place), b.as_mut_ptr(), b.len()) };
            let r = Record::decode(&b).with_rank(q);
            differs |= !r.same_call(&mine);
            known.push(r);
            false
        });
        if st.pending.len() != before {
            last_news = None;
            backoff.reset();
            continue;
        }
        rt.conduit.poll().map_err(|e| rt.err(call, e))?;
        if !backoff.is_yielding() {
            backoff.snooze();
            continue;
        }
        watch(rt, call);
        let now = Instant::now();
        let since = *last_news.get_or_insert(now);
        if differs && now.duration_since(since) >= PARTIAL_AFTER {
            st.known.push(mine);
            if let Some(f) = finding(&st.known) {
                found(rt, call, f)
            }
        }
        if let Some(waited) = backoff.timed_out() {
            let (q, _) = st.pending[0];
            let what = format!(
                "PE {q} to announce {} (it has not called it, or not on this set)",
                mine.describe()
            );
            return Err(rt.err(call, conduits::ConduitError::Timeout { what, waited }));
        }
        if now >= *next_probe.get_or_insert(now + FINALIZE_PROBE) {
            next_probe = Some(now + FINALIZE_PROBE);
            for &(q, k) in &st.pending {
                if let Some(f) = finalized_peer(rt, call, area, &mine, q, k)? {
                    found(rt, call, f)
                }
            }
        }
        backoff.snooze();
    }
    if differs {
        st.known.push(mine);
        if let Some(f) = finding(&st.known) {
            found(rt, call, f)
        }
    }
    Ok(())
}

/// The disagreement among `known` records (world PEs as ranks), if any:
/// the lowest PE, and the lowest PE whose call differs from its.
fn finding(known: &[Record]) -> Option<(Record, Record)> {
    let first = known.iter().min_by_key(|r| r.rank())?;
    let other = known
        .iter()
        .filter(|r| !r.same_call(first))
        .min_by_key(|r| r.rank())?;
    Some((*first, *other))
}

/// Whether PE `q`, whose `k`-th announcement this PE waits for, went on to
/// `shmem_finalize` with none on its way: then it will never send it, and
/// the two calls disagree (`q`'s last active-set call against `mine`).
fn finalized_peer(
    rt: &Runtime,
    call: &'static str,
    area: &Area,
    mine: &Record,
    q: usize,
    k: u64,
) -> Result<Option<(Record, Record)>> {
    let n = rt.n_pes();
    if get_word(rt, call, q, area.base + FINALIZING)? == 0 {
        return Ok(None);
    }
    // Published before the flag: the announcements it ever sent here.
    let sent = get_word(rt, call, q, area.base + SENT + 8 * rt.my_pe())?;
    let arrived = rt.load_word(area.cell(n, q), AmoWidth::W64);
    if sent >= k || arrived >= k {
        return Ok(None);
    }
    let mut b = [0u8; RECORD_LEN];
    rt.conduit
        .get(CtxId::DEFAULT, q, area.base + LAST, &mut b)
        .map_err(|e| rt.err(call, e))?;
    let theirs = if b.iter().all(|&x| x == 0) {
        Record::empty(q)
    } else {
        Record::decode(&b)
    }
    .with_rank(q)
    .then_finalized();
    let pair = if q < rt.my_pe() {
        (theirs, *mine)
    } else {
        (*mine, theirs)
    };
    Ok(Some(pair))
}

fn get_word(rt: &Runtime, call: &'static str, pe: usize, off: usize) -> Result<u64> {
    let mut b = [0u8; 8];
    rt.conduit
        .get(CtxId::DEFAULT, pe, off, &mut b)
        .map_err(|e| rt.err(call, e))?;
    Ok(u64::from_le_bytes(b))
}

/// Called while any collective waits: when a PE has found a disagreement
/// of active-set calls (this PE's notice is set), reports it and ends the
/// job; otherwise returns at once.
#[inline]
pub(crate) fn watch(rt: &Runtime, call: &'static str) {
    if let Some(area) = rt.active_area.as_ref()
        && rt.load_word(area.base + NOTICE, AmoWidth::W64) != 0
    {
        report(rt, call)
    }
}

/// This PE found a disagreement: claims PE 0's finding (the first claim
/// wins), tells every PE, and reports.
fn found(rt: &Runtime, call: &'static str, (first, other): (Record, Record)) -> ! {
    let Some(area) = rt.active_area.as_ref() else {
        unreachable!("only announcements find disagreements")
    };
    let me = rt.my_pe();
    let amo = |pe: usize, off: usize, op: AmoOp, v: u64, cmp: u64| {
        rt.conduit
            .atomic(CtxId::DEFAULT, pe, off, op, AmoWidth::W64, v, cmp)
    };
    let claimed = amo(0, area.base + CLAIM, AmoOp::CompareSwap, me as u64 + 1, 0);
    if claimed == Ok(0) {
        let mut b = [0u8; 2 * RECORD_LEN];
        b[..RECORD_LEN].copy_from_slice(&first.encode());
        b[RECORD_LEN..].copy_from_slice(&other.encode());
        let _ = rt.conduit.put(CtxId::DEFAULT, 0, area.base + FINDING, &b);
        let _ = rt.conduit.quiet(CtxId::DEFAULT);
        let _ = amo(0, area.base + READY, AmoOp::Set, 1, 0);
        let _ = rt.conduit.quiet(CtxId::DEFAULT);
    }
    for pe in 0..rt.n_pes() {
        let _ = amo(pe, area.base + NOTICE, AmoOp::Set, 1, 0);
    }
    let _ = rt.conduit.quiet(CtxId::DEFAULT);
    report(rt, call)
}

/// Reports PE 0's finding once PE 0 has it, counts the report there, and
/// ends the job with status 1 once every PE reported (or none more did
/// for [`REPORT_GRACE`]). Only one thread of the process reports; any
/// other that gets here waits for the process to end.
fn report(rt: &Runtime, call: &'static str) -> ! {
    static REPORTING: AtomicBool = AtomicBool::new(false);
    if REPORTING.swap(true, Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
    let Some(area) = rt.active_area.as_ref() else {
        unreachable!("a notice arrives only in the area")
    };
    let me = rt.my_pe();
    let poll_word = |off: usize, done: &dyn Fn(u64) -> bool, limit: Option<Duration>| {
        let mut backoff = conduits::wait::Backoff::with_timeout(None);
        let mut last = None;
        let mut since = Instant::now();
        loop {
            let _ = rt.conduit.poll();
            match get_word(rt, call, 0, off) {
                Ok(v) if done(v) => return true,
                Ok(v) if last != Some(v) => {
                    last = Some(v);
                    since = Instant::now();
                }
                Err(_) => return false,
                Ok(_) => {}
            }
            if limit.is_some_and(|l| since.elapsed() >= l) {
                return false;
            }
            backoff.snooze();
        }
    };
    let mut b = [0u8; 2 * RECORD_LEN];
    let have = poll_word(area.base + READY, &|v| v != 0, None)
        && rt
            .conduit
            .get(CtxId::DEFAULT, 0, area.base + FINDING, &mut b)
            .is_ok();
    if have {
        let mut r = [0u8; RECORD_LEN];
        r.copy_from_slice(&b[..RECORD_LEN]);
        let first = Record::decode(&r);
        r.copy_from_slice(&b[RECORD_LEN..]);
        let other = Record::decode(&r);
        let e = ShmemError::CollectiveMismatch {
            pe: me,
            call,
            first_pe: first.rank(),
            first: first.describe(),
            other_pe: other.rank(),
            other: other.describe(),
        };
        conduits::report!("{e}");
        let _ = rt.conduit.atomic(
            CtxId::DEFAULT,
            0,
            area.base + REPORTED,
            AmoOp::Add,
            AmoWidth::W64,
            1,
            0,
        );
        let n = rt.n_pes() as u64;
        poll_word(area.base + REPORTED, &|v| v >= n, Some(REPORT_GRACE));
    }
    rt.global_exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(pe: usize, set: ActiveSet, n: usize) -> Record {
        Record::new(
            pe,
            "shmem_int_sum_to_all",
            Args::reduce::<i32>("sum", n).on_set(set),
        )
    }

    #[test]
    fn the_finding_names_the_lowest_pe_and_the_lowest_that_differs() {
        let a = ActiveSet::new(0, 0, 3);
        let b = ActiveSet::new(1, 0, 2);
        assert_eq!(finding(&[rec(2, a, 4), rec(1, a, 4)]), None);
        let f = finding(&[rec(2, b, 4), rec(1, a, 4), rec(0, a, 4)]).expect("differ");
        assert_eq!((f.0.rank(), f.1.rank()), (0, 2));
        assert_eq!(
            f.1.describe(),
            "shmem_int_sum_to_all on the active set PE_start 1, logPE_stride 0, PE_size 2 \
             with 4 elements of 4 bytes"
        );
        // The count differs as well as the set.
        let f = finding(&[rec(0, a, 4), rec(1, a, 5)]).expect("differ");
        assert_eq!((f.0.rank(), f.1.rank()), (0, 1));
        // A set of one PE is the same set whatever the stride.
        assert_eq!(
            rec(0, ActiveSet::new(3, 2, 1), 1).hash(),
            rec(0, ActiveSet::new(3, 0, 1), 1).hash()
        );
        assert_eq!(ActiveSet::new(1, 1, 3).members(), vec![1, 3, 5]);
    }

    #[test]
    fn a_finalized_peer_is_described_with_its_last_call() {
        let r = rec(1, ActiveSet::new(1, 0, 1), 4).then_finalized();
        assert_eq!(Record::decode(&r.encode()), r);
        assert_eq!(
            r.describe(),
            "shmem_int_sum_to_all on the active set PE_start 1, logPE_stride 0, PE_size 1 \
             with 4 elements of 4 bytes, then shmem_finalize"
        );
        assert_eq!(
            Record::empty(3).then_finalized().describe(),
            "shmem_finalize"
        );
        let bar = Record::new(
            0,
            "shmem_barrier",
            Args::barrier().on_set(ActiveSet::new(0, 1, 2)),
        );
        assert_eq!(
            bar.describe(),
            "shmem_barrier on the active set PE_start 0, logPE_stride 1, PE_size 2"
        );
    }
}
