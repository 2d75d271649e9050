//! Jobs that span hosts (`oshrun --hosts H`, `spec/conduit.md` §10): the
//! PEs of a host share memory (the smp conduit), the hosts talk over the
//! ipv6 conduit. At 2 hosts x 2 PEs, 3 x 2 and 2 x 3 (and 1, 2 and 5 PEs
//! for the API check), on `[::1]` with distinct host keys and across
//! network namespaces (one per host, joined by a bridge) while the
//! conduit's seeded impairment loses, duplicates and reorders datagrams:
//!
//! - shmem's api_check and coll_check, the C tests (setup: the shared team
//!   is the host's PEs and `shmem_ptr` reaches exactly them; static data,
//!   RMA, atomics, collectives) and the examples give exact results;
//! - the reliable transport's counters (`FSHMEM_IPV6_STATS`) show no
//!   datagram sent from a PE to a PE of its own host, and some to the
//!   others.
//!
//! A PE killed on one host ending the job is in `fault_crash.rs`.

#[path = "support/capi.rs"]
mod capi;

use fshmem_tests::{Job, any_bin, oshrun_cmd, run, shm_files, skip, unique_job_id};
use std::path::Path;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(90);

/// (PEs, hosts) of the jobs every check runs at.
const SHAPES: [(usize, usize); 3] = [(4, 2), (6, 3), (6, 2)];

/// The conduit's impairment on the namespace links (percent of datagrams
/// lost, duplicated, held back and reordered).
const IMPAIR: &str = "loss=5,dup=1,reorder=10";

/// How the hosts are networked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Net {
    /// Every host on `[::1]`.
    Loopback,
    /// A network namespace per host, links impaired by the conduit.
    ImpairedNetns,
}

/// The host of PE `r` of `n` on `h` hosts (oshrun places them in blocks).
fn host_of(r: usize, n: usize, h: usize) -> usize {
    (0..h).rev().find(|&k| k * n / h <= r).unwrap_or(0)
}

/// Runs `prog args` as `n` PEs on `h` hosts with the transport's counters
/// printed; checks that the job left no shared memory behind.
fn hosts_job(n: usize, h: usize, net: Net, prog: &Path, args: &[&str]) -> Job {
    hosts_job_env(n, h, net, prog, args, &[])
}

