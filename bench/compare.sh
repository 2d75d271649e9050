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

# Appends "<run> <source>:<test>:<size> <value>" lines of a CSV (header skipped).
collect() {
    awk -F, -v src="$1" -v run="$r" 'NR > 1 && NF >= 3 { print run, src ":" $1 ":" $2, $3 }' >>"$OUT/runs.txt"
}

echo "== $RUNS alternating runs of floor, osu${OMPI:+ and Open MPI's osh_bench}"
echo "load: $(uptime)"
r=1
while [ "$r" -le "$RUNS" ]; do
    timeout "$T" target/release/floor --csv |
        awk -F, -v run="$r" 'NR > 1 && NF >= 3 { print run, "floor:" $1 ":" $3, $2 }' >>"$OUT/runs.txt"
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

# The report: every ratio is taken within a run (floor, osu and osh_bench
# ran seconds apart), then the median over the runs is shown, next to the
# medians of the numbers it is made of. On a virtual machine the two vCPUs
# may sit on different host cores from one moment to the next, which moves
# the cache-line floor and fshmem's cross-core numbers together; pairing by
# run keeps that out of the ratios.
awk '
    { v[$1, $2] = $3; runs[$1] = 1 }
    function med(arr, n,    i, j, t) {
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
        return n ? arr[int((n + 1) / 2)] : ""
    }
    # Median over runs of a value (key b empty) or of the ratio a / (b + c).
    function stat(a, b, c, scale,    r, n, x, d) {
        n = 0; delete x
        for (r in runs) {
            if (!((r, a) in v)) continue
            if (b == "") { x[++n] = v[r, a]; continue }
            if (!((r, b) in v)) continue
            d = v[r, b] / scale + (c == "" ? 0 : v[r, c] / scale)
            if (d > 0) x[++n] = v[r, a] / d
        }
        return med(x, n)
    }
    function f(x, p) { return x == "" ? "n/a" : sprintf("%." p "f", x) }
    function row(name, ours, unit, ref, rname, ratio, target, ok) {
        printf "%-34s %10s %-5s %10s %-16s %7s %8s  %s\n", name, ours, unit, ref, rname, ratio, target, ok
    }
    END {
        fl = "floor:cacheline_half_rtt:ns"; fa = "floor:local_fetch_add:ns"; mc = "floor:memcpy_1MiB:MB/s"
        floor = stat(fl, "", "", 1) / 1000; fadd = stat(fa, "", "", 1) / 1000; memcpy = stat(mc, "", "", 1)
        printf "\nmedians over runs: cache-line half RTT %.4f us, local fetch-add %.4f us, memcpy 1 MiB %.0f MB/s\n", floor, fadd, memcpy
        printf "ratios: median over runs of the ratio within each run\n\n"
        row("metric", "fshmem", "", "reference", "", "ratio", "target", "met")
        x = stat("ours:put_lat:8", fl, "", 1000)
        row("put 8 B + quiet", f(stat("ours:put_lat:8", ""), 4), "us", f(floor, 4), "us floor", f(x, 2), "<= 3", x <= 3 ? "yes" : "NO")
        x = stat("ours:pingpong:8", fl, "", 1000)
        row("ping-pong 8 B, half RTT", f(stat("ours:pingpong:8", ""), 4), "us", f(floor, 4), "us floor", f(x, 2), "<= 3", x <= 3 ? "yes" : "NO")
        x = stat("ours:fetch_add:8", fl, fa, 1000)
        row("fetch_add 64-bit, target idle", f(stat("ours:fetch_add:8", ""), 4), "us", f(floor + fadd, 4), "us floor+fadd", f(x, 2), "<= 3", x <= 3 ? "yes" : "NO")
        x = stat("ours:fetch_add_bounce:8", fl, fa, 1000)
        row("fetch_add 64-bit, line bounced", f(stat("ours:fetch_add_bounce:8", ""), 4), "us", f(floor + fadd, 4), "us floor+fadd", f(x, 2), "<= 3", x <= 3 ? "yes" : "NO")
        x = stat("ours:put_bw:1048576", mc, "", 1)
        row("put bandwidth 1 MiB", f(stat("ours:put_bw:1048576", ""), 0), "MB/s", f(memcpy, 0), "MB/s memcpy", f(x, 3), ">= 0.90", x >= 0.9 ? "yes" : "NO")
        obar = stat("ompi:barrier:0", "")
        x = stat("ours:barrier:0", "ompi:barrier:0", "", 1)
        row("barrier_all, 2 PEs", f(stat("ours:barrier:0", ""), 4), "us", f(obar, 4), "us Open MPI", f(x, 2), "< 1", x == "" ? "?" : (x < 1 ? "yes" : "NO"))
        if (obar != "") {
            print "\nside by side, medians over runs (bench/osh_bench.c: same definitions):"
            printf "%-34s %12s %12s\n", "test", "fshmem", "Open MPI"
            printf "%-34s %12s %12s\n", "put 8 B + quiet (us)", f(stat("ours:put_lat:8", ""), 4), f(stat("ompi:put_lat:8", ""), 4)
            printf "%-34s %12s %12s\n", "ping-pong 8 B half RTT (us)", f(stat("ours:pingpong:8", ""), 4), f(stat("ompi:pingpong:8", ""), 4)
            printf "%-34s %12s %12s\n", "fetch_add, target idle (us)", f(stat("ours:fetch_add:8", ""), 4), f(stat("ompi:fetch_add:8", ""), 4)
            printf "%-34s %12s %12s\n", "put bandwidth 1 MiB (MB/s)", f(stat("ours:put_bw:1048576", ""), 0), f(stat("ompi:put_bw:1048576", ""), 0)
            printf "%-34s %12s %12s\n", "barrier_all (us)", f(stat("ours:barrier:0", ""), 4), f(obar, 4)
        }
    }
' "$OUT/runs.txt"
