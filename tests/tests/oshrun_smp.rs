//! Real jobs on the smp conduit through `oshrun`: correctness at several PE
//! counts (including more PEs than cores), failure propagation, signals,
//! usage errors, and shared-memory cleanup.

use fshmem_tests::{
    bin, example, oshrun, oshrun_cmd, run, shm_files, spawn, unique_job_id, wait_for,
};
use std::process::Command;
use std::time::Duration;

/// Runs `smp_check` on `n` PEs and checks every PE reported success.
fn check_job(n: usize) {
    let job = unique_job_id("ok");
    let prog = example("smp_check");
    let out = oshrun(&[
        "-n".as_ref(),
        n.to_string().as_ref(),
        "--prefix".as_ref(),
        "--job-id".as_ref(),
        job.as_ref(),
        prog.as_os_str(),
    ]);
    assert_eq!(out.code(), Some(0), "{n} PEs: {out:?}");
    for r in 0..n {
        let line = format!("[pe {r}] smp_check: PE {r} of {n} ok");
        assert!(out.stdout.contains(&line), "missing {line:?} in {out:?}");
    }
    assert_eq!(out.stdout.lines().count(), n, "{out:?}");
    assert!(
        shm_files(&job).is_empty(),
        "left behind: {:?}",
        shm_files(&job)
    );
}

#[test]
fn one_pe() {
    check_job(1);
}

#[test]
fn two_pes() {
    check_job(2);
}

#[test]
fn four_pes() {
    check_job(4);
}

#[test]
fn five_pes() {
    check_job(5);
}

#[test]
fn eight_pes_oversubscribed_finish_promptly() {
    // 8 PEs on a 2-core machine: waits must yield for this to be quick.
    let job = unique_job_id("os");
    let prog = example("smp_check");
    let out = oshrun(&[
        "-np".as_ref(),
        "8".as_ref(),
        "--job-id".as_ref(),
        job.as_ref(),
        prog.as_os_str(),
        "300".as_ref(),
    ]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout.matches("of 8 ok").count(), 8, "{out:?}");
    assert!(
        out.elapsed < Duration::from_secs(20),
        "took {:?}",
        out.elapsed
    );
    assert!(shm_files(&job).is_empty());
}

