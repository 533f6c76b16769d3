#!/usr/bin/env bash
# The optimising passes (issue 4), one PASS/FAIL line per case:
#   golden   `axc --emit=ir` of each model in golden/ (NAME.ir at -O2,
#            NAME.O0.ir at -O0) shows exactly the fused form expected
#   arena    each example's planned arena <= its figure in arena.expected
#            (smaller passes with a note to update the record) and equal to
#            the lower bound `--emit=mem` reports (the most bytes live at
#            once); a model that cannot reach it says why in a third column
#   O0-O2    `axc run --seed 3` at -O2 (generated C) agrees with the reference
#            interpreter on the -O0 graph within 1e-5 (relative to the
#            largest magnitude), every example and case
#   ram      --ram below the plan fails (exit 1) naming the peak; at the plan
#            it passes; save-weights writes the same state_dict at -O0 and -O2
#   remat    --ram below the plan recomputes a skip connection to fit, with
#            bit-identical outputs
#   remat-set  the values recomputed at each budget of remat/NAME.BUDGET.expected
#            (goldens: `axc cases/NAME.ax --ram=BUDGET --mem-report`, the
#            rematerialised and recomputed lines; the unit test
#            test_remat_against_exact checks the choice against the optimum)
#   remat-random  random skip-connection models (random_remat.py) at the
#            smallest arena remat reaches: the plan fits the budget it claims,
#            outputs bit-identical to the run without --ram, no output file
#            below it
#   remat-guard  no pass after remat hoists a copy back: at -O2 (fusion,
#            schedule, plan) the C of unet_remat under --ram=5K holds one
#            kernel per value --mem-report lists, by id, and its arena fits
#   remat-report  scripts/remat_report.py (make mem-report) on two cases:
#            a table row per model whose smallest budget is below its plan,
#            and a well-formed SVG naming the plotted model
#   rows-fused-exact  the expansions fuse_expand_depthwise marks are computed
#            inside their depthwise convs, and the depthwise convs it marks
#            band by band inside their projections, bit-identical to the
#            unfused build on every kernel path and thread count
#   plan:*   the kernel-call plan --emit=ir prints under each node (codegen/
#            cg_plan.c) is what the C back end prints: the plan's calls, in
#            order, are the generated C's calls of those kernels, for every
#            example at -O2 and at -O0
#   train-plan:*  axc --train --emit=ir shows the step the C target prints:
#            its `call` and `step call` lines are the calls of the generated
#            NAME_train_step, in order; with --grad-exchange its `call` lines
#            NAME_train_grads's and its `apply call` lines NAME_train_apply's
#   train-plan-clip:*  with --clip-grad-norm / --clip-grad-value, the step's
#            clip_norm / clip_value lines before its updates, and the same
#            clipping in the generated C
#   tile-*   pass_tile under a --ram below the plan's lower bound: the conv
#            stack of cases/conv_tile.ax (MobileNetV2's first layers) in row
#            tiles with halos, within 1e-5 of the untiled run (the depthwise
#            kernel rounds differently on a tile); the 50-layer residual MLP
#            in batch tiles, bit-identical
# Environment: AXC, AXC_ROOT, PYTHON.  A golden is made by hand with
#   axc MODEL.ax --emit=ir [-O0] > tests/ir/golden/NAME[.O0].ir  (check it by eye).
set -u
root=${AXC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
AXC=${AXC:-$root/build/bin/axc}
PYTHON=${PYTHON:-/usr/bin/python3}
here=$root/tests/ir
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {
    local name=$1; shift
    if "$@" >"$tmp/why" 2>&1; then echo "PASS: ir:$name"
    else echo "FAIL: ir:$name"; sed 's/^/  /' "$tmp/why" | head -25; fi
}

# model_file NAME: the .ax of an example or a case
model_file() {
    if [ -f "$root/examples/$1.ax" ]; then echo "$root/examples/$1.ax"
    else echo "$here/cases/$1.ax"; fi
}

check_golden() {
    local golden=$1 name level
    name=$(basename "$golden" .ir)
    level=-O2
    case $name in *.O0) name=${name%.O0}; level=-O0 ;; esac
    "$AXC" "$(model_file "$name")" --emit=ir "$level" >"$tmp/ir" || return 1
    diff -u "$golden" "$tmp/ir"
}

