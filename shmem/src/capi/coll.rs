//! Teams, contexts and collectives: the team-based routines of 1.5, the
//! deprecated active-set routines (`PE_start`, `logPE_stride`, `PE_size`,
//! `pSync`, `pWrk`), reductions for every type and operator, and the 1.6
//! scans.
//!
//! Collectives run the engine of [`crate::coll`] on segment offsets. An
//! active set gets a team state of its own the first time it is used, in
//! one of the runtime's active-set slots (see [`crate::runtime`]); the
//! members agree on the slot through PE 0's directory, so no collective
//! over the world is needed and only the members take part. The user's
//! `pSync` and `pWrk` are accepted and not used.

use super::{
    CTX_DEFAULT, CtxH, CtxObj, TEAM_SHARED, TEAM_WORLD, TeamH, TeamObj, fail, for_rma_types,
    invalid, ok, rt, team_state,
};
use crate::coll::ops::{
    And, Complex32, Complex64, Max, Min, Or, Prod, ReduceOp, Reducible, Sum, Xor,
};
use crate::coll::{Args, Coll};
use crate::ctx::CtxOptions;
use crate::error::{Result, ShmemError};
use crate::runtime::{Runtime, layout};
use crate::team::{Team, TeamConfig, TeamState};
use conduits::{AmoOp, AmoWidth, Conduit};
use std::ffi::{c_int, c_long, c_void};
use std::sync::{Arc, Mutex};

// ----------------------------------------------------------------------
// Teams

/// `shmem_team_config_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CTeamConfig {
    num_contexts: c_int,
}

/// `SHMEM_TEAM_NUM_CONTEXTS`.
const TEAM_NUM_CONTEXTS: c_long = 1;

fn config_of(config: *const CTeamConfig, mask: c_long) -> TeamConfig {
    if config.is_null() || mask & TEAM_NUM_CONTEXTS == 0 {
        return TeamConfig::default();
    }
    // SAFETY: the C contract: a readable config when the mask names a field.
    let n = unsafe { (*config).num_contexts };
    TeamConfig {
        num_contexts: n.max(0) as usize,
    }
}

/// A `Team` handle value over the state of `h` (world and shared are
/// never destroyed, so these handles never destroy anything).
fn team_ref(rt: &'static Runtime, h: TeamH) -> Option<Team<'static>> {
    match h as usize {
        0 => None,
        TEAM_WORLD | TEAM_SHARED => Some(Team {
            rt,
            st: team_state(rt, h)?.clone(),
        }),
        _ => None,
    }
}

/// Runs `f` on the `Team` of handle `h`.
fn with_team<R>(rt: &'static Runtime, h: TeamH, f: impl FnOnce(&Team<'static>) -> R) -> Option<R> {
    if let Some(t) = team_ref(rt, h) {
        return Some(f(&t));
    }
    if h.is_null() {
        return None;
    }
    // SAFETY: a non-predefined handle is a live team from a split.
    Some(f(unsafe { &(*h).team }))
}

fn boxed(t: Team<'static>) -> TeamH {
    Box::into_raw(Box::new(TeamObj { team: t }))
}

/// `shmem_team_my_pe`: -1 for `SHMEM_TEAM_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_my_pe(team: TeamH) -> c_int {
    let rt = rt("shmem_team_my_pe");
    team_state(rt, team).map_or(-1, |t| t.me as c_int)
}

/// `shmem_team_n_pes`: -1 for `SHMEM_TEAM_INVALID`.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_n_pes(team: TeamH) -> c_int {
    let rt = rt("shmem_team_n_pes");
    team_state(rt, team).map_or(-1, |t| t.size() as c_int)
}

/// `shmem_team_get_config`.
///
/// # Safety
/// `config` must be writable when not null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_get_config(
    team: TeamH,
    mask: c_long,
    config: *mut CTeamConfig,
) -> c_int {
    let rt = rt("shmem_team_get_config");
    let Some(t) = team_state(rt, team) else {
        return -1;
    };
    if !config.is_null() && mask & TEAM_NUM_CONTEXTS != 0 {
        // SAFETY: the C contract: a writable config.
        unsafe { (*config).num_contexts = t.config.num_contexts as c_int };
    }
    0
}

