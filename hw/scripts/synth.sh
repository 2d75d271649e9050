#!/usr/bin/env bash
# Synthesises the core's top with Yosys (generic cells; the RAM primitive
# fs_sdp_ram is kept as a black box) and prints the cell counts, also left
# in hw/build/synth_stat.txt. Usage: hw/scripts/synth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v yosys >/dev/null || { echo "synth.sh: yosys is missing (apt-get install yosys)" >&2; exit 1; }
mkdir -p build
yosys -q -l build/synth.log scripts/synth.ys
grep -E "Number of cells|\\\$_|fs_sdp_ram" build/synth_stat.txt
