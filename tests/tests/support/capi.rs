//! What the C-ABI tests share: compiling `tests/c/*.c` with `oshcc` and
//! running the programs through `oshrun` with extra environment.

#![allow(dead_code)]

use fshmem_tests::{Job, RunOutput, bin, oshrun_cmd, profile_dir, run, shm_files, unique_job_id};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// `tests/c` in the source tree.
pub fn c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c")
}

/// Compiles `tests/c/<name>.c` with `oshcc` (C11) into the profile's
/// `capi-tests/` directory and returns the executable; `extra` goes to the
/// compiler (more sources, libraries, defines).
pub fn compile(name: &str, extra: &[&str]) -> PathBuf {
    compile_as(name, name, extra)
}

/// As [`compile`], naming the executable `exe_name`. Each executable is
/// built once per test process, so that tests running in parallel never
/// run a file another one is rewriting.
pub fn compile_as(name: &str, exe_name: &str, extra: &[&str]) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, exe)) = built.iter().find(|(n, _)| n == exe_name) {
        return exe.clone();
    }
    let exe = build(name, exe_name, extra);
    built.push((exe_name.to_string(), exe.clone()));
    exe
}

fn build(name: &str, exe_name: &str, extra: &[&str]) -> PathBuf {
    let out_dir = profile_dir().join("capi-tests");
    std::fs::create_dir_all(&out_dir).expect("create capi-tests");
    let exe = out_dir.join(exe_name);
    let src = c_dir().join(format!("{name}.c"));
    // A `-x c++` among the extra arguments builds the C file as C++.
    let cxx = extra.contains(&"c++");
    let mut cmd = Command::new(bin(if cxx { "oshcxx" } else { "oshcc" }));
    if cxx {
        cmd.args(["-x", "c++", "-std=c++17"]);
    } else {
        cmd.arg("-std=c11");
    }
    let extra: Vec<&str> = extra
        .iter()
        .copied()
        .filter(|a| *a != "-x" && *a != "c++")
        .collect();
    cmd.args(["-O1", "-Wall", "-Wextra", "-Wno-unused-parameter"])
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(&extra);
    let out = run(&mut cmd, Duration::from_secs(120));
    assert_eq!(
        out.code(),
        Some(0),
        "oshcc {} failed:\n{}",
        src.display(),
        out.stderr
    );
    exe
}

/// Runs `exe args` on `n` PEs of `conduit` through `oshrun` under a fresh
/// job id, with `env` added to the PEs' environment; checks that the job
/// left no shared memory behind.
pub fn job_on(
    conduit: &str,
    n: usize,
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Job {
    let id = unique_job_id("capi");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", conduit, "--job-id", &id]);
    cmd.arg(exe).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: RunOutput = run(&mut cmd, timeout);
    let left = shm_files(&id);
    assert!(left.is_empty(), "job {id} left behind {left:?}");
    Job { n, id, out }
}

/// [`job_on`] the smp conduit.
pub fn job_env(n: usize, exe: &Path, args: &[&str], env: &[(&str, &str)]) -> Job {
    job_on("smp", n, exe, args, env, fshmem_tests::JOB_TIMEOUT)
}

/// Every line of `text` that contains `needle`.
pub fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}
