//! Jobs on the fpga conduit against devsim boards whose core is the RTL of
//! `hw/` (`FSHMEM_DEVSIM_CORE=rtl`): the Verilator model, clocked cycle by
//! cycle behind the same BAR files and UDP links as the reference engine,
//! with the host side unchanged. Through `oshrun --conduit fpga` at 2 and
//! 3 boards: api_check, coll_check, the C tests (static data, RMA, atomics,
//! collectives) and the example programs (matmul_fpga's GEMM tiles run on
//! the compute kernel on each core's kernel port); and api_check at 3
//! boards with 5 % of the link datagrams lost, 2 % duplicated and 10 %
//! delayed (reordered), which the core's own reliability layer (sequence
//! numbers, NACKs, retransmission) must repair. Every job must exit 0
//! with its checkable result and leave no board files behind. And at 3
//! boards, a board that stops answering or dies mid-run ends the job
//! naming its PE. At 2 boards, misuse of the compute kernel's handlers
//! ends the job naming the PE and the handler: a C program naming handler
//! 224 is refused at the call, a request the kernel can neither run nor
//! answer (sent below shmem) is reported by the core
//! (`ERR_STATUS.COMPUTE`, through the kernel port's error input), and
//! `shmem::compute` on cores built without a kernel
//! (`FSHMEM_DEVSIM_COMPUTE=0`) fails naming the PE.
//!
//! The boards are `devsim-rtl` (`cargo build --release -p devsim --features
//! rtl`, which `scripts/test.sh` runs), named by `FSHMEM_DEVSIM`.
//!
//! Sizes. The model runs a few hundred thousand cycles a second on one
//! core; on the 2-core machine these jobs take from three to over ten
//! times as long as on the engine, and this file must add at most about three minutes to
//! the suite. So coll_check runs whole at 2 boards (16 s) and its `quick`
//! set (every collective and team operation, reductions on a few types) at
//! 3 boards, where the whole set takes 57 s: the quick set took 95 to
//! 108 s while devsim clocked a core that only waited for a peer at full
//! speed, 31 to 32 s once it did not, and 23 s since the core registers
//! its link inputs. The impaired run is at 3 boards only. Each program
//! that runs runs whole, every check asserted. The jobs run one at a time:
//! boards and PEs would otherwise starve each other of the two cores.

#[path = "support/board_failure.rs"]
mod board_failure;
#[path = "support/capi.rs"]
mod capi;
#[path = "support/compute.rs"]
mod compute;

use fshmem_tests::{
    Job, RunOutput, bin, example, oshrun_cmd, profile_dir, run, shm_files, unique_job_id,
};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// A job's limit: several times what it takes on a loaded 2-core machine.
const TIMEOUT: Duration = Duration::from_secs(180);

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `devsim-rtl`, beside the test's programs.
fn devsim_rtl() -> PathBuf {
    let p = profile_dir().join("devsim-rtl");
    assert!(
        p.exists(),
        "{} is missing: build it with `cargo build --release -p devsim --features rtl` \
         (needs Verilator 5; scripts/test.sh does this)",
        p.display()
    );
    p
}

