//! The argument check of data collectives: every PE of the team must call
//! the same collective with the same root, element count, element size,
//! operator and strides (a collect's counts may differ). The check rides
//! on the team sync that starts every data collective, so it costs no
//! extra message: each sync message carries a 24-byte [`Summary`] into the
//! cache line of the counter it increments.
//!
//! # The summary
//!
//! Each PE's call is a [`Record`] (the routine's name and its arguments)
//! and a 64-bit hash of the arguments. A summary describes a set of PEs
//! by two (team rank, hash) pairs: the *reference*, the lowest team rank
//! in the set, and the *difference*, the lowest team rank whose hash
//! differs from the reference's (if any). Merging two summaries gives
//! exactly the summary of the union of their sets (the lower reference
//! wins; the difference is the lowest differing rank among the four
//! pairs), and merging is idempotent, so the overlapping paths of a
//! dissemination barrier and the gather of a tree barrier both end with
//! every PE holding the summary of the whole team: the same one on every
//! PE. If it has a difference, every PE leaves its full record (the
//! routine's name and its arguments) in its team slot, fetches the two
//! PEs' records, and reports the same two PEs and their two calls, before
//! any data moves.
//!
//! The deprecated active-set collectives carry their set (`PE_start`,
//! `logPE_stride`, `PE_size`) in their arguments too, and check them
//! otherwise: PEs that pass different sets never meet on one team slot, so
//! they exchange whole records on an area of their own
//! (`collective::active`).

use crate::error::ShmemError;

/// Which data collective a PE called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `v`: root, elements, element size.
    Broadcast = 1,
    /// `v`: elements, element size.
    Fcollect = 2,
    /// `v`: element size (counts may differ).
    Collect = 3,
    /// `v`: elements per block, element size.
    Alltoall = 4,
    /// `v`: elements per block, element size, dst stride, sst stride.
    Alltoalls = 5,
    /// `v`: elements, element size, operator and type tag.
    Reduce = 6,
    /// `v`: elements, element size, operator and type tag, exclusive.
    Scan = 7,
    /// A symmetric object made read-only ([`crate::SymVec::into_read_only`]).
    /// `v`: segment offset, bytes, element size (bit 63: this PE could not
    /// complete its operations), the team's count of checked calls.
    ReadOnly = 8,
    /// A read-only object made writable again
    /// ([`crate::sym::SymReadOnly::into_mut`]); `v` as for `ReadOnly`.
    Writable = 9,
    /// A read-only object freed ([`crate::sym::SymReadOnly::free`]); `v` as
    /// for `ReadOnly`.
    FreeReadOnly = 10,
    /// A barrier or sync over an active set (`shmem_barrier`,
    /// `shmem_sync`): no arguments but the set.
    Barrier = 11,
    /// A user active-message handler registered ([`crate::am`]). `v`: the
    /// handler index (bit 63: this PE could not register it), the team's
    /// count of checked calls.
    AmRegister = 12,
}

impl Kind {
    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            1 => Kind::Broadcast,
            2 => Kind::Fcollect,
            3 => Kind::Collect,
            4 => Kind::Alltoall,
            5 => Kind::Alltoalls,
            6 => Kind::Reduce,
            7 => Kind::Scan,
            8 => Kind::ReadOnly,
            9 => Kind::Writable,
            10 => Kind::FreeReadOnly,
            11 => Kind::Barrier,
            12 => Kind::AmRegister,
            _ => return None,
        })
    }
}

/// The arguments of one data collective call that every PE must share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Args {
    kind: Kind,
    v: [u64; 4],
    /// The active set of a deprecated active-set call ([`ActiveSet::word`]),
    /// 0 for a team's.
    set: u64,
}

/// An active set of the deprecated collectives: the PEs `start`,
/// `start + 2^log_stride`, ... (`size` of them), in world numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ActiveSet {
    /// `PE_start`.
    pub(crate) start: usize,
    /// `logPE_stride` (0 when the set has one PE: the stride then names
    /// no other PE, and sets that differ only there are the same set).
    pub(crate) log_stride: u32,
    /// `PE_size`.
    pub(crate) size: usize,
}

