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
//! | `0x0040` | 256 | the always-on check that allocation calls are collective (`Runtime::collective_begin`) |
//! | `0x0140` | 64 | `SHMEM_DEBUG` check that allocation calls are collective |
//! | `0x0400` | 1 KiB | signal scratch for runtime-internal put-with-signal |
//! | `0x1000` | 128 | C ABI: the active-set directory (PE 0's copy) |
//! | `0x1080` | 16 KiB - 128 | reserved |
//! | `0x5000` | 4 KiB | reserved: distributed locks |
//! | `0x6000` | 40 KiB | reserved |
//! | `0x10000` | `SHMEM_SYMMETRIC_SIZE` | user heap (see [`crate::alloc`]) |
//! | [`layout::team_pool`] | `FSHMEM_TEAMS_MAX` x slot | the collective pool: one slot per team ([`crate::team`]) |
//! | after the pool | C ABI only: [`layout::ACTIVE_SETS`] x slot | slots of the deprecated active-set collectives |
//! | after those | C ABI only: a 192-byte cell per PE and a header | where active-set calls compare their arguments (`collective::active`) |
//! | next page | C ABI only: the executable's static data | see [`crate::static_data`] |
//!
//! The active-set slots are assigned to active sets (start, stride, size)
//! on first use through a directory of [`layout::ACTIVE_SETS`] words at
//! [`layout::ACTIVE_SET_DIR`] in PE 0's segment: a PE claims or finds the
//! set's key there with compare-and-swap, so every member agrees on the
//! slot without a collective.
//!
//! A pool slot holds a 64-byte cell per sender (its message counter and
//! argument summaries), 64 bytes of auxiliary words, a 128-byte call
//! record, and two scratch areas of `FSHMEM_COLL_SCRATCH` bytes, rounded
//! up to 4 KiB. The world team has slot 0, the shared team slot 1.
//!
//! Conduits hand out zero-filled segments; the counters start at zero.

use crate::alloc::HeapAllocator;
use crate::config::ThreadLevel;
use crate::config::{Config, LIBRARY_VERSION, OPENSHMEM_VERSION};
use crate::error::{Result, ShmemError};
use crate::pool::{TeamConfig, TeamPool, TeamState};
use crate::static_data::{self, StaticData};
use conduits::prelude::*;
use conduits::wait::Backoff;
use conduits::{AmoWidth, AnyConduit, ConduitError, JobEnv, SegmentRequest};
use gasnet_core::config::format_size;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

pub(crate) mod active_area;
mod contexts;
mod global;
mod long_sent;
mod stop;
mod tiles;

pub(crate) use contexts::Contexts;
use global::{IN_EXIT_HOOK, Parked, exit_now, take_parked};
pub(crate) use global::{finalize_barrier, finish, park, with_runtime};
pub(crate) use long_sent::{LongTargets, flush_long};
pub(crate) use tiles::{TILES_RUNNING, wait_tiles};

/// Offsets of the runtime-internal region of the segment.
pub mod layout {
    /// Header: magic, layout version, heap offset, heap size.
    pub const HEADER: usize = 0x0000;
    /// The header's magic word, "FSHMEMSG" little-endian.
    pub const MAGIC: u64 = u64::from_le_bytes(*b"FSHMEMSG");
    /// Version of this layout.
    pub const VERSION: u64 = 2;
    /// The always-on collective allocation check: on PE 0, three tag
    /// words then three report words; on every PE, three records of four
    /// words (call code, bytes, step, extra) from offset 0x40 on.
    pub const ALLOC_CHECK: usize = 0x0040;
    /// Three `u64` words with which `SHMEM_DEBUG` compares each PE's
    /// allocation call with PE 0's.
    pub const COLLECTIVE_CHECK: usize = 0x0140;
    /// Signal scratch for runtime-internal put-with-signal.
    pub const SIGNAL_SCRATCH: usize = 0x0400;
    /// Length of the signal scratch.
    pub const SIGNAL_SCRATCH_LEN: usize = 0x0400;
    /// Directory of the active sets' keys (C ABI), [`ACTIVE_SETS`] words,
    /// used on PE 0 only.
    pub const ACTIVE_SET_DIR: usize = 0x1000;
    /// Number of active-set slots (distinct active sets a C program may use).
    pub const ACTIVE_SETS: usize = 16;
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

/// How the runtime starts, beyond the configuration.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StartOptions {
    /// Started by the C ABI: reserve the active-set slots and make the
    /// executable's static data symmetric.
    pub(crate) c_api: bool,
    /// Started by the deprecated `start_pes`, whose programs never
    /// finalize: no warning when the process exits.
    pub(crate) start_pes: bool,
}

