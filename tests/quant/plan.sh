#!/usr/bin/env bash
# int8 kernel-call plans (docs/internals.md#kernel-call-plans): --emit=ir of
# an int8 model lists, under every int8 node, the runtime calls the C and
# LLVM back ends make (the quantisation of an operand that arrives float,
# the int8 kernel on the node's own constants), and a float chunk's one
# axrt_split call.  Run by tests/quant/run.sh; AXC_ROOT, AXC, PYTHON.
set -u
root=${AXC_ROOT:?}
axc=${AXC:?}
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pass() { echo "PASS: quant plan $1"; }
fail() { echo "FAIL: quant plan $1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }

# emit_ir MODEL DIMS...: the int8 model's --emit=ir into $work/MODEL.ir
emit_ir() {
    local model=$1
    shift
    "$python" -c "import sys, numpy as np
np.save(sys.argv[1], np.random.default_rng(1).standard_normal((4,) + tuple(int(d) for d in sys.argv[2:])).astype(np.float32))" \
        "$work/$model.npy" "$@"
    "$axc" "$here/$model.ax" --seed=3 --quantize=int8 --calibrate x="$work/$model.npy" --emit=ir \
        >"$work/$model.ir" 2>"$work/$model.log"
}

# every_node_called IRFILE OP KERNEL: every OP node of the file is followed by
# a call of KERNEL (its plan's int8 kernel), and there is at least one
every_node_called() {
    awk -v op="$2" -v kernel="$3" '
        $2 == "=" && $3 == op { if (open) bad++; open = 1; nodes++; next }
        $1 == "call" && index($2, kernel "(") == 1 { open = 0; next }
        $1 ~ /^%/ { if (open) bad++; open = 0 }
        END { if (open) bad++; exit !(nodes > 0 && bad == 0) }' "$1"
}

check() {   # check IRFILE OP KERNEL
    if every_node_called "$1" "$2" "$3"; then pass "$(basename "$1" .ir): every $2 calls $3"
    else fail "$(basename "$1" .ir): every $2 calls $3" "$(grep -A3 " = $2 " "$1" | head -n 8)"; fi
}

if ! emit_ir qres 1 8 8 4; then
    fail "qres: axc --emit=ir" "$(tail -n 5 "$work/qres.log")"
else
    check "$work/qres.ir" conv axrt_conv2d_q8_packed
    check "$work/qres.ir" add axrt_add_q8
    check "$work/qres.ir" concat axrt_rescale_q8
    if grep -q 'call axrt_quantize_u8(%0, u8:arena+[0-9]*, 256, ' "$work/qres.ir" &&
        grep -q 'q8_weights(%[0-9]*), requant(%[0-9]*)' "$work/qres.ir" && grep -q 'ew(%[0-9]*)\[1\]' "$work/qres.ir"; then
        pass "qres: the float input quantised into the scratch; the nodes' int8 constants as arguments"
    else
        fail "qres: the float input quantised into the scratch; the nodes' int8 constants as arguments"
    fi
fi
if ! emit_ir qshuffle 1 4 4 6; then
    fail "qshuffle: axc --emit=ir" "$(tail -n 5 "$work/qshuffle.log")"
else
    check "$work/qshuffle.ir" transpose axrt_gather_u8
    check "$work/qshuffle.ir" chunk axrt_gather_u8
fi
"$axc" "$root/tests/ops/chunk.ax" --seed=3 --emit=ir >"$work/chunk.ir" 2>&1
check "$work/chunk.ir" chunk axrt_split_f32
