//! The one place that lists the conduits.
//!
//! [`declare_conduits!`] turns one line per conduit — its enum variant, its
//! name, the cargo feature that builds it and its type — into
//! [`ConduitKind`] (with `FromStr`, `Display`, [`ConduitKind::ALL`]),
//! [`AnyConduit`] (one variant per *built* conduit), [`AnyConduit::attach`],
//! [`AnyConduit::kind`] and the static dispatch of every contract trait. A
//! new conduit is a module implementing the traits of [`crate::contract`],
//! a cargo feature in `conduits/Cargo.toml` (added to `default`), and one
//! line below. A conduit whose feature is off is still a [`ConduitKind`]
//! (its name parses), but attaching to it fails naming the feature.
//!
//! A network conduit that can carry the traffic between hosts of a job
//! whose hosts run several PEs each (`spec/conduit.md` §10) names, after
//! `routed`, a second variant of [`AnyConduit`]: the conduit routed by
//! target PE with smp within a host ([`crate::route::Routed`]), which
//! [`AnyConduit::attach`] chooses when some PEs share a host. Its type
//! implements [`crate::route::OffNode`].

// Without any conduit feature some of these go unused.
#[allow(unused_imports)]
use crate::contract::{
    ActiveMessages, CtxId, JobBootstrap, Lifecycle, Rma, SegmentBacking, SegmentRequest, Segments,
    SignalOp,
};
use crate::error::{ConduitError, Result};
use crate::job::JobEnv;
use crate::{AmoOp, AmoWidth, Category, HandlerFn};

