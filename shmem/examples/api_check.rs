//! A self-check of the whole `shmem` API across every PE of a job: each
//! call with exact expected results. Exits 1 when any check fails.
//!
//! ```sh
//! target/release/oshrun -n 4 target/release/examples/api_check
//! target/release/oshrun -n 3 target/release/examples/api_check global_exit  # exits 7
//! SHMEM_DEBUG=1 target/release/oshrun -n 3 target/release/examples/api_check not_collective
//! ```

use shmem::{Cmp, Shmem, ShmemError, SignalOp, SymVec};
use std::sync::atomic::{AtomicUsize, Ordering};

static CHECKS: AtomicUsize = AtomicUsize::new(0);
static FAILURES: AtomicUsize = AtomicUsize::new(0);

macro_rules! check {
    ($me:expr, $what:expr, $got:expr, $want:expr) => {{
        let (got, want) = ($got, $want);
        CHECKS.fetch_add(1, Ordering::Relaxed);
        if got != want {
            FAILURES.fetch_add(1, Ordering::Relaxed);
            shmem::report!(
                "PE {}: {} (line {}): got {:?}, want {:?}",
                $me,
                $what,
                line!(),
                got,
                want
            );
        }
    }};
}

type R = Result<(), ShmemError>;

/// Every PE's value of `v`, gathered on every PE through a symmetric array.
fn allgather(sh: &Shmem, v: u64) -> Result<Vec<u64>, ShmemError> {
    let n = sh.n_pes();
    let all = sh.calloc::<u64>(n)?;
    for pe in 0..n {
        all.p(sh.my_pe(), v, pe)?;
    }
    sh.barrier_all()?;
    Ok(all.to_vec())
}

fn identity(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    check!(me, "free my_pe", shmem::my_pe()?, me);
    check!(me, "free n_pes", shmem::n_pes()?, n);
    let ranks = allgather(sh, me as u64)?;
    check!(
        me,
        "ranks distinct",
        ranks,
        (0..n as u64).collect::<Vec<_>>()
    );
    let e = sh.calloc::<u8>(1)?.p(0, 1, n).unwrap_err();
    check!(
        me,
        "error text",
        e.to_string(),
        format!("PE {me}: shmem_p: target PE {n} out of range (job has {n} PEs)")
    );
    Ok(())
}

fn allocation(sh: &Shmem) -> R {
    let me = sh.my_pe();
    let a = sh.malloc::<u64>(100)?;
    let b = sh.align::<u8>(1024, 7)?;
    let c = sh.calloc::<i32>(33)?;
    check!(me, "align", b.segment_offset() % 1024, 0);
    check!(me, "calloc zero", c.iter().all(|x| x == 0), true);
    let offs = [a.segment_offset(), b.segment_offset(), c.segment_offset()];
    for (i, o) in offs.iter().enumerate() {
        let all = allgather(sh, *o as u64)?;
        check!(
            me,
            format!("symmetric offset {i}"),
            all,
            vec![*o as u64; sh.n_pes()]
        );
    }
    let old_b = b.segment_offset();
    drop(b);
    let b2 = sh.malloc::<u8>(7)?;
    check!(me, "reuse after free", b2.segment_offset() <= old_b, true);
    b2.free()?;

    // realloc keeps contents on every PE, and offsets stay symmetric.
    let mut r = sh.malloc::<u64>(4)?;
    r.copy_from(0, &[me as u64, 1, 2, me as u64 * 10]);
    r.realloc(5000)?;
    check!(
        me,
        "realloc contents",
        r.read_range(..4),
        &[me as u64, 1, 2, me as u64 * 10][..]
    );
    let all = allgather(sh, r.segment_offset() as u64)?;
    check!(
        me,
        "realloc symmetric",
        all,
        vec![r.segment_offset() as u64; sh.n_pes()]
    );
    r.p(4999, 77, (me + 1) % sh.n_pes())?;
    sh.barrier_all()?;
    check!(me, "put into grown part", r.read(4999), 77);
    Ok(())
}

