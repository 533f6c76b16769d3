#!/usr/bin/env bash
# bench/int8.sh — int8 (axc --quantize=int8) against float32 on the GEMM rows
# R2 (MLP 784-256-10, batch 32), R3 (ResNet basic block, 56x56x64) and
# MobileNetV2 (examples/mobilenet_v2.ax), one thread, through `axc run --bench` (the runtime's kernels chosen at run
# time; AXRT_ISA=portable|avx2|avx512 forces one).  Calibrated on 8 random
# samples; weights from --seed.  Prints a Markdown table of medians and of
# minima (on a loaded machine the minimum is the steadier figure: a long run's
# median suffers most from preemption).
# Usage: bash bench/int8.sh [AXC] [RUNS] [ROWS...]
#   (default: build/bin/axc, 200 runs, r2_mlp_b32 r3_resnet_block mobilenet_v2)
# Timings are reported, never judged.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
axc=${1:-$root/build/bin/axc}
runs=${2:-200}
shift $(($# < 2 ? $# : 2))
rows=${*:-r2_mlp_b32 r3_resnet_block mobilenet_v2}
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { sed -n 's/.*median \([0-9.]*\) us.*/\1/p' "$1"; }
minimum() { sed -n 's/.* min \([0-9.]*\) us.*/\1/p' "$1"; }
ratio() { awk -v f="$1" -v q="$2" 'BEGIN { printf "%.2fx", f / q }'; }

echo "| row | float32 median (us) | int8 median (us) | speed-up | float32 min (us) | int8 min (us) | speed-up (min) | int8 dot product |"
echo "|---|---|---|---|---|---|---|---|"
for row in $rows; do
    ax=$root/examples/$row.ax
    dims=$("$axc" "$ax" --emit=ir 2>/dev/null | sed -n 's/^ *%[0-9]* = input x : Float32\[\([^]]*\)\].*/\1/p' | head -n 1)
    "$python" -c "import sys, numpy as np
dims = tuple(int(d) for d in sys.argv[2].split(','))
np.save(sys.argv[1], np.random.default_rng(1).standard_normal((8,) + dims).astype(np.float32))" "$work/cal.npy" "$dims"
    "$axc" run "$ax" --seed=1 --threads 1 --bench "$runs" >"$work/f.log" 2>&1
    "$axc" run "$ax" --seed=1 --threads 1 --bench "$runs" --quantize=int8 --calibrate x="$work/cal.npy" >"$work/q.log" 2>&1
    f=$(median "$work/f.log"); q=$(median "$work/q.log")
    fm=$(minimum "$work/f.log"); qm=$(minimum "$work/q.log")
    isa=$(sed -n 's/.*kernels \([a-z0-9]*\).*/\1/p' "$work/q.log" | head -n 1)
    echo "| $row | $f | $q | $(ratio "$f" "$q") | $fm | $qm | $(ratio "$fm" "$qm") | with $isa float kernels |"
done
