//! Routing by target PE (`spec/conduit.md` §10): a job whose PEs span
//! hosts reaches the PEs of its own host through an *on-node* conduit
//! (shared memory: [`crate::smp`]) and the others through an *off-node*
//! conduit (the network: [`crate::ipv6`], [`crate::ofi`]), as Sandia
//! OpenSHMEM (on-node CMA/XPMEM beside OFI) and GASNet-EX (PSHM inside
//! every network conduit) do.
//!
//! [`Routed`] is itself a conduit: it implements every trait of the
//! contract, so the layers above do not change. Its parts (the
//! operations live in `rma`, the active messages in `am`, the router
//! contexts in `ctx`):
//!
//! - [`hosts`]: host keys and the [`Hosts`] table, exchanged through the
//!   launcher's bootstrap before any conduit attaches (§10.1).
//! - Attach (§10.2, [`attach`]): the on-node conduit first, as a job of the
//!   host's PEs (rank = local rank, job id `<job>.h<host>`), allocating the
//!   segment; then the off-node conduit with the job's rank and size,
//!   *over* that segment's file ([`SegmentRequest::Over`]), so a put
//!   from another host lands in the bytes this host's PEs load and store.
//! - Operations (§10.3): a route table gives every target PE its path (one
//!   load and one branch); on-node calls name the local rank, and errors
//!   coming back name job ranks again. A context is a pair of contexts,
//!   one per conduit; `fence` and `quiet` cover both.
//! - Failure (§10.4): a peer failure the off-node conduit reports is
//!   recorded in the on-node conduit as this PE's cause
//!   ([`OnNode::note_cause`]), and an on-node failure traced to a PE of
//!   this host that recorded a PE of another host names that PE, so that
//!   the PEs of a host that see one of them leave name the PE that failed.
//! - Atomics (§10.5): when both conduits apply atomics as CPU atomic
//!   instructions on the mapped segment ([`crate::contract::Rma::cpu_atomics`]), each PE
//!   uses its own path; otherwise every atomic (and every signal update)
//!   goes through the off-node conduit, on-node targets included, so that
//!   one word never sees two kinds of atomic unit.
//! - Progress (§10.4): `poll` polls the on-node conduit on every call and
//!   the off-node one every [`OFF_POLL_EVERY`] calls: the off-node conduits
//!   are asynchronous (a progress thread serves their traffic), and a wait
//!   for an on-node store should not pay for a network poll on every step.
//!   Active-message handlers are registered in both conduits; the on-node
//!   one sees local ranks, so its handlers are wrapped to see job ranks.

pub mod hosts;

mod am;
mod ctx;
mod rma;

pub use hosts::{Hosts, MAX_KEY};

use crate::bootstrap::{self, Bootstrap};
use crate::config::RouteMode;
use crate::contract::{
    Conduit, CtxId, JobBootstrap, Lifecycle, SegmentBacking, SegmentRequest, Segments,
};
use crate::error::{ConduitError, Result};
use crate::job::JobEnv;
use crate::liveness::Cause;
use crate::{ConduitKind, Settings};
use ctx::{CtxPair, LIVE};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The off-node conduit is polled once every this many calls of
/// [`crate::contract::ActiveMessages::poll`] (the on-node one on every call). A network
/// poll is a system call on a socket that is empty while PEs of one host
/// talk: at 8, an intra-host ping-pong paid about 1.5 times a pure smp
/// one; at 64 it is within 1.1 times, and off-node traffic does not wait
/// for it (the off-node conduit's progress thread serves it).
pub const OFF_POLL_EVERY: u32 = 64;

/// Contexts a routed PE can have at once, the default one included.
pub const MAX_CONTEXTS: usize = 1024;

/// `route[pe]` of a PE on another host.
const OFF: u32 = u32::MAX;

