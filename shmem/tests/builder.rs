//! Configuring in code with `shmem::Builder` on a singleton job (no
//! launcher: rank 0 of 1). The runtime initializes once per process, so
//! this file holds a single test.

use shmem::{Builder, ConduitKind, ShmemError, ThreadLevel};
use std::time::Duration;

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
