#!/usr/bin/env bash
# gpu_check.sh — the GPU proof (`make gpu-check`): on a machine with an NVIDIA
# GPU, every example, every op-corpus model and this suite's models/ run on
# the device through the cuda target (libaxrt_gpu, the real driver and
# NVRTC) against the C target on the CPU: Float32 (1e-4 relative), Float16
# and BFloat16 (lib.sh's half tolerance) and Float32 with the GEMMs on the
# BFloat16 tensor-core path (AXRT_GPU_MATH=bf16: 3e-2 of the output's scale:
# an operand rounded to BFloat16 errs by a share of the sum's terms, not of an
# element of the output that a near-cancelling sum left small); the kernel cache
# (a second start compiles nothing); a forward that allocates nothing (the
# driver behind count_driver.c: 10 forwards after the first, no allocation,
# free or module load); and the GPU rows of the benchmark (bench/gpu_rows.py:
# R1-R6 against PyTorch eager CUDA, torch.compile and cuBLAS).  Writes one
# report (markdown) and prints the suite's PASS/FAIL/SKIP lines.
# Without a GPU it prints SKIP with the reason and exits 0.
#
# Usage: bash tests/cuda/gpu_check.sh [BUILD_DIR] [REPORT]      (make gpu-check)
#        bash tests/cuda/gpu_check.sh --bundle DIR [BUILD_DIR]   (make gpu-bundle)
#        bash DIR/gpu_check.sh --run DIR [REPORT]
# --bundle writes every case's generated C with libaxrt, libaxrt_gpu and this
# script's helpers into DIR, for a device machine that cannot build axc
# itself (no LLVM, flex or protobuf-c there): --run then needs only cc (and
# PyTorch for the benchmark rows, whose C the bundle holds too).
# Cases whose generated C is over AXC_GPU_BUNDLE_MAX bytes (8 MB) stay out
# of a bundle (SKIP, named).  Environment: AXRT_NVRTC_LIB (else searched:
# the toolkit, PyTorch's nvidia-cuda-nvrtc wheel), GPU_CHECK_JOBS (nproc),
# GPU_CHECK_MODELS (names: only those models).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." 2>/dev/null && pwd)
cc=${CC:-cc}
jobs=${GPU_CHECK_JOBS:-$(nproc 2>/dev/null || echo 4)}
work=$(mktemp -d)
bundle_max=${AXC_GPU_BUNDLE_MAX:-8000000}  # bytes of generated C a bundled case or row may have
trap '[ -n "${GPU_CHECK_KEEP:-}" ] || rm -rf "$work"' EXIT

# ---- preparing the cases (needs axc) ----------------------------------------

