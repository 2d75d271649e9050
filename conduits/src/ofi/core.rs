//! The protocol state of an ofi PE, behind the conduit's one lock: the
//! [`Fabric`], the reference engine for active messages and atomics the
//! provider cannot do, the receive buffers posted to the endpoint, and
//! every operation in flight keyed by the context its completion carries.
//!
//! Whichever thread holds the lock drives it: an application thread that
//! issues or waits, or the progress thread while the application
//! computes. [`Core::progress`] reads the completion queue (which is also
//! what makes a manual-progress provider move data), feeds received
//! packets to the engine, and sends what the engine has to send.
//!
//! Every RMA, atomic and engine command belongs to a context (the
//! contract's `CtxId`): each context counts its operations whose
//! completion entry has not been read yet and keeps the first error of its
//! non-blocking ones, so `quiet` on a context waits for that context only.
//! Every operation asks for a completion entry (no selective completion),
//! so these counts are exact; the endpoint's completion counter counts the
//! PE's operations as a whole (see [`Core::rma_quiet`]).
//!
//! The core also keeps the receiving ends of the non-default contexts'
//! queues and each context's deferred items (the `queue` module): whoever
//! takes or lets go of the lock takes the queued items, and
//! [`Core::progress`] issues the deferred ones that may go.

use super::fabric::Fabric;
use super::queue::{Item, Queued, Shared};
use super::{api, sys::*};
use crate::error::ConduitError;
use crate::segment::SegMemory;
use gasnet_core::engine::{Command, Completion, Engine, Status};
use gasnet_core::wire;
use std::collections::{HashMap, VecDeque};
use std::ffi::c_void;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;

/// Receive buffers kept posted.
const RECV_BUFFERS: usize = 32;

/// Size of each receive buffer: the largest packet.
const RECV_LEN: usize = wire::MAX_PACKET;

/// Completion entries read per `fi_cq_read`.
const CQ_BATCH: usize = 16;

/// What an operation's completion releases or reports.
pub(crate) enum Hold {
    /// Nothing held.
    None,
    /// Bytes the provider reads until completion (a put's copy, a send).
    Bytes(#[allow(dead_code)] Vec<u8>),
    /// A non-default context's copy of a put's bytes, counted in
    /// [`Shared::held`] until completion.
    Copy(Vec<u8>),
    /// An atomic's operand, compare value and result.
    Amo(AmoSlot),
    /// Receive buffer `i`.
    Recv(usize),
}

/// Who waits for an operation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiter {
    /// An application thread (blocking call): its outcome is kept in
    /// [`Core::done`] under the context.
    Blocking,
    /// Nobody: an error is kept for the next quiet.
    Nbi,
    /// The conduit itself (sends, receives).
    Internal,
}

/// What one attempt to issue an operation did.
pub(crate) enum Issued {
    /// Issued, with this operation id.
    Done(u64),
    /// The provider answered `FI_EAGAIN`: the operation's hold, to try
    /// again after progress.
    Again(Hold),
}

/// An operation in flight.
pub(crate) struct Op {
    pub(crate) call: &'static str,
    pub(crate) pe: usize,
    pub(crate) hold: Hold,
    pub(crate) waiter: Waiter,
    /// The context it belongs to (RMA and atomics).
    pub(crate) owner: u32,
}

/// Most contexts a PE keeps at once (the default one included).
pub(crate) const MAX_CONTEXTS: usize = 1024;

/// A context's completion tracking.
#[derive(Default)]
pub(crate) struct CtxState {
    /// Its RMA, atomics and engine commands issued and not yet completed.
    pub(crate) outstanding: u64,
    /// The first error of its non-blocking operations since its last quiet.
    pub(crate) error: Option<ConduitError>,
    /// Its items taken from its queue (or issued) that could not go to the
    /// endpoint yet, in its order: behind a fence, or refused with
    /// `FI_EAGAIN` (non-default contexts only).
    pub(crate) deferred: VecDeque<Item>,
}

impl CtxState {
    /// Its operations not completed: in flight, and deferred.
    pub(crate) fn pending(&self) -> u64 {
        let deferred = self
            .deferred
            .iter()
            .filter(|i| !matches!(i, Item::Fence))
            .count();
        self.outstanding + deferred as u64
    }
}

