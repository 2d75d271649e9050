//! devsim's compute core: AM handlers `handlers::FIRST_COMPUTE..=255`
//! (224..=255) are dispatched here instead of to the host (`CAPS.COMPUTE`).
//!
//! The core is pluggable ([`ComputeCore`]); devsim ships [`GemmCore`], a
//! GEMM tile engine with the **Automatic Result Transfer** (ART) option of
//! FSHMEM's case study: while a tile is being computed, every `N` results
//! are sent to a peer board with puts, so the product streams to its
//! consumer during the computation instead of after it.
//!
//! The GEMM protocol (handler, arguments, reply) is
//! [`gasnet_core::compute`]'s, which hosts use too. Tiles queue and run one
//! after another; each board step computes at most [`RESULTS_PER_STEP`]
//! results so that the links stay served while the core computes.

use crate::window::Window;
use gasnet_core::NodeId;
use gasnet_core::cmd::MAX_TRANSFER;
use gasnet_core::compute::{
    ART_NONE, GEMM_ARGS, GEMM_ART_FAILED, GEMM_BAD, GEMM_OK, GEMM_RUN, Reject, Rejected,
};
use gasnet_core::engine::Memory;
use gasnet_core::handlers::{FIRST_COMPUTE, FIRST_USER};
use std::collections::VecDeque;

/// Most results one board step computes.
pub const RESULTS_PER_STEP: usize = 256;

/// Something the compute core asks the board to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Put the `len` bytes at `local` in this board's segment into `dst`'s
    /// segment at `offset` (a segment-path Put: the core has written the
    /// bytes, and leaves them alone until the put is done); report the
    /// outcome to [`ComputeCore::put_done`] with `id`.
    Put {
        /// The core's name for the put.
        id: u64,
        /// Destination board.
        dst: NodeId,
        /// Destination segment offset.
        offset: u64,
        /// Source: an offset in this board's segment.
        local: u64,
        /// Bytes.
        len: u32,
    },
    /// Send a Short AM reply to `dst`'s host handler.
    Reply {
        /// The requester.
        dst: NodeId,
        /// Its handler.
        handler: u8,
        /// Arguments.
        args: Vec<u32>,
    },
    /// A request the core could neither run nor answer was dropped: the
    /// board reports it to its host (`ERR_STATUS.COMPUTE`, `ERR_INFO` =
    /// [`Rejected::info`], `spec/registers.md` §4.4.1).
    Reject(Rejected),
}

/// What a compute core sees of its board.
#[derive(Debug)]
pub struct ComputeCtx<'a> {
    /// The board's segment.
    pub mem: Window,
    /// This board's node id.
    pub node: NodeId,
    /// Number of boards.
    pub nodes: usize,
    /// Where the core queues its actions.
    pub actions: &'a mut Vec<Action>,
}

