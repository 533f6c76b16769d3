#!/usr/bin/env bash
# Seeing inside a model (docs/cli.md#seeing-inside-a-model), one PASS/FAIL/SKIP line per case:
#   table     `axc run --profile` lists every layer of the IR once, with op,
#             shape and time, and a total line
#   hook      generated C built with --profile compiles warning-free (C99,
#             pedantic) with the application's own clock, which it calls
#             around every layer; the hook sees every layer's output
#   cortex-m4 the profiled C compiles for a Cortex-M4 (no default clock there)
#   dump      `axc run --dump-dir` writes one .npy per layer and an index
#   compare   a bug planted in one layer's weights is found: `axc compare`
#             names that layer, not an earlier or a later one, and exits 1;
#             identical dumps agree (exit 0); a bad tolerance is a usage error
#   svg       --emit=svg (Graphviz) and --emit=timeline are well-formed SVG
#             naming the layers and the peak (svg: SKIP without dot)
# (The firmware suite runs the profiled model under QEMU.)
# Environment: AXC, AXC_BUILD, AXC_ROOT, PYTHON.
set -u
root=${AXC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
AXC=${AXC:-$root/build/bin/axc}
AXC_BUILD=${AXC_BUILD:-$root/build}
PYTHON=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { echo "PASS: profile:$1"; }
fail() { echo "FAIL: profile:$1"; shift; local f; for f in "$@"; do sed 's/^/  /' "$f" | head -20; done; }

# The layer names of the IR, in execution order: every live non-source node.
ir_layers() {
    "$AXC" "$1" --emit=ir | awk '$1 ~ /^%/ && $3 != "input" && $3 != "param" && $3 != "scalar"' >"$tmp/ir.txt"
    wc -l <"$tmp/ir.txt"
}

check_table() {
    local model=$root/examples/lenet5.ax want got
    want=$(ir_layers "$model")
    "$AXC" run "$model" --profile --bench 3 >"$tmp/prof.txt" 2>&1 || { fail table "$tmp/prof.txt"; return; }
    got=$(awk '/^  layer/ { on = 1; next } /^  total/ { on = 0 } on' "$tmp/prof.txt" | wc -l)
    if [ "$got" -eq "$want" ] && grep -q '^  total .* us in layers' "$tmp/prof.txt" &&
        grep -q 'conv+relu .*\[1, 28, 28, 6\]' "$tmp/prof.txt"; then pass "table (lenet5: $got layers)"
    else echo "rows $got, IR layers $want" >"$tmp/why"; fail table "$tmp/why" "$tmp/prof.txt"; fi
}

# Layer names longer than the column's default width are printed whole,
# the column widened to them (the rows stay aligned: the op column starts
# at one offset in every row).
check_long_names() {
    local name=encoder_block_attention_projection_layer
    printf '@axiom function longnames(x::Float32[1, 4])\n    %s = Dense(4 => 4)\n    return %s(x)\nend\n' \
        $name $name >"$tmp/long.ax"
    "$AXC" run "$tmp/long.ax" --seed=0 --profile --bench 1 >"$tmp/long.txt" 2>&1 || { fail long-names "$tmp/long.txt"; return; }
    local at_header at_row
    at_header=$(awk '/^  layer/ { print index($0, " op ") }' "$tmp/long.txt")
    at_row=$(awk -v n=$name '$1 == n { print index($0, " dense") }' "$tmp/long.txt")
    if grep -q "^  $name " "$tmp/long.txt" && [ -n "$at_row" ] && [ "$at_row" = "$at_header" ]; then
        pass "long-names (a ${#name}-character layer name printed whole, columns aligned)"
    else fail long-names "$tmp/long.txt"; fi
}

# An application with its own clock (one tick per call) and a hook that
# records every layer's first output value.
check_hook() {
    "$AXC" "$root/examples/mlp.ax" --profile -o "$tmp/mlp.c" 2>"$tmp/err" || { fail hook "$tmp/err"; return; }
    cat >"$tmp/app.c" <<'EOF'
#include <stdio.h>
#include "mlp.h"
static uint64_t ticks;
uint64_t axc_profile_clock(void) { return ++ticks; }
static int seen;
static void hook(int index, const axrt_layer_profile *layer, const void *output)
{
    (void)output;
    if (index == seen) seen++;
    printf("%d %s %s\n", index, layer->layer, layer->op);
}
int main(void)
{
    static float x[784], y[10];
    mlp_layer_hook = hook;
    if (mlp_forward(x, y, NULL) || mlp_forward(x, y, NULL)) return 1;
    for (int k = 0; k < MLP_LAYERS; k++)
        if (mlp_profile[k].calls != 2 || mlp_profile[k].ticks != 2) return 2; /* one tick per layer call */
    return seen == 2 * MLP_LAYERS || seen == MLP_LAYERS ? 0 : 3;
}
EOF
    if cc -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$tmp" -I"$AXC_BUILD/include" "$tmp/app.c" \
        "$tmp/mlp.c" "$AXC_BUILD/lib/libaxrt.a" -lm -o "$tmp/app" 2>"$tmp/cc.log" && "$tmp/app" >"$tmp/app.out"; then
        pass "hook (application clock and output hook, -Wpedantic -Werror)"
    else fail "hook (application clock and output hook, -Wpedantic -Werror)" "$tmp/cc.log" "$tmp/app.out"; fi
}

check_cortex_m4() {
    if ! command -v arm-none-eabi-gcc >/dev/null; then echo "SKIP: profile:cortex-m4 (no arm-none-eabi-gcc)"; return; fi
    if arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -std=c99 -Os \
        -Wall -Wextra -Werror -I"$tmp" -I"$AXC_BUILD/include" -c "$tmp/mlp.c" -o "$tmp/mlp_m4.o" 2>"$tmp/m4.log"; then
        pass "cortex-m4 (profiled C compiles; the clock is the application's)"
    else fail "cortex-m4 (profiled C compiles; the clock is the application's)" "$tmp/m4.log"; fi
}

# Dumps of lenet5 with its weights, then with one layer ("3", the second conv)
# perturbed: compare names "3".
check_dump_and_compare() {
    local model=$root/examples/lenet5.ax
    "$AXC" "$model" --seed 5 --save-weights "$tmp/w.safetensors" 2>"$tmp/err" || { fail dump "$tmp/err"; return; }
    "$PYTHON" - "$tmp/w.safetensors" "$tmp/bad.safetensors" <<'EOF' 2>"$tmp/err" || { fail dump "$tmp/err"; return; }
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = bytearray(raw[8 + n:])
begin, end = header['3.weight']['data_offsets']
for i in range(begin, end, 4):   # scale the second conv's weights by 1.5
    v = struct.unpack_from('<f', data, i)[0]
    struct.pack_into('<f', data, i, v * 1.5)
open(sys.argv[2], 'wb').write(raw[:8 + n] + bytes(data))
EOF
    "$AXC" run "$model" --weights "$tmp/w.safetensors" --dump-dir "$tmp/good" >/dev/null 2>"$tmp/err" &&
        "$AXC" run "$model" --weights "$tmp/bad.safetensors" --dump-dir "$tmp/bad" >/dev/null 2>>"$tmp/err" ||
        { fail dump "$tmp/err"; return; }
    local files
    files=$(ls "$tmp/good"/*.npy | wc -l)
    if [ "$files" -eq "$(ir_layers "$model")" ] && [ "$(grep -vc '^#' "$tmp/good/index.tsv")" -eq "$files" ]; then
        pass "dump ($files layers, index.tsv)"
    else fail "dump" "$tmp/good/index.tsv"; fi
    "$AXC" compare "$tmp/bad" "$tmp/good" >"$tmp/cmp.out" 2>&1
    local rc=$?
    if [ $rc -eq 1 ] && grep -q "first difference at layer '3'" "$tmp/cmp.out"; then pass "compare finds the planted layer"
    else echo "exit $rc" >"$tmp/why"; fail "compare finds the planted layer" "$tmp/why" "$tmp/cmp.out"; fi
    "$AXC" compare "$tmp/good" "$tmp/good" >"$tmp/same.out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^all [0-9]* layers agree' "$tmp/same.out"; then pass "compare: identical dumps agree"
    else fail "compare: identical dumps agree" "$tmp/same.out"; fi
    "$AXC" compare "$tmp/good" "$tmp/good" --rtol=abc >"$tmp/usage.out" 2>&1
    rc=$?
    if [ $rc -eq 2 ] && grep -q 'rtol expects' "$tmp/usage.out"; then pass "compare: bad --rtol is a usage error"
    else fail "compare: bad --rtol is a usage error" "$tmp/usage.out"; fi
}

# Well-formed XML that names what it should.
check_xml() {
    "$PYTHON" -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); t = d.toxml(); sys.exit(0 if all(w in t for w in sys.argv[2:]) else 1)' "$@"
}

check_pictures() {
    local model=$root/examples/mobilenetv2_block.ax
    if "$AXC" "$model" --emit=timeline -o "$tmp/plan.svg" 2>"$tmp/err" && check_xml "$tmp/plan.svg" "peak" "memory plan of mobilenetv2_block"; then
        pass "timeline (well-formed SVG, peak marked)"
    else fail "timeline (well-formed SVG, peak marked)" "$tmp/err"; fi
    if ! command -v dot >/dev/null; then
        echo "SKIP: profile:svg (Graphviz's dot is not installed)"
        PATH=/nonexistent "$AXC" "$model" --emit=svg -o "$tmp/g.svg" >/dev/null 2>"$tmp/err"
        return
    fi
    if "$AXC" "$model" --emit=svg -o "$tmp/g.svg" 2>"$tmp/err" && check_xml "$tmp/g.svg" "expand" "dw" "project" "in place" "peak"; then
        pass "svg (Graphviz: well-formed, names the layers, in-place and peak)"
    else fail "svg (Graphviz: well-formed, names the layers, in-place and peak)" "$tmp/err"; fi
    mkdir -p "$tmp/nodot"
    ln -s "$(command -v cc)" "$tmp/nodot/cc"
    PATH=$tmp/nodot "$AXC" "$model" --emit=svg -o "$tmp/none.svg" >/dev/null 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 2 ] && grep -q "needs Graphviz's 'dot'" "$tmp/err" && [ ! -e "$tmp/none.svg" ]; then
        pass "svg without dot: a clear message, exit 2, no file"
    else fail "svg without dot: a clear message, exit 2, no file" "$tmp/err"; fi
}

# The port-debugging loop with PyTorch: a Sequential of three Linear layers,
# its state_dict saved by python/axc_torch.py, the axc side given layer 1's
# weights scaled (a planted porting bug); dump_reference writes the PyTorch
# layers, axc compare names layer '1'.
check_torch_reference() {
    cat >"$tmp/seq.ax" <<'EOF'
@axiom seq(x::Float32[2, 16]) begin
    Dense(16 => 32)
    Dense(32 => 8)
    Dense(8 => 4)
end
EOF
    PYTHONPATH=$root/python "$PYTHON" - "$tmp" <<'EOF' >"$tmp/ref.log" 2>&1 || { fail torch-reference "$tmp/ref.log"; return; }
import sys, numpy as np, torch, axc_torch
tmp = sys.argv[1]
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 8), torch.nn.Linear(8, 4))
x = torch.randn(2, 16)
np.save(tmp + "/x.npy", x.numpy())
sd = {k: v.clone() for k, v in m.state_dict().items()}
sd["1.weight"] *= 1.5
axc_torch.save_safetensors(sd, tmp + "/bad.safetensors")
assert axc_torch.dump_reference(m, (x,), tmp + "/ref") == 3
EOF
    "$AXC" run "$tmp/seq.ax" --weights "$tmp/bad.safetensors" --input x="$tmp/x.npy" \
        --dump-dir "$tmp/port" >/dev/null 2>"$tmp/err" || { fail torch-reference "$tmp/err"; return; }
    "$AXC" compare "$tmp/port" "$tmp/ref" >"$tmp/cmp.out" 2>&1
    if [ $? -eq 1 ] && grep -q "first difference at layer '1'" "$tmp/cmp.out"; then
        pass "torch-reference (dump_reference + axc compare name the planted layer)"
    else fail "torch-reference (dump_reference + axc compare name the planted layer)" "$tmp/cmp.out"; fi
}

# A long benchmark shows its progress on a terminal (script gives it one)
# and prints nothing extra when stderr is a pipe.  The first line comes
# after 0.2 s: 40000 runs of LeNet-5 (about 45 us each on a Zen 4; 3000
# runs once lasted long enough) keep the run well past that.
check_progress() {
    local model=$root/examples/lenet5.ax
    if ! command -v script >/dev/null; then echo "SKIP: profile:progress (no script(1) for a terminal)"; return; fi
    script -qec "\"$AXC\" run \"$model\" --bench 40000" /dev/null >"$tmp/tty.out" 2>&1
    "$AXC" run "$model" --bench 40000 >/dev/null 2>"$tmp/pipe.err"
    if grep -q 'benchmark runs [0-9]*/40000' "$tmp/tty.out" && ! grep -q 'benchmark runs' "$tmp/pipe.err"; then
        pass "progress (on a terminal only)"
    else fail "progress (on a terminal only)" "$tmp/tty.out" "$tmp/pipe.err"; fi
}

check_table
check_long_names
check_progress
check_torch_reference
check_hook
check_cortex_m4
check_dump_and_compare
check_pictures
