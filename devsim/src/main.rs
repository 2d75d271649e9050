//! `devsim`: the software fshmem board (see the `devsim` library).
//!
//! ```text
//! devsim board  --dir DIR --node N --nodes M [--window SIZE] [--peer-timeout D]
//!               [--impair loss=P,dup=P,reorder=P] [--fault KIND]
//!               [--core engine|rtl] [--mem-latency CYCLES] [--compute 0|1]
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
//! `--core` picks the board's core: the reference engine (default) or,
//! in a devsim built with the `rtl` feature, the Verilator model of the
//! RTL core in `hw/`, whose memory answers after `--mem-latency` cycles
//! (default 30). `--compute 0` makes a board without its compute core
//! (`CAPS.COMPUTE` 0: requests to handlers 224..=255 reach the host).
//! A board that dies is reported by the keeper; the others keep serving
//! until the launcher ends the job (the PEs' liveness checks name the PE).

fn main() -> std::process::ExitCode {
    devsim::launch::main()
}
