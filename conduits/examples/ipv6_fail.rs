//! Peer failure on the data path, run as
//! `FSHMEM_PEER_TIMEOUT=1s oshrun -n N --conduit ipv6 ipv6_fail`: PE 1 stops
//! itself (SIGSTOP: alive, silent) after the job assembled; PE 0 then gets
//! from it and must fail within the timeout with an error naming PE 1,
//! print it and exit 3, so the job ends non-zero instead of hanging. With
//! `FSHMEM_WAIT_TIMEOUT` shorter than the peer timeout the get's wait
//! times out first instead: PE 0 prints what it waited for and exits 4.

use conduits::prelude::*;
use conduits::{AnyConduit, ConduitError, JobEnv, SegmentRequest, Settings};
use std::time::{Duration, Instant};

fn main() {
    let job = JobEnv::from_env().expect("job environment");
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(1 << 16), &settings).expect("attach");
    c.barrier().expect("first barrier");
    match c.rank() {
        1 => {
            // SAFETY: raise only sends a signal to this process.
            unsafe { libc::raise(libc::SIGSTOP) };
        }
        0 => {
            std::thread::sleep(Duration::from_millis(100));
            let t = Instant::now();
            let mut buf = [0u8; 64];
            let r = (0..1000).try_for_each(|_| c.get(CtxId::DEFAULT, 1, 0, &mut buf));
            match r {
                Err(ConduitError::PeerFailed { pe, reason }) => {
                    println!(
                        "ipv6_fail: PE {pe} failed after {:.1} s: {reason}",
                        t.elapsed().as_secs_f64()
                    );
                    std::process::exit(3);
                }
                Err(e @ ConduitError::Timeout { .. }) => {
                    println!("ipv6_fail: PE 0: {e}");
                    std::process::exit(4);
                }
                other => {
                    conduits::report!("ipv6_fail: expected PE 1 to fail, got {other:?}");
                    std::process::exit(1);
                }
            }
        }
        _ => std::thread::sleep(Duration::from_secs(60)),
    }
}
