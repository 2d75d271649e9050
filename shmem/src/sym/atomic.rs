//! Atomics, waits and signals on symmetric objects: the `SymVec` methods
//! that name one element of a PE's copy and act on it as a whole word
//! (`shmem_atomic_*`, `shmem_wait_until`/`shmem_test`, `shmem_signal_*`).

use super::SymVec;
use crate::error::Result;
use crate::op::Op;
use crate::pod::{AmoElem, AmoInt};
use crate::wait::Cmp;
use conduits::AmoOp;
use conduits::prelude::*;

impl<T: AmoElem> SymVec<'_, T> {
    #[inline(always)]
    fn amo(
        &self,
        index: usize,
        pe: usize,
        op: AmoOp,
        operand: T,
        compare: T,
        call: &'static str,
    ) -> Result<T> {
        let off = self.range(index, 1, call)?;
        Op::default(self.rt)
            .atomic(
                call,
                pe,
                off,
                op,
                T::WIDTH,
                operand.to_bits(),
                compare.to_bits(),
                op != AmoOp::Fetch,
            )
            .map(T::from_bits)
    }

    /// `shmem_atomic_fetch`: atomically reads element `index` of `pe`'s copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<f64>(1)?;
    /// let v = x.atomic_fetch(0, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_fetch(&self, index: usize, pe: usize) -> Result<T> {
        let z = T::from_bits(0);
        self.amo(index, pe, AmoOp::Fetch, z, z, "shmem_atomic_fetch")
    }

    /// `shmem_atomic_set`: atomically writes `value`.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<f32>(1)?;
    /// x.atomic_set(0, 1.5, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_set(&self, index: usize, value: T, pe: usize) -> Result<()> {
        let z = T::from_bits(0);
        self.amo(index, pe, AmoOp::Set, value, z, "shmem_atomic_set")
            .map(drop)
    }

    /// `shmem_atomic_swap`: atomically writes `value`, returns the old value.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let x = sh.calloc::<u64>(1)?;
    /// let old = x.atomic_swap(0, 9, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_swap(&self, index: usize, value: T, pe: usize) -> Result<T> {
        let z = T::from_bits(0);
        self.amo(index, pe, AmoOp::Swap, value, z, "shmem_atomic_swap")
    }
}

macro_rules! fetching {
    ($(#[$doc:meta])* $name:ident, $op:ident, $call:literal) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&self, index: usize, value: T, pe: usize) -> Result<T> {
            self.amo(index, pe, AmoOp::$op, value, T::from_bits(0), $call)
        }
    };
}

macro_rules! non_fetching {
    ($(#[$doc:meta])* $name:ident, $op:ident, $call:literal) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&self, index: usize, value: T, pe: usize) -> Result<()> {
            self.amo(index, pe, AmoOp::$op, value, T::from_bits(0), $call)
                .map(drop)
        }
    };
}

