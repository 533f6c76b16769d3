#!/usr/bin/env bash
# Part of the cuda suite (run.sh): libaxrt_gpu's start-up against fake
# drivers and compilers built here.  Environment as run.sh.
set -u
root=${AXC_ROOT:?}; build=${AXC_BUILD:?}; axc=${AXC:?}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc=${CC:-cc}
pass() { echo "PASS: cuda loader/$1"; }
fail() { echo "FAIL: cuda loader/$1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }
skip() { echo "SKIP: cuda loader/$1"; }

for mode in 1 2 3; do
    "$cc" -shared -fPIC -DFAKE_MODE=$mode "$here/fake_driver.c" -o "$work/libcuda$mode.so" || { fail build "fake driver"; exit 0; }
done
"$cc" -shared -fPIC -DFAKE_MODE=3 -DFAKE_NO_EVENTS "$here/fake_driver.c" -o "$work/libcuda4.so" || { fail build "fake driver"; exit 0; }
"$cc" -shared -fPIC "$here/fake_nvrtc.c" -o "$work/libnvrtc_fake.so" || { fail build "fake nvrtc"; exit 0; }
"$axc" --seed=0 --target=cuda "$root/examples/mlp.ax" -o "$work/m.c" 2>/dev/null &&
"$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$build/include" -I"$work" "$work/m.c" "$here/host_main.c" \
    "$build/lib/libaxrt_gpu.a" -ldl -o "$work/host" || { fail build "the mlp host program"; exit 0; }

expect() { # NAME WANT-EXIT WANT-TEXT ENV...
    local name=$1 want=$2 text=$3; shift 3
    env "$@" "$work/host" >"$work/out" 2>&1; local rc=$?
    if [ $rc = "$want" ] && grep -q "$text" "$work/out"; then pass "$name"
    else fail "$name" "exit $rc (want $want), want '$text' in:"; sed 's/^/  /' "$work/out"; fi
}
expect no-driver 2 "no CUDA device: cannot open the driver" AXRT_CUDA_LIB="$work/absent/libcuda.so.1"
expect no-device 2 "no CUDA device" AXRT_CUDA_LIB="$work/libcuda1.so"
expect stub 2 "stub library" AXRT_CUDA_LIB="$work/libcuda2.so"
expect nvrtc-failure 2 "fake NVRTC log" AXRT_CUDA_LIB="$work/libcuda3.so" AXRT_NVRTC_LIB="$work/libnvrtc_fake.so" AXRT_GPU_CACHE=off
expect no-nvrtc 2 "cannot open the CUDA run-time compiler" AXRT_CUDA_LIB="$work/libcuda3.so" AXRT_NVRTC_LIB="$work/absent/libnvrtc.so" AXRT_GPU_CACHE=off

# a real NVRTC compile for the fake sm_80 device, then the cache
if AXRT_CUDA_LIB="$work/libcuda3.so" AXRT_GPU_CACHE="$work/cache" AXRT_GPU_VERBOSE=1 "$work/host" >"$work/first" 2>&1; then
    expect compile-then-cache 0 "from the cache" AXRT_CUDA_LIB="$work/libcuda3.so" AXRT_GPU_CACHE="$work/cache" AXRT_GPU_VERBOSE=1
    grep -q "compiled" "$work/out" && fail second-start-compiles-nothing "$(cat "$work/out")"
    grep -q "compiled for sm_80" "$work/first" && pass first-start-compiles || fail first-start-compiles "$(cat "$work/first")"
elif grep -q "cannot open the CUDA run-time compiler" "$work/first"; then
    skip "compile-then-cache (no NVRTC: the CUDA toolkit is not installed)"
else fail compile "$(cat "$work/first")"; fi

# axc run --bench on the fake sm_80 device: the device time between its
# events (0.25 ms a forward), not the wall clock; a driver without events
# fails saying so
bench_run() { # LIB: axc run --bench 5 on the mlp with that driver into $work/bench
    AXRT_CUDA_LIB="$1" AXRT_GPU_CACHE="$work/cache" "$axc" run --seed=0 --target=cuda --bench 5 \
        "$root/examples/mlp.ax" >"$work/bench" 2>&1
}
if ! grep -q "compiled for sm_80" "$work/first"; then skip "bench-events (no NVRTC compile above)"
else
    bench_run "$work/libcuda3.so"; rc=$?
    if [ $rc = 0 ] && grep -q "mlp: min 250.00 us, median 250.00 us, max 250.00 us over 5 runs (device time between events" "$work/bench"
    then pass bench-events; else fail bench-events "exit $rc:"; sed 's/^/  /' "$work/bench"; fi
    bench_run "$work/libcuda4.so"; rc=$?
    if [ $rc != 0 ] && grep -q "axc run --target=cuda: the CUDA driver has no cuEventCreate" "$work/bench"
    then pass bench-no-events; else fail bench-no-events "exit $rc:"; sed 's/^/  /' "$work/bench"; fi
fi

# axc run on a machine without a device: exit 2, "no CUDA device"
AXRT_CUDA_LIB="$work/libcuda1.so" "$axc" run --seed=0 --target=cuda "$root/examples/mlp.ax" >"$work/run" 2>&1; rc=$?
if [ $rc = 2 ] && grep -q "no CUDA device" "$work/run"; then pass "axc-run-no-device"
else fail "axc-run-no-device" "exit $rc:"; sed 's/^/  /' "$work/run"; fi

# the GPU proof (gpu_check.sh) without a device: SKIP with the reason, exit 0
AXRT_CUDA_LIB="$work/libcuda1.so" GPU_CHECK_MODELS=mlp bash "$here/gpu_check.sh" "$build" "$work/report" >"$work/gc" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q "^SKIP: gpu-check (no GPU here: .*no CUDA device" "$work/gc" && [ ! -e "$work/report" ]
then pass gpu-check-without-device; else fail gpu-check-without-device "exit $rc:"; sed 's/^/  /' "$work/gc"; fi

# its allocation check (count_driver.c, alloc_main.c) on the fake sm_80
# device, with the kernels the compile above cached: 10 forwards after the
# first allocate, free and load nothing; the counts are the driver's calls
if ! grep -q "compiled for sm_80" "$work/first"; then skip "no-alloc-forward (no NVRTC compile above)"
else
    "$axc" --seed=0 --target=cuda "$root/examples/mlp.ax" -o "$work/am.c" 2>/dev/null &&
    "$cc" -O1 -I"$build/include" -Dmlp_model=gpu_mlp_model -Dmlp_forward=gpu_mlp_forward -c "$work/am.c" -o "$work/am.o" &&
    "$cc" -O1 -I"$build/include" -DMODEL=mlp "$here/alloc_main.c" "$work/am.o" "$build/lib/libaxrt_gpu.a" -ldl -lm -o "$work/am" &&
    "$cc" -shared -fPIC "$here/count_driver.c" -o "$work/libcount.so" -ldl ||
        { fail no-alloc-forward "build"; exit 0; }
    AXRT_CUDA_LIB="$work/libcount.so" AXRT_COUNT_NEXT="$work/libcuda3.so" AXRT_GPU_CACHE="$work/cache" "$work/am" >"$work/am.out" 2>&1; rc=$?
    if [ $rc = 0 ] && grep -q "10 forwards: 0 allocations, 0 frees, 0 modules loaded, 30 launches" "$work/am.out"
    then pass "no-alloc-forward ($(cat "$work/am.out"))"; else fail no-alloc-forward "exit $rc:"; sed 's/^/  /' "$work/am.out"; fi
fi
