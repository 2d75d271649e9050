//! A PMIx client: the bootstrap of PEs started by a launcher that runs a
//! PMIx server — Open MPI's `mpirun` (Debian's Open MPI 4.1 runs one) and
//! Slurm's `srun --mpi=pmix`.
//!
//! libpmix is a system library, so it is loaded at run time
//! (`dlopen("libpmix.so.2")`, Debian's `libpmix2`) and the default build
//! needs neither its headers nor the library; a PE that a PMIx launcher
//! started on a host without it fails with an error naming the library.
//!
//! Only the stable core of the PMIx client API is used, through C
//! declarations written here from the PMIx standard (v3 and v4 libraries
//! export them alike):
//!
//! | call | use |
//! |---|---|
//! | `PMIx_Init` | this process's namespace and rank |
//! | `PMIx_Get(nspace, WILDCARD, "pmix.job.size")` | the job size |
//! | `PMIx_Put(GLOBAL, key, byte object)` + `PMIx_Commit` | an all-gather contribution |
//! | `PMIx_Fence(all, "pmix.collect"=true)` | the exchange, and the barrier (without collection) |
//! | `PMIx_Get(nspace, r, key)` | PE `r`'s contribution |
//! | `PMIx_Finalize`, `PMIx_Error_string` | leaving; error text |
//!
//! Values the library returns are checked (type, size) before they are
//! read: a value of another type is an error naming the key and the PE.

use super::{Bootstrap, check_blob};
use crate::error::{ConduitError, Result};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

/// The shared object loaded unless `FSHMEM_PMIX_LIBRARY` names another
/// (the SONAME of PMIx v2 to v5 libraries).
pub const LIBRARY: &str = "libpmix.so.2";

const MAX_NSLEN: usize = 255;
const MAX_KEYLEN: usize = 511;
const RANK_WILDCARD: u32 = u32::MAX - 1;
const SUCCESS: c_int = 0;
const TYPE_BOOL: u16 = 1;
const TYPE_UINT32: u16 = 14;
const TYPE_BYTE_OBJECT: u16 = 27;
const SCOPE_GLOBAL: u8 = 3;

/// `pmix_proc_t`: a namespace and a rank.
#[repr(C)]
#[derive(Clone, Copy)]
struct Proc {
    nspace: [c_char; MAX_NSLEN + 1],
    rank: u32,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ByteObject {
    bytes: *mut c_char,
    size: usize,
}

/// The part of `pmix_value_t`'s union this client reads or writes; the
/// padding makes it as large as the C union (24 bytes, its largest member
/// `pmix_envar_t`), so arrays of values and infos have the C stride.
#[repr(C)]
#[derive(Clone, Copy)]
union Data {
    flag: bool,
    uint32: u32,
    bo: ByteObject,
    pad: [u64; 3],
}

/// `pmix_value_t`: a type tag and the union.
#[repr(C)]
#[derive(Clone, Copy)]
struct Value {
    kind: u16,
    data: Data,
}

/// `pmix_info_t`: a key, directive flags and a value.
#[repr(C)]
struct Info {
    key: [c_char; MAX_KEYLEN + 1],
    flags: u32,
    value: Value,
}

// The sizes of the C structures (PMIx 4.2, x86-64 and aarch64).
const _: () = assert!(std::mem::size_of::<Proc>() == 260);
const _: () = assert!(std::mem::size_of::<Value>() == 32);
const _: () = assert!(std::mem::size_of::<Info>() == 552);

type InitFn = unsafe extern "C" fn(*mut Proc, *const Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *const Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> c_int;
type GetFn =
    unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// The entry points of the loaded library.
struct Lib {
    init: InitFn,
    finalize: FinalizeFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    error_string: ErrorStringFn,
    // Keeps the object mapped for as long as the process runs.
    _lib: libloading::Library,
}

fn load(path: &str) -> std::result::Result<Lib, String> {
    // SAFETY: loading libpmix runs its ELF constructors, which only set up
    // the library's own state; no Rust invariant depends on them.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
    macro_rules! sym {
        ($name:literal, $ty:ty) => {{
            // SAFETY: the symbol is the PMIx client function of that name,
            // whose C prototype (pmix.h) `$ty` transcribes.
            let s = unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{}: {e}", $name))?;
            *s
        }};
    }
    Ok(Lib {
        init: sym!("PMIx_Init", InitFn),
        finalize: sym!("PMIx_Finalize", FinalizeFn),
        put: sym!("PMIx_Put", PutFn),
        commit: sym!("PMIx_Commit", CommitFn),
        fence: sym!("PMIx_Fence", FenceFn),
        get: sym!("PMIx_Get", GetFn),
        error_string: sym!("PMIx_Error_string", ErrorStringFn),
        _lib: lib,
    })
}

/// The library at `path`, loaded once per process (a process has one
/// PMIx session).
fn lib(path: &str) -> Result<&'static Lib> {
    static LIB: OnceLock<std::result::Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(|| load(path)).as_ref().map_err(|e| {
        ConduitError::Bootstrap(format!(
            "PMIx: a PMIx launcher started this process (PMIX_NAMESPACE is set) but the PMIx \
             client library {path} cannot be loaded ({e}); install it (Debian: libpmix2) or \
             name it in FSHMEM_PMIX_LIBRARY"
        ))
    })
}

/// A PE's PMIx session.
pub struct Pmix {
    lib: &'static Lib,
    me: Proc,
    size: usize,
    round: u32,
    finalized: bool,
}

impl std::fmt::Debug for Pmix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pmix")
            .field("nspace", &self.nspace())
            .field("rank", &self.me.rank)
            .field("size", &self.size)
            .finish()
    }
}