/// A conduit that can carry the PEs of one host: it allocates the
/// segment, and lets the router raise the job's exit word without
/// leaving.
pub trait OnNode: Conduit {
    /// Attaches the PEs of one host as a job of their own (`job`: local
    /// rank, host size, the host's job id), each allocating a segment of
    /// `len` bytes.
    fn attach_host(job: &JobEnv, len: usize, settings: &Settings) -> Result<Self>;

    /// Records that PE `from` (its rank in the whole job) ends the job
    /// with `status`, so that every PE of this host leaves with it the
    /// next time it enters the conduit; returns (the router then reaches
    /// the other hosts).
    fn post_exit(&self, status: i32, from: usize);

    /// Records, where the PEs of this host find it, that this PE leaves
    /// because the PE `cause` names failed (the off-node conduit found
    /// it), unless this PE recorded a cause already: a PE of this host
    /// that finds this PE gone then names that PE (`spec/conduit.md` §7).
    fn note_cause(&self, cause: Cause);

    /// The PE of another host (its job rank) that PE `local` of this host
    /// recorded as the reason it left ([`OnNode::note_cause`]), if that is
    /// what it recorded.
    fn off_node_cause(&self, local: usize) -> Option<usize>;
}

/// A conduit that can carry the traffic between hosts: it joins through a
/// bootstrap the router already used (for the host keys), serving a
/// segment the on-node conduit allocated.
pub trait OffNode: Conduit {
    /// Attaches `job`'s PE through `boot`, with `segment`.
    fn attach_boot(
        job: &JobEnv,
        segment: SegmentRequest,
        boot: Box<dyn Bootstrap>,
        settings: &Settings,
    ) -> Result<Self>;
}

#[cfg(feature = "smp")]
impl OnNode for crate::smp::SmpConduit {
    fn attach_host(job: &JobEnv, len: usize, _settings: &Settings) -> Result<Self> {
        crate::smp::SmpConduit::attach_len(job, len)
    }

    fn post_exit(&self, status: i32, from: usize) {
        self.post_global_exit(status, from);
    }

    fn note_cause(&self, cause: Cause) {
        crate::smp::SmpConduit::note_cause(self, cause);
    }

    fn off_node_cause(&self, local: usize) -> Option<usize> {
        crate::smp::SmpConduit::off_node_cause(self, local)
    }
}

#[cfg(feature = "ipv6")]
impl OffNode for crate::ipv6::Ipv6Conduit {
    fn attach_boot(
        job: &JobEnv,
        segment: SegmentRequest,
        boot: Box<dyn Bootstrap>,
        settings: &Settings,
    ) -> Result<Self> {
        crate::ipv6::Ipv6Conduit::attach_with(job.rank, job.size, segment, boot, settings)
    }
}

#[cfg(feature = "ofi")]
impl OffNode for crate::ofi::OfiConduit {
    fn attach_boot(
        job: &JobEnv,
        segment: SegmentRequest,
        boot: Box<dyn Bootstrap>,
        settings: &Settings,
    ) -> Result<Self> {
        crate::ofi::OfiConduit::attach_job(job, segment, boot, settings)
    }
}

/// What [`attach`] built: the off-node conduit alone when no two PEs share
/// a host (or routing is off), a router otherwise.
#[derive(Debug)]
pub enum Attached<On, Off> {
    /// Every PE on a host of its own: the network conduit carries all.
    Plain(Off),
    /// Some PEs share a host.
    Routed(Routed<On, Off>),
}

/// Joins the job `job` describes on the network conduit `Off`, routing
/// through `On` between PEs of one host: builds the launcher's bootstrap,
/// exchanges host keys (`settings.host_key`, else [`hosts::default_key`]),
/// and attaches. Collective.
pub fn attach<On: OnNode, Off: OffNode>(
    job: &JobEnv,
    segment: SegmentRequest,
    settings: &Settings,
) -> Result<Attached<On, Off>> {
    let mut boot = bootstrap::open(&job.bootstrap, job.rank, job.size, settings)?;
    let hosts = if job.size == 1 || settings.route == RouteMode::Off {
        Hosts::separate(job.size)
    } else {
        let key = settings.host_key.clone().unwrap_or_else(hosts::default_key);
        hosts::exchange(boot.as_mut(), &key)?
    };
    if hosts.none_shared() {
        return Ok(Attached::Plain(Off::attach_boot(
            job, segment, boot, settings,
        )?));
    }
    Routed::attach_with(job, segment, settings, boot, hosts).map(Attached::Routed)
}