/// `shmem_team_translate_pe`: -1 when not a member (or a team is invalid).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_translate_pe(src: TeamH, pe: c_int, dest: TeamH) -> c_int {
    let rt = rt("shmem_team_translate_pe");
    let (Some(s), Some(d)) = (team_state(rt, src), team_state(rt, dest)) else {
        return -1;
    };
    usize::try_from(pe)
        .ok()
        .and_then(|p| s.members.get(p))
        .and_then(|&w| d.rank_of(w))
        .map_or(-1, |r| r as c_int)
}

/// `shmem_team_split_strided`: 0 on success (with `SHMEM_TEAM_INVALID` on
/// parent PEs outside the new team), -1 on an invalid split or when no
/// team slot is free.
///
/// # Safety
/// `new_team` must be writable; `config` readable when `mask` names a field.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: TeamH,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const CTeamConfig,
    mask: c_long,
    new_team: *mut TeamH,
) -> c_int {
    let rt = rt("shmem_team_split_strided");
    let cfg = config_of(config, mask);
    let r = with_team(rt, parent, |p| {
        if start < 0 || size <= 0 {
            return Err(());
        }
        // A negative stride counts down from `start`; team PE 0 is `start`.
        let ranks: Vec<i64> = (0..size as i64)
            .map(|i| start as i64 + i * stride as i64)
            .collect();
        let n = p.n_pes() as i64;
        let distinct = stride != 0 || size == 1;
        if !distinct || ranks.iter().any(|&r| r < 0 || r >= n) {
            report(
                rt,
                invalid(
                    rt,
                    "shmem_team_split_strided",
                    format!(
                        "start {start}, stride {stride}, size {size} does not fit the parent team of {n} PEs"
                    ),
                ),
            );
            return Err(());
        }
        let ranks: Vec<usize> = ranks.into_iter().map(|r| r as usize).collect();
        p.split_ranks("shmem_team_split_strided", &ranks, &cfg)
            .map_err(|e| report(rt, e))
    });
    let out = match r {
        Some(Ok(t)) => {
            let h = t.map_or(std::ptr::null_mut(), boxed);
            (h, 0)
        }
        _ => (std::ptr::null_mut(), -1),
    };
    if !new_team.is_null() {
        // SAFETY: the C contract: a writable handle.
        unsafe { new_team.write(out.0) };
    }
    out.1
}

/// Prints a team-creation error with `SHMEM_DEBUG` (creation reports
/// failure through its return value).
fn report(rt: &Runtime, e: ShmemError) {
    if rt.config().debug {
        conduits::report!("{e}");
    }
}

/// `shmem_team_split_2d`.
///
/// # Safety
/// `xteam` and `yteam` must be writable; configs readable when their masks
/// name a field.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shmem_team_split_2d(
    parent: TeamH,
    xrange: c_int,
    xconfig: *const CTeamConfig,
    xmask: c_long,
    xteam: *mut TeamH,
    yconfig: *const CTeamConfig,
    ymask: c_long,
    yteam: *mut TeamH,
) -> c_int {
    let rt = rt("shmem_team_split_2d");
    let (xc, yc) = (config_of(xconfig, xmask), config_of(yconfig, ymask));
    let r = with_team(rt, parent, |p| {
        if xrange <= 0 {
            return Err(());
        }
        p.split_2d(xrange as usize, &xc, &yc)
            .map_err(|e| report(rt, e))
    });
    let (x, y, code) = match r {
        Some(Ok((x, y))) => (boxed(x), boxed(y), 0),
        _ => (std::ptr::null_mut(), std::ptr::null_mut(), -1),
    };
    // SAFETY: the C contract: writable handles.
    unsafe {
        if !xteam.is_null() {
            xteam.write(x);
        }
        if !yteam.is_null() {
            yteam.write(y);
        }
    }
    code
}

