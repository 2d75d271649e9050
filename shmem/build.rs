//! Build script of `shmem`: the export list of `libshmem.so`.
//!
//! The C routines are exported as `pshmem_*` with the standard names as
//! weak aliases defined in assembly (`src/capi/mod.rs`, the profiling
//! interface). rustc's own version script lists only the symbols it
//! defines, so the aliases would stay local; this adds a second version
//! script, which GNU ld merges with rustc's, naming them global.

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let map = std::path::Path::new(&out).join("shmem-exports.map");
    let names = [
        "shmem_*",
        "shmemx_*",
        "start_pes",
        "_my_pe",
        "_num_pes",
        "my_pe",
        "num_pes",
        "shmalloc",
        "shfree",
        "shrealloc",
        "shmemalign",
    ];
    let body = format!("{{\n  global:\n    {};\n}};\n", names.join(";\n    "));
    std::fs::write(&map, body).expect("write the export list");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    println!("cargo:rerun-if-changed=build.rs");
}
