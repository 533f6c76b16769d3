#!/usr/bin/env bash
# Compile time against model size: a chain of N `relu` statements at -O1
# and -O2, and N named statements (`t1 = relu(t0)` ...) at -O2, N doubling.
# Near-linear passes keep each ratio t(2N)/t(N) near 2 (it was about 2.8
# and growing before pass_schedule and pass_fuse_elementwise stopped
# rescanning the graph per node; the named form was quadratic while the
# lowering's scope was a list scanned per new name).
# Usage: bench/compile_scaling.sh [AXC] [N0] [STEPS]   (defaults build/bin/axc 8000 4)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
AXC=${1:-$root/build/bin/axc}
n=${2:-8000}
steps=${3:-4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%8s %8s %8s %8s %8s %8s\n' statements -O1_s -O2_s ratio named_s ratio
prev= prevn=
for _ in $(seq "$steps"); do
    { echo '@axiom chain(x::Float32[1, 8]) begin'; for _ in $(seq "$n"); do echo '    relu'; done; echo end; } >"$tmp/m.ax"
    t() { local s e; s=$(date +%s.%N); "$AXC" "$1" "$tmp/m.ax" -o "$tmp/m.c"; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { print e - s }'; }
    t1=$(t -O1); t2=$(t -O2)
    { echo '@axiom function chain(x::Float32[1, 8])'; echo '    t0 = relu(x)'
      for i in $(seq "$n"); do echo "    t$i = relu(t$((i - 1)))"; done; echo "    return t$n"; echo end; } >"$tmp/m.ax"
    tn=$(t -O2)
    ratio=${prev:+$(awk -v a="$t2" -v b="$prev" 'BEGIN { printf "%.2f", a / b }')}
    ration=${prevn:+$(awk -v a="$tn" -v b="$prevn" 'BEGIN { printf "%.2f", a / b }')}
    printf '%8d %8.2f %8.2f %8s %8.2f %8s\n' "$n" "$t1" "$t2" "${ratio:--}" "$tn" "${ration:--}"
    prev=$t2 prevn=$tn
    n=$((n * 2))
done