/// A job routed by target PE: `On` between PEs of this host, `Off`
/// between hosts. See the module documentation.
#[derive(Debug)]
pub struct Routed<On, Off> {
    on: On,
    off: Off,
    rank: usize,
    size: usize,
    /// Every PE's local rank if it is on this host, else [`OFF`].
    route: Box<[u32]>,
    /// The job rank of each local rank of this host.
    locals: Arc<[usize]>,
    hosts: Hosts,
    /// Atomics to on-node targets go on-node (both conduits apply CPU
    /// atomics), rather than all through `off`.
    atomics_on_node: bool,
    /// Router contexts, indexed by [`CtxId::index`]; slot 0 is the default.
    ctxs: Box<[CtxPair]>,
    polls: AtomicU32,
}

/// Where an operation to a PE goes.
#[derive(Clone, Copy)]
enum Path {
    /// This host: the on-node conduit, to this local rank.
    On(usize),
    /// Another host: the off-node conduit, to the job rank.
    Off,
}

impl<On: OnNode, Off: OffNode> Routed<On, Off> {
    /// Attaches with the bootstrap `boot` (already used for the host keys)
    /// and the hosts found. Collective over the job.
    pub fn attach_with(
        job: &JobEnv,
        segment: SegmentRequest,
        settings: &Settings,
        boot: Box<dyn Bootstrap>,
        hosts: Hosts,
    ) -> Result<Self> {
        let (rank, size) = (job.rank, job.size);
        if hosts.size() != size || rank >= size {
            return Err(ConduitError::Bootstrap(format!(
                "route: PE {rank} of {size}: the host table covers {} PEs",
                hosts.size()
            )));
        }
        let SegmentRequest::Own(len) = segment else {
            return Err(ConduitError::Unsupported(
                "route: attaching over a segment another conduit allocated",
            ));
        };
        let host = hosts.host_of(rank);
        let members = hosts.members(host).to_vec();
        let host_job = JobEnv {
            rank: hosts.local_rank(rank),
            size: members.len(),
            job_id: format!("{}.h{host}", job.job_id),
            conduit: ConduitKind::Smp,
            // The on-node conduit needs no bootstrap service: the host's
            // PEs meet in shared memory.
            bootstrap: bootstrap::Service::Missing,
        };
        let on = On::attach_host(&host_job, len, settings)?;
        let backing = on.segment_backing().ok_or(ConduitError::Unsupported(
            "route: the on-node conduit's segment has no backing file",
        ))?;
        let off = Off::attach_boot(job, SegmentRequest::Over(backing), boot, settings)?;
        if off.segment_len() != on.segment_len() {
            return Err(ConduitError::Bootstrap(format!(
                "route: PE {rank}: the off-node segment is {} bytes, the on-node one {}",
                off.segment_len(),
                on.segment_len()
            )));
        }
        let route = (0..size)
            .map(|pe| {
                if hosts.host_of(pe) == host {
                    hosts.local_rank(pe) as u32
                } else {
                    OFF
                }
            })
            .collect();
        let atomics_on_node = on.cpu_atomics() && off.cpu_atomics();
        Ok(Routed {
            on,
            off,
            rank,
            size,
            route,
            locals: members.into(),
            hosts,
            atomics_on_node,
            ctxs: (0..MAX_CONTEXTS).map(|_| CtxPair::default()).collect(),
            polls: AtomicU32::new(0),
        })
    }
}

