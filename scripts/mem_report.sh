#!/usr/bin/env bash
# mem_report.sh AXC [--bench N] — the "Memory plan and fusion" tables of docs/performance.md:
# per example the planned arena (peak), the lower bound (most bytes live at
# once), the naive sum (every tensor its own buffer) and peak / bound, at -O2;
# with --bench N also `axc run --bench N` medians at -O0 and -O2 for r1..r6.
set -eu
AXC=$1; shift
root=$(cd "$(dirname "$0")/.." && pwd)
printf '%-20s %12s %12s %12s %7s\n' model peak lower-bound naive-sum ratio
for f in "$root"/examples/*.ax; do
    "$AXC" "$f" --emit=mem | awk -v name="$(basename "$f" .ax)" '
        /^  peak/ {p=$2} /^  lower bound/ {b=$3} /^  naive sum/ {n=$3}
        END {printf "%-20s %12d %12d %12d %7s\n", name, p, b, n, b ? sprintf("%.3f", p / b) : "-"}'
done
[ "${1:-}" = --bench ] || exit 0
runs=$2
printf '\n%-20s %14s %14s %8s\n' model "-O0 median us" "-O2 median us" speedup
for f in "$root"/examples/r[1-6]_*.ax; do
    o0=$("$AXC" run "$f" --bench "$runs" -O0 | sed -n 's/.*median \([0-9.]*\) us.*/\1/p')
    o2=$("$AXC" run "$f" --bench "$runs" -O2 | sed -n 's/.*median \([0-9.]*\) us.*/\1/p')
    awk -v n="$(basename "$f" .ax)" -v a="$o0" -v b="$o2" \
        'BEGIN {printf "%-20s %14s %14s %7.2fx\n", n, a, b, a / b}'
done
