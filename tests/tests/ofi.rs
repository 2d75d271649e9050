//! The ofi conduit (libfabric) on this host's providers: `tcp;ofi_rxm` on
//! the loopback domain and `shm`, through `oshrun --conduit ofi` at 1, 2,
//! 4 and 5 PEs — shmem's api_check, coll_check, the examples and the C
//! tests must give exact results — plus failure handling on both (a PE
//! killed or erring out is named, global_exit ends every PE, a provider
//! that does not exist is a clear error), and the same programs and
//! failures with tcp across three network namespaces.
//!
//! `udp;ofi_rxd` is not in the matrix: with Debian's libfabric 1.17 it
//! corrupts packets of coll_check's alltoalls (see the README).

#[path = "support/capi.rs"]
mod capi;

use fshmem_tests::{
    RunOutput, Running, any_bin, example, finish, oshrun_cmd, run, send_signal, shm_files, spawn,
    unique_job_id,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(60);
const SIZES: [usize; 3] = [2, 4, 5];

/// The providers tested, with the environment that selects each.
const PROVIDERS: [&[(&str, &str)]; 2] = [
    &[
        ("FSHMEM_OFI_PROVIDER", "tcp;ofi_rxm"),
        ("FSHMEM_OFI_DOMAIN", "lo"),
    ],
    &[("FSHMEM_OFI_PROVIDER", "shm")],
];

/// One job at a time: the providers' progress is polled, and two 5-PE
/// jobs at once on a 2-core machine starve each other's progress threads
/// (as coll_smp, the jobs get the cores to themselves).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `prog args` on `n` PEs of the ofi conduit with `env`.
fn ofi_job(n: usize, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> RunOutput {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let id = unique_job_id("ofi");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", "ofi", "--job-id", &id]);
    cmd.arg(prog).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd, TIMEOUT)
}

fn lines<'a>(out: &'a RunOutput, prefix: &str) -> Vec<&'a str> {
    out.stdout
        .lines()
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[test]
fn api_check_on_every_provider_at_1_2_4_5_pes() {
    let p = example("api_check");
    for env in PROVIDERS {
        for n in [1, 2, 4, 5] {
            let out = ofi_job(n, &p, &[], env);
            assert_eq!(out.code(), Some(0), "{env:?} at {n}: {out:?}");
            let tail = format!("checks on each of {n} PEs passed");
            let l = lines(&out, "api_check:");
            assert!(
                l.len() == 1 && l[0].ends_with(&tail),
                "{env:?} at {n}: {out:?}"
            );
        }
    }
}

/// coll_check's arguments at `n` PEs: the whole check at 2, `quick` (the
/// reductions on a few types, no thread test) at more, where polled
/// progress on this machine's 2 cores makes a whole run take about a minute
/// under load (see the README).
fn coll_args(n: usize) -> &'static [&'static str] {
    if n <= 2 { &[] } else { &["quick"] }
}

/// coll_check at 2, 4 and 5 PEs on both providers.
#[test]
fn coll_check_on_every_provider_at_2_4_5_pes() {
    let p = example("coll_check");
    for env in PROVIDERS {
        for n in SIZES {
            let out = ofi_job(n, &p, coll_args(n), env);
            assert_eq!(out.code(), Some(0), "{env:?} at {n}: {out:?}");
            for r in 0..n {
                let line = format!("coll_check: PE {r} of {n} ok");
                assert!(
                    out.stdout.lines().any(|l| l.starts_with(&line)),
                    "{env:?}: {out:?}"
                );
            }
        }
    }
}

#[test]
fn examples_on_every_provider_at_2_4_5_pes() {
    for env in PROVIDERS {
        for (name, want) in EXAMPLES {
            let p = any_bin(name);
            for n in SIZES {
                let out = ofi_job(n, &p, &[], env);
                assert_eq!(out.code(), Some(0), "{name} {env:?} at {n}: {out:?}");
                let l = lines(&out, want);
                assert!(
                    l.len() == 1 && l[0].ends_with("OK"),
                    "{name} {env:?} at {n}: {out:?}"
                );
            }
        }
    }
}

