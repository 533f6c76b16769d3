# The LLVM back end's Cortex-M4F object (docs/llvm.md) on the firmware board,
# sourced by tests/firmware/run.sh (its work, root, axc, python, SEED, pass,
# fail, tail_of, device_layers, host_layers, AXRT_OBJDIR).  Moved here from
# the llvm suite so that the image links the runtime objects the firmware
# images share (no second cross-compile of the runtime) and compares with the
# host outputs this suite already has:
#  - mlp.o for thumbv7em-none-eabihf carries the hard-float ABI tag, links
#    with examples/firmware's main.c and startup.c, runs under QEMU (RESULT:
#    PASS) and matches the host's `axc run` (compare_with_host's y.npy: the
#    same seed, the same inputs) within 1e-5 relative per element;
#  - built with --profile it leaves the clock to the application (SysTick in
#    main.c) and prints one line per layer with ticks, the layers the host
#    lists (profile_on_firmware's table of `axc run --profile`).

M4_LINK=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -std=c99 -Os --specs=nano.specs
         --specs=rdimon.specs -u _printf_float -T "$root/examples/firmware/mps2_an386.ld")

# llvm_image DIR [MAIN.C DEFINES...]: DIR/fw.elf from DIR/mlp.o, main.c,
# startup.c and the shared runtime objects.
llvm_image() {
    local dir=$1 src=$root/examples/firmware
    shift
    arm-none-eabi-gcc "${M4_LINK[@]}" -I"$dir" -I"$work/prefix/include" -DAXC_MODEL_HEADER='"mlp.h"' \
        -DAXC_MODEL=mlp_model "$@" "$src/startup.c" "$src/main.c" "$dir/mlp.o" "$AXRT_OBJDIR"/*.o -lm \
        -o "$dir/fw.elf"
}

llvm_on_firmware() {
    local fw=$work/llvm what
    if [ "${AXC_TEST_SANITIZED:-}" = 1 ]; then
        echo "SKIP: firmware llvm object (under make test-asan: make test runs it)"; return
    fi
    if ! "$axc" --help | grep -E '^  llvm ' | grep -qv 'not built'; then
        echo "SKIP: firmware llvm object (this axc was built without llvm-config)"; return
    fi
    mkdir -p "$fw/prof"
    if ! "$axc" "$root/examples/mlp.ax" --seed=$SEED -o "$fw/mlp.o" --triple=thumbv7em-none-eabihf \
        --cpu=cortex-m4 2>"$fw/axc.log"; then
        fail "llvm object: mlp.o for thumbv7em-none-eabihf"; tail_of "$fw/axc.log"; return
    fi
    pass "llvm object: mlp.o for thumbv7em-none-eabihf"
    if readelf -A "$fw/mlp.o" | grep -q 'Tag_ABI_VFP_args: VFP registers'; then
        pass "llvm object: hard-float ABI (Tag_ABI_VFP_args: VFP registers)"
    else fail "llvm object: hard-float ABI (Tag_ABI_VFP_args: VFP registers)" "$(readelf -A "$fw/mlp.o" | head -20)"; fi
    if ! llvm_image "$fw" >"$fw/cc.log" 2>&1; then
        fail "llvm object: link fw.elf with the LLVM object"; tail_of "$fw/cc.log"; return
    fi
    pass "llvm object: link fw.elf with the LLVM object"
    llvm_profile_on_firmware "$fw/prof"
    timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$fw/fw.elf" >"$fw/qemu.out" 2>"$fw/qemu.err"
    local rc=$?
    if [ $rc -ne 0 ] || [ "$(tail -n 1 "$fw/qemu.out")" != "RESULT: PASS" ]; then
        fail "llvm object: qemu run (RESULT: PASS)" "qemu exit status $rc"; tail_of "$fw/qemu.out" 5; return
    fi
    pass "llvm object: qemu run (RESULT: PASS)"
    what="llvm object: Cortex-M4F outputs match the host (rel <= 1e-5, compare_with_host's axc run)"
    if [ ! -f "$work/y.npy" ]; then fail "$what" "no host outputs (compare_with_host failed above)"
    elif "$python" "$root/tests/firmware/compare_device.py" "$fw/qemu.out" "$work/y.npy" element >"$fw/cmp.log" 2>&1
    then pass "$what"
    else fail "$what"; tail_of "$fw/cmp.log"; fi
}

# llvm_profile_on_firmware DIR: the profiled object for Cortex-M4F leaves
# axc_profile_clock undefined and, linked with main.c's SysTick clock,
# prints one line per layer under QEMU, with ticks, the layers the host lists.
llvm_profile_on_firmware() {
    local dir=$1 device host what="llvm object: profile under QEMU, one line per layer with SysTick ticks, as on the host"
    if ! "$axc" "$root/examples/mlp.ax" --seed=$SEED --profile -o "$dir/mlp.o" --triple=thumbv7em-none-eabihf \
        --cpu=cortex-m4 2>"$dir/axc.log"; then
        fail "llvm object: profiled mlp.o for thumbv7em-none-eabihf"; tail_of "$dir/axc.log"; return
    fi
    if nm "$dir/mlp.o" | grep -q ' U axc_profile_clock$'; then
        pass "llvm object: profiled object leaves the clock to the application"
    else fail "llvm object: profiled object leaves the clock to the application" "$(nm "$dir/mlp.o" | grep clock)"; fi
    if ! llvm_image "$dir" -DAXC_PROFILE=mlp_profile >"$dir/cc.log" 2>&1; then
        fail "llvm object: profile under QEMU (link)"; tail_of "$dir/cc.log"; return
    fi
    timeout 60 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -kernel "$dir/fw.elf" >"$dir/qemu.out" 2>&1
    device=$(device_layers "$dir/qemu.out")
    host=$(host_layers "$work/hostprof.out")
    if [ -n "$device" ] && [ "$device" = "$host" ] && grep -q '^RESULT: PASS' "$dir/qemu.out" &&
        awk '$1 == "layer" { t += $7 } END { exit !(t > 0) }' "$dir/qemu.out"; then
        pass "$what"
    else fail "$what" "device: $device" "host: $host"; tail_of "$dir/qemu.out" 8; fi
}