/// Runs `prog args` on `n` RTL boards with `env` added.
fn rtl_job(n: usize, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Job {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let id = unique_job_id("frtl");
    let mut cmd = oshrun_cmd(&["-n", &n.to_string(), "--conduit", "fpga", "--job-id", &id]);
    cmd.arg(prog)
        .args(args)
        .env("FSHMEM_DEVSIM", devsim_rtl())
        .env("FSHMEM_DEVSIM_CORE", "rtl");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: RunOutput = run(&mut cmd, TIMEOUT);
    eprintln!(
        "{id}: {} on {n} RTL boards {env:?}: {:.1} s",
        prog.display(),
        out.elapsed.as_secs_f64()
    );
    let left = shm_files(&id);
    assert!(left.is_empty(), "rtl job {id} left behind {left:?}");
    Job { n, id, out }
}

fn api_check(n: usize, env: &[(&str, &str)]) {
    let j = rtl_job(n, &example("api_check"), &[], env);
    assert_eq!(j.out.code(), Some(0), "{j:?}");
    let line = j.lines_starting("api_check: ");
    let tail = format!(" checks on each of {n} PEs passed");
    assert!(
        line.len() == 1
            && line[0]
                .strip_prefix("api_check: ")
                .and_then(|l| l.strip_suffix(&tail))
                .and_then(|k| k.parse::<u32>().ok())
                .is_some_and(|k| k > 0),
        "{j:?}"
    );
}

#[test]
fn api_check_on_2_and_3_rtl_boards() {
    api_check(2, &[]);
    api_check(3, &[]);
}

#[test]
fn api_check_on_3_rtl_boards_with_lossy_duplicating_reordering_links() {
    api_check(3, &[("FSHMEM_DEVSIM_IMPAIR", "loss=5,dup=2,reorder=10")]);
}

#[test]
fn coll_check_on_2_and_3_rtl_boards() {
    // The whole set at 2 boards (16 s), the quick set at 3 (23 s; the
    // whole set took 57 s there).
    for (n, set) in [(2, &[][..]), (3, &["quick"][..])] {
        let j = rtl_job(n, &example("coll_check"), set, &[]);
        assert_eq!(j.out.code(), Some(0), "{j:?}");
        for r in 0..n {
            let line = format!("coll_check: PE {r} of {n} ok");
            assert!(j.out.stdout.contains(&line), "missing {line:?} in {j:?}");
        }
    }
}

#[test]
fn c_tests_on_2_and_3_rtl_boards() {
    for name in ["static_data", "rma", "atomics", "coll"] {
        let exe = capi::compile(name, &[]);
        for n in [2, 3] {
            let j = rtl_job(n, &exe, &[], &[]);
            j.assert_ok_with(&format!("{name}: ok on {n} PEs"));
        }
    }
}

#[test]
fn examples_on_2_and_3_rtl_boards() {
    for n in [2, 3] {
        let j = rtl_job(n, &bin("hello"), &[], &[]);
        let sum = n * (n - 1) / 2;
        let ranks: Vec<usize> = (0..n).collect();
        j.assert_ok_with(&format!(
            "hello: {n} PEs, ranks {ranks:?}, sum {sum} by puts, {sum} by atomics, expected {sum} OK"
        ));
        let j = rtl_job(n, &bin("ring"), &[], &[]);
        let sum = n * n * (n - 1) / 2;
        j.assert_ok_with(&format!(
            "ring: token made {n} laps of {n} PEs: {} hops, sum {sum}, expected {sum} OK",
            n * n
        ));
        let j = rtl_job(n, &bin("histogram"), &[], &[]);
        j.assert_ok_with("histogram: every bin matches the serial histogram OK");
        // User active messages (typed, serde payloads) through the core's
        // receive queue.
        let j = rtl_job(n, &bin("dht"), &["--keys", "100"], &[]);
        let total = 100 * n;
        j.assert_ok_with(&format!(
            "dht: {n} PEs inserted {total} keys; shards hold {total}; every lookup exact OK"
        ));
        let j = rtl_job(n, &bin("matmul"), &[], &[]);
        j.assert_ok_with(&format!(
            "matmul n=96 PEs={n}: trace(C) = -139, sum(C) = 7505, max |error| = 0 OK"
        ));
        // GEMM tiles on the compute kernel beside each RTL core, their
        // results streamed by the core's puts (ART).
        let j = rtl_job(n, &bin("matmul_fpga"), &[], &[]);
        assert_eq!(j.out.code(), Some(0), "{j:?}");
        let want = format!(
            "matmul_fpga n=64 PEs={n} ART every 16 results: trace(C) = 763, max |error| = 0 OK ("
        );
        assert_eq!(j.lines_starting(&want).len(), 1, "{j:?}");
    }
}

/// A board whose RTL core stops (SIGSTOP) or dies (SIGKILL) mid-run, at 3
/// boards: the host's heartbeat on `UPTIME` and the other cores' peer
/// timeouts find it as they do with the engine.
#[test]
fn a_board_that_stops_answering_or_dies_ends_the_job_naming_its_pe() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let rtl = devsim_rtl();
    let env = [
        ("FSHMEM_DEVSIM", rtl.to_str().expect("a UTF-8 path")),
        ("FSHMEM_DEVSIM_CORE", "rtl"),
    ];
    let stress = ["20", "1000000", "5"];
    for (sig, expect) in [
        (libc::SIGSTOP, "stopped answering"),
        (libc::SIGKILL, "its board"),
    ] {
        board_failure::board_fails(3, &stress, &env, sig, expect);
    }
}

/// Misuse of the compute kernel's handlers at 2 RTL boards (see the
/// module notes).
#[test]
fn compute_handler_misuse_on_2_rtl_boards_ends_the_job_naming_pe_and_handler() {
    let exe = capi::compile("am_compute_index", &[]);
    compute::index_refused(&rtl_job(2, &exe, &["short"], &[]));
    for case in ["handler", "args"] {
        compute::reject_failed(&rtl_job(2, &example("compute_reject"), &[case], &[]), case);
    }
    let none = [("FSHMEM_DEVSIM_COMPUTE", "0")];
    compute::no_core_refused(&rtl_job(2, &bin("matmul_fpga"), &[], &none));
}