fn rma(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let x = sh.calloc::<u32>(64)?;
    let pattern: Vec<u32> = (0..40).map(|i| (me as u32) << 16 | i).collect();
    x.put(10, &pattern, next)?;
    x.p(0, 1000 + me as u32, next)?;
    sh.barrier_all()?;
    let want: Vec<u32> = (0..40).map(|i| (prev as u32) << 16 | i).collect();
    check!(me, "put ring", x.read_range(10..50), &want[..]);
    check!(me, "p ring", x.read(0), 1000 + prev as u32);
    let mut got = vec![0u32; 40];
    x.get(10, &mut got, next)?;
    let want_next: Vec<u32> = (0..40).map(|i| (me as u32) << 16 | i).collect();
    check!(me, "get", got, want_next);
    check!(me, "g", x.g(0, next)?, 1000 + me as u32);

    // Mixed element types.
    let f = sh.calloc::<[f64; 2]>(n)?;
    for pe in 0..n {
        f.p(me, [me as f64, -(pe as f64)], pe)?;
    }
    sh.barrier_all()?;
    for (pe, v) in f.iter().enumerate() {
        check!(me, "array elements", v, [pe as f64, -(me as f64)]);
    }

    // Direct pointer to the next PE's copy.
    if let Some(p) = x.ptr(next) {
        // SAFETY: p points at element 0 of the next PE's live copy of x,
        // which nobody writes until the barrier below.
        let v = unsafe { p.read_volatile() };
        check!(me, "ptr read", v, 1000 + me as u32);
    } else if conduits_map_peers() {
        // Only smp maps every peer's segment; ipv6 and fpga return None.
        check!(me, "ptr on smp", "none", "some");
    }
    sh.barrier_all()?;
    Ok(())
}

fn nbi(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    const K: usize = 257;
    let all = sh.calloc::<u64>(n * K)?;
    let mine: Vec<u64> = (0..K as u64).map(|i| me as u64 * 1_000_000 + i).collect();
    sh.nbi(|s| -> R {
        for pe in 0..n {
            s.put(&all, me * K, &mine, pe)?;
        }
        Ok(())
    })?;
    sh.barrier_all()?;
    for pe in 0..n {
        let want: Vec<u64> = (0..K as u64).map(|i| pe as u64 * 1_000_000 + i).collect();
        check!(
            me,
            "put_nbi block",
            all.read_range(pe * K..(pe + 1) * K),
            &want[..]
        );
    }
    let mut back = vec![0u64; n * K];
    sh.nbi(|s| -> R {
        for (pe, chunk) in back.chunks_mut(K).enumerate() {
            s.get(&all, pe * K, chunk, (me + pe) % n)?;
        }
        Ok(())
    })?;
    check!(me, "get_nbi", &back, &all.to_vec());
    sh.barrier_all()?;
    Ok(())
}