impl<On, Off> Routed<On, Off> {
    /// The hosts of the job.
    pub fn hosts(&self) -> &Hosts {
        &self.hosts
    }

    /// The on-node conduit (this host's PEs, by local rank).
    pub fn on_node(&self) -> &On {
        &self.on
    }

    /// The off-node conduit (every PE, by job rank).
    pub fn off_node(&self) -> &Off {
        &self.off
    }

    #[inline(always)]
    fn path(&self, pe: usize) -> Result<Path> {
        match self.route.get(pe) {
            Some(&OFF) => Ok(Path::Off),
            Some(&l) => Ok(Path::On(l as usize)),
            None => Err(ConduitError::PeOutOfRange {
                pe,
                size: self.size,
            }),
        }
    }

    /// The on-node conduit and `pe`'s local rank when an operation on the
    /// default context `ctx` goes to a PE of this host: the part of every
    /// routed operation that [`crate::registry::AnyConduit`] inlines beside
    /// smp's (anything else is a call). `amo`: the operation is an atomic
    /// or carries a signal, which goes on-node only where both conduits
    /// apply CPU atomics.
    #[cfg_attr(
        not(all(feature = "smp", any(feature = "ipv6", feature = "ofi"))),
        allow(dead_code)
    )]
    #[inline(always)]
    pub(crate) fn hot(&self, ctx: CtxId, pe: usize, amo: bool) -> Option<(&On, usize)> {
        if ctx != CtxId::DEFAULT || (amo && !self.atomics_on_node) {
            return None;
        }
        match self.route.get(pe) {
            Some(&l) if l != OFF => Some((&self.on, l as usize)),
            _ => None,
        }
    }

    /// The pair of contexts router context `ctx` stands for.
    #[inline(always)]
    fn pair(&self, ctx: CtxId) -> Result<(CtxId, CtxId)> {
        if ctx == CtxId::DEFAULT {
            return Ok((CtxId::DEFAULT, CtxId::DEFAULT));
        }
        self.pair_slow(ctx)
    }

    #[cold]
    fn pair_slow(&self, ctx: CtxId) -> Result<(CtxId, CtxId)> {
        match self.ctxs.get(ctx.index()) {
            Some(p) if p.state.load(Ordering::Acquire) == LIVE => Ok((
                CtxId(p.on.load(Ordering::Relaxed)),
                CtxId(p.off.load(Ordering::Relaxed)),
            )),
            _ => Err(ConduitError::NoContext { ctx: ctx.0 }),
        }
    }

    /// Router context `ctx`'s slot; `ctx` was checked by [`Self::pair`].
    #[inline(always)]
    fn slot(&self, ctx: CtxId) -> &CtxPair {
        &self.ctxs[ctx.index()]
    }
}

impl<On: OnNode, Off> Routed<On, Off> {
    /// An error of the on-node conduit, whose PEs are local ranks, with
    /// job ranks instead. A failure it traced to a PE of this host that
    /// left because of a PE of another host ([`OnNode::off_node_cause`])
    /// names that PE.
    #[cold]
    pub(crate) fn lift(&self, e: ConduitError) -> ConduitError {
        let job = |l: usize| self.locals.get(l).copied().unwrap_or(l);
        match e {
            ConduitError::PeOutOfRange { pe, .. } => ConduitError::PeOutOfRange {
                pe: job(pe),
                size: self.size,
            },
            ConduitError::OutOfSegment {
                pe,
                offset,
                len,
                segment_len,
            } => ConduitError::OutOfSegment {
                pe: job(pe),
                offset,
                len,
                segment_len,
            },
            ConduitError::Misaligned { pe, offset, align } => ConduitError::Misaligned {
                pe: job(pe),
                offset,
                align,
            },
            ConduitError::PeerFailed { pe, reason } => match self.on.off_node_cause(pe) {
                Some(root) if root < self.size && root != self.rank => ConduitError::PeerFailed {
                    pe: root,
                    reason: format!("PE {} left the job after seeing it fail", job(pe)),
                },
                _ => ConduitError::PeerFailed {
                    pe: job(pe),
                    reason,
                },
            },
            other => other,
        }
    }

