//! Every bootstrap reports like oshrun: under the rendezvous (ranks started
//! one by one with `FSHMEM_BOOTSTRAP`), MPICH's `mpiexec.hydra` (PMI-1),
//! Open MPI's `mpirun` (PMIx) and Slurm's `srun` (PMIx and PMI-2, on a
//! one-node cluster this test starts), a PE's error names that PE's own
//! rank, the job id is derived when `FSHMEM_JOB_ID` is not set, every rank
//! that leaves because another rank ended the job says which, and no line
//! any PE printed before is lost.
//!
//! Needs `oshcc`, `libshmem.so` and the launchers (Debian's mpich,
//! openmpi-bin, slurm-wlm and munge; `scripts/test.sh` installs them).

#[path = "support/capi.rs"]
mod capi;

use capi::{compile, lines_with};
use fshmem_tests::{RunOutput, finish, run, slurm::Slurm, spawn};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// `out` is a job of `n` PEs of `output_loss` (PE 1 puts to a PE out of
/// range after two rounds of output; the others wait in a barrier): PE 1
/// names itself, every other PE says PE 1 ended the job, and every line
/// printed before the failure came out.
///
/// Under Hydra and Open MPI's mpirun, which kill every rank as soon as one
/// exits with a failure, this holds only because no PE leaving leaves
/// before the others have said why: the first one out would get the
/// others killed.
fn reported_like_oshrun(out: &Merged, n: usize, what: &str) {
    let what = format!("{what}, {n} PEs: {out:?}");
    assert!(out.failed, "{what}");
    let err = format!(
        "PE 1: shmem_long_put: target PE {} out of range (job has {n} PEs)",
        n + 3
    );
    assert_eq!(lines_with(&out.stderr, &err).len(), 1, "{what}");
    for pe in (0..n).filter(|&p| p != 1) {
        let why = format!("PE {pe}: leaving with status 1: PE 1 ended the job");
        let said = lines_with(&out.stderr, &format!("PE {pe}: "));
        assert_eq!(said, [why.as_str()], "{what}");
    }
    for pe in 0..n {
        for i in 0..20 {
            let line = format!("PE {pe} line {i}");
            assert_eq!(
                out.stdout.lines().filter(|l| *l == line).count(),
                1,
                "{what}"
            );
        }
        let err_line = format!("PE {pe} to stderr");
        assert_eq!(lines_with(&out.stderr, &err_line).len(), 1, "{what}");
    }
    assert!(!out.stdout.contains("unreachable"), "{what}");
}

/// What a job printed and whether it failed (one launcher's, or several
/// ranks' started by hand, merged in rank order).
#[derive(Debug)]
struct Merged {
    failed: bool,
    stdout: String,
    stderr: String,
}

impl From<RunOutput> for Merged {
    fn from(o: RunOutput) -> Merged {
        Merged {
            failed: o.code() != Some(0),
            stdout: o.stdout,
            stderr: o.stderr,
        }
    }
}

