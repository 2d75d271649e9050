//! The board side of the BAR files: `bar0` (registers and rings) and `bar2`
//! (the DDR window) of a board directory, created by the board and mapped
//! shared, so that a host mapping the same files sees every store.
//!
//! Registers are 32-bit cells accessed atomically (a host and the board
//! touch them concurrently); 64-bit quantities are `_LO`/`_HI` pairs
//! (`spec/registers.md` §1).

use memmap2::MmapMut;
use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

/// One BAR file, mapped shared.
#[derive(Debug)]
pub struct Bar {
    map: MmapMut,
}

impl Bar {
    /// Creates (or truncates) the file at `path` to `len` bytes, sparse, and
    /// maps it.
    pub fn create(path: &Path, len: u64) -> std::io::Result<Bar> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        f.set_len(len)?;
        // SAFETY: the file is this board's own BAR; the host maps it too,
        // and every access through this mapping is a raw-pointer copy or an
        // atomic, never a Rust reference to bytes the host may change.
        let map = unsafe { MmapMut::map_mut(&f)? };
        Ok(Bar { map })
    }

    /// Start of the mapping.
    #[inline(always)]
    pub fn ptr(&self) -> *mut u8 {
        self.map.as_ptr() as *mut u8
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The 32-bit register at byte offset `off` (4-byte aligned, inside the
    /// BAR) as an atomic cell.
    #[inline(always)]
    pub fn reg(&self, off: usize) -> &AtomicU32 {
        assert!(
            off.is_multiple_of(4) && off + 4 <= self.len(),
            "register {off:#x}"
        );
        // SAFETY: the offset is aligned and inside the mapping (checked),
        // which lives as long as `self`; the cell is only accessed
        // atomically, by the board and by the host.
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

    /// Loads a 64-bit `_LO`/`_HI` pair (HI, LO, HI, retrying on a carry).
    pub fn read64(&self, off: usize) -> u64 {
        loop {
            let hi = self.read32(off + 4);
            let lo = self.read32(off);
            if self.read32(off + 4) == hi {
                return (hi as u64) << 32 | lo as u64;
            }
        }
    }

    /// Stores a 64-bit `_LO`/`_HI` pair, LO then HI.
    pub fn write64(&self, off: usize, v: u64) {
        self.write32(off, v as u32);
        self.write32(off + 4, (v >> 32) as u32);
    }
}
