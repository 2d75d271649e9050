#!/usr/bin/env bash
# Synthesises the core's top with Yosys (generic cells; the RAM primitive
# fs_sdp_ram is kept as a black box) and prints the cell counts, also left
# in $FSHMEM_HW_BUILD/synth_stat.txt (default hw/build, not versioned) with
# the full log beside it. Usage: hw/scripts/synth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v yosys >/dev/null || { echo "synth.sh: yosys is missing (apt-get install yosys)" >&2; exit 1; }
out=${FSHMEM_HW_BUILD:-build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
yosys -q -l "$out/synth.log" -p "script scripts/synth.ys; tee -q -o $out/synth_stat.txt stat" >/dev/null
grep -E "Number of cells|\\\$_|fs_sdp_ram" "$out/synth_stat.txt"