    /// An error of the off-node conduit, returned as it is. A peer's
    /// failure is first recorded in the on-node conduit as the reason
    /// this PE leaves ([`OnNode::note_cause`]): the PEs of this host may
    /// learn of it only from this PE's departure.
    #[cold]
    pub(crate) fn off_err(&self, e: ConduitError) -> ConduitError {
        if let ConduitError::PeerFailed { pe, .. } = e
            && pe != self.rank
        {
            match self.route.get(pe) {
                Some(&OFF) => self.on.note_cause(Cause::OffNode(pe)),
                Some(&l) => self.on.note_cause(Cause::OnNode(l as usize)),
                None => {}
            }
        }
        e
    }
}

impl<On: Conduit, Off: Conduit> Segments for Routed<On, Off> {
    #[inline]
    fn rank(&self) -> usize {
        self.rank
    }

    #[inline]
    fn size(&self) -> usize {
        self.size
    }

    #[inline]
    fn segment_len(&self) -> usize {
        self.on.segment_len()
    }

    #[inline]
    fn local_segment(&self) -> *mut u8 {
        self.on.local_segment()
    }

    /// The on-node conduit's view for PEs of this host, `None` for others.
    #[inline]
    fn peer_segment(&self, pe: usize) -> Option<*mut u8> {
        match self.path(pe) {
            Ok(Path::On(l)) => self.on.peer_segment(l),
            _ => None,
        }
    }

    fn segment_backing(&self) -> Option<SegmentBacking> {
        self.on.segment_backing()
    }

    fn host_of(&self, pe: usize) -> usize {
        if pe < self.size {
            self.hosts.host_of(pe)
        } else {
            pe
        }
    }
}

/// The off-node conduit's bootstrap may block in a system call (a PMI or
/// rendezvous barrier) without serving the on-node conduit, while a PE of
/// the same host still needs this PE to take its active messages (a full
/// inbound queue) before it can arrive. So every job-wide step first meets
/// the host's PEs in the on-node barrier, which serves the queue while it
/// waits; past it, no PE of the host issues more.
impl<On: OnNode, Off: Conduit> JobBootstrap for Routed<On, Off> {
    /// The host's barrier, then the off-node conduit's, which spans every
    /// PE, after this PE's on-node operations completed.
    fn barrier(&self) -> Result<()> {
        self.on.quiet(CtxId::DEFAULT).map_err(|e| self.lift(e))?;
        self.on.barrier().map_err(|e| self.lift(e))?;
        self.off.barrier().map_err(|e| self.off_err(e))
    }

    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.on.barrier().map_err(|e| self.lift(e))?;
        self.off.exchange(mine).map_err(|e| self.off_err(e))
    }
}

impl<On: OnNode, Off: OffNode> Lifecycle for Routed<On, Off> {
    /// Builds the bootstrap, exchanges host keys and attaches both
    /// conduits (a routed conduit even when no two PEs share a host).
    fn attach(job: &JobEnv, segment: SegmentRequest, settings: &Settings) -> Result<Self> {
        let mut boot = bootstrap::open(&job.bootstrap, job.rank, job.size, settings)?;
        let key = settings.host_key.clone().unwrap_or_else(hosts::default_key);
        let hosts = hosts::exchange(boot.as_mut(), &key)?;
        Self::attach_with(job, segment, settings, boot, hosts)
    }

    /// Quiets the on-node conduit and meets the host's PEs (see the note on
    /// `JobBootstrap` above), quiets and finalizes the off-node one (its
    /// barrier spans the job), then finalizes the on-node one.
    fn finalize(&self) -> Result<()> {
        self.on.quiet(CtxId::DEFAULT).map_err(|e| self.lift(e))?;
        self.on.barrier().map_err(|e| self.lift(e))?;
        self.off
            .quiet(CtxId::DEFAULT)
            .and_then(|()| self.off.finalize())
            .map_err(|e| self.off_err(e))?;
        self.on.finalize().map_err(|e| self.lift(e))
    }

