//! User active messages from C: `shmemx_am_*` (declared in `shmemx.h`),
//! over the same registration, request and reply paths as
//! [`crate::am`], with the same handler rules.

use super::{fail, ok, rt};
use crate::am::{self, AmHandler, Message, Token};
use crate::error::{Result, ShmemError};
use crate::runtime::Runtime;
use conduits::Category;
use std::ffi::{c_int, c_void};

/// A C handler: `(token, args, nargs, payload, nbytes, user)`.
type CHandler =
    unsafe extern "C" fn(*mut c_void, *const u32, usize, *const c_void, usize, *mut c_void);

/// What a C handler closes over: the function and its user pointer.
struct CFn {
    f: CHandler,
    user: usize,
}

/// The handler number `h` a C program names in a request or reply: one
/// `shmemx_am_register` can have returned (64..=223). The numbers above,
/// 224..=255, are never handed out: on the fpga conduit they are the
/// handlers of the boards' compute cores, which run on the board (a
/// request to them would never reach a host handler, and one the core
/// cannot parse would be dropped by the board), so they are refused here
/// on every conduit, at the caller, naming the call and the number.
fn handler(rt: &Runtime, call: &'static str, h: c_int) -> Result<AmHandler> {
    use conduits::ActiveMessages;
    use gasnet_core::handlers::{FIRST_COMPUTE, FIRST_USER};
    let reason = match u8::try_from(h) {
        Ok(i) if (FIRST_USER..FIRST_COMPUTE).contains(&i) => {
            return Ok(am::handler_from_index(i));
        }
        Ok(i) if i >= FIRST_COMPUTE && rt.conduit.compute_cores() => format!(
            "handler {h} is one of the board's compute handlers ({FIRST_COMPUTE}..=255, run \
             by the compute core of PE {}'s board, CAPS.COMPUTE), not a handler \
             shmemx_am_register returned ({FIRST_USER}..={}); the compute core is used \
             through shmem::compute (Rust; there is no C compute call)",
            rt.my_pe(),
            FIRST_COMPUTE - 1
        ),
        Ok(i) if i >= FIRST_COMPUTE => format!(
            "handler {h} was not returned by shmemx_am_register (it returns \
             {FIRST_USER}..={}; {FIRST_COMPUTE}..=255 are reserved for the compute cores \
             of fpga boards)",
            FIRST_COMPUTE - 1
        ),
        _ => format!("handler {h} was not returned by shmemx_am_register"),
    };
    Err(ShmemError::Invalid {
        pe: rt.my_pe(),
        call,
        reason,
    })
}

/// A private copy of the `nargs` arguments at `args` (empty when `nargs`
/// is 0). A copy, not a slice over them: the words may be symmetric
/// memory, which no Rust reference may cover (a peer may write it during
/// the call); they are read with raw pointers and relaxed atomics
/// ([`conduits::segmem`]).
///
/// # Safety
/// `args` is readable for `nargs` words when `nargs > 0`.
unsafe fn args_of(args: *const u32, nargs: usize) -> Vec<u32> {
    if nargs == 0 || args.is_null() {
        return Vec::new();
    }
    let mut v = vec![0u32; nargs];
    // SAFETY: the caller's contract for `args`; `v` is a fresh buffer of
    // `nargs` words.
    unsafe { conduits::segmem::copy_shared(args.cast(), v.as_mut_ptr().cast(), nargs * 4) };
    v
}

/// A private copy of the `nbytes` bytes at `p` (empty when `nbytes` is
/// 0), read as [`args_of`] reads.
///
/// # Safety
/// `p` is readable for `nbytes` bytes when `nbytes > 0`.
unsafe fn bytes_of(p: *const c_void, nbytes: usize) -> Vec<u8> {
    if nbytes == 0 || p.is_null() {
        return Vec::new();
    }
    let mut v = vec![0u8; nbytes];
    // SAFETY: the caller's contract for `p`; `v` is a fresh buffer.
    unsafe { conduits::segmem::copy_shared(p.cast(), v.as_mut_ptr(), nbytes) };
    v
}

/// Checks a message's shape (argument count, payload length) before its
/// arguments and payload are copied: the copies are then bounded.
fn shape(rt: &Runtime, call: &'static str, category: Category, nargs: usize, nbytes: usize) {
    if let Err(e) = gasnet_core::am::check_shape(category, nargs, nbytes) {
        fail(am::am_error(rt, call, e))
    }
}