check_arena() {
    local name=$1 recorded=${2:-} why=${3:-} peak bound
    "$AXC" "$(model_file "$name")" --emit=mem >"$tmp/mem" || return 1
    peak=$(awk '/^  peak/ {print $2; exit}' "$tmp/mem")
    bound=$(awk '/^  lower bound/ {print $3; exit}' "$tmp/mem")
    echo "$name: peak $peak, lower bound $bound, recorded $recorded"
    [ "$peak" -le "$bound" ] || [ -n "$why" ] ||
        { echo "peak above the lower bound (no reason recorded in arena.expected)"; return 1; }
    [ -n "$recorded" ] || return 0
    [ "$peak" -le "$recorded" ] || { echo "arena grew: $peak > recorded $recorded"; return 1; }
    if [ "$peak" -lt "$recorded" ]; then
        echo "NOTE: ir:arena $name shrank to $peak (recorded $recorded): update tests/ir/arena.expected" >&3
    fi
}

# The passes keep the meaning: the reference interpreter on the -O0 graph
# (nothing fused or rewritten: the IR as lowered) against the generated C at
# -O2.  The -O2 build is the compile suite's xcheck build (the same command:
# one build in the shared run cache); compiled -O0 code is the ops corpus's
# single ops and plan-O0's calls (docs/tests.md, Keeping the suite fast).
check_levels_agree() {
    local file=$1 name
    name=$(basename "$file" .ax)
    mkdir -p "$tmp/$name/O0" "$tmp/$name/O2"
    "$AXC" run "$file" --interp -O0 --seed=3 --output-dir "$tmp/$name/O0" >/dev/null || return 1
    "$AXC" run "$file" --seed=3 --output-dir "$tmp/$name/O2" >/dev/null || return 1
    "$PYTHON" "$here/compare_runs.py" "$tmp/$name/O0" "$tmp/$name/O2" 1e-5
}

check_ram_budget() {
    local file=$root/examples/r3_resnet_block.ax peak
    peak=$("$AXC" "$file" --emit=mem | awk '/^  peak/ {print $2; exit}')
    "$AXC" "$file" --emit=mem --ram=64K >/dev/null 2>"$tmp/err"
    local rc=$?
    cat "$tmp/err"
    [ "$rc" -eq 1 ] || { echo "exit $rc with --ram=64K, expected 1"; return 1; }
    grep -q "over the --ram budget of 65536 bytes; peak pressure at %[0-9]* conv 'conv1'" "$tmp/err" || return 1
    grep -q "note: live there: %" "$tmp/err" || return 1
    "$AXC" "$file" --emit=mem --ram="$peak" >/dev/null || { echo "--ram=$peak refused"; return 1; }
    "$AXC" "$file" --emit=mem --ram=1M >/dev/null || { echo "--ram=1M refused"; return 1; }
    "$AXC" "$file" --emit=mem --ram=12Q >/dev/null 2>&1; [ $? -eq 2 ] || { echo "--ram=12Q accepted"; return 1; }
}

