#!/usr/bin/env bash
# Firmware suite: the runtime core and generated C build for a Cortex-M4F with
# no libc beyond <math.h>/<string.h>, and examples/firmware (built through an
# installed axc.mk) runs the MLP under QEMU with the same outputs as the host,
# and two models fitted to a --ram budget (recomputation, tiling) likewise,
# and so do the int8 models, MLPerf Tiny (mlperf_tiny.sh) and the LLVM
# target's object (llvm_object.sh).
# Missing cross tools are a failure, not a skip: scripts/deps.sh installs them.
# Environment (set by tests/run.sh): AXC_ROOT, AXC_BUILD, AXC, PYTHON.
set -u
# the example's host reference (expected.h) links the built libaxrt: under
# make test-asan, with the sanitizers it was built with
export HOST_CC=${CC:-cc}
root=${AXC_ROOT:?}
here=$(cd "$(dirname "$0")" && pwd)
build=${AXC_BUILD:?}
axc=${AXC:?}
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Every firmware image below builds through examples/firmware/Makefile with the
# same CFLAGS, so the runtime core (axc.mk's AXRT_OBJS, about 11 s of
# arm-none-eabi-gcc) is compiled once, by the first build (the installed
# example's), into one directory the others reuse.
export AXRT_OBJDIR=$work/axrt-obj
M4=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -std=c99 -Wall -Wextra -Werror)
SEED=1

