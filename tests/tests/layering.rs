//! The layering the design promises, checked on the built artefacts: the
//! host library does not contain the board model, and whatever starts
//! devsim boards says clearly when the simulator is missing.

use fshmem_tests::{bin, oshrun_cmd, profile_dir, run, unique_job_id};
use std::process::Command;
use std::time::Duration;

/// The symbols `nm` lists for `lib` with `args`.
fn symbols(lib: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new("nm")
        .args(args)
        .arg(lib)
        .output()
        .expect("nm (binutils) runs");
    assert!(
        out.status.success(),
        "nm {args:?} {}: {out:?}",
        lib.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn libshmem_contains_no_board_model() {
    let so = profile_dir().join("libshmem.so");
    assert!(
        so.is_file(),
        "{} missing: cargo build --release --workspace",
        so.display()
    );
    // The dynamic symbols a C program links against, and the whole symbol
    // table (the build keeps it: debug = 1), demangled.
    for args in [&["-D", "-C"][..], &["-C"][..]] {
        let syms = symbols(&so, args);
        assert!(
            syms.lines().count() > 100,
            "nm {args:?} listed too little: {syms}"
        );
        for needle in ["devsim", "BoardModel", "GemmCore", "ReliableLink"] {
            let hits: Vec<&str> = syms
                .lines()
                .filter(|l| l.to_lowercase().contains(&needle.to_lowercase()))
                .take(5)
                .collect();
            assert!(
                hits.is_empty(),
                "nm {args:?} libshmem.so shows {needle}: {hits:?}"
            );
        }
    }
    // The reliable transport lives in gasnet-core: present once, not twice.
    let syms = symbols(&so, &["-C"]);
    assert!(
        syms.contains("gasnet_core::reliable::Transport"),
        "the ipv6 conduit runs gasnet-core's reliable transport"
    );
    assert!(!syms.contains("conduits::ipv6::reliable"));
}

#[test]
fn a_missing_board_simulator_is_named() {
    // FSHMEM_DEVSIM naming nothing.
    let out = run(
        oshrun_cmd(&["-n", "2", "--conduit", "fpga", "true"])
            .env("FSHMEM_DEVSIM", "/nonexistent/devsim"),
        Duration::from_secs(60),
    );
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("FSHMEM_DEVSIM=/nonexistent/devsim names no file"),
        "{out:?}"
    );
    // An oshrun with no devsim beside it and none on PATH.
    let dir = std::env::temp_dir().join(unique_job_id("nodevsim"));
    std::fs::create_dir_all(&dir).unwrap();
    let lone = dir.join("oshrun");
    std::fs::copy(bin("oshrun"), &lone).unwrap();
    let out = run(
        Command::new(&lone)
            .args(["-n", "2", "--conduit", "fpga", "true"])
            .env("PATH", &dir)
            .env_remove("FSHMEM_DEVSIM"),
        Duration::from_secs(60),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_ne!(out.code(), Some(0), "{out:?}");
    assert!(
        out.stderr.contains("the devsim board simulator is missing")
            && out.stderr.contains("cargo build --release -p devsim"),
        "{out:?}"
    );
}

/// The modules each top-level module of crate `src` refers to through
/// `crate::` (or `super::` at the top level), comments ignored.
fn module_graph(src: &std::path::Path) -> std::collections::BTreeMap<String, Vec<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    let top = |p: &std::path::Path| -> Option<String> {
        let rel = p.strip_prefix(src).ok()?;
        let first = rel
            .components()
            .next()?
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let name = first.trim_end_matches(".rs").to_string();
        (!matches!(name.as_str(), "lib" | "main" | "bin")).then_some(name)
    };
    let modules: BTreeSet<String> = files.iter().filter_map(|p| top(p)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let Some(me) = top(f) else { continue };
        let at_top = f.parent() == Some(src);
        let text = std::fs::read_to_string(f).unwrap();
        for line in text
            .lines()
            .map(str::trim_start)
            .filter(|l| !l.starts_with("//"))
        {
            let mut refs = Vec::new();
            for (prefix, ok) in [("crate::", true), ("super::", at_top)] {
                if !ok {
                    continue;
                }
                for (i, _) in line.match_indices(prefix) {
                    let rest = &line[i + prefix.len()..];
                    if let Some(inner) = rest.strip_prefix('{') {
                        let inner = inner.split('}').next().unwrap_or("");
                        refs.extend(
                            inner
                                .split(',')
                                .map(|s| s.trim().split("::").next().unwrap_or("").to_string()),
                        );
                    } else {
                        let name: String = rest
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        refs.push(name);
                    }
                }
            }
            for r in refs {
                if r != me && modules.contains(&r) {
                    graph.entry(me.clone()).or_default().insert(r);
                }
            }
        }
    }
    graph
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect()
}

/// A cycle of `graph`, if it has one.
fn find_cycle(graph: &std::collections::BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &std::collections::BTreeMap<String, Vec<String>>,
        state: &mut std::collections::BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(1) => {
                let at = path.iter().position(|p| p == n).unwrap_or(0);
                let mut c = path[at..].to_vec();
                c.push(n.to_string());
                return Some(c);
            }
            Some(2) => return None,
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = std::collections::BTreeMap::new();
    for n in graph.keys() {
        if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
            return Some(c);
        }
    }
    None
}

#[test]
fn no_crate_has_an_import_loop_between_its_modules() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["gasnet-core", "conduits", "devsim", "shmem"] {
        let g = module_graph(&root.join(krate).join("src"));
        assert!(
            g.len() > 2 || krate == "devsim",
            "{krate}: read too little: {g:?}"
        );
        if let Some(c) = find_cycle(&g) {
            panic!(
                "{krate}: modules import each other in a loop: {}",
                c.join(" -> ")
            );
        }
    }
}
