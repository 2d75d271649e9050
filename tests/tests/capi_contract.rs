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

/// What PE 0 and the last PE called in each case of `coll_agree`.
fn disagreement(case: &str, n: usize) -> (String, String) {
    let last = n - 1;
    let pair =
        |call: &str, a: &str, b: &str| (format!("{call} with {a}"), format!("{call} with {b}"));
    match case {
        "bcast_root" => pair(
            "shmem_int_broadcast",
            "root 0, 10 elements of 4 bytes",
            "root 1, 10 elements of 4 bytes",
        ),
        "bcast_count" => pair(
            "shmem_int_broadcast",
            "root 0, 10 elements of 4 bytes",
            "root 0, 20 elements of 4 bytes",
        ),
        "reduce_count" => pair(
            "shmem_int_sum_reduce",
            "4 elements of 4 bytes",
            "5 elements of 4 bytes",
        ),
        "reduce_zero" => pair(
            "shmem_int_sum_reduce",
            "4 elements of 4 bytes",
            "0 elements of 4 bytes",
        ),
        "reduce_op" => (
            "shmem_int_sum_reduce with 4 elements of 4 bytes".to_string(),
            "shmem_int_max_reduce with 4 elements of 4 bytes".to_string(),
        ),
        "fcollect_count" => pair(
            "shmem_int_fcollect",
            "2 elements of 4 bytes",
            "3 elements of 4 bytes",
        ),
        "alltoall_block" => pair(
            "shmem_int_alltoall",
            "blocks of 1 elements of 4 bytes",
            "blocks of 2 elements of 4 bytes",
        ),
        "to_all" => pair(
            "shmem_long_sum_to_all",
            "2 elements of 8 bytes",
            "3 elements of 8 bytes",
        ),
        other => panic!("no case {other} (last PE {last})"),
    }
}

/// A collective whose arguments differ between PEs ends the job with
/// status 1 after every PE has printed one line naming both PEs and both
/// calls; no PE returns from the collective.
#[test]
fn collectives_report_arguments_that_differ_between_pes() {
    let exe = compile("coll_agree", &[]);
    let cases = [
        "bcast_root",
        "bcast_count",
        "reduce_count",
        "reduce_zero",
        "reduce_op",
        "fcollect_count",
        "alltoall_block",
        "to_all",
    ];
    let runs: Vec<(usize, &[(&str, &str)])> = vec![
        (2, &[]),
        (4, &[]),
        (5, &[]),
        (5, &[("FSHMEM_BARRIER_ALGO", "tree")]),
    ];
    for (n, env) in runs {
        for case in cases {
            let j = job_env(n, &exe, &[case], env);
            assert_eq!(j.out.code(), Some(1), "{case}: {j:?}");
            assert!(!j.out.stdout.contains("returned"), "{case}: {j:?}");
            let (first, other) = disagreement(case, n);
            for pe in 0..n {
                // Each PE names its own call.
                let mine = if pe == n - 1 { &other } else { &first };
                let call = mine.split(' ').next().unwrap_or("");
                let want = format!(
                    "PE {pe}: {call}: the PEs disagree: PE 0 called {first}, PE {} called {other}",
                    n - 1
                );
                assert_eq!(
                    lines_with(&j.out.stderr, &want).len(),
                    1,
                    "{case} on {n} PEs {env:?}: missing {want:?} in {j:?}"
                );
            }
        }
    }
    // Arguments that agree pass, also when PEs name the same type
    // differently (int and int32_t).
    for n in [1, 2, 4, 5] {
        let j = job_env(n, &exe, &["ok"], &[]);
        j.assert_ok_with(&format!("coll_agree: ok on {n} PEs"));
    }
}

/// The argument check on the ipv6 and fpga conduits at 2 and 4 PEs.
#[test]
fn collectives_report_differing_arguments_on_ipv6_and_fpga() {
    let exe = compile("coll_agree", &[]);
    for conduit in ["ipv6", "fpga"] {
        for n in [2, 4] {
            let j = capi::job_on(
                conduit,
                n,
                &exe,
                &["bcast_root"],
                &[],
                fshmem_tests::JOB_TIMEOUT,
            );
            assert_eq!(j.out.code(), Some(1), "{conduit}: {j:?}");
            let (first, other) = disagreement("bcast_root", n);
            for pe in 0..n {
                let want = format!(
                    "PE {pe}: shmem_int_broadcast: the PEs disagree: PE 0 called {first}, PE {} called {other}",
                    n - 1
                );
                assert_eq!(
                    lines_with(&j.out.stderr, &want).len(),
                    1,
                    "{conduit}: {j:?}"
                );
            }
            let j = capi::job_on(conduit, n, &exe, &["ok"], &[], fshmem_tests::JOB_TIMEOUT);
            j.assert_ok_with(&format!("coll_agree: ok on {n} PEs"));
        }
    }
}