#[test]
fn singleton_without_launcher_cleans_up() {
    let out = run(
        &mut Command::new(example("smp_check")),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(out.stdout.contains("PE 0 of 1 ok"), "{out:?}");
    // A singleton's job id is single<pid>; nothing of any singleton of this
    // kind may remain once it exited.
    let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("fshmem-single"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn failing_pe_status_is_propagated_and_others_stopped() {
    // PE 1 exits with 5 while the others sleep for two minutes outside the
    // runtime: only oshrun can stop them.
    let job = unique_job_id("ex");
    let prog = example("smp_fail");
    let out = oshrun(&[
        "-n".as_ref(),
        "4".as_ref(),
        "--job-id".as_ref(),
        job.as_ref(),
        prog.as_os_str(),
        "exit".as_ref(),
        "5".as_ref(),
    ]);
    assert_eq!(out.code(), Some(5), "{out:?}");
    assert!(
        out.stderr.contains("PE 1") && out.stderr.contains("status 5"),
        "{out:?}"
    );
    assert!(
        out.elapsed < Duration::from_secs(10),
        "took {:?}",
        out.elapsed
    );
    assert!(shm_files(&job).is_empty());
}

#[test]
fn pe_killed_by_signal_gives_128_plus_signo() {
    let job = unique_job_id("ab");
    let prog = example("smp_fail");
    let out = oshrun(&[
        "-n".as_ref(),
        "3".as_ref(),
        "--job-id".as_ref(),
        job.as_ref(),
        prog.as_os_str(),
        "abort".as_ref(),
    ]);
    assert_eq!(out.code(), Some(128 + 6), "{out:?}");
    assert!(
        out.stderr.contains("PE 1") && out.stderr.contains("SIGABRT"),
        "{out:?}"
    );
    assert!(
        out.elapsed < Duration::from_secs(10),
        "took {:?}",
        out.elapsed
    );
    assert!(shm_files(&job).is_empty());
}

#[test]
fn peers_detect_a_dead_pe_instead_of_hanging() {
    let prog = example("smp_fail");
    let out = oshrun(&[
        "-n".as_ref(),
        "4".as_ref(),
        prog.as_os_str(),
        "detect".as_ref(),
    ]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(
        out.stdout.matches("detected: PE 1 failed").count(),
        3,
        "{out:?}"
    );
}

#[test]
fn global_exit_ends_every_pe_with_its_status() {
    let prog = example("smp_fail");
    let out = oshrun(&[
        "-n".as_ref(),
        "4".as_ref(),
        prog.as_os_str(),
        "global-exit".as_ref(),
        "7".as_ref(),
    ]);
    assert_eq!(out.code(), Some(7), "{out:?}");
    assert!(!out.stderr.contains("passed a barrier"), "{out:?}");
}

#[test]
fn sigint_stops_the_job_and_removes_its_shared_memory() {
    // PE 0 attaches and waits for PEs that never attach, so the job's files
    // exist when oshrun is interrupted.
    let job = unique_job_id("si");
    let prog = example("smp_fail");
    let child = spawn(&mut oshrun_cmd(&[
        "-n".as_ref(),
        "3".as_ref(),
        "--job-id".as_ref(),
        job.as_ref(),
        prog.as_os_str(),
        "stall".as_ref(),
    ]));
    let ctl = format!("/dev/shm/fshmem-{job}-ctl");
    assert!(
        wait_for(Duration::from_secs(30), || std::path::Path::new(&ctl)
            .exists()),
        "the job never created {ctl}"
    );
    let pid = child.id();
    let kill = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success());
    let out = fshmem_tests::finish(child, Duration::from_secs(10));
    assert_eq!(out.code(), Some(130), "{out:?}");
    assert!(out.stderr.contains("SIGINT"), "{out:?}");
    assert!(
        shm_files(&job).is_empty(),
        "left behind: {:?}",
        shm_files(&job)
    );
}

#[test]
fn zero_pes_is_a_usage_error() {
    let out = oshrun(&["-n", "0", "true"]);
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(out.stderr.contains("'0'"), "{out:?}");
}

#[test]
fn missing_program_is_a_usage_error() {
    let out = oshrun(&["-n", "2"]);
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(out.stderr.contains("PROGRAM"), "{out:?}");
}

#[test]
fn program_that_cannot_start_fails_clearly() {
    let out = oshrun(&["-n", "2", "/nonexistent/fshmem-program"]);
    assert_eq!(out.code(), Some(127), "{out:?}");
    assert!(out.stderr.contains("cannot start PE 0"), "{out:?}");
}

#[test]
fn unknown_conduit_is_refused() {
    let out = oshrun(&["-n", "2", "--conduit", "tcp", "true"]);
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(out.stderr.contains("tcp"), "{out:?}");
}

#[test]
fn a_bad_conduit_variable_is_an_error_naming_it() {
    // Not silently smp: oshrun reads FSHMEM_CONDUIT when --conduit is not
    // given, and refuses a value that names no conduit.
    let out = run(
        oshrun_cmd(&["-n", "2", "true"]).env("FSHMEM_CONDUIT", "tcp"),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(
        out.stderr.contains("FSHMEM_CONDUIT=\"tcp\"")
            && out.stderr.contains("smp, ipv6, fpga or ofi"),
        "{out:?}"
    );
    // A good one is used: the PEs see it.
    let out = run(
        oshrun_cmd(&["-n", "1", "sh", "-c", "echo conduit=$FSHMEM_CONDUIT"])
            .env("FSHMEM_CONDUIT", "smp"),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(out.stdout.contains("conduit=smp"), "{out:?}");
}

#[test]
fn shmem_info_lists_every_layers_variables() {
    let out = run(
        oshrun_cmd(&["-n".as_ref(), "2".as_ref(), bin("hello").as_os_str()])
            .env("SHMEM_INFO", "1")
            .env("FSHMEM_PEER_TIMEOUT", "7s"),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    for var in [
        "SHMEM_SYMMETRIC_SIZE",
        "FSHMEM_REDUCE_ALGO",
        "FSHMEM_WAIT_TIMEOUT",
        "FSHMEM_IPV6_IMPAIR",
        "FSHMEM_FPGA_WINDOW",
        "FSHMEM_DEVSIM_IMPAIR",
        "FSHMEM_DEVSIM_COMPUTE",
        "FSHMEM_OFI_PROVIDER",
        "FSHMEM_RANK",
        "FSHMEM_CONDUIT",
    ] {
        assert!(out.stdout.contains(var), "{var} missing: {out:?}");
    }
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("FSHMEM_PEER_TIMEOUT"))
        .unwrap_or_default();
    assert!(
        line.contains("= 7s"),
        "the value in force is shown: {line:?}"
    );
}

#[test]
fn shmem_info_shows_the_launcher_rows_found() {
    let job = unique_job_id("info");
    let out = run(
        oshrun_cmd(&[
            "-n".as_ref(),
            "3".as_ref(),
            "--job-id".as_ref(),
            job.as_ref(),
            bin("hello").as_os_str(),
        ])
        .env("SHMEM_INFO", "1")
        .env_remove("PMI_RANK")
        .env_remove("PMIX_NAMESPACE"),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    let line = |var: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{var} ")))
            .unwrap_or_else(|| panic!("{var} missing: {out:?}"))
            .to_string()
    };
    // Every launcher's rows are listed: oshrun's with the values it set,
    // the others' as not found.
    assert!(line("FSHMEM_SIZE").contains("= 3 "), "{out:?}");
    assert!(
        line("FSHMEM_JOB_ID").contains(&format!("= {job} ")),
        "{out:?}"
    );
    for var in [
        "PMI_FD",
        "PMI_RANK",
        "PMIX_NAMESPACE",
        "SLURM_PROCID",
        "OMPI_COMM_WORLD_SIZE",
    ] {
        assert!(line(var).contains("= - "), "{var}: {out:?}");
    }
    let summary = out
        .stdout
        .lines()
        .find(|l| l.starts_with(&format!("fshmem job {job}: 3 PEs")))
        .unwrap_or_else(|| panic!("no job line: {out:?}"));
    assert!(
        summary.contains("launcher variables found: FSHMEM_RANK FSHMEM_SIZE FSHMEM_JOB_ID"),
        "{summary}"
    );
    assert!(!summary.contains("PMI"), "{summary}");
}

#[test]
fn shmem_debug_0_leaves_oshrun_quiet_and_1_makes_it_talk() {
    // A PE leaves a file of its job behind; oshrun removes it either way,
    // and says so only when SHMEM_DEBUG is on (0 is off, not "set").
    for (debug, talks) in [("0", false), ("no", false), ("1", true)] {
        let job = unique_job_id("dbg");
        let file = format!("/dev/shm/fshmem-{job}-ctl");
        let out = run(
            oshrun_cmd(&["-n", "1", "--job-id", &job, "touch", &file]).env("SHMEM_DEBUG", debug),
            Duration::from_secs(60),
        );
        assert_eq!(out.code(), Some(0), "{out:?}");
        assert!(shm_files(&job).is_empty(), "{file} left behind: {out:?}");
        let said = format!("oshrun: removed 1 shared-memory files of job {job}");
        assert_eq!(
            out.stderr.contains(&said),
            talks,
            "SHMEM_DEBUG={debug}: {out:?}"
        );
    }
    // A value that is neither is an error naming it, before any PE starts.
    let out = run(
        oshrun_cmd(&["-n", "1", "true"]).env("SHMEM_DEBUG", "sometimes"),
        Duration::from_secs(60),
    );
    assert_eq!(out.code(), Some(2), "{out:?}");
    assert!(
        out.stderr
            .contains("oshrun: SHMEM_DEBUG=\"sometimes\" is not valid"),
        "{out:?}"
    );
}

#[test]
fn a_bad_launcher_variable_stops_the_job_naming_it() {
    // Under oshrun (the table is checked before any PE starts) ...
    for (var, bad) in [("PMI_RANK", "zero"), ("SLURM_NTASKS", "4x")] {
        let out = run(
            oshrun_cmd(&["-n", "2", "true"]).env(var, bad),
            Duration::from_secs(60),
        );
        assert_eq!(out.code(), Some(2), "{var}: {out:?}");
        assert!(
            out.stderr.contains(&format!("{var}={bad:?} is not valid")),
            "{var}: {out:?}"
        );
    }
    // ... and in a program started without oshrun, at shmem_init.
    let out = run(
        Command::new(bin("hello"))
            .env("OMPI_COMM_WORLD_RANK", "r1")
            .env("OMPI_COMM_WORLD_SIZE", "2"),
        Duration::from_secs(60),
    );
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("OMPI_COMM_WORLD_RANK=\"r1\" is not valid"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("Hello"), "{out:?}");
}

#[test]
fn a_bad_conduit_setting_stops_the_job_before_it_starts() {
    for (var, bad) in [
        ("FSHMEM_PEER_TIMEOUT", "soon"),
        ("FSHMEM_IPV6_IMPAIR", "loss=90"),
        ("FSHMEM_FPGA_WINDOW", "big"),
    ] {
        let out = run(
            oshrun_cmd(&["-n", "2", "true"]).env(var, bad),
            Duration::from_secs(60),
        );
        assert_eq!(out.code(), Some(2), "{var}: {out:?}");
        assert!(
            out.stderr.contains(&format!("{var}={bad:?} is not valid")),
            "{var}: {out:?}"
        );
    }
}

#[test]
fn help_explains_every_option_and_variable() {
    let out = oshrun(&["--help"]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    for needle in [
        "--np",
        "-np",
        "--conduit",
        "--prefix",
        "--bind",
        "--job-id",
        "FSHMEM_RANK",
        "FSHMEM_SIZE",
        "FSHMEM_JOB_ID",
        "FSHMEM_CONDUIT",
        "SHMEM_SYMMETRIC_SIZE",
        "SHMEM_DEBUG",
        "SHMEM_INFO",
        "SHMEM_VERSION",
    ] {
        assert!(
            out.stdout.contains(needle),
            "--help lacks {needle}:\n{}",
            out.stdout
        );
    }
}

#[test]
fn unprefixed_output_passes_through() {
    let out = oshrun(&[
        "-n",
        "3",
        "--bind",
        "none",
        "sh",
        "-c",
        "echo rank=$FSHMEM_RANK/$FSHMEM_SIZE",
    ]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    let mut lines: Vec<&str> = out.stdout.lines().collect();
    lines.sort();
    assert_eq!(lines, ["rank=0/3", "rank=1/3", "rank=2/3"]);
}

#[test]
fn bind_core_pins_each_pe_to_one_cpu() {
    let script = "echo $FSHMEM_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)";
    let out = oshrun(&["-n", "3", "sh", "-c", script]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout.lines().count(), 3, "{out:?}");
    for line in out.stdout.lines() {
        let cpus = line.split_whitespace().nth(1).unwrap_or("");
        assert!(
            !cpus.is_empty() && cpus.bytes().all(|b| b.is_ascii_digit()),
            "PE not pinned to one CPU: {line:?}"
        );
    }
}
