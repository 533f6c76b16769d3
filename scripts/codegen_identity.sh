#!/usr/bin/env bash
# codegen_identity.sh REFERENCE_AXC [AXC]: whether a code-generator change
# kept the generated code byte for byte.  For every examples/*.ax, every IR
# case (tests/ir/cases) and every op-corpus model (tests/ops), at -O0 and
# -O2, and at -O2 with --profile and with --blas=openblas, and at -O0 and -O2
# with --quantize=int8 (calibrated on 2 random samples per input; the int8
# models of tests/quant too), both axc binaries
# write the C target (.c and .h) and the llvm target's textual IR (.ll, when
# both were built with LLVM), and each example's training step (axc --train
# --loss=cross_entropy, C only); the files are compared (the messages too:
# a model axc refuses must be refused alike) and every difference is listed.  Only code is generated, nothing is compiled.
#
#   make -j2 all && git worktree add /tmp/ref main && make -C /tmp/ref -j2 all
#   bash scripts/codegen_identity.sh /tmp/ref/build/bin/axc
#
# Prints one line per differing output and the counts:
#   codegen identity: C 0 of N differ, LLVM 0 of M differ
# Exit status 0 when nothing differs, 1 otherwise, 2 on bad usage.
# Environment: AXC_IDENTITY_FILTER (a substring: only models whose path holds it);
# AXC_IDENTITY_VARIANTS (flag sets separated by ';', e.g. "--emit=ir;--quantize=int8":
# these instead of the usual ones, for every model); AXC_IDENTITY_LLVM=no (C only).
# AXC_IDENTITY_QUANT=no (leave out the --quantize=int8 variants) or only (just them).
# A full run takes minutes (the large examples' weights, as LLVM constants).
set -u
# shellcheck source=scripts/identity_setup.sh
. "$(dirname "$0")/identity_setup.sh"

has_llvm() { "$1" --help 2>&1 | grep -E '^  llvm ' | grep -qv 'not built'; }
llvm=yes
has_llvm "$ref" && has_llvm "$new" || llvm=no
[ "${AXC_IDENTITY_LLVM:-}" = no ] && llvm=no

c_total=0 c_diff=0 ll_total=0 ll_diff=0
all_variants=("-O0" "-O2" "-O2 --profile" "-O2 --blas=openblas" "-O0 --quantize=int8" "-O2 --quantize=int8")
if [ -n "${AXC_IDENTITY_VARIANTS:-}" ]; then IFS=';' read -r -a all_variants <<<"$AXC_IDENTITY_VARIANTS"; fi

# calibration MODEL DIR: writes DIR/NAME.npy (2 standard normal samples) per
# float input of MODEL (read from its --emit=ir header line) and prints the
# --calibrate arguments.
calibration() {
    mkdir -p "$2"
    "$ref" "$1" --emit=ir 2>/dev/null | head -n 1 | "${PYTHON:-/usr/bin/python3}" -c '
import re, sys, numpy as np
line, out = sys.stdin.read(), sys.argv[1]
head = line[line.find("(") + 1:line.find(")")]
for name, dtype, dims in re.findall(r"(\w+): (\w+)\[([^\]]*)\]", head):
    shape = tuple(int(d) for d in dims.split(",") if d.strip())
    x = np.random.default_rng(1).standard_normal((2,) + shape).astype(np.float32)
    np.save(f"{out}/{name}.npy", x)
    print(f"--calibrate {name}={out}/{name}.npy", end=" ")' "$2"
}

# generate AXC OUTDIR MODEL EXT FLAGS...: axc's output and exit status.
generate() {
    local axc=$1 dir=$2 model=$3 ext=$4; shift 4
    mkdir -p "$dir"
    (cd "$dir" && "$axc" "$model" "$@" --seed=3 -o "m.$ext" >log 2>&1; echo "rc $?" >>log)
}

# same A B: the two directories hold the same files with the same bytes
# (the logs' messages included).
same() { diff -r "$1" "$2" >/dev/null 2>&1; }

for model in "$root"/examples/*.ax "$root"/tests/ir/cases/*.ax "$root"/tests/ops/*.ax "$root"/tests/quant/*.ax; do
    case $model in *"${AXC_IDENTITY_FILTER:-}"*) ;; *) continue ;; esac
    name=${model#"$root"/}
    variants=("${all_variants[@]}")
    case $name in examples/*) [ -n "${AXC_IDENTITY_VARIANTS:-}" ] ||
        variants=("-O0" "-O2" "--train --loss=cross_entropy" "-O0 --quantize=int8" "-O2 --quantize=int8") ;; esac
    case ${AXC_IDENTITY_QUANT:-yes} in
        no) variants=("${variants[@]/*quantize*/}") ;;
        only) variants=("-O0 --quantize=int8" "-O2 --quantize=int8") ;;
    esac
    for variant in "${variants[@]}"; do
        [ -n "$variant" ] || continue
        case $variant in *quantize*) variant="$variant $(calibration "$model" "$tmp/cal")" ;; esac
        # shellcheck disable=SC2086
        generate "$ref" "$tmp/ref" "$model" c $variant
        generate "$new" "$tmp/new" "$model" c $variant
        c_total=$((c_total + 1))
        if ! same "$tmp/ref" "$tmp/new"; then
            c_diff=$((c_diff + 1)); echo "DIFF: C $name $variant"
        fi
        rm -rf "$tmp/ref" "$tmp/new"
        case $variant in --train*) continue ;; esac   # the training step is C only
        [ "$llvm" = yes ] || continue
        # shellcheck disable=SC2086
        generate "$ref" "$tmp/ref" "$model" ll $variant
        generate "$new" "$tmp/new" "$model" ll $variant
        ll_total=$((ll_total + 1))
        if ! same "$tmp/ref" "$tmp/new"; then
            ll_diff=$((ll_diff + 1)); echo "DIFF: LLVM $name $variant"
        fi
        rm -rf "$tmp/ref" "$tmp/new"
    done
done
[ "$llvm" = yes ] || echo "SKIP: LLVM outputs (an axc was built without llvm-config)"
echo "codegen identity: C $c_diff of $c_total differ, LLVM $ll_diff of $ll_total differ"
[ "$c_diff" -eq 0 ] && [ "$ll_diff" -eq 0 ]