# --conv-algo (docs/performance.md#winograd-convolution): auto takes Winograd on
# R3's 64-channel layers and not on 16 channels, nor on 7x7 images (F(4,3)
# would have 4 tiles; F(2x2,3x3) only where forced); direct, winograd
# (F(4x4,3x3)) and winograd2 (F(2x2,3x3)) force it.
check_conv_algo() {
    local r3=$root/examples/r3_resnet_block.ax narrow=$tmp/narrow.ax small=$tmp/small.ax thin=$tmp/thin.ax
    printf '@axiom narrow(x::Float32[1, 28, 28, 16]) begin\n    Conv((3, 3), 16 => 16, pad=1)\nend\n' >"$narrow"
    printf '@axiom small(x::Float32[1, 7, 7, 256]) begin\n    Conv((3, 3), 256 => 256, pad=1)\nend\n' >"$small"
    printf '@axiom thin(x::Float32[1, 7, 7, 64]) begin\n    Conv((3, 3), 64 => 64, pad=1)\nend\n' >"$thin"
    ! "$AXC" "$small" --emit=ir | grep -q winograd || { echo "auto: Winograd on a 7x7x256 image"; return 1; }
    "$AXC" "$small" --emit=ir --conv-algo=winograd2 | grep -q 'layout=winograd_f2x2_panels' ||
        { echo "--conv-algo=winograd2: 7x7x256 not on F(2,3)"; return 1; }
    "$AXC" "$small" --emit=ir --conv-algo=winograd | grep -q 'layout=winograd_f4x4_panels' ||
        { echo "--conv-algo=winograd: 7x7x256 not on F(4,3)"; return 1; }
    ! "$AXC" "$thin" --emit=ir | grep -q winograd || { echo "auto: Winograd on a 7x7x64 image"; return 1; }
    "$AXC" "$r3" --emit=ir | grep -c 'call axrt_conv2d_winograd_f32' | grep -qx 2 ||
        { echo "auto: R3 does not run its two convs as Winograd"; return 1; }
    ! "$AXC" "$r3" --emit=ir --conv-algo=direct | grep -q winograd ||
        { echo "--conv-algo=direct still runs Winograd"; return 1; }
    ! "$AXC" "$narrow" --emit=ir | grep -q winograd || { echo "auto: Winograd on 16 channels"; return 1; }
    "$AXC" "$narrow" --emit=ir --conv-algo=winograd | grep -q 'layout=winograd_f4x4_panels' ||
        { echo "--conv-algo=winograd: no transformed weight"; return 1; }
    local refused
    refused=$("$AXC" "$narrow" --emit=ir --conv-algo=fast 2>&1) && { echo "--conv-algo=fast accepted"; return 1; }
    [[ $refused == *"'fast' (expected direct, winograd, winograd2 or auto)"* ]] ||
        { echo "--conv-algo=fast: $refused"; return 1; }
}