#[test]
fn c_tests_on_every_provider_at_2_4_5_pes() {
    for name in C_TESTS {
        let exe = capi::compile(name, &[]);
        for env in PROVIDERS {
            for n in SIZES {
                let out = ofi_job(n, &exe, &[], env);
                let line = format!("{name}: ok on {n} PEs");
                assert_eq!(out.code(), Some(0), "{name} {env:?} at {n}: {out:?}");
                assert!(
                    out.stdout.lines().any(|l| l == line),
                    "{name} {env:?}: {out:?}"
                );
            }
        }
    }
}

#[test]
fn atomics_travel_as_the_provider_allows_and_info_says_how() {
    // tcp;ofi_rxm performs every atomic; shm's are not trusted (README).
    let p = any_bin("hello");
    let info = [("SHMEM_INFO", "1")];
    let out = ofi_job(2, &p, &[], &[PROVIDERS[0], &info].concat());
    assert_eq!(out.code(), Some(0), "{out:?}");
    let l = lines(&out, "fshmem ofi conduit: provider tcp;ofi_rxm");
    assert!(l.len() == 1 && l[0].contains("domain lo"), "{out:?}");
    assert!(
        l[0].contains("atomics by the provider (fi_atomic)"),
        "{out:?}"
    );
    let out = ofi_job(2, &p, &[], &[PROVIDERS[1], &info].concat());
    let l = lines(&out, "fshmem ofi conduit: provider shm");
    assert!(
        l.len() == 1 && l[0].contains("atomics as active messages"),
        "{out:?}"
    );
    // Forced onto active messages, tcp still gives exact results.
    let am = [("FSHMEM_OFI_ATOMICS", "am")];
    let out = ofi_job(4, &example("api_check"), &[], &[PROVIDERS[0], &am].concat());
    assert_eq!(out.code(), Some(0), "{out:?}");
}

#[test]
fn failures_are_named_and_end_the_job() {
    let tcp = PROVIDERS[0];
    // A PE that vanishes is named by the others.
    let out = ofi_job(3, &example("smp_fail"), &["detect"], tcp);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(lines(&out, "detected: PE 1 failed").len(), 2, "{out:?}");
    // global_exit ends every PE with its status, 0 included.
    let out = ofi_job(3, &example("smp_fail"), &["global-exit", "7"], tcp);
    assert_eq!(out.code(), Some(7), "{out:?}");
    for status in [0, 5] {
        let s = status.to_string();
        let out = ofi_job(4, &example("fault"), &["global-exit", &s], tcp);
        assert_eq!(out.code(), Some(status), "{out:?}");
        assert!(!out.stderr.contains("without calling"), "{out:?}");
    }
    // A provider that does not exist: a clear error, at once.
    let bad = [("FSHMEM_OFI_PROVIDER", "nonesuch")];
    let out = ofi_job(2, &any_bin("hello"), &[], &bad);
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.contains("fi_getinfo: provider \"nonesuch\""),
        "{out:?}"
    );
    assert!(out.stderr.contains("FSHMEM_OFI_PROVIDER"), "{out:?}");
    assert!(out.elapsed < Duration::from_secs(20), "{out:?}");
    // A bad setting names the variable.
    let bad = [("FSHMEM_OFI_ATOMICS", "fast")];
    let out = ofi_job(2, &any_bin("hello"), &[], &bad);
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.contains("FSHMEM_OFI_ATOMICS=\"fast\""),
        "{out:?}"
    );
}

/// The bound on "the job ends after a PE fails": the default peer timeout
/// (`FSHMEM_PEER_TIMEOUT`); the job must never hang.
const FAIL_BOUND: Duration = Duration::from_secs(10);

/// The ways PE 1 fails in `fault crash`: killed from outside (SIGKILL), or
/// erring out of the program (exit status 3).
const FAILURES: [&str; 2] = ["kill", "exit3"];

