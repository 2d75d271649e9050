//! Team collectives in C: broadcast, collect, fcollect, alltoall(s) for
//! every RMA type and the `mem` forms, on team handles. Each routine
//! translates its addresses into segment offsets, checks them, and runs
//! the engine of [`crate::coll`], whose entry sync also checks that every
//! PE of the team passed the same arguments (the active-set forms check
//! theirs with an announcement, `collective::active`). The reductions and
//! scans are in [`super::reduce`], the deprecated active-set forms in
//! [`super::active`].

use super::{TeamH, fail, for_rma_types, invalid, rt, team_state};
use crate::coll::ops::{ReduceOp, Reducible};
use crate::coll::{Args, Coll};
use crate::collective::ActiveSet;
use crate::error::{Result, ShmemError};
use crate::runtime::Runtime;
use crate::team::TeamState;
use std::ffi::{c_int, c_void};

/// The segment offset of `len` symmetric bytes at `p` (any offset when
/// `len` is 0).
fn sym(rt: &Runtime, call: &'static str, p: *const c_void, len: usize) -> Result<usize> {
    if len == 0 {
        Ok(0)
    } else {
        rt.sym_offset(call, p as usize, len)
    }
}

fn bytes(rt: &Runtime, call: &'static str, n: usize, es: usize) -> Result<usize> {
    super::nbytes(rt, call, n, es)
}

/// The PEs of a C collective: a team, or the active set of a deprecated
/// routine (then `t` is the set's team state).
#[derive(Clone, Copy)]
pub(super) struct Group<'a> {
    pub(super) t: &'a TeamState,
    pub(super) set: Option<ActiveSet>,
}

impl<'a> Group<'a> {
    /// The PEs of team `t`.
    pub(super) fn team(t: &'a TeamState) -> Group<'a> {
        Group { t, set: None }
    }

    /// Starts a data collective: the team's entry sync, or the active
    /// set's announcement, checks that every PE passed `args`.
    fn start(&self, rt: &'a Runtime, call: &'static str, args: Args) -> Result<Coll<'a>> {
        match self.set {
            None => Coll::new_data(rt, self.t, call, args),
            Some(set) => {
                let c = Coll::new(rt, self.t, call)?;
                crate::collective::announce(rt, call, set, args)?;
                Ok(c)
            }
        }
    }
}

/// Broadcast of `nelems` elements of `es` bytes from team PE `root`.
#[allow(clippy::too_many_arguments)]
pub(super) fn broadcast(
    rt: &Runtime,
    call: &'static str,
    g: Group<'_>,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    es: usize,
    root: c_int,
    keep_root_dest: bool,
) -> Result<()> {
    let t = g.t;
    let len = bytes(rt, call, nelems, es)?;
    let d = sym(rt, call, dest, len)?;
    let s = sym(rt, call, src, len)?;
    // The root enters the argument check as given: one PE's root out of
    // range is a disagreement every PE reports; a root out of range on
    // every PE is each PE's own error, found after the check.
    let mut c = g.start(rt, call, Args::broadcast(root.into(), nelems, es))?;
    let Some(root) = usize::try_from(root).ok().filter(|&r| r < t.size()) else {
        // Every PE passed this root: each says so, and the team syncs once
        // more so that no PE ends the job before all have.
        let e = invalid(
            rt,
            call,
            format!("root {root} is not in the team of {} PEs", t.size()),
        );
        conduits::report!("{e}");
        let _ = c.sync();
        super::exit_job(1)
    };
    // The active-set broadcast leaves the root's destination unchanged.
    let saved = (keep_root_dest && t.me == root && len > 0 && d != s).then(|| {
        let mut v = vec![0u8; len];
        // SAFETY: `d..d+len` is symmetric memory of this PE (translated),
        // reached by raw pointer only and read with relaxed atomics into
        // the private `v` (`segmem`).
        unsafe { conduits::segmem::copy_out(rt.local_addr(d), v.as_mut_ptr(), len) };
        v
    });
    c.broadcast(d, s, len, root)?;
    if let Some(v) = saved {
        // SAFETY: as above, written back with relaxed atomics; the
        // broadcast has completed its sends from it.
        unsafe { conduits::segmem::copy_in(v.as_ptr(), rt.local_addr(d), len) };
    }
    Ok(())
}

