//! Checks the Rust active-message API at any PE count: Short, Medium and
//! Long requests and replies between every pair of PEs (itself included),
//! typed AMs, the enforced handler rules (a handler's RMA call, wait,
//! request or second reply is an error; a reply handler cannot reply), and
//! registration past the last free index failing alike on every PE.
//! Prints `am_check: ok on N PEs` on PE 0 when every check passed on every
//! PE; exits 1 otherwise.

use shmem::am::{AmHandler, Message, Token};
use shmem::{Cmp, ShmemError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            shmem::report!("am_check: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, ShmemError> {
    let sh = shmem::init()?;
    let (me, n) = (sh.my_pe(), sh.n_pes());
    let mut fails = 0u64;
    let mut check = |what: &str, ok: bool| {
        if !ok {
            shmem::report!("PE {me}: am_check: {what} FAILED");
            fails += 1;
        }
    };

    // Raw AMs. Counters the handlers update.
    let shorts = Arc::new(AtomicU64::new(0));
    let replies = Arc::new(AtomicU64::new(0));
    let medium_sum = Arc::new(AtomicU64::new(0));
    let errors: Arc<Mutex<Vec<String>>> = Arc::default();

    let r = replies.clone();
    let m = medium_sum.clone();
    let e = errors.clone();
    let reply = sh.am_register(move |t: &mut Token<'_, '_>, msg: &Message<'_>| {
        r.fetch_add(1, Ordering::AcqRel);
        m.fetch_add(
            msg.payload.iter().map(|&b| b as u64).sum(),
            Ordering::AcqRel,
        );
        // A reply handler may not reply.
        if msg.is_reply
            && let Err(err) = t.reply_short(t_handler(), &[])
        {
            e.lock().unwrap().push(format!("reply-from-reply: {err}"));
        }
    })?;
    set_handler(reply);

    let s = shorts.clone();
    let short = sh.am_register(move |t, msg| {
        s.fetch_add(msg.args.iter().map(|&a| a as u64).sum(), Ordering::AcqRel);
        t.reply_short(reply, &[1]).expect("first reply");
    })?;
    let e = errors.clone();
    let echo = sh.am_register(move |t, msg| {
        t.reply_medium(reply, msg.args, msg.payload)
            .expect("first reply");
        // A second reply is refused.
        if let Err(err) = t.reply_short(reply, &[]) {
            e.lock().unwrap().push(format!("second reply: {err}"));
        }
    })?;

    // A symmetric object for Long payloads and for the rule checks.
    let land = sh.calloc::<u8>(64 * n)?;
    let flag = sh.calloc::<u64>(1)?;
    let land_off = land.segment_offset();
    let e = errors.clone();
    let long = sh.am_register(move |t, msg| {
        let src = t.src_pe();
        let ok = msg.payload.len() == 64
            && msg.offset == land_off + 64 * src
            && msg
                .payload
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (src + i) as u8);
        if !ok {
            e.lock()
                .unwrap()
                .push(format!("long payload from PE {src} wrong"));
        }
        t.reply_short(reply, &[]).expect("first reply");
    })?;

    // Every PE sends Short, Medium and Long requests to every PE.
    let msg: Vec<u8> = (0..100).map(|i| (me + i) as u8).collect();
    let mine: Vec<u8> = (0..64).map(|i| (me + i) as u8).collect();
    for pe in 0..n {
        sh.am_short(pe, short, &[1, 2, me as u32])?;
        sh.am_medium(pe, echo, &[7], &msg)?;
        sh.am_long(pe, long, &[], &mine, &land, 64 * me)?;
    }
    while replies.load(Ordering::Acquire) < 3 * n as u64 {
        sh.am_poll()?;
    }
    let want_echo: u64 = msg.iter().map(|&b| b as u64).sum::<u64>() * n as u64;
    check(
        "medium replies echo the payload",
        medium_sum.load(Ordering::Acquire) == want_echo,
    );
    sh.barrier_all()?;
    let want_shorts: u64 = (0..n as u64).map(|pe| 3 + pe).sum();
    check(
        "short arguments summed",
        shorts.load(Ordering::Acquire) == want_shorts,
    );
    for pe in 0..n {
        check(
            "long payload landed",
            land.read_range(64 * pe..64 * pe + 64)
                == (0..64).map(|i| (pe + i) as u8).collect::<Vec<_>>(),
        );
    }

    // Handler rules: calls that may block fail inside a handler.
    let e = errors.clone();
    let flag_ref: &'static shmem::SymVec<'static, u64> = leak_symvec(&sh, &flag);
    let rules = sh.am_register(move |t, _msg| {
        let me = t.src_pe();
        let got = [
            flag_ref.p(0, 1, me).err(),
            flag_ref.wait_until(0, Cmp::Eq, 0).err(),
            flag_ref.atomic_fetch(0, me).err(),
        ];
        for g in got {
            match g {
                Some(ShmemError::Invalid { reason, .. })
                    if reason.contains("active-message handler") => {}
                other => e
                    .lock()
                    .unwrap()
                    .push(format!("rule not enforced: {other:?}")),
            }
        }
        t.reply_short(reply, &[]).expect("first reply");
    })?;
    let before = replies.load(Ordering::Acquire);
    sh.am_short(me, rules, &[])?;
    while replies.load(Ordering::Acquire) < before + 1 {
        sh.am_poll()?;
    }

    // Typed AMs.
    let square = sh.am_typed(|src: usize, x: u64| (src, x * x))?;
    for pe in 0..n {
        let (src, sq) = square.call(pe, &(pe as u64 + 3))?;
        check("typed call", src == me && sq == (pe as u64 + 3).pow(2));
    }
    let total = Arc::new(AtomicU64::new(0));
    let t2 = total.clone();
    let add = sh.am_typed(move |_src, v: Vec<u32>| {
        t2.fetch_add(v.iter().map(|&x| x as u64).sum(), Ordering::AcqRel);
    })?;
    for pe in 0..n {
        add.send(pe, &vec![1, 2, 3])?;
    }
    add.wait_all()?;
    let too_big = add.send(0, &vec![0u32; 5000]);
    check(
        "an oversized typed request is refused",
        matches!(&too_big, Err(ShmemError::Invalid { reason, .. }) if reason.contains("more than 4096")),
    );
    sh.barrier_all()?;
    check(
        "typed sends all handled",
        total.load(Ordering::Acquire) == 6 * n as u64,
    );

    // Registration fails alike on every PE and leaves them in step: take
    // every free index (each registration is agreed by all PEs), then the
    // next one fails on every PE with the same error, twice (the index
    // stays where it was), and the handlers registered before still work.
    let mut last = sh.am_register(|_t, _m| {})?;
    loop {
        match sh.am_register(|_t, _m| {}) {
            Ok(h) => last = h,
            Err(e) => {
                let want = format!(
                    "PE {me}: shmem::am_register: all 160 user handler indices (64..=223) are taken"
                );
                check("exhaustion error", e.to_string() == want);
                break;
            }
        }
    }
    check("last index handed out", last.index() == 223);
    let again = sh.am_register(|_t, _m| {}).map_err(|e| e.to_string());
    check(
        "a failed registration leaves the index",
        again
            == Err(format!(
                "PE {me}: shmem::am_register: all 160 user handler indices (64..=223) are taken"
            )),
    );
    for pe in 0..n {
        let (src, sq) = square.call(pe, &7)?;
        check("typed call after exhaustion", src == me && sq == 49);
    }

    let errs = errors.lock().unwrap().clone();
    let expected_second = n; // one "second reply" error per echo request served here
    let seconds = errs
        .iter()
        .filter(|s| s.starts_with("second reply"))
        .count();
    check("second replies refused", seconds == expected_second);
    for s in errs
        .iter()
        .filter(|s| !s.starts_with("second reply") && !s.starts_with("reply-from-reply"))
    {
        shmem::report!("PE {me}: am_check: {s}");
        fails += 1;
    }
    let from_reply = errs
        .iter()
        .filter(|s| s.starts_with("reply-from-reply"))
        .count();
    if from_reply != replies.load(Ordering::Acquire) as usize {
        shmem::report!("PE {me}: am_check: a reply handler could reply");
        fails += 1;
    }

    let bad = sh.calloc::<u64>(1)?;
    bad.atomic_add(0, fails, 0)?;
    sh.barrier_all()?;
    let ok = bad.atomic_fetch(0, 0)? == 0;
    if me == 0 && ok {
        println!("am_check: ok on {n} PEs");
    }
    sh.barrier_all()?;
    Ok(ok)
}

static HANDLER: OnceLock<AmHandler> = OnceLock::new();

fn set_handler(h: AmHandler) {
    let _ = HANDLER.set(h);
}

fn t_handler() -> AmHandler {
    *HANDLER.get().expect("set before any message")
}

/// The handler needs a `'static` view of an object that lives until the
/// end of `run`, after the last message: extend the borrow for the test.
fn leak_symvec<'a>(
    _sh: &'a shmem::Shmem,
    x: &'a shmem::SymVec<'a, u64>,
) -> &'static shmem::SymVec<'static, u64> {
    // SAFETY: `x` outlives every handler run (the last message is handled
    // before `run` returns, which ends with barriers), and the handler only
    // calls methods that fail before touching the object.
    unsafe { std::mem::transmute(x) }
}
