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

/// The active set of every PE in the `*_set` cases of `coll_agree`, as
/// described: the last PE's, and the others'.
fn sets(n: usize) -> (String, String) {
    let set = |start: usize, size: usize| {
        format!("on the active set PE_start {start}, logPE_stride 0, PE_size {size}")
    };
    if n == 2 {
        (set(0, 2), set(1, 1))
    } else {
        (set(0, n), set(1, n - 1))
    }
}

/// What the first PE of the team (PE 0, or PE 1 in `team_reduce` on 3 or
/// more PEs) and the last PE called in each case of `coll_agree` whose
/// PEs all report the same two calls: (first PE, its call, the last PE's
/// call).
fn disagreement(case: &str, n: usize) -> (usize, String, String) {
    let pair =
        |call: &str, a: &str, b: &str| (0, format!("{call} with {a}"), format!("{call} with {b}"));
    let whole = format!("on the active set PE_start 0, logPE_stride 0, PE_size {n}");
    match case {
        "bcast_root" => pair(
            "shmem_int_broadcast",
            "root 0, 10 elements of 4 bytes",
            "root 1, 10 elements of 4 bytes",
        ),
        "bcast_root_range" => pair(
            "shmem_int_broadcast",
            "root 0, 10 elements of 4 bytes",
            &format!("root {n}, 10 elements of 4 bytes"),
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
            0,
            "shmem_int_sum_reduce with 4 elements of 4 bytes".to_string(),
            "shmem_int_max_reduce with 4 elements of 4 bytes".to_string(),
        ),
        "fcollect_count" => pair(
            "shmem_int_fcollect",
            "2 elements of 4 bytes",
            "3 elements of 4 bytes",
        ),
        "fcollect_size" => (
            0,
            "shmem_int_fcollect with 2 elements of 4 bytes".to_string(),
            "shmem_long_fcollect with 2 elements of 8 bytes".to_string(),
        ),
        "collect_size" => (
            0,
            "shmem_int_collect with elements of 4 bytes".to_string(),
            "shmem_long_collect with elements of 8 bytes".to_string(),
        ),
        "alltoall_block" => pair(
            "shmem_int_alltoall",
            "blocks of 1 elements of 4 bytes",
            "blocks of 2 elements of 4 bytes",
        ),
        "alltoalls_stride" => pair(
            "shmem_int_alltoalls",
            "blocks of 2 elements of 4 bytes, strides dst 1 sst 1",
            "blocks of 2 elements of 4 bytes, strides dst 2 sst 1",
        ),
        "inscan_count" => pair(
            "shmem_int_sum_inscan",
            "4 elements of 4 bytes (inclusive)",
            "5 elements of 4 bytes (inclusive)",
        ),
        "exscan_count" => pair(
            "shmem_int_sum_exscan",
            "4 elements of 4 bytes (exclusive)",
            "3 elements of 4 bytes (exclusive)",
        ),
        "team_reduce" => (
            usize::from(n >= 3),
            "shmem_int_sum_reduce with 4 elements of 4 bytes".to_string(),
            "shmem_int_sum_reduce with 5 elements of 4 bytes".to_string(),
        ),
        "to_all" => (
            0,
            format!("shmem_long_sum_to_all {whole} with 2 elements of 8 bytes"),
            format!("shmem_long_sum_to_all {whole} with 3 elements of 8 bytes"),
        ),
        other => panic!("no case {other}"),
    }
}

/// The cases of `coll_agree` that [`disagreement`] describes, one or more
/// per family of collectives.
const CASES: [&str; 16] = [
    "bcast_root",
    "bcast_root_range",
    "bcast_count",
    "reduce_count",
    "reduce_zero",
    "reduce_op",
    "fcollect_count",
    "fcollect_size",
    "collect_size",
    "alltoall_block",
    "alltoalls_stride",
    "inscan_count",
    "exscan_count",
    "team_reduce",
    "to_all",
    "bcast_root_all_bad",
];