/// [`hosts_job`] with `env` added to the PEs' environment.
fn hosts_job_env(
    n: usize,
    h: usize,
    net: Net,
    prog: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Job {
    let id = unique_job_id("hosts");
    let host_net = match net {
        Net::Loopback => "loopback",
        Net::ImpairedNetns => "netns",
    };
    let mut cmd = oshrun_cmd(&[
        "-n",
        &n.to_string(),
        "--hosts",
        &h.to_string(),
        "--host-net",
        host_net,
        "--conduit",
        "ipv6",
        "--job-id",
        &id,
    ]);
    cmd.arg(prog).args(args);
    cmd.env("FSHMEM_IPV6_STATS", "1")
        .env("FSHMEM_PEER_TIMEOUT", "20s");
    if net == Net::ImpairedNetns {
        cmd.env("FSHMEM_IPV6_IMPAIR", IMPAIR);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd, TIMEOUT);
    let left = shm_files(&id);
    let j = Job { n, id, out };
    assert!(left.is_empty(), "{n} PEs on {h} hosts left {left:?}: {j:?}");
    j
}

/// Checks the counters each PE printed: nothing to its own host's PEs,
/// something to another host's (when there is traffic between hosts).
fn no_datagram_within_a_host(j: &Job, h: usize, what: &str) {
    let n = j.n;
    let mut seen = vec![false; n];
    let mut across = 0u64;
    for line in j.out.stderr.lines() {
        let Some(rest) = line.strip_prefix("fshmem ipv6: PE ") else {
            continue;
        };
        let (pe, rest) = rest.split_once(':').expect("PE number");
        let pe: usize = pe.parse().expect("PE number");
        let list = rest
            .split("datagrams sent to each PE: [")
            .nth(1)
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{what}: no per-PE counts in {line:?}"));
        let sent: Vec<u64> = list
            .split(", ")
            .map(|c| c.parse().expect("a count"))
            .collect();
        assert_eq!(sent.len(), n, "{what}: {line:?}");
        for (to, &c) in sent.iter().enumerate() {
            if host_of(to, n, h) == host_of(pe, n, h) {
                assert_eq!(
                    c, 0,
                    "{what}: PE {pe} sent {c} datagrams to PE {to} of its own host"
                );
            } else {
                across += c;
            }
        }
        seen[pe] = true;
    }
    assert!(
        seen.iter().all(|&s| s),
        "{what}: not every PE printed its counters: {j:?}"
    );
    if h > 1 {
        assert!(across > 0, "{what}: no datagram between hosts: {j:?}");
    }
}

/// api_check and the full coll_check at every shape on `net`.
fn shmem_checks(net: Net) {
    let api = any_bin("api_check");
    let coll = any_bin("coll_check");
    for (n, h) in SHAPES {
        let what = format!("api_check, {n} PEs on {h} hosts, {net:?}");
        let j = hosts_job(n, h, net, &api, &[]);
        assert_eq!(j.out.code(), Some(0), "{what}: {j:?}");
        let tail = format!("checks on each of {n} PEs passed");
        let l = j.lines_starting("api_check:");
        assert!(l.len() == 1 && l[0].ends_with(&tail), "{what}: {j:?}");
        no_datagram_within_a_host(&j, h, &what);

        let what = format!("coll_check, {n} PEs on {h} hosts, {net:?}");
        let j = hosts_job(n, h, net, &coll, &[]);
        assert_eq!(j.out.code(), Some(0), "{what}: {j:?}");
        assert_eq!(j.lines_starting("coll_check: PE").len(), n, "{what}: {j:?}");
        no_datagram_within_a_host(&j, h, &what);
    }
}

/// The C tests at every shape on `net`; setup's lines name each PE's
/// shared team, which must be its host's PEs.
fn c_tests(net: Net) {
    for name in ["setup", "static_data", "rma", "atomics", "coll", "signal"] {
        let exe = capi::compile(name, &[]);
        for (n, h) in SHAPES {
            let what = format!("{name}, {n} PEs on {h} hosts, {net:?}");
            let j = hosts_job(n, h, net, &exe, &[]);
            assert_eq!(j.out.code(), Some(0), "{what}: {j:?}");
            j.assert_line(&format!("{name}: ok on {n} PEs"));
            no_datagram_within_a_host(&j, h, &what);
            if name == "setup" {
                for pe in 0..n {
                    let mates: Vec<String> = (0..n)
                        .filter(|&q| host_of(q, n, h) == host_of(pe, n, h))
                        .map(|q| q.to_string())
                        .collect();
                    j.assert_line(&format!(
                        "setup: PE {pe} shares memory with PEs {}",
                        mates.join(",")
                    ));
                }
            }
        }
    }
}

/// The examples at every shape on `net`.
fn examples(net: Net) {
    for (name, want) in [
        ("ring", "ring: token made"),
        ("matmul", "matmul n=96"),
        ("histogram", "histogram: every bin matches"),
    ] {
        let p = any_bin(name);
        for (n, h) in SHAPES {
            let what = format!("{name}, {n} PEs on {h} hosts, {net:?}");
            let j = hosts_job(n, h, net, &p, &[]);
            assert_eq!(j.out.code(), Some(0), "{what}: {j:?}");
            let lines = j.lines_starting(want);
            assert_eq!(lines.len(), 1, "{what}: {j:?}");
            assert!(lines[0].ends_with("OK"), "{what}: {j:?}");
            no_datagram_within_a_host(&j, h, &what);
        }
    }
}

/// Whether oshrun may create network namespaces here; says why not.
fn namespaces_allowed() -> bool {
    let mut cmd = oshrun_cmd(&["-n", "2", "--hosts", "2", "--host-net", "netns"]);
    cmd.arg("/bin/true");
    let out = run(&mut cmd, TIMEOUT);
    if out.code() == Some(0) {
        return true;
    }
    assert!(
        out.stderr.contains("cannot create a network namespace"),
        "oshrun --host-net netns failed for another reason: {out:?}"
    );
    skip(&format!(
        "oshrun may not create network namespaces here ({})",
        out.stderr.trim()
    ));
    false
}

#[test]
fn api_check_at_1_2_and_5_pes_on_hosts() {
    let api = any_bin("api_check");
    for (n, h) in [(1, 1), (2, 2), (2, 1), (5, 2)] {
        let what = format!("api_check, {n} PEs on {h} hosts");
        let j = hosts_job(n, h, Net::Loopback, &api, &[]);
        assert_eq!(j.out.code(), Some(0), "{what}: {j:?}");
        let tail = format!("checks on each of {n} PEs passed");
        let l = j.lines_starting("api_check:");
        assert!(l.len() == 1 && l[0].ends_with(&tail), "{what}: {j:?}");
        if n > 1 {
            no_datagram_within_a_host(&j, h, &what);
        }
    }
}

/// Collectives in two levels (within each host, then among one leader per
/// host) forced on and off, with the leader level's algorithms forced too:
/// coll_check's results are exact either way. `quick`, as the suite's other
/// forced-algorithm runs: every collective, the reductions on a few types,
/// no thread test (the full check runs at every shape in `shmem_checks`).
#[test]
fn collectives_with_the_hierarchy_forced_on_and_off() {
    let coll = any_bin("coll_check");
    let settings: [&[(&str, &str)]; 4] = [
        &[("FSHMEM_COLL_HIER", "off")],
        &[("FSHMEM_COLL_HIER", "on")],
        &[
            ("FSHMEM_COLL_HIER", "on"),
            ("FSHMEM_BARRIER_ALGO", "tree"),
            ("FSHMEM_BCAST_ALGO", "scatter_allgather"),
            ("FSHMEM_REDUCE_ALGO", "ring"),
        ],
        &[
            ("FSHMEM_COLL_HIER", "on"),
            ("FSHMEM_REDUCE_ALGO", "rabenseifner"),
        ],
    ];
    for env in settings {
        for (n, h) in [(6, 3), (5, 2)] {
            let what = format!("coll_check, {n} PEs on {h} hosts, {env:?}");
            let j = hosts_job_env(n, h, Net::Loopback, &coll, &["quick"], env);
            assert_eq!(j.out.code(), Some(0), "{what}: {j:?}");
            assert_eq!(j.lines_starting("coll_check: PE").len(), n, "{what}: {j:?}");
            no_datagram_within_a_host(&j, h, &what);
        }
    }
}

#[test]
fn shmem_checks_on_loopback_hosts() {
    shmem_checks(Net::Loopback);
}

#[test]
fn c_tests_on_loopback_hosts() {
    c_tests(Net::Loopback);
}

#[test]
fn examples_on_loopback_hosts() {
    examples(Net::Loopback);
}

#[test]
fn shmem_checks_across_impaired_namespaces() {
    if namespaces_allowed() {
        shmem_checks(Net::ImpairedNetns);
    }
}

#[test]
fn c_tests_and_examples_across_impaired_namespaces() {
    if namespaces_allowed() {
        c_tests(Net::ImpairedNetns);
        examples(Net::ImpairedNetns);
    }
}
