//! The segment as the board's engine sees it: a range of the BAR2 mapping,
//! reached only through bounds-checked copies and CPU atomics (a host maps
//! the same bytes and may read or write them at any time).

use gasnet_core::engine::{self, MemError, Memory};
use gasnet_core::{AmoOp, AmoWidth};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The segment as the engine sees it: a range of the BAR2 mapping.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    base: *mut u8,
    len: u64,
}

// SAFETY: the window points into a shared file mapping that outlives every
// Window (the board keeps the mapping); accesses are bounds-checked copies
// or atomics, and the memory is shared with other processes anyway.
unsafe impl Send for Window {}

impl Window {
    /// A window of `len` bytes at `base`.
    ///
    /// # Safety
    /// `base..base+len` must stay mapped and writable while the window (or
    /// a copy) is used.
    pub unsafe fn new(base: *mut u8, len: u64) -> Window {
        Window { base, len }
    }

    /// Writes through a shared reference (the memory is shared anyway).
    pub fn write_shared(&self, offset: u64, data: &[u8]) -> Result<(), MemError> {
        engine::check_range(self.len, offset, data.len() as u64)?;
        // SAFETY: in range (checked); the mapping is live (Window::new).
        unsafe {
            std::ptr::copy(data.as_ptr(), self.base.add(offset as usize), data.len());
        }
        Ok(())
    }
}

impl Memory for Window {
    fn len(&self) -> u64 {
        self.len
    }

    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<(), MemError> {
        engine::check_range(self.len, offset, buf.len() as u64)?;
        // SAFETY: in range (checked); the mapping is live (Window::new).
        unsafe {
            std::ptr::copy(self.base.add(offset as usize), buf.as_mut_ptr(), buf.len());
        }
        Ok(())
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), MemError> {
        self.write_shared(offset, data)
    }

    fn atomic(
        &mut self,
        op: AmoOp,
        width: AmoWidth,
        offset: u64,
        operand: u64,
        compare: u64,
    ) -> Result<u64, MemError> {
        let n = width.bytes();
        if !offset.is_multiple_of(n as u64) {
            return Err(MemError::Misaligned { offset, align: n });
        }
        engine::check_range(self.len, offset, n as u64)?;
        // SAFETY: aligned and in range (checked; the window base is page
        // aligned); the word is only ever accessed atomically by the board
        // and by host atomics.
        let p = unsafe { self.base.add(offset as usize) };
        let rmw = |old: u64| op.apply(width, old, operand, compare);
        Ok(match width {
            AmoWidth::W32 => {
                // SAFETY: see above.
                let a = unsafe { AtomicU32::from_ptr(p.cast()) };
                let r = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |o| {
                    Some(rmw(o as u64) as u32)
                });
                r.unwrap_or_else(|o| o) as u64
            }
            AmoWidth::W64 => {
                // SAFETY: see above.
                let a = unsafe { AtomicU64::from_ptr(p.cast()) };
                let r = a.fetch_update(Ordering::AcqRel, Ordering::Acquire, |o| Some(rmw(o)));
                r.unwrap_or_else(|o| o)
            }
        })
    }
}