/// A pluggable compute core.
pub trait ComputeCore: Send {
    /// A request for handler `handler` (224..=255) arrived from `src`.
    /// One the core can neither run nor answer is an [`Action::Reject`],
    /// never dropped silently.
    fn request(&mut self, ctx: &mut ComputeCtx<'_>, src: NodeId, handler: u8, args: &[u32]);
    /// Does a bounded amount of work; returns whether anything happened
    /// (not merely waiting for puts).
    fn step(&mut self, ctx: &mut ComputeCtx<'_>) -> bool;
    /// A put the core asked for completed (`ok`) or failed.
    fn put_done(&mut self, ctx: &mut ComputeCtx<'_>, id: u64, ok: bool);
    /// Whether the core has work in progress.
    fn busy(&self) -> bool;
}

#[derive(Debug)]
struct Tile {
    src: NodeId,
    a: u64,
    b: u64,
    c: u64,
    m: usize,
    n: usize,
    k: usize,
    art_every: usize,
    art_peer: Option<NodeId>,
    art_dst: u64,
    done_handler: u8,
    job: u32,
    /// Results computed so far (row-major index).
    next: usize,
    /// Index of the first result not yet sent by ART.
    art_from: usize,
    puts_pending: usize,
    status: u32,
}

/// The GEMM tile engine with Automatic Result Transfer.
#[derive(Debug, Default)]
pub struct GemmCore {
    queue: VecDeque<Tile>,
    next_id: u64,
    /// Tiles computed since start.
    pub tiles_done: u64,
    /// ART puts issued since start.
    pub art_puts: u64,
    /// Requests rejected since start ([`Action::Reject`]).
    pub rejected: u64,
}

impl GemmCore {
    /// An idle core.
    pub fn new() -> GemmCore {
        GemmCore::default()
    }

    /// A GEMM request's tile; or why not: a reason to reject it (it
    /// cannot be answered), or the reply handler and job to answer
    /// [`GEMM_BAD`] to.
    fn parse(
        src: NodeId,
        args: &[u32],
        nodes: usize,
        seg: u64,
    ) -> Result<Tile, Result<(u8, u32), Reject>> {
        if args.len() != GEMM_ARGS {
            return Err(Err(Reject::Arguments));
        }
        let done_handler = match u8::try_from(args[9]) {
            Ok(h) if (FIRST_USER..FIRST_COMPUTE).contains(&h) => h,
            _ => return Err(Err(Reject::ReplyHandler)),
        };
        let job = args[10];
        let bad = || Ok((done_handler, job));
        let (m, n, k) = (args[3] as usize, args[4] as usize, args[5] as usize);
        let fits = |off: u32, elems: usize| -> bool {
            (elems as u64)
                .checked_mul(8)
                .and_then(|b| b.checked_add(off as u64))
                .is_some_and(|end| end <= seg)
        };
        let shapes = m.checked_mul(k).zip(k.checked_mul(n)).zip(m.checked_mul(n));
        let Some(((mk, kn), mn)) = shapes else {
            return Err(bad());
        };
        if !(fits(args[0], mk) && fits(args[1], kn) && fits(args[2], mn)) {
            return Err(bad());
        }
        let art_peer = match args[7] {
            ART_NONE => None,
            p if (p as usize) < nodes => Some(p as NodeId),
            _ => return Err(bad()),
        };
        Ok(Tile {
            src,
            a: args[0] as u64,
            b: args[1] as u64,
            c: args[2] as u64,
            m,
            n,
            k,
            art_every: if art_peer.is_some() {
                args[6] as usize
            } else {
                0
            },
            art_peer,
            art_dst: args[8] as u64,
            done_handler,
            job,
            next: 0,
            art_from: 0,
            puts_pending: 0,
            status: GEMM_OK,
        })
    }

    fn flush_art(&mut self, ctx: &mut ComputeCtx<'_>, force: bool) {
        let Some(t) = self.queue.front_mut() else {
            return;
        };
        let Some(peer) = t.art_peer else {
            return;
        };
        let ready = t.next - t.art_from;
        if ready == 0 || (t.art_every > 0 && ready < t.art_every && !force) {
            return;
        }
        // One put per run, in pieces a command can carry.
        let mut from = t.art_from as u64 * 8;
        let end = t.next as u64 * 8;
        t.art_from = t.next;
        while from < end {
            let len = (end - from).min(MAX_TRANSFER as u64);
            t.puts_pending += 1;
            self.next_id += 1;
            self.art_puts += 1;
            ctx.actions.push(Action::Put {
                id: self.next_id,
                dst: peer,
                offset: t.art_dst + from,
                local: t.c + from,
                len: len as u32,
            });
            from += len;
        }
    }

    fn finish_if_done(&mut self, ctx: &mut ComputeCtx<'_>) {
        let done = self
            .queue
            .front()
            .is_some_and(|t| t.next == t.m * t.n && t.puts_pending == 0);
        if done && let Some(t) = self.queue.pop_front() {
            self.tiles_done += 1;
            ctx.actions.push(Action::Reply {
                dst: t.src,
                handler: t.done_handler,
                args: vec![t.job, t.status, (t.m * t.n) as u32],
            });
        }
    }
}

fn read_f64(mem: &Window, off: u64) -> f64 {
    let mut b = [0u8; 8];
    let _ = mem.read(off, &mut b);
    f64::from_le_bytes(b)
}

impl ComputeCore for GemmCore {
    fn request(&mut self, ctx: &mut ComputeCtx<'_>, src: NodeId, handler: u8, args: &[u32]) {
        let parsed = if handler == GEMM_RUN {
            GemmCore::parse(src, args, ctx.nodes, ctx.mem.len())
        } else {
            Err(Err(Reject::NoSuchHandler))
        };
        match parsed {
            Ok(t) => self.queue.push_back(t),
            Err(Ok((h, job))) => ctx.actions.push(Action::Reply {
                dst: src,
                handler: h,
                args: vec![job, GEMM_BAD, 0],
            }),
            Err(Err(reason)) => {
                self.rejected += 1;
                ctx.actions.push(Action::Reject(Rejected {
                    src,
                    handler,
                    nargs: args.len().min(u8::MAX as usize) as u8,
                    reason,
                }))
            }
        }
    }

    fn step(&mut self, ctx: &mut ComputeCtx<'_>) -> bool {
        let Some(t) = self.queue.front_mut() else {
            return false;
        };
        let total = t.m * t.n;
        let mut did = 0;
        let actions = ctx.actions.len();
        while t.next < total && did < RESULTS_PER_STEP {
            let (i, j) = (t.next / t.n, t.next % t.n);
            let mut s = 0.0;
            for x in 0..t.k {
                let a = read_f64(&ctx.mem, t.a + 8 * (i * t.k + x) as u64);
                let b = read_f64(&ctx.mem, t.b + 8 * (x * t.n + j) as u64);
                s += a * b;
            }
            let bytes = s.to_le_bytes();
            let _ = ctx.mem.write_shared(t.c + 8 * t.next as u64, &bytes);
            t.next += 1;
            did += 1;
            if t.art_every > 0 && t.next - t.art_from >= t.art_every {
                self.flush_art(ctx, false);
                return true;
            }
        }
        let finished = self.queue.front().is_some_and(|t| t.next == total);
        if finished {
            self.flush_art(ctx, true);
            self.finish_if_done(ctx);
        }
        // A tile that only waits for its ART puts did nothing.
        did > 0 || ctx.actions.len() > actions
    }

    fn put_done(&mut self, ctx: &mut ComputeCtx<'_>, _id: u64, ok: bool) {
        if let Some(t) = self.queue.front_mut() {
            t.puts_pending = t.puts_pending.saturating_sub(1);
            if !ok {
                t.status = GEMM_ART_FAILED;
            }
        }
        self.finish_if_done(ctx);
    }

    fn busy(&self) -> bool {
        !self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `request` on a fresh core over a 64 KiB segment of 2 nodes;
    /// returns the actions it asked for.
    fn actions_of(handler: u8, args: &[u32]) -> Vec<Action> {
        let mut seg = vec![0u64; 8192];
        // SAFETY: `seg` is 64 KiB, alive and unaliased until the end of this
        // function, and the window does not outlive it.
        let mem = unsafe { Window::new(seg.as_mut_ptr().cast(), 8 * seg.len() as u64) };
        let mut actions = Vec::new();
        let mut ctx = ComputeCtx {
            mem,
            node: 1,
            nodes: 2,
            actions: &mut actions,
        };
        GemmCore::new().request(&mut ctx, 0, handler, args);
        // The window is not used after this point; `seg` outlives it.
        drop(seg);
        actions
    }

    fn reject(handler: u8, nargs: u8, reason: Reject) -> Vec<Action> {
        vec![Action::Reject(Rejected {
            src: 0,
            handler,
            nargs,
            reason,
        })]
    }

    #[test]
    fn requests_it_cannot_answer_are_rejected_never_dropped() {
        let good = [0, 4096, 8192, 2, 2, 2, 0, ART_NONE, 0, 64, 9];
        // Another compute handler.
        assert_eq!(
            actions_of(GEMM_RUN + 1, &good),
            reject(GEMM_RUN + 1, 11, Reject::NoSuchHandler)
        );
        assert_eq!(actions_of(255, &[]), reject(255, 0, Reject::NoSuchHandler));
        // The wrong number of arguments.
        assert_eq!(
            actions_of(GEMM_RUN, &[7]),
            reject(GEMM_RUN, 1, Reject::Arguments)
        );
        assert_eq!(
            actions_of(GEMM_RUN, &[0; 12]),
            reject(GEMM_RUN, 12, Reject::Arguments)
        );
        // A reply handler the requester's host cannot run.
        for h in [0, 5, 63, 224, 255, 256, u32::MAX] {
            let mut a = good;
            a[9] = h;
            assert_eq!(
                actions_of(GEMM_RUN, &a),
                reject(GEMM_RUN, 11, Reject::ReplyHandler),
                "done handler {h}"
            );
        }
        // A bad range is answered: GEMM_BAD to the reply handler.
        let mut a = good;
        a[2] = u32::MAX;
        assert_eq!(
            actions_of(GEMM_RUN, &a),
            vec![Action::Reply {
                dst: 0,
                handler: 64,
                args: vec![9, GEMM_BAD, 0]
            }]
        );
        // A good tile is queued, nothing else.
        assert_eq!(actions_of(GEMM_RUN, &good), vec![]);
    }
}
