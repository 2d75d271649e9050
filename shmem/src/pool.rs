//! The collective pool's bookkeeping on this PE: one slot per team (see
//! [`crate::team`] for what a slot holds and how teams take one), and each
//! team's state. Plain data, below the runtime and the collectives that use
//! it.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};

/// The configuration a team is created with (`shmem_team_config_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeamConfig {
    /// How many contexts the program means to create on the team (a hint;
    /// `SHMEM_TEAM_NUM_CONTEXTS`).
    pub num_contexts: usize,
}

/// Per-team collective bookkeeping, private to this PE.
#[derive(Debug)]
pub(crate) struct CollState {
    /// Messages received so far from each team rank (waited for).
    pub(crate) expected: Vec<u64>,
    /// Scratch-using steps so far; its parity picks the scratch area.
    pub(crate) step: u64,
    /// Data-collective entry syncs so far; its parity picks which of a
    /// sender's two summaries (in its [`CELL`]) a sync uses.
    pub(crate) agree_step: u64,
}

/// A team's state, shared by its handles.
#[derive(Debug)]
pub(crate) struct TeamState {
    /// Pool slot.
    pub(crate) slot: usize,
    /// World ranks of the members; index = team rank.
    pub(crate) members: Vec<usize>,
    /// This PE's team rank.
    pub(crate) me: usize,
    pub(crate) config: TeamConfig,
    /// World or shared: never destroyed.
    pub(crate) predefined: bool,
    pub(crate) destroyed: AtomicBool,
    pub(crate) coll: Mutex<CollState>,
    /// The members grouped by host, found on first use by a collective
    /// that may run in two levels (`collective::engine::hier`).
    pub(crate) hier: OnceLock<Arc<Hier>>,
}

impl TeamState {
    pub(crate) fn new(
        slot: usize,
        members: Vec<usize>,
        me: usize,
        config: TeamConfig,
        predefined: bool,
    ) -> TeamState {
        let n = members.len();
        TeamState {
            slot,
            members,
            me,
            config,
            predefined,
            destroyed: AtomicBool::new(false),
            coll: Mutex::new(CollState {
                expected: vec![0; n],
                step: 0,
                agree_step: 0,
            }),
            hier: OnceLock::new(),
        }
    }

    /// Number of members.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        self.members.len()
    }

    /// The team rank of world rank `pe`, if a member (members are in team
    /// order, which a negative stride makes decreasing).
    #[inline]
    pub(crate) fn rank_of(&self, pe: usize) -> Option<usize> {
        self.members.iter().position(|&m| m == pe)
    }
}

/// The pool of team slots on this PE.
#[derive(Debug)]
pub(crate) struct TeamPool {
    /// Segment offset of slot 0.
    pub(crate) base: usize,
    /// Bytes per slot.
    pub(crate) slot_len: usize,
    /// Bytes of counters at the start of a slot (8 per world PE, rounded).
    pub(crate) counters_len: usize,
    /// Bytes per scratch area (two per slot).
    pub(crate) scratch: usize,
    /// Number of slots.
    pub(crate) slots: usize,
    /// Bit i set = slot i free on this PE.
    pub(crate) free: Mutex<u64>,
    /// Held while this PE creates a team.
    pub(crate) creating: Mutex<()>,
    pub(crate) world: Arc<TeamState>,
    pub(crate) shared: Arc<TeamState>,
}

/// Offset of the auxiliary words (two `u64`) within a slot.
pub(crate) fn aux_offset(pool: &TeamPool) -> usize {
    pool.counters_len
}

/// Bytes of one sender's cell at the start of a slot: its message
/// counter (the first word) and, in the same cache line, the two argument
/// summaries data collectives carry on their entry sync (alternate syncs
/// use alternate summaries; see `collective::agree`). A whole cache line per
/// sender also keeps senders that signal one PE at once off each other's
/// line.
pub(crate) const CELL: usize = 64;

/// Offset of a slot's call record (written and read only when the PEs of
/// a data collective disagree), after the auxiliary words.
pub(crate) fn record_offset(pool: &TeamPool) -> usize {
    pool.counters_len + 64
}

/// Bytes reserved for the call record.
pub(crate) const RECORD_AREA: usize = 128;

/// Offset of the first scratch area within a slot.
pub(crate) fn scratch_offset(pool: &TeamPool) -> usize {
    record_offset(pool) + RECORD_AREA
}

impl TeamPool {
    /// The pool layout for a job of `n` PEs with
    /// `scratch`-byte scratch areas, placed at `base`: one [`CELL`] per
    /// sender, auxiliary words, the call record, two scratch areas.
    pub(crate) fn layout(n: usize, scratch: usize) -> (usize, usize) {
        let counters_len = CELL * n;
        let slot_len = (counters_len + 64 + RECORD_AREA + 2 * scratch).next_multiple_of(4096);
        (counters_len, slot_len)
    }

    /// Segment offset of slot `slot`.
    #[inline]
    pub(crate) fn slot_base(&self, slot: usize) -> usize {
        self.base + slot * self.slot_len
    }
}

/// A team's members grouped by host.
#[derive(Debug)]
pub(crate) struct Hier {
    /// The team ranks of each host's members, in rank order; hosts in
    /// order of their lowest team rank. The first member leads.
    pub(crate) hosts: Vec<Vec<usize>>,
    /// The index in `hosts` of every team rank's host.
    pub(crate) host_of: Vec<usize>,
}

impl Hier {
    /// Groups the members of `t` by `host_of(world rank)`.
    pub(crate) fn new(t: &TeamState, host_of: impl Fn(usize) -> usize) -> Hier {
        let mut ids: Vec<usize> = Vec::new();
        let mut hosts: Vec<Vec<usize>> = Vec::new();
        let mut host_of_rank = Vec::with_capacity(t.members.len());
        for (r, &pe) in t.members.iter().enumerate() {
            let id = host_of(pe);
            let h = match ids.iter().position(|&x| x == id) {
                Some(h) => h,
                None => {
                    ids.push(id);
                    hosts.push(Vec::new());
                    hosts.len() - 1
                }
            };
            hosts[h].push(r);
            host_of_rank.push(h);
        }
        Hier {
            hosts,
            host_of: host_of_rank,
        }
    }

    /// Whether two levels pay off: several hosts, one with several PEs.
    pub(crate) fn spans_shared_hosts(&self) -> bool {
        self.hosts.len() > 1 && self.hosts.iter().any(|h| h.len() > 1)
    }

    /// The number of hosts.
    pub(crate) fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// The members of team rank `r`'s host.
    pub(crate) fn host(&self, r: usize) -> &[usize] {
        &self.hosts[self.host_of[r]]
    }

    /// The leaders, host by host, with `root` leading its own host.
    pub(crate) fn leaders(&self, root: Option<usize>) -> Vec<usize> {
        self.hosts
            .iter()
            .map(|h| match root {
                Some(r) if h.contains(&r) => r,
                _ => h[0],
            })
            .collect()
    }
}
