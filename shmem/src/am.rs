//! User active messages, GASNet style.
//!
//! An active message (AM) names a handler that runs on the target PE when
//! the message arrives, with the message's arguments and payload. fshmem's
//! runtime is built on them; this module offers them to programs at two
//! levels.
//!
//! # Raw AMs: Short, Medium and Long
//!
//! [`Shmem::am_register`] registers a handler; it is **collective**: every
//! PE registers the same handlers in the same order, and each call ends
//! with a barrier, so the [`AmHandler`] it returns names the same handler
//! on every PE and no PE can send to a PE that has not registered it yet.
//! The barrier checks that every PE registered the handler at the same
//! index: a registration that fails on one PE (or finds the PEs out of
//! step) fails on every PE, and leaves them in step for the next one.
//! Requests:
//!
//! - [`Shmem::am_short`]: up to [`MAX_ARGS`] 32-bit arguments;
//! - [`Shmem::am_medium`]: arguments and up to [`MAX_MEDIUM`] payload
//!   bytes, delivered in a buffer the handler borrows;
//! - [`Shmem::am_long`]: arguments and up to [`MAX_LONG`] bytes written
//!   into a symmetric object on the target before its handler runs.
//!
//! A request handler may reply once to the requester with
//! [`Token::reply_short`], [`Token::reply_medium`] or [`Token::reply_long`];
//! a reply's handler may not reply.
//!
//! ```no_run
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//! let sh = shmem::init()?;
//! let (me, n) = (sh.my_pe(), sh.n_pes());
//! let got = Arc::new(AtomicU64::new(0));
//! let g = got.clone();
//! // Registered in the same order on every PE.
//! let pong = sh.am_register(move |_t, m| { g.fetch_add(m.args[0] as u64, Ordering::Relaxed); })?;
//! let ping = sh.am_register(move |t, m| {
//!     t.reply_short(pong, &[m.args[0] * 2]).expect("one reply");
//! })?;
//! sh.am_short((me + 1) % n, ping, &[21])?;
//! while got.load(Ordering::Relaxed) == 0 {
//!     sh.am_poll()?;
//! }
//! assert_eq!(got.load(Ordering::Relaxed), 42);
//! sh.barrier_all()?;
//! # Ok::<(), shmem::ShmemError>(())
//! ```
//!
//! # Typed AMs
//!
//! [`Shmem::am_typed`] registers a function from a request type to a reply
//! type; [`TypedAm::call`] sends a request and waits for its reply,
//! [`TypedAm::send`] sends one without waiting and [`TypedAm::wait_all`]
//! waits until every sent request has been handled. Requests and replies
//! are serialised with [serde](https://serde.rs) into
//! [postcard](https://docs.rs/postcard)'s compact format: variable-length
//! integers and no field names, so that a key-value pair of two `u64`s
//! takes a few bytes of a Medium message's 4 KiB rather than the 16 or
//! more of a fixed layout (bincode) or the tens of a self-describing one
//! (JSON); it is also a format that needs no schema exchange between PEs
//! of one program. A serialised request or reply must fit in
//! [`MAX_MEDIUM`] bytes.
//!
//! # Handler rules (enforced)
//!
//! Handlers run on the runtime's progress path: inside [`Shmem::am_poll`]
//! or any call that polls (on `smp`, `fpga`), or on the conduit's progress
//! thread (`ipv6`, `ofi`). Therefore a handler:
//!
//! - must be short and must not block: any shmem call other than a reply
//!   (puts, gets, atomics, waits, quiet, barriers, collectives, requests,
//!   allocation) made from a handler fails with [`ShmemError::Invalid`]
//!   naming the call ("called from an active-message handler"), since it
//!   could wait for progress that only the handler's own thread makes;
//! - replies at most once, and only to a request: a second reply, or a
//!   reply from a reply handler, is an error;
//! - sees Long payloads as a copy: the bytes were written into symmetric
//!   memory, which other PEs may write again at any time.

