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
//! | `0x0040` | 256 | the always-on check that allocation calls are collective ([`Runtime::collective_begin`]) |
//! | `0x0140` | 64 | `SHMEM_DEBUG` check that allocation calls are collective |
//! | `0x0400` | 1 KiB | signal scratch for runtime-internal put-with-signal |
//! | `0x1000` | 128 | C ABI: the active-set directory (PE 0's copy) |
//! | `0x1080` | 16 KiB - 128 | reserved |
//! | `0x5000` | 4 KiB | reserved: distributed locks |
//! | `0x6000` | 40 KiB | reserved |
//! | `0x10000` | `SHMEM_SYMMETRIC_SIZE` | user heap (see [`crate::alloc`]) |
//! | [`layout::team_pool`] | `FSHMEM_TEAMS_MAX` x slot | the collective pool: one slot per team ([`crate::team`]) |
//! | after the pool | C ABI only: [`layout::ACTIVE_SETS`] x slot | slots of the deprecated active-set collectives |
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
use crate::coll::Coll;
use crate::config::{Config, LIBRARY_VERSION, OPENSHMEM_VERSION};
use crate::ctx::ThreadLevel;
use crate::error::{Result, ShmemError, call_code, call_name};
use crate::pod::bytes_of_mut;
use crate::static_data::{self, StaticData};
use crate::team::{TeamConfig, TeamPool, TeamState};
use conduits::prelude::*;
use conduits::wait::Backoff;
use conduits::{AmoOp, AmoWidth, AnyConduit, ConduitError, JobEnv, SegmentRequest};
use gasnet_core::config::format_size;
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
    /// The conduit chosen in code ([`crate::Builder::conduit`]), instead
    /// of `FSHMEM_CONDUIT`.
    pub(crate) conduit: Option<conduits::ConduitKind>,
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
}

const UNINIT: u8 = 0;
const STARTING: u8 = 1;
const RUNNING: u8 = 2;
const FINALIZED: u8 = 3;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static GLOBAL: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static USERS: AtomicUsize = AtomicUsize::new(0);
/// Collective allocation steps this process took ([`Runtime::collective_begin`]).
static ALLOC_STEP: AtomicU64 = AtomicU64::new(0);

/// Exit status of a process that exits (with status 0) while the runtime
/// is initialized and not finalized.
pub const NOT_FINALIZED_STATUS: i32 = 1;

/// Exit status of a job ended because a wait made no progress for
/// `FSHMEM_WAIT_TIMEOUT`.
pub const WAIT_TIMEOUT_STATUS: i32 = 124;

/// Proof of [`Runtime::collective_begin`], consumed by
/// [`Runtime::collective_end`] after the step's barrier.
#[must_use]
pub(crate) struct CollectiveStep {
    step: u64,
}

/// Runs at process exit (glibc `on_exit`, which passes the status): a
/// process leaving with status 0 while the runtime runs did not finalize.
/// That is a failure of the job, not a success: say so and exit non-zero,
/// so that the launcher stops the other PEs (which would otherwise wait for
/// this one) and the job's status shows it.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" fn exit_hook(status: libc::c_int, _arg: *mut libc::c_void) {
    if status != 0 || STATE.load(Ordering::Acquire) != RUNNING || conduits::wait::job_exiting() {
        return;
    }
    let p = GLOBAL.load(Ordering::SeqCst);
    let pe = if p.is_null() {
        "?".to_string()
    } else {
        // SAFETY: GLOBAL is non-null only while the runtime is alive; the
        // process is exiting, nothing frees it any more.
        unsafe { (*p).me.to_string() }
    };
    conduits::report!(
        "PE {pe}: exited without calling shmem_finalize; ending the job with status {NOT_FINALIZED_STATUS}"
    );
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    // SAFETY: _exit ends the process at once; calling it from an exit
    // handler is allowed (unlike exit).
    unsafe { libc::_exit(NOT_FINALIZED_STATUS) }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn install_exit_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    unsafe extern "C" {
        fn on_exit(
            f: extern "C" fn(libc::c_int, *mut libc::c_void),
            arg: *mut libc::c_void,
        ) -> libc::c_int;
    }
    // SAFETY: registers a handler with glibc; the handler touches only
    // statics and the leaked runtime.
    ONCE.call_once(|| unsafe {
        on_exit(exit_hook, std::ptr::null_mut());
    });
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn install_exit_hook() {}

