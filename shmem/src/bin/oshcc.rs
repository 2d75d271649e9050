//! `oshcc`: compiles and links OpenSHMEM C programs against fshmem.
//!
//! Runs the system C compiler (`$FSHMEM_CC`, default `cc`) with the
//! arguments given, adding the include directory of `shmem.h` and, when
//! linking, `-L<lib> -Wl,-rpath,<lib> -lshmem` and the system libraries
//! libshmem needs. `oshcxx` (installed also as `oshc++`) does the same with
//! the C++ compiler (`$FSHMEM_CXX`, default `c++`).
//!
//! The directories are found from the location of the executable: in an
//! installed prefix (`PREFIX/bin/oshcc`), `PREFIX/include` and
//! `PREFIX/lib`; in the build tree (`target/<profile>/oshcc`), the
//! profile directory (which holds `libshmem.so` and `libshmem.a`) and the
//! source tree's `shmem/include`.
//!
//! Options of its own (removed before the compiler runs):
//! - `-show`, `--showme`: print the command instead of running it;
//! - `--showme:compile`, `--showme:link`: print only the flags added for
//!   compiling or for linking (for configure scripts);
//! - `-static-shmem`: link `libshmem.a` instead of `libshmem.so`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Where the header and the library are.
struct Dirs {
    include: PathBuf,
    lib: PathBuf,
}

fn dirs() -> Result<Dirs, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let bin = exe.parent().ok_or("the executable has no directory")?;
    if let Some(prefix) = bin.parent()
        && prefix.join("include/shmem.h").is_file()
    {
        return Ok(Dirs {
            include: prefix.join("include"),
            lib: prefix.join("lib"),
        });
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    if source.join("shmem.h").is_file() {
        return Ok(Dirs {
            include: source,
            lib: bin.to_path_buf(),
        });
    }
    Err(format!(
        "cannot find shmem.h next to {} (expected PREFIX/include or {})",
        exe.display(),
        source.display()
    ))
}

/// Whether the arguments ask for no link step.
fn compile_only(args: &[OsString]) -> bool {
    args.iter().any(|a| {
        matches!(
            a.to_str(),
            Some("-c" | "-S" | "-E" | "-M" | "-MM" | "--version" | "-v" | "-dumpversion")
        )
    })
}

/// Runs the compiler (the entry point of `oshcc` and `oshcxx`).
pub fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let name = Path::new(&argv0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cxx = name.contains("++") || name.contains("cxx");
    let (var, default) = if cxx {
        ("FSHMEM_CXX", "c++")
    } else {
        ("FSHMEM_CC", "cc")
    };
    let compiler = std::env::var_os(var).unwrap_or_else(|| default.into());
    let dirs = match dirs() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut show = None;
    let mut static_lib = false;
    let mut args = Vec::new();
    for a in std::env::args_os().skip(1) {
        match a.to_str() {
            Some("-show" | "--showme" | "-showme") => show = Some("all"),
            Some("--showme:compile" | "-showme:compile") => show = Some("compile"),
            Some("--showme:link" | "-showme:link") => show = Some("link"),
            Some("-static-shmem") => static_lib = true,
            _ => args.push(a),
        }
    }
    let compile_flags: Vec<OsString> = vec![format!("-I{}", dirs.include.display()).into()];
    let lib = dirs.lib.display().to_string();
    let mut link_flags: Vec<OsString> = if static_lib {
        vec![dirs.lib.join("libshmem.a").into()]
    } else {
        vec![
            format!("-L{lib}").into(),
            format!("-Wl,-rpath,{lib}").into(),
            "-lshmem".into(),
        ]
    };
    link_flags.extend(["-lpthread", "-ldl", "-lm"].map(OsString::from));
    let join = |v: &[OsString]| {
        v.iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    match show {
        Some("compile") => {
            println!("{}", join(&compile_flags));
            return ExitCode::SUCCESS;
        }
        Some("link") => {
            println!("{}", join(&link_flags));
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let mut full = compile_flags;
    full.extend(args.iter().cloned());
    if !compile_only(&args) && !args.is_empty() {
        full.extend(link_flags);
    }
    if show.is_some() {
        println!("{} {}", compiler.to_string_lossy(), join(&full));
        return ExitCode::SUCCESS;
    }
    match Command::new(&compiler).args(&full).status() {
        Ok(st) => ExitCode::from(st.code().unwrap_or(1).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("{name}: cannot run {}: {e}", compiler.to_string_lossy());
            ExitCode::from(127)
        }
    }
}