/// `shmem_team_destroy`: collective over the team; the predefined teams
/// and `SHMEM_TEAM_INVALID` are left alone.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_destroy(team: TeamH) {
    if matches!(team as usize, 0 | TEAM_WORLD | TEAM_SHARED) {
        return;
    }
    // SAFETY: a split team's handle came from `Box::into_raw` in `boxed`;
    // destroying it twice is the program's error.
    let b = unsafe { Box::from_raw(team) };
    ok(b.team.destroy());
}

/// `shmem_team_sync`: every PE of the team has arrived. 0, or -1 for an
/// invalid team.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_sync(team: TeamH) -> c_int {
    const CALL: &str = "shmem_team_sync";
    let rt = rt(CALL);
    let Some(t) = team_state(rt, team) else {
        return -1;
    };
    ok(Coll::new(rt, t, CALL).and_then(|mut c| c.sync()));
    0
}

/// `shmem_team_ptr` (1.6): `shmem_ptr` with a team PE number.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_team_ptr(team: TeamH, dest: *const c_void, pe: c_int) -> *mut c_void {
    const CALL: &str = "shmem_team_ptr";
    let rt = rt(CALL);
    let w = team_state(rt, team).and_then(|t| {
        usize::try_from(pe)
            .ok()
            .and_then(|p| t.members.get(p).copied())
    });
    match w {
        Some(w) => super::setup::ptr_on(rt, CALL, dest, w),
        None => std::ptr::null_mut(),
    }
}

// ----------------------------------------------------------------------
// Contexts

fn new_ctx(team: Arc<TeamState>, team_handle: TeamH, options: c_long) -> Option<CtxH> {
    let options = CtxOptions::from_bits(u32::try_from(options).ok()?)?;
    Some(Box::into_raw(Box::new(CtxObj {
        team,
        team_handle,
        options,
    })))
}

/// `shmem_ctx_create`: a context on the world team; 0, or -1 for unknown
/// options.
///
/// # Safety
/// `ctx` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_create(options: c_long, ctx: *mut CtxH) -> c_int {
    let rt = rt("shmem_ctx_create");
    let c = new_ctx(rt.pool.world.clone(), TEAM_WORLD as TeamH, options);
    // SAFETY: the C contract: a writable handle.
    unsafe { ctx.write(c.unwrap_or(std::ptr::null_mut())) };
    if c.is_some() { 0 } else { -1 }
}

/// `shmem_team_create_ctx`: 0, or -1 for an invalid team or options.
///
/// # Safety
/// `ctx` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_team_create_ctx(
    team: TeamH,
    options: c_long,
    ctx: *mut CtxH,
) -> c_int {
    let rt = rt("shmem_team_create_ctx");
    let c = team_state(rt, team).and_then(|t| new_ctx(t.clone(), team, options));
    // SAFETY: the C contract: a writable handle.
    unsafe { ctx.write(c.unwrap_or(std::ptr::null_mut())) };
    if c.is_some() { 0 } else { -1 }
}

/// `shmem_ctx_destroy`: quiet, then the context is gone.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_destroy(ctx: CtxH) {
    const CALL: &str = "shmem_ctx_destroy";
    if ctx.is_null() || ctx as usize == CTX_DEFAULT {
        return;
    }
    ok(rt(CALL).quiet(CALL));
    // SAFETY: the handle came from `Box::into_raw` in `new_ctx`.
    drop(unsafe { Box::from_raw(ctx) });
}

/// `shmem_ctx_get_team`: 0, or -1 for `SHMEM_CTX_INVALID`.
///
/// # Safety
/// `team` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmem_ctx_get_team(ctx: CtxH, team: *mut TeamH) -> c_int {
    let h = match ctx as usize {
        0 => std::ptr::null_mut(),
        CTX_DEFAULT => TEAM_WORLD as TeamH,
        // SAFETY: a live context from `new_ctx`.
        _ => unsafe { (*ctx).team_handle },
    };
    if !team.is_null() {
        // SAFETY: the C contract: a writable handle.
        unsafe { team.write(h) };
    }
    if h.is_null() { -1 } else { 0 }
}

