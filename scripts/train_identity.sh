#!/usr/bin/env bash
# train_identity.sh REFERENCE_AXC [AXC]: whether a change kept the generated
# training step byte for byte (the companion of codegen_identity.sh, which
# covers inference and each example's plain --train).  Both axc binaries
# write, with the same flags:
#   - axc --train (.c and .h, the messages too) for the train suites' models
#     (tests/train/run.py's MLP in Float32, Float64, Float16, BFloat16 under
#     each loss and each optimizer configuration; its other models, Dropout,
#     tests/train/deep_residual.ax and every example under four optimizers,
#     with and without --grad-exchange, one with --blas=openblas);
#   - the step `axc train` builds (model.c, caught by a $CC that copies it
#     and fails) with --clip-grad-norm and --clip-grad-value;
# and every difference is listed.  Nothing is compiled or run.
#
#   bash scripts/train_identity.sh /tmp/ref/build/bin/axc
#
# Prints one line per differing output and the count:
#   train identity: C 0 of N differ
# Exit status 0 when nothing differs, 1 otherwise, 2 on bad usage.
set -u
# shellcheck source=scripts/identity_setup.sh
. "$(dirname "$0")/identity_setup.sh"
py=${PYTHON:-/usr/bin/python3}

# The suites' models as .ax files, and data for the axc train cases:
# $tmp/models/NAME.ax; $tmp/data/NAME_{x,t}.npy.
mkdir -p "$tmp/models" "$tmp/data"
"$py" - "$root" "$tmp" <<'EOF' || exit 2
import sys, numpy as np
root, tmp = sys.argv[1], sys.argv[2]
sys.path.insert(0, f"{root}/tests/train")
import run as tr
def put(name, src):
    open(f"{tmp}/models/{name}.ax", "w").write(src)
for dtype in ("Float32", "Float64", "Float16", "BFloat16"):
    put(f"mlp_relu_{dtype}", tr.model_src("relu", dtype))
put("mlp_gelu_Float32", tr.model_src("gelu", "Float32"))
for name, src, *_ in tr.MODELS:
    put(f"model_{name}", src.replace("DTYPE", "Float32"))
put("dropout", tr.DROP_SRC.replace("P1", "0.5").replace("P2", "0.25").replace("DTYPE", "Float32"))
rng = np.random.default_rng(1)
for name, x, y in (("mlp_relu_Float32", (4, 6), (4, 3)), ("model_batchnorm", (8, 6), (8, 3)),
                   ("model_attention", (2, 5, 6), (2, 5, 6)), ("model_conv", (2, 9, 9, 4), (2, 3))):
    np.save(f"{tmp}/data/{name}_x.npy", rng.standard_normal((2,) + x).astype(np.float32).reshape((2 * x[0],) + x[1:]))
    np.save(f"{tmp}/data/{name}_t.npy", rng.standard_normal((2,) + y).astype(np.float32).reshape((2 * y[0],) + y[1:]))
EOF
cp "$root"/tests/train/deep_residual.ax "$tmp/models/"

total=0 ndiff=0
# check LABEL: the two directories hold the same files with the same bytes.
check() {
    total=$((total + 1))
    if ! diff -r "$tmp/ref" "$tmp/new" >/dev/null 2>&1; then
        ndiff=$((ndiff + 1)); echo "DIFF: $1"
    fi
    rm -rf "$tmp/ref" "$tmp/new"
}

# step MODEL FLAGS...: axc --train by both.
step() {
    local model=$1; shift
    for side in ref new; do
        local axc=$ref; [ $side = new ] && axc=$new
        mkdir -p "$tmp/$side"
        (cd "$tmp/$side" && "$axc" --train "$model" "$@" --seed=3 -o m.c >log 2>&1; echo "rc $?" >>log)
    done
    check "--train ${model#"$tmp"/} $*"
}

# loop NAME FLAGS...: the step axc train builds for models/NAME.ax.
cat >"$tmp/cc" <<EOF
#!/bin/sh
for a in "\$@"; do case \$a in *model.c) cp "\$a" "\$CAPTURE/model.c" ;; esac; done
exit 1
EOF
chmod +x "$tmp/cc"
loop() {
    local name=$1; shift
    for side in ref new; do
        local axc=$ref; [ $side = new ] && axc=$new
        mkdir -p "$tmp/$side"
        (cd "$tmp/$side" && CAPTURE="$tmp/$side" AXC_CACHE_DIR=off CC="$tmp/cc" "$axc" train "$tmp/models/$name.ax" \
            --input x="$tmp/data/${name}_x.npy" --target "$tmp/data/${name}_t.npy" --loss=mse \
            --save-weights w.safetensors "$@" >/dev/null 2>&1)
        [ -f "$tmp/$side/model.c" ] || echo "no step caught: $side $name $*" >"$tmp/$side/missing"
        rm -f "$tmp/$side/w.safetensors"
    done
    check "train $name $*"
}

optims=("--optimizer=sgd --lr=0.05"
        "--optimizer=sgd --lr=0.05 --momentum=0.9 --nesterov --weight-decay=0.01"
        "--optimizer=sgd --lr=0.05 --momentum=0.8"
        "--optimizer=adam --lr=0.01"
        "--optimizer=adam --lr=0.01 --weight-decay=0.1 --beta1=0.8 --beta2=0.99"
        "--optimizer=adamw"
        "--optimizer=adamw --lr=0.01 --weight-decay=0.1 --eps=1e-6"
        "--optimizer=lion --lr=1e-3"
        "--optimizer=lion --lr=1e-3 --weight-decay=0.5")
few=("${optims[1]}" "${optims[4]}" "${optims[6]}" "${optims[8]}")

for dtype in Float32 Float64 Float16 BFloat16; do
    for loss in cross_entropy mse bce_with_logits; do
        for o in "${optims[@]}"; do
            # shellcheck disable=SC2086
            step "$tmp/models/mlp_relu_$dtype.ax" --loss=$loss $o
        done
    done
done
# shellcheck disable=SC2086
step "$tmp/models/mlp_relu_Float32.ax" --loss=mse ${optims[3]} --blas=openblas
for model in "$tmp"/models/model_*.ax "$tmp"/models/mlp_gelu_Float32.ax "$tmp"/models/dropout.ax \
             "$tmp"/models/deep_residual.ax "$root"/examples/*.ax; do
    for o in "${few[@]}"; do
        for extra in "" --grad-exchange; do
            # shellcheck disable=SC2086
            step "$model" --loss=mse $o $extra
        done
    done
done
for name in mlp_relu_Float32 model_batchnorm model_attention model_conv; do
    for clip in --clip-grad-norm=0.3 --clip-grad-value=0.05; do
        for o in "${optims[2]}" "${optims[3]}"; do
            # shellcheck disable=SC2086
            loop "$name" $clip $o
        done
    done
done
echo "train identity: C $ndiff of $total differ"
[ "$ndiff" -eq 0 ]