/// Waits until every one of `n` PEs printed that its next call is the
/// wait of `fault crash` (every PE is past its barrier), reading the lines
/// from the running processes `outs` (one job, or one process per PE).
fn all_waiting(jobs: &mut [Running], n: usize, what: &str) {
    let mut waiting = vec![false; n];
    let end = Instant::now() + TIMEOUT;
    while !waiting.iter().all(|&w| w) {
        let mut got = false;
        for j in jobs.iter_mut() {
            let line = j.wait_line(Duration::from_millis(100), |l| {
                l.starts_with("fault: PE ") && l.ends_with(" waiting")
            });
            if let Some(l) = line {
                let pe: usize = l["fault: PE ".len()..l.len() - " waiting".len()]
                    .parse()
                    .expect("a PE number");
                waiting[pe] = true;
                got = true;
            }
        }
        assert!(
            got || Instant::now() < end,
            "{what}: not every PE reached its wait: {:?}",
            jobs.iter().map(|j| j.stdout_so_far()).collect::<Vec<_>>()
        );
    }
}

/// PE `pe`'s pid, from the `fault: PE r pid P started` lines.
fn pid_of(stdout: &str, pe: usize) -> Option<i32> {
    let head = format!("fault: PE {pe} pid ");
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(head.as_str()))
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
}

/// SIGKILL to `pid`.
fn kill9(pid: i32) {
    // The pid is a PE of a job this test started and has not reaped.
    send_signal(pid, libc::SIGKILL).unwrap_or_else(|e| panic!("kill -9 {pid}: {e}"));
}

/// When PE 1 failed: `at` if the test killed it, else the time it printed.
fn failed_at(out: &str, at: Option<Instant>, start: Instant, start_ms: u128) -> Instant {
    at.unwrap_or_else(|| {
        let ms: u128 = out
            .lines()
            .find_map(|l| l.strip_prefix("fault: PE 1 failing at "))
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("no failure time: {out}"));
        start + Duration::from_millis(ms.saturating_sub(start_ms) as u64)
    })
}

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Every PE that noticed the failure names PE 1, never another.
fn blames_pe_1(out: &str, what: &str) {
    for d in out.lines().filter(|l| l.contains(" detected at ")) {
        assert!(d.contains("PE 1 failed"), "{what}: {d:?} blames another PE");
    }
}

/// PE 1 killed (SIGKILL) or erring out mid-run, at 2, 4 and 5 PEs on
/// each provider on loopback: oshrun exits non-zero naming PE 1, within
/// the bound.
#[test]
fn a_pe_that_dies_or_errs_ends_the_job_naming_it() {
    for (env, n) in PROVIDERS.iter().flat_map(|&e| SIZES.map(|n| (e, n))) {
        for kind in FAILURES {
            fails_naming_pe_1(env, n, "crash", kind);
        }
    }
}

/// PE 1 leaves with `_exit` while the others flood it with atomics and
/// puts, at 2, 4 and 5 PEs on each provider: the provider's queues fill
/// (`FI_EAGAIN`) and an issuing PE must still learn of the failure and
/// end, naming PE 1. (An issuing thread that retried while holding the
/// conduit's lock kept the progress thread from recording the failure,
/// and a 4-PE job hung.)
#[test]
fn a_pe_that_leaves_while_flooded_ends_the_job_naming_it() {
    for (env, n) in PROVIDERS.iter().flat_map(|&e| SIZES.map(|n| (e, n))) {
        fails_naming_pe_1(env, n, "flood", "raw-exit0");
    }
}

