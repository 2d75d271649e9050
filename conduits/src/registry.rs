//! [`AnyConduit`]: every built conduit behind one type, made from the one
//! list of `kinds` (`with_conduits!`): one variant per *built* conduit,
//! [`AnyConduit::attach`], [`AnyConduit::kind`] and the static dispatch of
//! every contract trait, by `match` (no `dyn`, no `Box`).
//!
//! A network conduit that can carry the traffic between hosts of a job
//! whose hosts run several PEs each (`spec/conduit.md` §10) names, after
//! `routed` in that list, a second variant of [`AnyConduit`]: the conduit
//! routed by target PE with smp within a host ([`crate::route::Routed`]),
//! which [`AnyConduit::attach`] chooses when some PEs share a host. Its
//! type implements [`crate::route::OffNode`].

// Without any conduit feature some of these go unused.
use crate::config::Settings;
#[allow(unused_imports)]
use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result};
use crate::job::JobEnv;
use crate::kinds::{ConduitKind, with_conduits};
use gasnet_core::{AmoOp, AmoWidth, Category, HandlerFn};

/// The body of one of `Rma for AnyConduit`'s hot operations: `$m` on
/// smp, inline; on a routed variant (listed with its cfg predicate),
/// inline when `Routed::hot` finds the target on this host (`$amo`: an
/// atomic or a signal), its errors lifted to job ranks; anything else
/// through the out-of-line `$cold`. `$args` are the arguments after the
/// context and the PE, in parentheses.
///
/// Every arm but smp's is marked `cold_path`, so that the `match` tests
/// for smp first: without the hint the compiler tested the routed variants
/// first, and smp's 8-byte get, a few nanoseconds, paid two more
/// comparisons (1.20x the get of da691ba, whose `AnyConduit` had three
/// variants; 1.01x with the hint, `bench/ab.sh`, 7 alternating runs). A
/// routed job's on-node get pays about 4% for it.
macro_rules! dispatch_hot {
    ($self:ident, [$( $h:ident [$hcfg:meta] )*], $ctx:ident, $pe:ident, $amo:expr,
        $m:ident, $cold:ident $args:tt) => {
        match *$self {
            #[cfg(feature = "smp")]
            AnyConduit::Smp(ref c) => call_with!(c.$m, $ctx, $pe, $args),
            $(
                #[cfg($hcfg)]
                AnyConduit::$h(ref c) => {
                    core::hint::cold_path();
                    match c.hot($ctx, $pe, $amo) {
                        Some((on, l)) => call_with!(on.$m, $ctx, l, $args).map_err(|e| c.lift(e)),
                        None => call_with!($self.$cold, $ctx, $pe, $args),
                    }
                }
            )*
            #[allow(unreachable_patterns)]
            _ => {
                core::hint::cold_path();
                call_with!($self.$cold, $ctx, $pe, $args)
            }
        }
    };
}

/// `$r.$m(ctx, pe, args...)`, for `dispatch_hot!` (whose argument list
/// is one token tree, so that it can be used inside a repetition).
macro_rules! call_with {
    ($r:ident . $m:ident, $ctx:expr, $pe:expr, ($($a:expr),*)) => {
        $r.$m($ctx, $pe, $($a),*)
    };
}