/// The state behind the lock.
pub(crate) struct Core {
    pub(crate) fab: Fabric,
    pub(crate) engine: Engine<SegMemory>,
    recv: Vec<Box<[u8]>>,
    ops: HashMap<u64, Op>,
    /// The contexts that exist, by id (the default one, 0, always).
    pub(crate) ctxs: HashMap<u32, CtxState>,
    /// Outcomes of blocking operations: the atomic's old value, or the error.
    pub(crate) done: HashMap<u64, Result<u64, ConduitError>>,
    /// Engine commands: tag -> blocking (value wanted) or not, and the
    /// context it belongs to.
    engine_wait: HashMap<u64, (Waiter, u32)>,
    /// Engine outcomes of blocking commands.
    pub(crate) engine_done: HashMap<u64, Result<Completion, ConduitError>>,
    /// Packets the endpoint had no room for yet: (destination PE, bytes).
    backlog: VecDeque<(usize, Vec<u8>)>,
    next_op: u64,
    /// RMA and atomic operations issued through the provider (the
    /// completion counter's target).
    pub(crate) rma_issued: u64,
    /// Counter errors already reported.
    rma_errors_seen: u64,
    /// RMA and atomic operations whose completion entry has not been read
    /// yet.
    rma_pending: u64,
    pub(crate) engine_issued: u64,
    pub(crate) engine_completed: u64,
    pub(crate) failed: Option<ConduitError>,
    /// The receiving ends of the contexts' queues.
    pub(crate) queues: Vec<Receiver<Queued>>,
    /// Items in the contexts' `deferred` lists, fences included.
    pub(crate) deferred: usize,
    /// What is counted and read outside the lock.
    pub(crate) sh: Arc<Shared>,
}

// SAFETY: the raw pointers inside (fabric handles, buffers handed to the
// provider) are only used by the thread holding the conduit's lock.
unsafe impl Send for Core {}

fn op_ptr(op: u64) -> *mut c_void {
    op as usize as *mut c_void
}

impl Core {
    /// Builds the core and posts the receive buffers.
    pub(crate) fn new(
        fab: Fabric,
        engine: Engine<SegMemory>,
        sh: Arc<Shared>,
    ) -> Result<Core, ConduitError> {
        let mut c = Core {
            fab,
            engine,
            recv: (0..RECV_BUFFERS)
                .map(|_| vec![0u8; RECV_LEN].into_boxed_slice())
                .collect(),
            ops: HashMap::new(),
            ctxs: HashMap::from([(0, CtxState::default())]),
            done: HashMap::new(),
            engine_wait: HashMap::new(),
            engine_done: HashMap::new(),
            backlog: VecDeque::new(),
            next_op: 1,
            rma_issued: 0,
            rma_errors_seen: 0,
            rma_pending: 0,
            engine_issued: 0,
            engine_completed: 0,
            failed: None,
            queues: Vec::new(),
            deferred: 0,
            sh,
        };
        for i in 0..RECV_BUFFERS {
            c.post_recv(i)?;
        }
        Ok(c)
    }

    /// A new operation id: the context pointer its completion carries.
    fn op_id(&mut self) -> u64 {
        let c = self.next_op;
        self.next_op += 1;
        c
    }

    /// Context `ctx`'s state, or `NoContext`.
    pub(crate) fn ctx(&mut self, ctx: u32) -> Result<&mut CtxState, ConduitError> {
        self.ctxs
            .get_mut(&ctx)
            .ok_or(ConduitError::NoContext { ctx })
    }

    /// Records an error of a non-blocking operation of context `owner`
    /// (the default context's, if `owner` was destroyed meanwhile).
    pub(crate) fn nbi_error(&mut self, owner: u32, e: ConduitError) {
        let slot = match self.ctxs.contains_key(&owner) {
            true => owner,
            false => 0,
        };
        if let Some(s) = self.ctxs.get_mut(&slot) {
            s.error.get_or_insert(e);
        }
    }

    /// One operation of context `owner` completed.
    fn ctx_done(&mut self, owner: u32) {
        if let Some(s) = self.ctxs.get_mut(&owner) {
            s.outstanding = s.outstanding.saturating_sub(1);
        }
    }