macro_rules! ctx_order {
    ($($name:ident $call:literal $m:ident;)*) => {$(
        /// Completion or ordering of a context's operations (the whole PE's:
        /// the conduits know no contexts).
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(ctx: CtxH) {
            if ctx.is_null() {
                return;
            }
            ok(rt($call).$m($call));
        }
    )*};
}
ctx_order!(
    shmem_ctx_quiet "shmem_ctx_quiet" quiet;
    shmem_ctx_fence "shmem_ctx_fence" fence;
);

/// `shmem_ctx_pe_quiet` (1.6).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_ctx_pe_quiet(ctx: CtxH, _pes: *const c_int, _npes: usize) {
    shmem_ctx_quiet(ctx)
}

// ----------------------------------------------------------------------
// Active sets

/// Active sets in use on this PE: key -> state.
static ACTIVE: Mutex<Vec<(u64, Arc<TeamState>)>> = Mutex::new(Vec::new());

/// The team of active set (`start`, `2^log_stride`, `size`): the world
/// team when it is the whole job, else the set's own state in an
/// active-set slot (claimed in PE 0's directory on first use).
fn active_set(
    rt: &'static Runtime,
    call: &'static str,
    start: c_int,
    log_stride: c_int,
    size: c_int,
) -> Result<Arc<TeamState>> {
    let n = rt.n_pes();
    let bad = || {
        invalid(
            rt,
            call,
            format!(
                "active set PE_start {start}, logPE_stride {log_stride}, PE_size {size} does not fit the job of {n} PEs"
            ),
        )
    };
    if start < 0 || size <= 0 || !(0..31).contains(&log_stride) {
        return Err(bad());
    }
    let (start, stride, size) = (start as usize, 1usize << log_stride, size as usize);
    if start + (size - 1) * stride >= n {
        return Err(bad());
    }
    if start == 0 && (stride == 1 || size == 1) && size == n {
        return Ok(rt.pool.world.clone());
    }
    let members: Vec<usize> = (0..size).map(|i| start + i * stride).collect();
    let Some(me) = members.iter().position(|&p| p == rt.my_pe()) else {
        return Err(invalid(
            rt,
            call,
            format!("PE {} is not in the active set {members:?}", rt.my_pe()),
        ));
    };
    let key = ((start as u64) << 40 | (log_stride as u64) << 32 | size as u64) + 1;
    let mut cache = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, st)) = cache.iter().find(|(k, _)| *k == key) {
        return Ok(st.clone());
    }
    let (first, count) = rt.active_sets;
    let mut slot = None;
    for i in 0..count {
        let off = layout::ACTIVE_SET_DIR + 8 * i;
        let old = rt
            .conduit
            .atomic(0, off, AmoOp::CompareSwap, AmoWidth::W64, key, 0)
            .map_err(|e| rt.err(call, e))?;
        if old == 0 || old == key {
            slot = Some(first + i);
            break;
        }
    }
    let Some(slot) = slot else {
        return Err(invalid(
            rt,
            call,
            format!("more than {count} distinct active sets are in use"),
        ));
    };
    let st = Arc::new(TeamState::new(
        slot,
        members,
        me,
        TeamConfig::default(),
        true,
    ));
    cache.push((key, st.clone()));
    Ok(st)
}

// ----------------------------------------------------------------------
// Collective helpers on offsets

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

