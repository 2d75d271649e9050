#!/usr/bin/env bash
# Synthesises the core with Yosys (scripts/synth.ys: generic cells, the
# hierarchy kept, the RAM primitive fs_sdp_ram a black box) and prints the
# cell and flip-flop counts of each module, as a tree of the hierarchy, and
# of the whole core. Yosys's full report is left in
# $FSHMEM_HW_BUILD/synth_stat.txt (default hw/build, not versioned) with the
# log beside it. Usage: hw/scripts/synth.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v yosys >/dev/null || { echo "synth.sh: yosys is missing (apt-get install yosys)" >&2; exit 1; }
out=${FSHMEM_HW_BUILD:-build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
yosys -q -l "$out/synth.log" -p "script scripts/synth.ys; tee -q -o $out/synth_stat.txt stat" >/dev/null
# The report has one section a module (its own cells: gates, flip-flops
# ($_*DFF*_) and instances of other modules), then "design hierarchy": the
# tree of instances and the counts of the whole core.
awk '
    function short(m) { sub(/^\$paramod(\$[0-9a-f]+)?\\/, "", m); sub(/\\.*/, "", m); return m }
    /^=== design hierarchy ===/ { tree = 1; next }
    /^=== / { mod = $2; next }
    !tree && /Number of cells:/ { cells[mod] = $NF; next }
    !tree && $1 ~ /^\$_.*DFF.*_$/ { ff[mod] += $2; next }
    tree && /Number of wires:/ { tree = 2; next }
    tree == 1 && NF == 1 && $1 != "" { order[++n] = $1; depth[n] = 0; cnt[n] = 1; next }
    tree == 1 && NF == 2 { match($0, /^ */); order[++n] = $1; depth[n] = RLENGTH; cnt[n] = $2; next }
    tree == 2 && /Number of cells:/ { total = $NF; next }
    tree == 2 && $1 ~ /^\$_.*DFF.*_$/ { totff += $2; next }
    tree == 2 && $1 == "fs_sdp_ram" { rams = $2; next }
    END {
        printf "%-36s %8s %11s   (one instance; xN: instances in its parent)\n", "module", "cells", "flip-flops"
        base = depth[1]
        for (i = 1; i <= n; i++) {
            name = sprintf("%*s%s x%d", depth[i] - base, "", short(order[i]), cnt[i])
            printf "%-36s %8d %11d\n", name, cells[order[i]], ff[order[i]]
        }
        printf "whole core: %d cells, %d flip-flops, %d fs_sdp_ram black boxes\n", total, totff, rams
        if (total == 0) exit 1
    }' "$out/synth_stat.txt"
