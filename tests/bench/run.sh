#!/usr/bin/env bash
# Bench suite: the benchmark harness of `make bench` end to end on row R1,
# checks only, never timing (bench/bench.py --smoke): installs axc into a
# scratch prefix, compiles R1 with the installed axc, builds the harness the
# way `make bench` does (pkg-config) and checks every system that can run
# against the float64 PyTorch reference.  One PASS/FAIL/SKIP line per system
# (the ONNX-fed peers are SKIP without the bench-local venv).
# Environment (set by tests/run.sh): AXC_ROOT, AXC_BUILD, PYTHON.
set -u
root=${AXC_ROOT:?}
build=${AXC_BUILD:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Float16/BFloat16 rows (bench/precision.py --smoke): R2 and R3 run at every
# dtype and stay close to Float32; no timing is judged.
"$PYTHON" "$root/bench/precision.py" --smoke --axc "$build/bin/axc" 2>"$work/precision.log" ||
    { echo "FAIL: bench precision --smoke"; tail -n 15 "$work/precision.log" | sed 's/^/  /'; }

if ! "$PYTHON" -c "import torch, torchvision" >/dev/null 2>&1; then
    echo "SKIP: bench smoke (needs $PYTHON with torch and torchvision)"
    exit 0
fi
if ! make -C "$root" --no-print-directory install B="$build" PREFIX="$work/stage" >"$work/install.log" 2>&1; then
    echo "FAIL: bench smoke: make install"
    tail -n 15 "$work/install.log" | sed 's/^/  /'
    exit 0
fi
# Training steps (bench/train.py --smoke): the installed axc --train's MLP
# step, built with pkg-config, against PyTorch's Adam after a few steps; no
# timing is judged.
"$PYTHON" "$root/bench/train.py" --smoke --stage "$work/stage" --cc "${CC:-cc}" >"$work/train.out" 2>"$work/train.log"
if grep -q '^\(PASS\|FAIL\): bench train' "$work/train.out"; then cat "$work/train.out"
else echo "FAIL: bench train smoke"; tail -n 15 "$work/train.log" | sed 's/^/  /'; fi
if ! "$PYTHON" "$root/bench/bench.py" --smoke --build-dir "$work/bench" --stage "$work/stage" \
    --cc "${CC:-cc}" 2>"$work/bench.log"; then
    echo "FAIL: bench smoke: bench.py --smoke"
    tail -n 15 "$work/bench.log" | sed 's/^/  /'
fi