/// Broadcast of `nelems` elements of `es` bytes from team PE `root`.
#[allow(clippy::too_many_arguments)]
fn broadcast(
    rt: &Runtime,
    call: &'static str,
    t: &TeamState,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    es: usize,
    root: c_int,
    keep_root_dest: bool,
) -> Result<()> {
    let len = bytes(rt, call, nelems, es)?;
    let root = usize::try_from(root)
        .ok()
        .filter(|&r| r < t.size())
        .ok_or_else(|| {
            invalid(
                rt,
                call,
                format!("root {root} is not in the team of {} PEs", t.size()),
            )
        })?;
    let d = sym(rt, call, dest, len)?;
    let s = sym(rt, call, src, len)?;
    // The active-set broadcast leaves the root's destination unchanged.
    let saved = (keep_root_dest && t.me == root && len > 0 && d != s).then(|| {
        // SAFETY: `d..d+len` is symmetric memory of this PE (translated).
        unsafe { std::slice::from_raw_parts(rt.local_addr(d), len) }.to_vec()
    });
    Coll::new_data(rt, t, call, Args::broadcast(root, nelems, es))?.broadcast(d, s, len, root)?;
    if let Some(v) = saved {
        // SAFETY: as above; the broadcast has completed its sends from it.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), rt.local_addr(d), len) };
    }
    Ok(())
}

fn fcollect(
    rt: &Runtime,
    call: &'static str,
    t: &TeamState,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    es: usize,
) -> Result<()> {
    let len = bytes(rt, call, nelems, es)?;
    let total = bytes(rt, call, len, t.size())?;
    let d = sym(rt, call, dest, total)?;
    let s = sym(rt, call, src, len)?;
    Coll::new_data(rt, t, call, Args::fcollect(nelems, es))?.fcollect(d, s, len)
}

fn collect(
    rt: &Runtime,
    call: &'static str,
    t: &TeamState,
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
    Coll::new_data(rt, t, call, Args::collect(es))?
        .collect(d, cap, s, len)
        .map(drop)
}

fn alltoall(
    rt: &Runtime,
    call: &'static str,
    t: &TeamState,
    dest: *mut c_void,
    src: *const c_void,
    nelems: usize,
    es: usize,
) -> Result<()> {
    let len = bytes(rt, call, nelems, es)?;
    let total = bytes(rt, call, len, t.size())?;
    let d = sym(rt, call, dest, total)?;
    let s = sym(rt, call, src, total)?;
    Coll::new_data(rt, t, call, Args::alltoall(nelems, es))?.alltoall(d, s, len)
}

#[allow(clippy::too_many_arguments)]
fn alltoalls(
    rt: &Runtime,
    call: &'static str,
    t: &TeamState,
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
        let k = bytes(rt, call, nelems, t.size())?;
        bytes(rt, call, (k - 1) * stride + 1, es)
    };
    let d = sym(rt, call, dest, span(dst as usize)?)?;
    let s = sym(rt, call, src, span(sst as usize)?)?;
    let args = Args::alltoalls(nelems, es, dst as usize, sst as usize);
    Coll::new_data(rt, t, call, args)?.alltoalls(d, s, dst as usize, sst as usize, es, nelems)
}

fn reduce<O: ReduceOp, T: Reducible<O>>(
    rt: &Runtime,
    call: &'static str,
    t: &TeamState,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
) -> Result<()> {
    let len = bytes(rt, call, nreduce, size_of::<T>())?;
    let d = sym(rt, call, dest, len)?;
    let s = sym(rt, call, src, len)?;
    // Also with nothing to reduce: the entry sync checks that every PE
    // asked for nothing.
    Coll::new_data(rt, t, call, Args::reduce::<T>(O::NAME, nreduce))?.reduce::<O, T>(d, s, nreduce)
}

fn scan<O: ReduceOp, T: Reducible<O>>(
    rt: &Runtime,
    call: &'static str,
    t: &TeamState,
    dest: *mut c_void,
    src: *const c_void,
    nreduce: usize,
    exclusive: bool,
) -> Result<()> {
    let len = bytes(rt, call, nreduce, size_of::<T>())?;
    let d = sym(rt, call, dest, len)?;
    let s = sym(rt, call, src, len)?;
    let args = Args::scan::<T>(O::NAME, nreduce, exclusive);
    Coll::new_data(rt, t, call, args)?.scan::<O, T>(d, s, nreduce, exclusive)
}