/// Checks the job of `coll_agree <case>` on `n` PEs: status 1, no PE
/// returned from the collective, and every PE that takes part printed one
/// line naming the two PEs and their two calls (each PE names its own
/// call).
fn assert_reported(j: &fshmem_tests::Job, case: &str, n: usize, what: &str) {
    assert_eq!(j.out.code(), Some(1), "{case} {what}: {j:?}");
    assert!(!j.out.stdout.contains("returned"), "{case} {what}: {j:?}");
    if case == "bcast_root_all_bad" {
        // The PEs agree on a root that no PE of the team has: each says so.
        for pe in 0..n {
            let want =
                format!("PE {pe}: shmem_int_broadcast: root -1 is not in the team of {n} PEs");
            assert_eq!(
                lines_with(&j.out.stderr, &want).len(),
                1,
                "{case} {what}: missing {want:?} in {j:?}"
            );
        }
        return;
    }
    let (first_pe, first, other) = disagreement(case, n);
    for pe in first_pe..n {
        let mine = if pe == n - 1 { &other } else { &first };
        let call = mine.split(' ').next().unwrap_or("");
        let want = format!(
            "PE {pe}: {call}: the PEs disagree: PE {first_pe} called {first}, PE {} called {other}",
            n - 1
        );
        assert_eq!(
            lines_with(&j.out.stderr, &want).len(),
            1,
            "{case} {what}: missing {want:?} in {j:?}"
        );
    }
    // A PE outside the team says nothing of it.
    assert_eq!(
        lines_with(&j.out.stderr, "the PEs disagree").len(),
        n - first_pe,
        "{case} {what}: {j:?}"
    );
}

/// A collective whose arguments differ between PEs ends the job with
/// status 1 after every PE has printed one line naming both PEs and both
/// calls; no PE returns from the collective. Covers broadcast (root,
/// count, a root out of range on one PE), reductions, fcollect and collect
/// (count, element size), alltoall(s) (block, stride), the 1.6 scans, a
/// team other than the world, and an active-set reduction.
#[test]
fn collectives_report_arguments_that_differ_between_pes() {
    let exe = compile("coll_agree", &[]);
    let runs: Vec<(usize, &[(&str, &str)])> = vec![
        (2, &[]),
        (3, &[]),
        (4, &[]),
        (5, &[]),
        (5, &[("FSHMEM_BARRIER_ALGO", "tree")]),
    ];
    for (n, env) in runs {
        for case in CASES {
            let j = job_env(n, &exe, &[case], env);
            assert_reported(&j, case, n, &format!("on {n} PEs {env:?}"));
        }
    }
    // Arguments that agree pass, also when PEs name the same type
    // differently (int and int32_t).
    for n in [1, 2, 3, 4, 5] {
        let j = job_env(n, &exe, &["ok"], &[]);
        j.assert_ok_with(&format!("coll_agree: ok on {n} PEs"));
    }
}

/// Checks the job of a `*_set` case of `coll_agree` (`call` on an active
/// set that the last PE gives differently): status 1 and, on every PE, one
/// line naming the last PE's set and the set of another PE. With two PEs
/// the last PE's set is itself alone: it returns, finalizes, and is
/// reported so (from the finalization).
fn assert_set_reported(j: &fshmem_tests::Job, call: &str, args: &str, n: usize, what: &str) {
    assert_eq!(j.out.code(), Some(1), "{call} {what}: {j:?}");
    let (theirs, odd) = sets(n);
    let with = |set: &str| {
        if args.is_empty() {
            format!("{call} {set}")
        } else {
            format!("{call} {set} with {args}")
        }
    };
    let last = n - 1;
    let (other, returned) = if n == 2 {
        (format!("{}, then shmem_finalize", with(&odd)), 1)
    } else {
        (with(&odd), 0)
    };
    assert_eq!(
        j.out.stdout.matches("returned").count(),
        returned,
        "{call} {what}: {j:?}"
    );
    let lines = lines_with(&j.out.stderr, "the PEs disagree");
    assert_eq!(lines.len(), n, "{call} {what}: {j:?}");
    // Every PE names the same two PEs: the last one, and PE 0 or another
    // PE whose set it received (whichever found it first).
    let tail = |l: &str| {
        l.split_once(": the PEs disagree: ")
            .map(|(_, t)| t.to_string())
    };
    let first_tail = tail(lines[0]).unwrap_or_default();
    let named = (0..last).find(|a| {
        first_tail == format!("PE {a} called {}, PE {last} called {other}", with(&theirs))
    });
    assert!(named.is_some(), "{call} {what}: {first_tail:?} in {j:?}");
    for pe in 0..n {
        let mine = if n == 2 && pe == last {
            "shmem_finalize"
        } else {
            call
        };
        let want = format!("PE {pe}: {mine}: the PEs disagree: {first_tail}");
        assert_eq!(
            lines_with(&j.out.stderr, &want).len(),
            1,
            "{call} {what}: missing {want:?} in {j:?}"
        );
    }
}

