//! The RTL passes Verilator's lint: `verilator --lint-only -Wall` reports
//! nothing (hw/scripts/lint.sh). Yosys synthesis (hw/scripts/synth.sh, about
//! three minutes of one core) is checked by scripts/test.sh, beside the rest of
//! the suite.
#![cfg(feature = "verilator")]

use std::path::PathBuf;
use std::process::Command;

fn hw() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(script: &str) -> (bool, String) {
    let out = Command::new("bash")
        .arg(hw().join("scripts").join(script))
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
    let (ok, text) = run("lint.sh");
    assert!(ok, "verilator --lint-only -Wall reported:\n{text}");
    assert!(
        !text.contains("%Warning") && !text.contains("%Error"),
        "lint printed diagnostics:\n{text}"
    );
}
