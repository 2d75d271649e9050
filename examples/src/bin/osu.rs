//! An OSU-style micro-benchmark of fshmem between PE 0 and PE 1 (or the PE
//! `--peer` names): put and get latency and bandwidth from 8 B to 4 MiB,
//! the ping-pong half round trip, atomic latency and rate, and
//! `barrier_all` latency.
//!
//! ```sh
//! cargo build --release --workspace
//! target/release/oshrun -n 2 target/release/osu
//! target/release/oshrun -n 2 target/release/osu --iters 20000 --max-size 4M \
//!     --csv osu.csv --svg osu.svg --only put,get,put_bw,get_bw
//! # 2 hosts x 2 PEs: PE 0 with PE 1 (its host) and with PE 2 (the other)
//! target/release/oshrun -n 4 --hosts 2 target/release/osu --peer 2
//! ```
//!
//! Below, "PE 1" is the peer.
//!
//! Every measurement runs one warm-up batch, then [`BATCHES`] timed batches
//! of the same number of iterations; the value reported is the median over
//! the batches of each batch's mean, which shrugs off a batch that another
//! process on the machine interrupted. Sizes are powers of two. Iterations
//! shrink with the size above 64 KiB ([`SCALE_FROM`]), so that every size moves about the same
//! number of bytes (never fewer than a few iterations per batch).
//!
//! | test | what one iteration is | unit |
//! |---|---|---|
//! | `put_lat` | `put` of `size` bytes to PE 1, then `quiet` | us |
//! | `get_lat` | blocking `get` of `size` bytes from PE 1 | us |
//! | `put_bw` | a window of [`WINDOW`] `put_nbi` to PE 1, then `quiet` | MB/s (10^6 B/s) |
//! | `get_bw` | a window of `get_nbi` from PE 1 into distinct buffers, then `quiet` | MB/s |
//! | `pingpong` | PE 0 `put_signal`s `size` bytes to PE 1, which waits on the signal and answers alike; half the round trip | us |
//! | `fetch_add`, `compare_swap`, `fetch`, `add` | one 64-bit atomic on PE 1's word (PE 1 idle, as in OSU) | us |
//! | `fetch_add_bounce` | PE 0 and PE 1 take turns to `fetch_add` one word on PE 1, each waiting to see the other's; the time of one turn, so the line always comes from the other core | us |
//! | `add_rate` | non-fetching 64-bit `add` to PE 1, `quiet` once per batch | Mops/s |
//! | `barrier` | `barrier_all` on every PE | us |
//!
//! PE 0 prints the table; `--csv` writes the same rows as
//! `test,size_bytes,value,unit`, and `--svg` a plot of put and get bandwidth
//! against size. PEs other than PE 0 and the peer only take part in the
//! barriers.

use shmem::{Cmp, Shmem, ShmemError, SignalOp, SymVec};
use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// Timed batches per measurement (plus one warm-up batch).
pub const BATCHES: u64 = 9;
/// Non-blocking puts in flight per `quiet` in the bandwidth test.
pub const WINDOW: usize = 64;
/// Bytes of distinct destination buffers the get-bandwidth window may use.
pub const GET_WINDOW_BYTES: usize = 8 << 20;
/// Above this size, iterations shrink in proportion to the size.
pub const SCALE_FROM: usize = 64 << 10;
/// The smallest message size.
pub const MIN_SIZE: usize = 8;

/// One group of measurements that `--only` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Test {
    Put,
    Get,
    PutBw,
    GetBw,
    PingPong,
    Atomic,
    Rate,
    Barrier,
}

impl Test {
    const ALL: [Test; 8] = [
        Test::Put,
        Test::Get,
        Test::PutBw,
        Test::GetBw,
        Test::PingPong,
        Test::Atomic,
        Test::Rate,
        Test::Barrier,
    ];
}

/// A name `--only` takes: one test, or `bw` for both bandwidth tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Only {
    Put,
    Get,
    #[value(name = "put_bw")]
    PutBw,
    #[value(name = "get_bw")]
    GetBw,
    Bw,
    Pingpong,
    Atomic,
    Rate,
    Barrier,
}

