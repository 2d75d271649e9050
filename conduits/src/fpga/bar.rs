//! Mapping a board's BARs and checking who it is.
//!
//! A board is reached through two memory regions (`spec/registers.md` §2):
//! BAR0, 64 KiB of registers and rings, mapped uncached, and BAR2, the DDR
//! window that holds the segment, mapped write-combining. Both come either
//! from a PCI device — sysfs `resource0` and `resource2_wc` (the kernel maps
//! `_wc` resources write-combining, `resourceN` uncached) — or from a devsim
//! directory whose `bar0` and `bar2` files play the same roles.
//!
//! [`find_boards`] scans `/sys/bus/pci/devices/*/{vendor,device}` for the
//! board's PCI ids; [`Device::choose`] honours the `FSHMEM_FPGA_DEVICE`
//! setting (a devsim directory or a PCI address such as `0000:3b:00.0`).
//! [`Board::open`] maps both BARs and refuses, with an error naming what it
//! found, a board whose `MAGIC` or major `VERSION` differ from this build's.

use crate::aligned::AlignedMap;
use crate::error::{ConduitError, Result};
use gasnet_core::cmd::{self, regs};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where sysfs lists PCI devices.
pub const SYSFS_PCI: &str = "/sys/bus/pci/devices";

/// File names of a devsim board's BARs inside its directory.
pub const DEVSIM_BAR0: &str = "bar0";
/// See [`DEVSIM_BAR0`].
pub const DEVSIM_BAR2: &str = "bar2";

/// Where a board's BARs come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// A PCI function under [`SYSFS_PCI`] (its directory).
    Pci(PathBuf),
    /// A devsim board directory holding `bar0` and `bar2` files.
    Devsim(PathBuf),
}

impl Device {
    /// The device `named` (the `FSHMEM_FPGA_DEVICE` setting), or else the
    /// `index`-th board found on the PCI bus.
    pub fn choose(named: Option<&Path>, index: usize) -> Result<Device> {
        match named {
            Some(v) => Ok(Device::parse(v)),
            None => {
                let boards = find_boards(Path::new(SYSFS_PCI));
                boards.get(index).cloned().ok_or_else(|| {
                    ConduitError::Bootstrap(format!(
                        "no fshmem board: FSHMEM_FPGA_DEVICE is not set and {SYSFS_PCI} lists {} \
                         device(s) with vendor {:#06x} device {:#06x} (board {index} wanted); \
                         run under `oshrun --conduit fpga` to use devsim boards",
                        boards.len(),
                        cmd::PCI_VENDOR_ID,
                        cmd::PCI_DEVICE_ID
                    ))
                })
            }
        }
    }

    /// A devsim directory if `path` holds a `bar0` file; a PCI address
    /// (`0000:3b:00.0`) or sysfs directory otherwise.
    pub fn parse(path: &Path) -> Device {
        if path.join(DEVSIM_BAR0).is_file() {
            Device::Devsim(path.to_path_buf())
        } else if path.is_absolute() {
            Device::Pci(path.to_path_buf())
        } else {
            Device::Pci(Path::new(SYSFS_PCI).join(path))
        }
    }

    /// Paths of BAR0 and BAR2 (`resource2_wc` when the kernel offers it).
    pub fn bar_paths(&self) -> (PathBuf, PathBuf) {
        match self {
            Device::Devsim(d) => (d.join(DEVSIM_BAR0), d.join(DEVSIM_BAR2)),
            Device::Pci(d) => {
                let wc = d.join("resource2_wc");
                let bar2 = if wc.exists() { wc } else { d.join("resource2") };
                (d.join("resource0"), bar2)
            }
        }
    }
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Pci(p) => write!(f, "PCI device {}", p.display()),
            Device::Devsim(p) => write!(f, "devsim board {}", p.display()),
        }
    }
}

fn read_hex(path: &Path) -> Option<u32> {
    let s = std::fs::read_to_string(path).ok()?;
    u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

/// Every PCI function under `sysfs` (normally [`SYSFS_PCI`]) whose vendor
/// and device ids are the board's, sorted by address.
pub fn find_boards(sysfs: &Path) -> Vec<Device> {
    let Ok(dir) = std::fs::read_dir(sysfs) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            read_hex(&p.join("vendor")) == Some(cmd::PCI_VENDOR_ID as u32)
                && read_hex(&p.join("device")) == Some(cmd::PCI_DEVICE_ID as u32)
        })
        .collect();
    found.sort();
    found.into_iter().map(Device::Pci).collect()
}

/// One mapped BAR.
#[derive(Debug)]
pub struct Bar {
    map: AlignedMap,
    /// The mapped file, kept open so that the segment's pages can be
    /// mapped a second time ([`Bar::fd`]).
    file: std::fs::File,
}

