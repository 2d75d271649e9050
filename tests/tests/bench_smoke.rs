//! Smoke test of the `osu` benchmark: a tiny run through `oshrun` at 2 PEs
//! must print a well-formed table and write a well-formed CSV and SVG. It
//! checks shape and sanity (positive, finite values), never speed. The
//! same for `floor --udp` (the UDP floor at every benchmark size, in the
//! `op size usec MB/s` lines `bench-report` reads) and for `bench-report`
//! putting a run beside that floor.

use fshmem_tests::{bin, oshrun, run, shm_files, unique_job_id};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// Tests swept over message sizes, and those measured at one size.
const SWEPT: [&str; 5] = ["put_lat", "get_lat", "put_bw", "get_bw", "pingpong"];
const SINGLE: [(&str, usize, &str); 7] = [
    ("fetch_add", 8, "us"),
    ("compare_swap", 8, "us"),
    ("fetch", 8, "us"),
    ("add", 8, "us"),
    ("fetch_add_bounce", 8, "us"),
    ("add_rate", 8, "Mops/s"),
    ("barrier", 0, "us"),
];

/// Sizes of a run with `--max-size 64K`: 8 B to 64 KiB.
fn sizes() -> Vec<usize> {
    (3..=16).map(|k| 1usize << k).collect()
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(unique_job_id(tag));
        std::fs::create_dir_all(&d).expect("create scratch directory");
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Parses the CSV: header, then `test,size_bytes,value,unit` rows.
fn parse_csv(text: &str) -> Vec<(String, usize, f64, String)> {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("test,size_bytes,value,unit"), "{text}");
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 4, "bad CSV row {l:?}");
            let size = f[1].parse().unwrap_or_else(|_| panic!("size in {l:?}"));
            let value: f64 = f[2].parse().unwrap_or_else(|_| panic!("value in {l:?}"));
            assert!(value.is_finite() && value > 0.0, "value in {l:?}");
            (f[0].to_string(), size, value, f[3].to_string())
        })
        .collect()
}

#[test]
fn tiny_run_writes_table_csv_and_svg() {
    let dir = Scratch::new("osu");
    let (csv, svg) = (dir.0.join("osu.csv"), dir.0.join("osu.svg"));
    let job = unique_job_id("osu");
    let osu = bin("osu");
    let out = oshrun(&[
        "-n".as_ref(),
        "2".as_ref(),
        "--job-id".as_ref(),
        job.as_ref(),
        osu.as_os_str(),
        "--iters".as_ref(),
        "20".as_ref(),
        "--max-size".as_ref(),
        "64K".as_ref(),
        "--csv".as_ref(),
        csv.as_os_str(),
        "--svg".as_ref(),
        svg.as_os_str(),
    ]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert!(shm_files(&job).is_empty(), "shared memory left behind");

    // CSV: every swept test at every size, every single test once, in the
    // units the table states.
    let rows = parse_csv(&std::fs::read_to_string(&csv).expect("CSV written"));
    assert_eq!(rows.len(), SWEPT.len() * sizes().len() + SINGLE.len());
    for test in SWEPT {
        let got: Vec<usize> = rows.iter().filter(|r| r.0 == test).map(|r| r.1).collect();
        assert_eq!(got, sizes(), "sizes of {test}");
        let unit = if test.ends_with("_bw") { "MB/s" } else { "us" };
        assert!(rows.iter().filter(|r| r.0 == test).all(|r| r.3 == unit));
    }
    for (test, size, unit) in SINGLE {
        assert!(
            rows.iter()
                .any(|r| r.0 == test && r.1 == size && r.3 == unit),
            "missing {test} in {rows:?}"
        );
    }

    // Table: a header and one line per CSV row, PE 0 only.
    let table: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        table[0].starts_with("test") && table[0].contains("unit"),
        "{}",
        out.stdout
    );
    assert_eq!(table.len(), rows.len() + 1, "{}", out.stdout);
    for ((test, _, _, unit), line) in rows.iter().zip(&table[1..]) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.first(), Some(&test.as_str()), "{line}");
        assert_eq!(f.last(), Some(&unit.as_str()), "{line}");
    }
    assert!(out.stdout.contains("8 B") && out.stdout.contains("64 KiB"));

    // SVG (plotters): a whole document with both curves (one point per
    // size, each marked), the legend and labeled axes.
    let s = std::fs::read_to_string(&svg).expect("SVG written");
    assert!(s.starts_with("<svg ") && s.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(s.trim_end().ends_with("</svg>"));
    let attr = |el: &str, name: &str| -> Option<String> {
        let at = el.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(el[at..].split('"').next()?.to_string())
    };
    // Thick polylines: the two curves (a point per size) and the two legend
    // strokes (two points), a colour each for put and get.
    let thick: Vec<&str> = s
        .lines()
        .filter(|l| l.starts_with("<polyline") && l.contains("stroke-width=\"2\""))
        .collect();
    let curves: Vec<&&str> = thick
        .iter()
        .filter(|l| attr(l, "points").is_some_and(|p| p.split_whitespace().count() > 2))
        .collect();
    assert_eq!((thick.len(), curves.len()), (4, 2), "{s}");
    assert_ne!(attr(curves[0], "stroke"), attr(curves[1], "stroke"), "{s}");
    for line in &curves {
        let points = attr(line, "points").expect("points attribute");
        assert_eq!(points.split_whitespace().count(), sizes().len(), "{line}");
        for p in points.split_whitespace() {
            let (x, y) = p.split_once(',').expect("x,y");
            let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
            assert!(
                (0.0..=760.0).contains(&x) && (0.0..=460.0).contains(&y),
                "{p}"
            );
        }
    }
    assert_eq!(s.matches("<circle").count(), 2 * sizes().len());
    let texts: Vec<&str> = s
        .split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split("</text>").next()?.trim()))
        .collect();
    for text in ["put", "get", "8", "64K"] {
        assert!(
            texts.contains(&text),
            "no text {text:?} in the SVG: {texts:?}"
        );
    }
    for text in ["message size", "MB/s"] {
        assert!(
            texts.iter().any(|t| t.contains(text)),
            "no {text:?} in the SVG"
        );
    }
}

