//! Hello, OpenSHMEM: every PE greets, then sends its rank to PE 0 twice —
//! once with a put into its own slot of a symmetric array, once with an
//! atomic add into a symmetric counter. After a barrier PE 0 prints what
//! arrived and checks it against 0 + 1 + ... + (N-1).
//!
//! ```sh
//! target/release/oshrun -n 4 target/release/hello
//! # Hello from PE 2 of 4      (one line per PE, in any order)
//! # ...
//! # hello: 4 PEs, ranks [0, 1, 2, 3], sum 6 by puts, 6 by atomics, expected 6 OK
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    examples::run("hello", |sh| {
        let (me, n) = (sh.my_pe(), sh.n_pes());
        println!("Hello from PE {me} of {n}");

        // Symmetric objects: allocated collectively, one copy on every PE.
        let ranks = sh.calloc::<u64>(n)?;
        let sum = sh.calloc::<u64>(1)?;

        // One-sided: write my rank into slot `me` of PE 0's array, and add
        // it to PE 0's counter. PE 0 does nothing to receive them.
        ranks.p(me, me as u64, 0)?;
        sum.atomic_add(0, me as u64, 0)?;

        // The barrier completes every PE's puts and atomics.
        sh.barrier_all()?;

        let mut ok = true;
        if me == 0 {
            let got = ranks.to_vec();
            let by_puts: u64 = got.iter().sum();
            let by_atomics = sum.atomic_fetch(0, 0)?;
            let expected = (n as u64) * (n as u64 - 1) / 2;
            ok = got.iter().copied().eq(0..n as u64)
                && by_puts == expected
                && by_atomics == expected;
            println!(
                "hello: {n} PEs, ranks {got:?}, sum {by_puts} by puts, {by_atomics} by atomics, \
                 expected {expected} {}",
                if ok { "OK" } else { "FAILED" }
            );
        }
        examples::all_ok(sh, ok)
    })
}
