#!/usr/bin/env bash
# Compile time against model size: a chain of N `relu` statements at -O1
# and -O2, and N named statements (`t1 = relu(t0)` ...) at -O2, N doubling.
# Near-linear passes keep each ratio t(2N)/t(N) near 2 (it was about 2.8
# and growing before pass_schedule and pass_fuse_elementwise stopped
# rescanning the graph per node; the named form was quadratic while the
# lowering's scope was a list scanned per new name).  Then the same for an
# ONNX model of N Relu nodes (import: shape inference per added node, not
# of the whole graph per node), when python3 has onnx.
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

PYTHON=${PYTHON:-/usr/bin/python3}
"$PYTHON" -c "import onnx" 2>/dev/null || { echo "onnx: skipped (python3 has no onnx)"; exit 0; }
printf '%8s %8s %8s %8s\n' onnx_nodes -O1_s -O2_s ratio
n=${2:-8000}
prev=
for _ in $(seq "$steps"); do
    "$PYTHON" - "$n" "$tmp/m.onnx" <<'PY'
import sys
from onnx import TensorProto, helper
n, path = int(sys.argv[1]), sys.argv[2]
nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"n{i}") for i in range(n)]
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 8])],
                      [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [1, 8])])
open(path, "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
PY
    t() { local s e; s=$(date +%s.%N); "$AXC" "$1" "$tmp/m.onnx" -o "$tmp/m.c"; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { print e - s }'; }
    t1=$(t -O1); t2=$(t -O2)
    ratio=${prev:+$(awk -v a="$t2" -v b="$prev" 'BEGIN { printf "%.2f", a / b }')}
    printf '%8d %8.2f %8.2f %8s\n' "$n" "$t1" "$t2" "${ratio:--}"
    prev=$t2
    n=$((n * 2))
done