/// The environment that selects the ofi conduit's provider (tcp over the
/// loopback device, the one every libfabric has); none for the others.
fn ofi_env(conduit: &str) -> &'static [(&'static str, &'static str)] {
    if conduit == "ofi" {
        &[
            ("FSHMEM_OFI_PROVIDER", "tcp;ofi_rxm"),
            ("FSHMEM_OFI_DOMAIN", "lo"),
        ]
    } else {
        &[]
    }
}

/// A program that leaves `main` (or calls `exit`) without
/// `shmem_finalize` behaves as under Sandia OpenSHMEM: a normal exit
/// finalizes (PE 0 warns) and the job ends with the program's status;
/// `_exit` while peers wait and a signal stay failures naming the PE.
#[test]
fn exit_without_finalize_finalizes_and_keeps_the_status() {
    let exe = compile("exit_cases", &[]);
    const WARNING: &str = "PE 0: shutting down without a call to shmem_finalize";
    let lines = |j: &fshmem_tests::Job| {
        (0..j.n)
            .filter(|pe| j.out.stdout.contains(&format!("PE {pe}: before the end")))
            .count()
    };
    for conduit in ["smp", "ipv6", "fpga", "ofi"] {
        let counts: &[usize] = match conduit {
            "smp" => &[1, 2, 4, 5],
            "ofi" => &[2],
            _ => &[2, 4],
        };
        for &n in counts {
            let run = |case: &str| {
                capi::job_on(
                    conduit,
                    n,
                    &exe,
                    &[case],
                    ofi_env(conduit),
                    fshmem_tests::JOB_TIMEOUT,
                )
            };
            let j = run("return");
            assert_eq!(j.out.code(), Some(0), "{conduit} return: {j:?}");
            assert_eq!(
                lines_with(&j.out.stderr, WARNING).len(),
                1,
                "{conduit}: {j:?}"
            );
            // The finalization at exit does not wait long: no PE says it
            // waits for the others.
            assert!(
                !j.out.stderr.contains("waiting at exit"),
                "{conduit}: {j:?}"
            );
            assert_eq!(lines(&j), n, "{conduit}: {j:?}");
            let j = run("start_pes");
            assert_eq!(j.out.code(), Some(0), "{conduit} start_pes: {j:?}");
            assert!(!j.out.stderr.contains(WARNING), "{conduit}: {j:?}");
            assert_eq!(lines(&j), n, "{conduit}: {j:?}");
            let j = run("exit3");
            assert_eq!(j.out.code(), Some(3), "{conduit} exit3: {j:?}");
            if n < 2 {
                continue;
            }
            let j = run("exit0_one");
            assert_eq!(j.out.code(), Some(0), "{conduit} exit0_one: {j:?}");
            assert_eq!(lines(&j), n, "{conduit}: {j:?}");
            let j = run("_exit");
            assert_ne!(j.out.code(), Some(0), "{conduit} _exit: {j:?}");
            assert!(!j.out.stdout.contains("passed the barrier"), "{j:?}");
            let oshrun = lines_with(&j.out.stderr, "oshrun: PE ");
            assert!(
                oshrun.len() == 1 && oshrun[0].contains("after PE 1 failed"),
                "{conduit} _exit: {j:?}"
            );
            let j = run("kill");
            assert_eq!(j.out.code(), Some(128 + 9), "{conduit} kill: {j:?}");
            let oshrun = lines_with(&j.out.stderr, "oshrun: PE ");
            assert!(
                oshrun.len() == 1
                    && (oshrun[0].starts_with("oshrun: PE 1 (pid ")
                        && oshrun[0].contains("killed by signal 9")
                        || oshrun[0].contains("after PE 1 failed")),
                "{conduit} kill: {j:?}"
            );
        }
    }
}