macro_rules! int_atomics {
    ($sh:expr, $t:ty) => {{
        let sh: &Shmem = $sh;
        let (me, n) = (sh.my_pe(), sh.n_pes());
        let name = stringify!($t);
        let w = sh.calloc::<$t>(8)?;
        // Tickets: fetch_add / fetch_inc hand out distinct values.
        let t1 = w.atomic_fetch_add(0, 1, 0)?;
        let t2 = w.atomic_fetch_inc(1, 0)?;
        w.atomic_add(2, 3, 0)?;
        w.atomic_inc(3, 0)?;
        // Bits: every PE sets, clears and toggles its own bit on PE 0.
        let bit: $t = 1 << (me % 31);
        w.atomic_or(4, bit, 0)?;
        let _ = w.atomic_fetch_or(5, bit, 0)?;
        w.atomic_set(6, !0, 0)?; // every PE writes the same value
        sh.barrier_all()?;
        w.atomic_and(6, !bit, 0)?;
        let _ = w.atomic_fetch_xor(7, bit, 0)?;
        w.atomic_xor(7, bit, 0)?;
        let _ = w.atomic_fetch_and(5, !0, 0)?;
        sh.barrier_all()?;
        let t1s = allgather(sh, t1 as u64)?;
        let t2s = allgather(sh, t2 as u64)?;
        let mut s1 = t1s.clone();
        s1.sort();
        let mut s2 = t2s.clone();
        s2.sort();
        check!(
            me,
            format!("{name} fetch_add tickets"),
            s1,
            (0..n as u64).collect::<Vec<_>>()
        );
        check!(
            me,
            format!("{name} fetch_inc tickets"),
            s2,
            (0..n as u64).collect::<Vec<_>>()
        );
        let bits: $t = (0..n).fold(0, |a, pe| a | (1 << (pe % 31)));
        let got: Vec<$t> = (0..8).map(|i| w.g(i, 0)).collect::<Result<_, _>>()?;
        check!(
            me,
            format!("{name} final words"),
            got,
            vec![n as $t, n as $t, 3 * n as $t, n as $t, bits, bits, !bits, 0]
        );
        sh.barrier_all()?;
        // compare_swap: exactly one PE wins the empty slot.
        let c = sh.calloc::<$t>(1)?;
        let old = c.atomic_compare_swap(0, 0, me as $t + 1, 0)?;
        let wins = allgather(sh, (old == 0) as u64)?;
        check!(
            me,
            format!("{name} cswap winners"),
            wins.iter().sum::<u64>(),
            1
        );
        let winner = wins.iter().position(|&w| w == 1).unwrap_or(n);
        check!(
            me,
            format!("{name} cswap value"),
            c.g(0, 0)?,
            winner as $t + 1
        );
        // swap: the old values and the final value are a permutation.
        let s = sh.calloc::<$t>(1)?;
        let old = s.atomic_swap(0, me as $t + 1, 0)?;
        let mut olds = allgather(sh, old as u64)?;
        olds.push(s.atomic_fetch(0, 0)? as u64);
        olds.sort();
        check!(
            me,
            format!("{name} swap chain"),
            olds,
            (0..=n as u64).collect::<Vec<_>>()
        );
        sh.barrier_all()?;
    }};
}

fn atomics(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    int_atomics!(sh, u32);
    int_atomics!(sh, i32);
    int_atomics!(sh, u64);
    int_atomics!(sh, i64);

    // Floats: set on the next PE, fetch and swap back.
    let next = (me + 1) % n;
    let f = sh.calloc::<f32>(1)?;
    let d = sh.calloc::<f64>(1)?;
    f.atomic_set(0, me as f32 + 0.5, next)?;
    d.atomic_set(0, -(me as f64) - 0.25, next)?;
    sh.barrier_all()?;
    let prev = (me + n - 1) % n;
    check!(me, "f32 set", f.atomic_fetch(0, me)?, prev as f32 + 0.5);
    check!(me, "f64 set", d.atomic_fetch(0, me)?, -(prev as f64) - 0.25);
    sh.barrier_all()?;
    check!(
        me,
        "f32 swap",
        f.atomic_swap(0, 1e9, next)?,
        me as f32 + 0.5
    );
    check!(
        me,
        "f64 swap",
        d.atomic_swap(0, 1e-9, next)?,
        -(me as f64) - 0.25
    );
    sh.barrier_all()?;
    check!(me, "f32 after swap", f.read(0), 1e9);
    check!(me, "f64 after swap", d.read(0), 1e-9);
    sh.barrier_all()?;
    Ok(())
}

/// The six comparisons, each released by the previous PE, with an
/// acknowledgement back so the sender never runs ahead.
fn waits(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let word = sh.calloc::<i64>(1)?;
    let ack = sh.calloc::<u64>(1)?;
    // (value the sender stores, comparison the receiver waits for)
    let steps: [(i64, Cmp, i64); 6] = [
        (10, Cmp::Eq, 10),
        (11, Cmp::Ne, 10),
        (20, Cmp::Gt, 11),
        (30, Cmp::Ge, 30),
        (-1, Cmp::Lt, 0),
        (-5, Cmp::Le, -5),
    ];
    for (k, &(store, cmp, value)) in steps.iter().enumerate() {
        ack.wait_until(0, Cmp::Ge, k as u64)?;
        word.atomic_set(0, store, next)?;
        let got = word.wait_until(0, cmp, value)?;
        check!(me, format!("wait_until {cmp:?}"), got, store);
        check!(me, format!("test {cmp:?}"), word.test(0, cmp, value)?, true);
        if let Some(&(_, ncmp, nvalue)) = steps.get(k + 1) {
            check!(
                me,
                format!("test {ncmp:?} before release"),
                word.test(0, ncmp, nvalue)?,
                false
            );
        }
        ack.atomic_set(0, k as u64 + 1, prev)?;
    }
    sh.barrier_all()?;
    Ok(())
}

