//! Multi-process integration tests for fshmem live in `tests/`: each launches a real job through `oshrun`.
