//! Start-up with configuration from the process environment: a bad value
//! is an error naming the variable and the value (never a panic), and the
//! runtime can then start once the value is fixed.

use shmem::ShmemError;

fn set(var: &str, value: &str) {
    // SAFETY: this test binary has a single test, so no other thread reads
    // or writes the environment meanwhile.
    unsafe { std::env::set_var(var, value) };
}

#[test]
fn bad_environment_is_an_error_then_init_succeeds() {
    for (var, value) in [
        ("SHMEM_SYMMETRIC_SIZE", "abc"),
        ("SHMEM_SYMMETRIC_SIZE", "12X"),
        ("SHMEM_DEBUG", "sometimes"),
        ("SHMEM_INFO", "2"),
        ("SHMEM_VERSION", "-"),
    ] {
        set(var, value);
        let e = shmem::init().unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, ShmemError::Config { var: v, .. } if v == var),
            "{e:?}"
        );
        assert!(msg.contains(&format!("{var}={value:?}")), "{msg}");
        // SAFETY: as in `set`.
        unsafe { std::env::remove_var(var) };
    }
    set("SHMEM_SYMMETRIC_SIZE", "2MiB");
    let sh = shmem::init().unwrap();
    assert_eq!(sh.config().symmetric_size, 2 << 20);
    // The heap holds 2 MiB and no more.
    let all = sh.malloc::<u8>(2 << 20).unwrap();
    assert!(sh.malloc::<u8>(1).is_err());
    drop(all);
    assert!(sh.malloc::<u8>(1).is_ok());
}
