#!/bin/sh
# GPU rows of the benchmark (bench/gpu_rows.py): axc's cuda target vs
# PyTorch eager and torch.compile, R1-R6 at their batch and at 256.  Runs
# where a GPU is present; elsewhere it prints that none is and exits 0.
# Usage: sh bench/gpu.sh [BUILD_DIR] [extra gpu_rows.py options]
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
[ $# -gt 0 ] && shift
exec "${PYTHON:-/usr/bin/python3}" "$here/gpu_rows.py" --build "$build" "$@"