impl Bar {
    /// Maps `path` read-write and shared (a sysfs resource or a devsim file).
    pub fn map(path: &Path) -> Result<Bar> {
        Bar::map_aligned(path, 1)
    }

    /// As [`Bar::map`], at an address that is a multiple of `align` (BAR2,
    /// the segment, at [`crate::aligned::SEGMENT_ALIGN`]).
    pub fn map_aligned(path: &Path, align: usize) -> Result<Bar> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| ConduitError::Io(format!("cannot open {}: {e}", path.display())))?;
        let len = file
            .metadata()
            .map_err(|e| ConduitError::Io(format!("cannot stat {}: {e}", path.display())))?
            .len() as usize;
        let map = AlignedMap::map(std::os::fd::AsRawFd::as_raw_fd(&file), 0, len, align)
            .map_err(|e| ConduitError::Io(format!("cannot map {}: {e}", path.display())))?;
        Ok(Bar { map, file })
    }

    /// The descriptor of the mapped file (a sysfs resource or a devsim
    /// file), open as long as `self` lives.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }

    /// The mapped file, open as long as `self` lives.
    pub(crate) fn file(&self) -> &std::fs::File {
        &self.file
    }

    /// Start of the mapping.
    #[inline(always)]
    pub fn ptr(&self) -> *mut u8 {
        self.map.ptr()
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// The 32-bit register at byte offset `off` (4-byte aligned, inside
    /// the BAR) as an atomic cell: loads and stores are single aligned
    /// 32-bit accesses, as the register file requires.
    #[inline(always)]
    pub fn reg(&self, off: usize) -> &AtomicU32 {
        assert!(
            off.is_multiple_of(4) && off + 4 <= self.len(),
            "register {off:#x}"
        );
        // SAFETY: the offset is aligned and inside the mapping (checked),
        // which lives as long as `self`; the cell is only accessed
        // atomically by this process and by the board.
        unsafe { AtomicU32::from_ptr(self.ptr().add(off).cast()) }
    }

    /// Loads a register.
    #[inline(always)]
    pub fn read32(&self, off: usize) -> u32 {
        self.reg(off).load(Ordering::Acquire)
    }

    /// Stores a register.
    #[inline(always)]
    pub fn write32(&self, off: usize, v: u32) {
        self.reg(off).store(v, Ordering::Release)
    }

    /// Loads a 64-bit quantity kept as `_LO`/`_HI` registers at `off`
    /// (HI, LO, HI, retrying on a carry, as `spec/registers.md` §1 asks).
    pub fn read64(&self, off: usize) -> u64 {
        loop {
            let hi = self.read32(off + 4);
            let lo = self.read32(off);
            if self.read32(off + 4) == hi {
                return (hi as u64) << 32 | lo as u64;
            }
        }
    }

    /// Stores a 64-bit configuration quantity as LO then HI.
    pub fn write64(&self, off: usize, v: u64) {
        self.write32(off, v as u32);
        self.write32(off + 4, (v >> 32) as u32);
    }
}

/// What the identification registers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// `MAGIC`.
    pub magic: u32,
    /// `VERSION`.
    pub version: u32,
    /// `CAPS`.
    pub caps: u32,
    /// `BUILD_ID`.
    pub build_id: u32,
    /// `WINDOW_SIZE`.
    pub window: u64,
}

impl Identity {
    /// Reads the identification registers of BAR0.
    pub fn read(bar0: &Bar) -> Identity {
        Identity {
            magic: bar0.read32(regs::MAGIC),
            version: bar0.read32(regs::VERSION),
            caps: bar0.read32(regs::CAPS),
            build_id: bar0.read32(regs::BUILD_ID),
            window: bar0.read64(regs::WINDOW_SIZE_LO),
        }
    }

    /// Refuses a board that is not an fshmem board of a major version this
    /// build implements; the error names the device and what it read.
    pub fn check(&self, device: &Device) -> Result<()> {
        if self.magic != cmd::MAGIC {
            let text: String = self
                .magic
                .to_le_bytes()
                .iter()
                .map(|&b| if b.is_ascii_graphic() { b as char } else { '.' })
                .collect();
            return Err(ConduitError::Bootstrap(format!(
                "{device} is not an fshmem board: MAGIC reads {:#010x} (\"{text}\"), expected {:#010x} (\"FSHM\")",
                self.magic,
                cmd::MAGIC
            )));
        }
        let major = (self.version >> 16) as u16;
        if major != cmd::VERSION_MAJOR {
            return Err(ConduitError::Bootstrap(format!(
                "{device} speaks board interface version {}.{} (VERSION {:#010x}); this build implements major version {}",
                major,
                self.version & 0xFFFF,
                self.version,
                cmd::VERSION_MAJOR
            )));
        }
        Ok(())
    }
}

