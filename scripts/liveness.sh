#!/usr/bin/env bash
# Liveness campaigns (outside the default suite: they take minutes).
#
#   bash scripts/liveness.sh stress ipv6|fpga   # RUNS (20) runs of the 4-PE
#       stress example for SECS (10) s each under IMPAIR
#       (loss=20,dup=5,reorder=30) with a CPU hog on CPU 0; every run must
#       exit 0 with 4 "OK" lines and report no failure.
#   bash scripts/liveness.sh detect ipv6|fpga   # a PE (ipv6) or a board
#       (fpga) SIGKILLed, SIGSTOPped, and (fpga) a PE SIGSTOPped, RUNS (3)
#       times each, with FSHMEM_PEER_TIMEOUT=T (2 s): the job must end
#       non-zero naming PE 1 within T + 1 s of the signal; then PE 1 (board
#       1) cut off from the others, alive, by the impairment's cut=1@S
#       (S: CUT (5) s after the launch, the same instant for every process):
#       a PE must name PE 1 within T + 1 s of the cut.
#
# Prints one line per run and a summary; exits non-zero if any run failed.
# Needs: cargo build --release --workspace --bins --examples
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${1:?usage: liveness.sh stress|detect ipv6|fpga}
CONDUIT=${2:?usage: liveness.sh stress|detect ipv6|fpga}
R=target/release
STRESS=$R/examples/stress
[ -x "$STRESS" ] && [ -x "$R/oshrun" ] || { echo "liveness.sh: build first: cargo build --release --workspace --bins --examples" >&2; exit 2; }
case $CONDUIT in ipv6|fpga) ;; *) echo "liveness.sh: conduit must be ipv6 or fpga" >&2; exit 2 ;; esac
LOG=${LOG:-target/liveness}
mkdir -p "$LOG"
fails=0