/// Runs a team collective: 0, -1 for `SHMEM_TEAM_INVALID`; other errors
/// end the job.
fn team_call(
    call: &'static str,
    team: TeamH,
    f: impl FnOnce(&'static Runtime, &TeamState) -> Result<()>,
) -> c_int {
    let rt = rt(call);
    let Some(t) = team_state(rt, team) else {
        return -1;
    };
    let r = f(rt, t);
    check(rt, call, t, r);
    0
}

/// Runs an active-set collective.
fn active_call(
    call: &'static str,
    start: c_int,
    log: c_int,
    size: c_int,
    f: impl FnOnce(&'static Runtime, &TeamState) -> Result<()>,
) {
    let rt = rt(call);
    match active_set(rt, call, start, log, size) {
        Ok(t) => {
            let r = f(rt, &t);
            check(rt, call, &t, r)
        }
        Err(e) => fail(e),
    }
}

/// Ends the job on a collective's error. When the PEs' arguments
/// disagree, every PE of the team found it: each prints its line, then
/// the team syncs once more, so that no PE ends the job (and so stops the
/// others) before every PE has reported.
fn check(rt: &Runtime, call: &'static str, t: &TeamState, r: Result<()>) {
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
// Barriers and syncs

/// `shmem_barrier` (deprecated): quiet, then sync over the active set.
#[unsafe(no_mangle)]
pub extern "C" fn shmem_barrier(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    const CALL: &str = "shmem_barrier";
    active_call(CALL, start, log, size, |rt, t| {
        rt.quiet(CALL)?;
        Coll::new(rt, t, CALL)?.sync()
    })
}

/// `shmem_sync` (deprecated active-set form; `shmem_sync(team)` is
/// `shmem_team_sync` through the C11 generic).
#[unsafe(no_mangle)]
pub extern "C" fn shmem_sync(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    const CALL: &str = "shmem_sync";
    active_call(CALL, start, log, size, |rt, t| {
        Coll::new(rt, t, CALL)?.sync()
    })
}

// ----------------------------------------------------------------------
// Typed team collectives

macro_rules! coll_typed {
    ($(($m:ident $n:literal $t:ty))*) => {$(
        pub mod $m {
            use super::*;
            const ES: usize = size_of::<$t>();
            #[unsafe(export_name = concat!("shmem_", $n, "_broadcast"))]
            pub extern "C" fn broadcast_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize, root: c_int) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_broadcast");
                team_call(CALL, team, |rt, t| broadcast(rt, CALL, t, dest.cast(), src.cast(), nelems, ES, root, false))
            }
            #[unsafe(export_name = concat!("shmem_", $n, "_collect"))]
            pub extern "C" fn collect_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_collect");
                team_call(CALL, team, |rt, t| collect(rt, CALL, t, dest.cast(), src.cast(), nelems, ES))
            }
            #[unsafe(export_name = concat!("shmem_", $n, "_fcollect"))]
            pub extern "C" fn fcollect_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_fcollect");
                team_call(CALL, team, |rt, t| fcollect(rt, CALL, t, dest.cast(), src.cast(), nelems, ES))
            }
            #[unsafe(export_name = concat!("shmem_", $n, "_alltoall"))]
            pub extern "C" fn alltoall_(team: TeamH, dest: *mut $t, src: *const $t, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_alltoall");
                team_call(CALL, team, |rt, t| alltoall(rt, CALL, t, dest.cast(), src.cast(), nelems, ES))
            }
            #[unsafe(export_name = concat!("shmem_", $n, "_alltoalls"))]
            pub extern "C" fn alltoalls_(team: TeamH, dest: *mut $t, src: *const $t, dst: isize, sst: isize, nelems: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_alltoalls");
                team_call(CALL, team, |rt, t| alltoalls(rt, CALL, t, dest.cast(), src.cast(), dst, sst, nelems, ES))
            }
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
        #[unsafe(no_mangle)]
        pub extern "C" fn $name($($a: $t),*) -> c_int {
            $target($($a),*)
        }
    )*};
}
coll_mem_alias!(
    shmem_broadcastmem => typed::t_mem::broadcast_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize, root: c_int);
    shmem_collectmem => typed::t_mem::collect_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize);
    shmem_fcollectmem => typed::t_mem::fcollect_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize);
    shmem_alltoallmem => typed::t_mem::alltoall_: (team: TeamH, dest: *mut u8, src: *const u8, nelems: usize);
    shmem_alltoallsmem => typed::t_mem::alltoalls_: (team: TeamH, dest: *mut u8, src: *const u8, dst: isize, sst: isize, nelems: usize);
);