#[test]
fn only_selects_tests() {
    let dir = Scratch::new("osuonly");
    let csv = dir.0.join("osu.csv");
    let osu = bin("osu");
    let out = oshrun(&[
        "-n".as_ref(),
        "2".as_ref(),
        osu.as_os_str(),
        "--iters=10".as_ref(),
        "--max-size=16".as_ref(),
        "--only=pingpong,barrier".as_ref(),
        "--csv".as_ref(),
        csv.as_os_str(),
    ]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    let rows = parse_csv(&std::fs::read_to_string(&csv).expect("CSV written"));
    let names: Vec<(&str, usize)> = rows.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(
        names,
        [("pingpong", 8), ("pingpong", 16), ("barrier", 0)],
        "{rows:?}"
    );
}

#[test]
fn bad_arguments_are_usage_errors() {
    for args in [
        &["--max-size", "100"][..],
        &["--iters", "0"],
        &["--only", "nope"],
        &["--bogus"],
        &["--csv"],
    ] {
        let out = run(Command::new(bin("osu")).args(args), Duration::from_secs(30));
        // clap's usage error: status 2, naming the argument and its value.
        assert_eq!(out.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.starts_with("error:"), "{args:?}: {out:?}");
        for word in args {
            assert!(out.stderr.contains(word), "{args:?}: {out:?}");
        }
    }
}

#[test]
fn needs_two_pes() {
    let out = oshrun(&["-n".as_ref(), "1".as_ref(), bin("osu").as_os_str()]);
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(out.stderr.contains("at least 2 PEs"), "{out:?}");
}

/// `floor --udp`: every benchmark op at every size, positive and finite;
/// `bench-report` accepts it beside a benchmark run and writes both plots.
#[test]
fn udp_floor_prints_every_size_and_bench_report_reads_it() {
    let out = run(
        Command::new(bin("floor"))
            .arg("--udp")
            .env("FSHMEM_BENCH_TRIALS", "1"),
        Duration::from_secs(120),
    );
    assert_eq!(out.code(), Some(0), "{out:?}");
    let mut seen = Vec::new();
    for l in out.stdout.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 4, "bad line {l:?}");
        let size: usize = f[1].parse().unwrap_or_else(|_| panic!("size in {l:?}"));
        for v in &f[2..] {
            let v: f64 = v.parse().unwrap_or_else(|_| panic!("value in {l:?}"));
            assert!(v.is_finite() && v > 0.0, "value in {l:?}");
        }
        seen.push((f[0].to_string(), size));
    }
    let lat = (3..=16).map(|k| 1usize << k);
    let bw = (0..6).map(|k| 4096usize << (2 * k));
    let mut want: Vec<(String, usize)> = Vec::new();
    for n in lat {
        want.push(("put_lat".into(), n));
        want.push(("get_lat".into(), n));
    }
    for n in bw {
        want.push(("put_bw".into(), n));
        want.push(("get_bw".into(), n));
    }
    assert_eq!(seen, want, "{}", out.stdout);

    let dir = Scratch::new("floor");
    let floor = dir.0.join("floor.txt");
    std::fs::write(&floor, &out.stdout).expect("write floor run");
    // A run twice as slow as the floor everywhere.
    let slow: String = out
        .stdout
        .lines()
        .map(|l| {
            let f: Vec<f64> = l
                .split_whitespace()
                .skip(2)
                .map(|v| v.parse().unwrap())
                .collect();
            let (op, size) = {
                let mut it = l.split_whitespace();
                (it.next().unwrap(), it.next().unwrap())
            };
            format!("{op} {size} {} {}\n", f[0] * 2.0, f[1] / 2.0)
        })
        .collect();
    let run_file = dir.0.join("run.txt");
    std::fs::write(&run_file, slow).expect("write run");
    let rep = run(
        Command::new(bin("bench-report")).args([
            "--out".into(),
            dir.0.join("report").into_os_string(),
            format!("run={}", run_file.display()).into(),
            format!("udp-floor={}", floor.display()).into(),
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(rep.code(), Some(0), "{rep:?}");
    assert!(
        rep.stdout.contains("| put_lat | 8 B |") && rep.stdout.contains(" 2.00 |"),
        "{rep:?}"
    );
    for f in ["table.md", "latency.svg", "bandwidth.svg"] {
        assert!(dir.0.join("report").join(f).is_file(), "{f} missing");
    }
}