hog_pid=
stop_hog() { [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null; hog_pid=; }
trap stop_hog EXIT

if [ "$MODE" = stress ]; then
    RUNS=${RUNS:-20}
    SECS=${SECS:-10}
    IMPAIR=${IMPAIR:-loss=20,dup=5,reorder=30}
    if [ "${HOG:-1}" = 1 ]; then
        taskset -c 0 sh -c 'while :; do :; done' &
        hog_pid=$!
    fi
    echo "stress on $CONDUIT: $RUNS runs of ${SECS}s, 4 PEs, impairment $IMPAIR, hog on CPU 0: ${hog_pid:-none} (load $(cut -d' ' -f1-3 /proc/loadavg))"
    for run in $(seq 1 "$RUNS"); do
        out=$LOG/stress-$CONDUIT-$run.log
        t0=$(date +%s.%N)
        FSHMEM_IPV6_IMPAIR=$IMPAIR FSHMEM_DEVSIM_IMPAIR=$IMPAIR \
            timeout -k 5 $((SECS * 6 + 60)) "$R/oshrun" -n 4 --conduit "$CONDUIT" \
            "$STRESS" "$SECS" 1000000 "$run" > "$out" 2>&1
        rc=$?
        t1=$(date +%s.%N)
        ok=$(grep -c "on 4 PEs OK" "$out")
        if [ "$rc" = 0 ] && [ "$ok" = 4 ] && ! grep -qi "failed\|timeout\|stopped answering" "$out"; then
            verdict=ok
        else
            verdict=FAIL
            fails=$((fails + 1))
        fi
        printf 'run %2d: %s exit %s, %s OK lines, %.1f s%s\n' "$run" "$verdict" "$rc" "$ok" \
            "$(echo "$t1 - $t0" | bc)" \
            "$([ $verdict = FAIL ] && echo ": $(grep -v '^stress: PE .*OK$' "$out" | head -3 | tr '\n' ' ')")"
    done
    stop_hog
    echo "stress on $CONDUIT: $((RUNS - fails)) of $RUNS runs exact with no failure reported"
else
    RUNS=${RUNS:-3}
    T=${T:-2}
    # pid of the process of job $1 whose environment has $2 (FSHMEM_RANK=1),
    # or of its board 1 ($2 = board).
    find_pid() {
        if [ "$2" = board ]; then
            cat "/dev/shm/fshmem-$1-board1/pid" 2>/dev/null
            return
        fi
        for e in /proc/[0-9]*/environ; do
            env=$( { tr '\0' '\n' < "$e"; } 2>/dev/null) || continue
            if grep -qx "FSHMEM_JOB_ID=$1" <<< "$env" && grep -qx "$2" <<< "$env"; then
                p=${e#/proc/}; echo "${p%/environ}"; return
            fi
        done
    }
    cases="KILL:FSHMEM_RANK=1 STOP:FSHMEM_RANK=1"
    [ "$CONDUIT" = fpga ] && cases="$cases KILL:board STOP:board"
    echo "detect on $CONDUIT: FSHMEM_PEER_TIMEOUT=${T}s, limit $((T + 1)) s after the signal"
    for c in $cases; do
        sig=${c%%:*}; who=${c#*:}
        for run in $(seq 1 "$RUNS"); do
            id=live-$CONDUIT-$sig-${who%%=*}-$run-$$
            out=$LOG/detect-$id.log
            FSHMEM_PEER_TIMEOUT=${T}s timeout -k 5 120 "$R/oshrun" -n 4 --conduit "$CONDUIT" --job-id "$id" \
                "$STRESS" 60 100000000 "$run" > "$out" 2>&1 &
            job=$!
            for _ in $(seq 1 400); do grep -q "stress: PE 0: running" "$out" && break; sleep 0.05; done
            pid=$(find_pid "$id" "$who")
            if [ -z "$pid" ]; then
                echo "$sig $who run $run: FAIL: no process found"; fails=$((fails + 1)); kill $job; wait $job; continue
            fi
            t0=$(date +%s.%N)
            kill -"$sig" "$pid"
            wait $job
            rc=$?
            t1=$(date +%s.%N)
            [ "$sig" = STOP ] && kill -KILL "$pid" 2>/dev/null
            dt=$(echo "$t1 - $t0" | bc)
            named=$(grep -v ': running$' "$out" | grep -c "PE 1")
            if [ "$rc" != 0 ] && [ "$named" -gt 0 ] && [ "$(echo "$dt <= $T + 1" | bc)" = 1 ]; then
                verdict=ok
            else
                verdict=FAIL; fails=$((fails + 1))
            fi
            printf '%s %s run %d: %s exit %s after %.2f s: %s\n' "$sig" "$who" "$run" "$verdict" "$rc" "$dt" \
                "$(grep -v ': running$' "$out" | grep -m1 "PE 1" | cut -c1-200)"
        done
    done
    CUT=${CUT:-5}
    for run in $(seq 1 "$RUNS"); do
        id=live-$CONDUIT-CUT-$run-$$
        out=$LOG/detect-$id.log
        at=$(echo "$(date +%s.%N) + $CUT" | bc)
        FSHMEM_PEER_TIMEOUT=${T}s FSHMEM_IPV6_IMPAIR=cut=1@$at FSHMEM_DEVSIM_IMPAIR=cut=1@$at \
            timeout -k 5 120 "$R/oshrun" -n 4 --conduit "$CONDUIT" --job-id "$id" \
            "$STRESS" 60 100000000 "$run" > "$out" 2>&1 &
        job=$!
        named=
        for _ in $(seq 1 800); do
            grep -q ": FAIL: .*PE 1 failed" "$out" && { named=$(date +%s.%N); break; }
            sleep 0.05
        done
        wait $job
        rc=$?
        dt=$(echo "${named:-1000} - $at" | bc)
        if [ "$rc" != 0 ] && [ -n "$named" ] && [ "$(echo "$dt <= $T + 1" | bc)" = 1 ]; then
            verdict=ok
        else
            verdict=FAIL; fails=$((fails + 1))
        fi
        printf 'CUT PE 1 run %d: %s exit %s, named %.2f s after the cut: %s\n' \
            "$run" "$verdict" "$rc" "$dt" "$(grep -m1 ": FAIL: .*PE 1 failed" "$out" | cut -c1-200)"
    done
fi
exit $((fails > 0))
