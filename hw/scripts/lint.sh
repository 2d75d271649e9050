#!/usr/bin/env bash
# Lints hw/rtl with Verilator's full warning set; exits non-zero on any
# warning. Usage: hw/scripts/lint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v verilator >/dev/null || { echo "lint.sh: verilator is missing (apt-get install verilator)" >&2; exit 1; }
verilator --lint-only -Wall -Irtl --top-module fshmem_core rtl/*.v
echo "lint.sh: verilator --lint-only -Wall: clean"
