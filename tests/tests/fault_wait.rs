//! FSHMEM_WAIT_TIMEOUT: a wait that makes no progress reports which PE
//! waits on what and ends the job (status 124) within the timeout plus a
//! small margin, on smp, ipv6 and fpga; bad values are refused by name.

use fshmem_tests::{example, oshrun_cmd, run, shm_files, unique_job_id};
use std::time::Duration;

fn job(conduit: &str, mode: &str, timeout: &str) -> fshmem_tests::RunOutput {
    let id = unique_job_id("wt");
    let mut cmd = oshrun_cmd(&["-n", "4", "--conduit", conduit, "--job-id", &id]);
    cmd.arg(example("fault")).arg(mode);
    cmd.env("FSHMEM_WAIT_TIMEOUT", timeout);
    let out = run(&mut cmd, Duration::from_secs(30));
    assert!(shm_files(&id).is_empty());
    out
}

/// The line of `stderr` that starts with `head` (a PE's timeout report),
/// and the seconds it says the PE waited: at least `timeout`, and (the
/// report comes from the wait's own periodic check) not much more.
fn waited<'a>(stderr: &'a str, head: &str, timeout: f64) -> Option<(&'a str, f64)> {
    let line = stderr.lines().find(|l| l.starts_with(head))?;
    let secs: f64 = line
        .split(": no progress for ")
        .nth(1)?
        .split(" s ")
        .next()?
        .parse()
        .ok()?;
    (secs >= timeout && secs < timeout + 2.0).then_some((line, secs))
}

#[test]
fn wait_until_on_a_word_nobody_sets_ends_the_job() {
    for conduit in ["smp", "ipv6", "fpga"] {
        let out = job(conduit, "wait-until", "1");
        assert_eq!(out.code(), Some(124), "{conduit}: {out:?}");
        let (line, _) = waited(&out.stderr, "PE 3: shmem_wait_until: no progress for ", 1.0)
            .unwrap_or_else(|| panic!("{conduit}: no timeout report: {out:?}"));
        assert!(
            line.contains(" s waiting for element 0 (offset 0x")
                && line.contains("to become == 5 (currently 0)"),
            "{conduit}: {out:?}"
        );
        assert!(out.elapsed < Duration::from_secs(5), "{conduit}: {out:?}");
    }
}

#[test]
fn barrier_with_an_absent_pe_names_who_is_awaited() {
    for conduit in ["smp", "ipv6", "fpga"] {
        let out = job(conduit, "wait-barrier", "0.8");
        assert_eq!(out.code(), Some(124), "{conduit}: {out:?}");
        let reported = out.stderr.lines().filter_map(|l| {
            let at = l.find("shmem_barrier_all: ")?;
            let (line, _) = waited(&l[at..], "shmem_barrier_all: no progress for ", 0.8)?;
            line.contains(" s waiting for PE ").then_some(())
        });
        assert!(reported.count() >= 1, "{conduit}: {out:?}");
        assert!(out.elapsed < Duration::from_secs(5), "{conduit}: {out:?}");
    }
}

#[test]
fn bad_timeouts_are_refused_by_name_and_info_lists_it() {
    for bad in ["abc", "-1", "1e99", "nan"] {
        let out = job("smp", "input", bad);
        assert_ne!(out.code(), Some(0), "{bad}: {out:?}");
        assert!(
            out.stderr.contains(&format!("FSHMEM_WAIT_TIMEOUT={bad:?}")),
            "{bad}: {out:?}"
        );
    }
    let mut cmd = oshrun_cmd(&["-n", "1"]);
    cmd.arg(example("fault"))
        .arg("input")
        .env("SHMEM_INFO", "1");
    let out = run(&mut cmd, Duration::from_secs(30));
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(out.stdout.contains("FSHMEM_WAIT_TIMEOUT"), "{out:?}");
}
