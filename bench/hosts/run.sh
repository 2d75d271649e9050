#!/usr/bin/env bash
# Jobs on hosts, side by side in one run (issue: multi-host routing): the
# osu benchmark's small-message figures (put 8 B + quiet, get 8 B, ping-pong
# 8 B half round trip, 64-bit fetch-add; all in us) between PE 0 and
#
#   smp        PE 1 of a pure smp job of 4 PEs (as many processes as the
#              hosts job, PE 2 and 3 idle as there)
#   smp2       PE 1 of a pure smp job of 2 PEs
#   intra      PE 1 of a 2-host x 2-PE job (oshrun --hosts 2): same host
#   inter      PE 2 of that job: the other host
#   ipv6       PE 2 of a job on the ipv6 conduit alone, 4 PEs on [::1] (as
#              many processes as the hosts job, PE 1 and 3 idle as there)
#
# The five run in turn, ROUNDS times (default 5); the table has the median
# of each figure over the rounds and the ratios intra/smp and intra/smp2
# (target <= 1.5 each) and inter/ipv6 (target <= 1.0). The hosts share
# [::1] (--host-net loopback) so that inter and ipv6 cross the same kind
# of link.
#
#   cargo build --release --workspace --bins --examples
#   bash bench/hosts/run.sh            # ROUNDS=9 OUT=/tmp/b bash bench/hosts/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-20000}
OUT=${OUT:-target/bench/hosts}
R=target/release
mkdir -p "$OUT/runs"
osu=("$R/osu" --only put,get,pingpong,atomic --max-size 8 --iters "$ITERS")
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round of $ROUNDS (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    "$R/oshrun" -n 4 "${osu[@]}" --peer 1 --csv "$OUT/runs/smp.$round" > /dev/null
    "$R/oshrun" -n 2 "${osu[@]}" --peer 1 --csv "$OUT/runs/smp2.$round" > /dev/null
    "$R/oshrun" -n 4 --hosts 2 --host-net loopback "${osu[@]}" --peer 1 \
        --csv "$OUT/runs/intra.$round" > /dev/null
    "$R/oshrun" -n 4 --hosts 2 --host-net loopback "${osu[@]}" --peer 2 \
        --csv "$OUT/runs/inter.$round" > /dev/null
    "$R/oshrun" -n 4 --conduit ipv6 "${osu[@]}" --peer 2 \
        --csv "$OUT/runs/ipv6.$round" > /dev/null
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# Median per (job, test) over the rounds, then the table.
for f in "$OUT"/runs/*.*; do
    job=$(basename "$f"); job=${job%.*}
    awk -F, -v job="$job" 'NR > 1 { print job, $1, $3 }' "$f"
done | sort -k1,1 -k2,2 -k3,3g | awk '
    { k = $1 " " $2; v[k, ++n[k]] = $3 }
    END { for (k in n) { m = n[k]; print k, v[k, int((m + 1) / 2)] } }' |
    sort > "$OUT/medians.txt"
awk -v rounds="$ROUNDS" '
    { med[$1, $2] = $3 }
    END {
        split("put_lat get_lat pingpong fetch_add", tests, " ")
        split("put 8 B + quiet|get 8 B|ping-pong 8 B (half round trip)|fetch-add 64-bit", names, "|")
        printf "| us, median of %d rounds | smp 4 PEs | smp 2 PEs | intra-host | intra/smp4 | intra/smp2 | ipv6 alone | inter-host | inter/ipv6 |\n", rounds
        print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        for (i = 1; i <= 4; i++) {
            t = tests[i]
            printf "| %s | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", names[i],
                med["smp", t], med["smp2", t], med["intra", t],
                med["intra", t] / med["smp", t], med["intra", t] / med["smp2", t],
                med["ipv6", t], med["inter", t], med["inter", t] / med["ipv6", t]
        }
    }' "$OUT/medians.txt" | tee "$OUT/table.md"
echo "wrote $OUT/table.md (targets: intra/smp4 and intra/smp2 <= 1.5, inter/ipv6 <= 1.0)" >&2