/// A loopback port free now, for a rendezvous server.
fn free_port() -> u16 {
    std::net::TcpListener::bind("[::1]:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// Starts `n` ranks of `prog` by hand with `FSHMEM_RANK`/`FSHMEM_SIZE`
/// and `env`, no `FSHMEM_JOB_ID`; their outputs merged in rank order.
fn by_hand(n: usize, prog: &Path, env: &[(&str, &str)]) -> Merged {
    let ranks: Vec<_> = (0..n)
        .map(|r| {
            let mut c = Command::new(prog);
            c.env_remove("FSHMEM_JOB_ID")
                .env("FSHMEM_RANK", r.to_string())
                .env("FSHMEM_SIZE", n.to_string())
                .envs(env.iter().copied());
            spawn(&mut c)
        })
        .collect();
    let mut all = Merged {
        failed: false,
        stdout: String::new(),
        stderr: String::new(),
    };
    for r in ranks {
        let o = finish(r, TIMEOUT);
        all.failed |= o.code() != Some(0);
        all.stdout.push_str(&o.stdout);
        all.stderr.push_str(&o.stderr);
    }
    all
}

/// Ranks started by hand: without `FSHMEM_JOB_ID` and a rendezvous each
/// rank's error names its own rank and says what to set; with the
/// rendezvous the job id is derived from its address, and a failing rank
/// is reported as under oshrun.
#[test]
fn the_rendezvous_reports_like_oshrun() {
    let hello = fshmem_tests::any_bin("hello");
    for n in [1, 2, 3, 4] {
        let out = by_hand(n, &hello, &[("FSHMEM_CONDUIT", "ipv6")]);
        let what = format!("no job id, {n} PEs: {out:?}");
        assert!(out.failed, "{what}");
        for pe in 0..n {
            let l = format!("PE {pe}: shmem_init: bootstrap: FSHMEM_JOB_ID is not set: ");
            let l = lines_with(&out.stderr, &l);
            assert_eq!(l.len(), 1, "{what}");
            assert!(l[0].contains("or FSHMEM_BOOTSTRAP, from which it is derived"));
        }
        assert!(!out.stdout.contains("hello:"), "{what}");
    }
    let exe = compile("output_loss", &[]);
    for n in [2, 3, 4] {
        let boot = format!("[::1]:{}", free_port());
        let env = [("FSHMEM_CONDUIT", "ipv6"), ("FSHMEM_BOOTSTRAP", &boot)];
        let out = by_hand(n, &exe, &env);
        reported_like_oshrun(&out, n, "rendezvous");
    }
    // A job that does not fail runs to the end under the derived id.
    let boot = format!("[::1]:{}", free_port());
    let env = [("FSHMEM_CONDUIT", "ipv6"), ("FSHMEM_BOOTSTRAP", &boot)];
    let out = by_hand(3, &hello, &env);
    assert!(!out.failed, "{out:?}");
    let l = lines_with(&out.stdout, "hello: 3 PEs");
    assert!(l.len() == 1 && l[0].ends_with("OK"), "{out:?}");
}

/// MPICH's Hydra (PMI-1 on `PMI_FD`): the job id comes from the KVS name.
/// On the default conduit (ipv6, routed through shared memory on one
/// host) and on smp alone, whose PEs learn of the end differently.
#[test]
fn mpich_hydra_reports_like_oshrun() {
    let hydra = "/usr/bin/mpiexec.hydra";
    assert!(
        Path::new(hydra).is_file(),
        "{hydra} is missing: install Debian's mpich (scripts/test.sh does)"
    );
    let exe = compile("output_loss", &[]);
    for conduit in [None, Some("smp")] {
        for n in [2, 3, 4] {
            let mut c = Command::new(hydra);
            c.env_remove("FSHMEM_JOB_ID").env_remove("FSHMEM_CONDUIT");
            if let Some(conduit) = conduit {
                c.env("FSHMEM_CONDUIT", conduit);
            }
            c.args(["-n", &n.to_string()]).arg(&exe);
            let what = format!("mpiexec.hydra, FSHMEM_CONDUIT {conduit:?}");
            reported_like_oshrun(&run(&mut c, TIMEOUT).into(), n, &what);
        }
    }
}

/// Open MPI's mpirun (its PMIx server): the job id comes from the PMIx
/// namespace.
#[test]
fn open_mpi_mpirun_reports_like_oshrun() {
    let mpirun = "/usr/bin/mpirun.openmpi";
    assert!(
        Path::new(mpirun).is_file(),
        "{mpirun} is missing: install Debian's openmpi-bin (scripts/test.sh does)"
    );
    let exe = compile("output_loss", &[]);
    for n in [2, 3, 4] {
        let mut c = Command::new(mpirun);
        c.env_remove("FSHMEM_JOB_ID")
            .args([
                "--allow-run-as-root",
                "--oversubscribe",
                "--bind-to",
                "none",
            ])
            .args(["-n", &n.to_string()])
            .arg(&exe);
        reported_like_oshrun(&run(&mut c, TIMEOUT).into(), n, "mpirun");
    }
}

/// Slurm's srun through PMIx and through PMI-2 (which serves PMI-1).
#[test]
fn slurm_srun_reports_like_oshrun() {
    let exe = compile("output_loss", &[]);
    let slurm = Slurm::start("report");
    for (mpi, n) in [("pmix", 3), ("pmi2", 3)] {
        let mut c = slurm.srun(&[
            "-n".as_ref(),
            n.to_string().as_ref(),
            format!("--mpi={mpi}").as_ref(),
            exe.as_os_str(),
        ]);
        c.env_remove("FSHMEM_JOB_ID");
        let what = format!("srun --mpi={mpi}");
        reported_like_oshrun(&run(&mut c, TIMEOUT).into(), n, &what);
    }
}
