#!/bin/sh
# docs/cli.md's weight-embedding figure: how long axc takes to emit, and C
# compilers to compile, a model with 7M embedded parameters
# (Dense(2048 => 3418)).  Usage: scripts/weights_compile_time.sh [AXC]
set -eu
AXC=${1:-build/bin/axc}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '@axiom big(x::Float32[1, 2048]) begin\n    Dense(2048 => 3418)\nend\n' > "$dir/big.ax"
seconds() { s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }'; }
echo "axc emit:        $(seconds "$AXC" "$dir/big.ax" -o "$dir/big.c") s  ($(du -m "$dir/big.c" | cut -f1) MB of C)"
for cc in "${CC:-cc}" clang; do
    echo "$cc -O2 -c:  $(seconds $cc -std=c99 -O2 -I"$root/runtime" -c "$dir/big.c" -o "$dir/big.o") s"
done
