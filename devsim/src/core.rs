//! Which core a board runs, and the board loop written once for both.
//!
//! A board is its BAR files, its links and a core behind them. devsim has
//! two cores ([`CoreKind`]): the reference engine of `gasnet-core`
//! ([`crate::board::BoardModel`], the default) and, with the `rtl` cargo
//! feature, the Verilator model of the RTL core in `hw/`
//! ([`crate::rtl::RtlBoard`], driven cycle by cycle). Both implement
//! [`BoardCore`]: one step of work, saying whether anything happened; the
//! board loop ([`run`]) spins while there is work, then yields, then sleeps,
//! whichever core it drives.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// One board's core behind its BARs and links.
pub trait BoardCore: Send {
    /// One step of the board: host register writes taken, link packets
    /// moved, work done, registers and queues published. Returns whether
    /// anything happened (the loop then steps again at once).
    fn step(&mut self) -> bool;
}

/// The cores devsim can run (`devsim board --core`, from
/// `FSHMEM_DEVSIM_CORE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CoreKind {
    /// The reference engine of `gasnet-core` (the default).
    #[default]
    Engine,
    /// The Verilator model of the RTL core of `hw/` (the `rtl` feature).
    Rtl,
}

/// Whether this devsim was built with the RTL core (the `rtl` feature).
pub const RTL_AVAILABLE: bool = cfg!(feature = "rtl");

/// What devsim says when the RTL core is asked for but was not built in.
pub const RTL_MISSING: &str = "the RTL core (FSHMEM_DEVSIM_CORE=rtl, --core rtl) is not built \
     into this devsim: build it with the `rtl` feature (cargo build --release -p devsim \
     --features rtl, which makes devsim and devsim-rtl; needs Verilator 5 and a C++ compiler, \
     Debian package verilator)";

impl std::str::FromStr for CoreKind {
    type Err = String;
    fn from_str(s: &str) -> Result<CoreKind, String> {
        match s {
            "" | "engine" => Ok(CoreKind::Engine),
            "rtl" => Ok(CoreKind::Rtl),
            o => Err(format!("unknown core {o:?} (engine, rtl)")),
        }
    }
}

impl CoreKind {
    /// The name as `--core` takes it.
    pub fn name(self) -> &'static str {
        match self {
            CoreKind::Engine => "engine",
            CoreKind::Rtl => "rtl",
        }
    }

    /// `Ok` if this devsim can run the core, else what to build.
    pub fn check_available(self) -> Result<(), String> {
        match self {
            CoreKind::Rtl if !RTL_AVAILABLE => Err(RTL_MISSING.to_string()),
            _ => Ok(()),
        }
    }
}

/// Runs `core` until `stop` is set: stepping at once while it reports
/// work, then spinning a little, then yielding, then sleeping (20 µs,
/// growing to 500 µs) when idle, so an idle board costs almost no CPU.
/// While `pause` is set the board does nothing at all, as a board whose
/// clock stopped: its links and queues wait, unread (for tests of slow and
/// silent targets).
pub fn run(core: &mut dyn BoardCore, stop: &AtomicBool, pause: &AtomicBool) {
    let mut idle = 0u32;
    while !stop.load(Ordering::Relaxed) {
        if !pause.load(Ordering::Acquire) && core.step() {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle < 64 {
            std::hint::spin_loop();
        } else if idle < 256 {
            std::thread::yield_now();
        } else {
            let us = ((idle - 256) / 16).clamp(20, 500);
            std::thread::sleep(Duration::from_micros(us as u64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_names_parse_and_unknown_ones_are_named() {
        assert_eq!("engine".parse::<CoreKind>(), Ok(CoreKind::Engine));
        assert_eq!("rtl".parse::<CoreKind>(), Ok(CoreKind::Rtl));
        let e = "verilog".parse::<CoreKind>().unwrap_err();
        assert!(
            e.contains("\"verilog\"") && e.contains("engine, rtl"),
            "{e}"
        );
        assert_eq!(CoreKind::Rtl.name().parse::<CoreKind>(), Ok(CoreKind::Rtl));
    }

    #[test]
    fn the_rtl_core_is_refused_with_what_to_build_when_not_built_in() {
        assert_eq!(CoreKind::Engine.check_available(), Ok(()));
        let rtl = CoreKind::Rtl.check_available();
        assert_eq!(rtl.is_ok(), cfg!(feature = "rtl"), "{rtl:?}");
        if let Err(e) = rtl {
            assert!(
                e.contains("`rtl` feature") && e.contains("verilator"),
                "{e}"
            );
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