/// Bits of `PE_start` and of `PE_size` in [`ActiveSet::word`].
const SET_BITS: u32 = 29;

impl ActiveSet {
    /// The set of a checked triplet: `start` and `size` below 2^29 (jobs
    /// are far smaller), `log_stride` below 31.
    pub(crate) fn new(start: usize, log_stride: u32, size: usize) -> ActiveSet {
        debug_assert!(start < 1 << SET_BITS && size < 1 << SET_BITS && log_stride < 31);
        ActiveSet {
            start,
            log_stride: if size == 1 { 0 } else { log_stride },
            size,
        }
    }

    /// The world PEs of the set, in set order.
    #[cfg(test)]
    pub(crate) fn members(&self) -> Vec<usize> {
        (0..self.size)
            .map(|i| self.start + (i << self.log_stride))
            .collect()
    }

    /// The set as one nonzero word: bit 63, then `start`, `log_stride`
    /// and `size`.
    fn word(&self) -> u64 {
        1 << 63
            | (self.start as u64) << (SET_BITS + 5)
            | (self.log_stride as u64) << SET_BITS
            | self.size as u64
    }

    /// The set of a word made by [`ActiveSet::word`]; `None` for 0 (a
    /// team's call). Any word decodes.
    fn of_word(w: u64) -> Option<ActiveSet> {
        let mask = (1u64 << SET_BITS) - 1;
        (w >> 63 != 0).then_some(ActiveSet {
            start: ((w >> (SET_BITS + 5)) & mask) as usize,
            log_stride: ((w >> SET_BITS) & 31) as u32,
            size: (w & mask) as usize,
        })
    }
}

impl Args {
    /// A broadcast from team PE `root` (as the caller gave it: a root out
    /// of range on one PE is a disagreement the others see too) of
    /// `nelems` elements of `es` bytes.
    pub(crate) fn broadcast(root: i64, nelems: usize, es: usize) -> Args {
        Args {
            kind: Kind::Broadcast,
            v: [root as u64, nelems as u64, es as u64, 0],
            set: 0,
        }
    }

    /// A barrier or sync over an active set.
    pub(crate) fn barrier() -> Args {
        Args {
            kind: Kind::Barrier,
            v: [0; 4],
            set: 0,
        }
    }

    /// The same call, made on active set `set` (deprecated routines).
    pub(crate) fn on_set(mut self, set: ActiveSet) -> Args {
        self.set = set.word();
        self
    }

    /// An fcollect of `nelems` elements of `es` bytes per PE.
    pub(crate) fn fcollect(nelems: usize, es: usize) -> Args {
        Args {
            kind: Kind::Fcollect,
            v: [nelems as u64, es as u64, 0, 0],
            set: 0,
        }
    }

    /// A collect of elements of `es` bytes.
    pub(crate) fn collect(es: usize) -> Args {
        Args {
            kind: Kind::Collect,
            v: [es as u64, 0, 0, 0],
            set: 0,
        }
    }

    /// An alltoall of blocks of `nelems` elements of `es` bytes.
    pub(crate) fn alltoall(nelems: usize, es: usize) -> Args {
        Args {
            kind: Kind::Alltoall,
            v: [nelems as u64, es as u64, 0, 0],
            set: 0,
        }
    }

    /// A strided alltoall.
    pub(crate) fn alltoalls(nelems: usize, es: usize, dst: usize, sst: usize) -> Args {
        Args {
            kind: Kind::Alltoalls,
            v: [nelems as u64, es as u64, dst as u64, sst as u64],
            set: 0,
        }
    }

    /// A reduction of `nreduce` elements of type `T` with operator `op`.
    pub(crate) fn reduce<T>(op: &str, nreduce: usize) -> Args {
        Args {
            kind: Kind::Reduce,
            v: [
                nreduce as u64,
                size_of::<T>() as u64,
                tag(op, std::any::type_name::<T>()),
                0,
            ],
            set: 0,
        }
    }

