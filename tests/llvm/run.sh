#!/usr/bin/env bash
# llvm suite: the LLVM back end (docs/llvm.md) against the C target.
#  - every example (and four of them with --dtype=Float16 and BFloat16:
#    the half kernels the C target calls, bit-identical; three with
#    --quantize=int8: the same int8 kernels and constants), tests/llvm/cases (every elementwise op in fused loops,
#    Float32 and Float64) and tests/ir/cases (the op corpus, tests/ops/*.ax,
#    runs on the llvm target in the ops suite, at -O0 and -O2, against the
#    reference interpreter):
#    the host object of `axc -o m.o` defines the same global symbols as the C
#    target's compiled file, writes the same header, and a generic driver
#    (runner.c) linked against each gives the same outputs (compare.py:
#    within 1e-6 relative, and bit-identical: the same kernels and formulas run);
#  - `-o m.ll` is valid IR (opt -passes=verify), on every model but the six
#    with the most parameters (LL_SKIP, their --blas builds too);
#  - `axc run --jit` with CC pointing at nothing matches `axc run` (C);
#  - (mlp built from the LLVM object for Cortex-M4F runs under QEMU in the
#    firmware suite, tests/firmware/llvm_object.sh, beside its other images);
#  - --profile (docs/cli.md#seeing-inside-a-model): `axc run --target=llvm --profile` lists
#    every IR layer once with the C target's names, ops and shapes, its
#    layers summing to the measured total within 10 %; the profiled object
#    defines the same globals as the C target's, calls the application's
#    clock (one tick per call) and the output hook around every layer, and
#    its .ll verifies (for Cortex-M4F: the firmware suite);
#  - --dump-dir: the llvm target writes the C target's files (names and
#    index.tsv identical) and `axc compare` of the two dump dirs agrees
#    (single and multi-result layers, fused loops, in-place convs);
#  - --blas=openblas: objects and the JIT call cblas_sgemm and match the C
#    target's --blas build;
#  - bad --triple/--cpu are usage errors listing what LLVM knows.
# Without the back end built (no llvm-config), each case prints SKIP.
# Environment (set by tests/run.sh): AXC_ROOT, AXC_BUILD, AXC, PYTHON.
set -u
root=${AXC_ROOT:?}
build=${AXC_BUILD:?}
axc=${AXC:?}
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
comparisons=$work/comparisons.tsv   # check_model's and check_jit's, compared by one Python start at the end
: >"$comparisons"
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc=cc

