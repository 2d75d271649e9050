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
//! | `0x0040` | 256 | barrier flags: one `u64` counter per dissemination round (32 rounds) |
//! | `0x0140` | 64 | `SHMEM_DEBUG` check that allocation calls are collective |
//! | `0x0400` | 1 KiB | signal scratch for runtime-internal put-with-signal |
//! | `0x1000` | 16 KiB | reserved: collective pSync pools (per team) |
//! | `0x5000` | 4 KiB | reserved: distributed locks |
//! | `0x6000` | 40 KiB | reserved |
//! | `0x10000` | `SHMEM_SYMMETRIC_SIZE` | user heap (see [`crate::alloc`]) |
//!
//! Conduits hand out zero-filled segments; the counters start at zero.

use crate::alloc::HeapAllocator;
use crate::config::{Config, LIBRARY_VERSION, OPENSHMEM_VERSION, format_size};
use crate::error::{Result, ShmemError};
use crate::pod::bytes_of_mut;
use conduits::wait::Backoff;
use conduits::{AmoOp, AmoWidth, AnyConduit, Conduit, ConduitError, JobEnv};
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// Offsets of the runtime-internal region of the segment.
pub mod layout {
    /// Header: magic, layout version, heap offset, heap size.
    pub const HEADER: usize = 0x0000;
    /// The header's magic word, "FSHMEMSG" little-endian.
    pub const MAGIC: u64 = u64::from_le_bytes(*b"FSHMEMSG");
    /// Version of this layout.
    pub const VERSION: u64 = 1;
    /// Dissemination-barrier flags: [`BARRIER_ROUNDS`] `u64` counters.
    pub const BARRIER: usize = 0x0040;
    /// Counters in the barrier area (enough for 2^32 PEs).
    pub const BARRIER_ROUNDS: usize = 32;
    /// Three `u64` words with which `SHMEM_DEBUG` compares each PE's
    /// allocation call with PE 0's.
    pub const COLLECTIVE_CHECK: usize = 0x0140;
    /// Signal scratch for runtime-internal put-with-signal.
    pub const SIGNAL_SCRATCH: usize = 0x0400;
    /// Length of the signal scratch.
    pub const SIGNAL_SCRATCH_LEN: usize = 0x0400;
    /// Reserved for collective pSync pools.
    pub const PSYNC_POOL: usize = 0x1000;
    /// Length of the pSync pool area.
    pub const PSYNC_POOL_LEN: usize = 0x4000;
    /// Reserved for distributed locks.
    pub const LOCKS: usize = 0x5000;
    /// Length of the lock area.
    pub const LOCKS_LEN: usize = 0x1000;
    /// Start of the user heap; also the length of the internal region.
    pub const HEAP: usize = 0x10000;
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
    /// Barriers this PE has entered (barrier_all, sync_all and the implicit
    /// ones of allocation and finalization share it).
    epoch: AtomicU64,
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
    pub(crate) fn start(config: Config) -> Result<*mut Runtime> {
        match STATE.compare_exchange(UNINIT, STARTING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {}
            Err(FINALIZED) => return Err(ShmemError::Finalized),
            Err(_) => return Err(ShmemError::AlreadyInitialized),
        }
        match Self::build(config) {
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

    fn build(config: Config) -> Result<Runtime> {
        let boot = |e: ConduitError| ShmemError::conduit(0, "shmem_init", e);
        let job = JobEnv::from_env().map_err(boot)?;
        let heap_len = config.symmetric_size;
        let segment_len = layout::HEAP
            .checked_add(heap_len)
            .ok_or_else(|| ShmemError::Config {
                var: "SHMEM_SYMMETRIC_SIZE",
                value: heap_len.to_string(),
                expected: "a size that leaves room for the runtime's 64 KiB".to_string(),
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
        let rt = Runtime {
            me: conduit.rank(),
            n: conduit.size(),
            heap: Mutex::new(HeapAllocator::new(heap_len)),
            epoch: AtomicU64::new(0),
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

    /// `shmem_sync_all`: a dissemination barrier over all PEs on the
    /// counters at [`layout::BARRIER`].
    ///
    /// In round `r` PE `i` adds 1 to counter `r` of PE `(i + 2^r) mod n`
    /// and waits until its own counter `r` reaches the number of barriers
    /// it has entered. Each counter has exactly one writer per barrier, and
    /// no writer can be more than one barrier ahead (it cannot leave
    /// barrier `e` before this PE arrives in it), so `>=` is exact.
    pub(crate) fn sync_all(&self, call: &'static str) -> Result<()> {
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let (me, n) = (self.me, self.n);
        let mut dist = 1usize;
        let mut round = 0usize;
        while dist < n {
            let to = (me + dist) % n;
            let off = layout::BARRIER + 8 * round;
            self.conduit
                .atomic(to, off, AmoOp::Add, AmoWidth::W64, 1, 0)
                .map_err(|e| self.err(call, e))?;
            self.wait_word(off, AmoWidth::W64, call, |v| v >= epoch)?;
            dist <<= 1;
            round += 1;
        }
        Ok(())
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