/// `shmemx_am_register`: registers `fn` (called with `user`) as a handler;
/// collective, ends with a barrier; returns the handler's number.
#[unsafe(export_name = "pshmemx_am_register")]
pub extern "C" fn shmemx_am_register(f: Option<CHandler>, user: *mut c_void) -> c_int {
    const CALL: &str = "shmemx_am_register";
    let rt = rt(CALL);
    let Some(f) = f else {
        fail(ShmemError::Invalid {
            pe: rt.my_pe(),
            call: CALL,
            reason: "the handler is NULL".to_string(),
        })
    };
    let c = CFn {
        f,
        user: user as usize,
    };
    let h = ok(am::register(
        rt,
        CALL,
        move |t: &mut Token<'_, '_>, m: &Message<'_>| {
            let tok = (t as *mut Token<'_, '_>).cast::<c_void>();
            // SAFETY: the program registered `f` as a handler of this
            // signature; the token pointer is valid for the call (it points at
            // `t`), the arguments and payload are live for the call.
            unsafe {
                (c.f)(
                    tok,
                    m.args.as_ptr(),
                    m.args.len(),
                    m.payload.as_ptr().cast(),
                    m.payload.len(),
                    c.user as *mut c_void,
                )
            }
        },
    ));
    c_int::from(h.index())
}
weak_alias!("shmemx_am_register");

/// The token a C handler was given.
///
/// # Safety
/// `token` is the pointer passed to the running handler.
unsafe fn token<'a>(token: *mut c_void) -> &'a mut Token<'a, 'a> {
    // SAFETY: the caller's contract: `token` points at the live `Token` of
    // the handler running on this thread (`shmemx_am_register`'s wrapper),
    // used only during that handler.
    unsafe { &mut *token.cast::<Token<'a, 'a>>() }
}

/// `shmemx_am_src_pe`: the PE whose message the handler is serving.
///
/// # Safety
/// `tok` is the token of the running handler.
#[unsafe(export_name = "pshmemx_am_src_pe")]
pub unsafe extern "C" fn shmemx_am_src_pe(tok: *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { token(tok) }.src_pe() as c_int
}
weak_alias!("shmemx_am_src_pe");

/// `shmemx_am_request_short`.
///
/// # Safety
/// `args` holds `nargs` words.
#[unsafe(export_name = "pshmemx_am_request_short")]
pub unsafe extern "C" fn shmemx_am_request_short(
    pe: c_int,
    h: c_int,
    args: *const u32,
    nargs: usize,
) {
    const CALL: &str = "shmemx_am_request_short";
    let rt = rt(CALL);
    shape(rt, CALL, Category::Short, nargs, 0);
    // SAFETY: the caller's contract.
    let a = unsafe { args_of(args, nargs) };
    ok(handler(rt, CALL, h)
        .and_then(|h| am::request(rt, CALL, pe as usize, Category::Short, h, &a, &[], 0)));
}
weak_alias!("shmemx_am_request_short");

/// `shmemx_am_request_medium`.
///
/// # Safety
/// `args` holds `nargs` words, `payload` `nbytes` bytes.
#[unsafe(export_name = "pshmemx_am_request_medium")]
pub unsafe extern "C" fn shmemx_am_request_medium(
    pe: c_int,
    h: c_int,
    args: *const u32,
    nargs: usize,
    payload: *const c_void,
    nbytes: usize,
) {
    const CALL: &str = "shmemx_am_request_medium";
    let rt = rt(CALL);
    shape(rt, CALL, Category::Medium, nargs, nbytes);
    // SAFETY: the caller's contract.
    let (a, p) = unsafe { (args_of(args, nargs), bytes_of(payload, nbytes)) };
    ok(handler(rt, CALL, h)
        .and_then(|h| am::request(rt, CALL, pe as usize, Category::Medium, h, &a, &p, 0)));
}
weak_alias!("shmemx_am_request_medium");

