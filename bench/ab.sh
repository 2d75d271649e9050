#!/bin/sh
# Two builds of fshmem side by side: the osu benchmark of build A and of
# build B, run alternately RUNS times on the same machine, each under its
# own oshrun; then, per test and size, the median over the runs of A, of B,
# and of the ratio B/A taken within each run (A and B ran seconds apart).
#
#   bench/ab.sh /work/baseline/target/release target/release
#   CONDUIT=ipv6 RUNS=9 bench/ab.sh OLD/target/release NEW/target/release
#
# Environment: RUNS (default 7), ITERS (osu --iters, default 20000), ONLY
# (osu --only, default put,get,pingpong,atomic), MAX (osu --max-size,
# default 64K), CONDUIT (oshrun --conduit, default smp), NP (PEs, 2).
# Latencies are in us (ratio < 1: B is faster), rates and bandwidths in
# MB/s or Mops/s (ratio > 1: B is faster). Check the load line it prints:
# other work on the machine moves both columns, not their ratio.
set -eu
A=${1:?usage: bench/ab.sh A_RELEASE_DIR B_RELEASE_DIR}
B=${2:?usage: bench/ab.sh A_RELEASE_DIR B_RELEASE_DIR}
RUNS=${RUNS:-7}
ITERS=${ITERS:-20000}
ONLY=${ONLY:-put,get,pingpong,atomic}
MAX=${MAX:-64K}
CONDUIT=${CONDUIT:-smp}
NP=${NP:-2}
T=${T:-300}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fshmem-ab.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

for d in "$A" "$B"; do
    for f in oshrun osu; do
        [ -x "$d/$f" ] || { echo "ab.sh: $d/$f is missing (cargo build --release --workspace)" >&2; exit 1; }
    done
done

echo "A = $A"
echo "B = $B"
echo "conduit $CONDUIT, $NP PEs, $RUNS alternating runs, osu --iters $ITERS --only $ONLY --max-size $MAX"
echo "load: $(uptime)"
r=1
while [ "$r" -le "$RUNS" ]; do
    for side in A B; do
        if [ "$side" = A ]; then d=$A; else d=$B; fi
        timeout "$T" "$d/oshrun" -n "$NP" --conduit "$CONDUIT" "$d/osu" --iters "$ITERS" \
            --max-size "$MAX" --only "$ONLY" --csv "$OUT/run.csv" >/dev/null
        awk -F, -v run="$r" -v side="$side" 'NR > 1 && NF >= 4 { print run, side, $1 ":" $2, $3, $4 }' \
            "$OUT/run.csv" >>"$OUT/all.txt"
    done
    r=$((r + 1))
done
echo "load: $(uptime)"

awk -v title=test:size_bytes -v unit="" -f "$(dirname "$0")/ab-median.awk" "$OUT/all.txt"
