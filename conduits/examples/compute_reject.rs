//! A request to a board's compute core that the core can neither run nor
//! answer, sent at the conduit level (shmem's API never sends one):
//! `oshrun -n N --conduit fpga compute_reject [handler|args|reply]`.
//!
//! Every PE prints `compute_reject: PE k of N attached`. Then the last PE
//! sends PE 0 a Short request to handler 225 (`handler`: the GEMM core
//! implements only 224), to 224 with one argument (`args`: a tile takes
//! eleven) or to 224 with a system handler as its reply handler (`reply`),
//! and every PE finalizes. PE 0's board drops the request and reports it
//! (`ERR_STATUS.COMPUTE`); PE 0's conduit must turn that into an error
//! naming the sender and the handler, which PE 0 prints as
//! `compute_reject: PE 0: <error>` before it exits with status 1. A PE
//! that finalizes prints `compute_reject: PE k finalized`.

use conduits::prelude::*;
use conduits::{AnyConduit, Category, JobEnv, SegmentRequest, Settings};
use gasnet_core::compute::GEMM_RUN;
use std::io::Write;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() {
    let case = std::env::args().nth(1).unwrap_or_else(|| "handler".into());
    let job = JobEnv::from_env().expect("job environment");
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(1 << 16), &settings).unwrap_or_else(|e| {
        conduits::report!("compute_reject: {e}");
        std::process::exit(2)
    });
    let (me, n) = (c.rank(), c.size());
    let fail = |e: conduits::ConduitError| -> ! {
        conduits::report!("compute_reject: PE {me}: {e}");
        std::process::exit(1)
    };
    say(&format!("compute_reject: PE {me} of {n} attached"));
    c.barrier().unwrap_or_else(|e| fail(e));
    if me == n - 1 {
        // A tile's arguments: A, B, C, m, n, k, ART every, ART peer (none),
        // ART destination, reply handler, job.
        let mut tile = [0, 4096, 8192, 2, 2, 2, 0, u32::MAX, 0, 64, 1];
        let (handler, args): (u8, &[u32]) = match case.as_str() {
            "handler" => (GEMM_RUN + 1, &[1, 2]),
            "args" => (GEMM_RUN, &[7]),
            "reply" => {
                tile[9] = gasnet_core::handlers::ACK as u32;
                (GEMM_RUN, &tile)
            }
            other => {
                conduits::report!("compute_reject: unknown case {other:?} (handler, args, reply)");
                std::process::exit(2)
            }
        };
        c.am_request(0, Category::Short, handler, args, &[], 0)
            .unwrap_or_else(|e| fail(e));
    }
    c.finalize().unwrap_or_else(|e| fail(e));
    say(&format!("compute_reject: PE {me} finalized"));
}
