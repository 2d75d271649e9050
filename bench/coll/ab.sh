#!/bin/sh
# Two builds of fshmem side by side on the collectives: bench/coll/coll_bench.c
# compiled with each build's oshcc (so the same program runs on each build's
# libshmem), run alternately RUNS times at each PE count of NPS under each
# build's own oshrun; then, per collective, the median over the runs of A,
# of B and of the ratio B/A taken within each run (A and B ran seconds
# apart, under the same load).
#
#   bench/coll/ab.sh /work/base/target/release target/release
#   (or the bin/ of an installed prefix: scripts/install.sh PREFIX)
#   RUNS=5 NPS="2 4" SCALE=0.5 bench/coll/ab.sh OLD/target/release NEW/target/release
#
# Environment: RUNS (default 3), NPS (PE counts, default "2 4"), SCALE
# (coll_bench's iteration scale, default 1), CONDUIT (default smp).
# Values are microseconds per call on the slowest PE (median of 7
# batches); a ratio above 1 means B is slower.
set -eu
A=${1:?usage: bench/coll/ab.sh A_RELEASE_DIR B_RELEASE_DIR}
B=${2:?usage: bench/coll/ab.sh A_RELEASE_DIR B_RELEASE_DIR}
RUNS=${RUNS:-3}
NPS=${NPS:-2 4}
SCALE=${SCALE:-1}
CONDUIT=${CONDUIT:-smp}
T=${T:-600}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fshmem-coll-ab.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

for side in A B; do
    if [ "$side" = A ]; then d=$A; else d=$B; fi
    for f in oshrun oshcc; do
        [ -x "$d/$f" ] || { echo "ab.sh: $d/$f is missing (cargo build --release --workspace)" >&2; exit 1; }
    done
    "$d/oshcc" -O2 -o "$OUT/coll_bench.$side" "$HERE/coll_bench.c"
done

echo "A = $A"
echo "B = $B"
echo "conduit $CONDUIT, PEs $NPS, $RUNS alternating runs, coll_bench $SCALE all"
echo "load: $(uptime)"
r=1
while [ "$r" -le "$RUNS" ]; do
    for np in $NPS; do
        for side in A B; do
            if [ "$side" = A ]; then d=$A; else d=$B; fi
            # A run that fails or exceeds T seconds is reported and left out.
            if ! timeout "$T" "$d/oshrun" -n "$np" --conduit "$CONDUIT" "$OUT/coll_bench.$side" "$SCALE" all \
                >"$OUT/run.txt"; then
                echo "run $r, $side, $np PEs: failed or took over $T s; left out" >&2
                continue
            fi
            # Rows are "name words...   value": the last field is the value.
            awk -v run="$r" -v side="$side" -v np="$np" 'NR > 1 && NF >= 2 {
                    v = $NF; $NF = ""; sub(/ +$/, ""); gsub(/ /, "_"); print run, side, np "PE:" $0, v
                }' "$OUT/run.txt" >>"$OUT/all.txt"
        done
    done
    r=$((r + 1))
done
echo "load: $(uptime)"

awk -v title=PEs:collective -v unit=us -f "$HERE/../ab-median.awk" "$OUT/all.txt"
