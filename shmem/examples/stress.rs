//! A seeded random mix of puts, gets, atomics and barriers, checked
//! exactly: `oshrun -n N stress [SECONDS] [MAX_ROUNDS] [SEED]`.
//!
//! Every PE draws its operations from its own generator, seeded by
//! `(SEED, rank)`, and replays every other PE's generator too, so each PE
//! knows what every PE wrote. A round is a few operations per PE, then a
//! barrier:
//!
//! - a put of random length and offset into the slot the writer owns on a
//!   random target (double-buffered by round parity), followed by a fence;
//! - an atomic add of a random value to a random counter on a random PE;
//! - a fetch-and-increment of one ticket counter on PE 0, whose returned
//!   value the PE marks (atomic increment) in a table on PE 0.
//!
//! After each barrier a PE gets random slots of the previous round's buffer
//! from random PEs and compares them with its replay. PE 0 ends the run
//! after SECONDS (default 5) or MAX_ROUNDS rounds (default 100000), or
//! before the ticket table fills. At the
//! end every PE checks every byte of its slots and every counter, and PE 0
//! that every ticket was handed out exactly once: nothing lost, nothing
//! applied twice. Prints `stress: PE r: running` after the first round's
//! barrier and `stress: PE r: R rounds ... OK` at the end; any difference is
//! printed and the PE exits 1.

use std::time::{Duration, Instant};

/// Bytes of one writer's slot on one target, per buffer.
const SLOT: usize = 192;
/// Counters on every PE.
const COUNTERS: usize = 16;
/// Operations per PE per round.
const OPS: usize = 6;
/// Capacity of the ticket table.
const MAX_TICKETS: usize = 1 << 18;

/// splitmix64: small, fast, good enough for test traffic.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

enum Op {
    Put {
        target: usize,
        off: usize,
        len: usize,
    },
    Add {
        target: usize,
        index: usize,
        value: u64,
    },
    Ticket,
}

fn draw(rng: &mut Rng, n: usize) -> Op {
    match rng.below(10) {
        0..=5 => {
            let off = rng.below(SLOT);
            let len = 1 + rng.below(SLOT - off);
            Op::Put {
                target: rng.below(n),
                off,
                len,
            }
        }
        6..=8 => Op::Add {
            target: rng.below(n),
            index: rng.below(COUNTERS),
            value: rng.next() >> 40,
        },
        _ => Op::Ticket,
    }
}

/// The byte writer `p` puts at position `i` of its `k`-th put of `round`.
fn byte(round: u64, p: usize, k: usize, i: usize) -> u8 {
    let x = round
        .wrapping_mul(0x100_0000_01b3)
        .wrapping_add((p as u64) << 40 | (k as u64) << 20 | i as u64);
    (x ^ (x >> 13) ^ (x >> 29)).wrapping_mul(0x9e37_79b9) as u8 | 1
}