use crate::Shmem;
use crate::error::{Result, ShmemError};
use crate::pod::{Pod, bytes_of};
use crate::progress::InHandler;
use crate::runtime::Runtime;
use crate::sym::SymVec;
use conduits::prelude::*;
use gasnet_core::{AmError, AmMessage, Category, Direction, HandlerFn};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use gasnet_core::types::{MAX_ARGS, MAX_LONG, MAX_MEDIUM};

/// The next free user handler index. Registration is collective and agreed
/// ([`register`]), so every PE hands out the same indices in the same
/// order, and a registration that fails, fails on every PE. Guarded by the
/// mutex, which keeps one registration at a time in this process.
static NEXT_INDEX: Mutex<u8> = Mutex::new(gasnet_core::handlers::FIRST_USER);

pub(crate) fn am_error(rt: &Runtime, call: &'static str, e: AmError) -> ShmemError {
    ShmemError::Invalid {
        pe: rt.my_pe(),
        call,
        reason: e.to_string(),
    }
}

/// A registered handler: the same index on every PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AmHandler(u8);

/// The handler at a user index (the C ABI's handler numbers).
pub(crate) fn handler_from_index(index: u8) -> AmHandler {
    AmHandler(index)
}

impl AmHandler {
    /// The handler's index in the conduit's table (`64..=255`).
    pub fn index(self) -> u8 {
        self.0
    }
}

/// Short, Medium or Long.
pub use gasnet_core::Category as AmCategory;

/// One delivered active message, as a handler sees it.
#[derive(Debug)]
pub struct Message<'a> {
    /// The PE that sent it.
    pub src_pe: usize,
    /// Short, Medium or Long.
    pub category: Category,
    /// Whether it is a reply (else a request).
    pub is_reply: bool,
    /// Its 32-bit arguments.
    pub args: &'a [u32],
    /// Medium: the payload. Long: a copy of the bytes written into the
    /// symmetric object. Short: empty.
    pub payload: &'a [u8],
    /// Long: the segment offset the payload was written at (see
    /// [`SymVec::segment_offset`]). Otherwise 0.
    pub offset: usize,
}

/// Handed to a handler: the requester, and the one reply a request
/// handler may send.
pub struct Token<'a, 'b> {
    rt: &'a Runtime,
    inner: &'a mut gasnet_core::Token<'b>,
}

impl std::fmt::Debug for Token<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("src_pe", &self.inner.src())
            .field("replied", &self.inner.has_replied())
            .finish()
    }
}

impl Token<'_, '_> {
    /// The PE whose message is being handled.
    pub fn src_pe(&self) -> usize {
        self.inner.src() as usize
    }

    /// Whether this handler has replied.
    pub fn has_replied(&self) -> bool {
        self.inner.has_replied()
    }

    /// Replies with a Short message to handler `h` of the requester.
    pub fn reply_short(&mut self, h: AmHandler, args: &[u32]) -> Result<()> {
        const CALL: &str = "shmem::am reply_short";
        self.inner
            .reply_short(h.0, args)
            .map_err(|e| am_error(self.rt, CALL, e))
    }

    /// Replies with a Medium message (at most [`MAX_MEDIUM`] bytes).
    pub fn reply_medium(&mut self, h: AmHandler, args: &[u32], payload: &[u8]) -> Result<()> {
        const CALL: &str = "shmem::am reply_medium";
        self.inner
            .reply_medium(h.0, args, payload)
            .map_err(|e| am_error(self.rt, CALL, e))
    }

    /// A Long reply of raw bytes to segment offset `off` (the C ABI).
    pub(crate) fn reply_long_bytes(
        &mut self,
        h: AmHandler,
        args: &[u32],
        bytes: &[u8],
        off: usize,
    ) -> Result<()> {
        let r = self
            .inner
            .reply_long(h.0, args, bytes, off as u64)
            .map_err(|e| am_error(self.rt, "shmemx_am_reply_long", e));
        self.rt.long_sent.note(self.src_pe());
        r
    }