impl Only {
    fn tests(self) -> &'static [Test] {
        match self {
            Only::Put => &[Test::Put],
            Only::Get => &[Test::Get],
            Only::PutBw => &[Test::PutBw],
            Only::GetBw => &[Test::GetBw],
            Only::Bw => &[Test::PutBw, Test::GetBw],
            Only::Pingpong => &[Test::PingPong],
            Only::Atomic => &[Test::Atomic],
            Only::Rate => &[Test::Rate],
            Only::Barrier => &[Test::Barrier],
        }
    }
}

/// The command line (run under oshrun: `oshrun -n 2 osu [OPTIONS]`).
#[derive(Debug, clap::Parser)]
#[command(
    name = "osu",
    about = "OSU-style micro-benchmark of fshmem between PE 0 and a peer (run under oshrun -n 2 or more)"
)]
struct Opts {
    /// Iterations per size for small sizes; sizes above 64 KiB scale down
    /// so that each moves about as many bytes.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
    /// The largest message, a power of two >= 8: 4194304, 4M, 64K.
    #[arg(long, default_value = "4M", value_parser = parse_max_size)]
    max_size: usize,
    /// Also write the results as CSV: test,size_bytes,value,unit.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Also write a plot of put and get bandwidth against size (SVG).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// A comma-separated subset of the tests (default: all).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "TESTS")]
    only: Vec<Only>,
    /// The PE that PE 0 measures against.
    #[arg(long, default_value_t = 1, value_parser = parse_peer)]
    peer: usize,
}

impl Opts {
    /// The tests to run, in the table's order.
    fn tests(&self) -> Vec<Test> {
        Test::ALL
            .into_iter()
            .filter(|t| self.only.is_empty() || self.only.iter().any(|o| o.tests().contains(t)))
            .collect()
    }
}

/// Parses `4194304`, `4M`, `4MiB`, `64K`, `64k`, `1G`.
fn parse_size(s: &str) -> Option<usize> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix("B"))
        .unwrap_or(t);
    let (num, shift) = match t.char_indices().last()? {
        (i, 'k' | 'K') => (&t[..i], 10),
        (i, 'm' | 'M') => (&t[..i], 20),
        (i, 'g' | 'G') => (&t[..i], 30),
        _ => (t, 0),
    };
    num.parse::<usize>().ok()?.checked_mul(1usize << shift)
}

fn parse_max_size(s: &str) -> Result<usize, String> {
    parse_size(s)
        .filter(|n| n.is_power_of_two() && *n >= MIN_SIZE)
        .ok_or_else(|| "expected a power of two >= 8 (e.g. 4M)".to_string())
}

fn parse_peer(s: &str) -> Result<usize, String> {
    s.parse()
        .ok()
        .filter(|&p| p >= 1)
        .ok_or_else(|| "expected a PE number >= 1".to_string())
}

/// One result row.
#[derive(Clone, Debug)]
struct Row {
    test: &'static str,
    size: usize,
    value: f64,
    unit: &'static str,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `8 B`, `64 KiB`, `4 MiB`.
fn human_size(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} B"),
    }
}

/// A local buffer whose first byte is page-aligned, as the symmetric buffer
/// is: glibc's `memmove` of 4 KiB and more runs at less than half speed on
/// AMD Zen when source and destination differ in alignment by 16 bytes
/// (what `malloc` gives large blocks), and the benchmark should measure the
/// library, not that.
struct PageBuf {
    bytes: Vec<u8>,
    start: usize,
    len: usize,
}

impl PageBuf {
    const PAGE: usize = 4096;

    fn new(len: usize, fill: u8) -> PageBuf {
        let bytes = vec![fill; len + Self::PAGE];
        let start = bytes.as_ptr().align_offset(Self::PAGE);
        PageBuf { bytes, start, len }
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + self.len]
    }
}

