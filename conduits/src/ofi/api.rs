//! libfabric, loaded at run time: the few functions `libfabric.so.1`
//! exports (`fi_getinfo`, `fi_fabric`, `fi_strerror`, ...) found with
//! `dlopen`, and the `static inline` calls of the headers (`fi_domain`,
//! `fi_write`, `fi_atomic`, `fi_cq_read`, ...) written again in Rust: each
//! is one call through the ops table of the object it acts on, exactly as
//! the header's inline function does. The types come from [`super::sys`].
//!
//! Every function here is `unsafe`: its pointers must be live libfabric
//! objects of the kind named, as in C. A missing operation (a NULL entry
//! in a provider's table) returns `-FI_ENOSYS` instead of jumping to NULL.

use super::sys::*;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// The shared object loaded (libfabric 1.x's SONAME).
pub const LIBRARY: &str = "libfabric.so.1";

/// `FI_VERSION(1, 17)`: the API version asked of `fi_getinfo`, the oldest
/// release this binding was generated from and tested with.
pub const API_VERSION: u32 = (1 << 16) | 17;

/// `FI_ADDR_UNSPEC`.
pub const ADDR_UNSPEC: fi_addr_t = u64::MAX;

/// `-FI_ENOSYS`, returned for an operation a provider's table lacks.
pub const NOSYS: isize = -(FI_ENOSYS as isize);

type GetinfoFn = unsafe extern "C" fn(
    u32,
    *const c_char,
    *const c_char,
    u64,
    *const fi_info,
    *mut *mut fi_info,
) -> c_int;
type FreeinfoFn = unsafe extern "C" fn(*mut fi_info);
type DupinfoFn = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
type FabricFn =
    unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
type StrerrorFn = unsafe extern "C" fn(c_int) -> *const c_char;
type VersionFn = unsafe extern "C" fn() -> u32;

/// The exported entry points.
pub struct Api {
    /// `fi_getinfo`.
    pub getinfo: GetinfoFn,
    /// `fi_freeinfo`.
    pub freeinfo: FreeinfoFn,
    /// `fi_dupinfo` (`fi_allocinfo` is `fi_dupinfo(NULL)`).
    pub dupinfo: DupinfoFn,
    /// `fi_fabric`.
    pub fabric: FabricFn,
    strerror: StrerrorFn,
    version: VersionFn,
    _lib: libloading::Library,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("libfabric")
    }
}

/// Runs `f` (which loads a library) and then puts back every signal's
/// disposition as it was before.
///
/// Debian's `libfabric.so.1` links `libinfinipath` (for the psm
/// provider), whose constructor installs handlers for SIGINT, SIGILL,
/// SIGABRT, SIGBUS, SIGSEGV and SIGTERM that call `exit(1)`. Left in
/// place, a PE that crashes would seem to exit with status 1, and a PE
/// that oshrun stops with SIGTERM while it leaves with a `global_exit`
/// status would run the process's exit handlers again from the signal
/// handler and end with 1 instead. Loading a communication library must
/// not change how the process answers signals.
fn keeping_signal_dispositions<T>(f: impl FnOnce() -> T) -> T {
    const SIGNALS: std::ops::RangeInclusive<c_int> = 1..=31;
    let keep = |sig: c_int| sig != libc::SIGKILL && sig != libc::SIGSTOP;
    let before: Vec<Option<libc::sigaction>> = SIGNALS
        .map(|sig| {
            // SAFETY: `sigaction` is plain old data, valid when zeroed.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: a NULL new action only reads the current one into
            // `old`.
            let ok = unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } == 0;
            (ok && keep(sig)).then_some(old)
        })
        .collect();
    let r = f();
    for (sig, old) in SIGNALS.zip(before) {
        let Some(old) = old else { continue };
        // SAFETY: `now` is written by sigaction before it is read.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above, reads the current action only.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut now) } != 0 {
            continue;
        }
        if now.sa_sigaction != old.sa_sigaction || now.sa_flags != old.sa_flags {
            // SAFETY: reinstates the action this process had for `sig`
            // before the load, read by sigaction above.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
    }
    r
}

