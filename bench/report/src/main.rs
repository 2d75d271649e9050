//! Reads runs of `bench/ipv6/osh_bench.c` (lines `op size usec_per_op
//! MB_per_s`) from several implementations, takes the median of every
//! point over the runs, and writes a Markdown table with ratios against
//! the first implementation named, plus two SVG plots (latency and
//! bandwidth against size, log-log) drawn with plotters.
//!
//! ```sh
//! bench-report --out DIR ofi=run1.txt ofi=run2.txt ipv6=run1.txt ompi=run1.txt ...
//! ```
//!
//! Ratios: for latency `time(first) / time(other)` (below 1: the first is
//! faster); for bandwidth `MB/s(first) / MB/s(other)` (above 1: the first
//! is faster).

use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// One measured point: (op, size) -> value (µs for `*_lat`, MB/s else).
type Points = BTreeMap<(String, u64), Vec<f64>>;

fn is_lat(op: &str) -> bool {
    op.ends_with("_lat")
}

/// Parses one run; a malformed line is an error naming file and line.
fn parse(path: &Path, into: &mut Points) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = || {
            format!(
                "{}:{}: expected `op size usec MB/s`, got {line:?}",
                path.display(),
                i + 1
            )
        };
        let [op, size, usec, mbps] = f[..] else {
            return Err(bad());
        };
        if !op.ends_with("_lat") && !op.ends_with("_bw") {
            return Err(bad());
        }
        let size: u64 = size.parse().map_err(|_| bad())?;
        let v: f64 = if is_lat(op) { usec } else { mbps }
            .parse()
            .map_err(|_| bad())?;
        if !v.is_finite() || v < 0.0 {
            return Err(bad());
        }
        into.entry((op.to_string(), size)).or_default().push(v);
    }
    Ok(())
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[s.len() / 2]
}

fn human(size: u64) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

struct Report {
    names: Vec<String>,
    /// Per implementation: (op, size) -> median.
    medians: Vec<BTreeMap<(String, u64), f64>>,
    runs: Vec<usize>,
}

impl Report {
    fn table(&self) -> String {
        let mut s = String::from("| op | size |");
        for n in &self.names {
            s.push_str(&format!(" {n} |"));
        }
        for n in &self.names[1..] {
            s.push_str(&format!(" {} / {n} |", self.names[0]));
        }
        s.push_str("\n|---|---:|");
        for _ in 0..(2 * self.names.len() - 1) {
            s.push_str("---:|");
        }
        s.push('\n');
        for ((op, size), first) in &self.medians[0] {
            s.push_str(&format!("| {op} | {} |", human(*size)));
            let unit = |v: f64| {
                if is_lat(op) {
                    format!("{v:.2}")
                } else {
                    format!("{v:.0}")
                }
            };
            for m in &self.medians {
                match m.get(&(op.clone(), *size)) {
                    Some(v) => s.push_str(&format!(" {} |", unit(*v))),
                    None => s.push_str(" – |"),
                }
            }
            for m in &self.medians[1..] {
                match m.get(&(op.clone(), *size)) {
                    Some(v) if *v > 0.0 => s.push_str(&format!(" {:.2} |", first / v)),
                    _ => s.push_str(" – |"),
                }
            }
            s.push('\n');
        }
        s
    }

    /// For each other implementation: the points where the first is at
    /// least as fast, of those compared, and the worst ratio.
    fn summary(&self) -> String {
        let mut out = String::new();
        for (k, m) in self.medians.iter().enumerate().skip(1) {
            let (mut ok, mut all) = (0, 0);
            let mut worst: Option<(f64, String)> = None;
            for ((op, size), first) in &self.medians[0] {
                let Some(v) = m.get(&(op.clone(), *size)) else {
                    continue;
                };
                all += 1;
                // Normalised so that above 1 means the first is slower.
                let slower = if is_lat(op) { first / v } else { v / first };
                if slower <= 1.0 {
                    ok += 1;
                }
                if worst.as_ref().is_none_or(|(w, _)| slower > *w) {
                    worst = Some((slower, format!("{op} {}", human(*size))));
                }
            }
            let (w, at) = worst.unwrap_or((0.0, "-".into()));
            out.push_str(&format!(
                "{} against {}: at least as fast at {ok} of {all} points; worst: {at}, {:.2}x {}\n",
                self.names[0],
                self.names[k],
                if w >= 1.0 { w } else { 1.0 / w },
                if w > 1.0 { "slower" } else { "faster" }
            ));
        }
        out
    }

