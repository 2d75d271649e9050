//! Contexts: creation on the world team or a split team, destruction,
//! the context's team, and ordering and completion per context.

use super::{CTX_DEFAULT, CtxH, CtxObj, TEAM_WORLD, TeamH, ctx_op, ok, rt, team_state};
use crate::ctx::CtxOptions;
use crate::op::CtxState;
use crate::runtime::Runtime;
use crate::team::TeamState;
use std::ffi::{c_int, c_long};
use std::sync::Arc;

fn new_ctx(
    rt: &'static Runtime,
    call: &'static str,
    team: Arc<TeamState>,
    team_handle: TeamH,
    options: c_long,
) -> Option<CtxH> {
    let options = CtxOptions::from_bits(u32::try_from(options).ok()?)?;
    let state = match CtxState::new(rt, call, team, options, None) {
        Ok(st) => st,
        Err(e) => {
            if rt.config().debug {
                conduits::report!("{e}");
            }
            return None;
        }
    };
    Some(Box::into_raw(Box::new(CtxObj { state, team_handle })))
}

/// `shmem_ctx_create`: a context on the world team; 0, or -1 for unknown
/// options.
///
/// # Safety
/// `ctx` must be writable.
#[unsafe(export_name = "pshmem_ctx_create")]
pub unsafe extern "C" fn shmem_ctx_create(options: c_long, ctx: *mut CtxH) -> c_int {
    const CALL: &str = "shmem_ctx_create";
    let rt = rt(CALL);
    let c = new_ctx(
        rt,
        CALL,
        rt.pool.world.clone(),
        TEAM_WORLD as TeamH,
        options,
    );
    // SAFETY: the C contract: a writable handle.
    unsafe { ctx.write(c.unwrap_or(std::ptr::null_mut())) };
    if c.is_some() { 0 } else { -1 }
}
weak_alias!("shmem_ctx_create");

/// `shmem_team_create_ctx`: 0, or -1 for an invalid team or options.
///
/// # Safety
/// `ctx` must be writable.
#[unsafe(export_name = "pshmem_team_create_ctx")]
pub unsafe extern "C" fn shmem_team_create_ctx(
    team: TeamH,
    options: c_long,
    ctx: *mut CtxH,
) -> c_int {
    const CALL: &str = "shmem_team_create_ctx";
    let rt = rt(CALL);
    let c = team_state(rt, team).and_then(|t| new_ctx(rt, CALL, t.clone(), team, options));
    // SAFETY: the C contract: a writable handle.
    unsafe { ctx.write(c.unwrap_or(std::ptr::null_mut())) };
    if c.is_some() { 0 } else { -1 }
}
weak_alias!("shmem_team_create_ctx");

/// `shmem_ctx_destroy`: quiet, then the context is gone.
#[unsafe(export_name = "pshmem_ctx_destroy")]
pub extern "C" fn shmem_ctx_destroy(ctx: CtxH) {
    const CALL: &str = "shmem_ctx_destroy";
    if ctx.is_null() || ctx as usize == CTX_DEFAULT {
        return;
    }
    // SAFETY: the handle came from `Box::into_raw` in `new_ctx`, and the C
    // contract makes this its last use.
    let mut c = unsafe { Box::from_raw(ctx) };
    ok(c.state.finish(rt(CALL), CALL));
}
weak_alias!("shmem_ctx_destroy");

/// `shmem_ctx_get_team`: 0, or -1 for `SHMEM_CTX_INVALID`.
///
/// # Safety
/// `team` must be writable.
#[unsafe(export_name = "pshmem_ctx_get_team")]
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
weak_alias!("shmem_ctx_get_team");

macro_rules! ctx_order {
    ($($name:ident $call:literal $m:ident;)*) => {$(
        /// Completion or ordering of the context's own operations.
        #[unsafe(export_name = concat!("p", stringify!($name)))]
        pub extern "C" fn $name(ctx: CtxH) {
            if ctx.is_null() {
                return;
            }
            let rt = rt($call);
            ok(ctx_op(rt, $call, ctx).and_then(|op| op.$m($call)));
        }
        weak_alias!(stringify!($name));
    )*};
}
ctx_order!(
    shmem_ctx_quiet "shmem_ctx_quiet" quiet;
    shmem_ctx_fence "shmem_ctx_fence" fence;
);

/// `shmem_ctx_session_config_t` (1.6).
#[repr(C)]
pub struct CSessionConfig {
    total_ops: usize,
}

/// `shmem_ctx_session_start` (1.6): a hint that the context will issue a
/// batch of operations. fshmem's conduits already complete small puts and
/// atomics without buffering, so a session changes nothing; it is
/// accepted on any context (and ignored on `SHMEM_CTX_INVALID`, as the
/// standard says).
#[unsafe(export_name = "pshmem_ctx_session_start")]
pub extern "C" fn shmem_ctx_session_start(
    ctx: CtxH,
    _options: c_long,
    _config: *const CSessionConfig,
    _config_mask: c_long,
) {
    if !ctx.is_null() {
        rt("shmem_ctx_session_start");
    }
}
weak_alias!("shmem_ctx_session_start");

/// `shmem_ctx_session_stop` (1.6): ends the session `shmem_ctx_session_start`
/// began (nothing to undo).
#[unsafe(export_name = "pshmem_ctx_session_stop")]
pub extern "C" fn shmem_ctx_session_stop(ctx: CtxH) {
    if !ctx.is_null() {
        rt("shmem_ctx_session_stop");
    }
}
weak_alias!("shmem_ctx_session_stop");

/// `shmem_ctx_pe_quiet` (1.6).
#[unsafe(export_name = "pshmem_ctx_pe_quiet")]
pub extern "C" fn shmem_ctx_pe_quiet(ctx: CtxH, _pes: *const c_int, _npes: usize) {
    shmem_ctx_quiet(ctx)
}
weak_alias!("shmem_ctx_pe_quiet");
