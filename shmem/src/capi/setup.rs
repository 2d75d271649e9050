//! Setup and query, memory management, ordering, and the deprecated
//! names programs still call (`start_pes`, `_my_pe`, `shmalloc`...).

use super::{EXITING, RT, exit_job, fail, ok, rt};
use crate::config::{Config, OPENSHMEM_VERSION};
use crate::ctx::ThreadLevel;
use crate::error::ShmemError;
use crate::runtime::{self, Runtime, StartOptions, layout};
use conduits::prelude::*;
use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// `SHMEM_THREAD_*` as in `shmem.h`.
fn level_of(l: c_int) -> ThreadLevel {
    match l {
        0 => ThreadLevel::Single,
        1 => ThreadLevel::Funneled,
        2 => ThreadLevel::Serialized,
        _ => ThreadLevel::Multiple,
    }
}

fn level_code(l: ThreadLevel) -> c_int {
    match l {
        ThreadLevel::Single => 0,
        ThreadLevel::Funneled => 1,
        ThreadLevel::Serialized => 2,
        ThreadLevel::Multiple => 3,
    }
}

/// Serializes init and finalize; counts the initializations that a
/// finalize has not yet matched (OpenSHMEM 1.6: `shmem_init` may be called
/// again, each call matched by a `shmem_finalize`; the last one releases
/// the library, which may then be initialized again).
static LIFECYCLE: Mutex<usize> = Mutex::new(0);

fn start(level: ThreadLevel, start_pes: bool) {
    let mut inits = LIFECYCLE.lock().unwrap_or_else(|p| p.into_inner());
    if !RT.load(Ordering::Acquire).is_null() {
        // Already running: one more initialization to match (start_pes
        // has no finalize, so it adds none).
        if !start_pes {
            *inits += 1;
        }
        return;
    }
    let opts = StartOptions {
        c_api: true,
        start_pes,
    };
    let r = Config::from_env().and_then(|c| Runtime::start(c, level, opts));
    match r {
        Ok(p) => {
            RT.store(p, Ordering::Release);
            *inits = 1;
            line_buffered_stdout();
        }
        Err(e) => {
            conduits::report!("{e}");
            std::process::exit(1)
        }
    }
}

/// Makes the C `stdout` line-buffered (it is fully buffered on a pipe or
/// a file), after flushing what the program printed before: every whole
/// line a PE prints is written out at once, so that when one PE fails and
/// the launcher stops the others, nothing they printed is lost in a
/// buffer. `stderr` is unbuffered already.
fn line_buffered_stdout() {
    unsafe extern "C" {
        static mut stdout: *mut libc::FILE;
    }
    // SAFETY: glibc's `stdout` is a valid stream for the life of the
    // process; fflush and setvbuf lock it, and a null buffer lets the
    // library keep its own. Reading the pointer races with nothing: the
    // program does not reassign stdout.
    unsafe {
        let out = std::ptr::addr_of!(stdout).read();
        if !out.is_null() {
            libc::fflush(out);
            libc::setvbuf(
                out,
                std::ptr::null_mut(),
                libc::_IOLBF,
                libc::BUFSIZ as usize,
            );
        }
    }
}

/// `shmem_init`.
#[unsafe(export_name = "pshmem_init")]
pub extern "C" fn shmem_init() {
    start(ThreadLevel::Multiple, false)
}
weak_alias!("shmem_init");

/// `shmem_init_thread`: every level is provided as requested.
///
/// # Safety
/// `provided` must be null or a writable `int`.
#[unsafe(export_name = "pshmem_init_thread")]
pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    start(level_of(requested), false);
    if !provided.is_null() {
        let got = level_code(rt("shmem_init_thread").thread_level());
        // SAFETY: the C contract: a writable `int`.
        unsafe { provided.write(got) };
    }
    0
}
weak_alias!("shmem_init_thread");

/// `shmem_query_thread`.
///
/// # Safety
/// `provided` must be a writable `int`.
#[unsafe(export_name = "pshmem_query_thread")]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
    let got = level_code(rt("shmem_query_thread").thread_level());
    if !provided.is_null() {
        // SAFETY: the C contract: a writable `int`.
        unsafe { provided.write(got) };
    }
}
weak_alias!("shmem_query_thread");