pass() { echo "PASS: firmware $1"; }
fail() { echo "FAIL: firmware $1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }
# The last lines of a log, indented, for a FAIL's details.
tail_of() { tail -n "${2:-15}" "$1" | sed 's/^/  /'; }

check_tools() {
    local t missing=()
    for t in arm-none-eabi-gcc arm-none-eabi-nm arm-none-eabi-size qemu-system-arm; do
        command -v "$t" >/dev/null || missing+=("$t")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        fail "cross tools" "missing: ${missing[*]} (install with: sh scripts/deps.sh)"
        return 1
    fi
    pass "cross tools"
}

# Symbols an object of the freestanding core may leave undefined: libm, the
# three <string.h> functions, EABI compiler helpers, and the runtime itself.
ALLOWED_UNDEF='^(__aeabi_[a-z0-9_]+|memcpy|memset|memmove|axrt_[a-z0-9_]+|(exp|log|sqrt|tanh|erf|expm1|log1p|fabs|ldexp|pow|fmax|fmin|floor|ceil|sin|cos|tan|asin|acos|atan|sinh|cosh|asinh|acosh|atanh|rint|fmod|round)f?)$'

# Compiles the installed runtime sources and every example's generated C with
# the Cortex-M4F flags, then checks what the objects need from outside.
cross_compile_all() {
    local objs=() bad
    if [ "${AXC_TEST_SANITIZED:-}" = 1 ]; then
        # under make test-asan only arm-none-eabi-gcc, uninstrumented, would
        # run on what make test compiles alike (the ir and compile suites run
        # axc -o on every example under the sanitizers)
        echo "SKIP: firmware cross-compile runtime and examples (under make test-asan: make test runs it)"
    else
        cross_compile_float objs
    fi
    cross_compile_half objs
    [ ${#objs[@]} -gt 0 ] || return 0
    bad=$(arm-none-eabi-nm -u "${objs[@]}" | awk 'NF == 2 { print $2 }' | sort -u | grep -Ev "$ALLOWED_UNDEF")
    if [ -z "$bad" ]; then pass "freestanding (only libm, mem*, EABI helpers undefined)"
    else fail "freestanding (only libm, mem*, EABI helpers undefined)" "also needs:" $bad; fi
}

# Generated C ($1) with each parameter literal cut to its first line: the
# rest of a tensor's bytes are zeros, the code, symbols and section sizes
# the same (all_minilm_l6_v2: 365 MB of C, 11.5 s of arm-none-eabi-gcc, to
# 0.1 MB and 0.3 s).  The literal's lines are cg_bytes_literal's, which the
# compile suite compiles whole in every example (gcc, clang, g++), and every
# firmware image below compiles its model's whole literal for the M4.
cut_param_literals() {
    awk '/^static const union \{ unsigned char bytes\[.* = \{$/ { print; inblock = 1; next }
         inblock && /^"/ { if (!kept++) print; next }
         { inblock = 0; kept = 0; print }' "$1"
}

# cross_compile_float ARRAY: the runtime sources and every example; the
# objects are appended to the array named ARRAY.  The runtime objects are the
# firmware images' (AXRT_OBJDIR, examples/firmware/Makefile's flags: -Os,
# -Werror), made here if no image has made them yet.
cross_compile_float() {
    local -n into=$1
    local src ax stem obj
    for src in "$work"/prefix/share/axc/runtime/*.c; do
        stem=$(basename "$src" .c)
        obj=$AXRT_OBJDIR/$stem.o
        if env -u AXC make -C "$work/cross" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
            "$obj" >"$work/cc.log" 2>&1; then
            pass "cross-compile runtime/$stem.c"; into+=("$obj")
        else
            fail "cross-compile runtime/$stem.c"; tail_of "$work/cc.log"
        fi
    done
    for ax in "$root"/examples/*.ax; do
        stem=$(basename "$ax" .ax)
        if ! "$axc" "$ax" -o "$work/cross/$stem.c" 2>"$work/cc.log"; then
            fail "cross-compile $stem.ax (axc)"; tail_of "$work/cc.log"; continue
        fi
        cut_param_literals "$work/cross/$stem.c" >"$work/cross/$stem.cut.c"
        if arm-none-eabi-gcc "${M4[@]}" -Os -I"$work/prefix/include" -c "$work/cross/$stem.cut.c" \
            -o "$work/cross/$stem.o" 2>"$work/cc.log"; then
            pass "cross-compile $stem.ax"; into+=("$work/cross/$stem.o")
        else
            fail "cross-compile $stem.ax"; tail_of "$work/cc.log"
        fi
    done
}

# cross_compile_half ARRAY: Float16/BFloat16 models (docs/precision.md), the
# same, for a few examples.
cross_compile_half() {
    local -n into=$1
    local dt stem
    for dt in Float16 BFloat16; do
        for stem in mlp lenet5 mobilenetv2_block gpt_block; do
            if ! "$axc" "$root/examples/$stem.ax" --dtype=$dt -o "$work/cross/${stem}_$dt.c" 2>"$work/cc.log"; then
                fail "cross-compile $stem.ax --dtype=$dt (axc)"; tail_of "$work/cc.log"; continue
            fi
            if arm-none-eabi-gcc "${M4[@]}" -Wpedantic -Os -I"$work/prefix/include" -c "$work/cross/${stem}_$dt.c" \
                -o "$work/cross/${stem}_$dt.o" 2>"$work/cc.log"; then
                pass "cross-compile $stem.ax --dtype=$dt"; into+=("$work/cross/${stem}_$dt.o")
            else
                fail "cross-compile $stem.ax --dtype=$dt"; tail_of "$work/cc.log"
            fi
        done
    done
}

# Builds examples/firmware out of tree against the installed axc.mk.
build_firmware() {
    mkdir -p "$work/fw"
    if env -u AXC make -C "$work/fw" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        AXC_FLAGS=--seed=$SEED all >"$work/fw.log" 2>&1; then
        pass "build examples/firmware (mlp)"
    else
        fail "build examples/firmware (mlp)"; tail_of "$work/fw.log"; return 1
    fi
}

run_in_qemu() {
    local rc
    timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$work/fw/fw.elf" \
        >"$work/qemu.out" 2>"$work/qemu.err"
    rc=$?
    if [ $rc -eq 0 ] && [ "$(tail -n 1 "$work/qemu.out")" = "RESULT: PASS" ]; then
        pass "qemu mps2-an386 run (exit 0, RESULT: PASS)"
    else
        fail "qemu mps2-an386 run (exit 0, RESULT: PASS)" "qemu exit status $rc"
        tail_of "$work/qemu.out" 5; tail_of "$work/qemu.err" 5; return 1
    fi
}

# The same inputs on the host (axc run, same seed); outputs within 1e-5 relative.
compare_with_host() {
    "$python" - "$work/x.npy" <<'EOF'
import sys, numpy as np
i = np.arange(784, dtype=np.int64)
x = (((37 * i) % 101) - 50).astype(np.float32) / np.float32(64)
np.save(sys.argv[1], x.reshape(1, 784))
EOF
    if ! "$axc" run "$root/examples/mlp.ax" --seed=$SEED --input x="$work/x.npy" \
        --output "$work/y.npy" >"$work/host.log" 2>&1; then
        fail "outputs match the host build"; tail_of "$work/host.log"; return
    fi
    if "$python" "$root/tests/firmware/compare_device.py" "$work/qemu.out" "$work/y.npy" element \
        >"$work/cmp.log" 2>&1
    then pass "outputs match the host build (rel <= 1e-5)"
    else fail "outputs match the host build (rel <= 1e-5)"; tail_of "$work/cmp.log"; fi
}

# Float16/BFloat16 builds of the same MLP (AXC_FLAGS --dtype=...) run under
# QEMU and print what the host's portable half kernels compute (AXRT_ISA=
# portable: the same C, the same order of additions; only libm's expf in the
# softmax may differ by a float ulp, which can flip one rounding to the
# format): max |device - host| <= 4u of the largest output (u = 2^-11
# Float16, 2^-8 BFloat16).  Needs compare_with_host's x.npy.
half_on_firmware() {
    local dt u
    for dt in Float16 BFloat16; do
        [ $dt = Float16 ] && u=0.00048828125 || u=0.00390625
        mkdir -p "$work/fw$dt"
        if ! env -u AXC make -C "$work/fw$dt" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
            AXC_FLAGS="--seed=$SEED --dtype=$dt" fw.elf >"$work/fw$dt.log" 2>&1; then
            fail "$dt mlp on firmware: build"; tail_of "$work/fw$dt.log"; continue
        fi
        timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
            -semihosting-config enable=on,target=native -kernel "$work/fw$dt/fw.elf" \
            >"$work/qemu$dt.out" 2>&1
        if ! AXRT_ISA=portable "$axc" run "$root/examples/mlp.ax" --seed=$SEED --dtype=$dt \
            --input x="$work/x.npy" --output "$work/y$dt.npy" >"$work/host$dt.log" 2>&1; then
            fail "$dt mlp on firmware matches the host"; tail_of "$work/host$dt.log"; continue
        fi
        if "$python" - "$work/qemu$dt.out" "$work/y$dt.npy" "$u" >"$work/cmp$dt.log" 2>&1 <<'EOF'
import re, sys, numpy as np
values = [float(m.group(1)) for m in
          (re.match(r'^out0\[\d+\] (\S+)$', line) for line in open(sys.argv[1])) if m]
host = np.load(sys.argv[2]).astype(np.float64).ravel()
device = np.array(values)
if device.shape != host.shape:
    sys.exit(f"device printed {device.size} values, host has {host.size}")
err = np.max(np.abs(device - host)) / np.max(np.abs(host))
if not err <= 4 * float(sys.argv[3]):
    sys.exit(f"max |device - host| / max |host| = {err:.3g}")
EOF
        then pass "$dt mlp on firmware (QEMU) matches the host's portable kernels"
        else fail "$dt mlp on firmware (QEMU) matches the host's portable kernels"; tail_of "$work/cmp$dt.log"; fi
    done
}

# make size: prints the report; model + runtime code within 4 KiB, no heap.
check_size() {
    local code
    if ! env -u AXC make -C "$work/fw" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        AXC_FLAGS=--seed=$SEED size >"$work/size.log" 2>&1; then
        fail "size report (no heap)"; tail_of "$work/size.log"; return
    fi
    pass "size report (no heap)"
    code=$(sed -n 's/^code (model + runtime .text) *\([0-9]*\).*/\1/p' "$work/size.log")
    if [ -n "$code" ] && [ "$code" -le 4096 ]; then pass "mlp code <= 4 KiB ($code bytes)"
    else fail "mlp code <= 4 KiB" "got: ${code:-no figure}"; tail_of "$work/size.log"; fi
}

# "NAME OP" of each layer an image printed (QEMU output $1) with calls 1.
device_layers() { awk '$1 == "layer" && $4 == "calls" && $5 == 1 { print $2, $3 }' "$1"; }
# "NAME OP" of each layer in the table of `axc run --profile` (output $1).
host_layers() { awk '/^  layer/ { on = 1; next } on && /^  total/ { on = 0 } on { print $1, $2 }' "$1" 2>/dev/null; }

# PROFILE=1: the model built with --profile prints one "layer NAME OP calls 1
# ticks T" line per layer (SysTick as the application's clock), the same
# layers as `axc run --profile` lists on the host.
profile_on_firmware() {
    mkdir -p "$work/fwprof"
    if ! env -u AXC make -C "$work/fwprof" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        AXC_FLAGS=--seed=$SEED PROFILE=1 fw.elf >"$work/fwprof.log" 2>&1; then
        fail "profile on firmware: build"; tail_of "$work/fwprof.log"; return
    fi
    timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$work/fwprof/fw.elf" \
        >"$work/qemuprof.out" 2>&1
    "$axc" run "$root/examples/mlp.ax" --seed=$SEED --profile --bench 1 >"$work/hostprof.out" 2>&1
    local device host
    device=$(device_layers "$work/qemuprof.out")
    host=$(host_layers "$work/hostprof.out")
    if [ -n "$device" ] && [ "$device" = "$host" ] && grep -q '^RESULT: PASS' "$work/qemuprof.out"; then
        pass "profile on firmware: one line per layer, as on the host"
    else
        fail "profile on firmware: one line per layer, as on the host" "device:" "$device" "host:" "$host"
        tail_of "$work/qemuprof.out" 8
    fi
}

# A model fitted to a --ram budget (rematerialised or tiled) built into the
# firmware and run under QEMU: the size report's arena is within the budget,
# and the outputs match the host's run of the same model without --ram
# (inputs: main.c's pattern) within 1e-5 of the largest magnitude.
fitted_on_firmware() {
    local stem=$1 budget=$2 dir="$work/fit_$1" arena shape
    mkdir -p "$dir"
    if ! env -u AXC make -C "$dir" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        MODEL="$stem" MODEL_DIR="$root/tests/ir/cases" AXC_FLAGS="--seed=$SEED --ram=$budget" \
        fw.elf size >"$dir/build.log" 2>&1; then
        fail "$stem --ram=$budget on firmware: build"; tail_of "$dir/build.log"; return
    fi
    arena=$(awk '/^  peak/ { print $2; exit }' "$dir/build.log")
    timeout 120 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$dir/fw.elf" >"$dir/qemu.out" 2>&1
    shape=$(sed -n 's/.*(x::Float32\[\([0-9, ]*\)\]).*/\1/p' "$root/tests/ir/cases/$stem.ax")
    "$python" - "$dir/x.npy" "$shape" <<'EOF'
import sys, numpy as np
shape = [int(d) for d in sys.argv[2].split(",")]
i = np.arange(int(np.prod(shape)), dtype=np.int64)
np.save(sys.argv[1], ((((37 * i) % 101) - 50).astype(np.float32) / np.float32(64)).reshape(shape))
EOF
    "$axc" run "$root/tests/ir/cases/$stem.ax" --seed=$SEED --input x="$dir/x.npy" --output "$dir/y.npy" \
        >"$dir/host.log" 2>&1
    if [ -n "$arena" ] && [ "$arena" -le "$budget" ] && grep -q '^RESULT: PASS' "$dir/qemu.out" &&
        "$python" "$root/tests/firmware/compare_device.py" "$dir/qemu.out" "$dir/y.npy" max >"$dir/cmp.log" 2>&1
    then pass "$stem --ram=$budget on firmware (arena $arena bytes, outputs match the host's without --ram)"
    else
        fail "$stem --ram=$budget on firmware" "arena: ${arena:-no figure}, budget $budget"
        local log
        for log in qemu.out cmp.log host.log; do [ -f "$dir/$log" ] && tail_of "$dir/$log" 5; done
    fi
}

# --quantize=int8 (docs/precision.md#int8-post-training-quantisation) on the Cortex-M4: MODEL (DIR/MODEL.ax,
# its output an int8 layer's, not a float softmax's) built float and
# int8 (calibrated on random samples); the int8 image run under QEMU gives
# the very floats (so the very integers) the host's int8 build gives for the
# same input, and its flash (code + weights + constants) is at most 30 % of
# the float image's (unless SIZE is "nosize": a model of a few hundred
# weights, its flash the code's).  Prints both size reports' figures.
int8_on_firmware() {
    local model=$1 shape=$2 dir=$3 rtol=${4:-0} size=${5:-size} d=$work/q8_$1 flags report what
    mkdir -p "$d/float" "$d/int8"
    "$python" - "$d" "$shape" <<'EOF' || { fail "int8 $model: inputs"; return; }
import sys, numpy as np
d, shape = sys.argv[1], tuple(int(v) for v in sys.argv[2].split(","))
rng = np.random.default_rng(7)
np.save(f"{d}/cal.npy", rng.standard_normal((8,) + shape).astype(np.float32))
i = np.arange(int(np.prod(shape)), dtype=np.int64)
np.save(f"{d}/x.npy", ((((37 * i) % 101) - 50).astype(np.float32) / np.float32(64)).reshape(shape))
EOF
    flags="--seed=$SEED --quantize=int8 --calibrate x=$d/cal.npy"
    if ! env -u AXC make -C "$d/int8" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        MODEL="$model" MODEL_DIR="$dir" AXC_FLAGS="$flags" size >"$d/int8.log" 2>&1; then
        fail "int8 $model: firmware build, QEMU run and size report"; tail_of "$d/int8.log"; return
    fi
    pass "int8 $model: firmware build, QEMU run and size report"
    if ! "$axc" run "$dir/$model.ax" $flags --input x="$d/x.npy" --output "$d/y.npy" \
        >"$d/host.log" 2>&1; then
        fail "int8 $model: outputs on host and Cortex-M4"; tail_of "$d/host.log"; return
    fi
    what="identical outputs on host and Cortex-M4"
    [ "$rtol" = 0 ] || what="outputs on host and Cortex-M4 within $rtol (float softmax after int8)"
    if "$python" - "$d/int8/fw.out" "$d/y.npy" "$rtol" >"$d/cmp.log" 2>&1 <<'EOF'
import re, sys, numpy as np
values = [m.group(1) for m in (re.match(r'^out0\[\d+\] (\S+)$', l) for l in open(sys.argv[1])) if m]
device = np.array(values, dtype=np.float32)
host = np.load(sys.argv[2]).astype(np.float32).ravel()
rtol = float(sys.argv[3])
if rtol and device.shape == host.shape:
    err = float(np.max(np.abs(device - host) / np.abs(host)))
    print(f"largest relative difference {err:.3g}")
    sys.exit(0 if err <= rtol else 1)
if device.shape != host.shape or not np.array_equal(device, host):
    bad = np.flatnonzero(device != host) if device.shape == host.shape else []
    sys.exit(f"{len(bad)} of {host.size} differ; first: {[(int(k), float(device[k]), float(host[k])) for k in bad[:3]]}")
print(f"{host.size} outputs bit-identical")
EOF
    then pass "int8 $model: $what ($(cat "$d/cmp.log"))"
    else fail "int8 $model: $what"; tail_of "$d/cmp.log"; fi
    [ "$size" = nosize ] && return
    if ! env -u AXC make -C "$d/float" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        MODEL="$model" MODEL_DIR="$dir" AXC_FLAGS=--seed=$SEED size >"$d/float.log" 2>&1; then
        fail "int8 $model: flash <= 30 % of float"; tail_of "$d/float.log"; return
    fi
    if report=$(awk -f "$here/int8_sizes.awk" "$d/float.log" "$d/int8.log"); then
        pass "int8 $model: flash <= 30 % of float: $report"
    else fail "int8 $model: flash <= 30 % of float" "$report"; fi
}

# The installed example (share/axc/examples/firmware, no source tree) with a
# model directory holding mlp.ax and mlp.safetensors and no seed: the
# weights beside the .ax are found (else --require-weights refuses the
# build) and the image's own check against the host's outputs for those
# weights passes; without the weights file the build fails naming
# AXC_SEED; and an image given another model's expected outputs (seed 2's
# for seed 1's weights) prints RESULT: FAIL: the check can fail.
weights_on_firmware() {
    local mk=$work/prefix/share/axc/examples/firmware/Makefile d=$work/fwweights m=$work/fwmodels
    mkdir -p "$d" "$m" "$work/fwnone" "$work/fwseed1" "$work/fwseed2"
    cp "$root/examples/mlp.ax" "$m/mlp.ax"
    "$axc" "$m/mlp.ax" --seed=5 -o "$m/seed5.c" --save-weights="$m/mlp.safetensors" 2>/dev/null
    if env -u AXC make -C "$d" -f "$mk" MODEL_DIR="$m" run >"$d/build.log" 2>&1 &&
        grep -q '^RESULT: PASS' "$d/fw.out" && grep -q "weights=.*mlp.safetensors" "$d/build.log"; then
        pass "installed example: weights beside a MODEL_DIR model used, outputs checked against the host ($(grep '^expected:' "$d/fw.out"))"
    else fail "installed example: weights beside a MODEL_DIR model used, outputs checked against the host"; tail_of "$d/build.log"; fi
    rm "$m/mlp.safetensors"
    if ! env -u AXC make -C "$work/fwnone" -f "$mk" MODEL_DIR="$m" fw.elf >"$work/fwnone/build.log" 2>&1 &&
        grep -q "has parameters and no --weights.*AXC_SEED=N" "$work/fwnone/build.log"; then
        pass "installed example: no weights file, no AXC_SEED: the build fails naming AXC_SEED"
    else fail "installed example: no weights file, no AXC_SEED: the build fails naming AXC_SEED"; tail_of "$work/fwnone/build.log"; fi
    env -u AXC make -C "$work/fwseed2" -f "$mk" MODEL_DIR="$m" AXC_SEED=2 expected.h >/dev/null 2>&1
    env -u AXC make -C "$work/fwseed1" -f "$mk" MODEL_DIR="$m" AXC_SEED=1 expected.h >/dev/null 2>&1
    cp "$work/fwseed2/expected.h" "$work/fwseed1/expected.h" 2>/dev/null
    env -u AXC make -C "$work/fwseed1" -f "$mk" MODEL_DIR="$m" AXC_SEED=1 -o expected.h fw.elf >"$work/fwseed1/build.log" 2>&1
    timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$work/fwseed1/fw.elf" >"$work/fwseed1/qemu.out" 2>&1
    if [ -s "$work/fwseed1/fw.elf" ] && grep -q '^RESULT: FAIL' "$work/fwseed1/qemu.out"; then
        pass "example's output check fails on other expected outputs ($(grep '^expected:' "$work/fwseed1/qemu.out"))"
    else fail "example's output check fails on other expected outputs"; tail_of "$work/fwseed1/build.log" 5; tail_of "$work/fwseed1/qemu.out" 5; fi
}

# A quantised model file on the Cortex-M4, built by the installed axc.mk from
# the file itself: the image's outputs equal the host's portable build (the
# example's own check, CHECK_RTOL=0) and the host's `axc run` (its fastest
# int8 kernels) on the same input, float for float, so integer for integer.
# $1: what (a word for the lines), $2: the file, $3: its input's shape
# (comma-separated).
quantised_file_on_firmware() {
    local what=$1 file=$2 shape=$3 model d
    model=$(basename "${file%.*}")
    d=$work/q_$(basename "$file")
    mkdir -p "$d"
    cp "$file" "$d/"
    if ! env -u AXC make -C "$d" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        MODEL="$model" CHECK_RTOL=0 run >"$d/fw.out" 2>&1; then
        fail "$what $model: firmware build and QEMU run equal to the host's portable build"
        tail_of "$d/fw.out"; return
    fi
    pass "$what $model: firmware build and QEMU run equal to the host's portable build"
    "$python" - "$d/x.npy" "$shape" <<'EOF' || { fail "$what $model: input"; return; }
import sys, numpy as np
shape = [int(v) for v in sys.argv[2].split(",")]
i = np.arange(int(np.prod(shape)), dtype=np.int64)   # examples/firmware/main.c's input_value(i, 0)
np.save(sys.argv[1], ((((37 * i) % 101) - 50).astype(np.float32) / np.float32(64)).reshape(shape))
EOF
    if ! "$axc" run "$d/$(basename "$file")" --input x="$d/x.npy" --output "$d/y.npy" >"$d/host.log" 2>&1; then
        fail "$what $model: outputs on host and Cortex-M4"; tail_of "$d/host.log"; return
    fi
    if "$python" - "$d/fw.out" "$d/y.npy" >"$d/cmp.log" 2>&1 <<'EOF'
import re, sys, numpy as np
values = [m.group(1) for m in (re.match(r'^\S+\[\d+\] (\S+)$', l) for l in open(sys.argv[1])) if m]
device = np.array(values, dtype=np.float32)
host = np.load(sys.argv[2]).astype(np.float32).ravel()
if device.shape != host.shape or not np.array_equal(device, host):
    sys.exit(f"device {device.shape} host {host.shape}: "
             f"{int(np.sum(device != host)) if device.shape == host.shape else '-'} differ")
print(f"{host.size} outputs bit-identical")
EOF
    then pass "$what $model: host (axc run) and Cortex-M4 outputs ($(cat "$d/cmp.log"))"
    else fail "$what $model: host (axc run) and Cortex-M4 outputs"; tail_of "$d/cmp.log"; fi
}

# Quantised ONNX (tests/onnx/qmodels, onnxruntime's quantize_static;
# docs/onnx.md#quantised-models) and int8 TFLite (tests/tflite/models: among
# them LiteRT's table arithmetic of SOFTMAX, LOGISTIC and TANH, docs/tflite.md).
quantised_files_on_firmware() {
    local model
    for model in qresnet_qop qmobile_qdq_pc; do
        quantised_file_on_firmware "quantised onnx" "$root/tests/onnx/qmodels/$model.onnx" 4,3,12,12
    done
    quantised_file_on_firmware "int8 tflite" "$root/tests/tflite/models/i8_mcu.tflite" 1,16,16,3
    quantised_file_on_firmware "int8 tflite" "$root/tests/tflite/models/i8_misc.tflite" 1,6,6,4
    quantised_file_on_firmware "int8 tflite" "$root/tests/tflite/models/i8_op_tanh_2.tflite" 1,16,16
    quantised_file_on_firmware "int8 tflite" "$root/tests/tflite/models/i8_op_softmax_2.tflite" 1,16,16
}

. "$here/mlperf_tiny.sh"   # mlperf_tiny_on_firmware
. "$here/llvm_object.sh"   # llvm_on_firmware

main() {
    check_tools || { fail "remaining cases" "not run: cross tools missing"; return; }
    mkdir -p "$work/cross"
    if ! make -C "$root" --no-print-directory B="$build" install PREFIX="$work/prefix" \
        >"$work/install.log" 2>&1; then
        fail "make install"; tail_of "$work/install.log"; return
    fi
    if [ $# -gt 0 ]; then local f; for f in "$@"; do "$f"; done; return; fi   # only these cases
    weights_on_firmware
    cross_compile_all
    build_firmware || return
    run_in_qemu || return
    compare_with_host
    half_on_firmware
    check_size
    profile_on_firmware
    llvm_on_firmware   # after compare_with_host and profile_on_firmware: their host outputs
    fitted_on_firmware unet_remat 5120
    fitted_on_firmware conv_tile 100000
    int8_on_firmware qmlp 2,96 "$root/tests/quant"
    int8_on_firmware mlp 1,784 "$root/examples" 1e-6
    int8_on_firmware lenet5 1,28,28,1 "$root/examples"
    int8_on_firmware qres 1,8,8,4 "$root/tests/quant" 0 nosize   # int8 residual add, concat, ReLU
    int8_on_firmware qgap 1,6,5,4 "$root/tests/quant" 0 nosize   # int8 global mean-pool
    int8_on_firmware qpool 1,8,8,4 "$root/tests/quant" 0 nosize   # int8 windowed mean-pools, Flatten
    int8_on_firmware qshuffle 1,4,4,6 "$root/tests/quant" 0 nosize   # int8 reshape, transpose, chunk
    int8_on_firmware qbcast 1,4,5,6 "$root/tests/quant" 0 nosize   # int8 means, broadcasting adds
    quantised_files_on_firmware
    mlperf_tiny_on_firmware
}

main "$@"