fn load() -> Result<Api, String> {
    // SAFETY: loading libfabric runs its constructors, which set up only
    // the library's own state (and signal handlers, which are undone); no
    // Rust invariant depends on them.
    let lib = keeping_signal_dispositions(|| unsafe { libloading::Library::new(LIBRARY) })
        .map_err(|e| e.to_string())?;
    macro_rules! sym {
        ($name:literal, $ty:ty) => {{
            // SAFETY: the symbol is libfabric's exported function of that
            // name, whose C prototype (rdma/fabric.h) `$ty` transcribes.
            let s = unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{}: {e}", $name))?;
            *s
        }};
    }
    Ok(Api {
        getinfo: sym!("fi_getinfo", GetinfoFn),
        freeinfo: sym!("fi_freeinfo", FreeinfoFn),
        dupinfo: sym!("fi_dupinfo", DupinfoFn),
        fabric: sym!("fi_fabric", FabricFn),
        strerror: sym!("fi_strerror", StrerrorFn),
        version: sym!("fi_version", VersionFn),
        _lib: lib,
    })
}

/// The library, loaded once per process; the error says what is missing.
pub fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(|e| {
        format!(
            "the ofi conduit needs libfabric, and {LIBRARY} cannot be loaded ({e}); install it \
             (Debian: libfabric1, 1.17 or later)"
        )
    })
}

