//! Example SPMD programs for fshmem; each binary in `src/bin` is one.