/// `start_pes` (deprecated): `shmem_init`, without a finalize to match;
/// the argument is ignored.
#[unsafe(export_name = "pstart_pes")]
pub extern "C" fn start_pes(_npes: c_int) {
    start(ThreadLevel::Multiple, true)
}
weak_alias!("start_pes");

/// `shmem_finalize`: matches one initialization. All but the last are a
/// barrier; the last is the barrier of finalization, after which the
/// library is uninitialized (and may be initialized again: the conduit
/// stays attached to the job until then, or until the process exits).
/// Calls without a matching initialization do nothing.
#[unsafe(export_name = "pshmem_finalize")]
pub extern "C" fn shmem_finalize() {
    const CALL: &str = "shmem_finalize";
    let mut inits = LIFECYCLE.lock().unwrap_or_else(|p| p.into_inner());
    if RT.load(Ordering::Acquire).is_null() || EXITING.load(Ordering::SeqCst) {
        return;
    }
    if *inits > 1 {
        *inits -= 1;
        ok(rt(CALL).barrier_all(CALL));
        return;
    }
    *inits = 0;
    // The barrier runs while the runtime is published: handlers that
    // peers' messages run in it may reply.
    let res = runtime::finalize_barrier(rt(CALL));
    super::active::forget();
    let p = RT.swap(std::ptr::null_mut(), Ordering::AcqRel);
    // SAFETY: `p` came from `Runtime::start`, is unpublished now and is
    // finished only here (the swap above, under the lock, hands it to one
    // caller).
    unsafe { runtime::park(p) };
    if let Err(e) = res {
        conduits::report!("{e}");
        std::process::exit(1)
    }
}
weak_alias!("shmem_finalize");

/// `shmem_query_initialized` (1.6): 1 between an initialization and the
/// finalize that matches the last one, 0 otherwise; callable at any time.
///
/// # Safety
/// `initialized` must be a writable `int`.
#[unsafe(export_name = "pshmem_query_initialized")]
pub unsafe extern "C" fn shmem_query_initialized(initialized: *mut c_int) {
    let on = !RT.load(Ordering::Acquire).is_null() && !EXITING.load(Ordering::SeqCst);
    if !initialized.is_null() {
        // SAFETY: the C contract: a writable `int`.
        unsafe { initialized.write(on as c_int) };
    }
}
weak_alias!("shmem_query_initialized");

/// `shmem_global_exit`: ends every PE of the job with `status`.
#[unsafe(export_name = "pshmem_global_exit")]
pub extern "C" fn shmem_global_exit(status: c_int) {
    exit_job(status)
}
weak_alias!("shmem_global_exit");

macro_rules! int_query {
    ($($name:ident $call:literal)*) => {$(
        /// The PE number or the job size, as a C `int`.
        #[unsafe(export_name = concat!("p", stringify!($name)))]
        pub extern "C" fn $name() -> c_int {
            let rt = rt($call);
            (if $call.contains("my_pe") { rt.my_pe() } else { rt.n_pes() }) as c_int
        }
        weak_alias!(stringify!($name));
    )*};
}
int_query!(
    shmem_my_pe "shmem_my_pe"
    shmem_n_pes "shmem_n_pes"
    _my_pe "_my_pe"
    _num_pes "_num_pes"
    my_pe "my_pe"
    num_pes "num_pes"
);

/// `shmem_pe_accessible`: 1 for every PE of the job.
#[unsafe(export_name = "pshmem_pe_accessible")]
pub extern "C" fn shmem_pe_accessible(pe: c_int) -> c_int {
    let rt = rt("shmem_pe_accessible");
    (pe >= 0 && (pe as usize) < rt.n_pes()) as c_int
}
weak_alias!("shmem_pe_accessible");

/// `shmem_addr_accessible`: 1 when `addr` is symmetric and `pe` a PE of
/// the job.
#[unsafe(export_name = "pshmem_addr_accessible")]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    const CALL: &str = "shmem_addr_accessible";
    let rt = rt(CALL);
    (pe >= 0 && (pe as usize) < rt.n_pes() && rt.sym_offset(CALL, addr as usize, 1).is_ok())
        as c_int
}
weak_alias!("shmem_addr_accessible");