/// The benchmark state shared by every test.
struct Bench<'s> {
    sh: &'s Shmem,
    me: usize,
    /// The PE measured against (`--peer`, default 1).
    peer: usize,
    opts: &'s Opts,
    /// Symmetric message buffer of `max_size` bytes.
    buf: SymVec<'s, u8>,
    /// Symmetric words, each in its own 128-byte block: 0 the ping-pong
    /// signal, 16 the atomic target, 32 the bounce word.
    words: SymVec<'s, u64>,
    /// Local source of puts.
    src: PageBuf,
    /// Local destination of gets (room for the get-bandwidth window).
    dst: RefCell<PageBuf>,
    /// Rounds of ping-pong so far (the signal value; both PEs count alike).
    seq: Cell<u64>,
    rows: RefCell<Vec<Row>>,
}

const SIG: usize = 0;
const AMO: usize = 16;
const BOUNCE: usize = 32;

type Res<T> = Result<T, ShmemError>;

impl<'s> Bench<'s> {
    /// Iterations per batch for messages of `size` bytes.
    fn per_batch(&self, size: usize) -> u64 {
        let scaled = if size <= SCALE_FROM {
            self.opts.iters
        } else {
            self.opts.iters * SCALE_FROM as u64 / size as u64
        };
        (scaled / BATCHES).max(2)
    }

    fn sizes(&self) -> impl Iterator<Item = usize> + use<> {
        let max = self.opts.max_size;
        std::iter::successors(Some(MIN_SIZE), move |&s| (s < max).then_some(s * 2))
    }

    fn record(&self, test: &'static str, size: usize, value: f64, unit: &'static str) {
        if self.me == 0 {
            self.rows.borrow_mut().push(Row {
                test,
                size,
                value,
                unit,
            });
        }
    }

    /// On PE 0: a warm-up batch, then [`BATCHES`] timed ones of `per`
    /// calls of `op`; the median of the batch means in nanoseconds.
    /// Other PEs only meet PE 0 at the barriers around it.
    fn time_pe0(&self, per: u64, mut op: impl FnMut(u64) -> Res<()>) -> Res<f64> {
        self.sh.barrier_all()?;
        let mut means = Vec::with_capacity(BATCHES as usize);
        if self.me == 0 {
            let mut i = 0u64;
            for b in 0..=BATCHES {
                let t0 = Instant::now();
                for _ in 0..per {
                    op(i)?;
                    i += 1;
                }
                let ns = t0.elapsed().as_nanos() as f64 / per as f64;
                if b > 0 {
                    means.push(ns);
                }
            }
        }
        self.sh.barrier_all()?;
        Ok(if self.me == 0 { median(means) } else { 0.0 })
    }

    /// As [`Bench::time_pe0`], but PE 0 and PE 1 both run `op` (PE 0 times).
    fn time_pair(&self, per: u64, mut op: impl FnMut(u64) -> Res<()>) -> Res<f64> {
        self.sh.barrier_all()?;
        let mut means = Vec::with_capacity(BATCHES as usize);
        if self.me == 0 || self.me == self.peer {
            let mut i = 0u64;
            for b in 0..=BATCHES {
                let t0 = Instant::now();
                for _ in 0..per {
                    op(i)?;
                    i += 1;
                }
                let ns = t0.elapsed().as_nanos() as f64 / per as f64;
                if b > 0 {
                    means.push(ns);
                }
            }
        }
        self.sh.barrier_all()?;
        Ok(if self.me == 0 { median(means) } else { 0.0 })
    }

    fn put_lat(&self) -> Res<()> {
        for size in self.sizes() {
            let (buf, src, sh) = (&self.buf, &self.src.as_slice()[..size], self.sh);
            let ns = self.time_pe0(self.per_batch(size), |_| {
                buf.put(0, src, self.peer)?;
                sh.quiet()
            })?;
            self.record("put_lat", size, ns / 1e3, "us");
        }
        Ok(())
    }

