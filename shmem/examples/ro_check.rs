//! Checks read-only symmetric objects (`SymVec::into_read_only`) on any PE
//! count and conduit.
//!
//! `ro_check [ROUNDS [WAYS [CHUNK]]]` (defaults 3, `all`, 16): in each round every PE writes its
//! section of an object on every PE (itself included) without a quiet or a
//! barrier, through every writer there is — the default context's puts,
//! `p` and put-with-signal, a context of a helper thread and one of the
//! main thread (neither quieted by the program), a non-blocking scope,
//! Long active-message requests, Long replies from a handler, and an
//! fcollect into the object — then converts the object to read-only. The
//! conversion alone must complete all of it: every PE then checks its own
//! copy through the slice, every peer's copy through `get` and `g`, and
//! the object as the source of a reduction and a broadcast, exactly. Then
//! it converts back, and the next round writes new values. `WAYS` other
//! than `all` writes (nearly) everything one way — `default` (the default
//! context), `ctx` (the contexts), `long` (Long requests and replies) — so
//! that no other operation to the same target completes those writes on
//! the way; `CHUNK` is the elements of each of a section's 8 chunks. Prints
//! `ro_check: PE i of n ok` on every PE when all passed; exits 1 otherwise.
//!
//! `ro_check mismatch`: PE 0 converts object A while the others convert B;
//! every PE must fail naming both PEs (`ro_check: PE i: <error>`), and the
//! job exits non-zero.
//!
//! `ro_check barrier`: after a conversion and its way back, PE 0 makes a
//! barrier while the others convert again (the check word PE 0 left for
//! the first conversion names the same object): the converting PEs must
//! fail, not take PE 0's barrier for agreement while it can still write.
//!
//! `ro_check gemm [D]` (fpga): every PE starts a D x D GEMM tile (96) on its board's
//! compute core, streaming its results (ART) to the next PE, and converts
//! `C` and the ART destination without waiting for the tile: both must
//! hold the whole result.
//!
//! ```sh
//! target/release/oshrun -n 4 target/release/examples/ro_check
//! ```

use shmem::am::AmHandler;
use shmem::{Ctx, CtxOptions, Shmem, ShmemError, SignalOp, SymVec};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

/// Chunks per section.
const CHUNKS: usize = 8;

/// How a writer writes one chunk of its section on one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// `SymVec::put` (default context).
    Put,
    /// `SymVec::p`, element by element.
    P,
    /// `SymVec::put_signal`, adding 1 to the target's signal word.
    PutSignal,
    /// A put in a non-blocking scope.
    Nbi,
    /// A put on the helper thread's private context.
    HelperCtx,
    /// `atomic_set` on the main thread's context, element by element.
    CtxAtomic,
    /// A Long active-message request.
    AmLong,
    /// A Long reply of the target's handler (the target asks for it).
    Reply,
}

/// The way chunk `c` is written under `ways`: `all` mixes every way in one
/// round; the others use (nearly) one, so that no other operation to the
/// same target completes it by the way.
fn way(ways: &str, c: usize) -> Way {
    use Way::*;
    let all = [Put, HelperCtx, Nbi, AmLong, Reply, PutSignal, CtxAtomic, P];
    match ways {
        "default" => [Put, Put, P, Put, Put, PutSignal, Put, Put][c],
        "ctx" => [
            HelperCtx, HelperCtx, CtxAtomic, HelperCtx, HelperCtx, HelperCtx, HelperCtx, HelperCtx,
        ][c],
        "long" => [
            AmLong, AmLong, AmLong, AmLong, Reply, AmLong, AmLong, AmLong,
        ][c],
        _ => all[c],
    }
}

/// The value writer `w` stores at element `idx` of its section on target
/// `t` in round `r`: distinct for every (round, writer, target, element).
fn v(r: usize, w: usize, t: usize, idx: usize) -> u64 {
    ((r as u64) << 48) | ((w as u64) << 32) | ((t as u64) << 16) | idx as u64
}

/// What PE `t`'s copy holds after round `r` on `n` PEs, with sections of
/// `k` elements.
fn expected(r: usize, n: usize, k: usize, t: usize) -> Vec<u64> {
    let mut e: Vec<u64> = (0..n).map(|w| (r * 1000 + w) as u64).collect();
    for w in 0..n {
        e.extend((0..k).map(|i| v(r, w, t, i)));
    }
    e
}

