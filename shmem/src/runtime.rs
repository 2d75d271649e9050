//! The process-global runtime: start-up, the segment layout, the barrier,
//! local waits and shutdown.
//!
//! One [`Runtime`] exists per process between [`crate::init`] and
//! finalization. The RAII handle [`crate::Shmem`] owns it; the free
//! functions of the crate (and later the C ABI) reach it through a global
//! pointer guarded by a user count, so finalization never frees it under a
//! running call.
//!
//! # Segment layout
//!
//! Every PE's segment has the same layout; offsets are bytes from the start
//! of the segment. The first [`layout::HEAP`] bytes are the runtime's own,
//! then comes the user heap of `SHMEM_SYMMETRIC_SIZE` bytes.
//!
//! | offset | length | content |
//! |---|---|---|
//! | `0x0000` | 64 | header: magic, layout version, heap offset, heap size (local, for debuggers) |
//! | `0x0040` | 256 | reserved (layout 1's barrier counters; barriers now use the world team's pool slot) |
//! | `0x0140` | 64 | `SHMEM_DEBUG` check that allocation calls are collective |
//! | `0x0400` | 1 KiB | signal scratch for runtime-internal put-with-signal |
//! | `0x1000` | 16 KiB | reserved |
//! | `0x5000` | 4 KiB | reserved: distributed locks |
//! | `0x6000` | 40 KiB | reserved |
//! | `0x10000` | `SHMEM_SYMMETRIC_SIZE` | user heap (see [`crate::alloc`]) |
//! | [`layout::team_pool`] | `FSHMEM_TEAMS_MAX` x slot | the collective pool: one slot per team ([`crate::team`]) |
//!
//! A pool slot holds `8 * n_pes` bytes of message counters (one per
//! sender, rounded up to 64 bytes), 64 bytes of auxiliary words, and two
//! scratch areas of `FSHMEM_COLL_SCRATCH` bytes, rounded up to 4 KiB. The
//! world team has slot 0, the shared team slot 1.
//!
//! Conduits hand out zero-filled segments; the counters start at zero.

use crate::alloc::HeapAllocator;
use crate::coll::Coll;
use crate::config::{Config, LIBRARY_VERSION, OPENSHMEM_VERSION, format_size};
use crate::ctx::ThreadLevel;
use crate::error::{Result, ShmemError};
use crate::pod::bytes_of_mut;
use crate::team::{TeamConfig, TeamPool, TeamState};
use conduits::wait::Backoff;
use conduits::{AmoWidth, AnyConduit, Conduit, ConduitError, JobEnv};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// Offsets of the runtime-internal region of the segment.
pub mod layout {
    /// Header: magic, layout version, heap offset, heap size.
    pub const HEADER: usize = 0x0000;
    /// The header's magic word, "FSHMEMSG" little-endian.
    pub const MAGIC: u64 = u64::from_le_bytes(*b"FSHMEMSG");
    /// Version of this layout.
    pub const VERSION: u64 = 2;
    /// Three `u64` words with which `SHMEM_DEBUG` compares each PE's
    /// allocation call with PE 0's.
    pub const COLLECTIVE_CHECK: usize = 0x0140;
    /// Signal scratch for runtime-internal put-with-signal.
    pub const SIGNAL_SCRATCH: usize = 0x0400;
    /// Length of the signal scratch.
    pub const SIGNAL_SCRATCH_LEN: usize = 0x0400;
    /// Reserved for distributed locks.
    pub const LOCKS: usize = 0x5000;
    /// Length of the lock area.
    pub const LOCKS_LEN: usize = 0x1000;
    /// Start of the user heap; also the length of the internal region.
    pub const HEAP: usize = 0x10000;

    /// Start of the collective pool for a heap of `heap_len` bytes: the
    /// first 4 KiB boundary after the heap.
    pub const fn team_pool(heap_len: usize) -> usize {
        HEAP + heap_len.next_multiple_of(0x1000)
    }
}

/// What the runtime runs on: every conduit, dispatched statically.
pub(crate) type Backend = AnyConduit;

/// The runtime state of this process.
pub struct Runtime {
    pub(crate) conduit: Backend,
    me: usize,
    n: usize,
    config: Config,
    heap: Mutex<HeapAllocator>,
    /// The team slots; the world team's collectives serve barrier_all,
    /// sync_all and the implicit barriers of allocation and finalization.
    pub(crate) pool: TeamPool,
    thread_level: ThreadLevel,
}

