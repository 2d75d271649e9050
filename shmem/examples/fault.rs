//! Fault scenarios for the failure tests (`tests/tests/fault_*.rs`), run as
//! `oshrun -n N fault MODE [ARG]`. Every PE prints `fault: PE r pid P ...`
//! lines so a test can find the processes and check none is left.
//!
//! - `crash KIND`: after a barrier PE 1 fails — `abort`, `panic`, `exit0`
//!   (exit status 0 without finalizing), `exit3`, `raw-exit0` (`_exit(0)`,
//!   which skips every exit handler), or `kill` (it waits; the test sends
//!   SIGKILL) — printing `failing at <unix ms>` first. The others wait in
//!   `wait_until` for a flag nobody sets; if the runtime reports an error
//!   they print it and exit 1.
//! - `flood KIND`: as `crash KIND`, but instead of waiting the others
//!   issue non-blocking atomic adds and puts to PE 1 (at most 2,000,000
//!   or for 60 s), so that the provider's queues fill while PE 1 is gone;
//!   they print the error they get and exit 1.
//! - `relay KIND GO`: a job of several hosts (`oshrun --hosts`). After a
//!   barrier PE 1 prints `fault: PE 1 ready to fail` and waits, outside
//!   the runtime, until the FIFO `GO` is opened for writing; then it fails
//!   as in `crash KIND` (`kill`: it waits for the test's SIGKILL instead).
//!   PE 1's host mates and the first PE of every other host wait in
//!   `wait_until` (`fault: PE r waiting`), so they learn of the failure
//!   themselves. The other PEs complete their operations and finalize
//!   (`fault: PE r finalizing`): `shmem_finalize` first meets the PEs of
//!   the host in shared memory, where the first one never arrives, so
//!   they learn of the failure only from its departure. A PE that gets
//!   an error prints it and exits 1.
//! - `wait-until`: PE N-1 waits for a word nobody sets (needs
//!   `FSHMEM_WAIT_TIMEOUT`); the others sleep outside the runtime.
//! - `wait-barrier`: PE N-1 sleeps outside the runtime; the others enter
//!   `barrier_all`.
//! - `global-exit STATUS`: after a barrier PE 0 calls
//!   `shmem_global_exit(STATUS)` while the others wait in `wait_until` for
//!   a flag nobody sets; the job must end with STATUS.
//! - `input`: every bad-input error of the Rust API, one `ok NAME: error`
//!   line per check from PE 0 (each PE checks).
//! - `mismatch`: PE 1 allocates a different size than the others; every PE
//!   prints the error it gets and exits 1.

use shmem::alloc::HeapAllocator;
use shmem::{Cmp, ShmemError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let arg = args.next().unwrap_or_default();
    let sh = match shmem::init() {
        Ok(sh) => sh,
        Err(e) => {
            shmem::report!("fault: {e}");
            std::process::exit(1);
        }
    };
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let pid = std::process::id();
    println!("fault: PE {me} pid {pid} started");
    match mode.as_str() {
        "crash" => crash(&sh, &arg, false),
        "flood" => crash(&sh, &arg, true),
        "relay" => relay(sh, &arg, &args.next().unwrap_or_default()),
        "wait-until" => {
            let flag = sh.calloc::<u64>(1).expect("calloc");
            if me == n - 1 {
                let r = flag.wait_until(0, Cmp::Eq, 5);
                println!("fault: PE {me}: wait_until returned {r:?}");
            } else {
                std::thread::sleep(Duration::from_secs(30));
            }
            std::process::exit(1);
        }
        "wait-barrier" => {
            if me == n - 1 {
                std::thread::sleep(Duration::from_secs(30));
            } else {
                let r = sh.barrier_all();
                println!("fault: PE {me}: barrier_all returned {r:?}");
            }
            std::process::exit(1);
        }
        "global-exit" => {
            let status: i32 = arg.parse().unwrap_or(0);
            let flag = sh.calloc::<u64>(1).expect("calloc");
            sh.barrier_all().expect("barrier");
            if me == 0 {
                std::thread::sleep(Duration::from_millis(200));
                println!("fault: PE 0 calls global_exit({status}) at {}", now_ms());
                sh.global_exit(status);
            }
            let r = flag.wait_until(0, Cmp::Eq, 1);
            println!("fault: PE {me}: wait_until returned {r:?}");
            std::process::exit(1);
        }
        "input" => input(&sh),
        "mismatch" => {
            let len = if me == 1 { 128 } else { 64 };
            match sh.malloc::<u8>(len) {
                Ok(_) => println!("fault: PE {me}: malloc({len}) succeeded"),
                Err(e) => println!("fault: PE {me}: {e}"),
            }
            // The job must stay usable: the same allocation again works.
            let v = sh
                .malloc::<u8>(64)
                .expect("a matching malloc after a mismatch");
            drop(v);
            std::process::exit(1);
        }
        other => {
            shmem::report!("fault: unknown mode {other:?}");
            std::process::exit(2);
        }
    }
}