/// The executable's static data mapped onto the segment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StaticRegion {
    /// Where it lives in this process.
    pub(crate) data: StaticData,
    /// Its segment offset.
    pub(crate) offset: usize,
}

/// What the runtime runs on: every conduit, dispatched statically.
pub(crate) type Backend = AnyConduit;

/// The runtime state of this process.
// `repr(C)` keeps what every operation reads (the conduit, the PE numbers,
// the heap bounds) together at the start, ahead of the large, cold
// configuration: the compiler's own order once put them on four cache lines.
#[repr(C)]
pub struct Runtime {
    pub(crate) conduit: Backend,
    me: usize,
    n: usize,
    /// How many user active-message handlers run in this process now
    /// ([`Runtime::not_in_handler`]).
    pub(crate) handlers: AtomicUsize,
    /// `SHMEM_SYMMETRIC_SIZE` (read on every symmetric-address check).
    heap_len: usize,
    /// The symmetric static data (C ABI on a file-backed conduit).
    pub(crate) statics: Option<StaticRegion>,
    config: Config,
    heap: Mutex<HeapAllocator>,
    /// The team slots; the world team's collectives serve barrier_all,
    /// sync_all and the implicit barriers of allocation and finalization.
    pub(crate) pool: TeamPool,
    thread_level: ThreadLevel,
    /// First active-set slot and how many there are (C ABI; 0 otherwise).
    pub(crate) active_sets: (usize, usize),
    /// Where the active-set collectives compare their calls (C ABI only).
    pub(crate) active_area: Option<active_area::Area>,
    /// The live conduit contexts other than the default one.
    pub(crate) contexts: Contexts,
    /// The PEs this PE sent Long active messages to since the last flush.
    pub(crate) long_sent: LongTargets,
}

/// Exit status of a job ended because a wait made no progress for
/// `FSHMEM_WAIT_TIMEOUT`.
pub const WAIT_TIMEOUT_STATUS: i32 = 124;

