//! The put path of a non-default context (`spec/conduit.md` §3,
//! "Contexts and threads"): a put, `put_nbi`, `get_nbi`, non-fetching
//! atomic, put-with-signal or fence on a context other than the default
//! one never waits for the core's lock held by another thread.
//!
//! Such an operation becomes [`Item`]s that own what they need (a put's
//! copy of its bytes; `put_nbi` and `get_nbi` name the caller's buffer,
//! which is the conduit's until quiet). If the core's lock is free the
//! thread takes it and hands the items to the endpoint itself; if another
//! thread holds it, they go to the context's queue, a channel whose
//! receiving end the core keeps, and the holder takes them when it lets go
//! (the [`crate::ctxq`] guard: every taking and letting go of the lock
//! drains the queues, and the look after unlocking leaves no item behind).
//!
//! Once in the core, a context's items reach the endpoint in its order.
//! One that cannot go yet waits in the context's `deferred` list: the
//! provider answered `FI_EAGAIN`, or a fence stands before it. A fence of
//! a non-default context does not wait: it is an item that holds back the
//! context's later ones until every earlier one has completed (a write's
//! completion is its delivery where the provider accepts
//! `FI_DELIVERY_COMPLETE`, as for quiet), so a put-with-signal is a put, a
//! fence and the signal's atomic. Whoever drives the core (an application
//! thread waiting, or the progress thread) issues deferred items as they
//! become free to go. A blocking get or fetching atomic, on any context,
//! is issued only once its own context has nothing deferred and no
//! deferred item of any context targets the same PE, so it still sees
//! every earlier put of this PE to that PE.
//!
//! Back-pressure: the bytes a non-default context's puts hold (queued,
//! deferred or in flight, until their completion) are bounded by
//! [`HELD_BYTES_MAX`]; a put that would pass it takes the lock and goes
//! as a default context's does (a long one waits for the provider to read
//! the caller's buffer).
//!
//! # Why not an endpoint per context
//!
//! libfabric would let each context have its own transmit endpoint (or a
//! shared transmit context) with its own completion queue and counter, as
//! Sandia OpenSHMEM gives its contexts: a context's puts and its quiet
//! would then touch only its own objects, and threads would inject in
//! parallel. This conduit keeps one endpoint per PE instead, because:
//! active messages, and atomics the provider lacks or is not trusted with
//! (`tcp` lacks none, `shm` and `ofi_rxd` are not trusted), are engine
//! packets on that endpoint, so they would still share a lock; under
//! `ofi_rxm` (tcp, verbs) every endpoint connects to each peer on its
//! first use, which costs a handshake that needs the peer's progress per
//! context and peer, and hardware limits endpoints and completion queues
//! (a pool of them would still need a shared, locked fallback past its
//! size, as Sandia OpenSHMEM's transmit-context pool has); and with
//! manual-progress providers the progress thread and the barrier's
//! completion-counter check would have to cover every endpoint. The
//! price of the queue: the thread that holds the lock issues what others
//! queued, so calls into the provider stay serialized per PE; the
//! callers no longer wait, the endpoint is still one.

use super::*;
use crate::ctxq;
use std::sync::OnceLock;
use std::sync::mpsc::{self, Receiver, Sender};

/// Most bytes non-default contexts' put copies may hold at once.
pub(crate) const HELD_BYTES_MAX: u64 = 8 << 20;

/// A buffer the caller hands over until quiet, moved to whichever thread
/// issues the item. Copying it copies the address, not the buffer.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub(crate) *mut u8);

// SAFETY: `put_nbi`'s and `get_nbi`'s contracts make the buffer the
// conduit's until the quiet that completes the operation; only the thread
// holding the core's lock hands it to the provider, which reads or writes
// it until the completion.
unsafe impl Send for SendPtr {}

/// One operation of a non-default context, owning what it needs.
pub(crate) enum Item {
    /// `fi_write` of the conduit's copy of a put's bytes (at most one
    /// piece), counted in [`Shared::held`].
    Put {
        pe: usize,
        offset: usize,
        data: Vec<u8>,
    },
    /// `fi_write` of `len` bytes of the caller's buffer (`put_nbi`).
    PutFrom {
        pe: usize,
        offset: usize,
        src: SendPtr,
        len: usize,
    },
    /// `fi_read` of `len` bytes into the caller's buffer (`get_nbi`).
    GetInto {
        pe: usize,
        offset: usize,
        dst: SendPtr,
        len: usize,
    },
    /// A non-fetching atomic by the provider.
    Amo {
        pe: usize,
        offset: usize,
        op: AmoOp,
        width: AmoWidth,
        operand: u64,
    },
    /// An engine command (a non-fetching atomic as an active message)
    /// under its tag.
    Engine { pe: usize, tag: u64, cmd: Command },
    /// The context's later items wait until every earlier one completed.
    Fence,
}

