//! Failure scenarios for the launcher and the conduit, run as
//! `oshrun -n N smp_fail MODE [ARG]`:
//!
//! - `abort`: PE 1 aborts after the job assembled; the others wait in a
//!   barrier (and report PE 1 when they notice).
//! - `exit S`: PE 1 exits with status S; the others sleep outside the
//!   runtime, so only the launcher can stop them.
//! - `stall`: PE 0 attaches and waits for the others, which never attach
//!   (the job's shared memory exists until the launcher cleans it).
//! - `detect`: PE 1 leaves without finalizing; the others' barrier must fail
//!   naming PE 1; they print `detected: ...` and exit 0.
//! - `global-exit S`: PE 1 calls `global_exit(S)`; the others, in a barrier,
//!   must exit with S.

use conduits::prelude::*;
use conduits::{AnyConduit, ConduitError, JobEnv, SegmentRequest, Settings};
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let arg: i32 = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let job = JobEnv::from_env().expect("job environment");
    let rank = job.rank;
    if mode == "stall" && rank != 0 {
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(1 << 16), &settings).unwrap_or_else(|e| {
        conduits::report!("smp_fail: PE {rank}: {e}");
        std::process::exit(2)
    });
    c.barrier().expect("first barrier");
    println!("smp_fail: PE {rank} attached");
    match mode.as_str() {
        "abort" => {
            if rank == 1 {
                std::process::abort();
            }
            report(c.barrier());
        }
        "exit" => {
            if rank == 1 {
                std::process::exit(arg);
            }
            std::thread::sleep(Duration::from_secs(120));
        }
        "detect" => {
            if rank == 1 {
                std::process::exit(0);
            }
            match c.barrier() {
                Err(ConduitError::PeerFailed { pe, reason }) => {
                    println!("detected: PE {pe} failed: {reason}");
                }
                other => {
                    conduits::report!("smp_fail: PE {rank}: expected a failure, got {other:?}");
                    std::process::exit(1);
                }
            }
        }
        "global-exit" => {
            if rank == 1 {
                c.global_exit(arg);
            }
            report(c.barrier());
            conduits::report!("smp_fail: PE {rank} passed a barrier PE 1 never entered");
            std::process::exit(1);
        }
        other => {
            conduits::report!("smp_fail: unknown mode {other:?}");
            std::process::exit(2);
        }
    }
}

/// Reports a failed call and exits 3. A peer's failure is first named to
/// the launcher, as the shmem runtime does (`ShmemError::conduit`): oshrun
/// may reap this PE before the failed one and must still blame that one.
fn report(r: conduits::Result<()>) {
    if let Err(e) = r {
        if let ConduitError::PeerFailed { pe, .. } = &e {
            conduits::job::tell_launcher_failed(*pe);
        }
        conduits::report!("smp_fail: {e}");
        std::process::exit(3);
    }
}
