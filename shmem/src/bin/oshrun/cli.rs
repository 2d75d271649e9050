//! oshrun's command line: the options, their help (with the variables
//! oshrun sets and passes through), and the `-np N` spelling clap lacks.

use clap::{Parser, ValueEnum};
use conduits::ConduitKind;
use std::ffi::OsString;

use crate::hosts::HostNet;

/// Most PEs oshrun starts.
pub(crate) const MAX_PES: u32 = conduits::smp::MAX_PES as u32;

const ENV_HELP: &str = "\
Environment set for every PE:
  FSHMEM_RANK      the PE's rank, 0..N-1
  FSHMEM_SIZE      the number of PEs, N
  FSHMEM_JOB_ID    the job id (names the job's shared memory,
                   /dev/shm/fshmem-<job>-*)
  FSHMEM_CONDUIT   the conduit (smp, ipv6, fpga or ofi)
  FSHMEM_BOOTSTRAP with --conduit ipv6 or ofi: the [::1]:port of the rendezvous
                   server oshrun runs for the job ([fd00:f5::ffff]:port, the
                   hub, with --hosts in network namespaces)
  FSHMEM_HOST_KEY  with --conduit ipv6 or ofi: the PE's host, <job>.h<k>
                   (every PE its own host unless --hosts groups them)
  FSHMEM_FPGA_DEVICE  fpga: the PE's devsim board directory
                   (/dev/shm/fshmem-<job>-board<rank>/, removed at the end)
  FSHMEM_LAUNCHER_FD  a pipe on which a PE that leaves because another PE
                   failed names that PE, so that oshrun's message blames
                   the PE that failed first (\"... after PE 1 failed\")

Environment read by the PEs (passed through unchanged):
  SHMEM_SYMMETRIC_SIZE  size of each PE's symmetric heap (e.g. 64M, 1G)
  SHMEM_DEBUG           print debugging output when set to 1
  SHMEM_INFO            print the library's configuration at start-up
  SHMEM_VERSION         print the library version at start-up
  FSHMEM_PEER_TIMEOUT   ipv6, fpga board links: silence before a peer is
                        declared failed (10s)
  FSHMEM_FPGA_WINDOW    fpga: each devsim board's DDR window (default 1G)
  FSHMEM_DEVSIM_IMPAIR  fpga, testing: loss=5,dup=1,reorder=10 (percent of
                        the board link datagrams dropped/duplicated/delayed)

Exit status: 0 when every PE exits 0; otherwise the status of the first PE
that failed (128+signal for a PE killed by a signal), after stopping the
others; 130 (143 for SIGTERM, 129 for SIGHUP) when oshrun is interrupted;
127 when the program cannot be started; 2 for usage errors.

Examples:
  oshrun -n 4 ./matmul
  oshrun -np 8 --prefix ./hello --verbose
  oshrun -n 4 --conduit ipv6 ./matmul
  oshrun -n 6 --hosts 2 ./matmul      # 2 hosts of 3 PEs: smp within, ipv6 between";

/// How PEs are pinned to CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Bind {
    /// PE r runs on the (r mod ncpus)-th CPU oshrun may use.
    Core,
    /// No pinning: the scheduler places PEs.
    None,
}

