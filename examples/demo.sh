#!/bin/sh
# make demo: compile examples/mlp.ax to C, build it with a small host
# program against libaxrt, run it.  Usage: examples/demo.sh BUILD_DIR
set -eu
B=${1:-build}
out="$B/demo"
mkdir -p "$out"
set -x
"$B/bin/axc" examples/mlp.ax -o "$out/mlp.c" --seed 1
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Wpedantic -Werror -I"$out" -I"$B/include" \
    examples/demo_main.c "$out/mlp.c" "$B/lib/libaxrt.a" -lm -o "$out/mlp_demo"
"$out/mlp_demo"