    /// A scan of `nreduce` elements of type `T` with operator `op`.
    pub(crate) fn scan<T>(op: &str, nreduce: usize, exclusive: bool) -> Args {
        Args {
            kind: Kind::Scan,
            v: [
                nreduce as u64,
                size_of::<T>() as u64,
                tag(op, std::any::type_name::<T>()),
                exclusive as u64,
            ],
            set: 0,
        }
    }
}

impl Args {
    /// A conversion of kind `kind` (`ReadOnly`, `Writable` or
    /// `FreeReadOnly`) of the object of `bytes` bytes of `es`-byte
    /// elements at segment offset `off`; `failed` when this PE could not
    /// complete its operations first (its call then differs from every
    /// other PE's, so that every PE fails). The count of checked calls is
    /// added by the sync ([`Args::stamped`]).
    pub(crate) fn conversion(
        kind: Kind,
        off: usize,
        bytes: usize,
        es: usize,
        failed: bool,
    ) -> Args {
        debug_assert!(matches!(
            kind,
            Kind::ReadOnly | Kind::Writable | Kind::FreeReadOnly
        ));
        Args {
            kind,
            v: [
                off as u64,
                bytes as u64,
                es as u64 | (failed as u64) << 63,
                0,
            ],
            set: 0,
        }
    }

    /// The registration of user handler `index`; `failed` when this PE
    /// could not register it (its call then differs from every other
    /// PE's, so that every PE fails). Stamped with the count of checked
    /// calls, as conversions are ([`Args::stamped`]).
    pub(crate) fn am_register(index: u8, failed: bool) -> Args {
        Args {
            kind: Kind::AmRegister,
            v: [index as u64 | (failed as u64) << 63, 0, 0, 0],
            set: 0,
        }
    }

    /// The arguments as checked at the team's `step`-th checked call: a
    /// conversion carries the count, so that its check word never equals
    /// one left by an earlier call. A PE that makes an unchecked collective
    /// (a barrier) while the others convert sends no check word; they read
    /// the one it left for an earlier call, which then differs, and fail
    /// rather than take its arrival for agreement. Other kinds are
    /// unchanged.
    pub(crate) fn stamped(mut self, step: u64) -> Args {
        if matches!(
            self.kind,
            Kind::ReadOnly | Kind::Writable | Kind::FreeReadOnly | Kind::AmRegister
        ) {
            self.v[3] = step;
        }
        self
    }

    /// The hash PEs compare. The routine's name is not part of it: C
    /// programs may name one call differently on different PEs
    /// (`shmem_int_` and `shmem_int32_` are the same type), and everything
    /// that changes the data movement is in the arguments.
    #[inline]
    pub(crate) fn hash(&self) -> u64 {
        hash_of(self.kind as u64, &self.v, self.set)
    }
}

#[inline]
fn hash_of(kind: u64, v: &[u64; 4], set: u64) -> u64 {
    if set == 0 {
        gasnet_core::hash::fnv1a_words(&[kind, v[0], v[1], v[2], v[3]])
    } else {
        gasnet_core::hash::fnv1a_words(&[kind, v[0], v[1], v[2], v[3], set])
    }
}

/// A 64-bit tag of an operator and element type (FNV-1a): PEs of one
/// program agree on it; two different pairs collide with negligible odds.
fn tag(op: &str, ty: &str) -> u64 {
    gasnet_core::hash::fnv1a_iter(op.bytes().chain([0]).chain(ty.bytes()))
}