    /// Raises this host's exit word, then ends the job through the
    /// off-node conduit, which reaches every PE.
    fn global_exit(&self, status: i32) -> ! {
        self.on.post_exit(status, self.rank);
        self.off.global_exit(status)
    }

    fn describe(&self) -> String {
        let off = self.off.describe();
        let host = self.hosts.host_of(self.rank);
        format!(
            "{}{}on-node shared memory among PEs {:?} of host {host} ({})",
            off,
            if off.is_empty() { "" } else { "; " },
            self.locals,
            self.hosts.describe()
        )
    }
}

#[cfg(all(test, feature = "smp"))]
mod tests {
    use super::*;
    use crate::smp::SmpConduit;

    /// The router of job rank `rank` around its host's conduit `on`, with
    /// no off-node conduit: what `lift` and `off_err` need.
    fn routed(rank: usize, on: SmpConduit, hosts: &Hosts) -> Routed<SmpConduit, ()> {
        let host = hosts.host_of(rank);
        let route = (0..hosts.size())
            .map(|pe| match hosts.host_of(pe) == host {
                true => hosts.local_rank(pe) as u32,
                false => OFF,
            })
            .collect();
        Routed {
            on,
            off: (),
            rank,
            size: hosts.size(),
            route,
            locals: hosts.members(host).to_vec().into(),
            hosts: hosts.clone(),
            atomics_on_node: true,
            ctxs: Box::new([CtxPair::default()]),
            polls: AtomicU32::new(0),
        }
    }

    /// Job ranks 1 and 3 share a host, 0 and 2 are off-node. PE 1 learns
    /// off-node that PE 0 failed and leaves; PE 3, waiting for it in the
    /// host's barrier, names PE 0, not PE 1, and records PE 0 too.
    #[test]
    fn a_failure_found_off_node_is_named_by_the_pes_of_the_host_that_see_its_finder_leave() {
        let hosts = Hosts::from_keys(&["a", "b", "a", "b"]);
        let id = format!("troute{}x{}", std::process::id(), line!());
        let host_job = |rank: usize| JobEnv {
            rank: hosts.local_rank(rank),
            size: 2,
            job_id: id.clone(),
            conduit: ConduitKind::Smp,
            bootstrap: bootstrap::Service::Missing,
        };
        let found = |pe: usize| ConduitError::PeerFailed {
            pe,
            reason: "it vanished".to_string(),
        };
        let (left, waited) = std::thread::scope(|s| {
            let finder = s.spawn(|| {
                let r = routed(
                    1,
                    SmpConduit::attach_len(&host_job(1), 4096).unwrap(),
                    &hosts,
                );
                let e = r.off_err(found(0));
                // A later failure does not replace the first.
                r.off_err(found(2));
                // `r` is dropped unfinalized: this PE leaves.
                (e, r.on.off_node_cause(0))
            });
            let waiter = s.spawn(|| {
                let r = routed(
                    3,
                    SmpConduit::attach_len(&host_job(3), 4096).unwrap(),
                    &hosts,
                );
                let e = r.on.barrier().map_err(|e| r.lift(e));
                (e, r.on.off_node_cause(1))
            });
            (finder.join().unwrap(), waiter.join().unwrap())
        });
        assert_eq!(left, (found(0), Some(0)));
        match waited {
            (Err(ConduitError::PeerFailed { pe: 0, reason }), Some(0)) => {
                assert_eq!(reason, "PE 1 left the job after seeing it fail");
            }
            other => panic!("expected PE 0 named and recorded, got {other:?}"),
        }
        assert!(crate::smp::job_files(&id).is_empty());
    }
}