/// Launch an fshmem OpenSHMEM job: N copies of PROGRAM, one per PE.
#[derive(Debug, Parser)]
#[command(
    name = "oshrun",
    version,
    after_help = ENV_HELP,
    override_usage = "oshrun -n N [OPTIONS] PROGRAM [ARGS]...\n       oshrun -np N [OPTIONS] PROGRAM [ARGS]..."
)]
pub(crate) struct Cli {
    /// Number of PEs to start, 1..=1024 (`-np N` is accepted too).
    #[arg(
        short = 'n',
        long = "np",
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=MAX_PES as i64)
    )]
    pub(crate) np: u32,

    /// Transport the PEs use: smp, ipv6 over `[::1]`, fpga on devsim boards
    /// started for the job, or ofi (libfabric; FSHMEM_OFI_PROVIDER chooses
    /// the provider) (default: FSHMEM_CONDUIT, else smp).
    #[arg(long, value_name = "CONDUIT", value_parser = parse_conduit)]
    pub(crate) conduit: Option<ConduitKind>,

    /// Model H hosts on this machine (network conduits: ipv6, the default
    /// with --hosts, or ofi): PEs are placed on hosts in blocks, share
    /// memory within a host and use the network conduit between hosts
    /// (default: every PE a host of its own).
    #[arg(long, value_name = "H", value_parser = clap::value_parser!(u32).range(1..=MAX_PES as i64))]
    pub(crate) hosts: Option<u32>,

    /// How the hosts of --hosts are networked: netns (a network namespace
    /// per host, joined by a bridge; needs CAP_SYS_ADMIN and iproute2),
    /// loopback (every host on ::1), or auto (netns when oshrun may
    /// create namespaces).
    #[arg(long, value_enum, value_name = "NET", default_value_t = HostNet::Auto)]
    pub(crate) host_net: HostNet,

    /// Prefix every line a PE prints (stdout and stderr) with `[pe N] `.
    /// Without it, PEs write straight to oshrun's stdout and stderr.
    #[arg(long)]
    pub(crate) prefix: bool,

    /// Pin each PE to one CPU (core) or leave placement to the scheduler (none).
    #[arg(long, value_enum, default_value_t = Bind::Core)]
    pub(crate) bind: Bind,

    /// Job id naming the job's shared memory (1..=64 of [A-Za-z0-9_-]);
    /// default: unique per run. An id another running oshrun holds is
    /// refused before anything starts.
    #[arg(long, value_name = "ID", value_parser = parse_job_id)]
    pub(crate) job_id: Option<String>,

    /// The program every PE runs, followed by its arguments.
    #[arg(
        value_name = "PROGRAM",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub(crate) command: Vec<OsString>,
}

fn parse_conduit(s: &str) -> Result<ConduitKind, String> {
    s.parse::<ConduitKind>()
        .map_err(|_| format!("expected {}", ConduitKind::names()))
}

fn parse_job_id(s: &str) -> Result<String, String> {
    if !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        Ok(s.to_string())
    } else {
        Err("a job id is 1 to 64 characters of [A-Za-z0-9_-]".to_string())
    }
}

/// Rewrites `-np N` (and `-np=N`) among oshrun's own options as `--np`;
/// clap has no two-letter short options. Stops at the program name.
pub(crate) fn preprocess(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    out.extend(it.next());
    let mut expect_value = false;
    let mut in_options = true;
    for a in it {
        if !in_options {
            out.push(a);
            continue;
        }
        if expect_value {
            expect_value = false;
            out.push(a);
            continue;
        }
        let s = a.to_string_lossy();
        if s == "--" || !s.starts_with('-') {
            in_options = false;
            out.push(a);
        } else if s == "-np" {
            expect_value = true;
            out.push("--np".into());
        } else if let Some(v) = s.strip_prefix("-np=") {
            out.push(format!("--np={v}").into());
        } else {
            expect_value = matches!(
                &*s,
                "-n" | "--np" | "--conduit" | "--bind" | "--job-id" | "--hosts" | "--host-net"
            );
            out.push(a);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn np_is_rewritten_only_among_own_options() {
        assert_eq!(
            preprocess(os(&["oshrun", "-np", "4", "prog", "-np", "2"])),
            os(&["oshrun", "--np", "4", "prog", "-np", "2"])
        );
        assert_eq!(
            preprocess(os(&["oshrun", "--prefix", "-np=3", "--bind", "none", "p"])),
            os(&["oshrun", "--prefix", "--np=3", "--bind", "none", "p"])
        );
        assert_eq!(
            preprocess(os(&["oshrun", "-n", "2", "p", "-np"])),
            os(&["oshrun", "-n", "2", "p", "-np"])
        );
    }

    #[test]
    fn cli_parses_and_rejects() {
        let c = Cli::try_parse_from(preprocess(os(&["oshrun", "-np", "5", "prog", "-x", "y"])))
            .unwrap();
        assert_eq!(c.np, 5);
        assert_eq!(c.command, os(&["prog", "-x", "y"]));
        assert_eq!(c.bind, Bind::Core);
        assert!(Cli::try_parse_from(os(&["oshrun", "-n", "0", "prog"])).is_err());
        assert!(Cli::try_parse_from(os(&["oshrun", "-n", "2"])).is_err());
        assert!(Cli::try_parse_from(os(&["oshrun", "-n", "2", "--job-id", "a/b", "p"])).is_err());
    }
}