/// Bytes of a call name a record keeps (longer names are cut).
const NAME_LEN: usize = 32;
/// Bytes of one encoded [`Record`]: a word of rank, kind, name length and
/// flags, the arguments, the active set, the name.
pub(crate) const RECORD_LEN: usize = 8 + 32 + 8 + NAME_LEN;
/// Bytes of one encoded [`Summary`]: two fit behind the counter in a
/// sender's cache-line cell (`team::CELL`).
pub(crate) const SUMMARY_LEN: usize = 24;
const _: () = assert!(8 + 2 * SUMMARY_LEN <= crate::pool::CELL);
const _: () = assert!(RECORD_LEN <= crate::pool::RECORD_AREA);

/// [`Record`] flag: the PE went on to `shmem_finalize` after this call.
const THEN_FINALIZE: u8 = 1;

/// One PE's call: its rank (team rank, or world PE where the record says
/// so), the routine's name and its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    rank: u32,
    /// `None` for bytes that name no kind (never sent by this library).
    kind: Option<Kind>,
    v: [u64; 4],
    set: u64,
    name: [u8; NAME_LEN],
    name_len: u8,
    flags: u8,
}

impl Record {
    /// This PE's record.
    pub(crate) fn new(rank: usize, call: &str, args: Args) -> Record {
        let mut name = [0u8; NAME_LEN];
        let n = call.len().min(NAME_LEN);
        name[..n].copy_from_slice(&call.as_bytes()[..n]);
        Record {
            rank: rank as u32,
            kind: Some(args.kind),
            v: args.v,
            set: args.set,
            name,
            name_len: n as u8,
            flags: 0,
        }
    }

    /// The record of PE `rank` that made no checked call (only its rank).
    pub(crate) fn empty(rank: usize) -> Record {
        Record {
            rank: rank as u32,
            kind: None,
            v: [0; 4],
            set: 0,
            name: [0; NAME_LEN],
            name_len: 0,
            flags: 0,
        }
    }

    /// The team rank of the PE that made this call.
    pub(crate) fn rank(&self) -> usize {
        self.rank as usize
    }

    /// The same record under rank `rank`.
    pub(crate) fn with_rank(mut self, rank: usize) -> Record {
        self.rank = rank as u32;
        self
    }

    /// The same record, saying that its PE went on to `shmem_finalize`.
    pub(crate) fn then_finalized(mut self) -> Record {
        self.flags |= THEN_FINALIZE;
        self
    }

    /// Whether the two records are the same call (everything [`Args::hash`]
    /// covers: not the rank, nor the routine's name).
    pub(crate) fn same_call(&self, o: &Record) -> bool {
        (self.kind, self.v, self.set) == (o.kind, o.v, o.set)
    }

    /// The hash of the record's arguments (see [`Args::hash`]).
    #[cfg(test)]
    pub(crate) fn hash(&self) -> u64 {
        hash_of(self.kind.map_or(0, |k| k as u64), &self.v, self.set)
    }

    fn name(&self) -> String {
        let n = (self.name_len as usize).min(NAME_LEN);
        String::from_utf8_lossy(&self.name[..n]).into_owned()
    }

    /// The call as a user reads it: `shmem_int_broadcast with root 1, 10
    /// elements of 4 bytes`; an active-set call names its set.
    pub(crate) fn describe(&self) -> String {
        let call = self.describe_call();
        match (self.flags & THEN_FINALIZE != 0, self.name_len) {
            (false, _) => call,
            // A PE that finalized without making such a call.
            (true, 0) => "shmem_finalize".to_string(),
            (true, _) => format!("{call}, then shmem_finalize"),
        }
    }

