//! With the `verilator` feature: verilates `rtl/fshmem_core.v` and compiles
//! the model with its C ABI (`sim/fs_model.cpp`) into a static library.
//! Without it: nothing (the crate then has no model and says so).

fn main() {
    println!("cargo:rerun-if-changed=rtl");
    println!("cargo:rerun-if-changed=sim");
    println!("cargo:rerun-if-env-changed=VERILATOR");
    #[cfg(feature = "verilator")]
    build_model();
}

#[cfg(feature = "verilator")]
fn build_model() {
    use std::path::PathBuf;
    use std::process::Command;
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let verilator = std::env::var("VERILATOR").unwrap_or_else(|_| "verilator".into());
    let rtl = manifest.join("rtl");
    let obj = out.join("vobj");
    let _ = std::fs::remove_dir_all(&obj);

    let root = match Command::new(&verilator)
        .args(["--getenv", "VERILATOR_ROOT"])
        .output()
    {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        Ok(o) => fail(&format!(
            "`{verilator} --getenv VERILATOR_ROOT` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => fail(&format!(
            "cannot run `{verilator}` ({e}); the `verilator` feature of fshmem-hw needs \
             Verilator 5 (Debian: apt-get install verilator), or set VERILATOR to its path"
        )),
    };

    let mut sources: Vec<PathBuf> = std::fs::read_dir(&rtl)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", rtl.display())))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "v"))
        .collect();
    sources.sort();
    let status = Command::new(&verilator)
        .args([
            "--cc",
            "-O3",
            "--x-assign",
            "fast",
            "--x-initial",
            "fast",
            "--noassert",
        ])
        .args(["-Wno-fatal", "-Wno-lint", "-Wno-style"])
        .arg(format!("-I{}", rtl.display()))
        .args(["--top-module", "fshmem_core", "--Mdir"])
        .arg(&obj)
        .args(&sources)
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run {verilator}: {e}")));
    if !status.success() {
        fail("verilator failed on hw/rtl (run hw/scripts/lint.sh for the messages)");
    }

    let include = root.join("include");
    let mut b = cc::Build::new();
    b.cpp(true)
        .std("c++17")
        .opt_level(2)
        .warnings(false)
        .flag_if_supported("-faligned-new")
        .flag_if_supported("-fno-var-tracking-assignments")
        .define("VM_TRACE", "0")
        .define("VL_THREADED", "1")
        .include(&obj)
        .include(&include)
        .include(include.join("vltstd"))
        .include(manifest.join("sim"))
        .file(manifest.join("sim/fs_model.cpp"))
        .file(include.join("verilated.cpp"))
        .file(include.join("verilated_threads.cpp"));
    let mut generated: Vec<PathBuf> = std::fs::read_dir(&obj)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", obj.display())))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .collect();
    generated.sort();
    for f in &generated {
        b.file(f);
    }
    b.compile("fshmem_model");
    println!("cargo:rustc-link-lib=pthread");
}

#[cfg(feature = "verilator")]
fn fail(msg: &str) -> ! {
    eprintln!("error: fshmem-hw: {msg}");
    std::process::exit(1);
}
