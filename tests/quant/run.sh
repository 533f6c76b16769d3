#!/usr/bin/env bash
# int8 suite (axc --quantize=int8 --calibrate, docs/precision.md#int8-post-training-quantisation):
#   reference  qmlp (ReLU, ReLU6, plain), lenet5 (conv, max-pool, dense) and
#              qres (a residual add, a concat, a ReLU on its own: int8 too)
#              and qgap (a global mean-pool in int8), qpool (windowed
#              MeanPools: padding not counted, ceil mode, padding counted;
#              AdaptiveMeanPool; Flatten), qshuffle (a channel shuffle:
#              reshape, transpose, chunk; concat) and qbcast (means over
#              one dim, broadcasting adds), all in int8
#              built int8 and run on a held-out input, on every instruction
#              set the CPU has (AXRT_ISA forced): the same bytes on each, and
#              within one output LSB of the PyTorch fake-quant of the scheme
#              (reference.py); the figures say how many outputs are exact;
#              the llvm target (axc run --target=llvm) and -O0 (nothing
#              fused) give the same bytes
#   accuracy   every CNN example, random weights (--seed), calibrated on 8
#              random samples, against the float build on 4 held-out ones
#              (each build compiled once, the inputs run through it: held_out.py):
#              top-1 agreement and relative error printed (relative error
#              below 50 %: random-weight deep nets are a harsh case)
#   calibration error  axc's printed error on the calibration set (relative
#              and max abs, per output) against the same figures computed here
#              from the float and int8 builds run on each calibration sample
#   errors     bad calibration input: exit 2 and a message naming the problem
#   plan       --emit=ir lists each int8 node's kernel-call plan (plan.sh)
# Environment (set by tests/run.sh): AXC_ROOT, AXC, PYTHON.
set -u
root=${AXC_ROOT:?}
axc=${AXC:?}
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pass() { echo "PASS: quant $1"; }
fail() { echo "FAIL: quant $1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }
tail_of() { tail -n "${2:-10}" "$1" | sed 's/^/  /'; }

# make_samples FILE COUNT SEED DIMS...: standard normal float32 [COUNT, DIMS...]
make_samples() {
    "$python" -c "import sys, numpy as np
f, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dims = tuple(int(d) for d in sys.argv[4:])
np.save(f, np.random.default_rng(seed).standard_normal((n,) + dims).astype(np.float32))" "$@"
}

# split_samples FILE PREFIX: FILE's samples (dim 0) as PREFIX0.npy, PREFIX1.npy, ...
# (one Python start for all, not one per sample)
split_samples() {
    "$python" -c "import sys, numpy as np
for k, x in enumerate(np.load(sys.argv[1])): np.save(f'{sys.argv[2]}{k}.npy', x)" "$@"
}

isas() {
    echo portable
    grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo avx2
    grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo avx512
}

# reference MODEL AXFILE DIMS...
reference() {
    local model=$1 ax=$2 d=$work/ref_$1 isa first=
    shift 2
    mkdir -p "$d"
    make_samples "$d/cal.npy" 8 1 "$@"
    make_samples "$d/held.npy" 1 9 "$@"
    "$python" -c "import numpy as np; np.save('$d/x.npy', np.load('$d/held.npy')[0])"
    "$axc" "$ax" --seed=3 --save-weights "$d/w.safetensors" --emit=ir >/dev/null 2>&1
    for isa in $(isas); do
        if ! AXRT_ISA=$isa "$axc" run "$ax" --weights "$d/w.safetensors" --quantize=int8 \
            --calibrate x="$d/cal.npy" --input x="$d/x.npy" --output "$d/y_$isa.npy" >"$d/run.log" 2>&1; then
            fail "$model int8 on $isa: axc run"; tail_of "$d/run.log"; continue
        fi
        if [ -z "$first" ]; then first=$isa
        elif cmp -s "$d/y_$first.npy" "$d/y_$isa.npy"; then pass "$model int8: $isa bytes equal $first's"
        else fail "$model int8: $isa bytes equal $first's"; fi
    done
    [ -n "$first" ] || return
    # -O0 (no fusion: ReLUs and adds stay separate nodes) quantises to the same integers
    if ! AXRT_ISA=$first "$axc" run "$ax" -O0 --weights "$d/w.safetensors" --quantize=int8 \
        --calibrate x="$d/cal.npy" --input x="$d/x.npy" --output "$d/y_O0.npy" >"$d/o0.log" 2>&1; then
        fail "$model int8 at -O0: axc run"; tail_of "$d/o0.log"
    elif cmp -s "$d/y_$first.npy" "$d/y_O0.npy"; then pass "$model int8 at -O0: the same bytes as at -O2"
    else fail "$model int8 at -O0: the same bytes as at -O2"; fi
    if ! "$axc" --help | grep -E '^  llvm ' | grep -qv 'not built'; then
        echo "SKIP: quant $model int8 through the llvm target (this axc was built without llvm-config)"
    elif ! "$axc" run "$ax" --target=llvm --weights "$d/w.safetensors" --quantize=int8 --calibrate x="$d/cal.npy" \
        --input x="$d/x.npy" --output "$d/y_llvm.npy" >"$d/llvm.log" 2>&1; then
        fail "$model int8 through the llvm target: axc run"; tail_of "$d/llvm.log"
    elif cmp -s "$d/y_$first.npy" "$d/y_llvm.npy"; then pass "$model int8 through the llvm target (JIT): the C target's bytes"
    else fail "$model int8 through the llvm target (JIT): the C target's bytes"; fi
    if "$python" "$here/reference.py" "$model" "$d/w.safetensors" "$d/cal.npy" "$d/x.npy" \
        "$d/y_$first.npy" >"$d/ref.log" 2>&1; then
        pass "$model int8 within one LSB of the PyTorch fake-quant reference:$(sed 's/^ *[a-z0-9_]*://' "$d/ref.log")"
    else
        fail "$model int8 within one LSB of the PyTorch fake-quant reference"; tail_of "$d/ref.log"
    fi
    calib_error "$model" "$ax" "$d"
}

# calib_error MODEL AXFILE DIR: the line axc printed for the calibration set
# (DIR/run.log, calibrated on DIR/cal.npy) against the relative and max abs
# error of the int8 build against the float build over the same samples,
# each run here through axc run; they agree to 2 % of the figure (the
# interpreter computes axc's float layers in double, the builds in float).
calib_error() {
    local model=$1 ax=$2 d=$3 s count line
    split_samples "$d/cal.npy" "$d/c"
    count=$(ls "$d"/c[0-9]*.npy | wc -l)
    for s in $(seq 0 $((count - 1))); do
        if ! "$axc" run "$ax" --weights "$d/w.safetensors" --input x="$d/c$s.npy" --output "$d/cf$s.npy" \
                >"$d/cal.log" 2>&1 ||
           ! "$axc" run "$ax" --weights "$d/w.safetensors" --quantize=int8 --calibrate x="$d/cal.npy" \
                --input x="$d/c$s.npy" --output "$d/cq$s.npy" >"$d/cal.log" 2>&1; then
            fail "$model calibration error printed by axc: axc run"; tail_of "$d/cal.log"; return
        fi
    done
    line=$(grep 'int8 vs float on the calibration set' "$d/run.log")
    if "$python" - "$d" "$count" "$line" >"$d/calerr.log" 2>&1 <<'EOF'
import re, sys, numpy as np
d, count, line = sys.argv[1], int(sys.argv[2]), sys.argv[3]
m = re.search(r"\((\d+) samples\): output 0 \((\w+)\) relative error ([0-9.e+-]+) %, max abs error ([0-9.e+-]+)$", line)
if not m:
    sys.exit(f"no calibration-error line in axc's output: {line!r}")
f = np.concatenate([np.load(f"{d}/cf{s}.npy").astype(np.float64).ravel() for s in range(count)])
q = np.concatenate([np.load(f"{d}/cq{s}.npy").astype(np.float64).ravel() for s in range(count)])
rel, amax = 100 * np.linalg.norm(q - f) / np.linalg.norm(f), np.abs(q - f).max()
got_rel, got_max = float(m.group(3)), float(m.group(4))
print(f"axc printed {got_rel:.4g} % / {got_max:.4g}, the builds give {rel:.4g} % / {amax:.4g} over {count} samples")
ok = int(m.group(1)) == count and rel > 0 and abs(got_rel - rel) <= 0.02 * rel and abs(got_max - amax) <= 0.02 * amax
sys.exit(0 if ok else 1)
EOF
    then pass "$model calibration error printed by axc: $(cat "$d/calerr.log")"
    else fail "$model calibration error printed by axc"; tail_of "$d/calerr.log"; fi
}

# build_shared DIR NAME ARGS...: `axc ARGS -o DIR/NAME.c`, then DIR/NAME.so
# built as `axc run` builds it (compiler/run.c: axc_compile_shared), so that
# one build serves every held-out input.  axc's stderr goes to DIR/NAME.log.
build_shared() {
    local d=$1 name=$2
    shift 2
    "$axc" "$@" -o "$d/$name.c" >"$d/$name.log" 2>&1 &&
    ${CC:-cc} -std=c99 -O2 -fPIC -shared -o "$d/$name.so" "$d/$name.c" -I"$AXC_BUILD/include" \
        -Wl,-u,axrt_set_threads "$AXC_BUILD/lib/libaxrt.a" -lm -lpthread >>"$d/$name.log" 2>&1
}

# accuracy EXAMPLE: float vs int8 on held-out inputs.  Each build is compiled
# once (int8: calibrated once) and every held-out input runs through it
# (held_out.py); `axc run --quantize=int8` itself runs in reference().
accuracy() {
    local ex=$1 ax=$root/examples/$1.ax d=$work/acc_$1 dims
    mkdir -p "$d"
    dims=$("$axc" "$ax" --emit=ir 2>/dev/null | sed -n 's/^ *%[0-9]* = input x : Float32\[\([^]]*\)\].*/\1/p' |
           head -n 1 | tr ',' ' ')
    [ -n "$dims" ] || { fail "accuracy $ex: input shape not found"; return; }
    make_samples "$d/cal.npy" 8 11 $dims
    make_samples "$d/held.npy" 4 12 $dims
    split_samples "$d/held.npy" "$d/x"
    if ! build_shared "$d" f "$ax" --seed=5 ||
       ! build_shared "$d" q "$ax" --seed=5 --quantize=int8 --calibrate x="$d/cal.npy"; then
        fail "accuracy $ex: axc -o and cc"; tail_of "$d/f.log" 4; tail_of "$d/q.log" 4; return
    fi
    local layers
    layers=$(sed -n 's/.*: \([0-9]* of [0-9]* dense\/conv layers in int8, and [0-9]* add\/concat\/ReLU\/mean-pool, [0-9]* max-pool\/reshape\/transpose\/slice\/chunk\).*/\1/p' \
             "$d/q.log" | head -n 1)
    if "$python" "$here/held_out.py" "$d" 4 >"$d/acc.log" 2>&1
    then pass "accuracy $ex ($layers): $(cat "$d/acc.log")"
    else fail "accuracy $ex ($layers)"; tail_of "$d/acc.log"; fi
}

# expect_error NAME PATTERN ARGS...: exit 2 and PATTERN in stderr.
expect_error() {
    local name=$1 pattern=$2 rc
    shift 2
    "$axc" "$@" >"$work/err.out" 2>"$work/err.log"
    rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pattern" "$work/err.log"; then pass "error: $name"
    else fail "error: $name" "exit $rc (want 2), stderr:"; tail_of "$work/err.log" 4; fi
}

errors() {
    local mlp=$root/examples/mlp.ax d=$work/err
    mkdir -p "$d"
    make_samples "$d/good.npy" 4 1 1 784
    make_samples "$d/shape.npy" 4 1 1 783
    make_samples "$d/flat.npy" 4 1 784
    make_samples "$d/empty.npy" 0 1 1 784
    "$python" -c "import numpy as np; np.save('$d/f64.npy', np.zeros((4, 1, 784)))"
    "$python" -c "import numpy as np; np.save('$d/int.npy', np.zeros((4, 1, 784), dtype=np.int32))"
    expect_error "calibration file of the wrong shape" "holds Float32\[4, 1, 783\], but input 'x' takes Float32\[1, 784\]" \
        "$mlp" --quantize=int8 --calibrate x="$d/shape.npy" -o "$d/m.c"
    expect_error "calibration samples not along dim 0" "expected Float32\[S, ...\]" \
        "$mlp" --quantize=int8 --calibrate x="$d/flat.npy" -o "$d/m.c"
    expect_error "calibration file of the wrong dtype (Float64)" "holds Float64" \
        "$mlp" --quantize=int8 --calibrate x="$d/f64.npy" -o "$d/m.c"
    expect_error "calibration file of the wrong dtype (Int32)" "holds Int32" \
        "$mlp" --quantize=int8 --calibrate x="$d/int.npy" -o "$d/m.c"
    expect_error "empty calibration set" "holds no samples" \
        "$mlp" --quantize=int8 --calibrate x="$d/empty.npy" -o "$d/m.c"
    expect_error "calibration file missing" "cannot read" \
        "$mlp" --quantize=int8 --calibrate x="$d/none.npy" -o "$d/m.c"
    expect_error "no such input" "has no input of that name" \
        "$mlp" --quantize=int8 --calibrate y="$d/good.npy" -o "$d/m.c"
    expect_error "--quantize without --calibrate" "needs calibration inputs" \
        "$mlp" --quantize=int8 -o "$d/m.c"
    expect_error "--calibrate without --quantize" "only with --quantize=int8" \
        "$mlp" --calibrate x="$d/good.npy" -o "$d/m.c"
    expect_error "--quantize=int4" "expects int8" "$mlp" --quantize=int4 --calibrate x="$d/good.npy" -o "$d/m.c"
    expect_error "--quantize with the cuda target" "c and llvm targets only" \
        "$mlp" --quantize=int8 --calibrate x="$d/good.npy" --target=cuda -o "$d/m.c"
    [ ! -e "$d/m.c" ] && pass "error: no output written" || fail "error: no output written" "$d/m.c exists"
}

reference qmlp "$here/qmlp.ax" 2 96
reference lenet5 "$root/examples/lenet5.ax" 1 28 28 1
reference qres "$here/qres.ax" 1 8 8 4
reference qgap "$here/qgap.ax" 1 6 5 4
reference qpool "$here/qpool.ax" 1 8 8 4
reference qshuffle "$here/qshuffle.ax" 1 4 4 6
reference qbcast "$here/qbcast.ax" 1 4 5 6
for ax in "$root"/examples/*.ax; do    # the CNN examples: those with a conv
    grep -q 'Conv(' "$ax" && accuracy "$(basename "$ax" .ax)"
done
errors
bash "$here/plan.sh"