    fn describe_call(&self) -> String {
        let [a, b, c, d] = self.v;
        let what = match self.kind {
            Some(Kind::Broadcast) => format!("root {}, {b} elements of {c} bytes", a as i64),
            Some(Kind::Fcollect) => format!("{a} elements of {b} bytes"),
            Some(Kind::Collect) => format!("elements of {a} bytes"),
            Some(Kind::Alltoall) => format!("blocks of {a} elements of {b} bytes"),
            Some(Kind::Alltoalls) => {
                format!("blocks of {a} elements of {b} bytes, strides dst {c} sst {d}")
            }
            Some(Kind::Reduce) => format!("{a} elements of {b} bytes"),
            Some(Kind::Scan) => format!(
                "{a} elements of {b} bytes ({})",
                if d != 0 { "exclusive" } else { "inclusive" }
            ),
            Some(Kind::ReadOnly | Kind::Writable | Kind::FreeReadOnly) => format!(
                "the object at segment offset {a:#x} ({b} bytes, elements of {} bytes{}) \
                 as checked collective call {d}",
                c & !(1 << 63),
                if c >> 63 != 0 {
                    "; its operations did not complete"
                } else {
                    ""
                }
            ),
            Some(Kind::Barrier) => String::new(),
            Some(Kind::AmRegister) => format!(
                "handler index {} as checked collective call {d}{}",
                a & 0xff,
                if a >> 63 != 0 {
                    "; this PE could not register it"
                } else {
                    ""
                }
            ),
            None if self.name_len == 0 => {
                // A PE that made a collective without the check (a
                // barrier, an allocation) left no record.
                return "a collective without the argument check (a barrier, an allocation, \
                        a free)"
                    .to_string();
            }
            None => "unknown arguments".to_string(),
        };
        let name = self.name();
        match (ActiveSet::of_word(self.set), what.is_empty()) {
            (None, _) => format!("{name} with {what}"),
            (Some(s), empty) => {
                let on = format!(
                    "{name} on the active set PE_start {}, logPE_stride {}, PE_size {}",
                    s.start, s.log_stride, s.size
                );
                if empty {
                    on
                } else {
                    format!("{on} with {what}")
                }
            }
        }
    }

    /// Encodes the record into [`RECORD_LEN`] bytes.
    pub(crate) fn encode(&self) -> [u8; RECORD_LEN] {
        let mut out = [0u8; RECORD_LEN];
        let kind = self.kind.map_or(0, |k| k as u8);
        let w0 = self.rank as u64
            | (kind as u64) << 32
            | (self.name_len as u64) << 40
            | (self.flags as u64) << 48;
        out[..8].copy_from_slice(&w0.to_le_bytes());
        for (i, v) in self.v.iter().enumerate() {
            out[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        out[40..48].copy_from_slice(&self.set.to_le_bytes());
        out[48..48 + NAME_LEN].copy_from_slice(&self.name);
        out
    }

    /// Decodes a record; bytes of any value decode to some record.
    pub(crate) fn decode(b: &[u8; RECORD_LEN]) -> Record {
        let w0 = le(&b[..8]);
        let mut name = [0u8; NAME_LEN];
        name.copy_from_slice(&b[48..48 + NAME_LEN]);
        Record {
            rank: w0 as u32,
            kind: Kind::from_code((w0 >> 32) as u8),
            v: [
                le(&b[8..16]),
                le(&b[16..24]),
                le(&b[24..32]),
                le(&b[32..40]),
            ],
            set: le(&b[40..48]),
            name,
            name_len: ((w0 >> 40) as u8).min(NAME_LEN as u8),
            flags: (w0 >> 48) as u8,
        }
    }
}

/// The little-endian `u64` of 8 bytes.
fn le(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(b);
    u64::from_le_bytes(w)
}

/// No difference: the rank field's value.
const NONE: u32 = u32::MAX;

/// What a set of PEs called: the lowest rank and the hash of its call, and
/// the lowest rank whose hash differs, with its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    reference: (u32, u64),
    diff: Option<(u32, u64)>,
}

impl Summary {
    /// The summary of team rank `rank` calling with `args`.
    #[inline]
    pub(crate) fn own(rank: usize, args: &Args) -> Summary {
        Summary {
            reference: (rank as u32, args.hash()),
            diff: None,
        }
    }

    /// Merges the summary of another set of PEs into this one.
    #[inline]
    pub(crate) fn merge(&mut self, o: &Summary) {
        let reference = if o.reference.0 < self.reference.0 {
            o.reference
        } else {
            self.reference
        };
        let diff = [Some(self.reference), self.diff, Some(o.reference), o.diff]
            .into_iter()
            .flatten()
            .filter(|r| r.1 != reference.1)
            .min_by_key(|r| r.0);
        *self = Summary { reference, diff };
    }