    fn get_lat(&self) -> Res<()> {
        for size in self.sizes() {
            let per = self.per_batch(size);
            let mut dst = self.dst.borrow_mut();
            let (buf, dst) = (&self.buf, &mut dst.as_mut_slice()[..size]);
            let ns = {
                let sh = self.sh;
                sh.barrier_all()?;
                let mut means = Vec::new();
                if self.me == 0 {
                    for b in 0..=BATCHES {
                        let t0 = Instant::now();
                        for _ in 0..per {
                            buf.get(0, dst, self.peer)?;
                        }
                        if b > 0 {
                            means.push(t0.elapsed().as_nanos() as f64 / per as f64);
                        }
                    }
                }
                sh.barrier_all()?;
                if self.me == 0 { median(means) } else { 0.0 }
            };
            self.record("get_lat", size, ns / 1e3, "us");
        }
        Ok(())
    }

    fn put_bw(&self) -> Res<()> {
        for size in self.sizes() {
            let per = (self.per_batch(size) / WINDOW as u64).max(2);
            let (buf, src, sh) = (&self.buf, &self.src.as_slice()[..size], self.sh);
            let peer = self.peer;
            let ns = self.time_pe0(per, |_| {
                sh.nbi(|s| {
                    for _ in 0..WINDOW {
                        s.put(buf, 0, src, peer)?;
                    }
                    Ok(())
                })
            })?;
            let mbs = (size * WINDOW) as f64 / ns * 1e3;
            self.record("put_bw", size, mbs, "MB/s");
        }
        Ok(())
    }

    fn get_bw(&self) -> Res<()> {
        for size in self.sizes() {
            let window = (GET_WINDOW_BYTES / size).clamp(1, WINDOW);
            let per = (self.per_batch(size) / window as u64).max(2);
            let (buf, me, sh, peer) = (&self.buf, self.me, self.sh, self.peer);
            let mut dst = self.dst.borrow_mut();
            let dst = &mut dst.as_mut_slice()[..size * window];
            sh.barrier_all()?;
            let mut means = Vec::new();
            if me == 0 {
                for b in 0..=BATCHES {
                    let t0 = Instant::now();
                    for _ in 0..per {
                        sh.nbi(|s| {
                            for chunk in dst.chunks_exact_mut(size) {
                                s.get(buf, 0, chunk, peer)?;
                            }
                            Ok::<(), ShmemError>(())
                        })?;
                    }
                    if b > 0 {
                        means.push(t0.elapsed().as_nanos() as f64 / per as f64);
                    }
                }
            }
            sh.barrier_all()?;
            if me == 0 {
                let mbs = (size * window) as f64 / median(means) * 1e3;
                self.record("get_bw", size, mbs, "MB/s");
            }
        }
        Ok(())
    }

    fn pingpong(&self) -> Res<()> {
        for size in self.sizes() {
            let (buf, words, src, me) = (
                &self.buf,
                &self.words,
                &self.src.as_slice()[..size],
                self.me,
            );
            let seq = &self.seq;
            let peer = if me == 0 { self.peer } else { 0 };
            let ns = self.time_pair(self.per_batch(size), |_| {
                let v = seq.get() + 1;
                seq.set(v);
                if me == 0 {
                    buf.put_signal(0, src, words, SIG, SignalOp::Set, v, peer)?;
                    words.signal_wait_until(SIG, Cmp::Ge, v)?;
                } else {
                    words.signal_wait_until(SIG, Cmp::Ge, v)?;
                    buf.put_signal(0, src, words, SIG, SignalOp::Set, v, peer)?;
                }
                Ok(())
            })?;
            self.record("pingpong", size, ns / 2.0 / 1e3, "us");
        }
        Ok(())
    }