/// The address of symmetric `dest` on world PE `pe` in this process, or
/// null where the conduit cannot load and store it.
pub(crate) fn ptr_on(
    rt: &Runtime,
    call: &'static str,
    dest: *const c_void,
    pe: usize,
) -> *mut c_void {
    if pe == rt.my_pe() {
        return if rt.sym_offset(call, dest as usize, 1).is_ok() {
            dest.cast_mut()
        } else {
            std::ptr::null_mut()
        };
    }
    match (
        rt.sym_offset(call, dest as usize, 1),
        rt.conduit.peer_segment(pe),
    ) {
        (Ok(off), Some(base)) => base.wrapping_add(off).cast(),
        _ => std::ptr::null_mut(),
    }
}

/// `shmem_ptr`.
#[unsafe(export_name = "pshmem_ptr")]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    const CALL: &str = "shmem_ptr";
    let rt = rt(CALL);
    if pe < 0 || pe as usize >= rt.n_pes() {
        return std::ptr::null_mut();
    }
    ptr_on(rt, CALL, dest, pe as usize)
}
weak_alias!("shmem_ptr");

/// `shmem_info_get_version`: 1.5.
///
/// # Safety
/// `major` and `minor` must be writable `int`s.
#[unsafe(export_name = "pshmem_info_get_version")]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: the C contract: writable `int`s.
    unsafe {
        major.write(OPENSHMEM_VERSION.0 as c_int);
        minor.write(OPENSHMEM_VERSION.1 as c_int);
    }
}
weak_alias!("shmem_info_get_version");

/// `SHMEM_MAX_NAME_LEN`.
pub(crate) const MAX_NAME_LEN: usize = 256;

/// `shmem_info_get_name`: "fshmem" (`SHMEM_VENDOR_STRING`), NUL-terminated.
///
/// # Safety
/// `name` must have room for `SHMEM_MAX_NAME_LEN` bytes.
#[unsafe(export_name = "pshmem_info_get_name")]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    let s = "fshmem";
    let n = s.len().min(MAX_NAME_LEN - 1);
    // SAFETY: the C contract: `SHMEM_MAX_NAME_LEN` writable bytes; `n + 1`
    // is at most that.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), name, n);
        name.add(n).write(0);
    }
}
weak_alias!("shmem_info_get_name");

macro_rules! ordering {
    ($($name:ident $call:literal $method:ident;)*) => {$(
        /// Completion and ordering on the whole PE.
        #[unsafe(export_name = concat!("p", stringify!($name)))]
        pub extern "C" fn $name() {
            let rt = rt($call);
            ok(rt.$method($call))
        }
        weak_alias!(stringify!($name));
    )*};
}
ordering!(
    shmem_quiet "shmem_quiet" quiet;
    shmem_fence "shmem_fence" fence;
    shmem_barrier_all "shmem_barrier_all" barrier_all;
    shmem_sync_all "shmem_sync_all" sync_all;
);

/// `shmem_pe_quiet` (1.6): completes this PE's operations (to every PE).
#[unsafe(export_name = "pshmem_pe_quiet")]
pub extern "C" fn shmem_pe_quiet(_target_pes: *const c_int, _npes: usize) {
    shmem_quiet()
}
weak_alias!("shmem_pe_quiet");

/// `shmem_pcontrol`: profiling levels are accepted and ignored.
#[unsafe(export_name = "pshmem_pcontrol")]
pub extern "C" fn shmem_pcontrol(_level: c_int) {}
weak_alias!("shmem_pcontrol");

macro_rules! no_op {
    ($($name:ident ($($a:ident: $t:ty),*);)*) => {$(
        /// A deprecated cache-management routine: nothing to do.
        #[unsafe(export_name = concat!("p", stringify!($name)))]
        pub extern "C" fn $name($($a: $t),*) {}
        weak_alias!(stringify!($name));
    )*};
}
no_op!(
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_clear_cache_line_inv(_p: *mut c_void);
    shmem_set_cache_line_inv(_p: *mut c_void);
    shmem_udcflush();
    shmem_udcflush_line(_p: *mut c_void);
);

// ----------------------------------------------------------------------
// Memory management