impl Runtime {
    fn build(config: Config, thread_level: ThreadLevel, opts: StartOptions) -> Result<Runtime> {
        // Before the job is known, the PE is the rank its launcher gave.
        let hint = config.job.rank_hint();
        let boot = |e: ConduitError| ShmemError::conduit(hint, "shmem_init", e);
        let job = JobEnv::join(&config.job).map_err(boot)?;
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
        let active = if opts.c_api { layout::ACTIVE_SETS } else { 0 };
        let statics = if opts.c_api {
            static_data::find()
        } else {
            None
        };
        let page = static_data::page_size();
        let (counters_len, slot_len) = TeamPool::layout(job.size, scratch);
        // The C ABI's active-set collectives check their arguments on an
        // area of their own after the pool (`collective::active`).
        let agree_len = if opts.c_api {
            active_area::area_len(job.size)
        } else {
            0
        };
        let agree_off = (heap_len < isize::MAX as usize / 2)
            .then(|| layout::team_pool(heap_len))
            .and_then(|b| b.checked_add((slots + active).checked_mul(slot_len)?));
        let pool_end = agree_off.and_then(|o| o.checked_add(agree_len));
        let static_off = pool_end.map(|e| e.next_multiple_of(page));
        let segment_len = static_off
            .and_then(|o| o.checked_add(statics.map_or(0, |d| d.len)))
            .ok_or_else(|| ShmemError::Config {
                var: "SHMEM_SYMMETRIC_SIZE",
                value: heap_len.to_string(),
                expected: "a size that leaves room for the runtime's regions".to_string(),
            })?;
        let me = job.rank;
        let (conduit, parked_statics) = match take_parked() {
            Some(p) => {
                let (conduit, statics) = Self::reuse(p, segment_len, heap_len)?;
                (conduit, Some(statics))
            }
            None => {
                let c = AnyConduit::attach(&job, SegmentRequest::Own(segment_len), &config.conduit)
                    .map_err(|e| match e {
                        // Name the setting that asked for the space.
                        ConduitError::NoSpace { what, asked, free } => ShmemError::conduit(
                            me,
                            "shmem_init",
                            ConduitError::NoSpace {
                                what: format!(
                                    "the symmetric heap (SHMEM_SYMMETRIC_SIZE={}) in {what}",
                                    format_size(heap_len as u64)
                                ),
                                asked,
                                free,
                            },
                        ),
                        e => ShmemError::conduit(me, "shmem_init", e),
                    })?;
                (c, None)
            }
        };
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
        let static_off = static_off.unwrap_or(0);
        let statics = match (statics, conduit.segment_backing()) {
            // Initialized again: the static data is still mapped.
            _ if parked_statics.is_some() => parked_statics.flatten(),
            (Some(data), Some(backing)) => {
                // SAFETY: `data` comes from `find`; the region
                // `static_off..+data.len` is page-aligned and inside the
                // segment (its length was computed to hold it); the
                // runtime starts before the program's threads use the
                // runtime, and no peer writes the region before the
                // bootstrap barrier below.
                unsafe { static_data::remap(data, conduit.local_segment(), static_off, backing) }
                    .map_err(|e| {
                    ShmemError::conduit(
                        me,
                        "shmem_init",
                        ConduitError::Io(format!(
                            "cannot map the program's static data onto the segment: {e}"
                        )),
                    )
                })?;
                Some(StaticRegion {
                    data,
                    offset: static_off,
                })
            }
            _ => None,
        };
        let rt = Runtime {
            me,
            n,
            handlers: AtomicUsize::new(0),
            heap_len,
            heap: Mutex::new(HeapAllocator::with_origin(heap_len, layout::HEAP)),
            pool,
            thread_level,
            config,
            conduit,
            active_sets: (slots, active),
            active_area: match (opts.c_api, agree_off) {
                (true, Some(off)) => Some(active_area::Area::new(off, n)),
                _ => None,
            },
            statics,
            contexts: Contexts::default(),
            long_sent: LongTargets::new(n),
        };
        long_sent::register_flush(&rt.conduit)
            .map_err(|e| ShmemError::conduit(rt.me, "shmem_init", e))?;
        rt.write_header();
        // Every PE attached and initialized its header before any
        // one-sided traffic starts.
        rt.conduit
            .barrier()
            .map_err(|e| ShmemError::conduit(rt.me, "shmem_init", e))?;
        rt.announce(&job);
        Ok(rt)
    }

