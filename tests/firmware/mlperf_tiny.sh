# MLPerf Tiny on the Cortex-M4 (examples/mlperf_tiny; docs/firmware.md#mlperf-tiny),
# sourced by tests/firmware/run.sh (its work, root, here, axc, python, pass,
# fail, tail_of, and its AXRT_OBJDIR: these images link the runtime objects
# its other images use).  make test runs two of the four models, DS-CNN
# (convolutions, depthwise, a global mean-pool) and the FC autoencoder (dense layers with
# BatchNorm), to stay within its time; `make mlperf-tiny` runs all four.
#  - train.py trains their PyTorch twins a few steps (the checks are about
#    equality, not accuracy) and `axc run` of the .ax with those weights
#    matches the twin within 1e-4 of the largest output;
#  - the example's Makefile builds each float32 and int8 (calibrated on 16
#    held-out samples) image and runs it under QEMU; the image checks its
#    outputs against the host build of the same C (float32 within 1e-4 of
#    the largest, int8 CHECK_RTOL=0: the same floats, so the same integers);
#  - the images' outputs equal `axc run` on the host (its fastest kernels)
#    for the same input: int8 float for float, float32 within 1e-4;
#  - the instruction count per inference (insn_count.so) is at least half
#    the model's multiply-accumulates (the M4 does at most two per
#    instruction), and the table prints a row per model and dtype;
#  - the plugin's count agrees within 1 % with an independent one: the
#    autoencoder built with PROFILE=1 and run with -icount shift=0 (1 ns of
#    virtual time per instruction), its per-layer SysTick ticks at the 25 MHz
#    core clock summed and times 40.

MLPERF_TINY_MODELS=${MLPERF_TINY_MODELS:-ds_cnn fc_autoencoder}   # the models make test runs

mlperf_tiny_on_firmware() {
    local d=$work/mlperf_tiny ex=$root/examples/mlperf_tiny m dt
    if [ "${AXC_TEST_SANITIZED:-}" = 1 ]; then
        # cross-compiles and QEMU runs, none of them instrumented: make test runs it
        echo "SKIP: firmware mlperf tiny (under make test-asan: make test runs it)"; return
    fi
    if ! "$python" -c 'import numpy, torch' 2>/dev/null; then
        echo "SKIP: firmware mlperf tiny (no PyTorch for $python: the twins and their training need it)"; return
    fi
    mkdir -p "$d/weights"
    # shellcheck disable=SC2086
    if "$python" "$ex/train.py" --out "$d/weights" --steps 5 --axc "$axc" $MLPERF_TINY_MODELS >"$d/train.log" 2>&1
    then pass "mlperf tiny ($MLPERF_TINY_MODELS): trained, axc run equals the PyTorch twin (rel <= 1e-4)"
    else fail "mlperf tiny ($MLPERF_TINY_MODELS): trained, axc run equals the PyTorch twin"; tail_of "$d/train.log"; return; fi
    if env -u AXC make -C "$d" -f "$ex/Makefile" AXC_PREFIX="$work/prefix" PYTHON="$python" \
        MODELS="$MLPERF_TINY_MODELS" STEPS=5 table >"$d/table.log" 2>&1
    then pass "mlperf tiny: float32 and int8 images run under QEMU, outputs equal the host build's (int8 bit-identical)"
    else fail "mlperf tiny: float32 and int8 images run under QEMU, outputs equal the host build's"; tail_of "$d/table.log" 25; return; fi
    mlperf_tiny_check "$d"
    mlperf_tiny_insns_vs_systick "$d"
    if [ "$(grep -c '^| [a-z0-9_]* | \(float32\|int8\) |' "$d/table.log")" -eq $((2 * $(echo $MLPERF_TINY_MODELS | wc -w))) ]
    then pass "mlperf tiny: table (flash, arena, stack, instructions) printed"
    else fail "mlperf tiny: table (flash, arena, stack, instructions) printed"; tail_of "$d/table.log"; fi
}

# mlperf_tiny_check DIR: each image's outputs against `axc run` on the host,
# and its instruction count against the model's MACs (mlperf_tiny_check.py:
# one Python start for the inputs, one for every comparison).
mlperf_tiny_check() {
    local d=$1 m dt flags cases=()
    # shellcheck disable=SC2086
    "$python" "$here/mlperf_tiny_check.py" inputs "$d" $MLPERF_TINY_MODELS >"$d/inputs.log" 2>&1 ||
        { fail "mlperf tiny: inputs"; tail_of "$d/inputs.log"; return; }
    for m in $MLPERF_TINY_MODELS; do
        for dt in float32 int8; do
            flags=()
            [ "$dt" = int8 ] && flags=(--quantize=int8 --calibrate "x=$d/weights/${m}_cal.npy")
            if "$axc" run "$root/examples/mlperf_tiny/$m.ax" --weights "$d/weights/$m.safetensors" "${flags[@]}" \
                --input x="$d/$m.x.npy" --output "$d/$m.$dt.y.npy" >"$d/$m.$dt.host.log" 2>&1; then
                cases+=("$m:$dt")
            else fail "mlperf tiny $m $dt: axc run on the host"; tail_of "$d/$m.$dt.host.log"; fi
        done
    done
    [ ${#cases[@]} -eq 0 ] || "$python" "$here/mlperf_tiny_check.py" compare "$d" "${cases[@]}" 2>&1
}

# mlperf_tiny_insns_vs_systick DIR: insn_count.so (built by the table) against
# SysTick under -icount on the profiled float32 autoencoder.
mlperf_tiny_insns_vs_systick() {
    local d=$1 p=$1/prof what="mlperf tiny: instruction count (QEMU plugin) within 1 % of SysTick x 40 under -icount"
    local qemu=(qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none
                -semihosting-config enable=on,target=native -kernel "$p/fw.elf")
    mkdir -p "$p"
    [ -f "$d/weights/fc_autoencoder.safetensors" ] || { echo "SKIP: $what (fc_autoencoder not among the models run)"; return; }
    if ! env -u AXC make -C "$p" -f "$root/examples/firmware/Makefile" AXC_PREFIX="$work/prefix" \
        MODEL=fc_autoencoder MODEL_DIR="$root/examples/mlperf_tiny" \
        AXC_WEIGHTS_fc_autoencoder="$d/weights/fc_autoencoder.safetensors" \
        LDSCRIPT="$root/examples/mlperf_tiny/mps2_an386_tiny.ld" PROFILE=1 fw.elf >"$p/build.log" 2>&1; then
        fail "$what"; tail_of "$p/build.log"; return
    fi
    local ticks insns marks
    ticks=$("${qemu[@]}" -icount shift=0 2>&1 | awk '$1 == "layer" && $6 == "ticks" { t += $7 } END { print t + 0 }')
    marks=$(arm-none-eabi-nm "$p/fw.elf" | awk '$3 == "axc_inference_begin" { b = $1 } $3 == "axc_inference_end" { e = $1 }
                                               END { printf "begin=0x%s,end=0x%s", b, e }')
    insns=$("${qemu[@]}" -plugin "$d/insn_count.so,$marks" 2>&1 >/dev/null | awk '$1 == "insns" { print $2 }')
    if [ -n "$insns" ] && [ "$ticks" -gt 0 ] && awk -v i="$insns" -v t="$ticks" 'BEGIN { d = i - 40 * t; exit !(d * d <= (0.01 * i) ^ 2) }'
    then pass "$what ($insns instructions, $ticks ticks)"
    else fail "$what" "plugin: ${insns:-none}, SysTick ticks: $ticks"; fi
}
