//! The calls of a context beyond the blocking ones: non-blocking puts and
//! gets in a context's scope ([`shmem::Ctx::nbi`]), put-with-signal on a
//! context, a context on a split team (PE numbers in the team), and the
//! context's rules in a scope (`NOSTORE` refuses a put, `PRIVATE` a call
//! from another thread). Run by `tests/tests/contexts.rs` on smp, ipv6
//! and fpga; PE 0 prints `ctx_ops: ok on N PEs` when every PE's checks
//! passed, and the job exits 1 otherwise.

use shmem::{Cmp, CtxOptions, Shmem, ShmemError, SignalOp};
use std::process::ExitCode;

const K: usize = 300;

fn word(pe: usize, i: usize) -> u64 {
    ((pe as u64) << 32) | (i as u64).wrapping_mul(2_654_435_761) & 0xffff_ffff
}

/// Every check of one PE; the number that failed.
fn run(sh: &Shmem) -> Result<usize, ShmemError> {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let mut failed = 0;
    let mut check = |what: &str, ok: bool| {
        if !ok {
            shmem::report!("PE {me}: ctx_ops: {what}");
            failed += 1;
        }
    };

    // A context's scope: block `me` of every PE's `all`, then every block
    // back from another PE, completed by the context's own quiet.
    let all = sh.calloc::<u64>(n * K)?;
    let ctx = sh.create_ctx(CtxOptions::PRIVATE)?;
    let mine: Vec<u64> = (0..K).map(|i| word(me, i)).collect();
    ctx.nbi(|s| {
        for pe in 0..n {
            s.put(&all, me * K, &mine, pe)?;
        }
        Ok::<(), ShmemError>(())
    })?;
    sh.barrier_all()?;
    let want: Vec<u64> = (0..n)
        .flat_map(|pe| (0..K).map(move |i| word(pe, i)))
        .collect();
    check("puts of a context's scope", all.to_vec() == want);
    let mut back = vec![0u64; n * K];
    ctx.nbi(|s| {
        for (pe, chunk) in back.chunks_mut(K).enumerate() {
            s.get(&all, pe * K, chunk, (me + pe) % n)?;
        }
        s.fence()?;
        s.quiet()
    })?;
    check("gets of a context's scope", back == want);
    sh.barrier_all()?;

    // Put-with-signal on a context: 64 words and a signal to the next PE.
    let data = sh.calloc::<u32>(64)?;
    let sig = sh.calloc::<u64>(1)?;
    let payload: Vec<u32> = (0..64).map(|i| (me * 1000 + i) as u32).collect();
    ctx.put_signal(&data, 0, &payload, &sig, 0, SignalOp::Add, 1, (me + 1) % n)?;
    let got = sig.signal_wait_until(0, Cmp::Eq, 1)?;
    let left = (me + n - 1) % n;
    check("signal of a context's put_signal", got == 1);
    check(
        "data of a context's put_signal",
        data.to_vec()
            == (0..64)
                .map(|i| (left * 1000 + i) as u32)
                .collect::<Vec<_>>(),
    );
    ctx.quiet()?;
    sh.barrier_all()?;

    // A context on the team of the even PEs: PE arguments are team ranks.
    let evens = sh
        .team_world()
        .split_strided(0, 2, n.div_ceil(2), &Default::default())?;
    let slots = sh.calloc::<u64>(n.div_ceil(2))?;
    if let Some(team) = &evens {
        let tctx = team.create_ctx(CtxOptions::NONE)?;
        let (t, tn) = (tctx.my_pe(), tctx.n_pes());
        check("team context numbering", t == me / 2 && tn == n.div_ceil(2));
        let mark = [me as u64 + 1];
        tctx.nbi(|s| {
            for pe in 0..tn {
                s.put(&slots, t, &mark, pe)?;
            }
            Ok::<(), ShmemError>(())
        })?;
        check(
            "a team context refuses a PE outside the team",
            tctx.p(&slots, 0, 0, tn).is_err(),
        );
    }
    sh.barrier_all()?;
    if me % 2 == 0 {
        let want: Vec<u64> = (0..n.div_ceil(2)).map(|t| 2 * t as u64 + 1).collect();
        check("puts of a team context's scope", slots.to_vec() == want);
    } else {
        check("odd PEs untouched", slots.to_vec().iter().all(|&v| v == 0));
    }
    drop(evens);

    // The rules hold in a scope: NOSTORE refuses its puts (and allows
    // gets), PRIVATE refuses another thread.
    let ns = sh.create_ctx(CtxOptions::NOSTORE)?;
    let e = ns.nbi(|s| s.put(&all, 0, &mine[..1], me));
    check(
        "NOSTORE scope put refused",
        e.map_err(|e| e.to_string())
            == Err(format!(
                "PE {me}: shmem_ctx_put_nbi: a store on a SHMEM_CTX_NOSTORE context"
            )),
    );
    let mut one = [0u64; 1];
    let r = ns.nbi(|s| s.get(&all, (1 % n) * K, &mut one, me));
    check("NOSTORE scope get", r.is_ok() && one[0] == word(1 % n, 0));
    let r = std::thread::scope(|t| {
        t.spawn(|| ctx.nbi(|s| s.put(&all, 0, &mine[..1], me)))
            .join()
            .expect("the thread")
    });
    check(
        "PRIVATE scope from another thread refused",
        r.map_err(|e| e.to_string())
            == Err(format!(
                "PE {me}: shmem_ctx_put_nbi: a SHMEM_CTX_PRIVATE context used from another thread"
            )),
    );
    drop((ns, ctx));
    sh.barrier_all()?;
    Ok(failed)
}

fn main() -> ExitCode {
    let sh = match shmem::init() {
        Ok(sh) => sh,
        Err(e) => {
            shmem::report!("ctx_ops: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let failed = match run(&sh) {
        Ok(f) => f,
        Err(e) => {
            shmem::report!("ctx_ops: {e}");
            sh.global_exit(1);
        }
    };
    // Every PE's count, summed on every PE.
    let total = (|| {
        let counts = sh.calloc::<u64>(1)?;
        counts.atomic_add(0, failed as u64, 0)?;
        sh.barrier_all()?;
        counts.g(0, 0)
    })();
    match total {
        Ok(0) => {
            if me == 0 {
                println!("ctx_ops: ok on {n} PEs");
            }
        }
        Ok(t) => {
            if me == 0 {
                println!("ctx_ops: {t} checks failed");
            }
            return ExitCode::FAILURE;
        }
        Err(e) => {
            shmem::report!("ctx_ops: {e}");
            return ExitCode::FAILURE;
        }
    }
    match sh.finalize() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            shmem::report!("ctx_ops: {e}");
            ExitCode::FAILURE
        }
    }
}
