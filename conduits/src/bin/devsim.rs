//! `devsim`: the software fshmem board (see `conduits::fpga::devsim`).
//!
//! ```text
//! devsim board  --dir DIR --node N --nodes M [--window SIZE] [--fault KIND]
//! devsim launch --job ID --nodes M
//! ```
//!
//! `board` runs one board whose BARs are `DIR/bar0` and `DIR/bar2`; it
//! publishes its two UDP link ports in `DIR/ports`, waits for the job's
//! table in `DIR/peers`, writes `DIR/ready` and serves until SIGTERM,
//! SIGINT or SIGHUP, then removes `DIR`. `launch` is the keeper `oshrun
//! --conduit fpga` runs: it starts M boards under
//! `/dev/shm/fshmem-ID-board<n>/`, exchanges their ports, prints
//! `ready <dir>...` and stops them (removing their files) when its stdin
//! closes. `FSHMEM_FPGA_WINDOW` sets the DDR window (default 1G, sparse);
//! `FSHMEM_DEVSIM_FAULT` (get, inline-put, segment-put, atomic) injects a
//! fault for testing the host's health check. The board links run the
//! reliable transport of the IPv6 bridge; `FSHMEM_PEER_TIMEOUT` (default
//! 10 s) bounds a peer board's silence before `ERR_STATUS.PEER_TIMEOUT`
//! names it, and `FSHMEM_DEVSIM_IMPAIR=loss=5,dup=1,reorder=10` drops,
//! duplicates and delays that percentage of link datagrams (testing). A
//! board that dies is reported by the keeper; the others keep serving
//! until the launcher ends the job (the PEs' liveness checks name the PE).

use conduits::fpga::launch;
use std::process::ExitCode;

const USAGE: &str = "usage: devsim board --dir DIR --node N --nodes M [--window SIZE] [--fault KIND]\n       devsim launch --job ID --nodes M";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("board") => launch::board_main(&args[1..]),
        Some("launch") => launch::keeper_main(&args[1..]),
        _ => {
            conduits::report!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            conduits::report!("devsim: {e}");
            ExitCode::from(1)
        }
    }
}