impl Item {
    /// The PE it acts on (none for a fence).
    pub(crate) fn pe(&self) -> Option<usize> {
        match self {
            Item::Put { pe, .. }
            | Item::PutFrom { pe, .. }
            | Item::GetInto { pe, .. }
            | Item::Amo { pe, .. }
            | Item::Engine { pe, .. } => Some(*pe),
            Item::Fence => None,
        }
    }
}

/// An item of context `ctx` in its queue.
pub(crate) struct Queued {
    pub(crate) ctx: u32,
    pub(crate) item: Item,
}

/// One context id's state outside the core's lock.
#[derive(Default)]
pub(crate) struct Slot {
    /// Created and not destroyed (the default context always is).
    pub(crate) live: AtomicBool,
    /// Its queue (from the id's first creation on; the receiving end is
    /// the core's).
    pub(crate) queue: OnceLock<Sender<Queued>>,
}

/// What threads read and count without the core's lock.
pub(crate) struct Shared {
    /// Items sent to a context's queue and not yet taken by the core
    /// ([`crate::ctxq`]).
    pub(crate) queued: AtomicI64,
    /// Bytes of non-default contexts' put copies not yet completed.
    pub(crate) held: AtomicU64,
    /// The core recorded a failure ([`Core::fail`]).
    pub(crate) failed: AtomicBool,
    /// Every context id's slot.
    pub(crate) slots: Box<[Slot]>,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        let slots: Box<[Slot]> = (0..MAX_CONTEXTS).map(|_| Slot::default()).collect();
        slots[CtxId::DEFAULT.index()]
            .live
            .store(true, Ordering::Release);
        Shared {
            queued: AtomicI64::new(0),
            held: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            slots,
        }
    }

    /// Counts `len` more bytes of put copies if that stays within
    /// [`HELD_BYTES_MAX`] (a soft bound: threads may pass it together).
    pub(crate) fn reserve(&self, len: usize) -> bool {
        let len = len as u64;
        if self.held.load(Ordering::Relaxed).saturating_add(len) > HELD_BYTES_MAX {
            return false;
        }
        self.held.fetch_add(len, Ordering::Relaxed);
        true
    }

    /// `len` bytes of put copies were let go.
    pub(crate) fn release(&self, len: usize) {
        self.held.fetch_sub(len as u64, Ordering::Relaxed);
    }
}

/// The core's lock, held by this thread.
pub(crate) type Held<'a> = ctxq::Held<'a, Core>;

impl ctxq::Drain for Core {
    type With = ();

    fn drain_queues(&mut self, _: &()) {
        if self.sh.queued.load(Ordering::Acquire) <= 0 {
            return;
        }
        let mut n = 0;
        for i in 0..self.queues.len() {
            while let Ok(q) = self.queues[i].try_recv() {
                n += 1;
                if let Err(e) = self.accept(q.ctx, q.item) {
                    self.nbi_error(q.ctx, e);
                }
            }
        }
        self.sh.queued.fetch_sub(n, Ordering::AcqRel);
    }

    fn has_queues(&self) -> bool {
        !self.queues.is_empty()
    }
}

impl Core {
    /// Keeps the receiving end of a context's queue.
    pub(crate) fn add_queue(&mut self, rx: Receiver<Queued>) {
        self.queues.push(rx);
    }

    /// Takes `item` of context `owner`: issued now, unless the context has
    /// deferred items already or the provider has no room (then it waits
    /// in the context's `deferred` list). A fence is kept only while the
    /// context has something to wait for. The error of an item that was
    /// not issued is returned.
    pub(crate) fn accept(&mut self, owner: u32, item: Item) -> Result<()> {
        if let Some(e) = &self.failed {
            let e = e.clone();
            self.discard(&item);
            return Err(e);
        }
        let s = match self.ctx(owner) {
            Ok(s) => s,
            Err(e) => {
                self.discard(&item);
                return Err(e);
            }
        };
        let fence = matches!(item, Item::Fence);
        if !s.deferred.is_empty() || fence && s.outstanding > 0 {
            s.deferred.push_back(item);
            self.deferred += 1;
            return Ok(());
        }
        if fence {
            return Ok(());
        }
        if let Some(item) = self.try_item(owner, item)? {
            self.defer(owner, item);
        }
        Ok(())
    }

    fn defer(&mut self, owner: u32, item: Item) {
        if let Ok(s) = self.ctx(owner) {
            s.deferred.push_back(item);
            self.deferred += 1;
        } else {
            self.discard(&item);
        }
    }