# prepare_case MODEL.ax DTYPE DIR: the C target's and the cuda target's C
# for MODEL at DTYPE (Float32, Float16, BFloat16), its inputs and tolerance
prepare_case() {
    local f=$1 dt=$2 d=$3 b name opt=
    b=$(basename "$f" .ax); mkdir -p "$d"
    [ "$dt" = Float32 ] || opt=--dtype=$dt
    if ! "$axc" --seed=0 $opt --target=cuda "$f" -o "$d/gpu.c" 2>"$d/err"; then
        echo "SKIP: gpu $dt/$b (the cuda target refuses it: $(grep -o 'error: .*' "$d/err" | head -1))" >"$d/skip"; return
    fi
    name=$(sed -n 's/^extern const axrt_gpu_model \(.*\)_gpu_model;/\1/p' "$d/gpu.h" | head -1)
    if ! "$axc" --seed=0 $opt "$f" --model="$name" -o "$d/ref.c" 2>"$d/err"; then
        echo "SKIP: gpu $dt/$b (the c target refuses it: $(grep -o 'error: .*' "$d/err" | head -1))" >"$d/skip"; return
    fi
    echo "$name" >"$d/name"
    input_specs "$f" >"$d/inputs"
    if [ "$dt" = Float32 ]; then echo 1e-4 >"$d/tol"; echo scale:3e-2 >"$d/tol-mma"
    else half_tol "$b" "$dt" >"$d/tol"
         awk -v h="$(half_tol "$b" "$dt")" 'BEGIN { sub("scale:", "", h); print "scale:" 3e-2 + h }' >"$d/tol-mma"; fi
    if [ -n "${bundling:-}" ] && [ "$(cat "$d/gpu.c" "$d/ref.c" | wc -c)" -gt "$bundle_max" ]; then
        rm -f "$d"/*.c; echo "SKIP: gpu $dt/$b (its generated C is over $bundle_max bytes: left out of the bundle)" >"$d/skip"
    fi
}

# every example, op-corpus model and models/ (GPU_CHECK_MODELS: only those names)
models() {
    local f
    for f in "$root"/examples/*.ax "$root"/tests/ops/*.ax "$here"/models/*.ax; do
        [ -z "${GPU_CHECK_MODELS:-}" ] || [[ " $GPU_CHECK_MODELS " == *" $(basename "$f" .ax) "* ]] && echo "$f"
    done
}

# prepare_all BUILD CASES [MODEL.ax...]: those models (default: every example,
# op-corpus model and models/) at every dtype, $jobs at a time
prepare_all() {
    local build=$1 cases=$2; shift 2
    axc=$build/bin/axc
    export -f prepare_case input_specs half_tol half_stages; export axc bundling bundle_max
    [ $# -gt 0 ] || set -- $(models)
    for f in "$@"; do
        for dt in Float32 Float16 BFloat16; do echo "$f $dt $cases/$(basename "$f" .ax).$dt"; done
    done | xargs -P "$jobs" -n 3 bash -c 'prepare_case "$0" "$1" "$2"'
}

# ---- running them (needs cc, libaxrt and libaxrt_gpu) ----------------------

# run_case DIR: build the comparison of one case and run it (and, for
# Float32, again on the tensor-core path); prints PASS/FAIL/SKIP lines
run_case() {
    local d=$1 t name
    t=$(basename "$d"); t=${t##*.}/${t%.*}
    if [ -e "$d/skip" ]; then cat "$d/skip"; return; fi
    name=$(cat "$d/name")
    if ! { "$cc" -O1 -I"$inc" -c "$d/ref.c" -o "$d/ref.o" &&
           "$cc" -O1 -I"$inc" -D"${name}_forward=gpu_${name}_forward" -D"${name}_model=gpu_${name}_model" -c "$d/gpu.c" -o "$d/gpu.o" &&
           "$cc" -O1 -I"$inc" -DMODEL="$name" -c "$helpers/compare.c" -o "$d/cmp.o" &&
           "$cc" -o "$d/cmp" "$d/cmp.o" "$d/ref.o" "$d/gpu.o" "$lib/libaxrt_gpu.a" "$lib/libaxrt.a" -ldl -lpthread -lm; } >"$d/build" 2>&1; then
        echo "FAIL: gpu $t (build)"; tail -n 8 "$d/build" | sed 's/^/  /'; return
    fi
    local math
    for math in fp32 bf16; do
        [ $math = bf16 ] && t="mma-$t"
        if AXRT_GPU_MATH=$math timeout 300 "$d/cmp" "$(cat "$d/tol$([ $math = bf16 ] && echo -mma)")" $(cat "$d/inputs") >"$d/out.$math" 2>&1
        then echo "PASS: gpu $t ($(cat "$d/out.$math"))"
        else echo "FAIL: gpu $t"; tail -n 8 "$d/out.$math" | sed 's/^/  /'; fi
    done
}

# the mlp's host program (axc's cuda host C): the device probe and the cache check
host_program() { # DIR: builds DIR/host from the mlp case of DIR's Float32 cases
    local d=$1/mlp.Float32
    ln -sf gpu.h "$d/m.h" &&
    "$cc" -std=c99 -I"$inc" -I"$d" -o "$1/host" "$d/gpu.c" "$helpers/host_main.c" \
        "$lib/libaxrt_gpu.a" -ldl -lm >"$1/host.err" 2>&1
}

# probe CASES: 0 when a device ran the mlp (its kernels now in the cache)
probe() {
    find_nvrtc
    if ! host_program "$1"; then echo "FAIL: gpu host program"; sed 's/^/  /' "$1/host.err"; return 1; fi
    AXRT_GPU_CACHE=$1/cache "$1/host" >"$1/probe" 2>&1
    if grep -q "no CUDA device\|cannot open the driver\|stub library" "$1/probe"; then
        echo "SKIP: gpu-check (no GPU here: $(head -1 "$1/probe"))"; return 1
    fi
}

# A libnvrtc for libaxrt_gpu when its own names do not find one.
find_nvrtc() {
    [ -n "${AXRT_NVRTC_LIB:-}" ] && return
    local found
    found=$( { ls /usr/local/cuda*/lib64/libnvrtc.so* 2>/dev/null
               "${PYTHON:-python3}" -c 'import nvidia, os; [print(os.path.join(p, "cuda_nvrtc", "lib")) for p in nvidia.__path__]' 2>/dev/null |
                   while read -r dir; do ls "$dir"/libnvrtc.so* 2>/dev/null; done; } | grep -v builtins | head -1)
    [ -n "$found" ] && export AXRT_NVRTC_LIB=$found
}