fn signals(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    let data: SymVec<u16> = sh.calloc(n * 8)?;
    let sig = sh.calloc::<u64>(2)?;
    let block: Vec<u16> = (0..8).map(|i| (me * 100 + i) as u16).collect();
    data.put_signal(0, &block, &sig, 0, SignalOp::Set, me as u64 + 1, next)?;
    data.put_signal(me * 8, &block, &sig, 1, SignalOp::Add, 1, 0)?;
    let s = sig.signal_wait_until(0, Cmp::Ne, 0)?;
    check!(me, "signal set value", s, prev as u64 + 1);
    let want: Vec<u16> = (0..8).map(|i| (prev * 100 + i) as u16).collect();
    if me != 0 {
        check!(me, "data before signal", data.read_range(..8), &want[..]);
    }
    if me == 0 {
        check!(
            me,
            "signal add total",
            sig.signal_wait_until(1, Cmp::Eq, n as u64)?,
            n as u64
        );
        for pe in 1..n {
            let want: Vec<u16> = (0..8).map(|i| (pe * 100 + i) as u16).collect();
            check!(
                me,
                "data before add signal",
                data.read_range(pe * 8..pe * 8 + 8),
                &want[..]
            );
        }
    }
    sh.barrier_all()?;
    check!(me, "signal_fetch", sig.signal_fetch(0)?, prev as u64 + 1);
    sh.barrier_all()?;
    Ok(())
}

fn ordering(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let next = (me + 1) % n;
    // fence: data then flag to the same PE.
    let data = sh.calloc::<u64>(32)?;
    let flag = sh.calloc::<u64>(1)?;
    let payload: Vec<u64> = (0..32).map(|i| i * me as u64 + 3).collect();
    data.put(0, &payload, next)?;
    sh.fence()?;
    flag.p(0, 1, next)?;
    flag.wait_until(0, Cmp::Eq, 1)?;
    let prev = (me + n - 1) % n;
    let want: Vec<u64> = (0..32).map(|i| i * prev as u64 + 3).collect();
    check!(
        me,
        "fence orders data before flag",
        data.to_vec(),
        &want[..]
    );
    // barrier_all / sync_all: counters see every PE's update after each.
    let ctr = sh.calloc::<u64>(1)?;
    for round in 0..(2 * n + 3) {
        let target = round % n;
        ctr.atomic_inc(0, target)?;
        if round % 2 == 0 {
            sh.barrier_all()?;
        } else {
            sh.quiet()?;
            shmem::sync_all()?;
        }
        if me == target {
            let want = n as u64 * (round / n + 1) as u64;
            check!(me, format!("barrier round {round}"), ctr.read(0), want);
        }
        sh.sync_all()?;
    }
    shmem::barrier_all()?;
    shmem::quiet()?;
    shmem::fence()?;
    Ok(())
}

/// Local access from several threads at once (`shmem::init` provides
/// `ThreadLevel::Multiple`): one thread writes an object's elements (one
/// by one, in bulk, with `fill`) while two others read them (one by one,
/// `to_vec`, the iterator). Elements are accessed whole, with atomics of
/// their width, so a reader only ever sees a value some write stored:
/// every 16-bit lane of it equal, never a mixture of two writes.
fn local_threads(sh: &Shmem) -> R {
    const N: usize = 64;
    const ROUNDS: u64 = 500;
    let me = sh.my_pe();
    let x = sh.calloc::<u64>(N)?;
    let y = sh.calloc::<u32>(N)?;
    let lanes64 = |k: u64| (k & 0xffff) * 0x0001_0001_0001_0001;
    let lanes32 = |k: u32| (k & 0xffff) * 0x0001_0001;
    let mixed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            for k in 1..=ROUNDS {
                for i in 0..N {
                    x.write(i, lanes64(k));
                }
                y.copy_from(0, &[lanes32(k as u32); N]);
                x.fill(lanes64(k + 7));
                y.fill(lanes32(k as u32 + 7));
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..ROUNDS {
                    let bad = (0..N)
                        .map(|i| x.read(i))
                        .filter(|&v| v != lanes64(v))
                        .count()
                        + x.to_vec().iter().filter(|&&v| v != lanes64(v)).count()
                        + y.iter().filter(|&v| v != lanes32(v)).count()
                        + y.read_range(..)
                            .iter()
                            .filter(|&&v| v != lanes32(v))
                            .count();
                    mixed.fetch_add(bad, Ordering::Relaxed);
                }
            });
        }
    });
    check!(
        me,
        "elements read whole while written",
        mixed.load(Ordering::Relaxed),
        0
    );
    check!(
        me,
        "last fill",
        (x.read(0), y.read(N - 1)),
        (lanes64(ROUNDS + 7), lanes32(ROUNDS as u32 + 7))
    );
    sh.barrier_all()?;
    Ok(())
}