    fn atomics(&self) -> Res<()> {
        let per = self.per_batch(8);
        let w = &self.words;
        let ns = self.time_pe0(per, |_| w.atomic_fetch_add(AMO, 1, self.peer).map(drop))?;
        self.record("fetch_add", 8, ns / 1e3, "us");
        let mut expect = 0u64;
        self.sh.barrier_all()?;
        if self.me == 0 {
            expect = w.atomic_fetch(AMO, self.peer)?;
        }
        let ns = self.time_pe0(per, |_| {
            let old = w.atomic_compare_swap(AMO, expect, expect + 1, self.peer)?;
            expect = old + 1;
            Ok(())
        })?;
        self.record("compare_swap", 8, ns / 1e3, "us");
        let ns = self.time_pe0(per, |_| w.atomic_fetch(AMO, self.peer).map(drop))?;
        self.record("fetch", 8, ns / 1e3, "us");
        let ns = self.time_pe0(per, |_| w.atomic_add(AMO, 1, self.peer))?;
        self.record("add", 8, ns / 1e3, "us");

        // Turns on one word of PE 1: PE 0 adds when it is even, PE 1 when odd.
        let (me, p) = (self.me, self.peer);
        let ns = self.time_pair(per, |i| {
            if me == 0 {
                // Spin, yielding now and then for jobs with more PEs than cores.
                let mut spins = 0u32;
                while w.atomic_fetch(BOUNCE, p)? != 2 * i {
                    spins += 1;
                    if spins.is_multiple_of(1024) {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
                w.atomic_fetch_add(BOUNCE, 1, p)?;
            } else {
                w.wait_until(BOUNCE, Cmp::Eq, 2 * i + 1)?;
                w.atomic_fetch_add(BOUNCE, 1, p)?;
            }
            Ok(())
        })?;
        self.record("fetch_add_bounce", 8, ns / 2.0 / 1e3, "us");
        Ok(())
    }

    fn rate(&self) -> Res<()> {
        let per = self.per_batch(8);
        let (w, sh) = (&self.words, self.sh);
        // Time the adds and one quiet per batch: spread over the batch.
        let mut left = 0u64;
        let ns = self.time_pe0(per, |_| {
            w.atomic_add(AMO, 1, self.peer)?;
            left += 1;
            if left == per {
                left = 0;
                sh.quiet()?;
            }
            Ok(())
        })?;
        self.record("add_rate", 8, 1e3 / ns, "Mops/s");
        Ok(())
    }

    fn barrier(&self) -> Res<()> {
        let per = self.per_batch(8);
        let sh = self.sh;
        sh.barrier_all()?;
        let mut means = Vec::new();
        for b in 0..=BATCHES {
            let t0 = Instant::now();
            for _ in 0..per {
                sh.barrier_all()?;
            }
            if b > 0 {
                means.push(t0.elapsed().as_nanos() as f64 / per as f64);
            }
        }
        self.record("barrier", 0, median(means) / 1e3, "us");
        Ok(())
    }
}

/// Tests printed as one block of the table.
const ATOMIC_TESTS: [&str; 6] = [
    "fetch_add",
    "compare_swap",
    "fetch",
    "add",
    "fetch_add_bounce",
    "add_rate",
];

/// The block of the table a test is printed in.
fn family(test: &str) -> &str {
    if ATOMIC_TESTS.contains(&test) {
        "atomic"
    } else {
        test
    }
}

fn table(rows: &[Row], n_pes: usize, opts: &Opts) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# fshmem osu: PE 0 <-> PE {} of {n_pes}, --iters {}, median over {BATCHES} batches of batch means",
        opts.peer, opts.iters
    );
    let _ = writeln!(s, "{:<18} {:>9} {:>14}  unit", "test", "size", "value");
    let mut last = "";
    for r in rows {
        if family(r.test) != family(last) && !last.is_empty() {
            s.push('\n');
        }
        last = r.test;
        let size = if r.test == "barrier" {
            "-".to_string()
        } else {
            human_size(r.size)
        };
        let v = match r.unit {
            "us" => format!("{:.4}", r.value),
            _ => format!("{:.1}", r.value),
        };
        let _ = writeln!(s, "{:<18} {:>9} {:>14}  {}", r.test, size, v, r.unit);
    }
    s
}

