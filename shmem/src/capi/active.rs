//! The deprecated active-set routines (`PE_start`, `logPE_stride`,
//! `PE_size`, `pSync`): barriers, syncs and the sized collectives
//! (`shmem_broadcast32`...). An active set gets a team state of its own the
//! first time it is used, in one of the runtime's active-set slots (see
//! [`crate::runtime`]); the members agree on the slot through PE 0's
//! directory, so no collective over the world is needed and only the
//! members take part. The user's `pSync` and `pWrk` are accepted and not
//! used. The active-set reductions (`shmem_<type>_<op>_to_all`) are in
//! [`super::reduce`].
//!
//! Every call starts with an announcement among the set's PEs
//! (`collective::active`): PEs that passed different sets, or different
//! arguments, are found and reported on every PE before data moves; for
//! the barriers, the announcement is the barrier.

use super::coll::{Group, alltoall, alltoalls, broadcast, check, collect, fcollect};
use super::{fail, invalid, rt};
use crate::coll::Coll;
use crate::collective::{ActiveSet, Args, announce};
use crate::error::Result;
use crate::runtime::{Runtime, layout};
use crate::team::{TeamConfig, TeamState};
use conduits::prelude::*;
use conduits::{AmoOp, AmoWidth};
use std::ffi::{c_int, c_long, c_void};
use std::sync::{Arc, Mutex};

/// Active sets in use on this PE: key -> state.
static ACTIVE: Mutex<Vec<(u64, Arc<TeamState>)>> = Mutex::new(Vec::new());

/// Forgets every active set (the library is being finalized; a later
/// initialization starts with a fresh directory).
pub(super) fn forget() {
    ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

/// The team of active set (`start`, `2^log_stride`, `size`): the world
/// team when it is the whole job, else the set's own state in an
/// active-set slot (claimed in PE 0's directory on first use).
fn active_set(
    rt: &'static Runtime,
    call: &'static str,
    start: c_int,
    log_stride: c_int,
    size: c_int,
) -> Result<(Arc<TeamState>, ActiveSet)> {
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
    let set = ActiveSet::new(start, log_stride as u32, size);
    if start == 0 && (stride == 1 || size == 1) && size == n {
        return Ok((rt.pool.world.clone(), set));
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
        return Ok((st.clone(), set));
    }
    let (first, count) = rt.active_sets;
    let mut slot = None;
    for i in 0..count {
        let off = layout::ACTIVE_SET_DIR + 8 * i;
        let old = rt
            .conduit
            .atomic(
                CtxId::DEFAULT,
                0,
                off,
                AmoOp::CompareSwap,
                AmoWidth::W64,
                key,
                0,
            )
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
    Ok((st, set))
}

/// Runs an active-set collective.
pub(super) fn active_call(
    call: &'static str,
    start: c_int,
    log: c_int,
    size: c_int,
    f: impl FnOnce(&'static Runtime, Group<'_>) -> Result<()>,
) {
    let rt = rt(call);
    match active_set(rt, call, start, log, size) {
        Ok((t, set)) => {
            let r = f(
                rt,
                Group {
                    t: &t,
                    set: Some(set),
                },
            );
            check(rt, call, &t, r)
        }
        Err(e) => fail(e),
    }
}

/// An active-set barrier: the announcement (every PE of the set has
/// arrived, with the same set), on the set's team.
fn active_barrier(rt: &Runtime, call: &'static str, g: Group<'_>) -> Result<()> {
    let _c = Coll::new(rt, g.t, call)?;
    match g.set {
        Some(set) => announce(rt, call, set, Args::barrier()),
        None => Ok(()),
    }
}

// ----------------------------------------------------------------------
/// `shmem_barrier` (deprecated): quiet, then sync over the active set.
#[unsafe(export_name = "pshmem_barrier")]
pub extern "C" fn shmem_barrier(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    const CALL: &str = "shmem_barrier";
    active_call(CALL, start, log, size, |rt, g| {
        rt.quiet(CALL)?;
        active_barrier(rt, CALL, g)
    })
}
weak_alias!("shmem_barrier");

/// `shmem_sync` (deprecated active-set form; `shmem_sync(team)` is
/// `shmem_team_sync` through the C11 generic).
#[unsafe(export_name = "pshmem_sync")]
pub extern "C" fn shmem_sync(start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
    const CALL: &str = "shmem_sync";
    active_call(CALL, start, log, size, |rt, g| active_barrier(rt, CALL, g))
}
weak_alias!("shmem_sync");

// ----------------------------------------------------------------------
macro_rules! coll_active {
    ($($bits:literal $es:literal)*) => {$(
        #[unsafe(export_name = concat!("p", concat!("shmem_broadcast", $bits)))]
        #[allow(clippy::too_many_arguments)]
        extern "C" fn broadcast_active(dest: *mut c_void, src: *const c_void, nelems: usize, root: c_int, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_broadcast", $bits);
            active_call(CALL, start, log, size, |rt, t| broadcast(rt, CALL, t, dest, src, nelems, $es, root, true))
        }
        weak_alias!(concat!("shmem_broadcast", $bits));
        #[unsafe(export_name = concat!("p", concat!("shmem_collect", $bits)))]
        extern "C" fn collect_active(dest: *mut c_void, src: *const c_void, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_collect", $bits);
            active_call(CALL, start, log, size, |rt, t| collect(rt, CALL, t, dest, src, nelems, $es))
        }
        weak_alias!(concat!("shmem_collect", $bits));
        #[unsafe(export_name = concat!("p", concat!("shmem_fcollect", $bits)))]
        extern "C" fn fcollect_active(dest: *mut c_void, src: *const c_void, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_fcollect", $bits);
            active_call(CALL, start, log, size, |rt, t| fcollect(rt, CALL, t, dest, src, nelems, $es))
        }
        weak_alias!(concat!("shmem_fcollect", $bits));
        #[unsafe(export_name = concat!("p", concat!("shmem_alltoall", $bits)))]
        extern "C" fn alltoall_active(dest: *mut c_void, src: *const c_void, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_alltoall", $bits);
            active_call(CALL, start, log, size, |rt, t| alltoall(rt, CALL, t, dest, src, nelems, $es))
        }
        weak_alias!(concat!("shmem_alltoall", $bits));
        #[unsafe(export_name = concat!("p", concat!("shmem_alltoalls", $bits)))]
        #[allow(clippy::too_many_arguments)]
        extern "C" fn alltoalls_active(dest: *mut c_void, src: *const c_void, dst: isize, sst: isize, nelems: usize, start: c_int, log: c_int, size: c_int, _psync: *mut c_long) {
            const CALL: &str = concat!("shmem_alltoalls", $bits);
            active_call(CALL, start, log, size, |rt, t| alltoalls(rt, CALL, t, dest, src, dst, sst, nelems, $es))
        }
        weak_alias!(concat!("shmem_alltoalls", $bits));
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