const UNINIT: u8 = 0;
const STARTING: u8 = 1;
const RUNNING: u8 = 2;
const FINALIZED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static GLOBAL: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static USERS: AtomicUsize = AtomicUsize::new(0);

impl Runtime {
    /// Starts the runtime: reads the configuration and the job, attaches
    /// the conduit, and publishes the state. Errors if already running.
    pub(crate) fn start(config: Config, thread_level: ThreadLevel) -> Result<*mut Runtime> {
        match STATE.compare_exchange(UNINIT, STARTING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {}
            Err(FINALIZED) => return Err(ShmemError::Finalized),
            Err(_) => return Err(ShmemError::AlreadyInitialized),
        }
        match Self::build(config, thread_level) {
            Ok(rt) => {
                let p = Box::into_raw(Box::new(rt));
                GLOBAL.store(p, Ordering::SeqCst);
                STATE.store(RUNNING, Ordering::Release);
                Ok(p)
            }
            Err(e) => {
                STATE.store(UNINIT, Ordering::Release);
                Err(e)
            }
        }
    }

    fn build(config: Config, thread_level: ThreadLevel) -> Result<Runtime> {
        let boot = |e: ConduitError| ShmemError::conduit(0, "shmem_init", e);
        let job = JobEnv::from_env().map_err(boot)?;
        let heap_len = config.symmetric_size;
        let scratch = config.coll.scratch;
        if scratch < 16 * job.size {
            return Err(ShmemError::Config {
                var: "FSHMEM_COLL_SCRATCH",
                value: scratch.to_string(),
                expected: format!("at least 16 bytes per PE ({}) for this job", 16 * job.size),
            });
        }
        let slots = config.coll.teams_max.max(2);
        let (counters_len, slot_len) = TeamPool::layout(job.size, scratch);
        let segment_len = (heap_len < isize::MAX as usize / 2)
            .then(|| layout::team_pool(heap_len))
            .and_then(|b| b.checked_add(slots.checked_mul(slot_len)?))
            .ok_or_else(|| ShmemError::Config {
                var: "SHMEM_SYMMETRIC_SIZE",
                value: heap_len.to_string(),
                expected: "a size that leaves room for the runtime's regions".to_string(),
            })?;
        let me = job.rank;
        let conduit = AnyConduit::attach(&job, segment_len)
            .map_err(|e| ShmemError::conduit(me, "shmem_init", e))?;
        let got = conduit.segment_len();
        if got < segment_len {
            return Err(ShmemError::conduit(
                me,
                "shmem_init",
                ConduitError::Bootstrap(format!(
                    "conduit segment of {got} bytes is smaller than the {segment_len} requested"
                )),
            ));
        }
        let (me, n) = (conduit.rank(), conduit.size());
        let shared: Vec<usize> = (0..n)
            .filter(|&pe| pe == me || conduit.peer_segment(pe).is_some())
            .collect();
        let shared_me = shared.iter().position(|&p| p == me).unwrap_or(0);
        let cfg = TeamConfig::default();
        let pool = TeamPool {
            base: layout::team_pool(heap_len),
            slot_len,
            counters_len,
            scratch,
            slots,
            free: Mutex::new(if slots == 64 {
                !0b11
            } else {
                ((1u64 << slots) - 1) & !0b11
            }),
            creating: Mutex::new(()),
            world: Arc::new(TeamState::new(0, (0..n).collect(), me, cfg, true)),
            shared: Arc::new(TeamState::new(1, shared, shared_me, cfg, true)),
        };
        let rt = Runtime {
            me,
            n,
            heap: Mutex::new(HeapAllocator::new(heap_len)),
            pool,
            thread_level,
            config,
            conduit,
        };
        rt.write_header();
        // Every PE attached and initialized its header before any
        // one-sided traffic starts.
        rt.conduit
            .barrier()
            .map_err(|e| ShmemError::conduit(rt.me, "shmem_init", e))?;
        rt.announce();
        Ok(rt)
    }