impl<T: AmoInt> SymVec<'_, T> {
    /// `shmem_atomic_compare_swap`: if element `index` of `pe`'s copy
    /// equals `cond`, writes `value`; returns the old value either way.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let lock = sh.calloc::<u64>(1)?;
    /// let got = lock.atomic_compare_swap(0, 0, sh.my_pe() as u64 + 1, 0)? == 0;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_compare_swap(&self, index: usize, cond: T, value: T, pe: usize) -> Result<T> {
        self.amo(
            index,
            pe,
            AmoOp::CompareSwap,
            value,
            cond,
            "shmem_atomic_compare_swap",
        )
    }

    fetching!(
        /// `shmem_atomic_fetch_add`: adds `value` (wrapping), returns the
        /// old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let ctr = sh.calloc::<i64>(1)?;
        /// let ticket = ctr.atomic_fetch_add(0, 1, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_add, FetchAdd, "shmem_atomic_fetch_add"
    );
    non_fetching!(
        /// `shmem_atomic_add`: adds `value` (wrapping).
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let ctr = sh.calloc::<u32>(1)?;
        /// ctr.atomic_add(0, 5, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_add, Add, "shmem_atomic_add"
    );
    fetching!(
        /// `shmem_atomic_fetch_and`: ANDs `value`, returns the old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// let old = m.atomic_fetch_and(0, 0xff, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_and, FetchAnd, "shmem_atomic_fetch_and"
    );
    fetching!(
        /// `shmem_atomic_fetch_or`: ORs `value`, returns the old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u32>(1)?;
        /// let old = m.atomic_fetch_or(0, 1 << sh.my_pe(), 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_or, FetchOr, "shmem_atomic_fetch_or"
    );
    fetching!(
        /// `shmem_atomic_fetch_xor`: XORs `value`, returns the old value.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<i32>(1)?;
        /// let old = m.atomic_fetch_xor(0, -1, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_fetch_xor, FetchXor, "shmem_atomic_fetch_xor"
    );
    non_fetching!(
        /// `shmem_atomic_and`: ANDs `value`.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// m.atomic_and(0, 0, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_and, And, "shmem_atomic_and"
    );
    non_fetching!(
        /// `shmem_atomic_or`: ORs `value`.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// m.atomic_or(0, 4, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_or, Or, "shmem_atomic_or"
    );
    non_fetching!(
        /// `shmem_atomic_xor`: XORs `value`.
        ///
        /// ```no_run
        /// let sh = shmem::init()?;
        /// let m = sh.calloc::<u64>(1)?;
        /// m.atomic_xor(0, 4, 0)?;
        /// # Ok::<(), shmem::ShmemError>(())
        /// ```
        atomic_xor, Xor, "shmem_atomic_xor"
    );

    /// `shmem_atomic_fetch_inc`: adds one, returns the old value.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let ctr = sh.calloc::<u64>(1)?;
    /// let mine = ctr.atomic_fetch_inc(0, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_fetch_inc(&self, index: usize, pe: usize) -> Result<T> {
        self.amo(
            index,
            pe,
            AmoOp::FetchAdd,
            T::ONE,
            T::from_bits(0),
            "shmem_atomic_fetch_inc",
        )
    }

    /// `shmem_atomic_inc`: adds one.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let ctr = sh.calloc::<u64>(1)?;
    /// ctr.atomic_inc(0, 0)?;
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn atomic_inc(&self, index: usize, pe: usize) -> Result<()> {
        self.amo(
            index,
            pe,
            AmoOp::Add,
            T::ONE,
            T::from_bits(0),
            "shmem_atomic_inc",
        )
        .map(drop)
    }

    /// `shmem_wait_until`: waits until element `index` of this PE's copy
    /// satisfies `word <cmp> value`, polling the conduit (spin briefly,
    /// then yield); returns the word that satisfied it.
    ///
    /// ```no_run
    /// use shmem::Cmp;
    /// let sh = shmem::init()?;
    /// let flag = sh.calloc::<i32>(1)?;
    /// if sh.my_pe() == 0 {
    ///     for pe in 1..sh.n_pes() { flag.atomic_add(0, 1, pe)?; }
    /// } else {
    ///     flag.wait_until(0, Cmp::Ge, 1)?;
    /// }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn wait_until(&self, index: usize, cmp: Cmp, value: T) -> Result<T> {
        const CALL: &str = "shmem_wait_until";
        self.rt.not_in_handler(CALL)?;
        let off = self.range(index, 1, CALL)?;
        self.rt
            .wait_word_for(
                off,
                T::WIDTH,
                CALL,
                |w| cmp.holds(T::from_bits(w), value),
                |w| {
                    format!(
                        "element {index} (offset {off:#x}) to become {} {value:?} (currently {:?})",
                        cmp.symbol(),
                        T::from_bits(w)
                    )
                },
            )
            .map(T::from_bits)
    }

    /// `shmem_test`: whether element `index` of this PE's copy satisfies
    /// `word <cmp> value` now (after serving pending messages once).
    ///
    /// ```no_run
    /// use shmem::Cmp;
    /// let sh = shmem::init()?;
    /// let flag = sh.calloc::<u64>(1)?;
    /// while !flag.test(0, Cmp::Ne, 0)? { /* compute */ break; }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn test(&self, index: usize, cmp: Cmp, value: T) -> Result<bool> {
        const CALL: &str = "shmem_test";
        self.rt.not_in_handler(CALL)?;
        let off = self.range(index, 1, CALL)?;
        self.rt.conduit.poll().map_err(|e| self.rt.err(CALL, e))?;
        Ok(cmp.holds(T::from_bits(self.rt.load_word(off, T::WIDTH)), value))
    }
}

impl SymVec<'_, u64> {
    /// `shmem_signal_fetch`: atomically reads signal word `index` of this
    /// PE's copy.
    ///
    /// ```no_run
    /// let sh = shmem::init()?;
    /// let sig = sh.calloc::<u64>(1)?;
    /// assert_eq!(sig.signal_fetch(0)?, 0);
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn signal_fetch(&self, index: usize) -> Result<u64> {
        let off = self.range(index, 1, "shmem_signal_fetch")?;
        Ok(self.rt.load_word(off, conduits::AmoWidth::W64))
    }

    /// `shmem_signal_wait_until`: waits until signal word `index` of this
    /// PE's copy satisfies `word <cmp> value`; returns the word. Data put
    /// with [`SymVec::put_signal`] before the signal is visible on return.
    ///
    /// ```no_run
    /// use shmem::Cmp;
    /// let sh = shmem::init()?;
    /// let sig = sh.calloc::<u64>(1)?;
    /// if sh.n_pes() > 1 {
    ///     if sh.my_pe() == 0 { sig.atomic_set(0, 3, 1)?; }
    ///     if sh.my_pe() == 1 { assert_eq!(sig.signal_wait_until(0, Cmp::Eq, 3)?, 3); }
    /// }
    /// # Ok::<(), shmem::ShmemError>(())
    /// ```
    #[inline]
    pub fn signal_wait_until(&self, index: usize, cmp: Cmp, value: u64) -> Result<u64> {
        const CALL: &str = "shmem_signal_wait_until";
        self.rt.not_in_handler(CALL)?;
        let off = self.range(index, 1, CALL)?;
        self.rt.wait_word_for(
            off,
            conduits::AmoWidth::W64,
            CALL,
            |w| cmp.holds(w, value),
            |w| {
                format!(
                    "signal {index} (offset {off:#x}) to become {} {value} (currently {w})",
                    cmp.symbol()
                )
            },
        )
    }
}
