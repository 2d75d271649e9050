//! Reused payload buffers for the packets of a bulk transfer.
//!
//! A stream of puts or gets moves one 8–64 KiB payload per packet: the
//! sender copies the source into it, the transport keeps it until the
//! packet is acknowledged, the receiver decodes the datagram into another.
//! Freed as they come, buffers of that size make the allocator shrink its
//! heap and then grow it again for the next one, so every page of every
//! payload was faulted in afresh: on loopback those page faults cost more
//! than half of a put stream's bandwidth. Payloads of this size therefore
//! come from [`copy_of`] and [`zeroed`] and go back through [`give`] where
//! the datapath drops them; every buffer of the pool has room for a whole
//! [`MAX_LONG`] payload. A buffer dropped anywhere else is freed as usual,
//! and a buffer never given back is no loss; the pool keeps at most
//! [`KEEP`] buffers (4 MiB).
//!
//! ```
//! use gasnet_core::pool;
//! let a = pool::copy_of(&[7u8; 20_000]);
//! assert_eq!(a.len(), 20_000);
//! pool::give(a);
//! let b = pool::zeroed(30_000); // the same buffer, cleared
//! assert!(b.iter().all(|&x| x == 0));
//! ```

use crate::types::MAX_LONG;
use std::sync::Mutex;

/// Payloads shorter than this come from the allocator directly: it keeps
/// small blocks in its own free lists.
pub const MIN: usize = 8 << 10;

/// Capacity of every pooled buffer.
const CLASS: usize = MAX_LONG + 64;

/// Most buffers the pool keeps.
pub const KEEP: usize = 64;

static FREE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

fn take(len: usize) -> Vec<u8> {
    if !(MIN..=CLASS).contains(&len) {
        return Vec::with_capacity(len);
    }
    let reused = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let mut v = reused.unwrap_or_else(|| Vec::with_capacity(CLASS));
    v.clear();
    v
}

/// A buffer holding a copy of `src`.
pub fn copy_of(src: &[u8]) -> Vec<u8> {
    let mut v = take(src.len());
    v.extend_from_slice(src);
    v
}

/// A buffer of `len` bytes, each written by `fill` through the pointer it
/// is given (for a source that must not be read through a slice: the
/// conduits copy segment memory into it with raw pointers).
///
/// # Safety
/// `fill` writes all `len` bytes at the pointer and nothing beyond them.
pub unsafe fn filled(len: usize, fill: impl FnOnce(*mut u8)) -> Vec<u8> {
    let mut v = take(len);
    v.reserve(len);
    fill(v.as_mut_ptr());
    // SAFETY: the capacity holds `len` bytes (reserved), all initialized
    // by `fill` (the caller's contract).
    unsafe { v.set_len(len) };
    v
}

/// A buffer of `len` zero bytes.
pub fn zeroed(len: usize) -> Vec<u8> {
    let mut v = take(len);
    v.resize(len, 0);
    v
}

/// Returns a payload buffer for reuse. Buffers that are not of the pool's
/// size, or beyond [`KEEP`], are freed.
pub fn give(v: Vec<u8>) {
    if !(CLASS..=2 * CLASS).contains(&v.capacity()) {
        return;
    }
    let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
    if free.len() < KEEP {
        free.push(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_cleared_and_the_pool_stays_bounded() {
        let a = copy_of(&[1u8; MIN]);
        assert!(a.capacity() >= CLASS);
        give(a);
        // Another test may take it first: only check what must hold.
        let b = zeroed(MIN + 1);
        assert_eq!(b.len(), MIN + 1);
        assert!(b.iter().all(|&x| x == 0));
        assert!(copy_of(&[2u8; 100]).capacity() < CLASS);
        let big = zeroed(CLASS + 1);
        assert_eq!(big.len(), CLASS + 1);
        give(big);
        for _ in 0..KEEP + 10 {
            give(Vec::with_capacity(CLASS));
        }
        give(b);
        assert!(FREE.lock().unwrap().len() <= KEEP);
    }
}