    /// Forgets context `ctx` (destroyed), and any item it left deferred.
    pub(crate) fn remove_ctx(&mut self, ctx: u32) {
        if let Some(s) = self.ctxs.remove(&ctx) {
            for item in &s.deferred {
                self.discard(item);
            }
            self.deferred -= s.deferred.len();
        }
    }

    /// An item that will not be issued lets go of its bytes' count.
    fn discard(&self, item: &Item) {
        if let Item::Put { data, .. } = item {
            self.sh.release(data.len());
        }
    }

    /// Tries once to issue `item` (not a fence) of context `owner`; gives
    /// it back when it has to wait (`FI_EAGAIN`, or no room in the
    /// engine). Every field but a put's copy is `Copy`, so an item
    /// given back is the one taken.
    fn try_item(&mut self, owner: u32, item: Item) -> Result<Option<Item>> {
        Ok(match item {
            Item::Put { pe, offset, data } => {
                let r = self.try_issue(
                    "fi_write",
                    owner,
                    pe,
                    Hold::Copy(data),
                    Waiter::Nbi,
                    &mut |f, h, op| {
                        let (p, n) = h.bytes();
                        // SAFETY: the copy lives in the op until its
                        // completion; the range was checked.
                        unsafe { rma::write_to(f, pe, offset, p, n, op) }
                    },
                )?;
                match r {
                    Issued::Done(_) => None,
                    Issued::Again(Hold::Copy(data)) => Some(Item::Put { pe, offset, data }),
                    Issued::Again(_) => unreachable!("the hold given is given back"),
                }
            }
            Item::PutFrom {
                pe,
                offset,
                src,
                len,
            } => {
                let p = src.0.cast_const();
                let r = self.try_issue(
                    "fi_write",
                    owner,
                    pe,
                    Hold::None,
                    Waiter::Nbi,
                    &mut |f, _, op| {
                        // SAFETY: put_nbi's caller keeps the source intact
                        // until quiet; the range was checked.
                        unsafe { rma::write_to(f, pe, offset, p, len, op) }
                    },
                )?;
                match r {
                    Issued::Done(_) => None,
                    Issued::Again(_) => Some(item),
                }
            }
            Item::GetInto {
                pe,
                offset,
                dst,
                len,
            } => {
                let p = dst.0;
                let r = self.try_issue(
                    "fi_read",
                    owner,
                    pe,
                    Hold::None,
                    Waiter::Nbi,
                    &mut |f, _, op| {
                        // SAFETY: get_nbi's caller keeps the destination
                        // valid and untouched until quiet; range checked.
                        unsafe { rma::read_from(f, pe, offset, p, len, op) }
                    },
                )?;
                match r {
                    Issued::Done(_) => None,
                    Issued::Again(_) => Some(item),
                }
            }
            Item::Amo {
                pe,
                offset,
                op,
                width,
                operand,
            } => {
                let r = self.try_issue(
                    "fi_atomic",
                    owner,
                    pe,
                    Hold::Amo(AmoSlot::new(operand, 0)),
                    Waiter::Nbi,
                    // SAFETY: the hold becomes the op's, kept until its
                    // completion; the word was checked in range and aligned.
                    &mut |f, h, id| unsafe { rma::amo_to(f, pe, offset, op, width, h, id) },
                )?;
                match r {
                    Issued::Done(_) => None,
                    Issued::Again(_) => Some(item),
                }
            }
            Item::Engine { pe, tag, cmd } => {
                self.ctx(owner)?;
                if !self.engine_room() {
                    return Ok(Some(Item::Engine { pe, tag, cmd }));
                }
                self.submit(tag, owner, cmd, Waiter::Nbi);
                None
            }
            Item::Fence => None,
        })
    }

    /// Issues the contexts' deferred items that may go now, in each
    /// context's order. Whether any went.
    pub(crate) fn run_deferred(&mut self) -> bool {
        if self.deferred == 0 {
            return false;
        }
        let ids: Vec<u32> = self
            .ctxs
            .iter()
            .filter(|(_, s)| !s.deferred.is_empty())
            .map(|(&id, _)| id)
            .collect();
        let mut work = false;
        for id in ids {
            let Some(s) = self.ctxs.get_mut(&id) else {
                continue;
            };
            let mut list = std::mem::take(&mut s.deferred);
            while let Some(item) = list.pop_front() {
                if matches!(item, Item::Fence) {
                    if self.ctxs.get(&id).is_some_and(|s| s.outstanding > 0) {
                        list.push_front(item);
                        break;
                    }
                    self.deferred -= 1;
                    work = true;
                    continue;
                }
                match self.try_item(id, item) {
                    Ok(None) => {
                        self.deferred -= 1;
                        work = true;
                    }
                    Ok(Some(item)) => {
                        list.push_front(item);
                        break;
                    }
                    Err(e) => {
                        self.deferred -= 1;
                        self.nbi_error(id, e);
                        work = true;
                    }
                }
            }
            match self.ctxs.get_mut(&id) {
                Some(s) => s.deferred = list,
                None => {
                    for item in &list {
                        self.discard(item);
                    }
                    self.deferred -= list.len();
                }
            }
        }
        work
    }