impl Pmix {
    /// Loads the client library (`library`, by default [`LIBRARY`]),
    /// connects to the launcher's PMIx server (`PMIx_Init`) and reads the
    /// job size.
    pub fn init(library: Option<&str>) -> Result<Pmix> {
        let lib = lib(library.unwrap_or(LIBRARY))?;
        let mut me = Proc {
            nspace: [0; MAX_NSLEN + 1],
            rank: 0,
        };
        // SAFETY: `me` is a writable pmix_proc_t; no info array is passed.
        let rc = unsafe { (lib.init)(&mut me, std::ptr::null(), 0) };
        let mut p = Pmix {
            lib,
            me,
            size: 0,
            round: 0,
            // Until PMIx_Init succeeded there is nothing to finalize.
            finalized: rc != SUCCESS,
        };
        p.status("PMIx_Init", rc)?;
        let wildcard = Proc {
            rank: RANK_WILDCARD,
            ..me
        };
        let v = p.get_value(&wildcard, "pmix.job.size")?;
        let size = v.uint32("pmix.job.size")? as usize;
        if size == 0 || p.me.rank as usize >= size {
            return Err(ConduitError::Bootstrap(format!(
                "PMIx: rank {} of a job of {size} is not valid",
                p.me.rank
            )));
        }
        p.size = size;
        Ok(p)
    }

    fn nspace(&self) -> String {
        // SAFETY: PMIx_Init wrote a NUL-terminated string into the array,
        // and the last byte was zeroed before and is never written.
        unsafe { CStr::from_ptr(self.me.nspace.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    }

    fn status(&self, call: &str, rc: c_int) -> Result<()> {
        if rc == SUCCESS {
            return Ok(());
        }
        // SAFETY: PMIx_Error_string returns a pointer to a static string
        // (or NULL), for any status.
        let p = unsafe { (self.lib.error_string)(rc) };
        let text = if p.is_null() {
            "unknown status".to_string()
        } else {
            // SAFETY: non-NULL: a NUL-terminated static string.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        Err(ConduitError::Bootstrap(format!(
            "PMIx: PE {}: {call} failed: {text} (status {rc})",
            self.me.rank
        )))
    }

    /// `PMIx_Get` of `key` for `proc`; the value is copied out and the
    /// library's allocation released.
    fn get_value(&self, proc: &Proc, key: &str) -> Result<Owned> {
        let k = CString::new(key).expect("keys are literals without NUL");
        let mut v: *mut Value = std::ptr::null_mut();
        // SAFETY: `proc` and `k` are valid for the call; PMIx writes a
        // pointer to a value it allocated into `v`.
        let rc = unsafe { (self.lib.get)(proc, k.as_ptr(), std::ptr::null(), 0, &mut v) };
        self.status(&format!("PMIx_Get({key}) of rank {}", proc.rank), rc)?;
        if v.is_null() {
            return Err(ConduitError::Bootstrap(format!(
                "PMIx: PMIx_Get({key}) of rank {} returned no value",
                proc.rank
            )));
        }
        // SAFETY: `v` points to a pmix_value_t the library allocated with
        // malloc and handed to us; we read it, copy what it holds (a byte
        // object's bytes are `size` bytes the value owns), then free what
        // it owns and the value itself, as PMIX_VALUE_RELEASE does.
        unsafe {
            let val = *v;
            let owned = match val.kind {
                TYPE_UINT32 => Owned::U32(val.data.uint32),
                TYPE_BYTE_OBJECT => {
                    let bo = val.data.bo;
                    let bytes = if bo.bytes.is_null() || bo.size == 0 {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(bo.bytes as *const u8, bo.size).to_vec()
                    };
                    if !bo.bytes.is_null() {
                        libc::free(bo.bytes as *mut c_void);
                    }
                    Owned::Bytes(bytes)
                }
                other => Owned::Other(other),
            };
            libc::free(v as *mut c_void);
            Ok(owned)
        }
    }