impl Api {
    /// `fi_strerror(errno)` for a (positive or negative) libfabric error.
    pub fn strerror(&self, err: isize) -> String {
        let e = err.unsigned_abs().min(c_int::MAX as usize) as c_int;
        // SAFETY: fi_strerror returns a static string for any number.
        let p = unsafe { (self.strerror)(e) };
        if p.is_null() {
            return format!("error {e}");
        }
        // SAFETY: non-NULL: a NUL-terminated static string.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// The library's version as `(major, minor)`.
    pub fn version(&self) -> (u32, u32) {
        // SAFETY: no arguments.
        let v = unsafe { (self.version)() };
        (v >> 16, v & 0xffff)
    }
}

/// Calls entry `$f` of the ops table `$table` of object `$obj`, or returns
/// `-FI_ENOSYS` from the enclosing function when the table lacks it.
macro_rules! call {
    ($obj:ident => $table:ident, $f:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: the caller passed a live object (this function's
        // contract), whose ops table the provider keeps for its lifetime.
        let ops = unsafe { (*$obj).$table };
        // SAFETY: as above: NULL or a valid table.
        match unsafe { ops.as_ref() }.and_then(|t| t.$f) {
            // SAFETY: the entry is the provider's implementation of the
            // inline call of the same name, with the C arguments given.
            Some(f) => (unsafe { f($($arg),*) }) as _,
            None => return NOSYS as _,
        }
    }};
}

/// `fi_close(fid)`.
///
/// # Safety
/// `fid` is a live libfabric object, not used after this.
pub unsafe fn close(fid: *mut fid) -> c_int {
    // SAFETY: per this function's contract.
    call!(fid => ops, close(fid))
}

/// `fi_domain(fabric, info, &domain, NULL)`.
///
/// # Safety
/// Live objects; `out` writable.
pub unsafe fn domain(fab: *mut fid_fabric, info: *mut fi_info, out: *mut *mut fid_domain) -> c_int {
    // SAFETY: per this function's contract.
    call!(fab => ops, domain(fab, info, out, std::ptr::null_mut())
    )
}

/// `fi_endpoint(domain, info, &ep, NULL)`.
///
/// # Safety
/// Live objects; `out` writable.
pub unsafe fn endpoint(dom: *mut fid_domain, info: *mut fi_info, out: *mut *mut fid_ep) -> c_int {
    // SAFETY: per this function's contract.
    call!(dom => ops, endpoint(dom, info, out, std::ptr::null_mut())
    )
}

/// `fi_av_open(domain, attr, &av, NULL)`.
///
/// # Safety
/// Live objects; `attr` valid; `out` writable.
pub unsafe fn av_open(dom: *mut fid_domain, attr: *mut fi_av_attr, out: *mut *mut fid_av) -> c_int {
    // SAFETY: per this function's contract.
    call!(dom => ops, av_open(dom, attr, out, std::ptr::null_mut())
    )
}

/// `fi_cq_open(domain, attr, &cq, NULL)`.
///
/// # Safety
/// Live objects; `attr` valid; `out` writable.
pub unsafe fn cq_open(dom: *mut fid_domain, attr: *mut fi_cq_attr, out: *mut *mut fid_cq) -> c_int {
    // SAFETY: per this function's contract.
    call!(dom => ops, cq_open(dom, attr, out, std::ptr::null_mut())
    )
}

/// `fi_cntr_open(domain, attr, &cntr, NULL)`.
///
/// # Safety
/// Live objects; `attr` valid; `out` writable.
pub unsafe fn cntr_open(
    dom: *mut fid_domain,
    attr: *mut fi_cntr_attr,
    out: *mut *mut fid_cntr,
) -> c_int {
    // SAFETY: per this function's contract.
    call!(dom => ops, cntr_open(dom, attr, out, std::ptr::null_mut())
    )
}

/// `fi_query_atomic(domain, datatype, op, &attr, flags)`.
///
/// # Safety
/// `dom` live; `attr` writable.
pub unsafe fn query_atomic(
    dom: *mut fid_domain,
    dt: fi_datatype,
    op: fi_op,
    attr: *mut fi_atomic_attr,
    flags: u64,
) -> c_int {
    // SAFETY: per this function's contract.
    call!(dom => ops, query_atomic(dom, dt, op, attr, flags)
    )
}

/// `fi_mr_reg(domain, buf, len, access, 0, key, 0, &mr, NULL)`.
///
/// # Safety
/// `dom` live; `buf..buf+len` stays mapped while the registration lives.
pub unsafe fn mr_reg(
    dom: *mut fid_domain,
    buf: *const c_void,
    len: usize,
    access: u64,
    key: u64,
    out: *mut *mut fid_mr,
) -> c_int {
    // SAFETY: per this function's contract.
    let fid = unsafe { &mut (*dom).fid as *mut fid };
    // SAFETY: per this function's contract.
    call!(dom => mr, reg(fid, buf, len, access, 0, key, 0, out, std::ptr::null_mut())
    )
}

/// `fi_ep_bind(ep, bfid, flags)` and `fi_mr_bind(mr, bfid, flags)`: bind
/// `what` to the object `to`.
///
/// # Safety
/// Live objects.
pub unsafe fn bind(to: *mut fid, what: *mut fid, flags: u64) -> c_int {
    // SAFETY: per this function's contract.
    call!(to => ops, bind(to, what, flags))
}

/// `fi_enable(ep)` and `fi_mr_enable(mr)`: `control(FI_ENABLE)`.
///
/// # Safety
/// A live object.
pub unsafe fn enable(f: *mut fid) -> c_int {
    // SAFETY: per this function's contract.
    call!(f => ops, control(f, FI_ENABLE as c_int, std::ptr::null_mut())
    )
}

/// `fi_setname(&ep->fid, addr, len)`.
///
/// # Safety
/// `ep` live and not yet enabled; `addr` readable for `len` bytes.
pub unsafe fn setname(ep: *mut fid_ep, addr: *mut c_void, len: usize) -> c_int {
    // SAFETY: per this function's contract.
    let fid = unsafe { &mut (*ep).fid as *mut fid };
    // SAFETY: per this function's contract.
    call!(ep => cm, setname(fid, addr, len))
}

/// `fi_getname(&ep->fid, addr, &len)`.
///
/// # Safety
/// `ep` live; `addr` writable for `*len` bytes.
pub unsafe fn getname(ep: *mut fid_ep, addr: *mut c_void, len: *mut usize) -> c_int {
    // SAFETY: per this function's contract.
    let fid = unsafe { &mut (*ep).fid as *mut fid };
    // SAFETY: per this function's contract.
    call!(ep => cm, getname(fid, addr, len))
}

/// `fi_av_insert(av, addrs, count, fi_addrs, 0, NULL)`: the number inserted.
///
/// # Safety
/// `av` live; `addrs` holds `count` provider addresses; `out` has room
/// for `count`.
pub unsafe fn av_insert(
    av: *mut fid_av,
    addrs: *const c_void,
    count: usize,
    out: *mut fi_addr_t,
) -> c_int {
    // SAFETY: per this function's contract.
    call!(av => ops, insert(av, addrs, count, out, 0, std::ptr::null_mut())
    )
}

/// `fi_write(ep, buf, len, NULL, dest, addr, key, ctx)`.
///
/// # Safety
/// `ep` live; `buf..buf+len` readable until the write completes.
#[allow(clippy::too_many_arguments)]
pub unsafe fn write(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    ctx: *mut c_void,
) -> isize {
    // SAFETY: per this function's contract.
    call!(ep => rma, write(ep, buf, len, std::ptr::null_mut(), dest, addr, key, ctx)
    )
}

/// `fi_read(ep, buf, len, NULL, src, addr, key, ctx)`.
///
/// # Safety
/// `ep` live; `buf..buf+len` writable, and not otherwise accessed, until
/// the read completes.
pub unsafe fn read(
    ep: *mut fid_ep,
    buf: *mut c_void,
    len: usize,
    src: fi_addr_t,
    addr: u64,
    key: u64,
    ctx: *mut c_void,
) -> isize {
    // SAFETY: per this function's contract.
    call!(ep => rma, read(ep, buf, len, std::ptr::null_mut(), src, addr, key, ctx)
    )
}

/// `fi_send(ep, buf, len, NULL, dest, ctx)`.
///
/// # Safety
/// `ep` live; `buf..buf+len` readable until the send completes.
pub unsafe fn send(
    ep: *mut fid_ep,
    buf: *const c_void,
    len: usize,
    dest: fi_addr_t,
    ctx: *mut c_void,
) -> isize {
    // SAFETY: per this function's contract.
    call!(ep => msg, send(ep, buf, len, std::ptr::null_mut(), dest, ctx)
    )
}

/// `fi_recv(ep, buf, len, NULL, FI_ADDR_UNSPEC, ctx)`.
///
/// # Safety
/// `ep` live; `buf..buf+len` writable, and not otherwise accessed, until
/// the receive completes or the endpoint is closed.
pub unsafe fn recv(ep: *mut fid_ep, buf: *mut c_void, len: usize, ctx: *mut c_void) -> isize {
    // SAFETY: per this function's contract.
    call!(ep => msg, recv(ep, buf, len, std::ptr::null_mut(), ADDR_UNSPEC, ctx)
    )
}

/// `fi_atomic(ep, buf, 1, NULL, dest, addr, key, dt, op, ctx)`.
///
/// # Safety
/// `ep` live; `buf` readable (one element) until completion.
#[allow(clippy::too_many_arguments)]
pub unsafe fn atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    ctx: *mut c_void,
) -> isize {
    let n = std::ptr::null_mut();
    // SAFETY: per this function's contract.
    call!(ep => atomic, write(ep, buf, 1, n, dest, addr, key, dt, op, ctx)
    )
}

