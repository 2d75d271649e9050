//! C programs get what the OpenSHMEM specification promises, and misuse
//! is reported instead of silently going wrong: allocation returns NULL
//! when the heap cannot satisfy it; collectives whose arguments differ
//! between PEs are reported on every PE; a program that leaves `main`
//! without `shmem_finalize` finalizes; the library initializes again
//! after a finalize; the profiling interface (`pshmem_*`) lets a tool
//! count calls. Every case runs real jobs through `oshrun`.
//!
//! Needs `oshcc`, `oshrun` and `libshmem.so` built in this profile
//! (`cargo build --release --workspace`) and a C compiler.

#[path = "support/capi.rs"]
mod capi;

use capi::{compile, job_env, lines_with};

/// Allocation that the heap cannot satisfy returns NULL on every PE and
/// the program runs on; probing the heap until NULL finds its size.
#[test]
fn allocation_returns_null_when_the_heap_cannot_satisfy_it() {
    let exe = compile("alloc_null", &[]);
    for n in [1, 2, 4, 5] {
        let j = job_env(n, &exe, &[], &[("SHMEM_SYMMETRIC_SIZE", "16M")]);
        j.assert_ok_with(&format!("alloc_null: ok on {n} PEs"));
        j.assert_line("alloc_null: probe ran to the end");
        assert!(j.out.stderr.is_empty(), "{j:?}");
    }
    // Under SHMEM_DEBUG each refusal is one line naming the PE, the call
    // and the request.
    let j = job_env(
        2,
        &exe,
        &[],
        &[("SHMEM_SYMMETRIC_SIZE", "16M"), ("SHMEM_DEBUG", "1")],
    );
    j.assert_ok_with("alloc_null: ok on 2 PEs");
    for pe in 0..2 {
        let refusals = lines_with(
            &j.out.stderr,
            &format!(
                "PE {pe}: shmem_malloc: symmetric heap exhausted: requested 1125899906842624 bytes"
            ),
        );
        assert_eq!(refusals.len(), 1, "{j:?}");
        let align = lines_with(
            &j.out.stderr,
            &format!("PE {pe}: shmem_align: alignment 3 is not a power of two"),
        );
        assert_eq!(align.len(), 1, "{j:?}");
    }
}