fn run(sh: &Shmem) -> R {
    identity(sh)?;
    allocation(sh)?;
    rma(sh)?;
    nbi(sh)?;
    atomics(sh)?;
    waits(sh)?;
    signals(sh)?;
    ordering(sh)?;
    local_threads(sh)?;
    Ok(())
}

fn main() {
    let sh = match shmem::init() {
        Ok(sh) => sh,
        Err(e) => {
            shmem::report!("api_check: {e}");
            std::process::exit(2);
        }
    };
    let (me, n) = (sh.my_pe(), sh.n_pes());
    if std::env::args().nth(1).as_deref() == Some("global_exit") {
        // The last PE ends the job while the others wait in a barrier.
        if me == n - 1 {
            sh.global_exit(7);
        }
        let r = sh.barrier_all();
        shmem::report!("PE {me}: barrier returned {r:?} instead of the job exiting");
        std::process::exit(1);
    }
    if std::env::args().nth(1).as_deref() == Some("not_collective") {
        // PEs ask for different sizes: with SHMEM_DEBUG every PE but 0 sees
        // the mismatch, and all of them stay in step.
        let r = sh.malloc::<u8>(16 + 16 * me);
        let ok = match &r {
            Ok(_) => me == 0 || !sh.config().debug,
            Err(e) => {
                let text = e.to_string();
                let want = format!(
                    "PE {me}: shmem_malloc: not collective: this PE asked for {} bytes",
                    16 + 16 * me
                );
                me != 0 && matches!(e, ShmemError::NotCollective { .. }) && text.starts_with(&want)
            }
        };
        check!(me, "NotCollective reported", ok, true);
        // Only PE 0 holds the object: freeing it would be a collective call
        // the others do not make.
        std::mem::forget(r);
        let _ = sh.barrier_all();
        let failed = FAILURES.load(Ordering::Relaxed);
        drop(sh);
        if me == 0 && failed == 0 {
            println!("api_check not_collective: passed");
        }
        std::process::exit((failed != 0) as i32);
    }
    if let Err(e) = run(&sh) {
        shmem::report!("api_check: {e}");
        sh.global_exit(1);
    }
    let failed = FAILURES.load(Ordering::Relaxed);
    let total = allgather(&sh, failed as u64).map(|v| v.iter().sum::<u64>());
    if me == 0 {
        match total {
            Ok(0) => println!(
                "api_check: {} checks on each of {n} PEs passed",
                CHECKS.load(Ordering::Relaxed)
            ),
            Ok(t) => println!("api_check: {t} checks failed"),
            Err(ref e) => println!("api_check: {e}"),
        }
    }
    if let Err(e) = sh.finalize() {
        shmem::report!("api_check: {e}");
        std::process::exit(1);
    }
    if failed != 0 || total != Ok(0) {
        std::process::exit(1);
    }
}

/// Whether this job runs on smp, the conduit that maps every peer's
/// segment (the default, unless a launcher such as mpiexec, mpirun or
/// srun started the job, which selects ipv6).
fn conduits_map_peers() -> bool {
    let var = |k: &str| std::env::var(k).ok();
    match var("FSHMEM_CONDUIT") {
        Some(c) => c == "smp",
        None => ["PMI_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"]
            .iter()
            .all(|k| var(k).is_none()),
    }
}
