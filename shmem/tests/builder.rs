//! Configuring in code with `shmem::Builder` on a singleton job (no
//! launcher: rank 0 of 1). The runtime initializes once per process, so
//! this file holds a single test.

use shmem::{Builder, ConduitKind, ShmemError, ThreadLevel};
use std::time::Duration;

fn set(var: &str, value: &str) {
    // SAFETY: this test binary has a single test, so no other thread reads
    // or writes the environment meanwhile.
    unsafe { std::env::set_var(var, value) };
}

fn unset(var: &str) {
    // SAFETY: as in `set`.
    unsafe { std::env::remove_var(var) };
}

#[test]
fn builder_sets_the_configuration_in_code_through_the_table() {
    // Bad values are the table's errors, naming the variable, before
    // anything starts (so a good builder can still start afterwards).
    let e = Builder::new()
        .var("SHMEM_SYMMETRIC_SIZE", "lots")
        .init()
        .unwrap_err();
    assert!(
        matches!(
            e,
            ShmemError::Config {
                var: "SHMEM_SYMMETRIC_SIZE",
                ..
            }
        ),
        "{e}"
    );
    let e = Builder::new()
        .peer_timeout(Duration::from_millis(1))
        .config()
        .unwrap_err();
    assert!(
        e.to_string().starts_with("FSHMEM_PEER_TIMEOUT=\"1ms\""),
        "{e}"
    );
    let e = Builder::new().var("SHMEM_HEAP", "1G").config().unwrap_err();
    assert!(e.to_string().contains("SHMEM_HEAP"), "{e}");
    // What is set in code wins; the rest keeps its default.
    let c = Builder::without_environment()
        .symmetric_size(3 << 20)
        .wait_timeout(Some(Duration::from_secs(90)))
        .var("FSHMEM_REDUCE_ALGO", "ring")
        .config()
        .unwrap();
    assert_eq!(c.symmetric_size, 3 << 20);
    assert_eq!(c.conduit.wait_timeout, Some(Duration::from_secs(90)));
    assert_eq!(c.value_of("FSHMEM_REDUCE_ALGO").as_deref(), Some("ring"));
    assert_eq!(c.conduit.peer_timeout, Duration::from_secs(10));

    // The job's rows are the launcher's: a program cannot set its rank,
    // size or bootstrap, and saying so is an error naming the row.
    for (var, value) in [
        ("FSHMEM_RANK", "1"),
        ("FSHMEM_SIZE", "2"),
        ("FSHMEM_JOB_ID", "mine"),
        ("FSHMEM_BOOTSTRAP", "[::1]:4000"),
        ("PMI_RANK", "0"),
        ("SLURM_NTASKS", "4"),
    ] {
        let e = Builder::new().var(var, value).config().unwrap_err();
        assert!(
            matches!(e, ShmemError::Config { var: v, .. } if v == var),
            "{var}: {e}"
        );
        assert!(e.to_string().contains("the launcher sets it"), "{e}");
    }
    // ... and they come from the environment even when the rest does not.
    set("SLURM_JOB_ID", "77");
    set("SHMEM_SYMMETRIC_SIZE", "5M");
    let c = Builder::without_environment().config().unwrap();
    assert_eq!(c.job.launcher.slurm_job_id.as_deref(), Some("77"));
    assert_eq!(c.symmetric_size, 64 << 20);
    unset("SLURM_JOB_ID");
    unset("SHMEM_SYMMETRIC_SIZE");
    // The conduit is the one job row a program chooses: in code it wins
    // over FSHMEM_CONDUIT, through either call.
    set("FSHMEM_CONDUIT", "fpga");
    let c = Builder::new()
        .var("FSHMEM_CONDUIT", "smp")
        .config()
        .unwrap();
    assert_eq!(c.job.conduit, Some(ConduitKind::Smp));
    let c = Builder::new().conduit(ConduitKind::Ipv6).config().unwrap();
    assert_eq!(c.job.conduit, Some(ConduitKind::Ipv6));
    let e = Builder::new()
        .var("FSHMEM_CONDUIT", "tcp")
        .config()
        .unwrap_err();
    assert!(e.to_string().starts_with("FSHMEM_CONDUIT=\"tcp\""), "{e}");
    // FSHMEM_CONDUIT=fpga with no board: the environment's choice fails
    // at attach; the code's below starts on smp.
    let e = Builder::new().init().unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("PE 0") && msg.contains("no fshmem board"),
        "{e}"
    );

    let sh = Builder::without_environment()
        .conduit(ConduitKind::Smp)
        .symmetric_size(2 << 20)
        .thread_level(ThreadLevel::Serialized)
        .peer_timeout(Duration::from_secs(3))
        .init()
        .unwrap();
    assert_eq!((sh.my_pe(), sh.n_pes()), (0, 1));
    assert_eq!(sh.query_thread(), ThreadLevel::Serialized);
    assert_eq!(sh.config().symmetric_size, 2 << 20);
    assert_eq!(sh.config().conduit.peer_timeout, Duration::from_secs(3));
    assert_eq!(sh.config().job.conduit, Some(ConduitKind::Smp));
    // The heap is the size asked for: a block of it fits, one byte more
    // does not.
    let x = sh.malloc::<u8>(2 << 20).unwrap();
    drop(x);
    assert!(sh.malloc::<u8>((2 << 20) + 1).is_err());
    // Only one runtime per process.
    assert!(matches!(
        Builder::new().init(),
        Err(ShmemError::AlreadyInitialized)
    ));
    sh.finalize().unwrap();
}
