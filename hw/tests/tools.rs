//! The RTL passes the hardware tools: `verilator --lint-only -Wall` reports
//! nothing (hw/scripts/lint.sh), and Yosys synthesises the top into generic
//! cells (hw/scripts/synth.sh) with the block RAMs left as the black boxes a
//! vendor flow maps. Both tools come with the `verilator` feature's setup
//! (scripts/test.sh installs them).
#![cfg(feature = "verilator")]

use std::path::PathBuf;
use std::process::Command;

fn hw() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(script: &str, out_dir: &std::path::Path) -> (bool, String) {
    let out = Command::new("bash")
        .arg(hw().join("scripts").join(script))
        .env("FSHMEM_HW_BUILD", out_dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run hw/scripts/{script}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn verilator_lint_is_clean() {
    let dir = std::env::temp_dir().join(format!("fshmem-hw-lint-{}", std::process::id()));
    let (ok, text) = run("lint.sh", &dir);
    assert!(ok, "verilator --lint-only -Wall reported:\n{text}");
    assert!(
        !text.contains("%Warning") && !text.contains("%Error"),
        "lint printed diagnostics:\n{text}"
    );
}

#[test]
fn yosys_synthesises_the_top() {
    let dir = std::env::temp_dir().join(format!("fshmem-hw-synth-{}", std::process::id()));
    let (ok, text) = run("synth.sh", &dir);
    let stat = std::fs::read_to_string(dir.join("synth_stat.txt")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ok, "yosys failed:\n{text}");
    assert!(
        stat.contains("=== fshmem_core ==="),
        "no statistics for the top:\n{stat}"
    );
    let count = |key: &str| -> u64 {
        stat.lines()
            .find_map(|l| {
                let l = l.trim();
                l.strip_prefix(key)
                    .and_then(|rest| rest.trim().parse().ok())
            })
            .unwrap_or_else(|| panic!("no `{key}` line in:\n{stat}"))
    };
    let cells = count("Number of cells:");
    // The RAMs (transmit and receive frame buffers) stay black boxes.
    let rams = count("fs_sdp_ram");
    assert!(
        rams > 0,
        "no fs_sdp_ram instance survived synthesis:\n{stat}"
    );
    // Flip-flops and logic both present: the design was not optimised away.
    let flops: u64 = stat
        .lines()
        .filter(|l| l.contains("DFF"))
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum();
    assert!(
        flops > 1000 && cells > flops,
        "implausible netlist ({cells} cells, {flops} flip-flops):\n{stat}"
    );
    eprintln!("yosys: {cells} cells, {flops} flip-flops, {rams} RAM blocks");
}