    fn write_header(&self) {
        let words = [
            layout::MAGIC,
            layout::VERSION,
            layout::HEAP as u64,
            self.config.symmetric_size as u64,
        ];
        let base = self.conduit.local_segment();
        for (i, w) in words.iter().enumerate() {
            // SAFETY: the header lies in the first 64 bytes of this PE's own
            // segment, which is at least `layout::HEAP` bytes long and
            // page-aligned; no other PE writes the header.
            unsafe {
                base.add(layout::HEADER + 8 * i)
                    .cast::<u64>()
                    .write_volatile(*w)
            };
        }
    }

    fn announce(&self) {
        let c = &self.config;
        if self.me == 0 && c.version {
            println!(
                "fshmem {LIBRARY_VERSION}, OpenSHMEM {}.{}",
                OPENSHMEM_VERSION.0, OPENSHMEM_VERSION.1
            );
        }
        if self.me == 0 && c.info {
            print!("{}", c.info_table());
        }
        if c.debug {
            eprintln!(
                "PE {}: shmem_init: {} PEs, segment {} bytes at {:p}, runtime region {:#x} bytes, heap {} at offset {:#x}",
                self.me,
                self.n,
                self.conduit.segment_len(),
                self.conduit.local_segment(),
                layout::HEAP,
                format_size(c.symmetric_size),
                layout::HEAP
            );
        }
    }

    /// This PE's rank.
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.me
    }

    /// The number of PEs.
    #[inline]
    pub fn n_pes(&self) -> usize {
        self.n
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The thread level provided at start-up.
    pub fn thread_level(&self) -> ThreadLevel {
        self.thread_level
    }

    /// Errors unless `pe` is in `0..n_pes`.
    #[inline(always)]
    pub(crate) fn check_pe(&self, pe: usize, call: &'static str) -> Result<()> {
        if pe < self.n {
            Ok(())
        } else {
            Err(self.pe_error(pe, call))
        }
    }

    #[cold]
    fn pe_error(&self, target: usize, call: &'static str) -> ShmemError {
        ShmemError::PeOutOfRange {
            pe: self.me,
            call,
            target,
            n_pes: self.n,
        }
    }

    /// Wraps a conduit error.
    #[cold]
    pub(crate) fn err(&self, call: &'static str, e: ConduitError) -> ShmemError {
        ShmemError::conduit(self.me, call, e)
    }

    /// The heap allocator, locked.
    pub(crate) fn heap(&self) -> std::sync::MutexGuard<'_, HeapAllocator> {
        // A panic while holding the lock cannot leave the allocator
        // inconsistent (its methods do not panic midway), so poisoning is
        // ignored.
        self.heap.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Address of segment offset `off` in this process.
    #[inline(always)]
    pub(crate) fn local_addr(&self, off: usize) -> *mut u8 {
        self.conduit.local_segment().wrapping_add(off)
    }

    /// Waits until every operation this PE issued is complete.
    #[inline]
    pub(crate) fn quiet(&self, call: &'static str) -> Result<()> {
        self.conduit.quiet().map_err(|e| self.err(call, e))
    }

    /// Orders operations to each PE across the call.
    #[inline]
    pub(crate) fn fence(&self, call: &'static str) -> Result<()> {
        self.conduit.fence().map_err(|e| self.err(call, e))
    }

    /// `shmem_barrier_all`: quiet, then [`Runtime::sync_all`].
    pub(crate) fn barrier_all(&self, call: &'static str) -> Result<()> {
        self.quiet(call)?;
        self.sync_all(call)
    }

    /// `shmem_sync_all`: the world team's sync (dissemination or tree
    /// barrier on its pool slot, see [`crate::coll`]).
    pub(crate) fn sync_all(&self, call: &'static str) -> Result<()> {
        Coll::new(self, &self.pool.world, call)?.sync()
    }

    /// Loads the `width`-wide word at segment offset `off` of this PE with
    /// acquire ordering.
    #[inline(always)]
    pub(crate) fn load_word(&self, off: usize, width: AmoWidth) -> u64 {
        let p = self.local_addr(off);
        match width {
            // SAFETY: callers pass an offset inside this PE's segment that
            // is aligned to `width` (symmetric objects of 4- and 8-byte
            // types are allocated at least 16-byte aligned; internal
            // counters are 8-byte aligned). The segment lives as long as
            // `self`; other PEs modify it only with atomics or byte copies
            // of whole values.
            AmoWidth::W32 => unsafe {
                std::sync::atomic::AtomicU32::from_ptr(p.cast()).load(Ordering::Acquire) as u64
            },
            // SAFETY: as above.
            AmoWidth::W64 => unsafe { AtomicU64::from_ptr(p.cast()).load(Ordering::Acquire) },
        }
    }

    /// Waits until `done` holds for the local word at `off`, polling the
    /// conduit between loads; returns the word that satisfied it.
    #[inline]
    pub(crate) fn wait_word(
        &self,
        off: usize,
        width: AmoWidth,
        call: &'static str,
        done: impl Fn(u64) -> bool,
    ) -> Result<u64> {
        let v = self.load_word(off, width);
        if done(v) {
            return Ok(v);
        }
        let mut backoff = Backoff::new();
        loop {
            self.conduit.poll().map_err(|e| self.err(call, e))?;
            let v = self.load_word(off, width);
            if done(v) {
                return Ok(v);
            }
            backoff.snooze();
        }
    }

    /// With `SHMEM_DEBUG`: checks that this PE's allocation call `what`
    /// (call code, bytes, heap offset) matches PE 0's, i.e. that every PE
    /// made the same collective call. Two extra barriers; `SHMEM_DEBUG` must
    /// be set alike on every PE.
    pub(crate) fn check_collective(&self, call: &'static str, what: [u64; 3]) -> Result<()> {
        if !self.config.debug {
            return Ok(());
        }
        let base = self.local_addr(layout::COLLECTIVE_CHECK).cast::<u64>();
        for (i, w) in what.iter().enumerate() {
            // SAFETY: the check words lie in this PE's runtime region,
            // 8-byte aligned; peers only read them between the two barriers.
            unsafe { base.add(i).write_volatile(*w) };
        }
        self.sync_all(call)?;
        let mut pe0 = [0u64; 3];
        self.conduit
            .get(0, layout::COLLECTIVE_CHECK, bytes_of_mut(&mut pe0))
            .map_err(|e| self.err(call, e))?;
        self.sync_all(call)?;
        if pe0 == what {
            Ok(())
        } else {
            Err(ShmemError::NotCollective {
                pe: self.me,
                call,
                mine: what,
                pe0,
            })
        }
    }

    /// Finalizes: quiet, barrier, then the conduit leaves the job (its own
    /// collective, so no PE detaches while a peer still reaches its
    /// segment).
    fn finalize(&self) -> Result<()> {
        self.barrier_all("shmem_finalize")?;
        self.conduit
            .finalize()
            .map_err(|e| self.err("shmem_finalize", e))
    }
}

