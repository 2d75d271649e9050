//! The layering the design promises, checked on the built artefacts: the
//! host library does not contain the board model, and whatever starts
//! devsim boards says clearly when the simulator is missing; and on the
//! sources: no crate's top-level modules import each other in a loop.

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

/// Rust source with comments, string literals and character literals
/// blanked out (newlines kept), so that only code is searched for paths.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_'))
        {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                match b.get(j) {
                    None => break,
                    Some('"') if (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) => {
                        j += 1 + hashes;
                        break;
                    }
                    Some(&ch) => {
                        blank(&mut out, ch);
                        j += 1;
                    }
                }
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if let Some(&ch) = b.get(i) {
                    blank(&mut out, ch);
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' && next == Some('\\') {
            // An escaped character literal.
            i += 2;
            while i < b.len() && b[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The paths a source text names from `crate`, `super` or `self`, each
/// resolved against the module path of the file (`file_mod`) and of the
/// inline `mod x { .. }` blocks around it; `use` groups (`crate::a::{b,
/// c::{d, e}}`, across lines) are expanded into one path per leaf.
fn named_paths(code: &str, file_mod: &[String]) -> Vec<Vec<String>> {
    #[derive(Debug, PartialEq)]
    enum Tok {
        Ident(String),
        Sep,
        Open,
        Close,
        Comma,
        Star,
        Other(char),
    }
    let chars: Vec<char> = code.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let s: String = chars[i..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .collect();
            i += s.chars().count();
            toks.push(Tok::Ident(s));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            toks.push(Tok::Sep);
            i += 2;
        } else {
            toks.push(match c {
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                '*' => Tok::Star,
                c => Tok::Other(c),
            });
            i += 1;
        }
        while chars.get(i).is_some_and(|c| c.is_whitespace()) {
            i += 1;
        }
    }
    // Expands the path tree starting at toks[at] (after a `::`) onto
    // `prefix`; returns the index past it.
    fn tree(toks: &[Tok], mut at: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
        let mut path = prefix.to_vec();
        loop {
            match toks.get(at) {
                Some(Tok::Ident(s)) => {
                    path.push(s.clone());
                    at += 1;
                    if toks.get(at) == Some(&Tok::Sep) {
                        at += 1;
                        continue;
                    }
                    out.push(path);
                    return at;
                }
                Some(Tok::Open) => {
                    at += 1;
                    loop {
                        match toks.get(at) {
                            Some(Tok::Close) => return at + 1,
                            Some(Tok::Comma) => at += 1,
                            None => return at,
                            Some(Tok::Ident(s)) if s == "self" => {
                                out.push(path.clone());
                                at += 1;
                            }
                            Some(_) => {
                                let next = tree(toks, at, &path, out);
                                // `x as y`: the rename is not a path.
                                at = if toks.get(next) == Some(&Tok::Ident("as".into())) {
                                    next + 2
                                } else {
                                    next.max(at + 1)
                                };
                            }
                        }
                    }
                }
                Some(Tok::Star) => {
                    out.push(path);
                    return at + 1;
                }
                _ => {
                    out.push(path);
                    return at;
                }
            }
        }
    }
    let mut out = Vec::new();
    // Inline modules: (name, brace depth at which its block opened).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<String> = None;
    let mut k = 0;
    while k < toks.len() {
        let prev_sep = k > 0 && toks[k - 1] == Tok::Sep;
        match &toks[k] {
            Tok::Open => {
                depth += 1;
                if let Some(m) = pending_mod.take() {
                    inline.push((m, depth));
                }
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(s) if s == "mod" => {
                if let Some(Tok::Ident(name)) = toks.get(k + 1) {
                    pending_mod = (toks.get(k + 2) == Some(&Tok::Open)).then(|| name.clone());
                }
            }
            Tok::Ident(s)
                if !prev_sep
                    && matches!(s.as_str(), "crate" | "super" | "self")
                    && toks.get(k + 1) == Some(&Tok::Sep) =>
            {
                // The module this text is in.
                let mut here: Vec<String> = file_mod.to_vec();
                here.extend(inline.iter().map(|(m, _)| m.clone()));
                let mut base = match s.as_str() {
                    "crate" => Vec::new(),
                    "self" => here,
                    _ => {
                        here.pop();
                        here
                    }
                };
                let mut at = k + 2;
                // More `super::` steps up.
                while toks.get(at) == Some(&Tok::Ident("super".into()))
                    && toks.get(at + 1) == Some(&Tok::Sep)
                {
                    base.pop();
                    at += 2;
                }
                let before = out.len();
                let end = tree(&toks, at, &base, &mut out);
                if out.len() == before {
                    out.push(base);
                }
                k = end.max(k + 1);
                continue;
            }
            _ => {}
        }
        k += 1;
    }
    out
}

/// The names `lib.rs` brings into the crate root from a module (`pub use
/// m::Name`, `use m::{A, B}`, and every `pub` item of `m` for `pub use
/// m::*`), with that module.
fn root_reexports(
    src: &std::path::Path,
    modules: &std::collections::BTreeSet<String>,
) -> std::collections::BTreeMap<String, String> {
    let mut map = std::collections::BTreeMap::new();
    let Ok(lib) = std::fs::read_to_string(src.join("lib.rs")) else {
        return map;
    };
    let code = code_only(&lib);
    // `use` items of the root: rewrite `use m::..` as `crate::m::..` to
    // reuse the path parser (only the root's own modules count).
    let mut rooted = String::new();
    for stmt in code.split(';') {
        let t = stmt.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t).trim_start();
        if let Some(rest) = t.strip_prefix("use ") {
            rooted.push_str(&format!("crate::{};\n", rest.trim()));
        }
    }
    for p in named_paths(&rooted, &[]) {
        let (Some(m), Some(last)) = (p.first(), p.last()) else {
            continue;
        };
        if !modules.contains(m) {
            continue;
        }
        if p.len() == 1 {
            // A glob re-export: every `pub` item the module's file declares.
            let file = [src.join(format!("{m}.rs")), src.join(m).join("mod.rs")]
                .into_iter()
                .find(|f| f.is_file());
            let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) else {
                continue;
            };
            let code = code_only(&text);
            let words: Vec<&str> = code.split_whitespace().collect();
            for w in words.windows(3) {
                if w[0] == "pub"
                    && matches!(
                        w[1],
                        "struct" | "enum" | "const" | "type" | "fn" | "trait" | "static"
                    )
                {
                    let name: String = w[2]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    map.insert(name, m.clone());
                }
            }
        } else {
            map.insert(last.clone(), m.clone());
        }
    }
    map
}

/// The top-level modules each top-level module of crate `src` refers to:
/// through `crate::`, `super::` and `self::` paths resolved from the file
/// and inline module they appear in (so `super::x` in `src/a/b.rs` is
/// `crate::a::x`, and `crate::a::b::C` counts as module `a`), `use` groups
/// expanded across lines, and names the crate root re-exports from a
/// module counting as that module. Comments and strings are ignored;
/// `lib.rs` (the root) and binaries are not modules.
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
    // The module path of a file: src/a.rs and src/a/mod.rs are [a],
    // src/a/b.rs is [a, b]; None for the root and binaries.
    let module_of = |p: &std::path::Path| -> Option<Vec<String>> {
        let rel = p.strip_prefix(src).ok()?;
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = parts.pop()?;
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" {
            parts.push(stem);
        }
        let first = parts.first()?;
        (!matches!(first.as_str(), "lib" | "main" | "bin")).then_some(parts)
    };
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|p| module_of(p)?.first().cloned())
        .collect();
    let reexports = root_reexports(src, &modules);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let Some(m) = module_of(f) else { continue };
        let me = m[0].clone();
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        for path in named_paths(&code, &m) {
            let Some(first) = path.first() else { continue };
            let target = if modules.contains(first) {
                first.clone()
            } else if let Some(owner) = reexports.get(first) {
                owner.clone()
            } else {
                continue;
            };
            if target != me {
                graph.entry(me.clone()).or_default().insert(target);
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

#[test]
fn the_import_graph_sees_use_groups_submodules_and_reexports() {
    let c = code_only(
        "let s = \"crate::a\"; // crate::b\n/* crate::c /* nested */ */ let q = '\"';\n\
         let r = r#\"crate::f\"#; let l: &'static str = crate::d::E;",
    );
    for hidden in ["crate::a", "crate::b", "crate::c", "crate::f"] {
        assert!(!c.contains(hidden), "{hidden} in {c:?}");
    }
    assert!(c.contains("crate::d::E") && c.contains("'static"), "{c:?}");
    assert_eq!(c.lines().count(), 3, "line breaks are kept: {c:?}");

    let code = "use crate::{\n    a::{X, b::{Y as Z, self}},\n    c,\n};\n\
                use super::super::d::W;\nfn f() { self::e::g(); }\n\
                #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::h::I;\n}\n\
                fn k() { super::j(); }";
    let v = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let paths = named_paths(&code_only(code), &v(&["m", "n"]));
    for want in [
        v(&["a", "X"]),
        v(&["a", "b", "Y"]),
        v(&["a", "b"]),
        v(&["c"]),
        v(&["d", "W"]),
        v(&["m", "n", "e", "g"]),
        v(&["m", "n"]),
        v(&["m", "n", "h", "I"]),
        v(&["m", "j"]),
    ] {
        assert!(paths.contains(&want), "{want:?} not in {paths:?}");
    }
    assert!(
        !paths.iter().any(|p| p.contains(&"Z".to_string())),
        "{paths:?}"
    );

    // A crate whose loop only shows through a multi-line use group, a
    // submodule's `super::super::` and a name the root re-exports by glob.
    let dir = std::env::temp_dir().join(unique_job_id("layering"));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod c;\npub use a::*;\npub use c::{Cee, Other};\n",
    );
    write("a.rs", "use crate::{\n    b::Bee,\n};\npub struct Glob;\n");
    write("b/mod.rs", "mod inner;\npub struct Bee;\n");
    write("b/inner.rs", "use super::super::c::Cee;\n");
    write(
        "c.rs",
        "pub struct Cee;\npub struct Other;\nfn f() -> crate::Glob { todo!() }\n",
    );
    let g = module_graph(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let edges = |m: &str| g.get(m).cloned().unwrap_or_default();
    assert_eq!(edges("a"), ["b"], "{g:?}");
    assert_eq!(edges("b"), ["c"], "{g:?}");
    assert_eq!(edges("c"), ["a"], "{g:?}");
    let cycle = find_cycle(&g).expect("the loop a -> b -> c -> a");
    assert_eq!(cycle.len(), 4, "{cycle:?}");
}