/// `fi_fetch_atomic(ep, buf, 1, NULL, result, NULL, dest, addr, key, dt, op, ctx)`.
///
/// # Safety
/// `ep` live; `buf` readable and `result` writable (one element) until
/// completion.
#[allow(clippy::too_many_arguments)]
pub unsafe fn fetch_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    result: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    ctx: *mut c_void,
) -> isize {
    let n = std::ptr::null_mut();
    // SAFETY: per this function's contract.
    call!(ep => atomic, readwrite(ep, buf, 1, n, result, n, dest, addr, key, dt, op, ctx)
    )
}

/// `fi_compare_atomic(ep, buf, 1, NULL, compare, NULL, result, NULL, dest,
/// addr, key, dt, op, ctx)`.
///
/// # Safety
/// `ep` live; `buf` and `compare` readable and `result` writable (one
/// element) until completion.
#[allow(clippy::too_many_arguments)]
pub unsafe fn compare_atomic(
    ep: *mut fid_ep,
    buf: *const c_void,
    compare: *const c_void,
    result: *mut c_void,
    dest: fi_addr_t,
    addr: u64,
    key: u64,
    dt: fi_datatype,
    op: fi_op,
    ctx: *mut c_void,
) -> isize {
    let n = std::ptr::null_mut();
    // SAFETY: per this function's contract.
    call!(ep => atomic, compwrite(
            ep, buf, 1, n, compare, n, result, n, dest, addr, key, dt, op, ctx
        )
    )
}