/// The deprecated active-set routines (sized broadcast, fcollect, a
/// `to_all` reduction, the barrier) report PEs that pass different active
/// sets on every PE, naming both PEs and both sets: on 2 PEs, where the
/// last PE's set holds itself alone, and on 3 and 5 PEs, where it leaves
/// out PE 0.
#[test]
fn active_set_collectives_report_sets_that_differ_between_pes() {
    let exe = compile("coll_agree", &[]);
    for n in [2, 3, 5] {
        for (case, call, args) in SET_CASES {
            let j = job_env(n, &exe, &[case], &[]);
            assert_set_reported(&j, call, args, n, &format!("on {n} PEs"));
        }
    }
}

/// The active-set cases: the case, the routine, its arguments as reported.
const SET_CASES: [(&str, &str, &str); 4] = [
    (
        "to_all_set",
        "shmem_long_sum_to_all",
        "2 elements of 8 bytes",
    ),
    (
        "bcast32_set",
        "shmem_broadcast32",
        "root 0, 4 elements of 4 bytes",
    ),
    (
        "fcollect64_set",
        "shmem_fcollect64",
        "2 elements of 8 bytes",
    ),
    ("barrier_set", "shmem_barrier", ""),
];

/// The argument check on the ipv6 and fpga conduits at 2 and 3 PEs, one
/// case or more of every family: broadcast, reduction, (f)collect,
/// alltoall(s), scan, a split team, and the active-set routines.
#[test]
fn collectives_report_differing_arguments_on_ipv6_and_fpga() {
    let exe = compile("coll_agree", &[]);
    let cases = [
        "bcast_root",
        "bcast_root_range",
        "reduce_count",
        "fcollect_size",
        "collect_size",
        "alltoalls_stride",
        "inscan_count",
        "team_reduce",
        "to_all",
    ];
    for conduit in ["ipv6", "fpga"] {
        for n in [2, 3] {
            let run = |case: &str| {
                capi::job_on(conduit, n, &exe, &[case], &[], fshmem_tests::JOB_TIMEOUT)
            };
            for case in cases {
                assert_reported(&run(case), case, n, &format!("{conduit} on {n} PEs"));
            }
            for (case, call, args) in SET_CASES {
                assert_set_reported(&run(case), call, args, n, &format!("{conduit} on {n} PEs"));
            }
            let j = run("ok");
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

/// Text still in a PE's stdout buffer when oshrun stops it comes out: a
/// line without its newline, and a stream the program made fully
/// buffered, from PEs that wait outside the library (where only the stop
/// signal ends them), on smp, ipv6 and fpga, with and without `--prefix`.
#[test]
fn output_is_never_lost_when_a_stopped_pe_had_it_buffered() {
    let exe = compile("output_loss", &[]);
    for conduit in ["smp", "ipv6", "fpga"] {
        for n in [2, 3] {
            for mode in ["partial", "full"] {
                for prefix in [false, true] {
                    let id = fshmem_tests::unique_job_id("buf");
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
                    cmd.arg(&exe).arg(mode);
                    let out = fshmem_tests::run(&mut cmd, fshmem_tests::JOB_TIMEOUT);
                    let what = format!("{conduit} {n} PEs {mode} prefix {prefix}: {out:?}");
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
                        if mode == "partial" {
                            let tail = format!("PE {pe} tail-without-newline");
                            assert_eq!(out.stdout.matches(&tail).count(), 1, "{what}");
                        }
                    }
                    let culprit = format!(
                        "PE 1: shmem_long_put: target PE {} out of range (job has {n} PEs)",
                        n + 3
                    );
                    assert_eq!(lines_with(&out.stderr, &culprit).len(), 1, "{what}");
                    assert!(fshmem_tests::shm_files(&id).is_empty(), "{what}");
                }
            }
        }
    }
}

/// OpenSHMEM 1.6: initialization and finalization again (nested and in
/// rounds), `shmem_query_initialized`, sessions, `test_all` of an empty
/// set, const comparison vectors, `shmem_team_ptr` (a usable pointer to a
/// peer of the host on smp, NULL to one it cannot reach on ipv6 and fpga),
/// `shmem_pe_quiet`; on smp, ipv6 and fpga.
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
            // Every PE maps every other's memory on smp; under oshrun on
            // ipv6 and fpga each PE is a host of its own.
            let reach = if conduit == "smp" {
                "reachable"
            } else {
                "unreachable"
            };
            let j = capi::job_on(conduit, n, &v16, &[reach], &[], fshmem_tests::JOB_TIMEOUT);
            j.assert_ok_with(&format!("v16: ok on {n} PEs"));
            assert!(j.out.stderr.is_empty(), "{conduit}: {j:?}");
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
                    "tool: PE {pe}: init 1 put 10 g 10 barrier_all 22 sum_reduce 1 malloc 1 free 1 \
                     am_poll 3"
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