/// The outcome of a collective allocation in C: the address, or null when
/// the heap cannot satisfy the request (or the alignment is not a power of
/// two), as the standard specifies. Every PE takes the same collective
/// step, so every PE returns null together; the reason is one line under
/// `SHMEM_DEBUG`. Any other error (PEs that disagree on the call) ends the
/// job.
fn c_alloc_result(rt: &Runtime, r: crate::error::Result<usize>) -> *mut c_void {
    match r {
        Ok(off) => rt.local_addr(off).cast(),
        Err(e @ ShmemError::Alloc { .. }) => {
            if rt.config().debug {
                conduits::report!("{e}");
            }
            std::ptr::null_mut()
        }
        Err(e) => fail(e),
    }
}

fn alloc(call: &'static str, size: usize, align: usize, zero: bool) -> *mut c_void {
    let rt = rt(call);
    if size == 0 {
        return std::ptr::null_mut();
    }
    c_alloc_result(rt, rt.alloc_bytes(call, size, align, zero, "C allocation"))
}

/// The heap block `p` starts, as (segment offset, rounded length).
fn block(rt: &Runtime, call: &'static str, p: *mut c_void) -> (usize, usize) {
    let off = ok(rt.sym_offset(call, p as usize, 1));
    let len = off
        .checked_sub(layout::HEAP)
        .and_then(|h| rt.heap().len_of(h));
    match len {
        Some(l) => (off, l),
        None => fail(ShmemError::Invalid {
            pe: rt.my_pe(),
            call,
            reason: format!(
                "address {:#x} is not the start of a live symmetric allocation",
                p as usize
            ),
        }),
    }
}

/// `shmem_malloc`.
#[unsafe(export_name = "pshmem_malloc")]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    alloc("shmem_malloc", size, 16, false)
}
weak_alias!("shmem_malloc");

/// `shmem_malloc_with_hints`: hints are accepted; the memory is the same.
#[unsafe(export_name = "pshmem_malloc_with_hints")]
pub extern "C" fn shmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
    alloc("shmem_malloc", size, 16, false)
}
weak_alias!("shmem_malloc_with_hints");

/// `shmem_calloc`.
#[unsafe(export_name = "pshmem_calloc")]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    const CALL: &str = "shmem_calloc";
    // A product that overflows cannot be satisfied: the heap refuses it
    // (collectively, like any other request too large).
    let bytes = count.saturating_mul(size);
    alloc(CALL, bytes, 16, true)
}
weak_alias!("shmem_calloc");

/// `shmem_align`.
#[unsafe(export_name = "pshmem_align")]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    alloc("shmem_align", size, alignment, false)
}
weak_alias!("shmem_align");

/// `shmem_free`: null does nothing.
#[unsafe(export_name = "pshmem_free")]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    const CALL: &str = "shmem_free";
    if ptr.is_null() {
        return;
    }
    let rt = rt(CALL);
    let (off, len) = block(rt, CALL, ptr);
    ok(rt.free_bytes(CALL, off, len));
}
weak_alias!("shmem_free");

/// `shmem_realloc`: null allocates, size 0 frees.
#[unsafe(export_name = "pshmem_realloc")]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    const CALL: &str = "shmem_realloc";
    if ptr.is_null() {
        return alloc(CALL, size, 16, false);
    }
    if size == 0 {
        shmem_free(ptr);
        return std::ptr::null_mut();
    }
    let rt = rt(CALL);
    let (off, len) = block(rt, CALL, ptr);
    // On failure the block stays as it was.
    c_alloc_result(rt, rt.realloc_bytes(CALL, off, len, size, 16))
}
weak_alias!("shmem_realloc");

/// `shmalloc` (deprecated).
#[unsafe(export_name = "pshmalloc")]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    shmem_malloc(size)
}
weak_alias!("shmalloc");

/// `shfree` (deprecated).
#[unsafe(export_name = "pshfree")]
pub extern "C" fn shfree(ptr: *mut c_void) {
    shmem_free(ptr)
}
weak_alias!("shfree");

/// `shrealloc` (deprecated).
#[unsafe(export_name = "pshrealloc")]
pub extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    shmem_realloc(ptr, size)
}
weak_alias!("shrealloc");

/// `shmemalign` (deprecated).
#[unsafe(export_name = "pshmemalign")]
pub extern "C" fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
    shmem_align(alignment, size)
}
weak_alias!("shmemalign");