/// PE 1 fails by `kind` (see `crash KIND`); `kill`: it waits, outside the
/// runtime, for the test's SIGKILL.
fn crash_now(kind: &str) -> ! {
    if kind == "kill" {
        loop {
            std::thread::park();
        }
    }
    println!("fault: PE 1 failing at {}", now_ms());
    match kind {
        "abort" => std::process::abort(),
        "panic" => panic!("fault: PE 1 panics on purpose"),
        "exit0" => std::process::exit(0),
        "exit3" => std::process::exit(3),
        // SAFETY: _exit ends the process; nothing is shared with it.
        "raw-exit0" => unsafe { libc::_exit(0) },
        other => {
            shmem::report!("fault: unknown crash kind {other:?}");
            std::process::exit(2);
        }
    }
}

fn crash(sh: &shmem::Shmem, kind: &str, flood: bool) {
    let me = sh.my_pe();
    let flag = sh.calloc::<u64>(1).expect("calloc");
    sh.barrier_all().expect("barrier");
    if me == 1 {
        if kind == "kill" {
            println!("fault: PE 1 ready to be killed");
        } else {
            crash_now(kind);
        }
    }
    // The next runtime call is the wait: a test that kills PE 1 once every
    // PE said this knows every PE is past the barrier.
    println!("fault: PE {me} waiting");
    if flood {
        let end = std::time::Instant::now() + Duration::from_secs(60);
        let mut r = Ok(());
        for i in 0..2_000_000u64 {
            r = flag.atomic_add(0, 1, 1).and_then(|_| flag.put(0, &[i], 1));
            if r.is_err() || std::time::Instant::now() > end {
                break;
            }
        }
        match r.and_then(|_| sh.quiet()) {
            Ok(_) => println!("fault: PE {me}: the flood ended without an error"),
            Err(e) => println!("fault: PE {me} detected at {}: {e}", now_ms()),
        }
        std::process::exit(1);
    }
    match flag.wait_until(0, Cmp::Eq, 1) {
        Ok(_) => println!("fault: PE {me}: the flag was set?"),
        Err(e) => println!("fault: PE {me} detected at {}: {e}", now_ms()),
    }
    std::process::exit(1);
}

/// `relay KIND GO` (see the module documentation).
fn relay(sh: shmem::Shmem, kind: &str, go: &str) {
    let me = sh.my_pe();
    let flag = sh.calloc::<u64>(1).expect("calloc");
    let shared = sh.team_shared();
    let mates: Vec<usize> = (0..shared.n_pes())
        .filter_map(|i| shared.world_pe(i))
        .collect();
    drop(shared);
    sh.barrier_all().expect("barrier");
    if me == 1 {
        println!("fault: PE 1 ready to fail");
        // Blocks until the test opens the FIFO for writing.
        if kind != "kill"
            && let Err(e) = std::fs::File::open(go)
        {
            shmem::report!("fault: PE 1: cannot open {go}: {e}");
            std::process::exit(2);
        }
        crash_now(kind);
    }
    let waits = mates.contains(&1) || mates.first() == Some(&me);
    let r = if waits {
        println!("fault: PE {me} waiting");
        flag.wait_until(0, Cmp::Eq, 1).map(drop)
    } else {
        // Nothing of this PE's is outstanding past here, so its finalize
        // waits for the host's PEs before anything else. Freeing the flag
        // would be a collective call: the finalize reclaims it.
        sh.quiet().expect("quiet");
        std::mem::forget(flag);
        println!("fault: PE {me} finalizing");
        sh.finalize()
    };
    match r {
        Ok(()) => println!("fault: PE {me}: the call returned?"),
        Err(e) => println!("fault: PE {me} detected at {}: {e}", now_ms()),
    }
    std::process::exit(1);
}