impl Runtime {
    /// Starts the runtime: reads the configuration and the job, attaches
    /// the conduit, and publishes the state. Errors if already running.
    pub(crate) fn start(
        config: Config,
        thread_level: ThreadLevel,
        opts: StartOptions,
    ) -> Result<*mut Runtime> {
        match STATE.compare_exchange(UNINIT, STARTING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {}
            Err(FINALIZED) => return Err(ShmemError::Finalized),
            Err(_) => return Err(ShmemError::AlreadyInitialized),
        }
        match Self::build(config, thread_level, opts) {
            Ok(rt) => {
                let p = Box::into_raw(Box::new(rt));
                GLOBAL.store(p, Ordering::SeqCst);
                STATE.store(RUNNING, Ordering::Release);
                install_exit_hook();
                Ok(p)
            }
            Err(e) => {
                STATE.store(UNINIT, Ordering::Release);
                Err(e)
            }
        }
    }

    fn build(config: Config, thread_level: ThreadLevel, opts: StartOptions) -> Result<Runtime> {
        let boot = |e: ConduitError| ShmemError::conduit(0, "shmem_init", e);
        let mut job = JobEnv::from_env().map_err(boot)?;
        if let Some(k) = opts.conduit {
            job.conduit = k;
        }
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
        let pool_end = (heap_len < isize::MAX as usize / 2)
            .then(|| layout::team_pool(heap_len))
            .and_then(|b| b.checked_add((slots + active).checked_mul(slot_len)?));
        let static_off = pool_end.map(|e| e.next_multiple_of(page));
        let segment_len = static_off
            .and_then(|o| o.checked_add(statics.map_or(0, |d| d.len)))
            .ok_or_else(|| ShmemError::Config {
                var: "SHMEM_SYMMETRIC_SIZE",
                value: heap_len.to_string(),
                expected: "a size that leaves room for the runtime's regions".to_string(),
            })?;
        let me = job.rank;
        let conduit = AnyConduit::attach(&job, SegmentRequest::Own(segment_len), &config.conduit)
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
        let static_off = static_off.unwrap_or(0);
        let statics = match (statics, conduit.segment_backing()) {
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
            heap_len,
            heap: Mutex::new(HeapAllocator::with_origin(heap_len, layout::HEAP)),
            pool,
            thread_level,
            config,
            conduit,
            active_sets: (slots, active),
            statics,
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

    /// Wraps a conduit error. A wait that made no progress for
    /// `FSHMEM_WAIT_TIMEOUT` is not returned: it is reported on stderr and
    /// ends the job with [`WAIT_TIMEOUT_STATUS`].
    #[cold]
    pub(crate) fn err(&self, call: &'static str, e: ConduitError) -> ShmemError {
        let timed_out = matches!(e, ConduitError::Timeout { .. });
        let e = ShmemError::conduit(self.me, call, e);
        if timed_out {
            conduits::report!("{e}; ending the job");
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
        let base = self.conduit.local_segment() as usize;
        let heap = base + layout::HEAP;
        if addr >= heap
            && addr
                .checked_add(len)
                .is_some_and(|e| e <= heap + self.heap_len)
        {
            return Ok(addr - base);
        }
        if let Some(s) = self.statics {
            if s.data.contains(addr, len) {
                return Ok(s.offset + (addr - s.data.start));
            }
            let alias = base + s.offset;
            if addr >= alias
                && addr
                    .checked_add(len)
                    .is_some_and(|e| e <= alias + s.data.len)
            {
                return Ok(addr - base);
            }
        }
        Err(self.not_symmetric(call, addr, len))
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

    /// Allocates `bytes` bytes aligned to `align` on the heap of every PE
    /// (collective: the allocation check with `SHMEM_DEBUG`, then a
    /// barrier); zeroes them if `zero`. Returns the segment offset.
    pub(crate) fn alloc_bytes(
        &self,
        call: &'static str,
        bytes: usize,
        align: usize,
        zero: bool,
        what: &str,
    ) -> Result<usize> {
        let alloc = self
            .heap()
            .alloc(bytes, align)
            .map_err(|source| ShmemError::Alloc {
                pe: self.me,
                call,
                source,
            });
        let step = match self.collective_begin(call, bytes as u64, align as u64) {
            Ok(s) => s,
            Err(e) => {
                if let Ok(off) = alloc {
                    let _ = self.heap().free(off);
                }
                return Err(e);
            }
        };
        let heap_off = match alloc {
            Ok(off) => off,
            Err(e) => {
                // Still collective: the other PEs may have succeeded (with
                // another size), and wait in the barrier.
                self.barrier_all(call)?;
                self.collective_end(call, step)?;
                return Err(e);
            }
        };
        let off = layout::HEAP + heap_off;
        if zero {
            // SAFETY: the block `off..off+bytes` lies in this PE's heap and
            // was just allocated; no other PE writes it before the barrier
            // below, which every PE passes only after allocating it.
            unsafe { std::ptr::write_bytes(self.local_addr(off), 0, bytes) };
        }
        if self.config.debug {
            conduits::report!(
                "PE {}: {call}: {what} ({bytes} bytes, align {align}) at heap offset {heap_off:#x}",
                self.me
            );
        }
        // Every PE passes the final barrier, also when the debug check fails
        // on some of them.
        let checked = self.check_collective(call, [call_code(call), bytes as u64, heap_off as u64]);
        let barrier = self.barrier_all(call);
        let same = barrier.and_then(|()| self.collective_end(call, step));
        match same.and(checked) {
            Ok(()) => Ok(off),
            Err(e) => {
                let _ = self.heap().free(heap_off);
                Err(e)
            }
        }
    }

    /// Frees the heap block at segment offset `off` of `bytes` bytes
    /// (collective: a barrier first, then the `SHMEM_DEBUG` check).
    pub(crate) fn free_bytes(&self, call: &'static str, off: usize, bytes: usize) -> Result<()> {
        let heap_off = off.wrapping_sub(layout::HEAP);
        let step = self.collective_begin(call, bytes as u64, heap_off as u64)?;
        self.barrier_all(call)?;
        self.collective_end(call, step)?;
        self.check_collective(call, [call_code(call), bytes as u64, heap_off as u64])?;
        self.heap()
            .free(heap_off)
            .map_err(|source| ShmemError::Alloc {
                pe: self.me,
                call,
                source,
            })?;
        if self.config.debug {
            conduits::report!("PE {}: {call}: heap offset {heap_off:#x}", self.me);
        }
        Ok(())
    }

    /// Resizes the heap block at segment offset `off` (`old_bytes` long) to
    /// `bytes`, keeping `align`: a barrier, the resize (moving and copying
    /// when it cannot grow in place), the `SHMEM_DEBUG` check and a
    /// barrier. Returns the new segment offset; on error nothing changed.
    pub(crate) fn realloc_bytes(
        &self,
        call: &'static str,
        off: usize,
        old_bytes: usize,
        bytes: usize,
        align: usize,
    ) -> Result<usize> {
        let heap_off = off.wrapping_sub(layout::HEAP);
        let step = self.collective_begin(call, bytes as u64, heap_off as u64)?;
        self.barrier_all(call)?;
        self.collective_end(call, step)?;
        let r = self
            .heap()
            .realloc(heap_off, bytes, align)
            .map_err(|source| ShmemError::Alloc {
                pe: self.me,
                call,
                source,
            })?;
        let new_off = layout::HEAP + r.offset;
        if r.moved {
            let keep = old_bytes.min(bytes);
            // SAFETY: both blocks lie in this PE's heap and are disjoint (the
            // new block was allocated while the old one was live); the old
            // one is free now but untouched until the next allocation, and
            // no other PE writes either block until the barrier below.
            unsafe {
                std::ptr::copy_nonoverlapping(self.local_addr(off), self.local_addr(new_off), keep)
            };
        }
        if self.config.debug {
            conduits::report!(
                "PE {}: {call}: {old_bytes} -> {bytes} bytes, heap offset {heap_off:#x} -> {:#x}",
                self.me,
                r.offset
            );
        }
        let checked = self.check_collective(call, [call_code(call), bytes as u64, r.offset as u64]);
        self.barrier_all(call)?;
        checked.map(|()| new_off)
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
            if let Some(waited) = backoff.timed_out() {
                let what = what(v);
                return Err(self.err(call, ConduitError::Timeout { what, waited }));
            }
            backoff.snooze();
        }
    }

    /// The always-on check that a collective allocation step (`call` with
    /// `bytes`, and `extra`: the alignment, or the offset freed or resized)
    /// is the same on every PE; before the step's barrier. Each PE records
    /// its request locally and compare-and-swaps a tag of it into PE 0's
    /// word for this step: the first tag stays, a PE whose tag differs
    /// raises PE 0's report word. After the barrier
    /// ([`Runtime::collective_end`]) every PE reads the report word, so all
    /// of them see a mismatch. Costs two small atomics on PE 0 per step.
    ///
    /// Three step slots rotate: PE 0 clears slot `k+1` at step `k`, which
    /// every PE finished reading before it reached the barrier of step
    /// `k-1`, and which no PE uses before the barrier of step `k`.
    pub(crate) fn collective_begin(
        &self,
        call: &'static str,
        bytes: u64,
        extra: u64,
    ) -> Result<CollectiveStep> {
        let step = ALLOC_STEP.fetch_add(1, Ordering::Relaxed);
        if self.n == 1 {
            return Ok(CollectiveStep { step });
        }
        let slot = (step % 3) as usize;
        let code = call_code(call);
        let rec = self.local_addr(alloc_record(slot)).cast::<u64>();
        for (i, w) in [code, bytes, step, extra].into_iter().enumerate() {
            // SAFETY: the record lies in this PE's runtime region, 8-byte
            // aligned; peers read it only after the step's barrier, and it
            // is rewritten three steps later.
            unsafe { rec.add(i).write_volatile(w) };
        }
        if self.me == 0 {
            let next = ((step + 1) % 3) as usize;
            for off in [alloc_tag(next), alloc_report(next)] {
                // SAFETY: an 8-byte aligned word of this PE's runtime region,
                // only accessed atomically.
                unsafe { AtomicU64::from_ptr(self.local_addr(off).cast()) }
                    .store(0, Ordering::Release);
            }
        }
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for w in [code, bytes, step, extra] {
            h = (h ^ w).wrapping_mul(0x0100_0000_01b3);
            h ^= h >> 29;
        }
        let tag = (h << 16) | (1 << 16) | ((self.me as u64 + 1) & 0xffff);
        let amo = |off, op, operand, compare| {
            self.conduit
                .atomic(CtxId::DEFAULT, 0, off, op, AmoWidth::W64, operand, compare)
                .map_err(|e| self.err(call, e))
        };
        let old = amo(alloc_tag(slot), AmoOp::CompareSwap, tag, 0)?;
        if old != 0 && old >> 16 != tag >> 16 {
            let report = (old & 0xffff) << 16 | ((self.me as u64 + 1) & 0xffff);
            amo(alloc_report(slot), AmoOp::CompareSwap, report, 0)?;
        }
        Ok(CollectiveStep { step })
    }

    /// The second half of [`Runtime::collective_begin`], after the step's
    /// barrier: [`ShmemError::NotSymmetric`] on every PE if any PE's
    /// request differed.
    pub(crate) fn collective_end(&self, call: &'static str, s: CollectiveStep) -> Result<()> {
        if self.n == 1 {
            return Ok(());
        }
        let slot = (s.step % 3) as usize;
        let report = self
            .conduit
            .atomic(
                CtxId::DEFAULT,
                0,
                alloc_report(slot),
                AmoOp::Fetch,
                AmoWidth::W64,
                0,
                0,
            )
            .map_err(|e| self.err(call, e))?;
        if report == 0 {
            return Ok(());
        }
        let pe_of = |bits: u64| ((bits & 0xffff) as usize).wrapping_sub(1) % self.n;
        let (first, other) = (pe_of(report >> 16), pe_of(report));
        let mut recs = [[0u64; 4]; 2];
        for (pe, r) in [first, other].into_iter().zip(recs.iter_mut()) {
            self.conduit
                .get(
                    CtxId::DEFAULT,
                    pe,
                    alloc_record(slot),
                    crate::pod::bytes_of_mut(&mut r[..]),
                )
                .map_err(|e| self.err(call, e))?;
        }
        Err(ShmemError::NotSymmetric {
            pe: self.me,
            call,
            step: s.step,
            first_pe: first,
            first_call: call_name(recs[0][0]),
            first_bytes: recs[0][1],
            other_pe: other,
            other_call: call_name(recs[1][0]),
            other_bytes: recs[1][1],
        })
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
            .get(
                CtxId::DEFAULT,
                0,
                layout::COLLECTIVE_CHECK,
                bytes_of_mut(&mut pe0),
            )
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

/// Offset of PE 0's tag word for collective allocation slot `slot`.
const fn alloc_tag(slot: usize) -> usize {
    layout::ALLOC_CHECK + 8 * slot
}

/// Offset of PE 0's report word for slot `slot`.
const fn alloc_report(slot: usize) -> usize {
    layout::ALLOC_CHECK + 24 + 8 * slot
}

/// Offset of every PE's record for slot `slot` (four words).
const fn alloc_record(slot: usize) -> usize {
    layout::ALLOC_CHECK + 64 + 32 * slot
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
        conduits::report!("PE {}: shmem_finalize: done", r.me);
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