type Shared = Arc<Mutex<Option<Arc<SymVec<'static, u64>>>>>;

static REPLY: OnceLock<AmHandler> = OnceLock::new();

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    let r = match arg(0) {
        "mismatch" => mismatch(),
        "barrier" => barrier(),
        "gemm" => gemm(arg(1).parse().unwrap_or(96)),
        rounds => run(
            rounds.parse().unwrap_or(3),
            arg(1).to_string(),
            arg(2).parse().unwrap_or(16).clamp(1, 8192),
        ),
    };
    match r {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            shmem::report!("ro_check: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(rounds: usize, ways: String, ch: usize) -> Result<bool, ShmemError> {
    // Handlers are 'static and one of them names the object in its Long
    // replies: the runtime lives for the whole process (the exit handler
    // finalizes it, which PE 0 reports on stderr).
    let sh: &'static Shmem = Box::leak(Box::new(shmem::init()?));
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let mut fails = 0u64;
    let mut check = |what: &str, ok: bool| {
        if !ok {
            shmem::report!("PE {me}: ro_check: {what} FAILED");
            fails += 1;
        }
    };
    let k = ch * CHUNKS;
    let ways: Vec<Way> = (0..CHUNKS).map(|c| way(&ways, c)).collect();
    let chunks_by = |w: Way| -> Vec<usize> { (0..CHUNKS).filter(|&c| ways[c] == w).collect() };
    let signals = chunks_by(Way::PutSignal).len() * n;
    let reply_chunks = chunks_by(Way::Reply);

    let len = n + n * k;
    let x = Arc::new(sh.calloc::<u64>(len)?);
    let sig = sh.calloc::<u64>(1)?;
    let one = sh.calloc::<u64>(1)?;
    let dst = sh.calloc::<u64>(len)?;
    let shared: Shared = Arc::default();
    let served = Arc::new(AtomicU64::new(0));

    // Long requests land before their (empty) handler runs.
    let long = sh.am_register(|_t, _m| {})?;
    let reply = sh.am_register(|_t, _m| {})?;
    let _ = REPLY.set(reply);
    // A request [round, requester] is answered with a Long reply that
    // writes this PE's reply chunk on the requester.
    let (s, c) = (shared.clone(), served.clone());
    let request = sh.am_register(move |t, m| {
        let x = s.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let (Some(x), [r, to, chunk, ..]) = (x, m.args) {
            let (r, to, chunk, w) = (*r as usize, *to as usize, *chunk as usize, me);
            let start = n + w * k + chunk * ch;
            let data: Vec<u64> = (0..ch).map(|j| v(r, w, to, chunk * ch + j)).collect();
            let h = *REPLY.get().expect("registered");
            if let Err(e) = t.reply_long(h, &[], &data, &x, start) {
                shmem::report!("PE {w}: ro_check: Long reply: {e}");
            }
        }
        c.fetch_add(1, Ordering::AcqRel);
    })?;

    // A helper thread with a private context of its own, which it never
    // quiets: its puts write the `HelperCtx` chunks.
    let helper_chunks = chunks_by(Way::HelperCtx);
    let (to_helper, jobs) = mpsc::channel::<(Arc<SymVec<'static, u64>>, usize)>();
    let (done, acks) = mpsc::channel::<Result<(), ShmemError>>();
    let helper = std::thread::spawn(move || {
        let ctx = match sh.create_ctx(CtxOptions::PRIVATE) {
            Ok(c) => c,
            Err(e) => {
                let _ = done.send(Err(e));
                return;
            }
        };
        for (x, r) in jobs {
            let res = (0..n).try_for_each(|t| {
                helper_chunks.iter().try_for_each(|&c| {
                    let data: Vec<u64> = (0..ch).map(|j| v(r, me, t, c * ch + j)).collect();
                    ctx.put(&x, n + me * k + c * ch, &data, t)
                })
            });
            drop(x);
            let _ = done.send(res);
        }
    });
    let ctx: Ctx<'static> = sh.create_ctx(CtxOptions::SERIALIZED)?;
    let world = sh.team_world();

    let mut x = Some(x);
    for r in 1..=rounds {
        let xa = x.take().expect("writable between rounds");
        *shared.lock().unwrap_or_else(|p| p.into_inner()) = Some(xa.clone());
        // Every PE can serve requests for this round.
        sh.barrier_all()?;

        // Element 0..n: an fcollect.
        one.write(0, (r * 1000 + me) as u64);
        world.fcollect(&xa, &one, 1)?;
        let chunk =
            |c: usize, t: usize| -> Vec<u64> { (0..ch).map(|j| v(r, me, t, c * ch + j)).collect() };
        let at = |c: usize| n + me * k + c * ch;
        // The requests for Long replies go first: the wait for them to be
        // served below must not order the writes that follow before the
        // conversion (a PE's messages to one target arrive in order).
        for t in 0..n {
            for &c in &reply_chunks {
                sh.am_medium(t, request, &[r as u32, me as u32, c as u32], &[])?;
            }
        }
        // The scope's own quiet ends it: first, so that it does not
        // complete the writes below.
        let nbi: Vec<(usize, usize, Vec<u64>)> = (0..n)
            .flat_map(|t| chunks_by(Way::Nbi).into_iter().map(move |c| (t, c)))
            .map(|(t, c)| (t, c, chunk(c, t)))
            .collect();
        sh.nbi(|s| {
            for (t, c, d) in &nbi {
                s.put(&xa, at(*c), d, *t)?;
            }
            Ok::<(), ShmemError>(())
        })?;
        if !helper_chunks_empty(&ways) {
            to_helper
                .send((xa.clone(), r))
                .map_err(|_| helper_gone(me))?;
        }
        for t in 0..n {
            for (c, &w) in ways.iter().enumerate() {
                let d = chunk(c, t);
                match w {
                    Way::Put => xa.put(at(c), &d, t)?,
                    Way::P => {
                        for (j, val) in d.into_iter().enumerate() {
                            xa.p(at(c) + j, val, t)?;
                        }
                    }
                    Way::PutSignal => xa.put_signal(at(c), &d, &sig, 0, SignalOp::Add, 1, t)?,
                    Way::CtxAtomic => {
                        for (j, val) in d.into_iter().enumerate() {
                            ctx.atomic_set(&xa, at(c) + j, val, t)?;
                        }
                    }
                    Way::AmLong => sh.am_long(t, long, &[], &d, &xa, at(c))?,
                    Way::Nbi | Way::HelperCtx | Way::Reply => {}
                }
            }
        }
        if !helper_chunks_empty(&ways) {
            acks.recv().map_err(|_| helper_gone(me))??;
        }
        // This PE has answered every PE's request of this round: its
        // handler holds no handle to the object any more.
        while served.load(Ordering::Acquire) < (r * n * reply_chunks.len()) as u64 {
            sh.am_poll()?;
        }
        shared.lock().unwrap_or_else(|p| p.into_inner()).take();
        let xv = Arc::try_unwrap(xa).map_err(|_| ShmemError::Invalid {
            pe: me,
            call: "ro_check",
            reason: "the object is still shared".to_string(),
        })?;

        // No barrier, no quiet: the conversion completes every writer.
        let ro = xv.into_read_only()?;
        let all: Vec<Vec<u64>> = (0..n).map(|t| expected(r, n, k, t)).collect();
        let want = &all[me];
        check(&format!("round {r}: this PE's copy"), ro[..] == want[..]);
        check(
            &format!("round {r}: the slice's sum"),
            ro.iter().sum::<u64>() == want.iter().sum::<u64>(),
        );
        check(
            &format!("round {r}: the signal counted every put-with-signal"),
            sig.read(0) == (r * signals) as u64,
        );
        let mut peer = vec![0u64; len];
        for (p, theirs) in all.iter().enumerate() {
            ro.get(0, &mut peer, p)?;
            check(&format!("round {r}: PE {p}'s copy"), peer == *theirs);
            let i = n + ((p + 1) % n) * k + 4 * ch + 3.min(ch - 1);
            check(&format!("round {r}: g of PE {p}"), ro.g(i, p)? == theirs[i]);
        }
        // As a collective's source.
        world.sum_reduce(&dst, &ro, len)?;
        let sums: Vec<u64> = (0..len).map(|i| all.iter().map(|e| e[i]).sum()).collect();
        check(
            &format!("round {r}: sum_reduce of the copies"),
            dst.to_vec() == sums,
        );
        world.broadcast(&dst, &ro, len, n - 1)?;
        check(
            &format!("round {r}: broadcast from PE {}", n - 1),
            dst.to_vec() == all[n - 1],
        );
        x = Some(Arc::new(ro.into_mut()?));
    }
    drop(to_helper);
    if helper.join().is_err() {
        check("the helper thread ended", false);
    }
    drop(ctx);
    if let Some(x) = x.and_then(|x| Arc::try_unwrap(x).ok()) {
        x.free()?;
    }
    sh.barrier_all()?;
    if fails == 0 {
        println!("ro_check: PE {me} of {n} ok");
    }
    Ok(fails == 0)
}

fn helper_chunks_empty(ways: &[Way]) -> bool {
    !ways.contains(&Way::HelperCtx)
}

fn helper_gone(me: usize) -> ShmemError {
    ShmemError::Invalid {
        pe: me,
        call: "ro_check",
        reason: "the helper thread ended".to_string(),
    }
}

/// PE 0 converts `a`, the others `b`: every PE fails naming PE 0 and PE 1.
fn mismatch() -> Result<bool, ShmemError> {
    let sh = shmem::init()?;
    let me = sh.my_pe();
    let a = sh.calloc::<u64>(8)?;
    let b = sh.calloc::<u64>(8)?;
    let (convert, keep) = if me == 0 { (a, b) } else { (b, a) };
    match convert.into_read_only() {
        Ok(ro) => {
            println!("ro_check: PE {me}: converted: no mismatch found");
            drop(ro);
            std::mem::forget(keep);
            Ok(false)
        }
        Err(e) => {
            println!("ro_check: {e}");
            // The objects differ between PEs now: free none of them.
            std::mem::forget(keep);
            Err(e)
        }
    }
}

/// The converting PEs must fail while PE 0 is in a barrier.
fn barrier() -> Result<bool, ShmemError> {
    let sh = shmem::init()?;
    let me = sh.my_pe();
    let x = sh.calloc::<u64>(8)?;
    let x = x.into_read_only()?.into_mut()?;
    if me == 0 {
        sh.barrier_all()?;
        // The others' error path syncs twice more.
        sh.barrier_all()?;
        sh.barrier_all()?;
        std::mem::forget(x);
        println!("ro_check: PE 0: made a barrier");
        return Ok(true);
    }
    match x.into_read_only() {
        Ok(ro) => {
            println!("ro_check: PE {me}: converted while PE 0 was in a barrier");
            std::mem::forget(ro);
            Ok(false)
        }
        Err(e) => {
            println!("ro_check: {e}");
            Err(e)
        }
    }
}

/// Tiles started, not waited for, then their outputs made read-only.
fn gemm(d: usize) -> Result<bool, ShmemError> {
    use shmem::compute::{Art, Gemm};
    let sh = shmem::init()?;
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let a = sh.calloc::<f64>(d * d)?;
    let b = sh.calloc::<f64>(d * d)?;
    let c = sh.calloc::<f64>(d * d)?;
    let full = sh.calloc::<f64>(d * d)?;
    a.fill(1.0);
    b.fill(1.0 + me as f64);
    let core = sh.compute()?;
    sh.barrier_all()?;
    let tile = Gemm {
        a: (&a, 0),
        b: (&b, 0),
        c: (&c, 0),
        m: d,
        n: d,
        k: d,
        art: Some(Art {
            pe: (me + 1) % n,
            dst: (&full, 0),
            every: 16,
        }),
    };
    let ticket = core.gemm_start(me, &tile)?;
    // No wait: the conversion waits for the tile.
    let c = c.into_read_only()?;
    let full = full.into_read_only()?;
    let mine = (d * (1 + me)) as f64;
    let left = (d * (1 + (me + n - 1) % n)) as f64;
    let ok = c.iter().all(|&x| x == mine) && full.iter().all(|&x| x == left);
    if !ok {
        shmem::report!(
            "PE {me}: ro_check gemm: C or the ART destination incomplete at the conversion FAILED"
        );
    }
    core.wait(ticket)?;
    sh.barrier_all()?;
    if ok {
        println!("ro_check: PE {me} of {n} ok");
    }
    Ok(ok)
}
