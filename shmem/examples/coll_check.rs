//! A multi-PE self-check of teams, collectives and contexts: every
//! collective on the world team and on split teams (strided, 2-D, odd
//! sizes, nested, created and destroyed in sequence), every reduction
//! operator on every type, scans, in-place and zero-length calls, pool
//! exhaustion, contexts, and threads at `SHMEM_THREAD_MULTIPLE`. Exact
//! expected results; exits 1 when any check fails.
//!
//! Force an algorithm with the `FSHMEM_*_ALGO` variables to check it:
//!
//! With the argument `quick`, the reductions run on a few types only and
//! the thread test is skipped (the forced-algorithm runs of the test suite).
//!
//! ```sh
//! target/release/oshrun -n 7 target/release/examples/coll_check
//! FSHMEM_REDUCE_ALGO=ring target/release/oshrun -n 4 target/release/examples/coll_check
//! FSHMEM_BCAST_ALGO=binomial target/release/oshrun -n 3 target/release/examples/coll_check quick
//! ```

use shmem::coll::ops::{And, Complex, Max, Min, Or, Prod, ReduceOp, Reducible, Sum, Xor};
use shmem::{CtxOptions, Pod, Shmem, ShmemError, Team, TeamConfig, ThreadLevel};
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};

static CHECKS: AtomicUsize = AtomicUsize::new(0);
static FAILURES: AtomicUsize = AtomicUsize::new(0);

macro_rules! check {
    ($what:expr, $got:expr, $want:expr) => {{
        let (got, want) = ($got, $want);
        CHECKS.fetch_add(1, Ordering::Relaxed);
        if got != want {
            if FAILURES.fetch_add(1, Ordering::Relaxed) < 20 {
                let (g, w) = (format!("{got:?}"), format!("{want:?}"));
                shmem::report!(
                    "PE {}: {} (line {}): got {:.400}, want {:.400}",
                    shmem::my_pe().unwrap_or(usize::MAX),
                    $what,
                    line!(),
                    g,
                    w
                );
            }
        }
    }};
}

type R = Result<(), ShmemError>;

/// Test values of every type from a small integer.
trait Val: Pod + PartialEq + Debug {
    fn of(v: u32) -> Self;
}
macro_rules! val {
    ($($t:ty),*) => {$(impl Val for $t { fn of(v: u32) -> Self { v as $t } })*};
}
val!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);
impl Val for Complex<f32> {
    fn of(v: u32) -> Self {
        Complex::new((v % 5) as f32, (v % 3) as f32)
    }
}
impl Val for Complex<f64> {
    fn of(v: u32) -> Self {
        Complex::new((v % 5) as f64, (v % 3) as f64 - 1.0)
    }
}

/// Input of team PE `r`, element `k` (small, so float results are exact).
fn input<T: Val>(r: usize, k: usize, salt: u32) -> T {
    T::of((r as u32 * 7 + k as u32 * 3 + salt) % 5 + 1 + (r as u32 % 2) * 8)
}

/// Reduction and scans with operator `O` on type `T`, `count` elements,
/// out of place and in place.
fn reduce_one<O: ReduceOp, T: Val + Reducible<O>>(
    sh: &Shmem,
    team: Option<&Team<'_>>,
    count: usize,
) -> R {
    let salt = O::NAME.len() as u32;
    let src = sh.malloc::<T>(count)?;
    let dst = sh.malloc::<T>(count)?;
    let inp = sh.malloc::<T>(count)?;
    let Some(t) = team else {
        return Ok(());
    };
    let (r, m) = (t.my_pe(), t.n_pes());
    let mine: Vec<T> = (0..count).map(|k| input(r, k, salt)).collect();
    src.copy_from(0, &mine);
    inp.copy_from(0, &mine);
    let fold = |upto: usize| -> Vec<T> {
        (0..count)
            .map(|k| (0..upto).fold(T::identity(), |a, j| T::combine(a, input::<T>(j, k, salt))))
            .collect()
    };
    let what = format!(
        "{}<{}> x{count} on {m} PEs",
        O::NAME,
        std::any::type_name::<T>()
    );
    t.reduce::<O, T>(&dst, &src, count)?;
    check!(format!("reduce {what}"), dst.to_vec(), &fold(m)[..]);
    check!(
        format!("reduce source kept {what}"),
        src.to_vec(),
        &mine[..]
    );
    t.reduce::<O, T>(&inp, &inp, count)?;
    check!(
        format!("in-place reduce {what}"),
        inp.to_vec(),
        &fold(m)[..]
    );
    t.inscan::<O, T>(&dst, &src, count)?;
    check!(format!("inscan {what}"), dst.to_vec(), &fold(r + 1)[..]);
    t.exscan::<O, T>(&dst, &src, count)?;
    check!(format!("exscan {what}"), dst.to_vec(), &fold(r)[..]);
    Ok(())
}