/// Runs `fault MODE KIND` on `n` PEs with `env` and checks the job ends
/// within the bound, non-zero, naming PE 1 and leaving nothing in
/// /dev/shm.
fn fails_naming_pe_1(env: &[(&str, &str)], n: usize, mode: &str, kind: &str) {
    let what = format!("{mode} {kind} at {n} PEs on {env:?}");
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let id = unique_job_id("ofx");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", "ofi", "--job-id", &id]);
    cmd.arg(example("fault")).args([mode, kind]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (start, start_ms) = (Instant::now(), unix_ms());
    let mut job = [spawn(&mut cmd)];
    let mut at = None;
    if kind == "kill" {
        all_waiting(&mut job, n, &what);
        let pid = pid_of(job[0].stdout_so_far(), 1).expect("PE 1's pid");
        kill9(pid);
        at = Some(Instant::now());
    }
    let [job] = job;
    let out = finish(job, TIMEOUT);
    let ended = Instant::now();
    let ctx = format!("{what}: {out:?}");
    assert_ne!(out.code(), Some(0), "{ctx}");
    assert!(!out.stdout.contains("without an error"), "{ctx}");
    let took = ended.duration_since(failed_at(&out.stdout, at, start, start_ms));
    assert!(
        took < FAIL_BOUND,
        "{ctx}: the job ended {took:?} after PE 1 failed"
    );
    blames_pe_1(&out.stdout, &ctx);
    assert!(
        out.stderr.contains("oshrun: PE 1 (pid") || out.stderr.contains("after PE 1 failed"),
        "oshrun does not name PE 1: {ctx}"
    );
    // Nothing of the job is left in /dev/shm: shm's region of the killed
    // PE is one of the job's files, which oshrun removes.
    let left = shm_files(&id);
    assert!(left.is_empty(), "{what}: left in /dev/shm: {left:?}");
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Three node namespaces joined by veth pairs to a bridge in a hub
/// namespace, on a unique-local IPv6 subnet; removed on drop.
struct Hosts {
    nodes: Vec<String>,
    hub: String,
    prefix: String,
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.nodes.iter().chain(std::iter::once(&self.hub)) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

impl Hosts {
    fn build() -> Hosts {
        static RUN: AtomicUsize = AtomicUsize::new(0);
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{:x}", (std::process::id() as usize * 16 + run) & 0xffff);
        let hub = format!("fso{tag}h");
        ip(&["netns", "add", &hub]).expect("create a network namespace");
        let mut h = Hosts {
            nodes: Vec::new(),
            hub: hub.clone(),
            prefix: format!("fd00:f6:{tag}"),
        };
        let ok = (|| -> Result<(), String> {
            ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
            ip(&["-n", &hub, "link", "set", "br0", "up"])?;
            for i in 0..3 {
                let ns = format!("fso{tag}n{i}");
                ip(&["netns", "add", &ns])?;
                h.nodes.push(ns.clone());
                let port = format!("p{i}");
                ip(&[
                    "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                    "netns", &ns,
                ])?;
                ip(&["-n", &hub, "link", "set", &port, "master", "br0", "up"])?;
                ip(&["-n", &ns, "link", "set", "lo", "up"])?;
                // No link-local address: the provider would offer its
                // fe80::/64 fabric while the address is still tentative.
                ip(&["-n", &ns, "link", "set", "eth0", "addrgenmode", "none"])?;
                ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
                let addr = format!("{}::{}/64", h.prefix, i + 1);
                ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0", "nodad"])?;
            }
            Ok(())
        })();
        if let Err(e) = ok {
            panic!("building the namespaces: {e}");
        }
        h
    }

    /// `prog args` as `n` PEs over the nodes (PE r on node r mod 3), on
    /// tcp;ofi_rxm over each node's eth0, bootstrapped by rank 0's
    /// rendezvous.
    fn job(&self, n: usize, prog: &Path, args: &[&str]) -> Vec<RunOutput> {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let children = self.spawn_job(n, prog, args);
        children.into_iter().map(|c| finish(c, TIMEOUT)).collect()
    }

    /// The processes of `prog args` as `n` PEs, as [`Hosts::job`] starts
    /// them (`ip netns exec` runs the program in the same process).
    fn spawn_job(&self, n: usize, prog: &Path, args: &[&str]) -> Vec<Running> {
        let boot = format!(
            "[{}::1]:{}",
            self.prefix,
            20000 + std::process::id() % 20000
        );
        (0..n)
            .map(|r| {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &self.nodes[r % 3]])
                    .arg(prog)
                    .args(args)
                    .env("FSHMEM_RANK", r.to_string())
                    .env("FSHMEM_SIZE", n.to_string())
                    .env("FSHMEM_JOB_ID", "ofinetns")
                    .env("FSHMEM_CONDUIT", "ofi")
                    .env("FSHMEM_OFI_PROVIDER", "tcp;ofi_rxm")
                    .env("FSHMEM_OFI_DOMAIN", "eth0")
                    .env("FSHMEM_BOOTSTRAP", &boot);
                spawn(&mut c)
            })
            .collect()
    }
}

/// The C tests of `tests/c`.
const C_TESTS: [&str; 7] = [
    "rma",
    "atomics",
    "signal",
    "coll",
    "wait",
    "static_data",
    "ctx",
];

/// The examples run on every provider, with the line each prints ending in
/// `OK`.
const EXAMPLES: [(&str, &str); 4] = [
    ("hello", "hello: "),
    ("ring", "ring: token made"),
    ("matmul", "matmul n=96"),
    ("histogram", "histogram: every bin matches"),
];

/// api_check, coll_check, the C tests and the examples at 2, 4 and 5 PEs,
/// and a global exit, each PE in the namespace of node r mod 3.
#[test]
fn tcp_across_three_network_namespaces() {
    let hosts = Hosts::build();
    let ok = |outs: &[RunOutput], what: &str| {
        for (r, o) in outs.iter().enumerate() {
            assert_eq!(o.code(), Some(0), "{what} PE {r}: {o:?}");
        }
    };
    let all = |outs: &[RunOutput]| -> String { outs.iter().map(|o| o.stdout.as_str()).collect() };
    let c_tests: Vec<(&str, PathBuf)> = C_TESTS
        .iter()
        .map(|&t| (t, capi::compile(t, &[])))
        .collect();
    for n in SIZES {
        let outs = hosts.job(n, &example("api_check"), &[]);
        ok(&outs, "api_check");
        let tail = format!("checks on each of {n} PEs passed");
        assert!(outs[0].stdout.contains(&tail), "{:?}", outs[0]);
        let outs = hosts.job(n, &example("coll_check"), coll_args(n));
        ok(&outs, "coll_check");
        for (r, o) in outs.iter().enumerate() {
            let line = format!("coll_check: PE {r} of {n} ok");
            assert!(o.stdout.contains(&line), "{o:?}");
        }
        for (name, exe) in &c_tests {
            let outs = hosts.job(n, exe, &[]);
            let what = format!("C {name} at {n}");
            ok(&outs, &what);
            let line = format!("{name}: ok on {n} PEs");
            assert!(all(&outs).lines().any(|l| l == line), "{what}: {outs:?}");
        }
        for (name, want) in EXAMPLES {
            let outs = hosts.job(n, &any_bin(name), &[]);
            let what = format!("{name} at {n}");
            ok(&outs, &what);
            let text = all(&outs);
            let l: Vec<&str> = text.lines().filter(|l| l.starts_with(want)).collect();
            assert!(l.len() == 1 && l[0].ends_with("OK"), "{what}: {outs:?}");
        }
    }
    // global_exit from one PE ends the PEs of every node with its status.
    let outs = hosts.job(3, &example("smp_fail"), &["global-exit", "7"]);
    for (r, o) in outs.iter().enumerate() {
        assert_eq!(o.code(), Some(7), "global-exit PE {r}: {o:?}");
    }
}

/// PE 1 killed (SIGKILL) or erring out mid-run, at 2, 4 and 5 PEs spread
/// over three network namespaces, with no launcher to notice: every other
/// PE detects it (through the bootstrap), names PE 1 and exits non-zero
/// within the bound.
#[test]
fn a_pe_that_dies_or_errs_across_namespaces_ends_the_job_naming_it() {
    let hosts = Hosts::build();
    for n in SIZES {
        for kind in FAILURES {
            let what = format!("{kind} at {n} PEs across namespaces");
            let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
            let (start, start_ms) = (Instant::now(), unix_ms());
            let mut pes = hosts.spawn_job(n, &example("fault"), &["crash", kind]);
            let mut at = None;
            if kind == "kill" {
                all_waiting(&mut pes, n, &what);
                kill9(pes[1].id() as i32);
                at = Some(Instant::now());
            }
            let outs: Vec<RunOutput> = pes.into_iter().map(|p| finish(p, TIMEOUT)).collect();
            let ended = Instant::now();
            let ctx = format!("{what}: {outs:?}");
            let when = failed_at(&outs[1].stdout, at, start, start_ms);
            let took = ended.duration_since(when);
            assert!(
                took < FAIL_BOUND,
                "{ctx}: the job ended {took:?} after PE 1 failed"
            );
            for (r, o) in outs.iter().enumerate() {
                assert_ne!(o.code(), Some(0), "PE {r}: {ctx}");
                blames_pe_1(&o.stdout, &ctx);
                if r != 1 {
                    assert!(
                        o.stdout.contains(" detected at ") && o.stdout.contains("PE 1 failed"),
                        "PE {r} does not name PE 1: {ctx}"
                    );
                }
            }
        }
    }
}