pass() { echo "PASS: llvm $1"; }
fail() { echo "FAIL: llvm $1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }
skip() { echo "SKIP: llvm $1"; }
tail_of() { tail -n "${2:-15}" "$1" | sed 's/^/  /'; }

# "_Float16" for --dtype=Float16, "_quantize=int8" for --quantize=int8 ...:
# the options of a case, in its name.
case_suffix() {
    local first=${1:-}
    first=${first#--}
    [ -z "$first" ] || echo "_${first#dtype=}"
}

models_of() { # the *_model descriptors an object defines
    nm -g --defined-only "$1" | awk '$3 ~ /_model$/ { print $3 }' | sort
}

# A models.c listing the descriptors of object $1 for runner.c (and their
# names in models.txt beside it, for check_jit).
write_model_list() {
    local syms
    syms=$(models_of "$1")
    echo "$syms" >"${2%.c}.txt"
    {
        echo '#include "axrt.h"'
        for s in $syms; do echo "extern const axrt_model $s;"; done
        printf 'const axrt_model *const axc_models[] = {'
        for s in $syms; do printf '&%s, ' "$s"; done
        echo '0};'
        echo "const int axc_nmodels = $(echo "$syms" | wc -w);"
    } >"$2"
}

# runner.c compiled once (run_listing links it with each model's object)
runner_object() {
    [ -e "$work/runner.o" ] || "$cc" -std=c11 -O2 -I"$build/include" -c "$here/runner.c" -o "$work/runner.o"
}
run_listing() { # object, models.o, out (LINK_EXTRA: more libraries)
    runner_object >"$3.log" 2>&1 &&
    "$cc" -o "$3.bin" "$work/runner.o" "$2" "$1" "$build/lib/libaxrt.a" -lm \
        ${LINK_EXTRA:-} >"$3.log" 2>&1 && "$3.bin" >"$3" 2>>"$3.log"
}

# The examples whose .ll is not written (LLVMPrintModuleToString) and verified:
# those with the most parameters, where printing the weights as IR text and
# parsing it back is nearly all the time (all_minilm_l6_v2: 197 MB of .ll,
# 7.2 s of axc and 2.1 s of opt).  Their modules come from the functions
# that build every other module, each function verified in axc as it is
# built (cg_llvm_verify_function); the same post-O3 module is what their
# objects are compiled from, and those run bit-identical to the C target.
LL_SKIP=" all_minilm_l6_v2 resmlp50 resnet18 r4_bert_layer efficientnet_b0 mobilenet_v2 "

# Example $1 (.ax): C target vs LLVM object, header, symbols, .ll.  An
# option after it (--dtype=Float16) is passed to axc and names the case.
check_model() {
    local ax=$1 stem d
    shift
    stem=$(basename "$ax" .ax)$(case_suffix "$@")
    d="$work/$stem"
    mkdir -p "$d/c" "$d/l"
    if ! "$axc" "$ax" "$@" -o "$d/c/$stem.c" 2>"$d/c.log" ||
        ! "$cc" -std=c99 -O2 -I"$build/include" -c "$d/c/$stem.c" -o "$d/c/$stem.o" 2>>"$d/c.log"; then
        fail "$stem: C target builds"; tail_of "$d/c.log"; return
    fi
    if ! "$axc" "$ax" "$@" -o "$d/l/$stem.o" 2>"$d/l.log"; then
        fail "$stem: object through LLVM"; tail_of "$d/l.log"; return
    fi
    pass "$stem: object through LLVM"
    if cmp -s "$d/c/$stem.h" "$d/l/$stem.h"; then pass "$stem: same header as the C target"
    else fail "$stem: same header as the C target" "$(diff "$d/c/$stem.h" "$d/l/$stem.h" | head -5)"; fi
    local sc sl
    sc=$(nm -g --defined-only "$d/c/$stem.o" | awk '{ print $3 }' | sort | tr '\n' ' ')
    sl=$(nm -g --defined-only "$d/l/$stem.o" | awk '{ print $3 }' | sort | tr '\n' ' ')
    if [ "$sc" = "$sl" ]; then pass "$stem: same global symbols ($sc)"
    else fail "$stem: same global symbols" "C: $sc" "LLVM: $sl"; fi
    write_model_list "$d/c/$stem.o" "$d/models.c"
    if ! "$cc" -std=c11 -O2 -I"$build/include" -c "$d/models.c" -o "$d/models.o" 2>"$d/models.log"; then
        fail "$stem: runner's model list"; tail_of "$d/models.log"; return
    fi
    if ! run_listing "$d/c/$stem.o" "$d/models.o" "$d/c.txt"; then fail "$stem: runs (C)"; tail_of "$d/c.txt.log"; return; fi
    if ! run_listing "$d/l/$stem.o" "$d/models.o" "$d/l.txt"; then fail "$stem: runs (LLVM object)"; tail_of "$d/l.txt.log"; return; fi
    printf 'listing\t%s\t%s\t%s\n' "$stem" "$d/c.txt" "$d/l.txt" >>"$comparisons"
    [[ $LL_SKIP != *" $(basename "$ax" .ax) "* ]] || return 0
    # (opt reads the .ll with llvm-as's parser, then verifies it)
    if "$axc" "$ax" "$@" -o "$d/l/$stem.ll" 2>"$d/ll.log" &&
        opt -passes=verify "$d/l/$stem.ll" -o /dev/null 2>>"$d/ll.log"; then
        pass "$stem: .ll accepted by opt -passes=verify"
    else
        fail "$stem: .ll accepted by opt -passes=verify"; tail_of "$d/ll.log"
    fi
}

# `axc run --jit` with no C compiler against `axc run` through C, per model,
# at --seed=3 unless the options give one: the compile suite's xcheck runs
# each example so (and the ir suite each IR case), so the C side is one build
# in the run cache the suites share.  The outputs are compared at the end.
check_jit() {
    local ax=$1 stem name d seed=(--seed=3)
    shift
    stem=$(basename "$ax" .ax)$(case_suffix "$@")
    d="$work/$stem"
    [[ " $* " != *" --seed="* ]] || seed=()
    for name in $(sed 's/_model$//' "$d/models.txt" 2>/dev/null); do
        if ! "$axc" run "$ax" "${seed[@]}" "$@" --model="$name" --output-dir "$d/run_c_$name" >"$d/run_c.log" 2>&1; then
            fail "$stem: axc run $name (C)"; tail_of "$d/run_c.log"; continue
        fi
        if ! env CC=/nonexistent/cc PATH=/nonexistent "$axc" run --jit "$ax" "${seed[@]}" --model="$name" \
            "$@" --cc=/nonexistent/cc --output-dir "$d/run_j_$name" >"$d/run_j.log" 2>&1; then
            fail "$stem: axc run --jit $name with no C compiler"; tail_of "$d/run_j.log"; continue
        fi
        printf 'jit\t%s\t%s\t%s\n' "$stem: axc run --jit $name" "$d/run_c_$name" "$d/run_j_$name" >>"$comparisons"
    done
}

# The layer rows of an `axc run --profile` table ($1), one per line.
table_rows() {
    awk '/^  layer/ { on = 1; next } /^  total/ { on = 0 } on' "$1"
}

# The IR's layers (live non-source nodes) of model $1.
ir_layer_count() {
    "$axc" "$1" --emit=ir | awk '$1 ~ /^%/ && $3 != "input" && $3 != "param" && $3 != "scalar"' | wc -l
}

# `axc run --target=llvm --profile` (through the JIT): the C target's rows,
# and the layers add up to the time measured around the whole model.
check_profile_table() {
    local ax=$root/examples/lenet5.ax d="$work/prof" rows want
    mkdir -p "$d"
    if ! "$axc" run "$ax" --target=llvm --profile --bench 50 >"$d/l.txt" 2>"$d/l.log" ||
        ! "$axc" run "$ax" --profile --bench 1 >"$d/c.txt" 2>"$d/c.log"; then
        fail "profile: axc run --target=llvm --profile"; tail_of "$d/l.log"; tail_of "$d/c.log"; return
    fi
    rows=$(table_rows "$d/l.txt" | wc -l)
    want=$(ir_layer_count "$ax")
    if [ "$rows" -eq "$want" ] && [ "$(table_rows "$d/l.txt" | awk '{ NF -= 4; print }')" = \
        "$(table_rows "$d/c.txt" | awk '{ NF -= 4; print }')" ]; then
        pass "profile: lenet5 table through the JIT ($rows layers, the C target's names, ops and shapes)"
    else
        fail "profile: lenet5 table through the JIT" "rows $rows, IR layers $want"; tail_of "$d/l.txt"; tail_of "$d/c.txt"
    fi
    local sums
    if sums=$(awk '/^  total/ { r = $2 / $6; printf "%s us in layers, %s us measured", $2, $6; exit !(r > 0.9 && r < 1.1) }' \
        "$d/l.txt"); then pass "profile: layers sum to the total within 10 % ($sums)"
    else fail "profile: layers sum to the total within 10 %" "${sums:-no total line}"; fi
}

# The profiled host object: the C target's global symbols, an application
# clock (one tick per call) and an output hook seen around every layer
# (the profile suite's hook check, against the LLVM object), valid .ll.
check_profile_object() {
    local d="$work/profobj" sc sl
    mkdir -p "$d/c" "$d/l"
    if ! "$axc" "$root/examples/mlp.ax" --profile -o "$d/l/mlp.o" 2>"$d/l.log" ||
        ! "$axc" "$root/examples/mlp.ax" --profile -o "$d/c/mlp.c" 2>"$d/c.log" ||
        ! "$cc" -std=c99 -O2 -I"$build/include" -c "$d/c/mlp.c" -o "$d/c/mlp.o" 2>>"$d/c.log"; then
        fail "profile: object with --profile"; tail_of "$d/l.log"; tail_of "$d/c.log"; return
    fi
    sc=$(nm -g --defined-only "$d/c/mlp.o" | awk '{ print $2, $3 }' | sort | tr '\n' ' ')
    sl=$(nm -g --defined-only "$d/l/mlp.o" | awk '{ print $2, $3 }' | sort | tr '\n' ' ')
    if [ "$sc" = "$sl" ] && cmp -s "$d/c/mlp.h" "$d/l/mlp.h"; then
        pass "profile: object has the C target's globals and header ($sl)"
    else fail "profile: object has the C target's globals and header" "C: $sc" "LLVM: $sl"; fi
    cat >"$d/app.c" <<'EOF'
#include <stdio.h>
#include "mlp.h"
static uint64_t ticks;
uint64_t axc_profile_clock(void) { return ++ticks; }
static int seen, outputs;
static void hook(int index, const axrt_layer_profile *layer, const void *output)
{
    if (index == seen % MLP_LAYERS) seen++;
    outputs += output != NULL && layer == &mlp_profile[index];
}
int main(void)
{
    static float x[784], y[10];
    mlp_layer_hook = hook;
    if (mlp_forward(x, y, NULL) || mlp_forward(x, y, NULL)) return 1;
    for (int k = 0; k < MLP_LAYERS; k++)
        if (mlp_profile[k].calls != 2 || mlp_profile[k].ticks != 2) return 2; /* one tick per layer call */
    printf("%d layers\n", MLP_LAYERS);
    return seen == 2 * MLP_LAYERS && outputs == seen ? 0 : 3;
}
EOF
    if "$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$d/l" -I"$build/include" "$d/app.c" "$d/l/mlp.o" \
        "$build/lib/libaxrt.a" -lm -o "$d/app" 2>"$d/app.log" && "$d/app" >"$d/app.out" 2>>"$d/app.log"; then
        pass "profile: application clock and output hook around every layer ($(cat "$d/app.out"))"
    else fail "profile: application clock and output hook around every layer" "exit status $?"; tail_of "$d/app.log"; fi
    if "$axc" "$root/examples/mlp.ax" --profile -o "$d/l/mlp.ll" 2>"$d/ll.log" &&
        opt -passes=verify "$d/l/mlp.ll" -o /dev/null 2>>"$d/ll.log"; then
        pass "profile: .ll with --profile accepted by opt -passes=verify"
    else fail "profile: .ll with --profile accepted by opt -passes=verify"; tail_of "$d/ll.log"; fi
}

# --dump-dir through the llvm target against the C target's: the same files
# and index, and axc compare agrees.  Options after the model go to axc.
check_dump() {
    local ax=$1 stem d verdict
    shift
    stem=$(basename "$ax" .ax)$(case_suffix "$@")
    d="$work/dump_$stem"
    mkdir -p "$d"
    if ! "$axc" run "$ax" "$@" --seed=3 --target=llvm --dump-dir "$d/l" >"$d.log" 2>&1 ||
        ! "$axc" run "$ax" "$@" --seed=3 --dump-dir "$d/c" >>"$d.log" 2>&1; then
        fail "dump: $stem"; tail_of "$d.log"; return
    fi
    if ! diff <(ls "$d/c") <(ls "$d/l") >"$d.diff" || ! cmp -s "$d/c/index.tsv" "$d/l/index.tsv"; then
        fail "dump: $stem writes the C target's files"; tail_of "$d.diff"; return
    fi
    if verdict=$("$axc" compare "$d/l" "$d/c" 2>&1); then
        pass "dump: $stem, axc compare with the C target's dump: $verdict"
    else fail "dump: $stem, axc compare with the C target's dump" "$verdict"; fi
}

# --quantize=int8: qmlp (dense, folded ReLU/ReLU6 clamps), lenet5 (conv,
# pooling, dense), squeezenet1_1 (1x1 and 3x3 convs, concat),
# mobilenetv2_block (a depthwise conv: the channel-block kernels) and the
# quant suite's qpool and qshuffle (int8 mean-pools, data movement)
# calibrated on random samples: the object and the JIT against the C target.
check_int8() {
    local spec ax dims
    for spec in "$root/tests/quant/qmlp.ax 2,96" "$root/examples/lenet5.ax 1,28,28,1" \
        "$root/examples/squeezenet1_1.ax 1,64,64,3" "$root/examples/mobilenetv2_block.ax 1,14,14,32" \
        "$root/tests/quant/qpool.ax 1,8,8,4" "$root/tests/quant/qshuffle.ax 1,4,4,6"; do
        read -r ax dims <<<"$spec"
        "$python" -c "import sys, numpy as np
dims = tuple(int(d) for d in sys.argv[2].split(','))
np.save(sys.argv[1], np.random.default_rng(1).standard_normal((4,) + dims).astype(np.float32))" \
            "$work/cal_$(basename "$ax" .ax).npy" "$dims"
        check_model "$ax" --quantize=int8 --seed=3 --calibrate x="$work/cal_$(basename "$ax" .ax).npy"
        check_jit "$ax" --quantize=int8 --seed=3 --calibrate x="$work/cal_$(basename "$ax" .ax).npy"
    done
}

# --blas=openblas (docs/performance.md) on the llvm target: float32 dense and
# matmul call cblas_sgemm from the object and under the JIT (OpenBLAS loaded
# with dlopen), matching the C target's --blas build; weights perturbed so
# that the biases are not zero.  A library that cannot be loaded is exit 2.
check_blas() {
    local ax stem w out st
    printf '#include <cblas.h>\nint main(void) { return cblas_sdot(0, 0, 1, 0, 1) != 0.0f; }\n' >"$work/ob.c"
    if ! "$cc" "$work/ob.c" -o "$work/ob" -lopenblas >/dev/null 2>&1; then
        skip "--blas=openblas (no OpenBLAS: cblas.h, -lopenblas)"; return
    fi
    local models=("$root"/examples/{mlp,r4_bert_layer,gpt_block}.ax "$root/tests/ops/matmul.ax") weights=()
    for ax in "${models[@]}"; do
        stem=$(basename "$ax" .ax)
        w="$work/blas_$stem.safetensors"
        "$axc" "$ax" --seed=3 --save-weights="$w" -o "$work/blas_$stem.c" >/dev/null 2>&1 && weights+=("$w")
    done
    # one Python start perturbs them all (each file as if alone)
    [ ${#weights[@]} -eq 0 ] || "$python" "$root/tests/cli/write_weights.py" perturb "${weights[@]}" ||
        { fail "--blas=openblas: weights perturbed"; return; }
    for ax in "${models[@]}"; do
        stem=$(basename "$ax" .ax)
        w="$work/blas_$stem.safetensors"
        [ -f "$w" ] || { fail "$stem --blas=openblas: weights"; continue; }
        LINK_EXTRA=-lopenblas check_model "$ax" --blas=openblas --weights="$w"
        out=$(nm "$work/${stem}_blas=openblas/l/${stem}_blas=openblas.o" 2>&1)
        if grep -q ' U cblas_sgemm$' <<<"$out" && ! grep -Eq 'axrt_(dense|matmul)_' <<<"$out"; then
            pass "$stem --blas=openblas: the object calls cblas_sgemm, not libaxrt's GEMM"
        else fail "$stem --blas=openblas: the object calls cblas_sgemm, not libaxrt's GEMM" \
            "$(grep -E 'cblas|axrt_(dense|matmul)' <<<"$out")"; fi
        check_jit "$ax" --blas=openblas --weights="$w"
    done
    out=$(AXC_OPENBLAS=libnosuchblas.so "$axc" run --jit --blas=openblas "$root/examples/mlp.ax" 2>&1); st=$?
    if [ $st -eq 2 ] && grep -q "cannot load OpenBLAS 'libnosuchblas.so'" <<<"$out"; then
        pass "--blas=openblas: an OpenBLAS the JIT cannot load is exit 2, named"
    else fail "--blas=openblas: an OpenBLAS the JIT cannot load is exit 2, named" "status $st" "$(head -c 300 <<<"$out")"; fi
}

check_bad_input() {
    local out st
    out=$("$axc" "$root/examples/mlp.ax" -o "$work/bad.o" --triple=nosuch-none-eabi 2>&1); st=$?
    if [ $st -eq 2 ] && grep -q "this LLVM has: .*arm" <<<"$out" && [ ! -e "$work/bad.o" ]; then
        pass "unknown triple: exit 2, lists LLVM's targets"
    else fail "unknown triple: exit 2, lists LLVM's targets" "status $st" "$(head -c 300 <<<"$out")"; fi
    out=$("$axc" "$root/examples/mlp.ax" -o "$work/bad.o" --triple=thumbv7em-none-eabihf --cpu=cortex-m44 2>&1); st=$?
    if [ $st -eq 2 ] && grep -q "unknown CPU 'cortex-m44'" <<<"$out" && grep -q "cortex-m4" <<<"$out" &&
        [ ! -e "$work/bad.o" ]; then
        pass "unknown CPU: exit 2, lists the target's CPUs"
    else fail "unknown CPU: exit 2, lists the target's CPUs" "status $st" "$(head -c 300 <<<"$out")"; fi
}

main() {
    if ! "$axc" --help | grep -E '^  llvm ' | grep -qv 'not built'; then
        skip "back end (this axc was built without llvm-config)"
        return
    fi
    local ax models=("$root"/examples/*.ax "$here"/cases/*.ax "$root"/tests/ir/cases/*.ax)
    for ax in "${models[@]}"; do check_model "$ax"; done
    for ax in "$root"/examples/*.ax "$here"/cases/*.ax; do check_jit "$ax"; done
    # half storage, float accumulation; r4_bert_layer's half modules call no
    # kernel these four do not (add, cast, dense, gelu, layernorm, mha)
    for ax in mlp lenet5 mobilenetv2_block gpt_block; do
        for dtype in Float16 BFloat16; do
            check_model "$root/examples/$ax.ax" --dtype=$dtype
            check_jit "$root/examples/$ax.ax" --dtype=$dtype
        done
    done
    check_int8
    check_profile_table
    check_profile_object
    for ax in "$root"/examples/lenet5.ax "$root"/examples/mobilenetv2_block.ax "$root"/tests/ir/cases/chunk.ax \
        "$root"/examples/gpt_block.ax; do check_dump "$ax"; done
    check_dump "$root/examples/lenet5.ax" --dtype=BFloat16
    check_blas
    check_bad_input
    "$python" "$here/compare.py" "$comparisons"
}

main
