//! Test support: the harness of `fshmem_hw::sim`, the reference board and
//! the frame normalizer.

#![allow(dead_code)]

pub mod frames;
pub mod reference;

pub use fshmem_hw::sim::*;
