//! # shmem
//!
//! OpenSHMEM for fshmem: the Rust SPMD API over the conduits.
