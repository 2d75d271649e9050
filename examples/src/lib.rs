//! Example SPMD programs for fshmem; each binary in `src/bin` is one:
//!
//! | program | what it shows |
//! |---|---|
//! | `hello` | init, rank and size, puts and an atomic into PE 0, a barrier |
//! | `ring` | a put to the right neighbour; a token passed around the ring with put-with-signal and signal waits |
//! | `matmul` | the FSHMEM case study: a block matrix multiply whose PEs exchange partial sums with puts |
//! | `histogram` | a histogram whose bins are spread over the PEs and filled with remote atomics |
//! | `floor` | the hardware floors the smp conduit is measured against (not SPMD) |
//!
//! Run any of them at any PE count, for example
//! `target/release/oshrun -n 4 target/release/matmul`. Each checks its own
//! result, prints it, and exits with status 1 when it is wrong.
//!
//! This library holds the little the SPMD programs share: running the body
//! of a program with error handling and an agreed exit status
//! ([`run`], [`all_ok`]), splitting `0..total` into uneven blocks
//! ([`block`]), a deterministic random generator ([`SplitMix64`]) and
//! command-line options ([`Options`]).

use shmem::{Shmem, ShmemError};
use std::ops::Range;
use std::process::ExitCode;

/// Runs the body of an SPMD program: starts the runtime, runs `body` on
/// every PE, finalizes, and turns the outcome into the exit status.
///
/// `body` returns whether the result is right (the same answer on every PE:
/// see [`all_ok`]). A wrong result exits with status 1 on every PE. An error
/// from the runtime is printed and ends the whole job with status 1
/// ([`Shmem::global_exit`]), since the other PEs may be waiting for this
/// one. A runtime that does not start exits with status 2.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     examples::run("demo", |sh| {
///         println!("PE {} of {}", sh.my_pe(), sh.n_pes());
///         Ok(true)
///     })
/// }
/// ```
pub fn run(name: &str, body: impl FnOnce(&Shmem) -> Result<bool, ShmemError>) -> ExitCode {
    let sh = match shmem::init() {
        Ok(sh) => sh,
        Err(e) => {
            shmem::report!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    let ok = match body(&sh) {
        Ok(ok) => ok,
        Err(e) => {
            shmem::report!("{name}: {e}");
            sh.global_exit(1);
        }
    };
    if let Err(e) = sh.finalize() {
        shmem::report!("{name}: {e}");
        return ExitCode::FAILURE;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Whether `ok` holds on every PE: each PE that is not ok adds one to a
/// counter on every PE, then all meet in a barrier. Collective.
///
/// ```no_run
/// let sh = shmem::init()?;
/// let mine_ok = true;
/// if examples::all_ok(&sh, mine_ok)? && sh.my_pe() == 0 {
///     println!("every PE is ok");
/// }
/// # Ok::<(), shmem::ShmemError>(())
/// ```
pub fn all_ok(sh: &Shmem, ok: bool) -> Result<bool, ShmemError> {
    let failures = sh.calloc::<u64>(1)?;
    if !ok {
        for pe in 0..sh.n_pes() {
            failures.atomic_inc(0, pe)?;
        }
    }
    sh.barrier_all()?;
    Ok(failures.atomic_fetch(0, sh.my_pe())? == 0)
}

/// Block `i` of `0..total` cut into `parts` contiguous blocks whose sizes
/// differ by at most one (the first `total % parts` blocks have one more),
/// so any total splits over any number of PEs. Blocks may be empty when
/// `total < parts`.
///
/// ```
/// use examples::block;
/// assert_eq!(block(10, 4, 0), 0..3);
/// assert_eq!(block(10, 4, 1), 3..6);
/// assert_eq!(block(10, 4, 3), 8..10);
/// assert_eq!(block(2, 3, 2), 2..2);
/// ```
pub fn block(total: usize, parts: usize, i: usize) -> Range<usize> {
    assert!(parts > 0 && i < parts, "block {i} of {parts}");
    let (base, extra) = (total / parts, total % parts);
    let start = i * base + i.min(extra);
    let len = base + usize::from(i < extra);
    start..start + len
}

/// The SplitMix64 generator: a deterministic stream of 64-bit values from
/// a seed, the same on every machine, so every PE can regenerate any other
/// PE's data.
///
/// ```
/// let mut a = examples::SplitMix64::new(7);
/// let mut b = examples::SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose stream is determined by `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next value of the stream.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (`bound > 0`), nearly uniform for bounds far
    /// below 2^64.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "empty range");
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }
}

/// Command-line options of an example: `--name VALUE` (or `--name=VALUE`)
/// for numbers, `--name` alone for switches, `-h`/`--help` for usage.
///
/// ```
/// let spec = [("--n", 96, "matrix order")];
/// let args = ["--n=5".to_string(), "--verbose".to_string()];
/// let o = examples::Options::parse("demo", &spec, &[("--verbose", "say more")], args).unwrap();
/// assert_eq!(o.value("--n"), 5);
/// assert!(o.flag("--verbose"));
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    values: Vec<(&'static str, usize)>,
    flags: Vec<(&'static str, bool)>,
}

impl Options {
    /// Parses `args` (without the program name) against the numeric
    /// options `values` (name, default, help) and the switches `flags`
    /// (name, help). Every error, and `--help`, is the text to print.
    pub fn parse(
        prog: &str,
        values: &[(&'static str, usize, &'static str)],
        flags: &[(&'static str, &'static str)],
        args: impl IntoIterator<Item = String>,
    ) -> Result<Options, String> {
        let mut usage = format!("usage: {prog}");
        for (name, default, help) in values {
            usage += &format!("\n  {name} N   {help} (default {default})");
        }
        for (name, help) in flags {
            usage += &format!("\n  {name}   {help}");
        }
        let mut o = Options {
            values: values.iter().map(|&(n, d, _)| (n, d)).collect(),
            flags: flags.iter().map(|&(n, _)| (n, false)).collect(),
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "-h" || arg == "--help" {
                return Err(usage);
            }
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (arg.clone(), None),
            };
            if let Some(slot) = o.values.iter_mut().find(|(n, _)| *n == name) {
                let text = match inline.or_else(|| args.next()) {
                    Some(t) => t,
                    None => return Err(format!("{prog}: {name} needs a value\n{usage}")),
                };
                slot.1 = text
                    .parse()
                    .map_err(|_| format!("{prog}: {name}: not a count: {text:?}\n{usage}"))?;
            } else if let Some(slot) = o.flags.iter_mut().find(|(n, _)| *n == arg) {
                slot.1 = true;
            } else {
                return Err(format!("{prog}: unknown argument {arg:?}\n{usage}"));
            }
        }
        Ok(o)
    }

    /// Parses the process's arguments; prints the usage and exits (status
    /// 0 for `--help`, 2 for a mistake) when they do not parse.
    pub fn from_env(
        prog: &str,
        values: &[(&'static str, usize, &'static str)],
        flags: &[(&'static str, &'static str)],
    ) -> Options {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let help = args.iter().any(|a| a == "-h" || a == "--help");
        match Options::parse(prog, values, flags, args) {
            Ok(o) => o,
            Err(text) if help => {
                println!("{text}");
                std::process::exit(0)
            }
            Err(text) => {
                shmem::report!("{text}");
                std::process::exit(2)
            }
        }
    }

    /// The value of numeric option `name` (its default when not given).
    pub fn value(&self, name: &str) -> usize {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
            .unwrap_or_else(|| panic!("no option {name}"))
    }

    /// Whether switch `name` was given.
    pub fn flag(&self, name: &str) -> bool {
        self.flags
            .iter()
            .find(|(n, _)| *n == name)
            .is_some_and(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_tile_the_range_evenly() {
        for total in 0..40 {
            for parts in 1..12 {
                let blocks: Vec<_> = (0..parts).map(|i| block(total, parts, i)).collect();
                assert_eq!(blocks[0].start, 0);
                assert_eq!(blocks[parts - 1].end, total);
                assert!(blocks.windows(2).all(|w| w[0].end == w[1].start));
                let (lo, hi) = (total / parts, total.div_ceil(parts));
                assert!(blocks.iter().all(|b| (lo..=hi).contains(&b.len())));
            }
        }
    }

    #[test]
    fn options_reject_mistakes() {
        let spec = [("--n", 3, "order")];
        let parse =
            |args: &[&str]| Options::parse("t", &spec, &[], args.iter().map(|s| s.to_string()));
        assert_eq!(parse(&[]).unwrap().value("--n"), 3);
        assert_eq!(parse(&["--n", "9"]).unwrap().value("--n"), 9);
        assert!(parse(&["--n"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--n", "-1"]).unwrap_err().contains("not a count"));
        assert!(parse(&["--m"]).unwrap_err().contains("unknown argument"));
        assert!(parse(&["--help"]).unwrap_err().starts_with("usage: t"));
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = SplitMix64::new(1);
        assert!((0..1000).all(|_| r.below(7) < 7));
        assert_eq!(SplitMix64::new(0).below(1), 0);
    }
}