macro_rules! all_ops {
    ($sh:expr, $t:expr, $n:expr; $($ty:ty),*) => {$(
        reduce_one::<Sum, $ty>($sh, $t, $n)?;
        reduce_one::<Prod, $ty>($sh, $t, $n)?;
        reduce_one::<Max, $ty>($sh, $t, $n)?;
        reduce_one::<Min, $ty>($sh, $t, $n)?;
        reduce_one::<And, $ty>($sh, $t, $n)?;
        reduce_one::<Or, $ty>($sh, $t, $n)?;
        reduce_one::<Xor, $ty>($sh, $t, $n)?;
    )*};
}

/// Every operator on every type it accepts.
fn reductions(sh: &Shmem, team: Option<&Team<'_>>, count: usize) -> R {
    all_ops!(sh, team, count; i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);
    for_floats::<f32>(sh, team, count)?;
    for_floats::<f64>(sh, team, count)?;
    reduce_one::<Sum, Complex<f32>>(sh, team, count)?;
    reduce_one::<Prod, Complex<f32>>(sh, team, count)?;
    reduce_one::<Sum, Complex<f64>>(sh, team, count)?;
    reduce_one::<Prod, Complex<f64>>(sh, team, count)?;
    Ok(())
}

fn for_floats<T>(sh: &Shmem, team: Option<&Team<'_>>, count: usize) -> R
where
    T: Val + Reducible<Sum> + Reducible<Prod> + Reducible<Max> + Reducible<Min>,
{
    reduce_one::<Sum, T>(sh, team, count)?;
    reduce_one::<Prod, T>(sh, team, count)?;
    reduce_one::<Max, T>(sh, team, count)?;
    reduce_one::<Min, T>(sh, team, count)
}

fn val3(from: usize, to: usize, k: usize) -> u64 {
    (from * 1_000_000 + to * 1000 + k) as u64
}

/// Data-movement collectives with `ne` elements per PE (of u64 and of u8).
fn movement(sh: &Shmem, team: Option<&Team<'_>>, nmax: usize, ne: usize) -> R {
    let big = (nmax * ne).max(1);
    let src = sh.malloc::<u64>(big * 3)?;
    let dst = sh.malloc::<u64>(big * 3)?;
    let bsrc = sh.malloc::<u8>(big)?;
    let bdst = sh.malloc::<u8>(big)?;
    let Some(t) = team else {
        return Ok(());
    };
    let (r, m) = (t.my_pe(), t.n_pes());
    let tag = format!("{ne} elements on {m} PEs");
    // Destinations are reused below: as OpenSHMEM requires, a sync makes
    // sure no PE still reads one before any PE writes it again.
    // broadcast from every root; in place on the root's side too
    for root in [0, m - 1, m / 2] {
        for k in 0..ne {
            src.write(k, val3(r, root, k));
        }
        t.sync()?;
        t.broadcast(&dst, &src, ne, root)?;
        let want: Vec<u64> = (0..ne).map(|k| val3(root, root, k)).collect();
        check!(
            format!("broadcast root {root}, {tag}"),
            dst.read_range(..ne),
            &want[..]
        );
        t.broadcast(&src, &src, ne, root)?;
        check!(
            format!("in-place broadcast root {root}, {tag}"),
            src.read_range(..ne),
            &want[..]
        );
        for k in 0..ne {
            bsrc.write(k, (r * 31 + k) as u8);
        }
        t.broadcast(&bdst, &bsrc, ne, root)?;
        let want: Vec<u8> = (0..ne).map(|k| (root * 31 + k) as u8).collect();
        check!(
            format!("byte broadcast root {root}, {tag}"),
            bdst.read_range(..ne),
            &want[..]
        );
    }
    t.sync()?;
    // fcollect
    for k in 0..ne {
        src.write(k, val3(r, 0, k));
    }
    t.fcollect(&dst, &src, ne)?;
    let want: Vec<u64> = (0..m * ne)
        .map(|i| val3(i / ne.max(1), 0, i % ne.max(1)))
        .collect();
    check!(
        format!("fcollect {tag}"),
        dst.read_range(..m * ne),
        &want[..]
    );
    t.sync()?;
    for k in 0..ne {
        bsrc.write(k, (r * 13 + k * 5) as u8);
    }
    t.fcollect(&bdst, &bsrc, ne)?;
    let want: Vec<u8> = (0..m * ne)
        .map(|i| ((i / ne.max(1)) * 13 + (i % ne.max(1)) * 5) as u8)
        .collect();
    check!(
        format!("byte fcollect {tag}"),
        bdst.read_range(..m * ne),
        &want[..]
    );
    t.sync()?;
    // collect: PE j gives (j * 3 + 1) % 4 * ne / 2 elements (some give none)
    let cnt = |j: usize| (j * 3 + 1) % 4 * ne / 2;
    for k in 0..cnt(r) {
        src.write(k, val3(r, 7, k));
    }
    let total = t.collect(&dst, &src, cnt(r))?;
    let want: Vec<u64> = (0..m)
        .flat_map(|j| (0..cnt(j)).map(move |k| val3(j, 7, k)))
        .collect();
    check!(format!("collect total {tag}"), total, want.len());
    check!(
        format!("collect {tag}"),
        dst.read_range(..want.len()),
        &want[..]
    );
    t.sync()?;
    // alltoall
    for j in 0..m {
        for k in 0..ne {
            src.write(j * ne + k, val3(r, j, k));
        }
    }
    t.alltoall(&dst, &src, ne)?;
    let want: Vec<u64> = (0..m * ne)
        .map(|i| val3(i / ne.max(1), r, i % ne.max(1)))
        .collect();
    check!(
        format!("alltoall {tag}"),
        dst.read_range(..m * ne),
        &want[..]
    );
    t.sync()?;
    // alltoalls, strides 2 (source) and 3 (dest)
    if 3 * m * ne <= big * 3 {
        for j in 0..m {
            for k in 0..ne {
                src.write((j * ne + k) * 2, val3(r, j, k + 5));
            }
        }
        t.alltoalls(&dst, &src, 3, 2, ne)?;
        let got: Vec<u64> = (0..m * ne).map(|i| dst.read(i * 3)).collect();
        let want: Vec<u64> = (0..m * ne)
            .map(|i| val3(i / ne.max(1), r, i % ne.max(1) + 5))
            .collect();
        check!(format!("alltoalls {tag}"), got, want);
    }
    t.sync()?;
    Ok(())
}

/// Everything on one team (or nothing, on PEs outside it, which still make
/// the world's allocation calls).
fn suite(sh: &Shmem, team: Option<&Team<'_>>, full: bool) -> R {
    let nmax = sh.n_pes();
    if let Some(t) = team {
        t.sync()?;
        t.barrier()?;
    }
    for ne in [0, 1, 5] {
        movement(sh, team, nmax, ne)?;
    }
    // Past the auto thresholds (16 KiB broadcast and fcollect, 4 KiB alltoall blocks).
    movement(sh, team, nmax, 2600)?;
    reduce_one::<Sum, i64>(sh, team, 0)?;
    reduce_one::<Sum, u64>(sh, team, 1)?;
    // Several scratch chunks (32 KiB scratch), past the 8 KiB threshold.
    reduce_one::<Sum, i64>(sh, team, 9000)?;
    reduce_one::<Max, f64>(sh, team, 5000)?;
    reduce_one::<Prod, Complex<f64>>(sh, team, 3000)?;
    reduce_one::<Xor, u8>(sh, team, 9001)?;
    if full {
        reductions(sh, team, 1)?;
        reductions(sh, team, 6)?;
    }
    Ok(())
}

fn teams(sh: &Shmem, full: bool) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let world = sh.team_world();
    let cfg = TeamConfig { num_contexts: 2 };
    check!("world my_pe", world.my_pe(), me);
    check!("world n_pes", world.n_pes(), n);
    check!("world slot", world.slot(), 0);
    let shared = sh.team_shared();
    // Only smp maps every peer's memory; elsewhere the shared team is the PE.
    if std::env::var("FSHMEM_CONDUIT").as_deref().unwrap_or("smp") == "smp" {
        check!("shared team on smp is the world", shared.n_pes(), n);
    }
    check!(
        "translate to shared",
        world.translate_pe(me, &shared),
        Some(shared.my_pe())
    );
    check!(
        "translate out of range",
        world.translate_pe(n, &shared),
        None
    );

    // Odd PEs (strided), then every third PE, then a single PE.
    let odd = world.split_strided(1, 2, n / 2, &cfg);
    let odd = if n >= 2 { odd? } else { None };
    if let Some(t) = &odd {
        check!("odd my_pe", t.my_pe(), me / 2);
        check!("odd n_pes", t.n_pes(), n / 2);
        check!("odd config", t.get_config(), cfg);
        check!("odd to world", t.translate_pe(t.my_pe(), &world), Some(me));
        check!("world to odd", world.translate_pe(0, t), None);
    }
    check!("odd membership", odd.is_some(), me % 2 == 1 && n >= 2);
    suite(sh, odd.as_ref(), full)?;
    let third = world.split_strided(0, 3, n.div_ceil(3), &TeamConfig::default())?;
    check!("third membership", third.is_some(), me % 3 == 0);
    suite(sh, third.as_ref(), false)?;
    // A team of a team: the odd PEs' second half.
    if let Some(t) = &odd {
        let h = t.n_pes() / 2;
        let sub = t.split_strided(h, 1, t.n_pes() - h, &TeamConfig::default())?;
        if let Some(s) = &sub {
            check!(
                "nested to world",
                s.translate_pe(0, &world),
                Some(2 * h + 1)
            );
            s.sync()?;
        }
    }
    drop(third);
    drop(odd);
    let last = world.split_strided(n - 1, 1, 1, &TeamConfig::default())?;
    check!(
        "single-PE team",
        last.as_ref().map(|t| (t.my_pe(), t.n_pes())),
        (me == n - 1).then_some((0, 1))
    );
    suite(sh, last.as_ref(), false)?;
    drop(last);

    // 2-D grids.
    for xr in [2, 3, n + 1] {
        let (row, col) = world.split_2d(xr, &cfg, &TeamConfig::default())?;
        let x = xr.min(n);
        check!("2d row rank", row.my_pe(), me % x);
        check!("2d col rank", col.my_pe(), me / x);
        check!("2d row size", row.n_pes(), x.min(n - me / x * x));
        check!("2d col size", col.n_pes(), (n - me % x).div_ceil(x));
        check!(
            "2d row to col",
            row.translate_pe(row.my_pe(), &col),
            Some(col.my_pe())
        );
        suite(sh, Some(&row), false)?;
        suite(sh, Some(&col), false)?;
    }

    // Created and destroyed in sequence, more often than the pool has slots.
    for i in 0..40 {
        let size = 1 + i % n;
        let t = world.split_strided(0, 1, size, &TeamConfig::default())?;
        if let Some(t) = &t {
            let s = sh.calloc::<u32>(1)?;
            let d = sh.calloc::<u32>(1)?;
            drop((s, d));
            t.sync()?;
        } else {
            // The same allocation calls in the same order on every PE.
            let s = sh.calloc::<u32>(1)?;
            let d = sh.calloc::<u32>(1)?;
            drop((s, d));
        }
        if i % 2 == 0
            && let Some(t) = t
        {
            t.destroy()?;
        }
    }
    let probe = sh.malloc::<u64>(1)?;
    let got = sh.malloc::<u64>(1)?;
    if let Some(t) = world.split_strided(0, 1, n, &TeamConfig::default())? {
        t.sum_reduce(&got, &probe, 0)?;
    }

    // Exhaust the pool: every PE fails at the same split.
    let mut held = Vec::new();
    let err = loop {
        match world.split_strided(0, 1, n, &TeamConfig::default()) {
            Ok(t) => held.push(t),
            Err(e) => break e,
        }
        if held.len() > 64 {
            break ShmemError::Finalized;
        }
    };
    check!(
        "pool exhaustion",
        matches!(err, ShmemError::TeamsExhausted { .. }),
        true
    );
    check!(
        "teams held at exhaustion",
        held.len(),
        sh.config().coll.teams_max - 2
    );
    drop(held);
    let again = world.split_strided(0, 1, n, &TeamConfig::default())?;
    check!("slot free again after destroy", again.is_some(), true);
    drop(again);

    // Bad arguments: an error on every PE, no communication.
    let bad = world.split_strided(0, 1, n + 1, &TeamConfig::default());
    check!(
        "split past the parent",
        matches!(bad, Err(ShmemError::Invalid { .. })),
        true
    );
    let bad = world.split_strided(0, 0, 2, &TeamConfig::default());
    check!("zero stride", bad.is_err(), true);
    let x = sh.calloc::<u8>(1)?;
    check!(
        "root out of range",
        world.broadcast(&x, &x, 1, n).is_err(),
        true
    );
    check!("dest too short", world.fcollect(&x, &x, 1).is_err(), n > 1);
    Ok(())
}