/// When one PE fails and oshrun stops the others, every line any PE
/// printed before reaches oshrun's output, and the failure is blamed on
/// the PE that failed, on every conduit (ofi over tcp), with and without
/// `--prefix`.
#[test]
fn output_is_never_lost_and_the_failed_pe_is_named() {
    let exe = compile("output_loss", &[]);
    for conduit in ["smp", "ipv6", "fpga", "ofi"] {
        let counts: &[usize] = if conduit == "ofi" {
            &[2, 3]
        } else {
            &[2, 4, 5]
        };
        for &n in counts {
            for prefix in [false, true] {
                let id = fshmem_tests::unique_job_id("out");
                let mut cmd = fshmem_tests::oshrun_cmd(&[
                    "-n",
                    &n.to_string(),
                    "--conduit",
                    conduit,
                    "--job-id",
                    &id,
                ]);
                if prefix {
                    cmd.arg("--prefix");
                }
                cmd.arg(&exe).envs(ofi_env(conduit).iter().copied());
                let out = fshmem_tests::run(&mut cmd, fshmem_tests::JOB_TIMEOUT);
                let what = format!("{conduit} {n} PEs prefix {prefix}: {out:?}");
                assert_eq!(out.code(), Some(1), "{what}");
                for pe in 0..n {
                    for i in 0..20 {
                        let line = format!("PE {pe} line {i}");
                        assert_eq!(
                            out.stdout.lines().filter(|l| l.ends_with(&line)).count(),
                            1,
                            "{line}: {what}"
                        );
                    }
                    let err = format!("PE {pe} to stderr");
                    assert_eq!(lines_with(&out.stderr, &err).len(), 1, "{what}");
                }
                assert!(!out.stdout.contains("unreachable"), "{what}");
                let culprit = format!(
                    "PE 1: shmem_long_put: target PE {} out of range (job has {n} PEs)",
                    n + 3
                );
                assert_eq!(lines_with(&out.stderr, &culprit).len(), 1, "{what}");
                let oshrun = lines_with(&out.stderr, "oshrun: PE ");
                assert!(
                    oshrun.len() == 1
                        && (oshrun[0].starts_with("oshrun: PE 1 (pid ")
                            || oshrun[0].contains("after PE 1 failed")),
                    "{what}"
                );
                assert!(fshmem_tests::shm_files(&id).is_empty(), "{what}");
            }
        }
    }
}

/// OpenSHMEM 1.6: initialization and finalization again (nested and in
/// rounds), `shmem_query_initialized`, sessions, `test_all` of an empty
/// set, const comparison vectors; on every conduit.
#[test]
fn openshmem_1_6_reinitialization_and_additions() {
    let reinit = compile("reinit", &[]);
    let v16 = compile("v16", &[]);
    for conduit in ["smp", "ipv6", "fpga"] {
        let counts: &[usize] = if conduit == "smp" {
            &[1, 2, 4, 5]
        } else {
            &[2, 4]
        };
        for &n in counts {
            let j = capi::job_on(conduit, n, &reinit, &[], &[], fshmem_tests::JOB_TIMEOUT);
            j.assert_ok_with(&format!("reinit: ok on {n} PEs"));
            j.assert_line("reinit: 3 rounds");
            assert!(j.out.stderr.is_empty(), "{conduit}: {j:?}");
            let j = capi::job_on(conduit, n, &v16, &[], &[], fshmem_tests::JOB_TIMEOUT);
            j.assert_ok_with(&format!("v16: ok on {n} PEs"));
        }
    }
}

/// The profiling interface: a tool that defines standard routines and
/// calls their `pshmem_` names counts every call and the program still
/// gets correct results, whether the tool is a shared library linked
/// before libshmem, preloaded, or an object linked with libshmem.a.
#[test]
fn a_profiling_tool_counts_calls_through_pshmem() {
    let tool = capi::compile_as("pshmem_tool", "libshmemtool.so", &["-shared", "-fPIC"]);
    let dir = tool.parent().expect("tool directory").display().to_string();
    let linked = capi::compile_as(
        "pshmem_prog",
        "pshmem_prog_linked",
        &[
            &format!("-L{dir}"),
            &format!("-Wl,-rpath,{dir}"),
            "-lshmemtool",
        ],
    );
    let plain = compile("pshmem_prog", &[]);
    let tool_src = capi::c_dir().join("pshmem_tool.c").display().to_string();
    let statically = capi::compile_as(
        "pshmem_prog",
        "pshmem_prog_static",
        &["-static-shmem", &tool_src],
    );
    let preload = tool.display().to_string();
    /// A program, the environment of its PEs, and whether the tool counts.
    type Run<'a> = (&'a std::path::Path, &'a [(&'a str, &'a str)], bool);
    let runs: [Run<'_>; 4] = [
        (&linked, &[], true),
        (&plain, &[("LD_PRELOAD", &preload)], true),
        (&statically, &[], true),
        (&plain, &[], false),
    ];
    for (exe, env, counted) in runs {
        for n in [1, 2, 4, 5] {
            let j = job_env(n, exe, &[], env);
            j.assert_ok_with(&format!("pshmem_prog: ok on {n} PEs"));
            let tool_lines = j.lines_starting("tool: ");
            if !counted {
                assert!(tool_lines.is_empty(), "{j:?}");
                continue;
            }
            for pe in 0..n {
                let want = format!(
                    "tool: PE {pe}: init 1 put 10 g 10 barrier_all 22 sum_reduce 1 malloc 1 free 1"
                );
                assert_eq!(
                    tool_lines.iter().filter(|l| **l == want).count(),
                    1,
                    "{exe:?} {env:?}: {j:?}"
                );
            }
        }
    }
}