/// `fi_cq_read(cq, buf, count)` for `FI_CQ_FORMAT_MSG` entries.
///
/// # Safety
/// `cq` live; `buf` has room for `count` entries.
pub unsafe fn cq_read(cq: *mut fid_cq, buf: *mut fi_cq_msg_entry, count: usize) -> isize {
    // SAFETY: per this function's contract.
    call!(cq => ops, read(cq, buf as *mut c_void, count))
}

/// `fi_cq_readerr(cq, buf, 0)`.
///
/// # Safety
/// `cq` live; `buf` writable.
pub unsafe fn cq_readerr(cq: *mut fid_cq, buf: *mut fi_cq_err_entry) -> isize {
    // SAFETY: per this function's contract.
    call!(cq => ops, readerr(cq, buf, 0))
}

/// `fi_cq_strerror(cq, prov_errno, err_data, NULL, 0)`: the provider's
/// text for an error entry, if it has one.
///
/// # Safety
/// `cq` live; `err_data` as the error entry gave it.
pub unsafe fn cq_strerror(
    cq: *mut fid_cq,
    prov_errno: c_int,
    err_data: *const c_void,
) -> Option<String> {
    // SAFETY: per this function's contract.
    let f = unsafe { (*cq).ops.as_ref() }.and_then(|t| t.strerror)?;
    // SAFETY: the provider's cq strerror, with a NULL buffer (returns a
    // pointer to its own text).
    let p = unsafe { f(cq, prov_errno, err_data, std::ptr::null_mut(), 0) };
    // SAFETY: a non-NULL result is a NUL-terminated string.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// `fi_cntr_read(cntr)`.
///
/// # Safety
/// `cntr` live.
pub unsafe fn cntr_read(cntr: *mut fid_cntr) -> u64 {
    // SAFETY: per this function's contract.
    match unsafe { (*cntr).ops.as_ref() }.and_then(|t| t.read) {
        // SAFETY: the provider's counter read.
        Some(f) => unsafe { f(cntr) },
        None => 0,
    }
}

/// `fi_cntr_readerr(cntr)`.
///
/// # Safety
/// `cntr` live.
pub unsafe fn cntr_readerr(cntr: *mut fid_cntr) -> u64 {
    // SAFETY: per this function's contract.
    match unsafe { (*cntr).ops.as_ref() }.and_then(|t| t.readerr) {
        // SAFETY: the provider's counter error read.
        Some(f) => unsafe { f(cntr) },
        None => 0,
    }
}
