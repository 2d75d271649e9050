#!/usr/bin/env bash
# Side by side, 2 PEs on this host's loopback: the same OpenSHMEM program
# (bench/ipv6/osh_bench.c: put/get latency 8 B..64 KiB, put/get bandwidth
# 4 KiB..4 MiB) on fshmem's ofi conduit over tcp;ofi_rxm, on fshmem's ipv6
# conduit, and on Open MPI's OpenSHMEM with UCX over TCP. The three run in
# turn, ROUNDS times (default 3); bench_report takes the median of each
# point and writes table.md (with ratios ofi/other), latency.svg and
# bandwidth.svg into OUT (default target/bench/ofi).
#
#   cargo build --release --workspace --bins --examples
#   bash bench/ofi/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-target/bench/ofi}
R=target/release
mkdir -p "$OUT/runs"
"$R/oshcc" -O2 bench/ipv6/osh_bench.c -o "$OUT/osh_bench_fshmem"
/usr/bin/oshcc -O2 bench/ipv6/osh_bench.c -o "$OUT/osh_bench_ompi"
args=()
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round of $ROUNDS (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    FSHMEM_OFI_PROVIDER='tcp;ofi_rxm' FSHMEM_OFI_DOMAIN=lo \
        "$R/oshrun" -n 2 --conduit ofi "$OUT/osh_bench_fshmem" > "$OUT/runs/ofi.$round"
    "$R/oshrun" -n 2 --conduit ipv6 "$OUT/osh_bench_fshmem" > "$OUT/runs/ipv6.$round"
    /usr/bin/oshrun --allow-run-as-root --oversubscribe --mca btl ^openib \
        -x UCX_TLS=tcp,self -np 2 "$OUT/osh_bench_ompi" > "$OUT/runs/ompi.$round"
    args+=("ofi-tcp=$OUT/runs/ofi.$round" "ipv6=$OUT/runs/ipv6.$round" "openmpi-ucx-tcp=$OUT/runs/ompi.$round")
done
"$R/bench-report" --out "$OUT" "${args[@]}"
echo "wrote $OUT/table.md, $OUT/latency.svg, $OUT/bandwidth.svg" >&2