macro_rules! declare_dispatch {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, feature $feature:literal, $module:ident :: $ty:ident
            $(, routed $routed:ident)?;
    )*) => {
        declare_dispatch!(@any
            // The routed variants, whose on-node operations are inlined beside smp's.
            [ $( $( $routed [all(feature = "smp", feature = $feature)] )? )* ]
            $(
                $variant [feature = $feature] (crate::$module::$ty)
                $( $routed [all(feature = "smp", feature = $feature)]
                    (crate::route::Routed<crate::smp::SmpConduit, crate::$module::$ty>) )?
            )*
        );
        impl AnyConduit {
            /// Attaches to the job `job` describes, with the segment
            /// `segment` asks for, through the conduit `job.conduit` names,
            /// configured by `settings` (which also sets the process-wide
            /// wait timeout, [`crate::wait::set_timeout`]). A network
            /// conduit routes between PEs of one host through smp
            /// (`spec/conduit.md` §10) unless no two PEs share a host or
            /// `settings.route` is off. Collective over the job.
            #[allow(unused_variables)]
            pub fn attach(
                job: &JobEnv,
                segment: SegmentRequest,
                settings: &Settings,
            ) -> Result<AnyConduit> {
                crate::wait::set_timeout(settings.wait_timeout);
                match job.conduit {
                    $(
                        #[cfg(feature = $feature)]
                        ConduitKind::$variant => declare_dispatch!(
                            @attach $variant crate::$module::$ty [$($routed)?] feature $feature, job, segment, settings
                        ),
                    )*
                    #[allow(unreachable_patterns)]
                    other => Err(ConduitError::Bootstrap(format!(
                        "the {other} conduit is not built in: rebuild with the cargo feature \
                         `conduits/{}`", other.feature()
                    ))),
                }
            }

            /// Which conduit this is (for a routed job, the off-node one).
            pub fn kind(&self) -> ConduitKind {
                match *self {
                    $(
                        #[cfg(feature = $feature)]
                        AnyConduit::$variant(_) => ConduitKind::$variant,
                        $(
                            #[cfg(all(feature = "smp", feature = $feature))]
                            AnyConduit::$routed(_) => ConduitKind::$variant,
                        )?
                    )*
                }
            }
        }
    };

    (@has $routed:ident) => { true };
    (@has) => { false };

    (@attach $variant:ident $ty:path [] feature $feature:literal,
        $job:ident, $segment:ident, $settings:ident) => {
        Ok(AnyConduit::$variant(<$ty as Lifecycle>::attach($job, $segment, $settings)?))
    };
    (@attach $variant:ident $ty:path [$routed:ident] feature $feature:literal,
        $job:ident, $segment:ident, $settings:ident) => {{
        #[cfg(feature = "smp")]
        let r = match crate::route::attach::<crate::smp::SmpConduit, $ty>($job, $segment, $settings)? {
            crate::route::Attached::Plain(c) => AnyConduit::$variant(c),
            crate::route::Attached::Routed(c) => AnyConduit::$routed(c),
        };
        #[cfg(not(feature = "smp"))]
        let r = AnyConduit::$variant(<$ty as Lifecycle>::attach($job, $segment, $settings)?);
        Ok(r)
    }};

    // AnyConduit and the static dispatch of every trait, over the variants
    // (leaf and routed) listed with their cfg predicate and type.
    (@any [ $( $h:ident [$hcfg:meta] )* ] $( $v:ident [$cfg:meta] ($t:ty) )*) => {
        /// Every built conduit behind one type, dispatched statically by
        /// `match` so that hot paths inline: one variant per conduit, and
        /// one per network conduit routed by target PE with smp within a
        /// host ([`crate::route::Routed`]).
        // One AnyConduit exists per process; its size does not matter, the
        // indirection a Box would add on every call does.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug)]
        pub enum AnyConduit {
            $( #[cfg($cfg)] #[doc = concat!("`", stringify!($t), "`.")] $v($t), )*
        }

        impl AnyConduit {
            /// Leaves the job ([`Lifecycle::finalize`]). Collective. Once
            /// left, the PE's claim on the job id goes
            /// ([`crate::job_lock::release_for_pe`]).
            pub fn finalize(&self) -> Result<()> {
                let r = match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.finalize(), )* };
                if r.is_ok() {
                    crate::job_lock::release_for_pe();
                }
                r
            }

            /// Ends the whole job ([`Lifecycle::global_exit`]).
            pub fn global_exit(&self, status: i32) -> ! {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.global_exit(status), )* }
            }

            /// What the conduit uses, for `SHMEM_INFO` ([`Lifecycle::describe`]).
            pub fn describe(&self) -> String {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.describe(), )* }
            }
        }

        impl Segments for AnyConduit {
            #[inline]
            fn rank(&self) -> usize {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.rank(), )* }
            }
            #[inline]
            fn size(&self) -> usize {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.size(), )* }
            }
            #[inline]
            fn segment_len(&self) -> usize {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.segment_len(), )* }
            }
            #[inline]
            fn local_segment(&self) -> *mut u8 {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.local_segment(), )* }
            }
            #[inline]
            fn peer_segment(&self, pe: usize) -> Option<*mut u8> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.peer_segment(pe), )* }
            }
            fn segment_backing(&self) -> Option<SegmentBacking> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.segment_backing(), )* }
            }
            fn host_of(&self, pe: usize) -> usize {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.host_of(pe), )* }
            }
        }

        // The hot calls of the conduits that reach no peer through memory,
        // out of line: `Rma for AnyConduit` inlines smp's operations and,
        // for the routed variants, their operations to a PE of this host on
        // the default context (smp's, after one table lookup:
        // `Routed::hot`), and calls these for the rest. Those operations
        // cost microseconds; a call is nothing to them. An 8-byte get from
        // a PE of the host in a routed job went from 1.27x to 1.06-1.23x
        // smp's (bench/hosts/run.sh, medians of 3 and 5 rounds); smp's own
        // operations are unchanged.
        impl AnyConduit {
            #[inline(never)]
            fn cold_put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.put(ctx, pe, offset, src), )* }
            }

            #[inline(never)]
            unsafe fn cold_put_nbi(&self, ctx: CtxId, pe: usize, offset: usize, src: *const u8, len: usize) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    // SAFETY: the caller upholds put_nbi's contract, passed on unchanged.
                    AnyConduit::$v(ref c) => unsafe { c.put_nbi(ctx, pe, offset, src, len) },
                )* }
            }

            #[inline(never)]
            unsafe fn cold_put_from(&self, ctx: CtxId, pe: usize, offset: usize, src: *const u8, len: usize) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    // SAFETY: the caller upholds put_from's contract, passed on unchanged.
                    AnyConduit::$v(ref c) => unsafe { c.put_from(ctx, pe, offset, src, len) },
                )* }
            }

            #[inline(never)]
            unsafe fn cold_get_into(&self, ctx: CtxId, pe: usize, offset: usize, dst: *mut u8, len: usize) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    // SAFETY: the caller upholds get_into's contract, passed on unchanged.
                    AnyConduit::$v(ref c) => unsafe { c.get_into(ctx, pe, offset, dst, len) },
                )* }
            }

            #[inline(never)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn cold_put_signal_from(
                &self,
                ctx: CtxId,
                pe: usize,
                offset: usize,
                src: *const u8,
                len: usize,
                sig_offset: usize,
                sig_op: SignalOp,
                sig_value: u64,
            ) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    // SAFETY: the caller upholds put_signal_from's contract, passed on unchanged.
                    AnyConduit::$v(ref c) => unsafe {
                        c.put_signal_from(ctx, pe, offset, src, len, sig_offset, sig_op, sig_value)
                    },
                )* }
            }

            #[inline(never)]
            fn cold_get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.get(ctx, pe, offset, dst), )* }
            }

            #[inline(never)]
            unsafe fn cold_get_nbi(&self, ctx: CtxId, pe: usize, offset: usize, dst: *mut u8, len: usize) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    // SAFETY: the caller upholds get_nbi's contract, passed on unchanged.
                    AnyConduit::$v(ref c) => unsafe { c.get_nbi(ctx, pe, offset, dst, len) },
                )* }
            }

            #[inline(never)]
            #[allow(clippy::too_many_arguments)]
            fn cold_atomic(
                &self,
                ctx: CtxId,
                pe: usize,
                offset: usize,
                op: AmoOp,
                width: AmoWidth,
                operand: u64,
                compare: u64,
            ) -> Result<u64> {
                match *self { $(
                    #[cfg($cfg)]
                    AnyConduit::$v(ref c) => c.atomic(ctx, pe, offset, op, width, operand, compare),
                )* }
            }

            #[inline(never)]
            #[allow(clippy::too_many_arguments)]
            fn cold_put_signal(
                &self,
                ctx: CtxId,
                pe: usize,
                offset: usize,
                src: &[u8],
                sig_offset: usize,
                sig_op: SignalOp,
                sig_value: u64,
            ) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    AnyConduit::$v(ref c) => c.put_signal(ctx, pe, offset, src, sig_offset, sig_op, sig_value),
                )* }
            }

            #[inline(never)]
            fn cold_fence(&self, ctx: CtxId) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.fence(ctx), )* }
            }

            #[inline(never)]
            fn cold_quiet(&self, ctx: CtxId) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.quiet(ctx), )* }
            }
        }

        impl Rma for AnyConduit {
            fn ctx_create(&self) -> Result<CtxId> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.ctx_create(), )* }
            }
            fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.ctx_destroy(ctx), )* }
            }
            #[inline(always)]
            fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
                dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, false, put, cold_put(offset, src))
            }

            #[inline(always)]
            unsafe fn put_nbi(&self, ctx: CtxId, pe: usize, offset: usize, src: *const u8, len: usize) -> Result<()> {
                // SAFETY: the caller upholds put_nbi's contract, passed on
                // unchanged (for a routed job's on-node call too: the
                // router's quiet of the default context quiets the on-node
                // conduit's).
                unsafe {
                    dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, false, put_nbi, cold_put_nbi(offset, src, len))
                }
            }

            #[inline(always)]
            unsafe fn put_from(&self, ctx: CtxId, pe: usize, offset: usize, src: *const u8, len: usize) -> Result<()> {
                // SAFETY: the caller upholds put_from's contract, passed on
                // unchanged (a routed job's on-node call reads the same
                // source).
                unsafe {
                    dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, false, put_from, cold_put_from(offset, src, len))
                }
            }

            #[inline(always)]
            unsafe fn get_into(&self, ctx: CtxId, pe: usize, offset: usize, dst: *mut u8, len: usize) -> Result<()> {
                // SAFETY: as for put_from.
                unsafe {
                    dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, false, get_into, cold_get_into(offset, dst, len))
                }
            }

            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn put_signal_from(
                &self,
                ctx: CtxId,
                pe: usize,
                offset: usize,
                src: *const u8,
                len: usize,
                sig_offset: usize,
                sig_op: SignalOp,
                sig_value: u64,
            ) -> Result<()> {
                // SAFETY: as for put_from.
                unsafe {
                    dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, true, put_signal_from,
                        cold_put_signal_from(offset, src, len, sig_offset, sig_op, sig_value))
                }
            }

            #[inline(always)]
            fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
                dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, false, get, cold_get(offset, dst))
            }

            #[inline(always)]
            unsafe fn get_nbi(&self, ctx: CtxId, pe: usize, offset: usize, dst: *mut u8, len: usize) -> Result<()> {
                // SAFETY: as for put_nbi.
                unsafe {
                    dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, false, get_nbi, cold_get_nbi(offset, dst, len))
                }
            }

            #[inline(always)]
            fn atomic(
                &self,
                ctx: CtxId,
                pe: usize,
                offset: usize,
                op: AmoOp,
                width: AmoWidth,
                operand: u64,
                compare: u64,
            ) -> Result<u64> {
                dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, true, atomic,
                    cold_atomic(offset, op, width, operand, compare))
            }

            #[inline(always)]
            fn put_signal(
                &self,
                ctx: CtxId,
                pe: usize,
                offset: usize,
                src: &[u8],
                sig_offset: usize,
                sig_op: SignalOp,
                sig_value: u64,
            ) -> Result<()> {
                dispatch_hot!(self, [$( $h [$hcfg] )*], ctx, pe, true, put_signal,
                    cold_put_signal(offset, src, sig_offset, sig_op, sig_value))
            }

            #[inline(always)]
            fn fence(&self, ctx: CtxId) -> Result<()> {
                match *self {
                    #[cfg(feature = "smp")]
                    AnyConduit::Smp(ref c) => c.fence(ctx),
                    $( #[cfg($hcfg)] AnyConduit::$h(ref c) => c.fence(ctx), )*
                    #[allow(unreachable_patterns)]
                    _ => self.cold_fence(ctx),
                }
            }

            #[inline(always)]
            fn quiet(&self, ctx: CtxId) -> Result<()> {
                match *self {
                    #[cfg(feature = "smp")]
                    AnyConduit::Smp(ref c) => c.quiet(ctx),
                    $( #[cfg($hcfg)] AnyConduit::$h(ref c) => c.quiet(ctx), )*
                    #[allow(unreachable_patterns)]
                    _ => self.cold_quiet(ctx),
                }
            }

            fn cpu_atomics(&self) -> bool {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.cpu_atomics(), )* }
            }
        }

        impl ActiveMessages for AnyConduit {
            fn am_request(
                &self,
                pe: usize,
                category: Category,
                handler: u8,
                args: &[u32],
                payload: &[u8],
                offset: usize,
            ) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    AnyConduit::$v(ref c) => c.am_request(pe, category, handler, args, payload, offset),
                )* }
            }
            fn register_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.register_handler(index, f), )* }
            }
            fn register_system_handler(&self, index: u8, f: HandlerFn) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.register_system_handler(index, f), )* }
            }
            #[inline]
            fn poll(&self) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.poll(), )* }
            }
            #[inline]
            fn poll_served(&self) -> Result<bool> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.poll_served(), )* }
            }
            fn compute_cores(&self) -> bool {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.compute_cores(), )* }
            }
        }

        impl JobBootstrap for AnyConduit {
            fn barrier(&self) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.barrier(), )* }
            }
            fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.exchange(mine), )* }
            }
        }
    };
}

with_conduits!(declare_dispatch);