macro_rules! declare_conduits {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, feature $feature:literal, $ty:path
            $(, routed $routed:ident)?;
    )*) => {
        /// Which transport a job uses (`FSHMEM_CONDUIT`, `oshrun --conduit`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ConduitKind {
            $( $(#[$doc])* $variant, )*
        }

        impl ConduitKind {
            /// Every conduit, built or not, in declaration order.
            pub const ALL: &'static [ConduitKind] = &[$( ConduitKind::$variant, )*];

            /// Its name (`smp`, `ipv6`, ...).
            pub const fn name(self) -> &'static str {
                match self { $( ConduitKind::$variant => $name, )* }
            }

            /// The cargo feature of `conduits` that builds it.
            pub const fn feature(self) -> &'static str {
                match self { $( ConduitKind::$variant => $feature, )* }
            }

            /// Whether this build contains it.
            pub const fn is_built(self) -> bool {
                match self { $( ConduitKind::$variant => cfg!(feature = $feature), )* }
            }

            /// Whether a job on it routes operations between PEs of one host
            /// through shared memory (`spec/conduit.md` §10): the network
            /// conduits.
            pub const fn routes(self) -> bool {
                match self {
                    $( ConduitKind::$variant => declare_conduits!(@has $($routed)?), )*
                }
            }

            /// The names of all conduits, for messages: `smp, ipv6, fpga or ofi`.
            pub fn names() -> String {
                let v: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
                match v.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        format!("{} or {last}", rest.join(", "))
                    }
                    _ => v.join(""),
                }
            }
        }

        impl std::str::FromStr for ConduitKind {
            type Err = ConduitError;
            fn from_str(s: &str) -> Result<Self> {
                let t = s.trim().to_ascii_lowercase();
                $( if t == $name { return Ok(ConduitKind::$variant); } )*
                Err(ConduitError::Bootstrap(format!(
                    "FSHMEM_CONDUIT={s:?} is not a conduit (expected {})",
                    ConduitKind::names()
                )))
            }
        }

        impl std::fmt::Display for ConduitKind {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        declare_conduits!(@any
            $(
                $variant [feature = $feature] ($ty)
                $( $routed [all(feature = "smp", feature = $feature)]
                    (crate::route::Routed<crate::smp::SmpConduit, $ty>) )?
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
                settings: &crate::Settings,
            ) -> Result<AnyConduit> {
                crate::wait::set_timeout(settings.wait_timeout);
                match job.conduit {
                    $(
                        #[cfg(feature = $feature)]
                        ConduitKind::$variant => declare_conduits!(
                            @attach $variant $ty [$($routed)?] feature $feature, job, segment, settings
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
    (@any $( $v:ident [$cfg:meta] ($t:ty) )*) => {
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
            /// Leaves the job ([`Lifecycle::finalize`]). Collective.
            pub fn finalize(&self) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.finalize(), )* }
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

        impl Rma for AnyConduit {
            fn ctx_create(&self) -> Result<CtxId> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.ctx_create(), )* }
            }
            fn ctx_destroy(&self, ctx: CtxId) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.ctx_destroy(ctx), )* }
            }
            #[inline(always)]
            fn put(&self, ctx: CtxId, pe: usize, offset: usize, src: &[u8]) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.put(ctx, pe, offset, src), )* }
            }
            #[inline(always)]
            unsafe fn put_nbi(&self, ctx: CtxId, pe: usize, offset: usize, src: *const u8, len: usize) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    // SAFETY: the caller upholds put_nbi's contract, passed on unchanged.
                    AnyConduit::$v(ref c) => unsafe { c.put_nbi(ctx, pe, offset, src, len) },
                )* }
            }
            #[inline(always)]
            fn get(&self, ctx: CtxId, pe: usize, offset: usize, dst: &mut [u8]) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.get(ctx, pe, offset, dst), )* }
            }
            #[inline(always)]
            unsafe fn get_nbi(&self, ctx: CtxId, pe: usize, offset: usize, dst: *mut u8, len: usize) -> Result<()> {
                match *self { $(
                    #[cfg($cfg)]
                    // SAFETY: the caller upholds get_nbi's contract, passed on unchanged.
                    AnyConduit::$v(ref c) => unsafe { c.get_nbi(ctx, pe, offset, dst, len) },
                )* }
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
                match *self { $(
                    #[cfg($cfg)]
                    AnyConduit::$v(ref c) => c.atomic(ctx, pe, offset, op, width, operand, compare),
                )* }
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
                match *self { $(
                    #[cfg($cfg)]
                    AnyConduit::$v(ref c) => c.put_signal(ctx, pe, offset, src, sig_offset, sig_op, sig_value),
                )* }
            }
            #[inline(always)]
            fn fence(&self, ctx: CtxId) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.fence(ctx), )* }
            }
            #[inline(always)]
            fn quiet(&self, ctx: CtxId) -> Result<()> {
                match *self { $( #[cfg($cfg)] AnyConduit::$v(ref c) => c.quiet(ctx), )* }
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

// The conduits. Add a line here (and a feature in Cargo.toml) to add one.
declare_conduits! {
    /// Shared-memory emulator: every PE of the job on this host.
    Smp = "smp", feature "smp", crate::smp::SmpConduit;
    /// UDP/IPv6 bridge: spans hosts; smp between PEs of one host.
    Ipv6 = "ipv6", feature "ipv6", crate::ipv6::Ipv6Conduit, routed RoutedIpv6;
    /// FPGA board (or devsim) reached through its BARs.
    Fpga = "fpga", feature "fpga", crate::fpga::FpgaConduit;
    /// libfabric (OFI) fabrics: verbs, cxi, efa, tcp, shm; smp between
    /// PEs of one host.
    Ofi = "ofi", feature "ofi", crate::ofi::OfiConduit, routed RoutedOfi;
}

impl Default for ConduitKind {
    /// The shared-memory emulator.
    fn default() -> Self {
        ConduitKind::Smp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_list_the_choices() {
        for k in ConduitKind::ALL {
            assert_eq!(k.name().parse::<ConduitKind>().unwrap(), *k);
            assert_eq!(
                k.to_string().to_uppercase().parse::<ConduitKind>().unwrap(),
                *k
            );
            assert!(k.is_built(), "{k} is on by default");
        }
        let e = "tcp".parse::<ConduitKind>().unwrap_err().to_string();
        assert!(e.contains("FSHMEM_CONDUIT=\"tcp\""), "{e}");
        assert!(e.contains("smp, ipv6, fpga or ofi"), "{e}");
    }
}