fn contexts(sh: &Shmem) -> R {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let x = sh.calloc::<u64>(4)?;
    let ctx = sh.create_ctx(CtxOptions::SERIALIZED)?;
    ctx.p(&x, 0, 5 + me as u64, (me + 1) % n)?;
    ctx.fence()?;
    ctx.atomic_add(&x, 1, 2, (me + 1) % n)?;
    ctx.quiet()?;
    sh.barrier_all()?;
    check!("ctx put", x.read(0), 5 + ((me + n - 1) % n) as u64);
    check!("ctx add", x.read(1), 2);
    check!("ctx g", ctx.g(&x, 1, (me + 1) % n)?, 2);
    check!("ctx fetch_add", ctx.atomic_fetch_add(&x, 2, 1, me)?, 0);
    check!("ctx cswap", ctx.atomic_compare_swap(&x, 2, 1, 9, me)?, 1);
    check!("ctx fetch", ctx.atomic_fetch(&x, 2, me)?, 9);
    ctx.destroy()?;
    let ns = sh.create_ctx(CtxOptions::NOSTORE)?;
    check!("nostore put refused", ns.p(&x, 0, 1, me).is_err(), true);
    check!("nostore get allowed", ns.g(&x, 2, me)?, 9);
    ns.quiet()?;
    let private = sh.create_ctx(CtxOptions::PRIVATE)?;
    let other = std::thread::scope(|s| s.spawn(|| private.g(&x, 0, me).is_err()).join());
    check!("private ctx from another thread", other.ok(), Some(true));
    // A team context numbers PEs in its team.
    let world = sh.team_world();
    if let Some(rev) = world.split_strided(n - 1, 1, 1, &TeamConfig::default())? {
        let tc = rev.create_ctx(CtxOptions::NONE)?;
        check!("team ctx n_pes", tc.n_pes(), 1);
        tc.p(&x, 3, 77, 0)?;
        tc.quiet()?;
        check!("team ctx pe 0 is world pe n-1", x.read(3), 77);
        check!("team ctx pe out of team", tc.p(&x, 3, 1, 1).is_err(), true);
    }
    sh.barrier_all()?;
    Ok(())
}

