//! Remote atomics applied with CPU atomic instructions on a mapped word,
//! as the smp conduit does on a peer's segment and the ipv6 conduit on its
//! own, so that they are atomic with respect to the application's own
//! atomic accesses of the same word.

use gasnet_core::{AmoOp, AmoWidth};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Applies `op` to the word at `p` with a CPU atomic instruction; returns
/// the old value.
///
/// # Safety
/// `p` must be valid for reads and writes of `width` bytes and aligned to
/// `width`.
pub(crate) unsafe fn atomic_at(
    p: *mut u8,
    op: AmoOp,
    width: AmoWidth,
    operand: u64,
    compare: u64,
) -> u64 {
    macro_rules! on {
        ($atomic:ty, $t:ty) => {{
            // SAFETY: the caller guarantees validity and alignment.
            let a = unsafe { <$atomic>::from_ptr(p as *mut $t) };
            let v = operand as $t;
            let ord = Ordering::AcqRel;
            (match op {
                AmoOp::Fetch => a.load(Ordering::Acquire),
                AmoOp::Set => {
                    a.store(v, Ordering::Release);
                    0
                }
                AmoOp::Swap => a.swap(v, ord),
                AmoOp::CompareSwap => {
                    match a.compare_exchange(compare as $t, v, ord, Ordering::Acquire) {
                        Ok(x) | Err(x) => x,
                    }
                }
                AmoOp::FetchAdd | AmoOp::Add => a.fetch_add(v, ord),
                AmoOp::FetchAnd | AmoOp::And => a.fetch_and(v, ord),
                AmoOp::FetchOr | AmoOp::Or => a.fetch_or(v, ord),
                AmoOp::FetchXor | AmoOp::Xor => a.fetch_xor(v, ord),
            }) as u64
        }};
    }
    match width {
        AmoWidth::W32 => on!(AtomicU32, u32),
        AmoWidth::W64 => on!(AtomicU64, u64),
    }
}
