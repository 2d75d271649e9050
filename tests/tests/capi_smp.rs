//! The C ABI end to end: the project's C test programs (`tests/c/*.c`),
//! compiled with `oshcc` against `libshmem` and run through `oshrun` on
//! the smp conduit at 1, 2, 4 and 5 PEs (and some of them on the ipv6 and
//! fpga conduits at 2 and 4 PEs); the one-line error reports of
//! C programs' mistakes; and `shmem.h` compiled as C99, C11 and C++.
//!
//! Needs `oshcc`, `oshrun` and `libshmem.so` built in this profile
//! (`cargo build --release --workspace`) and a C compiler (`cc`, `c++`).

#[path = "support/capi.rs"]
mod capi;

use capi::compile;
use fshmem_tests::{JOB_TIMEOUT, Job, bin, fpga_job, ipv6_job, job, profile_dir, run};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Runs C test `name` at 1, 2, 4 and 5 PEs: exit 0 and PE 0's summary.
fn passes(name: &str) {
    let exe = compile(name, &[]);
    for n in [1, 2, 4, 5] {
        let j = job(n, &exe, &[] as &[&str], JOB_TIMEOUT);
        j.assert_ok_with(&format!("{name}: ok on {n} PEs"));
        assert!(j.out.stderr.is_empty(), "{j:?}");
    }
}

/// Runs C test `name` at 2 and 4 PEs on the ipv6 and fpga conduits:
/// exit 0 and PE 0's summary.
fn passes_on_other_conduits(name: &str) {
    let exe = compile(name, &[]);
    for n in [2, 4] {
        let j = ipv6_job(n, &exe, &[] as &[&str], &[], JOB_TIMEOUT);
        j.assert_ok_with(&format!("{name}: ok on {n} PEs"));
        let j = fpga_job(n, &exe, &[] as &[&str], JOB_TIMEOUT);
        j.assert_ok_with(&format!("{name}: ok on {n} PEs"));
    }
}

#[test]
fn align_returns_aligned_addresses() {
    passes("align");
    passes_on_other_conduits("align");
}

#[test]
fn static_data_is_symmetric_on_ipv6_and_fpga() {
    passes_on_other_conduits("static_data");
}

#[test]
fn rma_on_ipv6_and_fpga() {
    passes_on_other_conduits("rma");
}

#[test]
fn atomics_on_ipv6_and_fpga() {
    passes_on_other_conduits("atomics");
}

#[test]
fn collectives_on_ipv6_and_fpga() {
    passes_on_other_conduits("coll");
}

#[test]
fn setup_and_query() {
    passes("setup");
}

#[test]
fn memory_management() {
    passes("memory");
}

#[test]
fn rma_every_type() {
    passes("rma");
}

#[test]
fn contexts() {
    passes("ctx");
}

#[test]
fn put_with_signal() {
    passes("signal");
}

#[test]
fn atomics() {
    passes("atomics");
}

#[test]
fn collectives_teams_and_active_sets() {
    passes("coll");
}

#[test]
fn reductions() {
    passes("reduce");
}

#[test]
fn wait_and_test() {
    passes("wait");
}

#[test]
fn locks() {
    passes("locks");
}

#[test]
fn static_data_is_symmetric() {
    passes("static_data");
}

#[test]
fn c11_generic_interfaces() {
    passes("generic");
}

/// The same program built as C++: the generic names are overloads.
#[test]
fn cxx_generic_overloads() {
    let exe = capi::compile_as("generic", "generic_cxx", &["-x", "c++"]);
    for n in [1, 2, 4, 5] {
        let j = job(n, &exe, &[] as &[&str], JOB_TIMEOUT);
        j.assert_ok_with(&format!("generic: ok on {n} PEs"));
        assert!(j.out.stderr.is_empty(), "{j:?}");
    }
}

/// Runs `errors <case>` on `n` PEs; returns the job.
fn error_case(exe: &Path, n: usize, case: &str) -> Job {
    job(n, exe, &[case], JOB_TIMEOUT)
}

/// The job failed with status 1 and stderr's first line is `line`.
fn fails_with(j: &Job, line: &str) {
    assert_eq!(j.out.code(), Some(1), "{j:?}");
    let first = j.out.stderr.lines().next().unwrap_or("");
    assert_eq!(first, line, "{j:?}");
}

#[test]
fn errors_print_one_line_and_end_the_job() {
    let exe = compile("errors", &[]);
    for n in [2, 4] {
        let j = error_case(&exe, n, "pe");
        fails_with(
            &j,
            &format!(
                "PE 1: shmem_long_put: target PE {} out of range (job has {n} PEs)",
                n + 5
            ),
        );
        let j = error_case(&exe, n, "negative_pe");
        fails_with(
            &j,
            &format!("PE 1: shmem_long_p: target PE -1 out of range (job has {n} PEs)"),
        );
    }
    let j = error_case(&exe, 2, "address");
    let first = j.out.stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with("PE 1: shmem_long_put: address 0x")
            && first.ends_with("(8 bytes) is outside symmetric memory"),
        "{j:?}"
    );
    assert_eq!(j.out.code(), Some(1), "{j:?}");
    let j = error_case(&exe, 2, "misaligned");
    let first = j.out.stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with("PE 1: shmem_int_atomic_add: address 0x")
            && first.contains("is not aligned to 4 bytes"),
        "{j:?}"
    );
    let j = error_case(&exe, 1, "team");
    assert!(
        j.out
            .stderr
            .starts_with("PE 0: shmem_long_sum_reduce: address 0x"),
        "{j:?}"
    );
}

/// Compiles a file including shmem.h and shmemx.h with `compiler args`.
fn header_compiles(compiler: &str, args: &[&str], ext: &str) {
    let dir = profile_dir().join("capi-tests");
    std::fs::create_dir_all(&dir).expect("create capi-tests");
    let src = dir.join(format!(
        "header_{}.{ext}",
        args.join("_").replace(['-', '='], "")
    ));
    std::fs::write(
        &src,
        "#include <shmem.h>\n#include <shmemx.h>\n#include <pshmem.h>\nint main(void) { shmem_init(); pshmem_barrier_all(); shmem_finalize(); return 0; }\n",
    )
    .expect("write source");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shmem/include");
    let out = run(
        Command::new(compiler)
            .args(args)
            .args(["-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"])
            .arg(&include)
            .arg(&src),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(0), "{compiler} {args:?}:\n{}", out.stderr);
}

#[test]
fn header_compiles_as_c99_c11_and_cxx() {
    header_compiles("cc", &["-std=c99", "-pedantic"], "c");
    header_compiles("cc", &["-std=c11", "-pedantic"], "c");
    header_compiles("cc", &["-std=c17"], "c");
    header_compiles("c++", &["-std=c++11"], "cpp");
    header_compiles("c++", &["-std=c++17"], "cpp");
}

#[test]
fn oshcc_show_names_the_include_and_library() {
    let out = run(
        Command::new(bin("oshcc")).args(["-show", "x.c", "-o", "x"]),
        Duration::from_secs(10),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stdout.contains("-lshmem") && out.stdout.contains("-Wl,-rpath,"),
        "{out:?}"
    );
    assert!(out.stdout.contains("shmem/include"), "{out:?}");
    let out = run(
        Command::new(bin("oshcc")).arg("--showme:compile"),
        Duration::from_secs(10),
    );
    assert!(out.stdout.starts_with("-I"), "{out:?}");
}