    /// The team ranks of the two disagreeing calls (reference first), if
    /// any.
    pub(crate) fn disagreement(&self) -> Option<(usize, usize)> {
        self.diff.map(|d| (self.reference.0 as usize, d.0 as usize))
    }

    /// Encodes the summary into [`SUMMARY_LEN`] bytes.
    #[inline]
    pub(crate) fn encode(&self) -> [u8; SUMMARY_LEN] {
        let (dr, dh) = self.diff.unwrap_or((NONE, 0));
        let mut out = [0u8; SUMMARY_LEN];
        out[..8].copy_from_slice(&(self.reference.0 as u64 | (dr as u64) << 32).to_le_bytes());
        out[8..16].copy_from_slice(&self.reference.1.to_le_bytes());
        out[16..24].copy_from_slice(&dh.to_le_bytes());
        out
    }

    /// Decodes [`SUMMARY_LEN`] bytes (never panics).
    #[inline]
    pub(crate) fn decode(b: &[u8; SUMMARY_LEN]) -> Summary {
        let ranks = le(&b[..8]);
        let dr = (ranks >> 32) as u32;
        Summary {
            reference: (ranks as u32, le(&b[8..16])),
            diff: (dr != NONE).then(|| (dr, le(&b[16..24]))),
        }
    }
}

/// The error every PE reports when the team's calls disagree; ranks are
/// translated to world PEs by `world`.
pub(crate) fn mismatch(
    pe: usize,
    call: &'static str,
    first: &Record,
    other: &Record,
    world: impl Fn(usize) -> usize,
) -> ShmemError {
    ShmemError::CollectiveMismatch {
        pe,
        call,
        first_pe: world(first.rank()),
        first: first.describe(),
        other_pe: world(other.rank()),
        other: other.describe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(rank: usize, root: usize) -> Record {
        Record::new(
            rank,
            "shmem_int_broadcast",
            Args::broadcast(root as i64, 10, 4),
        )
    }

    /// The summary of every subset, merged in any order, is the summary of
    /// the union: the lowest rank and the lowest rank that differs from it.
    #[test]
    fn merging_is_exact_in_any_order() {
        let roots = [0usize, 0, 1, 0, 1, 2, 0];
        let n = roots.len();
        let own: Vec<Summary> = (0..n)
            .map(|r| Summary::own(r, &Args::broadcast(roots[r] as i64, 10, 4)))
            .collect();
        // Dissemination on 7 PEs: every PE ends with the whole summary.
        let mut s = own.clone();
        let mut d = 1;
        while d < n {
            let before = s.clone();
            for (me, sm) in s.iter_mut().enumerate() {
                sm.merge(&before[(me + n - d) % n]);
            }
            d <<= 1;
        }
        for sm in &s {
            assert_eq!(sm.disagreement(), Some((0, 2)));
        }
        // Merging a summary with itself or twice changes nothing.
        let mut x = s[3];
        x.merge(&s[3]);
        x.merge(&own[5]);
        assert_eq!(x, s[3]);
        // Agreement stays agreement.
        let mut same = Summary::own(4, &Args::broadcast(1, 10, 4));
        for r in [2, 6, 0] {
            same.merge(&Summary::own(r, &Args::broadcast(1, 10, 4)));
        }
        assert_eq!(same.disagreement(), None);
        assert_eq!(same.reference.0, 0);
    }

    #[test]
    fn records_and_summaries_round_trip_and_any_bytes_decode() {
        let r = Record::new(
            5,
            "shmem_a_very_long_routine_name_that_is_cut_somewhere",
            Args::scan::<f64>("sum", 7, true),
        );
        assert_eq!(Record::decode(&r.encode()), r);
        assert_eq!(
            r.describe(),
            "shmem_a_very_long_routine_name_t with 7 elements of 8 bytes (exclusive)"
        );
        let mut s = Summary::own(3, &Args::broadcast(0, 10, 4));
        s.merge(&Summary::own(5, &Args::scan::<f64>("sum", 7, true)));
        assert_eq!(r.hash(), Args::scan::<f64>("sum", 7, true).hash());
        assert_eq!(rec(2, 0).hash(), Args::broadcast(0, 10, 4).hash());
        assert_eq!(Summary::decode(&s.encode()), s);
        assert_eq!(s.disagreement(), Some((3, 5)));
        let mut b = [0u8; RECORD_LEN];
        for (i, x) in b.iter_mut().enumerate() {
            *x = (i * 37 + 11) as u8;
        }
        let _ = Record::decode(&b).describe();
        b.fill(0xff);
        let _ = Record::decode(&b).describe();
        let _ = Summary::decode(&[0xff; SUMMARY_LEN]).disagreement();
    }

    #[test]
    fn conversions_carry_the_call_count_and_the_failure() {
        let ro = |off, step, failed| {
            Args::conversion(Kind::ReadOnly, off, 64, 8, failed)
                .stamped(step)
                .hash()
        };
        assert_eq!(ro(0x10000, 5, false), ro(0x10000, 5, false));
        // Another object, another call count, a PE that failed: all differ.
        assert_ne!(ro(0x10000, 5, false), ro(0x10040, 5, false));
        assert_ne!(ro(0x10000, 5, false), ro(0x10000, 3, false));
        assert_ne!(ro(0x10000, 5, false), ro(0x10000, 5, true));
        // The three conversions differ from each other.
        let k = |kind| {
            Args::conversion(kind, 0x10000, 64, 8, false)
                .stamped(5)
                .hash()
        };
        assert_ne!(k(Kind::ReadOnly), k(Kind::Writable));
        assert_ne!(k(Kind::Writable), k(Kind::FreeReadOnly));
        // Data collectives are not stamped.
        assert_eq!(
            Args::broadcast(0, 4, 8).stamped(9).hash(),
            Args::broadcast(0, 4, 8).hash()
        );
        let r = Record::new(
            2,
            "SymVec::into_read_only",
            Args::conversion(Kind::ReadOnly, 0x10000, 64, 8, true).stamped(5),
        );
        assert_eq!(Record::decode(&r.encode()), r);
        assert_eq!(
            r.describe(),
            "SymVec::into_read_only with the object at segment offset 0x10000 (64 bytes, \
             elements of 8 bytes; its operations did not complete) as checked collective call 5"
        );
    }

    #[test]
    fn registrations_carry_the_index_the_count_and_the_failure() {
        let reg = |index, step, failed| Args::am_register(index, failed).stamped(step).hash();
        assert_eq!(reg(64, 3, false), reg(64, 3, false));
        assert_ne!(reg(64, 3, false), reg(65, 3, false));
        assert_ne!(reg(64, 3, false), reg(64, 4, false));
        assert_ne!(reg(64, 3, false), reg(64, 3, true));
        let r = Record::new(
            1,
            "shmem::am_register",
            Args::am_register(70, true).stamped(3),
        );
        assert_eq!(Record::decode(&r.encode()), r);
        assert_eq!(
            r.describe(),
            "shmem::am_register with handler index 70 as checked collective call 3; this PE \
             could not register it"
        );
    }

    #[test]
    fn operators_and_types_are_part_of_a_reduction() {
        let h = |op, t: bool| {
            if t {
                Record::new(0, "x", Args::reduce::<i32>(op, 4)).hash()
            } else {
                Record::new(1, "y", Args::reduce::<f32>(op, 4)).hash()
            }
        };
        assert_ne!(h("sum", true), h("max", true));
        assert_ne!(h("sum", true), h("sum", false));
        assert_eq!(
            h("sum", true),
            Record::new(3, "shmem_int32_sum_reduce", Args::reduce::<i32>("sum", 4)).hash()
        );
    }
}