cache_check() { # CASES: a fresh cache: the first start compiles, the second reads it
    local c=$1/cache-check
    AXRT_GPU_CACHE=$c AXRT_GPU_VERBOSE=1 "$1/host" >"$1/first" 2>&1
    AXRT_GPU_CACHE=$c AXRT_GPU_VERBOSE=1 "$1/host" >"$1/second" 2>&1
    if grep -q "compiled" "$1/first" && grep -q "from the cache" "$1/second" && ! grep -q "compiled" "$1/second"
    then echo "PASS: gpu kernel-cache (second start compiles nothing)"
    else echo "FAIL: gpu kernel-cache"; sed 's/^/  first: /' "$1/first"; sed 's/^/  second: /' "$1/second"; fi
}

alloc_check() { # CASES: 10 forwards of each model after the first allocate nothing
    local cases=$1 d name next=${AXRT_CUDA_LIB:-}
    "$cc" -shared -fPIC "$helpers/count_driver.c" -o "$cases/libcount.so" -ldl || { echo "FAIL: gpu no-alloc (count_driver.c)"; return; }
    for d in "$cases"/mlp.Float32 "$cases"/gpt_block.Float32 "$cases"/lenet5.Float16; do
        [ -e "$d/name" ] || continue
        name=$(cat "$d/name")
        if ! { "$cc" -O1 -I"$inc" -DMODEL="$name" -c "$helpers/alloc_main.c" -o "$d/am.o" &&
               "$cc" -o "$d/am" "$d/am.o" "$d/gpu.o" "$lib/libaxrt_gpu.a" "$lib/libaxrt.a" -ldl -lpthread -lm; } >"$d/am.err" 2>&1
        then echo "FAIL: gpu no-alloc/$(basename "$d")"; sed 's/^/  /' "$d/am.err"; continue; fi
        if AXRT_CUDA_LIB=$cases/libcount.so AXRT_COUNT_NEXT=$next "$d/am" >"$d/am.out" 2>&1
        then echo "PASS: gpu no-alloc/$(basename "$d") ($(cat "$d/am.out"))"
        else echo "FAIL: gpu no-alloc/$(basename "$d")"; sed 's/^/  /' "$d/am.out"; fi
    done
}