check_remat_set() {
    local golden=$1 name budget
    name=$(basename "$golden" .expected)
    budget=${name#*.}
    name=${name%%.*}
    "$AXC" "$here/cases/$name.ax" --ram="$budget" --mem-report >"$tmp/rep" || return 1
    grep -E '^rematerialised|^  recomputed' "$tmp/rep" | diff -u "$golden" -
}

# The smallest arena remat reaches (the one the error names below it).
smallest_arena() {
    "$AXC" "$1" --ram=64 --emit=mem 2>&1 | sed -n "s/.*needs a \([0-9]*\)-byte arena.*/\1/p"
}

check_remat_guard() {
    "$AXC" "$here/cases/unet_remat.ax" -O2 --seed=0 --ram=5K --mem-report -o "$tmp/guard.c" >"$tmp/rep" || return 1
    local listed in_c arena
    listed=$(sed -n 's/^  recomputed://p' "$tmp/rep" | grep -o '%[0-9]*' | sort | tr '\n' ' ')
    in_c=$(grep -o '/\* %[0-9]* [a-z_]* "[^"]*(recomputed)"' "$tmp/guard.c" | grep -o '%[0-9]*' | sort | tr '\n' ' ')
    arena=$(sed -n 's/.*_ARENA_BYTES ((size_t)\([0-9]*\)).*/\1/p' "$tmp/guard.h" | head -1)
    echo "listed: $listed; in the C: $in_c; arena $arena"
    [ -n "$listed" ] && [ "$listed" = "$in_c" ] && [ "$arena" -le 5120 ]
}

check_remat_report() {
    "$PYTHON" "$root/scripts/remat_report.py" "$AXC" "$tmp/remat.svg" unet_remat \
        "$here/cases/unet_remat.ax" "$here/cases/skip_remat.ax" >"$tmp/table" || return 1
    cat "$tmp/table"
    awk '$1 == "unet_remat" || $1 == "skip_remat" { if ($5 >= $2) bad = 1; n++ }
         END { exit !(n == 2 && !bad) }' "$tmp/table" || return 1
    "$PYTHON" -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert "unet_remat" in d.toxml()' \
        "$tmp/remat.svg"
}

# check_tile FILE BUDGET TOL: BUDGET is below the plan's lower bound; with
# --ram=BUDGET the stage is tiled, the plan fits, outputs agree (TOL 0: cmp).
check_tile() {
    local file=$1 budget=$2 tol=$3 bound got
    bound=$("$AXC" "$file" --emit=mem | awk '/^  lower bound/ {print $3; exit}')
    [ "$budget" -lt "$bound" ] || { echo "budget $budget not below the lower bound $bound"; return 1; }
    "$AXC" "$file" --ram="$budget" --mem-report >"$tmp/tile" || return 1
    grep '^tiled' "$tmp/tile" || { echo "no tiling reported"; return 1; }
    got=$(awk '/^  peak/ {print $2; exit}' "$tmp/tile")
    [ "$got" -le "$budget" ] || { echo "plan $got over the budget $budget"; return 1; }
    rm -rf "$tmp/tile.a" "$tmp/tile.b"; mkdir -p "$tmp/tile.a" "$tmp/tile.b"
    "$AXC" run --seed 4 "$file" --output-dir "$tmp/tile.a" >/dev/null 2>&1 || return 1
    "$AXC" run --seed 4 --ram="$budget" "$file" --output-dir "$tmp/tile.b" >/dev/null 2>&1 || return 1
    if [ "$tol" = 0 ]; then diff -r "$tmp/tile.a" "$tmp/tile.b"
    else "$PYTHON" "$here/compare_runs.py" "$tmp/tile.a" "$tmp/tile.b" "$tol"; fi
}

check_remat_random() {
    mkdir -p "$tmp/rand"
    "$PYTHON" "$here/random_remat.py" 7 8 "$tmp/rand" || return 1
    local f name peak low shrunk=0
    for f in "$tmp"/rand/*.ax; do
        name=$(basename "$f" .ax)
        peak=$("$AXC" "$f" --emit=mem | awk '/^  peak/ {print $2; exit}')
        low=$(smallest_arena "$f")
        [ -n "$low" ] && [ "$low" -le "$peak" ] || { echo "$name: no smallest arena ($low, plan $peak)"; return 1; }
        [ "$low" -lt "$peak" ] && shrunk=$((shrunk + 1))
        "$AXC" "$f" --ram="$low" --emit=mem >"$tmp/mem" || { echo "$name: --ram=$low refused"; return 1; }
        local got
        got=$(awk '/^  peak/ {print $2; exit}' "$tmp/mem")
        [ "$got" -le "$low" ] || { echo "$name: plan $got over its budget $low"; return 1; }
        mkdir -p "$tmp/rand/$name.plain" "$tmp/rand/$name.ram"
        "$AXC" run --seed 5 "$f" --output-dir "$tmp/rand/$name.plain" >/dev/null || return 1
        "$AXC" run --seed 5 --ram="$low" "$f" --output-dir "$tmp/rand/$name.ram" >/dev/null || return 1
        diff -r "$tmp/rand/$name.plain" "$tmp/rand/$name.ram" || return 1
        [ -n "$(ls "$tmp/rand/$name.ram")" ] || return 1
        "$AXC" "$f" --ram=$((low - 64)) -o "$tmp/rand/$name.c" 2>/dev/null
        [ $? -eq 1 ] && [ ! -e "$tmp/rand/$name.c" ] || { echo "$name: --ram=$((low - 64)) not refused cleanly"; return 1; }
        echo "$name: plan $peak, smallest with remat $low, outputs identical"
    done
    [ "$shrunk" -gt 0 ] || { echo "no random model needed remat"; return 1; }
}

# Rematerialisation (pass_remat): the skip connection of skip_remat is
# recomputed instead of kept, so --ram=16K fits a 20,480-byte plan; the
# outputs are bit-identical to the plan without it; 12K is below what any
# recomputation reaches: exit 1, the arena it needs named, no output file.
check_remat() {
    local file=$here/cases/skip_remat.ax
    "$AXC" "$file" --ram=16K --mem-report -o "$tmp/r.c" >"$tmp/rep" 2>&1 || { cat "$tmp/rep"; return 1; }
    grep -q '^rematerialised skip_remat: arena 20480 -> 16384 bytes, 1 values recomputed' "$tmp/rep" ||
        { cat "$tmp/rep"; return 1; }
    "$AXC" "$file" --ram=16K --emit=ir | grep -q 'layer="up (recomputed)"' || return 1
    mkdir -p "$tmp/remat/plain" "$tmp/remat/ram"
    "$AXC" run --seed 3 "$file" --output-dir "$tmp/remat/plain" >/dev/null || return 1
    "$AXC" run --seed 3 --ram=16K "$file" --output-dir "$tmp/remat/ram" >/dev/null || return 1
    cmp "$tmp/remat/plain/out0.npy" "$tmp/remat/ram/out0.npy" || return 1
    "$AXC" "$file" --ram=12K -o "$tmp/small.c" 2>"$tmp/err"
    local rc=$?
    cat "$tmp/err"
    [ "$rc" -eq 1 ] && [ ! -e "$tmp/small.c" ] && grep -q "needs a 16384-byte arena, over the --ram budget of 12288" "$tmp/err"
}

# cases/expand_depthwise.ax: the C computes both expansions inside their
# depthwise convs, and those band by band inside their projections;
# cases/inverted_residual.ax: three whole blocks band by band (residuals,
# stride 2, a 5x5 kernel), the squeeze-and-excitation block's expansion
# only; cases/stem_depthwise.ax: 3x3 stride-2 stems as the expansion, one
# band by band to its projection, one only with its depthwise conv;
# cases/stem_unfused.ax: none (a Winograd conv, a weight over 1 MiB).  The
# outputs are bit-identical to the unfused -O2 build's (--ram above the plan
# clears the fusion) on every kernel path (AXRT_ISA) and for 1 to 3 threads
# (where something is fused: --ram also plans a Winograd conv as direct).
check_rows_fused_exact() {
    check_rows_fused_case expand_depthwise 0 2 && check_rows_fused_case inverted_residual 1 3 &&
        check_rows_fused_case stem_depthwise 1 1 && check_rows_fused_case stem_unfused 0 0
}

# check_rows_fused_case NAME PAIRS BLOCKS: NAME's C has PAIRS expansion +
# depthwise calls and BLOCKS whole-block calls, and (if either is not 0)
# its outputs are the unfused build's, bit for bit.
check_rows_fused_case() {
    local file=$here/cases/$1.ax isa threads
    "$AXC" "$file" -o "$tmp/rows.c" || return 1
    [ "$(grep -c 'axrt_expand_depthwise_f32(' "$tmp/rows.c")" -eq "$2" ] || { echo "$1: not $2 pairs fused"; return 1; }
    [ "$(grep -c 'axrt_expand_dw_project_f32(' "$tmp/rows.c")" -eq "$3" ] || { echo "$1: not $3 blocks fused"; return 1; }
    [ "$2$3" != 00 ] || return 0
    for isa in portable avx2 avx512; do
        for threads in 1 2 3; do
            AXRT_ISA=$isa "$AXC" run --seed 3 --threads $threads "$file" --output "$tmp/fused.npy" >/dev/null || return 1
            AXRT_ISA=$isa "$AXC" run --seed 3 --threads $threads --ram=1024M "$file" --output "$tmp/plain.npy" \
                >/dev/null || return 1
            cmp "$tmp/fused.npy" "$tmp/plain.npy" || { echo "$1, $isa, $threads threads: outputs differ"; return 1; }
        done
    done
}

# check_plan_is_printed FILE LEVEL: the kernels of the `call` lines of
# --emit=ir, in order, are the calls of those kernels in the generated C.
check_plan_is_printed() {
    "$AXC" "$1" "$2" --emit=ir >"$tmp/plan.ir" || return 1
    "$AXC" "$1" "$2" --seed 1 -o "$tmp/plan.c" || return 1
    # (a copy is left out where source and destination are the same storage)
    sed -n 's/^ *call \([A-Za-z0-9_]*\)(.*/\1/p' "$tmp/plan.ir" | grep -vx memcpy >"$tmp/plan.kernels"
    [ -s "$tmp/plan.kernels" ] || { echo "no call lines in --emit=ir"; return 1; }
    sort -u "$tmp/plan.kernels" >"$tmp/plan.names"
    grep -oE '\b(axrt|axc)_[A-Za-z0-9_]+\(' "$tmp/plan.c" | tr -d '(' |
        grep -Fxf "$tmp/plan.names" >"$tmp/c.kernels"
    diff "$tmp/plan.kernels" "$tmp/c.kernels"
}

# train_kernels_match PREFIX FUNCTION: the kernels of $tmp/train.ir's lines
# "      PREFIXcall kernel(...)" (PREFIX an extended regex), memcpy left out,
# in order, are the calls of those kernels in the body of $tmp/train.c's
# FUNCTION.
train_kernels_match() {
    grep -E "^      $1call " "$tmp/train.ir" | sed 's/^ *[a-z ]*call \([A-Za-z0-9_]*\)(.*/\1/' |
        grep -vx memcpy >"$tmp/ir.kernels"
    [ -s "$tmp/ir.kernels" ] || { echo "no '$1call' lines in --train --emit=ir"; return 1; }
    sort -u "$tmp/ir.kernels" >"$tmp/ir.names"
    awk -v f="$2(" 'index($0, f) && !/;$/ {on = 1} on {print} on && /^}/ {exit}' "$tmp/train.c" |
        grep -oE '\b(axrt|axc)_[A-Za-z0-9_]+\(' | tr -d '(' | grep -Fxf "$tmp/ir.names" >"$tmp/c.kernels"
    diff "$tmp/ir.kernels" "$tmp/c.kernels"
}

# check_train_plan_is_printed FILE NAME: axc --train --emit=ir shows the step
# the C target prints (its nodes' plans and the step's own statements,
# codegen/cg_plan_train): the `call` and `step call` lines are
# NAME_train_step's calls; with --grad-exchange the `call` lines are
# NAME_train_grads's and the `apply call` lines NAME_train_apply's.
check_train_plan_is_printed() {
    local flags=(--train --loss=mse --optimizer=adam --seed 1)
    "$AXC" "$1" "${flags[@]}" --emit=ir >"$tmp/train.ir" || return 1
    "$AXC" "$1" "${flags[@]}" -o "$tmp/train.c" 2>/dev/null || return 1
    train_kernels_match '(step )?' "$2_train_step" || return 1
    "$AXC" "$1" "${flags[@]}" --grad-exchange --emit=ir >"$tmp/train.ir" || return 1
    "$AXC" "$1" "${flags[@]}" --grad-exchange -o "$tmp/train.c" 2>/dev/null || return 1
    grep -q '^      split ready(grads+' "$tmp/train.ir" || { echo "no split hand-offs in --emit=ir"; return 1; }
    train_kernels_match '' "$2_train_grads" && train_kernels_match 'apply ' "$2_train_apply"
}

# check_train_plan_clips FILE NAME: axc --train --clip-grad-norm / --clip-grad-value
# --emit=ir shows the clipping the C target prints: with the norm one
# `step clip_norm(...) to 0.5` line naming every update's gradient, before the
# first update, and one clip_grad_norm_ block in NAME_train_step; with the value a
# `step clip_value %N to 0.25` line right before each update of gradient %N, and
# as many clip_grad_value_ loops in the C; the calls as check_train_plan_is_printed's.
check_train_plan_clips() {
    local flags=(--train --loss=mse --optimizer=sgd --momentum=0.9 --seed 1) updates
    "$AXC" "$1" "${flags[@]}" --clip-grad-norm=0.5 --emit=ir >"$tmp/train.ir" || return 1
    "$AXC" "$1" "${flags[@]}" --clip-grad-norm=0.5 -o "$tmp/train.c" || return 1
    train_kernels_match '(step )?' "$2_train_step" || return 1
    awk '/^      step clip_norm\(.*\) to 0\.5$/ { n++; if (ups) bad = 1; s = $0; sub(/ to .*/, "", s)
                                               c = split(s, ids, /%/) - 1; for (i = 2; i <= c + 1; i++) {
                                                   sub(/[^0-9].*/, "", ids[i]); named["%" ids[i]] = 1 } }
         /^      step call axrt_optim_step/ { ups++; match($0, /%[0-9]+/); if (!(substr($0, RSTART, RLENGTH) in named)) bad = 1 }
         END { exit !(n == 1 && ups > 0 && c == ups && !bad) }' "$tmp/train.ir" ||
        { echo "--clip-grad-norm: not one clip_norm line naming every update's gradient before them"; return 1; }
    [ "$(grep -c 'clip_grad_norm_ \*/' "$tmp/train.c")" = 1 ] || { echo "no single clip_grad_norm_ in the C"; return 1; }
    "$AXC" "$1" "${flags[@]}" --clip-grad-value=0.25 --emit=ir >"$tmp/train.ir" || return 1
    "$AXC" "$1" "${flags[@]}" --clip-grad-value=0.25 -o "$tmp/train.c" || return 1
    train_kernels_match '(step )?' "$2_train_step" || return 1
    updates=$(awk '/^      step call axrt_optim_step/ { match($0, /%[0-9]+/); g = substr($0, RSTART, RLENGTH)
                                                 if (prev != "      step clip_value " g " to 0.25") bad = 1; n++ }
                   { prev = $0 } END { print bad ? -1 : n }' "$tmp/train.ir")
    [ "$updates" -gt 0 ] || { echo "--clip-grad-value: an update without its clip_value line right before it"; return 1; }
    [ "$(grep -c 'clip_grad_value_ \*/' "$tmp/train.c")" = "$updates" ] ||
        { echo "the C has not one clip_grad_value_ loop per update ($updates)"; return 1; }
}