/// Finalizes the runtime owned by a handle: unpublishes it, waits for
/// running free-function calls to leave, finalizes and frees it.
///
/// # Safety
/// `rt` must come from [`Runtime::start`] and not have been passed here
/// before; no reference derived from it may outlive this call.
pub(crate) unsafe fn finish(rt: *mut Runtime) -> Result<()> {
    // SAFETY: `rt` is live until the Box is rebuilt below (caller contract).
    let r = unsafe { &*rt };
    let res = r.finalize();
    if r.config.debug {
        eprintln!("PE {}: shmem_finalize: done", r.me);
    }
    GLOBAL.store(std::ptr::null_mut(), Ordering::SeqCst);
    let mut backoff = Backoff::new();
    while USERS.load(Ordering::SeqCst) != 0 {
        backoff.snooze();
    }
    STATE.store(FINALIZED, Ordering::Release);
    // SAFETY: `rt` came from `Box::into_raw` in `start`; it is no longer
    // published and no free-function call holds it (USERS is zero after
    // GLOBAL was cleared), and the handle that owned it is being consumed.
    drop(unsafe { Box::from_raw(rt) });
    res
}

/// Runs `f` on the global runtime, or errors when none is running. The
/// runtime cannot be finalized while `f` runs.
pub(crate) fn with_runtime<R>(call: &'static str, f: impl FnOnce(&Runtime) -> R) -> Result<R> {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            USERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    USERS.fetch_add(1, Ordering::SeqCst);
    let _leave = Leave;
    let p = GLOBAL.load(Ordering::SeqCst);
    if p.is_null() {
        return Err(ShmemError::NotInitialized { call });
    }
    // SAFETY: `p` is published only while the runtime is alive, and
    // `finish` waits for USERS to drop to zero after unpublishing it before
    // freeing it; our increment happened before the load (both SeqCst), so
    // `finish` waits for us.
    Ok(f(unsafe { &*p }))
}