    fn post_recv(&mut self, i: usize) -> Result<(), ConduitError> {
        let id = self.op_id();
        let buf = self.recv[i].as_mut_ptr();
        loop {
            // SAFETY: the buffer is owned by the core, which outlives the
            // endpoint's use of it (the endpoint is closed before the core's
            // buffers are freed: Fabric is dropped first, see Drop).
            let rc = unsafe { api::recv(self.fab.ep, buf.cast(), RECV_LEN, op_ptr(id)) };
            if rc == 0 {
                break;
            }
            if rc != -(FI_EAGAIN as isize) {
                return Err(self.fab.err("fi_recv", rc));
            }
            self.read_cq();
        }
        self.ops.insert(
            id,
            Op {
                call: "fi_recv",
                pe: self.fab.rank,
                hold: Hold::Recv(i),
                waiter: Waiter::Internal,
                owner: 0,
            },
        );
        Ok(())
    }

    /// Tries once to issue an RMA or atomic of context `owner` through
    /// `issue` (given the operation's context pointer), and records it.
    /// `FI_EAGAIN` gives `hold` back: the caller progresses, with the
    /// core's lock released so that the progress thread can record a
    /// peer's failure, and tries again (see `OfiConduit::issue`).
    pub(crate) fn try_issue(
        &mut self,
        call: &'static str,
        owner: u32,
        pe: usize,
        hold: Hold,
        waiter: Waiter,
        issue: &mut impl FnMut(&Fabric, &Hold, *mut c_void) -> isize,
    ) -> Result<Issued, ConduitError> {
        self.ctx(owner)?;
        let id = self.op_id();
        let rc = issue(&self.fab, &hold, op_ptr(id));
        if rc == -(FI_EAGAIN as isize) {
            return Ok(Issued::Again(hold));
        }
        if rc != 0 {
            if let Hold::Copy(v) = &hold {
                self.sh.release(v.len());
            }
            return Err(self.fab.err(&format!("{call} to PE {pe}"), rc));
        }
        self.rma_issued += 1;
        self.rma_pending += 1;
        if let Ok(s) = self.ctx(owner) {
            s.outstanding += 1;
        }
        self.ops.insert(
            id,
            Op {
                call,
                pe,
                hold,
                waiter,
                owner,
            },
        );
        Ok(Issued::Done(id))
    }

    /// Whether the engine has room for another command.
    pub(crate) fn engine_room(&self) -> bool {
        self.engine.outstanding() < self.engine.config().queue_depth
    }

    /// Hands an engine command of context `owner` over; `waiter` says
    /// whether a thread waits for its completion.
    pub(crate) fn submit(&mut self, tag: u64, owner: u32, cmd: Command, waiter: Waiter) {
        self.engine_issued += 1;
        if let Ok(s) = self.ctx(owner) {
            s.outstanding += 1;
        }
        self.engine_wait.insert(tag, (waiter, owner));
        if let Err(e) = self.engine.submit(tag, cmd) {
            let c = Completion {
                tag,
                status: Status::Malformed,
                value: 0,
                data: Vec::new(),
            };
            self.finish_engine(c, Some(e.to_string()));
        }
        self.pump();
    }

    /// One round: completions in (receives feed the engine), engine
    /// packets out. Whether anything happened.
    pub(crate) fn progress(&mut self) -> bool {
        let mut work = self.read_cq();
        work |= self.pump();
        work |= self.run_deferred();
        work
    }

    /// Whether every RMA and atomic the PE issued through the provider,
    /// on every context, has completed: the completion counter has counted
    /// them all and their completion entries were read (which releases
    /// what they held and counts them off their contexts). A failed one's
    /// error travels in its completion entry to its context.
    pub(crate) fn rma_quiet(&mut self) -> bool {
        let (ok, err) = self.fab.counted();
        if err > self.rma_errors_seen {
            self.rma_errors_seen = err;
            self.read_cq();
        }
        ok + err >= self.rma_issued && self.rma_pending == 0
    }