    /// Replies with a Long message: `src` is written over elements
    /// `start..start + src.len()` of the requester's copy of `dst` before
    /// handler `h` runs there.
    pub fn reply_long<T: Pod>(
        &mut self,
        h: AmHandler,
        args: &[u32],
        src: &[T],
        dst: &SymVec<'_, T>,
        start: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem::am reply_long";
        let off = dst.range(start, src.len(), CALL)?;
        let r = self
            .inner
            .reply_long(h.0, args, bytes_of(src), off as u64)
            .map_err(|e| am_error(self.rt, CALL, e));
        self.rt.long_sent.note(self.src_pe());
        r
    }
}

/// Wraps a user handler: the handler rule set for its duration.
fn wrap<F>(rt: &'static Runtime, f: F) -> HandlerFn
where
    F: Fn(&mut Token<'_, '_>, &Message<'_>) + Send + Sync + 'static,
{
    Arc::new(
        move |tok: &mut gasnet_core::Token<'_>, msg: &AmMessage<'_>| {
            let m = Message {
                src_pe: msg.src as usize,
                category: msg.category,
                is_reply: msg.direction == Direction::Reply,
                args: msg.args,
                // Private to this handler on every conduit (a copy for
                // Long), `spec/conduit.md` section 5.
                payload: msg.payload,
                offset: msg.offset as usize,
            };
            let _in = InHandler::enter(&rt.handlers);
            let mut t = Token { rt, inner: tok };
            f(&mut t, &m);
        },
    )
}

/// Registers handler `f` collectively (see [`Shmem::am_register`]).
///
/// Every PE registers `f` at its next free index, then the PEs agree (a
/// sync of the world team with the argument check of data collectives,
/// [`Runtime::agree_sync`]) on the index and on whether each of them
/// succeeded. So the registration either succeeds on every PE, at the
/// same index, or fails on every PE: with this PE's own error where it
/// failed, and elsewhere with [`ShmemError::CollectiveMismatch`] naming
/// the PE that failed (or two PEs whose indices differ). A failed
/// registration keeps the PEs in step: when every PE failed alike (every
/// index is taken) the index stays as it was on every PE; when some PE's
/// conduit took the handler and another's did not, every PE moves past
/// the index (the conduit does not give a handler back). No PE returns
/// before every PE has registered (the sync, which with the quiet before
/// it makes a barrier), so no request reaches a PE before its handler
/// exists.
pub(crate) fn register<F>(rt: &'static Runtime, call: &'static str, f: F) -> Result<AmHandler>
where
    F: Fn(&mut Token<'_, '_>, &Message<'_>) + Send + Sync + 'static,
{
    use gasnet_core::handlers::{FIRST_COMPUTE, FIRST_USER};
    rt.not_in_handler(call)?;
    // The registration ends with a barrier: this PE's operations complete
    // first (a quiet fails only when a peer failed, which ends the job).
    rt.quiet(call)?;
    let mut next = NEXT_INDEX.lock().unwrap_or_else(|e| e.into_inner());
    let index = *next;
    let local = if index < FIRST_COMPUTE {
        rt.conduit
            .register_handler(index, wrap(rt, f))
            .map_err(|e| rt.err(call, e))
    } else {
        Err(ShmemError::Invalid {
            pe: rt.my_pe(),
            call,
            reason: format!(
                "all {} user handler indices ({FIRST_USER}..={}) are taken",
                FIRST_COMPUTE - FIRST_USER,
                FIRST_COMPUTE - 1
            ),
        })
    };
    let agreed = rt.agree_sync(
        call,
        crate::collective::Args::am_register(index, local.is_err()),
    );
    match (local, agreed) {
        (Ok(()), Ok(())) => {
            *next = index + 1;
            Ok(AmHandler(index))
        }
        // Every PE made the same call and failed it: no conduit took a
        // handler at `index`, which stays free on every PE.
        (Err(e), Ok(())) => Err(e),
        // The PEs' calls differed (some failed, some took the handler, or
        // their indices were not in step): every PE sees the difference,
        // and every PE moves on by one.
        (local, Err(e)) => {
            *next = index.saturating_add(1).min(FIRST_COMPUTE);
            Err(local.err().unwrap_or(e))
        }
    }
}

impl Shmem {
    /// The runtime with the lifetime handlers need: they are registered in
    /// the conduit, which the runtime owns, and run only while it lives.
    fn rt_static(&self) -> &'static Runtime {
        // SAFETY: handlers are stored in the conduit's table, owned by the
        // runtime and dropped with it; a handler runs only inside the
        // conduit's poll or progress thread, which end before the runtime
        // is freed (finalize detaches the conduit first). So no handler
        // uses the reference after the runtime is gone.
        unsafe { &*(self.rt() as *const Runtime) }
    }

    /// Registers a raw AM handler; collective (same handlers, same order,
    /// on every PE), ends with a barrier. See the [module](crate::am)
    /// documentation for the rules a handler follows.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let h = sh.am_register(|_token, msg| println!("from PE {}: {:?}", msg.src_pe, msg.args))?;
    /// sh.am_short(0, h, &[1, 2, 3])?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn am_register<F>(&self, f: F) -> Result<AmHandler>
    where
        F: Fn(&mut Token<'_, '_>, &Message<'_>) + Send + Sync + 'static,
    {
        register(self.rt_static(), "shmem::am_register", f)
    }

    /// Sends a Short request to handler `h` of PE `pe`.
    pub fn am_short(&self, pe: usize, h: AmHandler, args: &[u32]) -> Result<()> {
        self.am_request("shmem::am_short", pe, Category::Short, h, args, &[], 0)
    }

    /// Sends a Medium request: `args` and `payload` (at most
    /// [`MAX_MEDIUM`] bytes) to handler `h` of PE `pe`.
    pub fn am_medium(&self, pe: usize, h: AmHandler, args: &[u32], payload: &[u8]) -> Result<()> {
        self.am_request(
            "shmem::am_medium",
            pe,
            Category::Medium,
            h,
            args,
            payload,
            0,
        )
    }

    /// Sends a Long request: `src` (at most [`MAX_LONG`] bytes) is written
    /// over elements `start..start + src.len()` of PE `pe`'s copy of `dst`,
    /// then handler `h` runs there.
    pub fn am_long<T: Pod>(
        &self,
        pe: usize,
        h: AmHandler,
        args: &[u32],
        src: &[T],
        dst: &SymVec<'_, T>,
        start: usize,
    ) -> Result<()> {
        const CALL: &str = "shmem::am_long";
        let off = dst.range(start, src.len(), CALL)?;
        self.am_request(CALL, pe, Category::Long, h, args, bytes_of(src), off)
    }

    #[allow(clippy::too_many_arguments)]
    fn am_request(
        &self,
        call: &'static str,
        pe: usize,
        category: Category,
        h: AmHandler,
        args: &[u32],
        payload: &[u8],
        off: usize,
    ) -> Result<()> {
        request(self.rt(), call, pe, category, h, args, payload, off)
    }

    /// Serves pending incoming messages (runs their handlers, on conduits
    /// that run handlers in the caller's thread).
    pub fn am_poll(&self) -> Result<()> {
        const CALL: &str = "shmem::am_poll";
        let rt = self.rt();
        rt.not_in_handler(CALL)?;
        rt.conduit.poll().map_err(|e| rt.err(CALL, e))
    }

    /// Registers a typed AM: `f(src_pe, request)` runs on the target PE and
    /// its value is the reply. Collective, as [`Shmem::am_register`] (it
    /// registers two handlers).
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let square = sh.am_typed(|_src, x: u64| x * x)?;
    /// assert_eq!(square.call(0, &7)?, 49);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    pub fn am_typed<Req, Rep, F>(&self, f: F) -> Result<TypedAm<'_, Req, Rep>>
    where
        Req: Serialize + DeserializeOwned,
        Rep: Serialize + DeserializeOwned,
        F: Fn(usize, Req) -> Rep + Send + Sync + 'static,
    {
        let rt = self.rt_static();
        let state = Arc::new(Replies::default());
        let st = state.clone();
        let reply = self.am_register(move |_t, m| st.arrived(m))?;
        let request = self.am_register(move |t, m| {
            let (status, bytes) = match postcard::from_bytes::<Req>(m.payload) {
                Err(e) => (STATUS_BAD_REQUEST, e.to_string().into_bytes()),
                Ok(req) => match postcard::to_allocvec(&f(t.src_pe(), req)) {
                    Err(e) => (STATUS_BAD_REPLY, e.to_string().into_bytes()),
                    Ok(b) if b.len() > MAX_MEDIUM => (
                        STATUS_BAD_REPLY,
                        format!("the reply takes {} bytes, more than {MAX_MEDIUM}", b.len())
                            .into_bytes(),
                    ),
                    Ok(b) => (STATUS_OK, b),
                },
            };
            let bytes = &bytes[..bytes.len().min(MAX_MEDIUM)];
            if let Err(e) = t.reply_medium(reply, &[m.args[0], m.args[1], status], bytes) {
                conduits::report!("{e}");
            }
        })?;
        Ok(TypedAm {
            rt,
            request,
            state,
            _t: PhantomData,
        })
    }
}

/// Sends a request (the shape checked, the caller outside handlers).
#[allow(clippy::too_many_arguments)]
pub(crate) fn request(
    rt: &Runtime,
    call: &'static str,
    pe: usize,
    category: Category,
    h: AmHandler,
    args: &[u32],
    payload: &[u8],
    off: usize,
) -> Result<()> {
    rt.not_in_handler(call)?;
    rt.check_pe(pe, call)?;
    gasnet_core::am::check_shape(category, args.len(), payload.len())
        .map_err(|e| am_error(rt, call, e))?;
    let r = rt
        .conduit
        .am_request(pe, category, h.0, args, payload, off)
        .map_err(|e| rt.err(call, e));
    if category == Category::Long {
        rt.long_sent.note(pe);
    }
    r
}

const STATUS_OK: u32 = 0;
const STATUS_BAD_REQUEST: u32 = 1;
const STATUS_BAD_REPLY: u32 = 2;

/// A reply that arrived, or the status that came instead.
type Arrived = std::result::Result<Vec<u8>, (u32, String)>;

/// The requester's side of a typed AM: replies by sequence number.
#[derive(Default)]
struct Replies {
    next: AtomicU64,
    /// Sent with [`TypedAm::send`] and not yet replied to.
    outstanding: AtomicU64,
    /// Calls waiting for their reply: `None` until it arrives.
    waiting: Mutex<HashMap<u64, Option<Arrived>>>,
    /// The first failure of a `send`.
    failed: Mutex<Option<(u32, String)>>,
}

impl Replies {
    /// The reply handler: short, takes one lock for a moment.
    fn arrived(&self, m: &Message<'_>) {
        let (Some(&lo), Some(&hi), Some(&status)) = (m.args.first(), m.args.get(1), m.args.get(2))
        else {
            return;
        };
        let seq = u64::from(lo) | (u64::from(hi) << 32);
        let r = if status == STATUS_OK {
            Ok(m.payload.to_vec())
        } else {
            Err((status, String::from_utf8_lossy(m.payload).into_owned()))
        };
        let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = w.get_mut(&seq) {
            *slot = Some(r);
            return;
        }
        drop(w);
        if let Err(e) = r {
            let mut f = self.failed.lock().unwrap_or_else(|e| e.into_inner());
            f.get_or_insert(e);
        }
        self.outstanding.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A typed active message from `Req` to `Rep`, made by
/// [`Shmem::am_typed`].
pub struct TypedAm<'s, Req, Rep> {
    rt: &'s Runtime,
    request: AmHandler,
    state: Arc<Replies>,
    _t: PhantomData<fn(Req) -> Rep>,
}

impl<Req, Rep> std::fmt::Debug for TypedAm<'_, Req, Rep> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedAm")
            .field("request", &self.request)
            .field(
                "outstanding",
                &self.state.outstanding.load(Ordering::Relaxed),
            )
            .finish()
    }
}

impl<Req: Serialize + DeserializeOwned, Rep: Serialize + DeserializeOwned> TypedAm<'_, Req, Rep> {
    fn issue(&self, call: &'static str, pe: usize, req: &Req, wait: bool) -> Result<u64> {
        let rt = self.rt;
        rt.not_in_handler(call)?;
        rt.check_pe(pe, call)?;
        let bytes = postcard::to_allocvec(req).map_err(|e| ShmemError::Invalid {
            pe: rt.my_pe(),
            call,
            reason: format!("cannot serialise the request: {e}"),
        })?;
        if bytes.len() > MAX_MEDIUM {
            return Err(ShmemError::Invalid {
                pe: rt.my_pe(),
                call,
                reason: format!(
                    "the serialised request takes {} bytes, more than {MAX_MEDIUM}",
                    bytes.len()
                ),
            });
        }
        let seq = self.state.next.fetch_add(1, Ordering::Relaxed);
        if wait {
            let mut w = self.state.waiting.lock().unwrap_or_else(|e| e.into_inner());
            w.insert(seq, None);
        } else {
            self.state.outstanding.fetch_add(1, Ordering::AcqRel);
        }
        let args = [seq as u32, (seq >> 32) as u32];
        if let Err(e) =
            rt.conduit
                .am_request(pe, Category::Medium, self.request.0, &args, &bytes, 0)
        {
            if wait {
                let mut w = self.state.waiting.lock().unwrap_or_else(|e| e.into_inner());
                w.remove(&seq);
            } else {
                self.state.outstanding.fetch_sub(1, Ordering::AcqRel);
            }
            return Err(rt.err(call, e));
        }
        Ok(seq)
    }

    fn failure(
        &self,
        call: &'static str,
        pe: Option<usize>,
        (status, why): (u32, String),
    ) -> ShmemError {
        let at = pe
            .map(|p| format!("PE {p}"))
            .unwrap_or_else(|| "a PE".to_string());
        let what = if status == STATUS_BAD_REQUEST {
            "could not decode the request"
        } else {
            "could not encode the reply"
        };
        ShmemError::Invalid {
            pe: self.rt.my_pe(),
            call,
            reason: format!("{at} {what}: {why}"),
        }
    }

    /// Sends `req` to PE `pe` and waits for the reply (serving incoming
    /// messages meanwhile).
    pub fn call(&self, pe: usize, req: &Req) -> Result<Rep> {
        const CALL: &str = "shmem::am TypedAm::call";
        let rt = self.rt;
        let seq = self.issue(CALL, pe, req, true)?;
        rt.poll_until(
            CALL,
            || {
                let done = {
                    let mut w = self.state.waiting.lock().unwrap_or_else(|e| e.into_inner());
                    if matches!(w.get(&seq), Some(Some(_))) {
                        w.remove(&seq).flatten()
                    } else {
                        None
                    }
                };
                match done {
                    Some(Ok(bytes)) => {
                        postcard::from_bytes(&bytes)
                            .map(Some)
                            .map_err(|e| ShmemError::Invalid {
                                pe: rt.my_pe(),
                                call: CALL,
                                reason: format!(
                                    "PE {pe} replied with bytes that do not decode: {e}"
                                ),
                            })
                    }
                    Some(Err(f)) => Err(self.failure(CALL, Some(pe), f)),
                    None => Ok(None),
                }
            },
            || format!("the reply of PE {pe} to typed AM request {seq}"),
        )
    }

    /// Sends `req` to PE `pe` without waiting; its reply is dropped.
    /// [`TypedAm::wait_all`] waits until every such request was handled.
    pub fn send(&self, pe: usize, req: &Req) -> Result<()> {
        self.issue("shmem::am TypedAm::send", pe, req, false)
            .map(drop)
    }

    /// Waits until every request sent with [`TypedAm::send`] has been
    /// handled by its target; reports the first that failed.
    pub fn wait_all(&self) -> Result<()> {
        const CALL: &str = "shmem::am TypedAm::wait_all";
        let rt = self.rt;
        rt.not_in_handler(CALL)?;
        let outstanding = &self.state.outstanding;
        rt.poll_until(
            CALL,
            || Ok((outstanding.load(Ordering::Acquire) == 0).then_some(())),
            || {
                format!(
                    "the replies to {} typed AM requests",
                    outstanding.load(Ordering::Relaxed)
                )
            },
        )?;
        let f = self
            .state
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match f {
            Some(f) => Err(self.failure(CALL, None, f)),
            None => Ok(()),
        }
    }
}