/// `shmemx_am_request_long`: `payload` is written at symmetric `dest` on
/// PE `pe` before its handler runs.
///
/// # Safety
/// `args` holds `nargs` words, `payload` `nbytes` bytes.
#[unsafe(export_name = "pshmemx_am_request_long")]
pub unsafe extern "C" fn shmemx_am_request_long(
    pe: c_int,
    h: c_int,
    args: *const u32,
    nargs: usize,
    payload: *const c_void,
    nbytes: usize,
    dest: *mut c_void,
) {
    const CALL: &str = "shmemx_am_request_long";
    let rt = rt(CALL);
    shape(rt, CALL, Category::Long, nargs, nbytes);
    // SAFETY: the caller's contract.
    let (a, p) = unsafe { (args_of(args, nargs), bytes_of(payload, nbytes)) };
    ok(handler(rt, CALL, h).and_then(|h| {
        let off = rt.sym_offset(CALL, dest as usize, nbytes)?;
        am::request(rt, CALL, pe as usize, Category::Long, h, &a, &p, off)
    }));
}
weak_alias!("shmemx_am_request_long");

/// `shmemx_am_reply_short`: the handler's one reply.
///
/// # Safety
/// `tok` is the token of the running handler; `args` holds `nargs` words.
#[unsafe(export_name = "pshmemx_am_reply_short")]
pub unsafe extern "C" fn shmemx_am_reply_short(
    tok: *mut c_void,
    h: c_int,
    args: *const u32,
    nargs: usize,
) {
    const CALL: &str = "shmemx_am_reply_short";
    let rt = rt(CALL);
    shape(rt, CALL, Category::Short, nargs, 0);
    // SAFETY: the caller's contract.
    let (t, a) = unsafe { (token(tok), args_of(args, nargs)) };
    ok(handler(rt, CALL, h).and_then(|h| t.reply_short(h, &a)));
}
weak_alias!("shmemx_am_reply_short");

/// `shmemx_am_reply_medium`.
///
/// # Safety
/// `tok` is the token of the running handler; `args` holds `nargs` words,
/// `payload` `nbytes` bytes.
#[unsafe(export_name = "pshmemx_am_reply_medium")]
pub unsafe extern "C" fn shmemx_am_reply_medium(
    tok: *mut c_void,
    h: c_int,
    args: *const u32,
    nargs: usize,
    payload: *const c_void,
    nbytes: usize,
) {
    const CALL: &str = "shmemx_am_reply_medium";
    let rt = rt(CALL);
    shape(rt, CALL, Category::Medium, nargs, nbytes);
    // SAFETY: the caller's contract.
    let (t, a, p) = unsafe { (token(tok), args_of(args, nargs), bytes_of(payload, nbytes)) };
    ok(handler(rt, CALL, h).and_then(|h| t.reply_medium(h, &a, &p)));
}
weak_alias!("shmemx_am_reply_medium");

/// `shmemx_am_reply_long`: `payload` is written at symmetric `dest` on the
/// requester before its reply handler runs.
///
/// # Safety
/// `tok` is the token of the running handler; `args` holds `nargs` words,
/// `payload` `nbytes` bytes.
#[unsafe(export_name = "pshmemx_am_reply_long")]
pub unsafe extern "C" fn shmemx_am_reply_long(
    tok: *mut c_void,
    h: c_int,
    args: *const u32,
    nargs: usize,
    payload: *const c_void,
    nbytes: usize,
    dest: *mut c_void,
) {
    const CALL: &str = "shmemx_am_reply_long";
    let rt = rt(CALL);
    shape(rt, CALL, Category::Long, nargs, nbytes);
    // SAFETY: the caller's contract.
    let (t, a, p) = unsafe { (token(tok), args_of(args, nargs), bytes_of(payload, nbytes)) };
    ok(handler(rt, CALL, h).and_then(|h| {
        let off = rt.sym_offset(CALL, dest as usize, nbytes)?;
        t.reply_long_bytes(h, &a, &p, off)
    }));
}
weak_alias!("shmemx_am_reply_long");

/// `shmemx_am_poll`: serves pending incoming messages.
#[unsafe(export_name = "pshmemx_am_poll")]
pub extern "C" fn shmemx_am_poll() {
    const CALL: &str = "shmemx_am_poll";
    let rt = rt(CALL);
    ok(rt.not_in_handler(CALL).and_then(|()| {
        use conduits::prelude::*;
        rt.conduit.poll().map_err(|e| rt.err(CALL, e))
    }));
}
weak_alias!("shmemx_am_poll");
