//! Which conduits exist: the one list ([`with_conduits!`]) and
//! [`ConduitKind`], made from it.
//!
//! A new conduit is one line in `with_conduits!` — its enum variant, its
//! name, the cargo feature that builds it and its type, and for a network
//! conduit that can carry the traffic between hosts, `routed` and the name
//! of its routed variant (`spec/conduit.md` §10) — plus a module
//! implementing the traits of [`crate::contract`] and a cargo feature in
//! `conduits/Cargo.toml` (added to `default`). The same list yields
//! [`ConduitKind`] here (with `FromStr`, `Display`, [`ConduitKind::ALL`])
//! and, in `registry`, [`crate::AnyConduit`] with the static dispatch of
//! every contract trait. A conduit whose feature is off is still a
//! [`ConduitKind`] (its name parses), but attaching to it fails naming the
//! feature.

use crate::error::{ConduitError, Result};
use gasnet_core::config::ConfigValue;

/// Calls macro `$m` with the list of conduits: the one place that lists
/// them.
macro_rules! with_conduits {
    ($m:ident) => {
        $m! {
            /// Shared-memory emulator: every PE of the job on this host.
            Smp = "smp", feature "smp", smp::SmpConduit;
            /// UDP/IPv6 bridge: spans hosts; smp between PEs of one host.
            Ipv6 = "ipv6", feature "ipv6", ipv6::Ipv6Conduit, routed RoutedIpv6;
            /// FPGA board (or devsim) reached through its BARs.
            Fpga = "fpga", feature "fpga", fpga::FpgaConduit;
            /// libfabric (OFI) fabrics: verbs, cxi, efa, tcp, shm; smp
            /// between PEs of one host.
            Ofi = "ofi", feature "ofi", ofi::OfiConduit, routed RoutedOfi;
        }
    };
}
pub(crate) use with_conduits;

macro_rules! declare_kinds {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, feature $feature:literal, $module:ident :: $ty:ident
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
                    $( ConduitKind::$variant => declare_kinds!(@has $($routed)?), )*
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

    };
    (@has $routed:ident) => { true };
    (@has) => { false };
}

with_conduits!(declare_kinds);

impl Default for ConduitKind {
    /// The shared-memory emulator.
    fn default() -> Self {
        ConduitKind::Smp
    }
}

impl ConfigValue for ConduitKind {
    fn parse_value(s: &str) -> std::result::Result<ConduitKind, String> {
        s.parse()
            .map_err(|_| format!("a conduit: {}", ConduitKind::names()))
    }
    fn show_value(&self) -> String {
        self.name().to_string()
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