    /// Whether context `ctx` has nothing outstanding or deferred; then its
    /// first error since its last quiet, if any, is taken.
    pub(crate) fn ctx_quiet(&mut self, ctx: u32) -> Result<bool, ConduitError> {
        let s = self.ctx(ctx)?;
        if s.outstanding > 0 || !s.deferred.is_empty() {
            return Ok(false);
        }
        match s.error.take() {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    fn pump(&mut self) -> bool {
        let mut work = false;
        loop {
            let mut moved = false;
            while let Some(c) = self.engine.poll_completion() {
                self.finish_engine(c, None);
                moved = true;
            }
            while let Some(p) = self.engine.next_outgoing() {
                let dst = p.dst as usize;
                match wire::encode(&p) {
                    Ok(bytes) => self.backlog.push_back((dst, bytes)),
                    Err(e) => self.fail(ConduitError::Io(format!(
                        "PE {}: cannot encode a packet to PE {dst}: {e}",
                        self.fab.rank
                    ))),
                }
                moved = true;
            }
            while let Some((dst, bytes)) = self.backlog.pop_front() {
                let Some(peer) = self.fab.peers.get(dst).copied() else {
                    self.fail(ConduitError::Io(format!(
                        "PE {}: a packet for PE {dst}, outside the job",
                        self.fab.rank
                    )));
                    continue;
                };
                let id = self.op_id();
                // SAFETY: `bytes` is kept in the op table until the send
                // completes (moving the Vec does not move its heap buffer).
                let rc = unsafe {
                    api::send(
                        self.fab.ep,
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        peer.addr,
                        op_ptr(id),
                    )
                };
                if rc == -(FI_EAGAIN as isize) {
                    self.backlog.push_front((dst, bytes));
                    break;
                }
                if rc != 0 {
                    let e = self.fab.err(&format!("fi_send to PE {dst}"), rc);
                    self.fail(e);
                    continue;
                }
                self.ops.insert(
                    id,
                    Op {
                        call: "fi_send",
                        pe: dst,
                        hold: Hold::Bytes(bytes),
                        waiter: Waiter::Internal,
                        owner: 0,
                    },
                );
                moved = true;
            }
            if !moved {
                break;
            }
            work = true;
            if !self.backlog.is_empty() {
                // The endpoint is full: let completions make room.
                break;
            }
        }
        work
    }

    /// Reads the completion queue dry. Whether anything completed.
    fn read_cq(&mut self) -> bool {
        let mut work = false;
        loop {
            // SAFETY: fi_cq_msg_entry is plain data.
            let mut buf: [fi_cq_msg_entry; CQ_BATCH] = unsafe { std::mem::zeroed() };
            // SAFETY: `cq` is open; `buf` has room for CQ_BATCH entries.
            let n = unsafe { api::cq_read(self.fab.cq, buf.as_mut_ptr(), CQ_BATCH) };
            if n > 0 {
                work = true;
                for e in &buf[..n as usize] {
                    self.complete(e.op_context as usize as u64, e.len, None);
                }
                continue;
            }
            if n == -(FI_EAVAIL as isize) {
                // SAFETY: zero is a valid error entry.
                let mut e: fi_cq_err_entry = unsafe { std::mem::zeroed() };
                // SAFETY: `cq` is open; `e` is writable.
                let r = unsafe { api::cq_readerr(self.fab.cq, &mut e) };
                if r == 1 {
                    work = true;
                    // SAFETY: `cq` is open; err_data as the entry gave it.
                    let prov = unsafe { api::cq_strerror(self.fab.cq, e.prov_errno, e.err_data) };
                    let text = format!(
                        "{}{}",
                        self.fab.api.strerror(e.err as isize),
                        prov.map(|p| format!(": {p}")).unwrap_or_default()
                    );
                    self.complete(e.op_context as usize as u64, 0, Some(text));
                    continue;
                }
            }
            break;
        }
        work
    }

    /// The operation `id` completed (with an error text, if it failed).
    fn complete(&mut self, id: u64, len: usize, err: Option<String>) {
        let Some(op) = self.ops.remove(&id) else {
            return;
        };
        let rank = self.fab.rank;
        let error = err.map(|t| {
            ConduitError::Io(format!(
                "PE {rank}: {} to PE {} failed: {t}",
                op.call, op.pe
            ))
        });
        match op.hold {
            Hold::Recv(i) => {
                if let Some(e) = error {
                    // Endpoints cancel receives when closed; anything else
                    // is a failure.
                    self.fail(e);
                    return;
                }
                // The packet's header and CRC, not the completion's length,
                // delimit it: ofi_rxd (libfabric 1.17) reports lengths
                // short of what it delivered. A packet that was really cut
                // fails the CRC.
                let buf = &self.recv[i];
                let len = wire::peek_header(buf)
                    .map(|h| h.packet_len().max(len))
                    .unwrap_or(len)
                    .min(RECV_LEN);
                match wire::decode(&buf[..len]) {
                    Ok(p) => self.engine.receive(p),
                    Err(e) => self.fail(ConduitError::Io(format!(
                        "PE {rank}: a malformed packet of {len} bytes arrived: {e}"
                    ))),
                }
                if let Err(e) = self.post_recv(i) {
                    self.fail(e);
                }
            }
            hold => {
                if op.waiter != Waiter::Internal {
                    self.rma_pending -= 1;
                    self.ctx_done(op.owner);
                }
                if let Hold::Copy(v) = &hold {
                    self.sh.release(v.len());
                }
                if op.waiter == Waiter::Internal {
                    if let Some(e) = error {
                        self.fail(e);
                    }
                    return;
                }
                let value = match &hold {
                    Hold::Amo(slot) => slot.result(),
                    _ => 0,
                };
                match (op.waiter, error) {
                    (Waiter::Blocking, Some(e)) => {
                        self.done.insert(id, Err(e));
                    }
                    (Waiter::Blocking, None) => {
                        self.done.insert(id, Ok(value));
                    }
                    (_, Some(e)) => {
                        self.nbi_error(op.owner, e);
                    }
                    (_, None) => {}
                }
            }
        }
    }

    fn finish_engine(&mut self, c: Completion, why: Option<String>) {
        let Some((waiter, owner)) = self.engine_wait.remove(&c.tag) else {
            return;
        };
        self.engine_completed += 1;
        self.ctx_done(owner);
        let err = (c.status != Status::Ok).then(|| {
            ConduitError::Io(format!(
                "PE {}: remote operation failed: {:?}{}",
                self.fab.rank,
                c.status,
                why.map(|w| format!(" ({w})")).unwrap_or_default()
            ))
        });
        match (waiter, err) {
            (Waiter::Blocking, Some(e)) => {
                self.engine_done.insert(c.tag, Err(e));
            }
            (Waiter::Blocking, None) => {
                self.engine_done.insert(c.tag, Ok(c));
            }
            (_, Some(e)) => {
                self.nbi_error(owner, e);
            }
            (_, None) => {}
        }
    }

    pub(crate) fn fail(&mut self, e: ConduitError) {
        self.failed.get_or_insert(e);
        self.sh.failed.store(true, Ordering::Release);
    }

    /// Waits (progressing) until every send and receive has completed or
    /// been cancelled, for at most `limit`: called before the endpoint is
    /// closed.
    pub(crate) fn drain(&mut self, limit: std::time::Duration) {
        let end = std::time::Instant::now() + limit;
        while self.ops.values().any(|o| !matches!(o.hold, Hold::Recv(_)))
            && std::time::Instant::now() < end
        {
            self.progress();
            std::thread::yield_now();
        }
    }
}

impl Hold {
    /// The atomic slot's address (operand, compare, result), for the call
    /// that issues it.
    pub(crate) fn amo_ptrs(&self) -> (*const u64, *const u64, *mut u64) {
        match self {
            Hold::Amo(s) => (s.0.cast_const(), s.0.wrapping_add(1), s.0.wrapping_add(2)),
            _ => (std::ptr::null(), std::ptr::null(), std::ptr::null_mut()),
        }
    }

    /// The held bytes' address and length.
    pub(crate) fn bytes(&self) -> (*const u8, usize) {
        match self {
            Hold::Bytes(v) | Hold::Copy(v) => (v.as_ptr(), v.len()),
            _ => (std::ptr::null(), 0),
        }
    }
}

/// Three words the provider reads (operand, compare) and writes (result)
/// until an atomic completes: a heap allocation reached only through its
/// raw pointer, so no Rust reference covers memory the provider writes.
pub(crate) struct AmoSlot(*mut u64);

impl AmoSlot {
    /// A slot holding `operand` and `compare`.
    pub(crate) fn new(operand: u64, compare: u64) -> AmoSlot {
        let b = Box::new([operand, compare, 0u64]);
        AmoSlot(Box::into_raw(b).cast())
    }

    /// The result word, read after the completion.
    fn result(&self) -> u64 {
        // SAFETY: the allocation lives while the slot does; the provider
        // wrote it before reporting the completion that led here.
        unsafe { self.0.add(2).read_volatile() }
    }
}

impl Drop for AmoSlot {
    fn drop(&mut self) {
        // SAFETY: the pointer came from Box::into_raw of a [u64; 3] and the
        // operation using it has completed (or the endpoint is closed).
        drop(unsafe { Box::from_raw(self.0.cast::<[u64; 3]>()) });
    }
}