// ----------------------------------------------------------------------
// Active-set collectives (deprecated)

macro_rules! coll_active {
    ($($bits:literal $es:literal)*) => {$(
        #[unsafe(export_name = concat!("shmem_broadcast", $bits))]
        #[allow(clippy::too_many_arguments)]
        extern "C" fn broadcast_active(dest: *mut c_void, src: *const c_void, nelems: usize, root: c_int, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_broadcast", $bits);
            active_call(CALL, start, log, size, |rt, t| broadcast(rt, CALL, t, dest, src, nelems, $es, root, true))
        }
        #[unsafe(export_name = concat!("shmem_collect", $bits))]
        extern "C" fn collect_active(dest: *mut c_void, src: *const c_void, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_collect", $bits);
            active_call(CALL, start, log, size, |rt, t| collect(rt, CALL, t, dest, src, nelems, $es))
        }
        #[unsafe(export_name = concat!("shmem_fcollect", $bits))]
        extern "C" fn fcollect_active(dest: *mut c_void, src: *const c_void, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_fcollect", $bits);
            active_call(CALL, start, log, size, |rt, t| fcollect(rt, CALL, t, dest, src, nelems, $es))
        }
        #[unsafe(export_name = concat!("shmem_alltoall", $bits))]
        extern "C" fn alltoall_active(dest: *mut c_void, src: *const c_void, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_alltoall", $bits);
            active_call(CALL, start, log, size, |rt, t| alltoall(rt, CALL, t, dest, src, nelems, $es))
        }
        #[unsafe(export_name = concat!("shmem_alltoalls", $bits))]
        #[allow(clippy::too_many_arguments)]
        extern "C" fn alltoalls_active(dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_alltoalls", $bits);
            active_call(CALL, start, log, size, |rt, t| alltoalls(rt, CALL, t, dest, src, dst, sst, nelems, $es))
        }
    )*};
}

mod active32 {
    use super::*;
    coll_active!("32" 4);
}
mod active64 {
    use super::*;
    coll_active!("64" 8);
}

// ----------------------------------------------------------------------
// Reductions

/// `shmem_<type>_<op>_reduce` (team) and `shmem_<type>_<op>_to_all`
/// (active set) for one operator over a type list.
macro_rules! reduce_op {
    ($op:ident $opn:literal; $(($m:ident $n:literal $t:ty))*) => {$(
        mod $m {
            use super::*;
            #[unsafe(export_name = concat!("shmem_", $n, "_", $opn, "_reduce"))]
            pub extern "C" fn reduce_(team: TeamH, dest: *mut $t, src: *const $t, nreduce: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_reduce");
                team_call(CALL, team, |rt, t| reduce::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce))
            }
            #[unsafe(export_name = concat!("shmem_", $n, "_", $opn, "_to_all"))]
            #[allow(clippy::too_many_arguments)]
            pub extern "C" fn to_all(dest: *mut $t, src: *const $t, nreduce: c_int, start: c_int, log: c_int, size: c_int, _pwrk: *mut $t, _psync: *mut c_long) {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_to_all");
                active_call(CALL, start, log, size, |rt, t| reduce::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce.max(0) as usize))
            }
        }
    )*};
}

