//! Teams (OpenSHMEM 1.5): the predefined teams, splits, queries,
//! translation, `shmem_team_sync`, `shmem_team_ptr` and destruction. A
//! team handle is a pointer to a boxed [`TeamObj`] (see the module notes
//! of [`crate::capi`]); the collective engine runs on the team's slot.

use super::{TEAM_SHARED, TEAM_WORLD, TeamH, TeamObj, invalid, ok, rt, team_state};
use crate::coll::Coll;
use crate::error::ShmemError;
use crate::runtime::Runtime;
use crate::team::{Team, TeamConfig};
use std::ffi::{c_int, c_long, c_void};

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
#[unsafe(export_name = "pshmem_team_my_pe")]
pub extern "C" fn shmem_team_my_pe(team: TeamH) -> c_int {
    let rt = rt("shmem_team_my_pe");
    team_state(rt, team).map_or(-1, |t| t.me as c_int)
}
weak_alias!("shmem_team_my_pe");

/// `shmem_team_n_pes`: -1 for `SHMEM_TEAM_INVALID`.
#[unsafe(export_name = "pshmem_team_n_pes")]
pub extern "C" fn shmem_team_n_pes(team: TeamH) -> c_int {
    let rt = rt("shmem_team_n_pes");
    team_state(rt, team).map_or(-1, |t| t.size() as c_int)
}
weak_alias!("shmem_team_n_pes");

/// `shmem_team_get_config`.
///
/// # Safety
/// `config` must be writable when not null.
#[unsafe(export_name = "pshmem_team_get_config")]
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
weak_alias!("shmem_team_get_config");

/// `shmem_team_translate_pe`: -1 when not a member (or a team is invalid).
#[unsafe(export_name = "pshmem_team_translate_pe")]
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
weak_alias!("shmem_team_translate_pe");

/// `shmem_team_split_strided`: 0 on success (with `SHMEM_TEAM_INVALID` on
/// parent PEs outside the new team), -1 on an invalid split or when no
/// team slot is free.
///
/// # Safety
/// `new_team` must be writable; `config` readable when `mask` names a field.
#[unsafe(export_name = "pshmem_team_split_strided")]
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
weak_alias!("shmem_team_split_strided");

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
#[unsafe(export_name = "pshmem_team_split_2d")]
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
weak_alias!("shmem_team_split_2d");

/// `shmem_team_destroy`: collective over the team; the predefined teams
/// and `SHMEM_TEAM_INVALID` are left alone.
#[unsafe(export_name = "pshmem_team_destroy")]
pub extern "C" fn shmem_team_destroy(team: TeamH) {
    if matches!(team as usize, 0 | TEAM_WORLD | TEAM_SHARED) {
        return;
    }
    // SAFETY: a split team's handle came from `Box::into_raw` in `boxed`;
    // destroying it twice is the program's error.
    let b = unsafe { Box::from_raw(team) };
    ok(b.team.destroy());
}
weak_alias!("shmem_team_destroy");

/// `shmem_team_sync`: every PE of the team has arrived. 0, or -1 for an
/// invalid team.
#[unsafe(export_name = "pshmem_team_sync")]
pub extern "C" fn shmem_team_sync(team: TeamH) -> c_int {
    const CALL: &str = "shmem_team_sync";
    let rt = rt(CALL);
    let Some(t) = team_state(rt, team) else {
        return -1;
    };
    ok(Coll::new(rt, t, CALL).and_then(|mut c| c.sync()));
    0
}
weak_alias!("shmem_team_sync");

/// `shmem_team_ptr` (1.6): `shmem_ptr` with a team PE number.
#[unsafe(export_name = "pshmem_team_ptr")]
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
weak_alias!("shmem_team_ptr");
