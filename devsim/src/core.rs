//! Which core a board runs, and the board loop written once for both.
//!
//! A board is its BAR files, its links and a core behind them. devsim has
//! two cores ([`CoreKind`]): the reference engine of `gasnet-core`
//! ([`crate::board::BoardModel`], the default) and, with the `rtl` cargo
//! feature, the Verilator model of the RTL core in `hw/`
//! (`rtl::RtlBoard`, driven cycle by cycle). Both implement
//! [`BoardCore`]: one step of work, saying whether anything happened; the
//! board loop ([`run`]) steps while there is work, then yields, then dozes,
//! whichever core it drives.
//!
//! # Dozing
//!
//! A board in hardware never sleeps: its clock runs and it sees a doorbell
//! the cycle it lands. A simulated board that polled its files and sockets
//! forever would take a core from the programs it serves, so an idle board
//! *dozes*: it blocks in `ppoll` on its link sockets and its wake socket,
//! for at most [`DOZE_MAX`]. A datagram from a peer board wakes it at once;
//! a host wakes it by the board directory's doze protocol ([`Doze`]): the
//! board sets the `doze` word before it blocks, and a host that rings the
//! doorbell or writes `CTRL` while the word is set clears it and sends one
//! byte to the `wake` socket. No operation a host waits for sleeps out a timer.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering, fence};
use std::time::Duration;

/// One board's core behind its BARs and links.
pub trait BoardCore: Send {
    /// One step of the board: host register writes taken, link packets
    /// moved, work done, registers and queues published. Returns whether
    /// anything happened (the loop then steps again at once).
    fn step(&mut self) -> bool;

    /// The board directory's doze word and wake socket, which the core
    /// made with its BAR files.
    fn doze(&self) -> Doze;

    /// The link sockets whose datagrams end a doze.
    fn link_fds(&self) -> Vec<RawFd>;
}

/// The longest doze: the board steps at least this often, idle or not
/// (its `UPTIME` heartbeat and its transport's timers).
pub const DOZE_MAX: Duration = Duration::from_micros(500);

/// Idle steps that yield the CPU before the board dozes. Each idle step
/// yields at once: a step costs a few system calls, so spinning on it
/// would hold a core that the host or a peer board needs (on two cores,
/// spinning 64 idle steps first took a put + quiet from 20 to 44 µs).
pub const YIELD_STEPS: u32 = 256;

/// A board's side of the doze protocol: the `doze` word (a 4 KiB shared
/// file, word 0) and the `wake` Unix datagram socket of its directory
/// ([`gasnet_core::cmd::BOARD_FILE_DOZE`], [`gasnet_core::cmd::BOARD_FILE_WAKE`]).
///
/// Cloning shares the same word and socket.
#[derive(Clone, Debug)]
pub struct Doze(Arc<DozeFiles>);

#[derive(Debug)]
struct DozeFiles {
    word: crate::bar::Bar,
    wake: UnixDatagram,
}

impl Doze {
    /// Creates the `doze` file and binds the `wake` socket in `dir`
    /// (replacing stale ones).
    pub fn create(dir: &Path) -> io::Result<Doze> {
        use gasnet_core::cmd::{BOARD_FILE_DOZE, BOARD_FILE_WAKE};
        let word = crate::bar::Bar::create(&dir.join(BOARD_FILE_DOZE), 4096)?;
        let path = dir.join(BOARD_FILE_WAKE);
        let _ = std::fs::remove_file(&path);
        let wake = UnixDatagram::bind(&path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot bind {}: {e}", path.display()))
        })?;
        wake.set_nonblocking(true)?;
        Ok(Doze(Arc::new(DozeFiles { word, wake })))
    }

    fn cell(&self) -> &AtomicU32 {
        self.0.word.reg(0)
    }

    /// Says the board is about to doze. The caller steps once more before
    /// [`Doze::wait`]: a doorbell rung (or `CTRL` written) before the word
    /// was seen set is found by that step; one after is followed by a wake
    /// byte.
    fn announce(&self) {
        self.cell().store(1, Ordering::SeqCst);
        // Orders the store before the step's loads of DOORBELL and CTRL
        // (the host orders its store of them before its load of the word).
        fence(Ordering::SeqCst);
    }

    /// Withdraws the announcement without dozing.
    fn cancel(&self) {
        self.cell().store(0, Ordering::Relaxed);
    }

    /// Blocks until a wake byte, a datagram on one of `fds` or `timeout`;
    /// then clears the word and drains the wake socket.
    fn wait(&self, fds: &[RawFd], timeout: Duration) {
        let mut polls: Vec<libc::pollfd> = fds
            .iter()
            .chain(std::iter::once(&self.0.wake.as_raw_fd()))
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `polls` is a live array of `polls.len()` pollfd entries and
        // `ts` a live timespec; ppoll only writes the entries' `revents`.
        unsafe {
            libc::ppoll(
                polls.as_mut_ptr(),
                polls.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        self.cell().store(0, Ordering::Relaxed);
        let mut b = [0u8; 64];
        while self.0.wake.recv(&mut b).is_ok() {}
    }
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
/// work, yielding after each idle step, then dozing (see the [module
/// docs](self)) once it has been idle for [`YIELD_STEPS`] steps, so an idle
/// board costs almost no CPU and a waiting operation never waits out a
/// sleep. While `pause` is set the board does nothing at all, as a board
/// whose clock stopped: its links and queues wait, unread (for tests of
/// slow and silent targets).
pub fn run(core: &mut dyn BoardCore, stop: &AtomicBool, pause: &AtomicBool) {
    run_dozing(core, stop, pause, DOZE_MAX)
}

/// As [`run`], with dozes of at most `longest` (tests that show a dozing
/// board is woken, not timed out, make it long).
pub fn run_dozing(
    core: &mut dyn BoardCore,
    stop: &AtomicBool,
    pause: &AtomicBool,
    longest: Duration,
) {
    let fds = core.link_fds();
    let doze = core.doze();
    let mut idle = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let paused = pause.load(Ordering::Acquire);
        if !paused && core.step() {
            idle = 0;
            continue;
        }
        idle = idle.saturating_add(1);
        if idle < YIELD_STEPS {
            std::thread::yield_now();
            continue;
        }
        if paused {
            std::thread::sleep(longest);
            continue;
        }
        doze.announce();
        // A stop asked before the announcement is seen here; one asked
        // after it comes with a wake byte.
        if stop.load(Ordering::SeqCst) {
            doze.cancel();
            break;
        }
        if core.step() {
            doze.cancel();
            idle = 0;
            continue;
        }
        doze.wait(&fds, longest);
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