    fn fence(&self, collect: bool) -> Result<()> {
        let mut info = Info {
            key: [0; MAX_KEYLEN + 1],
            flags: 0,
            value: Value {
                kind: TYPE_BOOL,
                data: Data { pad: [0; 3] },
            },
        };
        for (d, s) in info.key.iter_mut().zip(b"pmix.collect") {
            *d = *s as c_char;
        }
        info.value.data.flag = true;
        let (ptr, n) = if collect {
            (&info as *const Info, 1)
        } else {
            (std::ptr::null(), 0)
        };
        // SAFETY: no proc array means every process of our namespace; the
        // info array, when passed, is one valid pmix_info_t.
        let rc = unsafe { (self.lib.fence)(std::ptr::null(), 0, ptr, n) };
        self.status("PMIx_Fence", rc)
    }
}

/// A value copied out of the library.
enum Owned {
    U32(u32),
    Bytes(Vec<u8>),
    Other(u16),
}

impl Owned {
    fn uint32(self, key: &str) -> Result<u32> {
        match self {
            Owned::U32(v) => Ok(v),
            Owned::Bytes(_) => Err(ConduitError::Bootstrap(format!(
                "PMIx: {key} is a byte object, expected uint32"
            ))),
            Owned::Other(t) => Err(ConduitError::Bootstrap(format!(
                "PMIx: {key} has data type {t}, expected uint32"
            ))),
        }
    }
}

impl Bootstrap for Pmix {
    fn rank(&self) -> usize {
        self.me.rank as usize
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        check_blob(mine)?;
        let key = format!("fshmem.ag.{}", self.round);
        let k = CString::new(key.clone()).expect("no NUL in the key");
        let v = Value {
            kind: TYPE_BYTE_OBJECT,
            data: Data {
                bo: ByteObject {
                    bytes: mine.as_ptr() as *mut c_char,
                    size: mine.len(),
                },
            },
        };
        // SAFETY: PMIx_Put copies the value; `mine` outlives the call and
        // is only read.
        let rc = unsafe { (self.lib.put)(SCOPE_GLOBAL, k.as_ptr(), &v) };
        self.status("PMIx_Put", rc)?;
        // SAFETY: no arguments.
        let rc = unsafe { (self.lib.commit)() };
        self.status("PMIx_Commit", rc)?;
        self.fence(true)?;
        let mut all = Vec::with_capacity(self.size);
        for r in 0..self.size {
            let peer = Proc {
                rank: r as u32,
                ..self.me
            };
            match self.get_value(&peer, &key)? {
                Owned::Bytes(b) if b.len() <= super::MAX_BLOB => all.push(b),
                Owned::Bytes(b) => {
                    return Err(ConduitError::Bootstrap(format!(
                        "PMIx: PE {r}'s contribution {key} has {} bytes, over {}",
                        b.len(),
                        super::MAX_BLOB
                    )));
                }
                _ => {
                    return Err(ConduitError::Bootstrap(format!(
                        "PMIx: PE {r}'s contribution {key} is not a byte object"
                    )));
                }
            }
        }
        self.round = self.round.wrapping_add(1);
        Ok(all)
    }

    fn barrier(&mut self) -> Result<()> {
        self.fence(false)
    }

    fn finalize(&mut self) -> Result<()> {
        if !self.finalized {
            self.finalized = true;
            // SAFETY: no info array; PMIx_Init succeeded before.
            let rc = unsafe { (self.lib.finalize)(std::ptr::null(), 0) };
            self.status("PMIx_Finalize", rc)?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("PMIx ({})", self.nspace())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_layout_matches_c() {
        assert_eq!(std::mem::offset_of!(Info, flags), 512);
        assert_eq!(std::mem::offset_of!(Info, value), 520);
        assert_eq!(std::mem::offset_of!(Value, data), 8);
    }
}