check_saved_weights_are_originals() {
    local file=$root/examples/mobilenetv2_block.ax
    "$AXC" "$file" --seed 1 -O0 --save-weights "$tmp/w0.safetensors" || return 1
    "$AXC" "$file" --seed 1 -O2 --save-weights "$tmp/w2.safetensors" || return 1
    cmp "$tmp/w0.safetensors" "$tmp/w2.safetensors"
}

exec 3>&1
for golden in "$here"/golden/*.ir; do
    check "golden:$(basename "$golden" .ir)" check_golden "$golden"
done
# every example and case: at its lower bound; those in arena.expected also
# no larger than recorded (a row: NAME BYTES [why the bound is out of reach])
for file in "$root"/examples/*.ax "$here"/cases/*.ax; do
    name=$(basename "$file" .ax)
    row=$(awk -v n="$name" '$1 == n {$1 = ""; print}' "$here/arena.expected")
    check "arena:$name" check_arena "$name" $row
done
for file in "$root"/examples/*.ax "$here"/cases/*.ax; do
    check "O0-O2:$(basename "$file" .ax)" check_levels_agree "$file"
done
check ram-budget check_ram_budget
check conv-algo check_conv_algo
check remat check_remat
for golden in "$here"/remat/*.expected; do
    check "remat-set:$(basename "$golden" .expected)" check_remat_set "$golden"
done
check remat-random check_remat_random
check remat-guard check_remat_guard
check remat-report check_remat_report
check tile-conv check_tile "$here/cases/conv_tile.ax" 100000 1e-5
check tile-resmlp50 check_tile "$root/examples/resmlp50.ax" 40000 0
check save-weights-originals check_saved_weights_are_originals
for file in "$root"/examples/*.ax; do
    check "plan:$(basename "$file" .ax)" check_plan_is_printed "$file" -O2
    check "plan-O0:$(basename "$file" .ax)" check_plan_is_printed "$file" -O0
done
check train-plan:mlp check_train_plan_is_printed "$root/examples/mlp.ax" mlp
check train-plan:lenet5 check_train_plan_is_printed "$root/examples/lenet5.ax" lenet5
check train-plan-clip:mlp check_train_plan_clips "$root/examples/mlp.ax" mlp
check train-plan-clip:lenet5 check_train_plan_clips "$root/examples/lenet5.ax" lenet5
check rows-fused-exact check_rows_fused_exact