fn csv(rows: &[Row]) -> String {
    let mut s = String::from("test,size_bytes,value,unit\n");
    for r in rows {
        let _ = writeln!(s, "{},{},{:.6},{}", r.test, r.size, r.value, r.unit);
    }
    s
}

/// The bandwidth plot, written to `path` with plotters: MB/s against
/// message size on a log2 axis, one line with markers for put and one for
/// get, and a legend.
fn svg(rows: &[Row], title: &str, path: &std::path::Path) -> Result<(), String> {
    use plotters::prelude::*;
    let pts = |test: &str| -> Vec<(usize, f64)> {
        rows.iter()
            .filter(|r| r.test == test)
            .map(|r| (r.size, r.value))
            .collect()
    };
    let series = [("put_bw", "put", BLUE), ("get_bw", "get", RED)];
    let all: Vec<(usize, f64)> = series.iter().flat_map(|s| pts(s.0)).collect();
    let xmin = all.iter().map(|p| p.0).min().unwrap_or(MIN_SIZE).max(1);
    let xmax = all.iter().map(|p| p.0).max().unwrap_or(xmin).max(xmin * 2);
    let ymax = all.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let root = SVGBackend::new(path, (760, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((xmin..xmax).log_scale().base(2.0), 0.0..ymax)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes, log2 scale)")
        .y_desc("bandwidth (MB/s, 10^6 B/s)")
        .x_labels(32)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_label_formatter(&|&x| {
            human_size(x)
                .replace(" KiB", "K")
                .replace(" MiB", "M")
                .replace(" B", "")
        })
        .draw()
        .map_err(|x| e(&x))?;
    for (test, name, colour) in series {
        let p = pts(test);
        if p.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(p.clone(), colour.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(p.into_iter().map(|pt| Circle::new(pt, 3, colour.filled())))
            .map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))
}

fn run(sh: &Shmem, opts: &Opts) -> Result<(), Box<dyn std::error::Error>> {
    let (me, n) = (sh.my_pe(), sh.n_pes());
    if n < 2 {
        return Err("osu needs at least 2 PEs (oshrun -n 2 osu)".into());
    }
    if opts.peer >= n {
        return Err(format!("--peer {}: the job has {n} PEs", opts.peer).into());
    }
    // The get-bandwidth window needs `window * size` bytes (see get_bw).
    let get_room = opts
        .max_size
        .max(GET_WINDOW_BYTES.min(WINDOW * opts.max_size));
    let b = Bench {
        sh,
        me,
        peer: opts.peer,
        opts,
        buf: sh.align::<u8>(4096, opts.max_size)?,
        words: sh.align::<u64>(128, 48)?,
        src: PageBuf::new(opts.max_size, 1),
        dst: RefCell::new(PageBuf::new(get_room, 0)),
        seq: Cell::new(0),
        rows: RefCell::new(Vec::new()),
    };
    for t in opts.tests() {
        match t {
            Test::Put => b.put_lat()?,
            Test::Get => b.get_lat()?,
            Test::PutBw => b.put_bw()?,
            Test::GetBw => b.get_bw()?,
            Test::PingPong => b.pingpong()?,
            Test::Atomic => b.atomics()?,
            Test::Rate => b.rate()?,
            Test::Barrier => b.barrier()?,
        }
    }
    sh.barrier_all()?;
    if me == 0 {
        let rows = b.rows.borrow();
        print!("{}", table(&rows, n, opts));
        if let Some(p) = &opts.csv {
            std::fs::write(p, csv(&rows)).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        if let Some(p) = &opts.svg {
            let title = format!("fshmem put/get bandwidth, PE 0 - PE {} of {n}", opts.peer);
            svg(&rows, &title, p)?;
        }
    }
    Ok(())
}

fn main() {
    let opts = <Opts as clap::Parser>::parse();
    let sh = match shmem::init() {
        Ok(sh) => sh,
        Err(e) => {
            shmem::report!("osu: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = run(&sh, &opts) {
        shmem::report!("osu: PE {}: {e}", sh.my_pe());
        sh.global_exit(1);
    }
}
