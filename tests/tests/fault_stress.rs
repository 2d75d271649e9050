//! Under load: 8 PEs on the shared cores run `stress` (a seeded random mix
//! of puts, gets, atomics and barriers) for a bounded time, then check
//! every byte and counter exactly — on smp, on ipv6 with datagram loss,
//! duplication and reordering injected (`FSHMEM_IPV6_IMPAIR`), and on fpga
//! (8 PEs and 8 devsim boards) with the same impairment on the board links
//! (`FSHMEM_DEVSIM_IMPAIR`).

use fshmem_tests::{example, oshrun_cmd, run, shm_files, unique_job_id};
use std::time::Duration;

fn stress(n: usize, conduit: &str, impair: Option<&str>, secs: &str) {
    let id = unique_job_id("st");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", conduit, "--job-id", &id]);
    cmd.arg(example("stress")).args([secs, "1000000", "7"]);
    if let Some(i) = impair {
        cmd.env("FSHMEM_IPV6_IMPAIR", i);
        cmd.env("FSHMEM_DEVSIM_IMPAIR", i);
    }
    let out = run(&mut cmd, Duration::from_secs(40));
    let ctx = format!("{conduit} {impair:?}: {out:?}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    let ok = out
        .stdout
        .lines()
        .filter(|l| l.ends_with(&format!("on {n} PEs OK")))
        .count();
    assert_eq!(ok, n, "{ctx}");
    assert!(out.elapsed < Duration::from_secs(20), "{ctx}");
    assert!(shm_files(&id).is_empty());
}

#[test]
fn smp_8_pes_random_mix_is_exact() {
    stress(8, "smp", None, "4");
}

#[test]
fn ipv6_8_pes_random_mix_with_loss_duplication_and_reordering_is_exact() {
    stress(8, "ipv6", Some("loss=5,dup=2,reorder=10"), "4");
}

#[test]
fn fpga_8_pes_random_mix_with_lossy_board_links_is_exact() {
    stress(8, "fpga", Some("loss=5,dup=2,reorder=10"), "4");
}