/// Checks one expected error; prints it from PE 0.
fn expect<T: std::fmt::Debug>(
    me: usize,
    name: &str,
    r: shmem::Result<T>,
    ok: impl Fn(&ShmemError) -> bool,
) {
    match r {
        Err(e) if ok(&e) => {
            if me == 0 {
                println!("ok {name}: {e}");
            }
        }
        other => {
            println!("FAIL {name}: PE {me}: {other:?}");
            std::process::exit(1);
        }
    }
}

fn input(sh: &shmem::Shmem) {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let v = sh.calloc::<u64>(8).expect("calloc");
    let mut buf = [0u64; 8];
    expect(
        me,
        "pe-out-of-range",
        v.put(0, &buf, n),
        |e| matches!(e, ShmemError::PeOutOfRange { target, n_pes, call: "shmem_put", .. } if *target == n && *n_pes == n),
    );
    expect(me, "pe-out-of-range-get", v.get(0, &mut buf, n + 7), |e| {
        matches!(
            e,
            ShmemError::PeOutOfRange {
                call: "shmem_get",
                ..
            }
        )
    });
    expect(
        me,
        "pe-out-of-range-atomic",
        v.atomic_fetch_add(0, 1, usize::MAX),
        |e| matches!(e, ShmemError::PeOutOfRange { .. }),
    );
    expect(me, "index-outside-object", v.p(8, 1, 0), |e| {
        matches!(
            e,
            ShmemError::OutOfBounds {
                start: 8,
                count: 1,
                len: 8,
                ..
            }
        )
    });
    expect(me, "length-overruns-object", v.put(4, &buf, 0), |e| {
        matches!(
            e,
            ShmemError::OutOfBounds {
                start: 4,
                count: 8,
                len: 8,
                ..
            }
        )
    });
    expect(
        me,
        "length-overflows",
        v.get(usize::MAX, &mut buf, 0),
        |e| matches!(e, ShmemError::OutOfBounds { .. }),
    );
    expect(
        me,
        "wait-outside-object",
        v.wait_until(9, Cmp::Eq, 0),
        |e| matches!(e, ShmemError::OutOfBounds { .. }),
    );
    expect(me, "heap-exhausted", sh.malloc::<u8>(usize::MAX / 4), |e| {
        matches!(
            e,
            ShmemError::Alloc {
                call: "shmem_malloc",
                ..
            }
        )
    });
    expect(me, "size-overflow", sh.malloc::<u64>(usize::MAX / 2), |e| {
        matches!(e, ShmemError::SizeOverflow { .. })
    });
    expect(me, "bad-alignment", sh.align::<u8>(3, 8), |e| {
        matches!(
            e,
            ShmemError::Alloc {
                call: "shmem_align",
                ..
            }
        )
    });
    // The heap still works after every refused request.
    let w = sh.malloc::<u32>(16).expect("malloc after errors");
    w.free().expect("free");
    // The Rust API cannot free twice (free consumes the SymVec) nor free a
    // foreign pointer; the allocator below it refuses both.
    let mut heap = HeapAllocator::new(1 << 16);
    let a = heap.alloc(64, 8).expect("alloc");
    heap.free(a).expect("first free");
    let double = heap.free(a).map_err(|source| ShmemError::Alloc {
        pe: me,
        call: "shmem_free",
        source,
    });
    expect(me, "double-free", double, |e| {
        matches!(e, ShmemError::Alloc { .. })
    });
    let foreign = heap.free(a + 8).map_err(|source| ShmemError::Alloc {
        pe: me,
        call: "shmem_free",
        source,
    });
    expect(me, "foreign-free", foreign, |e| {
        matches!(e, ShmemError::Alloc { .. })
    });
    drop(v);
    if me == 0 {
        println!("fault: input checks passed on {n} PEs");
    }
}