    /// Takes back the conduit a previous `shmem_finalize` of the C ABI
    /// kept: the segment must have the same size (the same
    /// `SHMEM_SYMMETRIC_SIZE`, so that the static data stays where it is
    /// mapped). Clears the runtime's region and the collective pool of
    /// this PE's segment: every PE passed the last finalize's barrier, so
    /// nothing more arrives there before the start-up barrier.
    fn reuse(
        p: Parked,
        segment_len: usize,
        heap_len: usize,
    ) -> Result<(Backend, Option<StaticRegion>)> {
        let got = p.conduit.segment_len();
        let me = p.conduit.rank();
        if got != segment_len {
            let _ = p.conduit.finalize();
            return Err(ShmemError::Config {
                var: "SHMEM_SYMMETRIC_SIZE",
                value: heap_len.to_string(),
                expected: format!(
                    "the size the library was first initialized with (PE {me}: a segment of {got} bytes, now {segment_len} asked)"
                ),
            });
        }
        let base = p.conduit.local_segment();
        let pool = layout::team_pool(heap_len);
        let pool_end = p.statics.map_or(segment_len, |s| s.offset);
        for (start, end) in [(0, layout::HEAP), (pool, pool_end)] {
            // SAFETY: both ranges lie inside this PE's segment (the runtime
            // region and the collective pool, before the static data),
            // reached by raw pointer only and zeroed with relaxed atomics;
            // no peer writes them until the start-up barrier (see above).
            unsafe { conduits::segmem::zero(base.add(start), end - start) };
        }
        Ok((p.conduit, p.statics))
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
            // page-aligned, reached by raw pointer only and stored
            // atomically; no other PE writes the header.
            unsafe { conduits::segmem::store(base.add(layout::HEADER + 8 * i).cast::<u64>(), *w) };
        }
    }

    fn announce(&self, job: &JobEnv) {
        let c = &self.config;
        if self.me == 0 && c.version {
            println!(
                "fshmem {LIBRARY_VERSION}, OpenSHMEM {}.{}",
                OPENSHMEM_VERSION.0, OPENSHMEM_VERSION.1
            );
        }
        if self.me == 0 && c.info {
            print!("{}", c.info_table());
            let found = c.job.found();
            println!(
                "fshmem job {}: {} PEs, bootstrap {}; launcher variables found: {}",
                job.job_id,
                job.size,
                job.bootstrap.describe(),
                if found.is_empty() {
                    "none".to_string()
                } else {
                    found.join(" ")
                }
            );
            let what = self.conduit.describe();
            if !what.is_empty() {
                println!("fshmem {} conduit: {what}", self.conduit.kind());
            }
        }
        if c.debug {
            conduits::report!(
                "PE {}: shmem_init: {} PEs, segment {} bytes at {:p}, runtime region {:#x} bytes, heap {} at offset {:#x}",
                self.me,
                self.n,
                self.conduit.segment_len(),
                self.conduit.local_segment(),
                layout::HEAP,
                format_size(c.symmetric_size as u64),
                layout::HEAP
            );
            if let Some(s) = self.statics {
                conduits::report!(
                    "PE {}: shmem_init: static data {:#x}..{:#x} ({} bytes) is symmetric at segment offset {:#x}",
                    self.me,
                    s.data.start,
                    s.data.start + s.data.len,
                    s.data.len,
                    s.offset
                );
            }
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

    /// Errors unless this thread is outside every AM handler: the check of
    /// the handler rule ([`crate::progress`]), on every call that may
    /// block.
    ///
    /// The hot paths read one word, [`Runtime::handlers`] (how many user
    /// handlers run in this process now), with a relaxed load from the
    /// runtime's first cache line, which the operation reads anyway; they
    /// look at the thread-local mark only while some handler runs, so that
    /// a put or a quiet pays no thread-local access (a `__tls_get_addr`
    /// call in position-independent code) in a program that is not
    /// running handlers.
    #[inline(always)]
    pub(crate) fn not_in_handler(&self, call: &'static str) -> Result<()> {
        // A thread's own handler raised the count before it ran (sequenced
        // before, same thread), so a zero here means this thread is in none.
        if self.handlers.load(Ordering::Relaxed) != 0 {
            return crate::progress::in_handler_check(self.me, call);
        }
        Ok(())
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

    /// `shmem_global_exit`: ends every PE of the job with `status`. A PE
    /// that ends the job with a failure status first tells the launcher
    /// (`oshrun`) that it is the PE that failed, so that oshrun names it
    /// even when it sees another PE, stopped by the global exit, end
    /// first.
    pub(crate) fn global_exit(&self, status: i32) -> ! {
        if status != 0 {
            conduits::job::tell_launcher_failed(self.me);
        }
        self.conduit.global_exit(status)
    }

    /// Wraps a conduit error. A wait that made no progress for
    /// `FSHMEM_WAIT_TIMEOUT` is not returned: it is reported on stderr and
    /// ends the job with [`WAIT_TIMEOUT_STATUS`].
    #[cold]
    pub(crate) fn err(&self, call: &'static str, e: ConduitError) -> ShmemError {
        // A PE the launcher is stopping hands no error to the program: what
        // failed is most likely a peer the same stop ended.
        conduits::wait::hold_if_stopping();
        let timed_out = matches!(e, ConduitError::Timeout { .. });
        let e = ShmemError::conduit(self.me, call, e);
        if timed_out {
            conduits::report!("{e}; ending the job");
            if IN_EXIT_HOOK.load(Ordering::Acquire) {
                // The process is already exiting (finalizing at exit): leave
                // at once; the peers find this PE gone.
                exit_now(WAIT_TIMEOUT_STATUS)
            }
            self.conduit.global_exit(WAIT_TIMEOUT_STATUS);
        }
        e
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

    /// Segment offset of `len` bytes at `addr` in this process, when they lie
    /// in symmetric memory: the user heap (through the segment mapping) or
    /// the symmetric static data; else [`ShmemError::NotSymmetricAddress`].
    #[inline]
    pub(crate) fn sym_offset(&self, call: &'static str, addr: usize, len: usize) -> Result<usize> {
        self.sym_offset_of(addr, len)
            .ok_or_else(|| self.not_symmetric(call, addr, len))
    }

    /// The address in this PE's segment mapping of the symmetric bytes
    /// `addr..addr + len` (the same bytes: a static variable's pages are
    /// the segment's, mapped a second time), if they are symmetric. A
    /// conduit recognises a source there as its own segment's.
    #[inline]
    pub(crate) fn segment_alias(&self, addr: usize, len: usize) -> Option<usize> {
        let base = self.conduit.local_segment() as usize;
        self.sym_offset_of(addr, len).map(|off| base + off)
    }

    #[inline]
    fn sym_offset_of(&self, addr: usize, len: usize) -> Option<usize> {
        let base = self.conduit.local_segment() as usize;
        let heap = base + layout::HEAP;
        if addr >= heap
            && addr
                .checked_add(len)
                .is_some_and(|e| e <= heap + self.heap_len)
        {
            return Some(addr - base);
        }
        if let Some(s) = self.statics {
            if s.data.contains(addr, len) {
                return Some(s.offset + (addr - s.data.start));
            }
            let alias = base + s.offset;
            if addr >= alias
                && addr
                    .checked_add(len)
                    .is_some_and(|e| e <= alias + s.data.len)
            {
                return Some(addr - base);
            }
        }
        None
    }

    #[cold]
    fn not_symmetric(&self, call: &'static str, addr: usize, len: usize) -> ShmemError {
        ShmemError::NotSymmetricAddress {
            pe: self.me,
            call,
            addr,
            len,
        }
    }

    /// The end of the symmetric area (heap or static data) that holds
    /// segment offset `off`.
    pub(crate) fn sym_area_end(&self, off: usize) -> usize {
        match self.statics {
            Some(s) if off >= s.offset => s.offset + s.data.len,
            _ => layout::HEAP + self.heap_len,
        }
    }

    /// Waits until every operation this PE issued is complete.
    #[inline]
    pub(crate) fn quiet(&self, call: &'static str) -> Result<()> {
        self.conduit
            .quiet(CtxId::DEFAULT)
            .map_err(|e| self.err(call, e))
    }

    /// Orders operations to each PE across the call.
    #[inline]
    pub(crate) fn fence(&self, call: &'static str) -> Result<()> {
        self.conduit
            .fence(CtxId::DEFAULT)
            .map_err(|e| self.err(call, e))
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
            // counters are 8-byte aligned), reached by raw pointer only.
            // The segment lives as long as `self`. On smp, ipv6 and ofi
            // this process accesses its own segment only atomically (the
            // API's and the conduits' `segmem` copies, CPU atomics), so
            // this load races with nothing; other processes' and devices'
            // writes (a peer, a board) are outside Rust's model, as
            // `conduits::segmem` sets out.
            AmoWidth::W32 => unsafe {
                std::sync::atomic::AtomicU32::from_ptr(p.cast()).load(Ordering::Acquire) as u64
            },
            // SAFETY: as above.
            AmoWidth::W64 => unsafe { AtomicU64::from_ptr(p.cast()).load(Ordering::Acquire) },
        }
    }

    /// Waits until `done` holds for the local word at `off`, polling the
    /// conduit between loads; returns the word that satisfied it. When the
    /// wait makes no progress for `FSHMEM_WAIT_TIMEOUT` it reports
    /// `what(current word)` (what it waits for) and ends the job.
    #[inline]
    pub(crate) fn wait_word_for(
        &self,
        off: usize,
        width: AmoWidth,
        call: &'static str,
        done: impl Fn(u64) -> bool,
        what: impl Fn(u64) -> String,
    ) -> Result<u64> {
        self.wait_word_watching(off, width, call, done, what, || ())
    }

    /// [`Runtime::wait_word_for`], calling `watch` on every round once the
    /// wait has stopped spinning (collectives look there for a
    /// disagreement another PE found, see `collective::active`).
    #[inline]
    pub(crate) fn wait_word_watching(
        &self,
        off: usize,
        width: AmoWidth,
        call: &'static str,
        done: impl Fn(u64) -> bool,
        what: impl Fn(u64) -> String,
        mut watch: impl FnMut(),
    ) -> Result<u64> {
        let v = self.load_word(off, width);
        if done(v) {
            return Ok(v);
        }
        let mut backoff = Backoff::new();
        loop {
            if self.conduit.poll_served().map_err(|e| self.err(call, e))? {
                // Serving peers is no progress of this wait, but keeps it
                // spinning, so their next requests are answered at once.
                backoff.respin();
            }
            let v = self.load_word(off, width);
            if done(v) {
                return Ok(v);
            }
            if backoff.is_yielding() {
                watch();
            }
            if let Some(waited) = backoff.timed_out() {
                let what = what(v);
                return Err(self.err(call, ConduitError::Timeout { what, waited }));
            }
            backoff.snooze();
        }
    }

    /// Serves the conduit until `ready` gives a value (or an error), and
    /// returns it: `ready` is asked first, then the conduit is polled,
    /// with the spin-then-yield backoff of every wait between rounds. A
    /// wait that makes no progress for `FSHMEM_WAIT_TIMEOUT` fails naming
    /// `call` and `what()`, what it waited for.
    pub(crate) fn poll_until<T>(
        &self,
        call: &'static str,
        mut ready: impl FnMut() -> Result<Option<T>>,
        what: impl FnOnce() -> String,
    ) -> Result<T> {
        let mut backoff = Backoff::new();
        loop {
            if let Some(v) = ready()? {
                return Ok(v);
            }
            if self.conduit.poll_served().map_err(|e| self.err(call, e))? {
                backoff.respin();
            }
            if let Some(waited) = backoff.timed_out() {
                let what = what();
                return Err(self.err(call, ConduitError::Timeout { what, waited }));
            }
            backoff.snooze();
        }
    }

    /// Finalizes: quiet, then the conduit leaves the job (a barrier of the
    /// conduit's, so no PE detaches while a peer still reaches its
    /// segment).
    fn finalize(&self) -> Result<()> {
        self.quiet("shmem_finalize")?;
        self.conduit
            .finalize()
            .map_err(|e| self.err("shmem_finalize", e))
    }
}
