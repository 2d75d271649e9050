//! The ipv6 conduit across hosts, modelled by three network namespaces
//! joined by veth pairs to a bridge (in a fourth namespace) on a
//! unique-local `fd00:f5:<run>::/64` subnet with the default 1500-byte MTU
//! (so long transfers are fragmented), while 5% of datagrams are lost, 1%
//! duplicated and some reordered. Jobs start without oshrun: every PE is
//! launched in its namespace with the rendezvous bootstrap
//! (`FSHMEM_BOOTSTRAP`, served by rank 0). Results must be exact.
//!
//! The faults come from `tc netem` on every node's interface; where the
//! kernel has no netem qdisc the conduit's own deterministic impairment
//! (`FSHMEM_IPV6_IMPAIR`, the same percentages on every datagram sent) is
//! used instead, and the test says so. The test skips, printing why, only
//! where the kernel forbids creating namespaces.

use fshmem_tests::{RunOutput, any_bin, example, finish, skip, spawn};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const NODES: usize = 3;
const TIMEOUT: Duration = Duration::from_secs(45);

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

/// Three node namespaces and a hub; removed on drop, even after a panic.
struct Fabric {
    nodes: Vec<String>,
    hub: String,
    prefix: String,
    /// Extra PE environment when netem is unavailable.
    impair: Option<&'static str>,
}

impl Drop for Fabric {
    fn drop(&mut self) {
        for ns in self.nodes.iter().chain(std::iter::once(&self.hub)) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

impl Fabric {
    /// Builds the fabric; `Ok(None)` (after printing why) when namespaces
    /// are forbidden here.
    fn build() -> Result<Option<Fabric>, String> {
        static RUN: AtomicUsize = AtomicUsize::new(0);
        let run = RUN.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{:x}", (std::process::id() as usize * 16 + run) & 0xffff);
        let hub = format!("fsh{tag}h");
        if let Err(e) = ip(&["netns", "add", &hub]) {
            skip(&format!(
                "this kernel or user may not create network namespaces ({e})"
            ));
            return Ok(None);
        }
        let mut f = Fabric {
            nodes: Vec::new(),
            hub: hub.clone(),
            prefix: format!("fd00:f5:{tag}"),
            impair: None,
        };
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        let mut netem = true;
        for i in 0..NODES {
            let ns = format!("fsh{tag}n{i}");
            ip(&["netns", "add", &ns])?;
            f.nodes.push(ns.clone());
            let port = format!("p{i}");
            ip(&[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            ip(&["-n", &hub, "link", "set", &port, "master", "br0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            let addr = format!("{}::{}/64", f.prefix, i + 1);
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0", "nodad"])?;
            let tc = Command::new("ip")
                .args([
                    "netns", "exec", &ns, "tc", "qdisc", "add", "dev", "eth0", "root",
                ])
                .args(["netem", "loss", "5%", "duplicate", "1%", "delay", "1ms"])
                .args(["reorder", "25%", "50%"])
                .output()
                .map_err(|e| format!("tc: {e}"))?;
            if !tc.status.success() && netem {
                netem = false;
                println!(
                    "tc netem is unavailable ({}); injecting the same faults in the conduit \
                     (FSHMEM_IPV6_IMPAIR=loss=5,dup=1,reorder=10)",
                    String::from_utf8_lossy(&tc.stderr).trim()
                );
            }
        }
        if !netem {
            f.impair = Some("loss=5,dup=1,reorder=10");
        }
        Ok(Some(f))
    }

    /// Runs `prog args` as `n` PEs spread over the nodes (PE r on node
    /// r mod 3), bootstrapped through rank 0's rendezvous server.
    fn job(&self, n: usize, prog: &std::path::Path, args: &[&str]) -> Vec<RunOutput> {
        let boot = format!(
            "[{}::1]:{}",
            self.prefix,
            20000 + std::process::id() % 20000
        );
        let children: Vec<_> = (0..n)
            .map(|r| {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &self.nodes[r % NODES]])
                    .arg(prog)
                    .args(args)
                    .env("FSHMEM_RANK", r.to_string())
                    .env("FSHMEM_SIZE", n.to_string())
                    .env("FSHMEM_JOB_ID", "netns")
                    .env("FSHMEM_CONDUIT", "ipv6")
                    .env("FSHMEM_BOOTSTRAP", &boot)
                    .env("FSHMEM_PEER_TIMEOUT", "20s");
                if let Some(i) = self.impair {
                    c.env("FSHMEM_IPV6_IMPAIR", i);
                }
                spawn(&mut c)
            })
            .collect();
        children.into_iter().map(|c| finish(c, TIMEOUT)).collect()
    }
}

fn all_ok(outs: &[RunOutput], what: &str) {
    for (r, o) in outs.iter().enumerate() {
        assert_eq!(o.code(), Some(0), "{what}: PE {r}: {o:?}");
    }
}

#[test]
fn jobs_across_three_namespaces_with_loss_duplication_and_reordering() {
    let fabric = match Fabric::build() {
        Ok(Some(f)) => f,
        Ok(None) => return,
        Err(e) => panic!("building the fabric: {e}"),
    };
    // Conduit level: puts, gets, atomics, AMs, signals — exact.
    let outs = fabric.job(NODES, &example("smp_check"), &["20"]);
    all_ok(&outs, "smp_check");
    for (r, o) in outs.iter().enumerate() {
        assert!(
            o.stdout
                .contains(&format!("smp_check: PE {r} of {NODES} ok")),
            "{o:?}"
        );
    }
    // OpenSHMEM level, 5 PEs over 3 nodes.
    let outs = fabric.job(5, &any_bin("api_check"), &[]);
    all_ok(&outs, "api_check");
    assert!(
        outs[0].stdout.contains("checks on each of 5 PEs passed"),
        "{:?}",
        outs[0]
    );
    let outs = fabric.job(NODES, &any_bin("matmul"), &[]);
    all_ok(&outs, "matmul");
    let all: String = outs.iter().map(|o| o.stdout.as_str()).collect();
    assert!(all.contains("max |error| = 0 OK"), "{all}");
}