/// `shmem_<type>_<op>_inscan` / `_exscan` (1.6) for sum and prod... the
/// standard has sum scans; the other operators come cheap.
macro_rules! scan_op {
    ($op:ident $opn:literal; $(($m:ident $n:literal $t:ty))*) => {$(
        mod $m {
            use super::*;
            #[unsafe(export_name = concat!("shmem_", $n, "_", $opn, "_inscan"))]
            pub extern "C" fn inscan(team: TeamH, dest: *mut $t, src: *const $t, nreduce: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_inscan");
                team_call(CALL, team, |rt, t| scan::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce, false))
            }
            #[unsafe(export_name = concat!("shmem_", $n, "_", $opn, "_exscan"))]
            pub extern "C" fn exscan(team: TeamH, dest: *mut $t, src: *const $t, nreduce: usize) -> c_int {
                const CALL: &str = concat!("shmem_", $n, "_", $opn, "_exscan");
                team_call(CALL, team, |rt, t| scan::<$op, $t>(rt, CALL, t, dest.cast(), src.cast(), nreduce, true))
            }
        }
    )*};
}

/// The integer types of the bitwise reductions.
macro_rules! bitwise_types {
    ($m:ident $op:ident $opn:literal) => {
        $m! { $op $opn;
            (t_uchar "uchar" u8) (t_ushort "ushort" u16) (t_uint "uint" u32)
            (t_ulong "ulong" u64) (t_ulonglong "ulonglong" u64)
            (t_int8 "int8" i8) (t_int16 "int16" i16) (t_int32 "int32" i32) (t_int64 "int64" i64)
            (t_uint8 "uint8" u8) (t_uint16 "uint16" u16) (t_uint32 "uint32" u32) (t_uint64 "uint64" u64)
            (t_size "size" usize)
            (t_short "short" i16) (t_int "int" i32) (t_long "long" i64) (t_longlong "longlong" i64)
        }
    };
}

/// The integer and floating types of max, min, sum and prod.
macro_rules! arith_types {
    ($m:ident $op:ident $opn:literal $(, $($extra:tt)*)?) => {
        $m! { $op $opn;
            (t_char "char" std::ffi::c_char) (t_schar "schar" i8) (t_short "short" i16)
            (t_int "int" i32) (t_long "long" i64) (t_longlong "longlong" i64)
            (t_ptrdiff "ptrdiff" isize)
            (t_uchar "uchar" u8) (t_ushort "ushort" u16) (t_uint "uint" u32)
            (t_ulong "ulong" u64) (t_ulonglong "ulonglong" u64)
            (t_int8 "int8" i8) (t_int16 "int16" i16) (t_int32 "int32" i32) (t_int64 "int64" i64)
            (t_uint8 "uint8" u8) (t_uint16 "uint16" u16) (t_uint32 "uint32" u32) (t_uint64 "uint64" u64)
            (t_size "size" usize)
            (t_float "float" f32) (t_double "double" f64)
            (t_longdouble "longdouble" crate::coll::ops::LongDouble)
            $($($extra)*)?
        }
    };
}

mod red_and {
    use super::*;
    bitwise_types!(reduce_op And "and");
}
mod red_or {
    use super::*;
    bitwise_types!(reduce_op Or "or");
}
mod red_xor {
    use super::*;
    bitwise_types!(reduce_op Xor "xor");
}
mod red_max {
    use super::*;
    arith_types!(reduce_op Max "max");
}
mod red_min {
    use super::*;
    arith_types!(reduce_op Min "min");
}
mod red_sum {
    use super::*;
    arith_types!(reduce_op Sum "sum", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
mod red_prod {
    use super::*;
    arith_types!(reduce_op Prod "prod", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
mod scan_sum {
    use super::*;
    arith_types!(scan_op Sum "sum", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
mod scan_prod {
    use super::*;
    arith_types!(scan_op Prod "prod", (t_complexf "complexf" Complex32) (t_complexd "complexd" Complex64));
}
