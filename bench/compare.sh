#!/bin/sh
# Side-by-side speed report of fshmem on this machine, 2 PEs:
#   - the hardware floors (target/release/floor: cache-line half round trip
#     between two cores, local fetch-add, memcpy 1 MiB);
#   - fshmem's osu benchmark under fshmem's oshrun;
#   - bench/osh_bench.c built with Open MPI's oshcc, run under Open MPI's oshrun.
# Each is run $RUNS times, alternating; the median of the runs is reported,
# then the ratios against their targets. Also writes the full osu table, CSV
# and bandwidth plot to $OUT.
#
#   bench/compare.sh                 # RUNS=5, OUT=target/bench
#   RUNS=9 OUT=/tmp/b bench/compare.sh
#
# Benchmarks are noisy while other work runs: check the load line it prints.
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
OUT=${OUT:-target/bench}
ITERS=${ITERS:-20000}
OMPI_ARGS=${OMPI_ARGS:---allow-run-as-root --oversubscribe --mca btl ^openib}
T=${T:-300}
mkdir -p "$OUT"
rm -f "$OUT"/runs.txt

echo "== build"
cargo build --release -p shmem -p examples --bins
OMPI=
if command -v oshcc >/dev/null 2>&1 && command -v oshrun >/dev/null 2>&1 &&
    oshcc -O2 -o "$OUT/osh_bench" bench/osh_bench.c; then
    OMPI=yes
else
    echo "Open MPI's oshcc/oshrun not usable: its column is skipped"
fi
OSHRUN=target/release/oshrun
OSU=target/release/osu

echo "== full osu table, CSV and plot ($OUT/osu.txt, osu.csv, osu.svg)"
timeout "$T" "$OSHRUN" -n 2 "$OSU" --iters "$ITERS" --csv "$OUT/osu.csv" --svg "$OUT/osu.svg" \
    >"$OUT/osu.txt"
cat "$OUT/osu.txt"

# Appends "<source>:<test>:<size> <value>" lines of a CSV (header skipped).
collect() {
    awk -F, -v src="$1" 'NR > 1 && NF >= 3 { print src ":" $1 ":" $2, $3 }' >>"$OUT/runs.txt"
}

echo "== $RUNS alternating runs of floor, osu${OMPI:+ and Open MPI's osh_bench}"
echo "load: $(uptime)"
r=1
while [ "$r" -le "$RUNS" ]; do
    timeout "$T" target/release/floor --csv |
        awk -F, 'NR > 1 && NF >= 3 { print "floor:" $1 ":" $3, $2 }' >>"$OUT/runs.txt"
    timeout "$T" "$OSHRUN" -n 2 "$OSU" --iters "$ITERS" --max-size 1M \
        --only put,pingpong,atomic,put_bw,barrier --csv "$OUT/osu.run.csv" >/dev/null
    collect ours <"$OUT/osu.run.csv"
    if [ -n "$OMPI" ]; then
        # shellcheck disable=SC2086 # OMPI_ARGS is a list of words
        timeout "$T" oshrun $OMPI_ARGS -np 2 "$OUT/osh_bench" "$ITERS" 2>"$OUT/ompi.err" |
            collect ompi
    fi
    r=$((r + 1))
done
echo "load: $(uptime)"

# Medians per key, then the report.
sort -k1,1 -k2,2g "$OUT/runs.txt" | awk '
    { v[$1, ++n[$1]] = $2 }
    END { for (k in n) print k, v[k, int((n[k] + 1) / 2)] }
' >"$OUT/medians.txt"

awk '
    { m[$1] = $2 }
    function get(k) { return (k in m) ? m[k] : "" }
    function row(name, ours, ounit, ref, rname, ratio, target, ok) {
        printf "%-34s %10s %-5s %12s %-20s %7s %9s  %s\n", name, ours, ounit, ref, rname, ratio, target, ok
    }
    function fmt(x, p) { return x == "" ? "n/a" : sprintf("%." p "f", x) }
    END {
        floor = get("floor:cacheline_half_rtt:ns") / 1000      # us
        fadd = get("floor:local_fetch_add:ns") / 1000
        memcpy = get("floor:memcpy_1MiB:MB/s")
        put = get("ours:put_lat:8"); pp = get("ours:pingpong:8")
        fa = get("ours:fetch_add:8"); fb = get("ours:fetch_add_bounce:8")
        bw = get("ours:put_bw:1048576"); bar = get("ours:barrier:0")
        obar = get("ompi:barrier:0")
        print ""
        printf "floors: cache-line half RTT %.4f us, local fetch-add %.4f us, memcpy 1 MiB %.0f MB/s\n\n", floor, fadd, memcpy
        row("metric", "ours", "", "reference", "", "ratio", "target", "met")
        row("put 8 B + quiet", fmt(put, 4), "us", fmt(floor, 4), "us floor", fmt(put / floor, 2), "<= 3", (put / floor <= 3) ? "yes" : "NO")
        row("ping-pong 8 B, half RTT", fmt(pp, 4), "us", fmt(floor, 4), "us floor", fmt(pp / floor, 2), "<= 3", (pp / floor <= 3) ? "yes" : "NO")
        row("fetch_add 64-bit (target idle)", fmt(fa, 4), "us", fmt(fadd + floor, 4), "us fadd+floor", fmt(fa / (fadd + floor), 2), "<= 3", (fa / (fadd + floor) <= 3) ? "yes" : "NO")
        row("fetch_add 64-bit (line bounced)", fmt(fb, 4), "us", fmt(fadd + floor, 4), "us fadd+floor", fmt(fb / (fadd + floor), 2), "<= 3", (fb / (fadd + floor) <= 3) ? "yes" : "NO")
        row("put bandwidth 1 MiB", fmt(bw, 0), "MB/s", fmt(memcpy, 0), "MB/s memcpy", fmt(bw / memcpy, 2), ">= 0.90", (bw / memcpy >= 0.9) ? "yes" : "NO")
        if (obar != "")
            row("barrier_all, 2 PEs", fmt(bar, 4), "us", fmt(obar, 4), "us Open MPI", fmt(bar / obar, 2), "< 1", (bar < obar) ? "yes" : "NO")
        else
            row("barrier_all, 2 PEs", fmt(bar, 4), "us", "n/a", "Open MPI", "n/a", "< 1", "?")
        if (obar != "") {
            print "\nside by side with Open MPI OpenSHMEM (same definitions, bench/osh_bench.c):"
            printf "%-34s %12s %12s\n", "test", "fshmem", "Open MPI"
            printf "%-34s %12s %12s\n", "put 8 B + quiet (us)", fmt(put, 4), fmt(get("ompi:put_lat:8"), 4)
            printf "%-34s %12s %12s\n", "ping-pong 8 B half RTT (us)", fmt(pp, 4), fmt(get("ompi:pingpong:8"), 4)
            printf "%-34s %12s %12s\n", "fetch_add, target idle (us)", fmt(fa, 4), fmt(get("ompi:fetch_add:8"), 4)
            printf "%-34s %12s %12s\n", "put bandwidth 1 MiB (MB/s)", fmt(bw, 0), fmt(get("ompi:put_bw:1048576"), 0)
            printf "%-34s %12s %12s\n", "barrier_all (us)", fmt(bar, 4), fmt(obar, 4)
        }
    }
' "$OUT/medians.txt"