/// Several threads per PE doing puts, atomics and quiet concurrently on
/// private contexts and the default one, and collectives on two teams.
fn threads(sh: &Shmem) -> R {
    const T: usize = 4;
    const K: usize = 200;
    let (me, n) = (sh.my_pe(), sh.n_pes());
    check!("thread level", sh.query_thread(), ThreadLevel::Multiple);
    let counters = sh.calloc::<u64>(T)?;
    let slots = sh.calloc::<u64>(T * K)?;
    let world = sh.team_world();
    let a = world
        .split_strided(0, 1, n, &TeamConfig::default())?
        .expect("member");
    let b = world
        .split_strided(0, 1, n, &TeamConfig::default())?
        .expect("member");
    let sa = sh.malloc::<i64>(64)?;
    let da = sh.malloc::<i64>(64)?;
    let db = sh.malloc::<i64>(64)?;
    sa.fill(me as i64 + 1);
    let results: Vec<Result<bool, ShmemError>> = std::thread::scope(|s| {
        let mut hs = Vec::new();
        for t in 0..T {
            let (counters, slots) = (&counters, &slots);
            hs.push(s.spawn(move || -> Result<bool, ShmemError> {
                let ctx = if t == 0 {
                    sh.ctx_default()
                } else {
                    sh.create_ctx(CtxOptions::PRIVATE)?
                };
                let right = (me + 1) % n;
                for i in 0..K {
                    for pe in 0..n {
                        ctx.atomic_add(counters, t, 1, pe)?;
                    }
                    ctx.p(
                        slots,
                        t * K + i,
                        (me * 100_000 + t * 1000 + i) as u64,
                        right,
                    )?;
                    if i % 17 == 0 {
                        ctx.quiet()?;
                    }
                }
                ctx.quiet()?;
                Ok(true)
            }));
        }
        let (sa, da, db, a, b) = (&sa, &da, &db, &a, &b);
        let ha = s.spawn(move || -> Result<bool, ShmemError> {
            for _ in 0..20 {
                a.sum_reduce(da, sa, 64)?;
            }
            Ok(true)
        });
        let hb = s.spawn(move || -> Result<bool, ShmemError> {
            for _ in 0..20 {
                b.max_reduce(db, sa, 64)?;
            }
            Ok(true)
        });
        hs.push(ha);
        hs.push(hb);
        hs.into_iter()
            .map(|h| h.join().expect("thread panicked"))
            .collect()
    });
    for r in results {
        check!("thread ok", r?, true);
    }
    sh.barrier_all()?;
    for t in 0..T {
        check!("concurrent atomics", counters.read(t), (n * K) as u64);
    }
    let left = (me + n - 1) % n;
    let want: Vec<u64> = (0..T * K)
        .map(|j| (left * 100_000 + (j / K) * 1000 + j % K) as u64)
        .collect();
    check!("concurrent puts", slots.to_vec(), &want[..]);
    check!(
        "concurrent team sums",
        da.read(63),
        (n * (n + 1) / 2) as i64
    );
    check!("concurrent team maxes", db.read(0), n as i64);
    Ok(())
}

