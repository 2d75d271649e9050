//! `devsim`: the software fshmem board (see the `devsim` library).
//!
//! ```text
//! devsim board  --dir DIR --node N --nodes M [--window SIZE] [--peer-timeout D]
//!               [--impair loss=P,dup=P,reorder=P] [--fault KIND]
//! devsim launch --job ID --nodes M --dir PREFIX [the same settings]
//! ```
//!
//! `board` runs one board whose BARs are `DIR/bar0` and `DIR/bar2`; it
//! publishes its two UDP link ports in `DIR/ports`, waits for the job's
//! table in `DIR/peers`, writes `DIR/ready` and serves until SIGTERM,
//! SIGINT or SIGHUP, then removes `DIR`. `launch` is the keeper `oshrun
//! --conduit fpga` runs: it starts M boards in `PREFIX0`, `PREFIX1`, ...,
//! exchanges their ports, prints `ready <dir>...` and stops them (removing
//! their files) when its stdin closes. The settings are flags (devsim reads
//! no environment): `--window` sets the DDR window (default 1G, sparse),
//! `--peer-timeout` bounds a peer board's silence before
//! `ERR_STATUS.PEER_TIMEOUT` names it (default 10s), `--impair` drops,
//! duplicates and delays that percentage of link datagrams and `--fault`
//! (get, inline-put, segment-put, atomic) injects a fault, both for tests.
//! A board that dies is reported by the keeper; the others keep serving
//! until the launcher ends the job (the PEs' liveness checks name the PE).

use devsim::launch;
use std::process::ExitCode;

const USAGE: &str =
    "usage: devsim board --dir DIR --node N --nodes M [--window SIZE] [--peer-timeout D]
                    [--impair loss=P,dup=P,reorder=P] [--fault KIND]
       devsim launch --job ID --nodes M --dir PREFIX [the same settings]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("board") => launch::board_main(&args[1..]),
        Some("launch") => launch::keeper_main(&args[1..]),
        _ => {
            devsim::report(USAGE);
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            devsim::report(&format!("devsim: {e}"));
            ExitCode::from(1)
        }
    }
}
