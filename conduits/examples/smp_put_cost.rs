//! Measures the cost of an 8-byte put and an 8-byte get through
//! [`conduits::AnyConduit`] on the smp conduit (to the next PE, or to itself
//! in a singleton job). Run a release build: `smp_put_cost [count]`.

use conduits::prelude::*;
use conduits::{AnyConduit, JobEnv, SegmentRequest, Settings};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000_000);
    let job = JobEnv::from_env().expect("job environment");
    let settings = Settings::from_env().unwrap_or_else(|e| panic!("{e}"));
    let c = AnyConduit::attach(&job, SegmentRequest::Own(1 << 20), &settings).expect("attach");
    let peer = (c.rank() + 1) % c.size();
    c.barrier().expect("barrier");
    let t = Instant::now();
    for i in 0..count {
        c.put(
            CtxId::DEFAULT,
            peer,
            (c.rank() * 64 + (i & 7) * 8) % 4096,
            &black_box(i as u64).to_le_bytes(),
        )
        .expect("put");
    }
    let put_ns = t.elapsed().as_nanos() as f64 / count as f64;
    let mut buf = [0u8; 8];
    let t = Instant::now();
    for i in 0..count {
        c.get(CtxId::DEFAULT, peer, (i & 7) * 8, &mut buf)
            .expect("get");
        black_box(&buf);
    }
    let get_ns = t.elapsed().as_nanos() as f64 / count as f64;
    c.finalize().expect("finalize");
    println!(
        "PE {}: 8-byte put {put_ns:.1} ns, 8-byte get {get_ns:.1} ns ({count} each)",
        c.rank()
    );
}
