#!/usr/bin/env bash
# The ipv6 conduit and the fpga conduit's board links (devsim) beside the
# wire they run on and beside Open MPI over TCP, 2 PEs on this host's
# loopback, side by side in one run:
#
#   udp-floor        target/release/floor --udp: two busy-polling processes
#                    over [::1] (round trip of SIZE bytes out and 8 back;
#                    one-way stream in datagrams of min(SIZE, 8 KiB))
#   ipv6             bench/ipv6/osh_bench.c on fshmem, --conduit ipv6
#   fpga-devsim      the same program, --conduit fpga (one devsim board per
#                    PE, board links over UDP on [::1])
#   openmpi-ucx-tcp  the same program on Open MPI's OpenSHMEM, UCX over TCP
#
# The four run in turn ROUNDS times (default 3); bench-report takes the
# median of each point over the rounds and writes table.md (every figure
# with its ratio ipv6 / other: time for latency, MB/s for bandwidth),
# latency.svg and bandwidth.svg into OUT (default target/bench/wire).
#
#   cargo build --release --workspace --bins --examples
#   bash bench/wire/run.sh
#
# IMPAIR=loss=5,dup=1,reorder=10 runs ipv6 and fpga with that impairment
# (FSHMEM_IPV6_IMPAIR, FSHMEM_DEVSIM_IMPAIR). Check the load first
# (uptime): other jobs on the machine move every number.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-target/bench/wire}
IMPAIR=${IMPAIR:-}
OMPI_ARGS=${OMPI_ARGS:---allow-run-as-root --oversubscribe --mca btl ^openib}
R=target/release
for b in floor oshrun oshcc bench-report; do
    [ -x "$R/$b" ] || { echo "run.sh: $R/$b missing: cargo build --release --workspace --bins --examples" >&2; exit 1; }
done
command -v /usr/bin/oshcc >/dev/null || { echo "run.sh: Open MPI's oshcc (openmpi-bin) is not installed" >&2; exit 1; }
mkdir -p "$OUT/runs"
"$R/oshcc" -O2 bench/ipv6/osh_bench.c -o "$OUT/osh_bench_fshmem"
/usr/bin/oshcc -O2 bench/ipv6/osh_bench.c -o "$OUT/osh_bench_ompi"
args=()
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round of $ROUNDS (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    "$R/floor" --udp > "$OUT/runs/floor.$round"
    FSHMEM_IPV6_IMPAIR=$IMPAIR "$R/oshrun" -n 2 --conduit ipv6 "$OUT/osh_bench_fshmem" > "$OUT/runs/ipv6.$round"
    FSHMEM_DEVSIM_IMPAIR=$IMPAIR "$R/oshrun" -n 2 --conduit fpga "$OUT/osh_bench_fshmem" > "$OUT/runs/fpga.$round"
    # shellcheck disable=SC2086
    /usr/bin/oshrun $OMPI_ARGS -x UCX_TLS=tcp,self -np 2 "$OUT/osh_bench_ompi" > "$OUT/runs/ompi.$round"
    args+=("ipv6=$OUT/runs/ipv6.$round" "udp-floor=$OUT/runs/floor.$round"
           "openmpi-ucx-tcp=$OUT/runs/ompi.$round" "fpga-devsim=$OUT/runs/fpga.$round")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$R/bench-report" --out "$OUT" "${args[@]}"
echo "wrote $OUT/table.md, $OUT/latency.svg, $OUT/bandwidth.svg" >&2
