//! A context's quiet covers its own operations only: run at 3 PEs on the
//! fpga conduit by `tests/tests/contexts.rs`, which stops PE 1's board
//! (SIGSTOP) in the middle.
//!
//! PE 0 opens two contexts. It prints `ctx_quiet: PE 0: ready` and waits
//! for the file named by its first argument (the test creates it once PE
//! 1's board is stopped); then it puts 64 KiB and adds to a counter on PE
//! 1 through the `slow` context, and does the same to PE 2 through the
//! `fast` one. `fast.quiet()` returns although PE 1's board cannot
//! acknowledge anything: PE 0 prints `ctx_quiet: PE 0: fast quiet
//! returned` and checks with gets on the fast context that PE 2 holds the
//! data. It then waits for the second file (the test resumes the board
//! before creating it), quiets `slow`, and after a barrier PEs 1 and 2
//! check their data and counters exactly. PE 0 prints `ctx_quiet: ok` when
//! every PE's checks passed.

use shmem::{CtxOptions, ShmemError};
use std::path::Path;
use std::process::ExitCode;

const LEN: usize = 8 * 1024; // u64 elements: 64 KiB

fn word(pe: usize, i: usize) -> u64 {
    ((pe as u64) << 40) ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Waits until `path` exists (the test's go-ahead), yielding meanwhile.
fn wait_for_file(path: &Path) {
    while !path.exists() {
        std::thread::yield_now();
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            shmem::report!("ctx_quiet: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, ShmemError> {
    let args: Vec<String> = std::env::args().collect();
    let (go1, go2) = match (args.get(1), args.get(2)) {
        (Some(a), Some(b)) => (Path::new(a).to_path_buf(), Path::new(b).to_path_buf()),
        _ => {
            shmem::report!("usage: ctx_quiet GO_FILE_1 GO_FILE_2");
            return Ok(false);
        }
    };
    let sh = shmem::init()?;
    let (me, n) = (sh.my_pe(), sh.n_pes());
    if n != 3 {
        shmem::report!("ctx_quiet: runs on 3 PEs, not {n}");
        return Ok(false);
    }
    let data = sh.calloc::<u64>(LEN)?;
    let counter = sh.calloc::<u64>(1)?;
    let mut ok = true;
    sh.barrier_all()?;
    if me == 0 {
        let slow = sh.create_ctx(CtxOptions::PRIVATE)?;
        let fast = sh.create_ctx(CtxOptions::PRIVATE)?;
        println!("ctx_quiet: PE 0: ready");
        wait_for_file(&go1);
        let to1: Vec<u64> = (0..LEN).map(|i| word(1, i)).collect();
        let to2: Vec<u64> = (0..LEN).map(|i| word(2, i)).collect();
        slow.put(&data, 0, &to1, 1)?;
        slow.atomic_add(&counter, 0, 11, 1)?;
        fast.put(&data, 0, &to2, 2)?;
        fast.atomic_add(&counter, 0, 22, 2)?;
        fast.quiet()?;
        println!("ctx_quiet: PE 0: fast quiet returned");
        let mut back = vec![0u64; LEN];
        fast.get(&data, 0, &mut back, 2)?;
        ok &= back == to2 && fast.atomic_fetch(&counter, 0, 2)? == 22;
        wait_for_file(&go2);
        slow.quiet()?;
    }
    sh.barrier_all()?;
    if me > 0 {
        let want = if me == 1 { 11 } else { 22 };
        ok &= data.iter().enumerate().all(|(i, v)| v == word(me, i)) && counter.read(0) == want;
    }
    let bad = sh.calloc::<u64>(1)?;
    bad.atomic_add(0, u64::from(!ok), 0)?;
    sh.barrier_all()?;
    let all = bad.atomic_fetch(0, 0)? == 0;
    if me == 0 && all {
        println!("ctx_quiet: ok");
    }
    sh.barrier_all()?;
    Ok(all)
}
