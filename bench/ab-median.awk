# The report of an A/B benchmark script (bench/ab.sh, bench/coll/ab.sh).
# Input lines: RUN SIDE KEY VALUE [UNIT], SIDE being A or B. For each KEY,
# in the order first seen: the median of A, the median of B, the median of
# the per-run ratios B/A, the unit, and each run's ratio.
# Variables: title (the KEY column's heading), unit (when lines carry none).
{
    v[$1, $2, $3] = $4; if ($1 + 0 > last) last = $1 + 0
    if (NF >= 5) u[$3] = $5
    if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 }
}
function med(arr, k,    i, j, t) {
    for (i = 2; i <= k; i++)
        for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
    return k ? arr[int((k + 1) / 2)] : 0
}
END {
    printf "%-28s %12s %12s %8s  %-6s %s\n", title, "A", "B", "B/A", "unit", "(B/A of each run)"
    for (i = 1; i <= n; i++) {
        key = order[i]; ka = kb = kr = 0; each = ""
        delete xa; delete xb; delete xr
        for (r = 1; r <= last; r++) {
            if ((r, "A", key) in v) xa[++ka] = v[r, "A", key] + 0
            if ((r, "B", key) in v) xb[++kb] = v[r, "B", key] + 0
            if ((r, "A", key) in v && (r, "B", key) in v && v[r, "A", key] + 0 > 0) {
                q = (v[r, "B", key] + 0) / (v[r, "A", key] + 0); xr[++kr] = q; each = each sprintf(" %.3f", q)
            }
        }
        printf "%-28s %12.4f %12.4f %8.3f  %-6s%s\n", key, med(xa, ka), med(xb, kb), med(xr, kr), (key in u) ? u[key] : unit, each
    }
}