    fn plot(&self, path: &Path, lat: bool) -> Result<(), String> {
        let series: Vec<Vec<(f64, f64)>> = self
            .medians
            .iter()
            .map(|m| {
                m.iter()
                    .filter(|((op, _), _)| is_lat(op) == lat && op.starts_with("put"))
                    .map(|((_, s), v)| (*s as f64, *v))
                    .chain(
                        m.iter()
                            .filter(|((op, _), _)| is_lat(op) == lat && op.starts_with("get"))
                            .map(|((_, s), v)| (*s as f64, -*v)),
                    )
                    .collect()
            })
            .collect();
        let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::MAX, 0f64, f64::MAX, 0f64);
        for s in &series {
            for &(x, y) in s {
                let y = y.abs().max(1e-3);
                (xmin, xmax, ymin, ymax) = (xmin.min(x), xmax.max(x), ymin.min(y), ymax.max(y));
            }
        }
        if xmax == 0.0 {
            return Err("no points to plot".into());
        }
        let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
        let e = |e: &dyn std::fmt::Display| e.to_string();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let title = if lat {
            "latency per operation (µs, lower is better) — put: solid, get: dashed"
        } else {
            "bandwidth (MB/s, higher is better) — put: solid, get: dashed"
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (xmin..xmax).log_scale(),
                (ymin * 0.8..ymax * 1.25).log_scale(),
            )
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_desc("size (bytes)")
            .y_desc(if lat { "µs" } else { "MB/s" })
            .x_label_formatter(&|x| human(*x as u64))
            .draw()
            .map_err(|x| e(&x))?;
        let colours = [RED, BLUE, GREEN, MAGENTA, CYAN];
        for (k, s) in series.iter().enumerate() {
            let c = colours[k % colours.len()];
            let put: Vec<(f64, f64)> = s.iter().filter(|p| p.1 >= 0.0).copied().collect();
            let get: Vec<(f64, f64)> = s
                .iter()
                .filter(|p| p.1 < 0.0)
                .map(|&(x, y)| (x, -y))
                .collect();
            chart
                .draw_series(LineSeries::new(put, c.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(format!("{} ({} runs)", self.names[k], self.runs[k]))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(DashedLineSeries::new(get, 6, 4, c.stroke_width(2)))
                .map_err(|x| e(&x))?;
        }
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut out: Option<PathBuf> = None;
    let mut names: Vec<String> = Vec::new();
    let mut points: Vec<Points> = Vec::new();
    let mut runs: Vec<usize> = Vec::new();
    while let Some(a) = args.next() {
        if a == "--out" {
            out = Some(args.next().ok_or("--out needs a directory")?.into());
            continue;
        }
        let (name, file) = a
            .split_once('=')
            .ok_or_else(|| format!("{a:?}: expected NAME=FILE (or --out DIR)"))?;
        let k = match names.iter().position(|n| n == name) {
            Some(k) => k,
            None => {
                names.push(name.to_string());
                points.push(Points::new());
                runs.push(0);
                names.len() - 1
            }
        };
        parse(Path::new(file), &mut points[k])?;
        runs[k] += 1;
    }
    let out = out.ok_or("usage: bench-report --out DIR NAME=FILE...")?;
    if names.len() < 2 {
        return Err("name at least two implementations".into());
    }
    let r = Report {
        medians: points
            .iter()
            .map(|p| p.iter().map(|(k, v)| (k.clone(), median(v))).collect())
            .collect(),
        names,
        runs,
    };
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let table = r.table();
    let summary = r.summary();
    std::fs::write(out.join("table.md"), format!("{table}\n{summary}"))
        .map_err(|e| format!("{}: {e}", out.display()))?;
    r.plot(&out.join("latency.svg"), true)?;
    r.plot(&out.join("bandwidth.svg"), false)?;
    print!("{table}\n{summary}");
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-report: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_runs_and_refuses_bad_lines() {
        let dir = std::env::temp_dir().join(format!("bench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good");
        std::fs::write(&good, "put_lat 8 2.50 3.2\nput_bw 4096 1.00 4096.0\n").unwrap();
        let mut p = Points::new();
        parse(&good, &mut p).unwrap();
        assert_eq!(p[&("put_lat".to_string(), 8)], vec![2.5]);
        assert_eq!(p[&("put_bw".to_string(), 4096)], vec![4096.0]);
        for bad in ["put_lat 8 x 1", "put_lat 8", "zz 8 1 1", "put_lat 8 -1 1"] {
            let f = dir.join("bad");
            std::fs::write(&f, bad).unwrap();
            assert!(
                parse(&f, &mut Points::new()).unwrap_err().contains("bad:1"),
                "{bad}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ratios_and_summary() {
        let m = |v: &[(&str, u64, f64)]| -> BTreeMap<(String, u64), f64> {
            v.iter().map(|&(o, s, x)| ((o.to_string(), s), x)).collect()
        };
        let r = Report {
            names: vec!["a".into(), "b".into()],
            medians: vec![
                m(&[("put_lat", 8, 2.0), ("put_bw", 4096, 100.0)]),
                m(&[("put_lat", 8, 4.0), ("put_bw", 4096, 200.0)]),
            ],
            runs: vec![1, 1],
        };
        let t = r.table();
        assert!(t.contains("| put_lat | 8 B | 2.00 | 4.00 | 0.50 |"), "{t}");
        assert!(t.contains("| put_bw | 4 KiB | 100 | 200 | 0.50 |"), "{t}");
        let s = r.summary();
        assert!(
            s.contains("at least as fast at 1 of 2 points; worst: put_bw 4 KiB, 2.00x slower"),
            "{s}"
        );
    }
}