fn fail(me: usize, what: String) -> ! {
    println!("stress: PE {me}: FAIL: {what}");
    std::process::exit(1);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let max_rounds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let sh = shmem::init().unwrap_or_else(|e| {
        shmem::report!("stress: {e}");
        std::process::exit(1)
    });
    let (me, n) = (sh.my_pe(), sh.n_pes());
    // STRESS_QUIET=1: quiet instead of fence after each put (diagnosis).
    let quiet_puts = std::env::var_os("STRESS_QUIET").is_some();
    let ck = |r: shmem::Result<()>, what: &str| {
        if let Err(e) = r {
            fail(me, format!("{what}: {e}"));
        }
    };
    // Slots: [buffer][writer][SLOT] on every PE.
    let slots = sh.calloc::<u8>(2 * n * SLOT).expect("calloc slots");
    let counters = sh.calloc::<u64>(COUNTERS).expect("calloc counters");
    let ticket = sh.calloc::<u64>(1).expect("calloc ticket");
    let seen = sh.calloc::<u64>(MAX_TICKETS).expect("calloc seen");
    let stop = sh.calloc::<u64>(1).expect("calloc stop");

    let mut rngs: Vec<Rng> = (0..n)
        .map(|p| Rng(seed ^ (p as u64 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93)))
        .collect();
    let mut check_rng = Rng(seed ^ 0xc0ffee ^ me as u64);
    // shadow[target][buffer][writer][SLOT]
    let idx = |t: usize, b: usize, p: usize| ((t * 2 + b) * n + p) * SLOT;
    let mut shadow = vec![0u8; n * 2 * n * SLOT];
    let mut expect_counters = vec![[0u64; COUNTERS]; n];
    let mut tickets_total = 0u64;
    // Every put into this PE, for the diagnosis of a difference:
    // (round, writer, k, buffer, off, len).
    let mut history: Vec<(u64, usize, usize, usize, usize, usize)> = Vec::new();
    let (mut puts, mut gets, mut amos) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    let budget = Duration::from_secs_f64(secs);
    let mut round = 0u64;
    let mut data = [0u8; SLOT];
    loop {
        let b = (round % 2) as usize;
        for (p, rng) in rngs.iter_mut().enumerate() {
            for k in 0..OPS {
                match draw(rng, n) {
                    Op::Put { target, off, len } => {
                        for (i, d) in data[..len].iter_mut().enumerate() {
                            *d = byte(round, p, k, i);
                        }
                        if target == me {
                            history.push((round, p, k, b, off, len));
                        }
                        let at = idx(target, b, p) + off;
                        shadow[at..at + len].copy_from_slice(&data[..len]);
                        if p == me {
                            let dst = (b * n + me) * SLOT + off;
                            ck(slots.put(dst, &data[..len], target), "put");
                            if quiet_puts {
                                ck(sh.quiet(), "quiet");
                            } else {
                                ck(sh.fence(), "fence");
                            }
                            puts += 1;
                        }
                    }
                    Op::Add {
                        target,
                        index,
                        value,
                    } => {
                        let c = &mut expect_counters[target][index];
                        *c = c.wrapping_add(value);
                        if p == me {
                            ck(counters.atomic_add(index, value, target), "atomic_add");
                            amos += 1;
                        }
                    }
                    Op::Ticket => {
                        tickets_total += 1;
                        if p == me {
                            let v = ticket
                                .atomic_fetch_inc(0, 0)
                                .unwrap_or_else(|e| fail(me, format!("fetch_inc: {e}")));
                            if v as usize >= MAX_TICKETS {
                                fail(me, format!("ticket {v} beyond {MAX_TICKETS}"));
                            }
                            ck(seen.atomic_inc(v as usize, 0), "atomic_inc");
                            amos += 2;
                        }
                    }
                }
            }
        }
        // Check some of the previous round's buffer, stable during this one.
        if round > 0 {
            let pb = 1 - b;
            for _ in 0..2 {
                let (t, p) = (check_rng.below(n), check_rng.below(n));
                let mut got = [0u8; SLOT];
                ck(slots.get((pb * n + p) * SLOT, &mut got, t), "get");
                gets += 1;
                let want = &shadow[idx(t, pb, p)..idx(t, pb, p) + SLOT];
                if got[..] != want[..] {
                    fail(
                        me,
                        format!("round {round}: PE {p}'s slot on PE {t} differs from the replay"),
                    );
                }
            }
        }
        round += 1;
        if me == 0 && (start.elapsed() >= budget || round >= max_rounds) {
            for pe in 0..n {
                ck(stop.atomic_set(0, round, pe), "atomic_set");
            }
        }
        ck(sh.barrier_all(), "barrier_all");
        if round == 1 {
            // Every PE is past the first barrier: a test may now disturb
            // the job.
            println!("stress: PE {me}: running");
        }
        // Every PE knows tickets_total (by replay): all stop together
        // before the ticket table could overflow.
        // PE 0 names the round after which everybody stops: a PE may see
        // the flag one barrier early, so it compares the round too.
        let s = stop.atomic_fetch(0, me).unwrap_or(0);
        if (s != 0 && s <= round) || tickets_total + (n * OPS) as u64 > MAX_TICKETS as u64 {
            break;
        }
    }
    // Final check of this PE's copy.
    let mine = slots.to_vec();
    for bb in 0..2 {
        for p in 0..n {
            let got = &mine[(bb * n + p) * SLOT..(bb * n + p + 1) * SLOT];
            let want = &shadow[idx(me, bb, p)..idx(me, bb, p) + SLOT];
            if let Some(i) = (0..SLOT).find(|&i| got[i] != want[i]) {
                // Which puts wrote the expected and the found byte?
                let writers = |v: u8| -> Vec<String> {
                    history
                        .iter()
                        .filter(|h| h.1 == p && h.3 == bb && h.4 <= i && i < h.4 + h.5)
                        .filter(|h| byte(h.0, p, h.2, i - h.4) == v)
                        .map(|h| {
                            format!("round {} put {} (bytes {}..{})", h.0, h.2, h.4, h.4 + h.5)
                        })
                        .collect()
                };
                fail(
                    me,
                    format!(
                        "byte {i} of PE {p}'s slot (buffer {bb}) is {:#x} written by {:?}, expected {:#x} from {:?} (last round {round})",
                        got[i],
                        writers(got[i]),
                        want[i],
                        writers(want[i])
                    ),
                );
            }
        }
    }
    for (i, (got, &want)) in counters.iter().zip(expect_counters[me].iter()).enumerate() {
        if got != want {
            fail(me, format!("counter {i} is {got}, expected {want}"));
        }
    }
    if me == 0 {
        let t = ticket.read(0);
        if t != tickets_total {
            fail(me, format!("{t} tickets handed out, {tickets_total} taken"));
        }
        let s = seen.to_vec();
        if let Some(i) = (0..t as usize).find(|&i| s[i] != 1) {
            fail(me, format!("ticket {i} was returned {} times", s[i]));
        }
    }
    ck(sh.barrier_all(), "final barrier");
    println!(
        "stress: PE {me}: {round} rounds, {puts} puts, {gets} gets, {amos} atomics on {n} PEs OK"
    );
}