/// A board's two mapped BARs, identified.
#[derive(Debug)]
pub struct Board {
    /// Where it came from.
    pub device: Device,
    /// Registers and rings.
    pub bar0: Bar,
    /// The DDR window.
    pub bar2: Bar,
    /// Its identification registers.
    pub id: Identity,
    /// How to wake it when it dozes: a devsim board's doze word and wake
    /// socket (`spec/registers.md` §13); `None` for a PCI board.
    pub waker: Option<Waker>,
}

/// The host's side of a board model's doze protocol (`spec/registers.md`
/// §13): after a doorbell, a board that announced it dozes gets one byte
/// on its wake socket, so it takes the new commands at once instead of at
/// the end of its doze.
#[derive(Debug)]
pub struct Waker {
    word: Bar,
    wake: std::os::unix::net::UnixDatagram,
}

impl Waker {
    /// The doze word and wake socket of devsim directory `dir`, if the
    /// board made them.
    pub fn open(dir: &Path) -> Option<Waker> {
        let word = Bar::map(&dir.join(cmd::BOARD_FILE_DOZE)).ok()?;
        if word.len() < 4 {
            return None;
        }
        let wake = std::os::unix::net::UnixDatagram::unbound().ok()?;
        wake.connect(dir.join(cmd::BOARD_FILE_WAKE)).ok()?;
        Some(Waker { word, wake })
    }

    /// Called after a `DOORBELL` or `CTRL` store: wakes the board if it
    /// dozes.
    #[inline]
    pub fn kick(&self) {
        // Orders the register store before the load of the word (the board
        // orders its store of the word before its last look at them).
        std::sync::atomic::fence(Ordering::SeqCst);
        let cell = self.word.reg(0);
        if cell.load(Ordering::Relaxed) != 0 && cell.swap(0, Ordering::AcqRel) != 0 {
            // A full socket or a board that is gone is no error here: the
            // board wakes by itself within its longest doze, and a board
            // that died is the liveness check's to report.
            let byte = 1u8;
            // SAFETY: sends one byte from a local on a socket this Waker
            // owns; MSG_NOSIGNAL keeps a vanished board from raising
            // SIGPIPE in the host program, MSG_DONTWAIT from blocking it.
            unsafe {
                libc::send(
                    std::os::fd::AsRawFd::as_raw_fd(&self.wake),
                    (&byte as *const u8).cast(),
                    1,
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
        }
    }
}

impl Board {
    /// Called after a register store that gives the board work
    /// (`DOORBELL`, `CTRL`): wakes a board model that dozes
    /// (`spec/registers.md` §13); nothing for a PCI board.
    #[inline]
    pub fn wake(&self) {
        if let Some(w) = &self.waker {
            w.kick();
        }
    }

    /// Maps the BARs of `device` and checks its identity (a mismatched
    /// magic or major version is refused with an error naming both).
    pub fn open(device: Device) -> Result<Board> {
        let (p0, p2) = device.bar_paths();
        let bar0 = Bar::map(&p0)?;
        if bar0.len() < cmd::BAR0_SIZE {
            return Err(ConduitError::Bootstrap(format!(
                "{device}: BAR0 is {} bytes, expected {}",
                bar0.len(),
                cmd::BAR0_SIZE
            )));
        }
        let id = Identity::read(&bar0);
        id.check(&device)?;
        let bar2 = Bar::map_aligned(&p2, crate::aligned::SEGMENT_ALIGN)?;
        if (bar2.len() as u64) < id.window {
            return Err(ConduitError::Bootstrap(format!(
                "{device}: BAR2 maps {} bytes but WINDOW_SIZE is {}",
                bar2.len(),
                id.window
            )));
        }
        let waker = match &device {
            Device::Devsim(dir) => Waker::open(dir),
            Device::Pci(_) => None,
        };
        Ok(Board {
            device,
            bar0,
            bar2,
            id,
            waker,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_scan_matches_vendor_and_device() {
        let root = std::env::temp_dir().join(format!("fshmem-pci-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (addr, vendor, device) in [
            ("0000:01:00.0", "0x1172", "0x5348"),
            ("0000:02:00.0", "0x8086", "0x5348"),
            ("0000:00:1f.0", "0x1172", "0x5348\n"),
        ] {
            let d = root.join(addr);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("vendor"), vendor).unwrap();
            std::fs::write(d.join("device"), device).unwrap();
        }
        let found = find_boards(&root);
        assert_eq!(
            found,
            vec![
                Device::Pci(root.join("0000:00:1f.0")),
                Device::Pci(root.join("0000:01:00.0"))
            ]
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