/// Back-to-back collectives into one destination with no user sync between
/// them: a fast PE's broadcast must not land in a slow PE's destination
/// while that PE is still finishing the reduction into it.
fn same_destination(sh: &Shmem, world: &Team<'_>) -> R {
    const LEN: usize = 64;
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let x = sh.calloc::<u64>(LEN)?;
    let a = sh.calloc::<u64>(LEN)?;
    let b = sh.calloc::<u64>(LEN)?;
    for k in 0..LEN {
        a.write(k, (me + k) as u64);
        b.write(k, (1000 * me + k) as u64);
    }
    world.sync()?;
    let sums: Vec<u64> = (0..LEN)
        .map(|k| (0..n).map(|p| (p + k) as u64).sum())
        .collect();
    for i in 0..100 {
        let root = i % n;
        world.sum_reduce(&x, &a, LEN)?;
        check!(
            format!("reduce then broadcast, round {i}: reduce"),
            x.to_vec(),
            &sums[..]
        );
        world.broadcast(&x, &b, LEN, root)?;
        let want: Vec<u64> = (0..LEN).map(|k| (1000 * root + k) as u64).collect();
        check!(
            format!("reduce then broadcast, round {i}: broadcast"),
            x.to_vec(),
            &want[..]
        );
    }
    world.sync()?;
    Ok(())
}

fn main() {
    let (sh, provided) = match shmem::init_thread(ThreadLevel::Multiple) {
        Ok(x) => x,
        Err(e) => {
            shmem::report!("{e}");
            std::process::exit(1);
        }
    };
    check!("provided", provided, ThreadLevel::Multiple);
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let world = sh.team_world();
    let full = std::env::args().nth(1).as_deref() != Some("quick");
    let run = || -> R {
        suite(&sh, Some(&world), full)?;
        same_destination(&sh, &world)?;
        teams(&sh, full)?;
        contexts(&sh)?;
        if full {
            threads(&sh)?;
        }
        Ok(())
    };
    if let Err(e) = run() {
        shmem::report!("{e}");
        std::process::exit(1);
    }
    drop(world);
    let checks = CHECKS.load(Ordering::Relaxed);
    let failures = FAILURES.load(Ordering::Relaxed);
    if failures > 0 {
        shmem::report!("coll_check: PE {me} of {n}: {failures} of {checks} checks failed");
        std::process::exit(1);
    }
    println!("coll_check: PE {me} of {n} ok ({checks} checks)");
    drop(sh);
}