# run_all CASES REPORT [BUILD]: every case, the checks, the bench rows
run_all() {
    local cases=$1 report=$2 build=${3:-} t0=$SECONDS
    { echo "# axc GPU check, $(date -u '+%Y-%m-%d %H:%M UTC')"; echo
      echo "Device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo unknown)"
      echo "NVRTC: ${AXRT_NVRTC_LIB:-found by libaxrt_gpu}; probe: $(head -1 "$cases/probe")"; echo; echo '```'; } >"$report"
    export -f run_case; export cc inc lib helpers
    export AXRT_GPU_CACHE=$cases/cache
    ls -d "$cases"/*.Float32 "$cases"/*.Float16 "$cases"/*.BFloat16 2>/dev/null |
        xargs -P "$jobs" -n 1 bash -c 'run_case "$0" >"$0/result"'
    { cat "$cases"/*.*/result; cache_check "$cases"; alloc_check "$cases"; } >"$cases/results"
    tee -a "$report" <"$cases/results"
    echo '```' >>"$report"
    local np nf ns
    np=$(grep -c '^PASS' "$cases/results"); nf=$(grep -c '^FAIL' "$cases/results"); ns=$(grep -c '^SKIP' "$cases/results")
    echo "cases: $np passed, $nf failed, $ns skipped in $((SECONDS - t0)) s" | tee -a "$report"
    local rows=
    if [ -n "$build" ] && [ -x "$build/bin/axc" ]; then rows="$root/bench/gpu_rows.py --build $build"
    elif [ -d "$cases/../rows" ]; then rows="$cases/../gpu_rows.py --generated $cases/../rows --build $cases/.."; fi
    if [ -n "$rows" ]; then
        { echo; echo "## Benchmark rows (bench/gpu_rows.py)"; echo; echo '```'
          timeout 240 "${PYTHON:-python3}" $rows 2>&1 | tail -n 60
          echo '```'; } >>"$report"
    else echo "(no axc on this machine and no rows in the bundle: the benchmark rows need make all)" >>"$report"; fi
    echo "report: $report ($((SECONDS - t0)) s)"
}

. "$here/lib.sh"
case ${1:-} in
--bundle)
    dir=${2:?--bundle DIR}; build=$(cd "${3:-$root/build}" && pwd)
    rm -rf "$dir"; mkdir -p "$dir/cases" "$dir/lib" "$dir/include"
    bundling=1 prepare_all "$build" "$dir/cases"
    cp "$build"/lib/libaxrt.a "$build"/lib/libaxrt_gpu.a "$dir/lib/"; cp "$build"/include/*.h "$dir/include/"
    strip --strip-debug "$dir"/lib/*.a 2>/dev/null   # a bundle travels: no debug sections
    cp "$here"/gpu_check.sh "$here"/lib.sh "$here"/compare.c "$here"/host_main.c "$here"/count_driver.c "$here"/alloc_main.c "$dir/"
    cp "$root"/bench/gpu_rows.py "$dir/"
    "${PYTHON:-python3}" "$root"/bench/gpu_rows.py --generate "$dir/rows" --build "$build" || echo "bundle: the benchmark rows could not be generated"
    for r in "$dir"/rows/*/; do
        [ "$(wc -c <"$r/m.c")" -le "$bundle_max" ] && continue
        echo "bundle: benchmark row $(basename "$r") left out (its generated C is over $bundle_max bytes)"; rm -rf "$r"
    done
    echo "bundle: $dir ($(du -sh "$dir" | cut -f1)); on the device: bash $dir/gpu_check.sh --run $dir [REPORT]" ;;
--run)
    dir=$(cd "${2:?--run DIR}" && pwd); report=${3:-$dir/gpu-check.md}
    inc=$dir/include lib=$dir/lib helpers=$dir
    probe "$dir/cases" && run_all "$dir/cases" "$report" ;;
*)
    build=$(cd "${1:-$root/build}" && pwd); report=${2:-$build/gpu-check.md}
    inc=$build/include lib=$build/lib helpers=$here
    mkdir -p "$work/cases"
    prepare_all "$build" "$work/cases" "$root/examples/mlp.ax"
    probe "$work/cases" || exit 0
    prepare_all "$build" "$work/cases"
    run_all "$work/cases" "$report" "$build" ;;
esac
exit 0