    /// Whether an operation of context `ctx` to `pe` may be issued now:
    /// the context has nothing deferred, and, for a `blocking` one (a get
    /// or fetching atomic), no deferred item of any context targets `pe`.
    #[inline]
    pub(crate) fn clear_for(&self, ctx: u32, pe: usize, blocking: bool) -> bool {
        if self.deferred == 0 {
            return true;
        }
        if self.ctxs.get(&ctx).is_some_and(|s| !s.deferred.is_empty()) {
            return false;
        }
        !blocking
            || !self
                .ctxs
                .values()
                .any(|s| s.deferred.iter().any(|i| i.pe() == Some(pe)))
    }
}

impl OfiConduit {
    /// Takes the core's lock, and with it the contexts' queued items.
    pub(crate) fn lock(&self) -> Held<'_> {
        ctxq::lock(&self.core, &(), &self.sh.queued)
    }

    /// As [`OfiConduit::lock`], if no other thread holds it.
    pub(crate) fn try_lock(&self) -> Option<Held<'_>> {
        ctxq::try_lock(&self.core, &(), &self.sh.queued)
    }

    /// The slot of context `ctx`, if it exists (no lock).
    #[inline]
    pub(crate) fn slot(&self, ctx: CtxId) -> Result<&Slot> {
        match self.sh.slots.get(ctx.index()) {
            Some(s) if s.live.load(Ordering::Acquire) => Ok(s),
            _ => Err(ConduitError::NoContext { ctx: ctx.0 }),
        }
    }

    /// Fails with the PE's failure, or if the conduit was finalized; takes
    /// the lock only then.
    #[inline]
    pub(crate) fn check_live(&self) -> Result<()> {
        if self.sh.failed.load(Ordering::Acquire) || self.finalized.load(Ordering::Acquire) {
            return self.live(&self.lock());
        }
        Ok(())
    }

    /// Issues `items` of non-default context `ctx` (slot `slot`): from this
    /// thread if the core's lock is free, else through the context's queue
    /// for the thread that holds it. Never waits for the lock.
    pub(crate) fn issue_ctx(
        &self,
        ctx: CtxId,
        slot: &Slot,
        items: impl IntoIterator<Item = Item>,
    ) -> Result<()> {
        debug_assert!(ctx != CtxId::DEFAULT);
        if let Some(mut c) = self.try_lock() {
            let mut r = Ok(());
            for item in items {
                match r {
                    Ok(()) => r = c.accept(ctx.0, item),
                    Err(_) => c.discard(&item),
                }
            }
            return r;
        }
        let Some(tx) = slot.queue.get() else {
            // No queue (ctx_create makes one): wait for the lock instead.
            let mut c = self.lock();
            for item in items {
                c.accept(ctx.0, item)?;
            }
            return Ok(());
        };
        let mut n = 0;
        for item in items {
            if let Err(mpsc::SendError(q)) = tx.send(Queued { ctx: ctx.0, item }) {
                // The core (the receiving end) outlives the conduit's
                // calls; should it not, the item waits for the lock.
                self.lock().accept(q.ctx, q.item)?;
                continue;
            }
            n += 1;
        }
        ctxq::queued(&self.core, &(), &self.sh.queued, n);
        Ok(())
    }

    /// The copy of a put of `src` to `pe` at `offset` on non-default
    /// context `ctx` as items of one provider message each, if the bytes
    /// held stay within [`HELD_BYTES_MAX`].
    pub(crate) fn put_copies(&self, pe: usize, offset: usize, src: &[u8]) -> Option<Vec<Item>> {
        if !self.sh.reserve(src.len()) {
            return None;
        }
        let piece = self.piece;
        Some(
            src.chunks(piece)
                .enumerate()
                .map(|(k, part)| Item::Put {
                    pe,
                    offset: offset + k * piece,
                    data: part.to_vec(),
                })
                .collect(),
        )
    }
}

/// A new queue for a context slot: the sending end for the slot, the
/// receiving end for the core.
pub(crate) fn channel() -> (Sender<Queued>, Receiver<Queued>) {
    mpsc::channel()
}
