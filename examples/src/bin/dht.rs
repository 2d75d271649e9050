//! A distributed hash table whose inserts and lookups are active messages.
//!
//! Key k lives in a private `HashMap` on PE `home(k)`; nothing of the table
//! is symmetric memory. Every PE registers two typed AMs (collectively, in
//! the same order): `insert (k, v) -> previous value` and `lookup k ->
//! value`, whose handlers run on the key's home PE. Each PE inserts
//! `--keys` keys of its own with pipelined one-way sends, waits until all
//! were handled, and after a barrier looks up, with blocking calls, every
//! key of the next PE (expecting exact values), keys nobody inserted
//! (expecting none), and re-inserts some keys of the previous PE to check
//! that the previous value comes back. Finally the shard sizes must add up
//! to the number of keys inserted. The job exits with status 1 on any
//! mismatch.
//!
//! ```sh
//! target/release/oshrun -n 4 target/release/dht
//! # dht: 4 PEs inserted 4000 keys; shards hold 4000; every lookup exact OK
//! ```

use examples::SplitMix64;
use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Key `i` of PE `pe`: distinct for every (pe, i), scattered over homes.
fn key(pe: usize, i: usize) -> u64 {
    SplitMix64::new(((pe as u64) << 32) | i as u64).next_u64() | 1
}

/// The value stored under `k`.
fn value(k: u64) -> u64 {
    k.rotate_left(17) ^ 0x5eed
}

/// The PE that holds `k`.
fn home(k: u64, n: usize) -> usize {
    (SplitMix64::new(k).next_u64() % n as u64) as usize
}

fn main() -> ExitCode {
    let opts = examples::Options::from_env(
        "dht",
        &[("--keys", 1000, "keys each PE inserts")],
        &[(
            "--inject-error",
            "store a wrong value for one key (to see the check fail)",
        )],
    );
    let count = opts.value("--keys");
    let inject = opts.flag("--inject-error");
    examples::run("dht", |sh| {
        let (me, n) = (sh.my_pe(), sh.n_pes());
        let shard: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();

        // Handlers: short, no blocking calls; they only touch the shard.
        let s = shard.clone();
        let insert = sh.am_typed(move |_src, (k, v): (u64, u64)| {
            s.lock().unwrap_or_else(|e| e.into_inner()).insert(k, v)
        })?;
        let s = shard.clone();
        let lookup = sh.am_typed(move |_src, k: u64| {
            s.lock().unwrap_or_else(|e| e.into_inner()).get(&k).copied()
        })?;

        // Insert my keys, pipelined, then wait until every one was handled.
        for i in 0..count {
            let k = key(me, i);
            let v = if inject && me == 0 && i == 0 {
                0
            } else {
                value(k)
            };
            insert.send(home(k, n), &(k, v))?;
        }
        insert.wait_all()?;
        sh.barrier_all()?;

        let mut ok = true;
        // Every key of the next PE, exactly.
        let next = (me + 1) % n;
        for i in 0..count {
            let k = key(next, i);
            let got = lookup.call(home(k, n), &k)?;
            if got != Some(value(k)) {
                if ok {
                    shmem::report!(
                        "dht: PE {me}: key {k:#x} of PE {next} gave {got:?}, want {:?}",
                        Some(value(k))
                    );
                }
                ok = false;
            }
        }
        // Keys nobody inserted (even keys: inserted ones are odd).
        for i in 0..count.min(64) {
            let k = key(me, i) & !1;
            let got = lookup.call(home(k, n), &k)?;
            if got.is_some() {
                shmem::report!("dht: PE {me}: absent key {k:#x} gave {got:?}");
                ok = false;
            }
        }
        sh.barrier_all()?;
        // Re-insert some keys of the previous PE with the same value: the
        // previous value comes back.
        let prev = (me + n - 1) % n;
        for i in (0..count).step_by(7) {
            let k = key(prev, i);
            let old = insert.call(home(k, n), &(k, value(k)))?;
            if old != Some(value(k)) && !(inject && prev == 0 && i == 0) {
                shmem::report!("dht: PE {me}: re-insert of {k:#x} returned {old:?}");
                ok = false;
            }
        }
        sh.barrier_all()?;

        // The shards hold every key once.
        let total = sh.calloc::<u64>(1)?;
        let held = shard.lock().unwrap_or_else(|e| e.into_inner()).len() as u64;
        total.atomic_add(0, held, 0)?;
        sh.barrier_all()?;
        if me == 0 {
            let sum = total.read(0);
            if sum != (count * n) as u64 {
                shmem::report!("dht: shards hold {sum} keys, {} were inserted", count * n);
                ok = false;
            }
        }
        let ok = examples::all_ok(sh, ok)?;
        if me == 0 && ok {
            println!(
                "dht: {n} PEs inserted {} keys; shards hold {}; every lookup exact OK",
                count * n,
                total.read(0)
            );
        }
        Ok(ok)
    })
}
