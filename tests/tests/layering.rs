//! The layering the design promises, checked on the built artefacts: the
//! host library does not contain the board model, and whatever starts
//! devsim boards says clearly when the simulator is missing.

use fshmem_tests::{bin, oshrun_cmd, profile_dir, run, unique_job_id};
use std::process::Command;
use std::time::Duration;

/// The symbols `nm` lists for `lib` with `args`.
fn symbols(lib: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("nm")
        .args(args)
        .arg(lib)
        .output()
        .expect("nm (binutils) runs");
    assert!(
        out.status.success(),
        "nm {args:?} {}: {out:?}",
        lib.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn libshmem_contains_no_board_model() {
    let so = profile_dir().join("libshmem.so");
    assert!(
        so.is_file(),
        "{} missing: cargo build --release --workspace",
        so.display()
    );
    // The dynamic symbols a C program links against, and the whole symbol
    // table (the build keeps it: debug = 1), demangled.
    for args in [&["-D", "-C"][..], &["-C"][..]] {
        let syms = symbols(&so, args);
        assert!(
            syms.lines().count() > 100,
            "nm {args:?} listed too little: {syms}"
        );
        for needle in ["devsim", "BoardModel", "GemmCore", "ReliableLink"] {
            let hits: Vec<&str> = syms
                .lines()
                .filter(|l| l.to_lowercase().contains(&needle.to_lowercase()))
                .take(5)
                .collect();
            assert!(
                hits.is_empty(),
                "nm {args:?} libshmem.so shows {needle}: {hits:?}"
            );
        }
    }
    // The reliable transport lives in gasnet-core: present once, not twice.
    let syms = symbols(&so, &["-C"]);
    assert!(
        syms.contains("gasnet_core::reliable::Transport"),
        "the ipv6 conduit runs gasnet-core's reliable transport"
    );
    assert!(!syms.contains("conduits::ipv6::reliable"));
}

#[test]
fn a_missing_board_simulator_is_named() {
    // FSHMEM_DEVSIM naming nothing.
    let out = run(
        oshrun_cmd(&["-n", "2", "--conduit", "fpga", "true"])
            .env("FSHMEM_DEVSIM", "/nonexistent/devsim"),
        Duration::from_secs(60),
    );
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("FSHMEM_DEVSIM=/nonexistent/devsim names no file"),
        "{out:?}"
    );
    // An oshrun with no devsim beside it and none on PATH.
    let dir = std::env::temp_dir().join(unique_job_id("nodevsim"));
    std::fs::create_dir_all(&dir).unwrap();
    let lone = dir.join("oshrun");
    std::fs::copy(bin("oshrun"), &lone).unwrap();
    let out = run(
        Command::new(&lone)
            .args(["-n", "2", "--conduit", "fpga", "true"])
            .env("PATH", &dir)
            .env_remove("FSHMEM_DEVSIM"),
        Duration::from_secs(60),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.contains("the devsim board simulator is missing")
            && out.stderr.contains("cargo build --release -p devsim"),
        "{out:?}"
    );
}