pub(super) fn fcollect(
    rt: &Runtime,
    call: &'static str,
    g: Group<'_>,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    es: usize,
) -> Result<()> {
    let len = bytes(rt, call, nelems, es)?;
    let total = bytes(rt, call, len, g.t.size())?;
    let d = sym(rt, call, dest, total)?;
    let s = sym(rt, call, src, len)?;
    g.start(rt, call, Args::fcollect(nelems, es))?
        .fcollect(d, s, len)
}

pub(super) fn collect(
    rt: &Runtime,
    call: &'static str,
    g: Group<'_>,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    es: usize,
) -> Result<()> {
    let len = bytes(rt, call, nelems, es)?;
    let s = sym(rt, call, src, len)?;
    let (d, cap) = match rt.sym_offset(call, dest as usize, 1) {
        Ok(d) => (d, rt.sym_area_end(d) - d),
        // A null destination holds nothing (fine when nothing is collected).
        Err(_) if dest.is_null() => (0, 0),
        Err(e) => return Err(e),
    };
    g.start(rt, call, Args::collect(es))?
        .collect(d, cap, s, len)
        .map(drop)
}

pub(super) fn alltoall(
    rt: &Runtime,
    call: &'static str,
    g: Group<'_>,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    es: usize,
) -> Result<()> {
    let len = bytes(rt, call, nelems, es)?;
    let total = bytes(rt, call, len, g.t.size())?;
    let d = sym(rt, call, dest, total)?;
    let s = sym(rt, call, src, total)?;
    g.start(rt, call, Args::alltoall(nelems, es))?
        .alltoall(d, s, len)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn alltoalls(
    rt: &Runtime,
    call: &'static str,
    g: Group<'_>,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    es: usize,
) -> Result<()> {
    if dst < 1 || sst < 1 {
        return Err(invalid(
            rt,
            call,
            format!("strides must be at least 1 (dst {dst}, sst {sst})"),
        ));
    }
    let span = |stride: usize| -> Result<usize> {
        if nelems == 0 {
            return Ok(0);
        }
        let k = bytes(rt, call, nelems, g.t.size())?;
        bytes(rt, call, (k - 1) * stride + 1, es)
    };
    let d = sym(rt, call, dest, span(dst as usize)?)?;
    let s = sym(rt, call, src, span(sst as usize)?)?;
    let args = Args::alltoalls(nelems, es, dst as usize, sst as usize);
    g.start(rt, call, args)?
        .alltoalls(d, s, dst as usize, sst as usize, es, nelems)
}

pub(super) fn reduce<O: ReduceOp, T: Reducible<O>>(
    rt: &Runtime,
    call: &'static str,
    g: Group<'_>,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
) -> Result<()> {
    let len = bytes(rt, call, nreduce, size_of::<T>())?;
    let d = sym(rt, call, dest, len)?;
    let s = sym(rt, call, src, len)?;
    // Also with nothing to reduce: the entry sync checks that every PE
    // asked for nothing.
    g.start(rt, call, Args::reduce::<T>(O::NAME, nreduce))?
        .reduce::<O, T>(d, s, nreduce)
}

pub(super) fn scan<O: ReduceOp, T: Reducible<O>>(
    rt: &Runtime,
    call: &'static str,
    g: Group<'_>,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    exclusive: bool,
) -> Result<()> {
    let len = bytes(rt, call, nreduce, size_of::<T>())?;
    let d = sym(rt, call, dest, len)?;
    let s = sym(rt, call, src, len)?;
    let args = Args::scan::<T>(O::NAME, nreduce, exclusive);
    g.start(rt, call, args)?
        .scan::<O, T>(d, s, nreduce, exclusive)
}

/// Runs a team collective: 0, -1 for `SHMEM_TEAM_INVALID`; other errors
/// end the job.
pub(super) fn team_call(
    call: &'static str,
    team: TeamH,
    f: impl FnOnce(&'static Runtime, Group<'_>) -> Result<()>,
) -> c_int {
    let rt = rt(call);
    let Some(t) = team_state(rt, team) else {
        return -1;
    };
    let r = f(rt, Group::team(t));
    check(rt, call, t, r);
    0
}

/// Ends the job on a collective's error. When the PEs' arguments
/// disagree, every PE of the team found it: each prints its line, then
/// the team syncs once more, so that no PE ends the job (and so stops the
/// others) before every PE has reported.
pub(super) fn check(rt: &Runtime, call: &'static str, t: &TeamState, r: Result<()>) {
    match r {
        Ok(()) => {}
        Err(e @ ShmemError::CollectiveMismatch { .. }) => {
            conduits::report!("{e}");
            let _ = Coll::new(rt, t, call).and_then(|mut c| c.sync());
            super::exit_job(1)
        }
        Err(e) => fail(e),
    }
}

// ----------------------------------------------------------------------
macro_rules! coll_typed {
    ($(($m:ident $n:literal $t:ty))*) => {$(
        pub mod $m {
            use super::*;
            const ES: usize = size_of::<$t>();
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_broadcast")))]
            pub extern "C" fn broadcast_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize, root: c_int) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_broadcast");
                team_call(CALL, team, |rt, t| broadcast(rt, CALL, t, dest.cast(), src.cast(), nelems, ES, root, false))
            }
            weak_alias!(concat!("shmem_", $n, "_broadcast"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_collect")))]
            pub extern "C" fn collect_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_collect");
                team_call(CALL, team, |rt, t| collect(rt, CALL, t, dest.cast(), src.cast(), nelems, ES))
            }
            weak_alias!(concat!("shmem_", $n, "_collect"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_fcollect")))]
            pub extern "C" fn fcollect_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_fcollect");
                team_call(CALL, team, |rt, t| fcollect(rt, CALL, t, dest.cast(), src.cast(), nelems, ES))
            }
            weak_alias!(concat!("shmem_", $n, "_fcollect"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_alltoall")))]
            pub extern "C" fn alltoall_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_alltoall");
                team_call(CALL, team, |rt, t| alltoall(rt, CALL, t, dest.cast(), src.cast(), nelems, ES))
            }
            weak_alias!(concat!("shmem_", $n, "_alltoall"));
            #[unsafe(export_name = concat!("p", concat!("shmem_", $n, "_alltoalls")))]
            pub extern "C" fn alltoalls_(team: TeamH, dest: *mut $t, src: *const $t, dst: isize, sst: isize, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_alltoalls");
                team_call(CALL, team, |rt, t| alltoalls(rt, CALL, t, dest.cast(), src.cast(), dst, sst, nelems, ES))
            }
            weak_alias!(concat!("shmem_", $n, "_alltoalls"));
        }
    )*};
}

pub(crate) mod typed {
    use super::*;
    for_rma_types!(coll_typed);
    coll_typed!((t_mem "mem" u8));
}

/// The `mem` names are `shmem_<op>mem`; export them as such.
macro_rules! coll_mem_alias {
    ($($name:ident => $target:path: ($($a:ident: $t:ty),*);)*) => {$(
        /// The byte-oriented (`mem`) form of a team collective.
        #[unsafe(export_name = concat!("p", stringify!($name)))]
        pub extern "C" fn $name($($a: $t),*) -> c_int {
            $target($($a),*)
        }
        weak_alias!(stringify!($name));
    )*};
}
coll_mem_alias!(
    shmem_broadcastmem => typed::t_mem::broadcast_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize, root: c_int);
    shmem_collectmem => typed::t_mem::collect_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize);
    shmem_fcollectmem => typed::t_mem::fcollect_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize);
    shmem_alltoallmem => typed::t_mem::alltoall_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize);
    shmem_alltoallsmem => typed::t_mem::alltoalls_: (team: TeamH, dest: *mut u8, src: *const u8, dst: isize, sst: isize, nelems: usize);
);
