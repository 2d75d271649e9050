//! The same binaries under the launchers HPC sites use, with no oshrun:
//! Open MPI's `mpirun` (its PMIx server bootstraps the job) and Slurm's
//! `srun` on a one-node cluster this test starts (`--mpi=pmix`, and
//! `--mpi=pmi2`, whose server also speaks PMI-1). Each job runs on the
//! ipv6 conduit, which a launcher selects (one under each launcher also
//! on ofi); results must be exact.

use fshmem_tests::{any_bin, example, run, slurm::Slurm};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

fn mpirun(n: usize) -> Command {
    let p = "/usr/bin/mpirun.openmpi";
    assert!(
        Path::new(p).is_file(),
        "{p} is missing: install Debian's openmpi-bin (scripts/test.sh does)"
    );
    let mut c = Command::new(p);
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "none",
    ])
    .args(["-n", &n.to_string()]);
    c
}

fn passed(out: &fshmem_tests::RunOutput, n: usize) {
    assert_eq!(out.code(), Some(0), "{out:?}");
    let tail = format!("checks on each of {n} PEs passed");
    let l: Vec<_> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("api_check:"))
        .collect();
    assert!(l.len() == 1 && l[0].ends_with(&tail), "{out:?}");
}

/// The line `SHMEM_INFO=1` prints about the job (PE 0 only).
fn job_line(out: &fshmem_tests::RunOutput) -> &str {
    let l: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("fshmem job "))
        .collect();
    assert_eq!(l.len(), 1, "{out:?}");
    l[0]
}

/// The launcher variables a job line lists as found.
fn found(job_line: &str) -> Vec<&str> {
    job_line
        .split_once("launcher variables found: ")
        .map_or(Vec::new(), |(_, v)| v.split(' ').collect())
}

#[test]
fn open_mpi_mpirun_bootstraps_over_pmix_at_1_2_4_5_pes() {
    for n in [1, 2, 4, 5] {
        let out = run(mpirun(n).arg(example("api_check")), TIMEOUT);
        passed(&out, n);
    }
    // The ofi conduit under the same launcher.
    let out = run(
        mpirun(4)
            .args([
                "-x",
                "FSHMEM_CONDUIT=ofi",
                "-x",
                "FSHMEM_OFI_PROVIDER=tcp;ofi_rxm",
            ])
            .args(["-x", "FSHMEM_OFI_DOMAIN=lo", "-x", "SHMEM_INFO=1"])
            .arg(example("api_check")),
        TIMEOUT,
    );
    passed(&out, 4);
    let job = job_line(&out);
    assert!(job.contains(": 4 PEs, bootstrap PMIx namespace "), "{job}");
    for var in [
        "PMIX_NAMESPACE",
        "PMIX_RANK",
        "OMPI_COMM_WORLD_RANK",
        "FSHMEM_CONDUIT",
    ] {
        assert!(found(job).contains(&var), "{var}: {job}");
    }
    let out = run(mpirun(3).arg(any_bin("matmul")), TIMEOUT);
    assert_eq!(out.code(), Some(0), "{out:?}");
    let l: Vec<_> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("matmul n="))
        .collect();
    assert!(l.len() == 1 && l[0].ends_with("OK"), "{out:?}");
}

/// A PE that a PMIx launcher started, but that cannot load the PMIx
/// client library, says which library and how to fix it, and the job
/// ends non-zero at once.
#[test]
fn a_missing_pmix_library_is_a_clear_error() {
    let lib = "/nonexistent/libpmix.so.2";
    let out = run(
        mpirun(2)
            .args(["-x", &format!("FSHMEM_PMIX_LIBRARY={lib}")])
            .arg(any_bin("hello")),
        TIMEOUT,
    );
    assert_ne!(out.code(), Some(0), "{out:?}");
    let msg = format!("the PMIx client library {lib} cannot be loaded");
    assert!(out.stderr.contains(&msg), "{out:?}");
    assert!(out.stderr.contains("libpmix2"), "{out:?}");
    assert!(!out.stdout.contains("Hello from"), "{out:?}");
}

#[test]
fn slurm_srun_bootstraps_over_pmix_and_pmi2() {
    let slurm = Slurm::start("launchers");
    // 4 PEs through PMIx: the conformance check and a real program.
    let out = run(
        &mut slurm.srun(&[
            "-n".as_ref(),
            "4".as_ref(),
            "--mpi=pmix".as_ref(),
            example("api_check").as_os_str(),
        ]),
        TIMEOUT,
    );
    passed(&out, 4);
    let out = run(
        &mut slurm.srun(&[
            "-n".as_ref(),
            "4".as_ref(),
            "--mpi=pmix".as_ref(),
            example("smp_check").as_os_str(),
            "10".as_ref(),
        ]),
        TIMEOUT,
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    for r in 0..4 {
        let want = format!("smp_check: PE {r} of 4 ok");
        assert!(out.stdout.lines().any(|l| l == want), "{out:?}");
    }
    // The ofi conduit (tcp;ofi_rxm on loopback) started by srun.
    let out = run(
        slurm
            .srun(&[
                "-n".as_ref(),
                "4".as_ref(),
                "--mpi=pmix".as_ref(),
                example("api_check").as_os_str(),
            ])
            .env("FSHMEM_CONDUIT", "ofi")
            .env("FSHMEM_OFI_PROVIDER", "tcp;ofi_rxm")
            .env("FSHMEM_OFI_DOMAIN", "lo")
            .env("SHMEM_INFO", "1"),
        TIMEOUT,
    );
    passed(&out, 4);
    assert!(out.stdout.contains("provider tcp;ofi_rxm"), "{out:?}");
    // SHMEM_INFO shows the service chosen and the launcher rows found.
    let job = job_line(&out);
    assert!(job.contains(": 4 PEs, bootstrap PMIx namespace "), "{job}");
    for var in [
        "PMIX_NAMESPACE",
        "PMIX_RANK",
        "SLURM_PROCID",
        "SLURM_NTASKS",
    ] {
        assert!(found(job).contains(&var), "{var}: {job}");
    }
    assert!(!found(job).contains(&"FSHMEM_RANK"), "{job}");
    // 5 PEs through Slurm's PMI-2 plugin, which serves PMI-1 clients.
    let out = run(
        slurm
            .srun(&[
                "-n".as_ref(),
                "5".as_ref(),
                "--mpi=pmi2".as_ref(),
                example("api_check").as_os_str(),
            ])
            .env("SHMEM_INFO", "1"),
        TIMEOUT,
    );
    passed(&out, 5);
    let job = job_line(&out);
    assert!(
        job.contains(": 5 PEs, bootstrap PMI-1 on descriptor "),
        "{job}"
    );
    for var in ["PMI_FD", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"] {
        assert!(found(job).contains(&var), "{var}: {job}");
    }
    // Without a PMI plugin there is no bootstrap service: an error that
    // says what to set, not a hang.
    let out = run(
        &mut slurm.srun(&[
            "-n".as_ref(),
            "2".as_ref(),
            "--mpi=none".as_ref(),
            any_bin("hello").as_os_str(),
        ]),
        TIMEOUT,
    );
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(out.stderr.contains("no bootstrap service"), "{out:?}");
    assert!(out.stderr.contains("srun --mpi=pmix"), "{out:?}");
}
