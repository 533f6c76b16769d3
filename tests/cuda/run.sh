#!/usr/bin/env bash
# cuda suite: the CUDA and HIP back ends (docs/gpu.md) without a GPU.
#  - host: every example and tests/ops model: `axc --target=cuda -o m.c`
#    builds with plain cc -std=c99 -Wall -Wextra -Wpedantic -Werror and no
#    CUDA header (a model with an op the target has no kernel for is
#    refused with a located error: SKIP naming the op);
#  - ptx: the kernels compile with NVRTC (--emit=ptx) for sm_80 and assemble
#    with ptxas when the toolkit has it; for sm_90 too on the mma models (the
#    source is the same for both: only the tensor-core path, AXK_MMA, looks at
#    __CUDA_ARCH__, and mma-ptx below checks it on both);
#  - hsaco: the HIP kernels compile with hiprtc (--emit=hsaco --arch=gfx90a):
#    every op case, this suite's models and the small examples (half_models;
#    the large examples' kernels are the op corpus's templates, their HIP
#    text the CUDA text NVRTC takes with the other prelude);
#  - half: each half model (half_models) at one of Float16 and BFloat16, in
#    turn down the list, this suite's models/ at both: host C, PTX, HSACO and
#    the emulator as the Float32 model;
#  - emu: the kernels run on the CPU (emu.h, emu_rt.cpp: one block at a time,
#    its threads as coroutines of one OS thread) and match the C target within 1e-4 relative
#    (compare.c; the op corpus, this suite's models/ and the small examples,
#    on inputs as each case's `# >>> input` lines say; the op cases and
#    models/ without an mma path share one binary per dtype, emu_batch) —
#    the kernel code, the parameter block, the launch list and the arena
#    plan, everything but the driver;
#  - loader: libaxrt_gpu's error paths with fake drivers built here (no
#    libcuda, no device, a stub, NVRTC failing with its log) and, with a
#    fake driver that accepts everything, a real NVRTC compile whose result
#    the second start reads from the kernel cache; `axc run --target=cuda`
#    exits 2 saying there is no CUDA device;
#  - kernel cache: hostile and damaged cache entries (kernel_cache.sh: fake
#    NVRTC and driver, so it runs everywhere).
# Needing a GPU: nothing here (bench/gpu.sh times on a device).  Without
# NVRTC (the CUDA toolkit) or hiprtc (Debian's libamdhip64), those cases SKIP.
# Environment (set by tests/run.sh): AXC_ROOT, AXC_BUILD, AXC; AXC_CUDA_PART=I/N
# (tests/run.sh runs the suite as N such jobs and a cuda:loader one): only
# every N-th model from the I-th, the mma-ptx checks in part 1, the loader and
# kernel cache checks in none.
# Arguments: none (every model), or names: only the models whose name holds one.
set -u
root=${AXC_ROOT:?}
build=${AXC_BUILD:?}
axc=${AXC:?}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc=cc
inc=$build/include
export AXRT_GPU_CACHE=$work/cache

pass() { echo "PASS: cuda $1"; }
fail() { echo "FAIL: cuda $1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }
skip() { echo "SKIP: cuda $1"; }
tail_of() { tail -n "${2:-12}" "$1" | sed 's/^/  /'; }
. "$here/lib.sh"

ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)
have_nvrtc=yes; have_hiprtc=yes
printf '@axiom probe(x::Float32[1, 4]) begin\n    relu\nend\n' >"$work/probe.ax"
"$axc" --emit=ptx --arch=sm_80 "$work/probe.ax" -o "$work/probe.ptx" 2>/dev/null || have_nvrtc=
"$axc" --emit=hsaco --arch=gfx90a "$work/probe.ax" -o "$work/probe.hsaco" 2>/dev/null || have_hiprtc=

models=("$root"/examples/*.ax "$root"/tests/ops/*.ax "$here"/models/*.ax)

# the host C's warnings, front end only (-O0 reports the same ones; the
# object is not used: the emulator builds its own at -O1), which saves the
# code generation of the large examples' parameter arrays; and with the
# parameter block's string literal cut to its first line (all_minilm_l6_v2:
# 365 MB of C, 4.3 s CPU, to 0.24 MB): its lines are cg_bytes_literal's, which
# the compile suite checks in every example's C, and the emulator builds
# whole host files (the literal included) for the models it runs
host_cc() {
    awk '/_param_block = \{$/ { print; inblock = 1; next }
         inblock && /^"/ { if (!kept++) print; next }
         { inblock = 0; print }' "$1" >"${1%.c}.host.c" &&
    "$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$inc" -I"$(dirname "$1")" -fsyntax-only "${1%.c}.host.c"
}

# The op cases' kernels compile in batches: one source per part and dtype
# (the first case's prelude, then each case's kernels, their names prefixed
# by the case's model) through axrt_gpu_compile, as `axc --emit=ptx|hsaco`
# does (rtc_main.c), then one ptxas: hiprtc's start-up (hip_runtime.h) costs
# as much as a small case's kernels.  A batch that fails is compiled case by
# case to name the culprits.
declare -A rtc_list # dtype -> " DIR:NAME..."
rtc=
if [ -n "$have_nvrtc$have_hiprtc" ]; then
    if "$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$inc" "$here/rtc_main.c" "$build/lib/libaxrt_gpu.a" -ldl \
        -o "$work/rtc" 2>"$work/rtc.err"; then rtc=$work/rtc
    else fail "rtc" "tests/cuda/rtc_main.c does not build:"; tail_of "$work/rtc.err"; fi
fi
rtc_queue() { # MODEL.ax DIR [DTYPE]: an op case's CUDA and HIP kernel source into its dtype's batch
    local f=$1 d=$2 dt=${3:-} opt=
    [[ $f == */tests/ops/* ]] && [ -n "$rtc" ] || return 1
    [ -n "$dt" ] && opt=--dtype=$dt
    "$axc" --seed=0 $opt --target=cuda "$f" -o "$d/rtc.cu" 2>"$d/err" &&
    "$axc" --seed=0 $opt --target=hip "$f" -o "$d/rtc-hip.cu" 2>"$d/err" || return 1
    rtc_list[${dt:-Float32}]+=" $d:$(basename "$f" .ax)"
}
is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
rtc_build() { # DIALECT SOURCE OUT: NVRTC (and ptxas) or hiprtc
    if [ "$1" = hip ]; then "$rtc" hip gfx90a "$2" "$3" && is_elf "$3"
    else "$rtc" cuda sm_80 "$2" "$3" && { [ -z "$ptxas" ] || "$ptxas" -arch=sm_80 "$3" -o "$3.cubin"; }; fi
}
rtc_batch() { # DTYPE: its batch for NVRTC+ptxas and for hiprtc; a PASS or FAIL per case
    local dt=$1 dialect src name item d b n ok culprit have what
    for dialect in cuda hip; do
        src=rtc.cu; have=$have_nvrtc; what="NVRTC or ptxas"
        [ $dialect = hip ] && { src=rtc-hip.cu; have=$have_hiprtc; what=hiprtc; }
        n=0
        for item in ${rtc_list[$dt]}; do
            d=${item%%:*}; n=$((n + 1))
            if [ $n = 1 ]; then cat "$d/$src"; else sed -n '/^\/\* generated by axc from/,$p' "$d/$src"; fi
        done >"$work/batch.cu"
        ok=; culprit=
        [ -n "$have" ] && rtc_build $dialect "$work/batch.cu" "$work/batch.out" >"$work/batch.log" 2>&1 && ok=1
        for item in ${rtc_list[$dt]}; do
            d=${item%%:*}; b=${item#*:}
            if [ $dialect = cuda ]; then name=ptx/$b-sm_80; [ $dt = Float32 ] || name=ptx-$dt/$b
            else name=hsaco/$b; [ $dt = Float32 ] || name=hsaco-$dt/$b; fi
            if [ -z "$have" ]; then skip "$name (no ${what%% *})"
            elif [ -n "$ok" ] || rtc_build $dialect "$d/$src" "$d/$src.out" >"$d/rtc.log" 2>&1; then pass "$name"
            else fail "$name" "$what failed:"; tail_of "$d/rtc.log"; culprit=1; fi
        done
        if [ -n "$have" ] && [ -z "$ok$culprit" ]; then # each case compiles alone, not together
            fail "rtc-batch/$dt-$dialect" "the batch fails where each case compiles alone:"; tail_of "$work/batch.log"
        fi
    done
}

# The large examples that repeat a layer, and so their kernels (arena
# offsets aside): NVRTC and ptxas on one kernel per form (kernel_forms.py;
# gru_kws: 62 of 986, all_minilm_l6_v2: 27 of 118, resmlp50: 5 of 50,
# shufflenet_v2_x1_0: 59 of 117, efficientnet_b0: 99 of 115, mobilenet_v2:
# 47 of 54, squeezenet1_1: 35 of 39) through axrt_gpu_compile, the call
# --emit=ptx makes, which the other examples still run whole
form_models=" all_minilm_l6_v2 efficientnet_b0 gru_kws mobilenet_v2 resmlp50 shufflenet_v2_x1_0 squeezenet1_1 "
check_forms() { # MODEL.ax DIR
    local b d=$2 kept
    b=$(basename "$1" .ax)
    if ! "$axc" --seed=0 --target=cuda "$1" -o "$d/m.cu" 2>"$d/err" ||
        ! kept=$("${PYTHON:-python3}" "$here/kernel_forms.py" "$d/m.cu" "$d/forms.cu" 2>&1) ||
        ! "$rtc" cuda sm_80 "$d/forms.cu" "$d/forms.ptx" 2>"$d/err"; then
        fail "ptx/$b-sm_80" "NVRTC failed on one kernel per form ($kept):"; tail_of "$d/err"; return
    fi
    if [ -z "$ptxas" ]; then pass "ptx/$b-sm_80 (NVRTC, $kept: one per form; no ptxas)"
    elif "$ptxas" -arch=sm_80 "$d/forms.ptx" -o "$d/forms.cubin" 2>"$d/ptxas"; then pass "ptx/$b-sm_80 ($kept: one per form)"
    else fail "ptx/$b-sm_80" "ptxas failed:"; tail_of "$d/ptxas"; fi
}

# host C and kernel compiles of one model
check_model() {
    local f=$1 b d batched=
    b=$(basename "$f" .ax); d=$work/$b; mkdir -p "$d"
    if ! "$axc" --seed=0 --target=cuda "$f" -o "$d/m.c" 2>"$d/err"; then
        if grep -q "has no kernel for\|computes in Float32" "$d/err"; then
            skip "host/$b ($(grep -o 'the cuda target [^(]*' "$d/err" | head -1 | sed 's/ *$//'))"
        else fail "host/$b" "axc --target=cuda failed:"; tail_of "$d/err"; fi
        return 1
    fi
    if grep -q '#include <cuda\|#include <hip' "$d/m.c" "$d/m.h"; then fail "host/$b" "includes a CUDA/HIP header"; return 1; fi
    if host_cc "$d/m.c" 2>"$d/cc"; then pass "host/$b"
    else fail "host/$b" "the host C does not build warning-free:"; tail_of "$d/cc"; fi
    rtc_queue "$f" "$d" && batched=1
    for arch in sm_80 sm_90; do
        [ $arch = sm_80 ] || [[ $mma_models == *" $b "* ]] || continue
        [ $arch = sm_80 ] && [ -n "$batched" ] && continue
        [ -n "$have_nvrtc" ] || { skip "ptx/$b (no NVRTC: the CUDA toolkit is not installed)"; continue; }
        if [ $arch = sm_80 ] && [ -n "$rtc" ] && [[ $form_models == *" $b "* ]]; then check_forms "$f" "$d"; continue; fi
        if ! "$axc" --seed=0 --target=cuda --emit=ptx --arch=$arch "$f" -o "$d/$arch.ptx" 2>"$d/err"; then
            fail "ptx/$b-$arch" "NVRTC failed:"; tail_of "$d/err"; continue
        fi
        if [ -z "$ptxas" ]; then pass "ptx/$b-$arch (NVRTC; no ptxas)"; continue; fi
        if "$ptxas" -arch=$arch "$d/$arch.ptx" -o "$d/$arch.cubin" 2>"$d/ptxas"; then pass "ptx/$b-$arch"
        else fail "ptx/$b-$arch" "ptxas failed:"; tail_of "$d/ptxas"; fi
    done
    case $f in */examples/*) [[ $half_models == *" $b "* ]] || return 0 ;; esac
    [ -z "$batched" ] || return 0
    if [ -z "$have_hiprtc" ]; then skip "hsaco/$b (no hiprtc: Debian's libamdhip64 is not installed)"
    elif "$axc" --seed=0 --target=hip --emit=hsaco --arch=gfx90a "$f" -o "$d/m.hsaco" 2>"$d/err" &&
         [ "$(head -c 4 "$d/m.hsaco" | od -An -c | tr -d ' ')" = '177ELF' ]; then pass "hsaco/$b"
    else fail "hsaco/$b" "hiprtc failed or wrote no ELF:"; tail_of "$d/err"; fi
    return 0
}

# the kernels on the CPU emulator against the C target
emu_objs() {
    g++ -O1 -std=c++17 -I"$inc" -c "$here/emu_rt.cpp" -o "$work/emu_rt.o" 2>"$work/emu.err"
}
emu_table() { # K.CU: the kernels' name table emu_rt.cpp looks the launches up in
    grep -o '^AXK [A-Za-z0-9_]*' "$1" | sed 's/AXK \(.*\)/    {"\1", (void *)\1},/'
}
emulate() { # MODEL [DTYPE TOLERANCE]: with a dtype, both targets compile the model at it
    local f=$1 dt=${2:-} tol=${3:-1e-4} b d name t=emu opt=
    b=$(basename "$f" .ax); d=$work/$b
    name=$(sed -n 's/^extern const axrt_gpu_model \(.*\)_gpu_model;/\1/p' "$d/m.h" | head -1)
    if [ -n "$dt" ]; then t=emu-$dt; opt=--dtype=$dt; d=$d/$dt; mkdir -p "$d"; fi
    "$axc" --seed=0 $opt "$f" --model="$name" -o "$d/ref.c" 2>/dev/null &&
    "$axc" --seed=0 $opt --target=cuda "$f" --model="$name" -o "$d/gpu.c" 2>/dev/null &&
    "$axc" --seed=0 $opt --target=cuda "$f" --model="$name" -o "$d/k.cu" 2>/dev/null || { fail "$t/$b" "axc failed"; return; }
    { cat "$d/k.cu"; echo 'struct axk_entry { const char *name; void *fn; };'
      echo 'axk_entry axk_table[] = {'; emu_table "$d/k.cu"; echo '    {0, 0}};'; } >"$d/kt.cpp"
    if ! { "$cc" -O1 -I"$inc" -c "$d/ref.c" -o "$d/ref.o" &&
           "$cc" -O1 -I"$inc" -D"${name}_forward=gpu_${name}_forward" -D"${name}_model=gpu_${name}_model" -c "$d/gpu.c" -o "$d/gpu.o"; } >"$d/build" 2>&1; then
        fail "$t/$b" "build failed:"; tail_of "$d/build"; return
    fi
    # an op case or models/ (no mma path) joins its dtype's one emulator binary (emu_batch)
    if [[ $f == */tests/ops/* || $f == */tests/cuda/models/* ]] && [[ $mma_models != *" $b "* ]] &&
       "$cc" -O1 -I"$inc" -DMODEL="$name" -Dmain="emu_main_$name" -c "$here/compare.c" -o "$d/cmpb.o" >"$d/build" 2>&1; then
        emu_queue+=("${dt:-Float32}|$d|$name|$t|$b|$tol|$f"); return
    fi
    emulate_alone "$d" "$name" "$t" "$b" "$tol" "$f" || return
    [[ $mma_models == *" $b "* ]] && emulate_mma "$f" "$dt"
}
emulate_alone() { # DIR NAME TAG MODEL TOLERANCE MODEL.ax: its own emulator binary
    local d=$1 name=$2 t=$3 b=$4 tol=$5 f=$6
    if ! { g++ -O1 -w -std=c++17 -include "$here/emu.h" -c "$d/kt.cpp" -o "$d/kt.o" &&
           "$cc" -O1 -I"$inc" -DMODEL="$name" -c "$here/compare.c" -o "$d/cmp.o" &&
           g++ -o "$d/cmp" "$d/cmp.o" "$d/ref.o" "$d/gpu.o" "$d/kt.o" "$work/emu_rt.o" "$build/lib/libaxrt.a" -lpthread -lm; } >"$d/build" 2>&1; then
        fail "$t/$b" "build failed:"; tail_of "$d/build"; return 1
    fi
    emu_run "$d/cmp" "" "$d" "$t" "$b" "$tol" "$f"
}
emu_run() { # BINARY CASE DIR TAG MODEL TOLERANCE MODEL.ax: one comparison, a PASS or FAIL
    if timeout 120 "$1" $2 "$6" $(input_specs "$7") >"$3/out" 2>&1; then pass "$4/$5 ($(cat "$3/out"))"
    else fail "$4/$5" "does not match the C target within $6:"; tail_of "$3/out"; fi
}
# The queued cases of one dtype in one emulator binary: the first case's
# prelude, then every case's kernels (their names prefixed by its model) and
# one name table, one g++ and one link for all (each case's own was 0.4 s
# CPU, most of its emulation), each case's comparison renamed emu_main_NAME
# and chosen by the first argument; each case still runs as its own process.
# A batch that does not build is built case by case, naming the culprits.
emu_queue=()
emu_batch() { # DTYPE
    local key=$1 item bd=$work/emu-batch-$1 n=0 d name t b tol f items=() objs=()
    for item in "${emu_queue[@]}"; do [ "${item%%|*}" = "$key" ] && items+=("$item"); done
    [ ${#items[@]} -gt 0 ] || return 0
    mkdir -p "$bd"
    for item in "${items[@]}"; do
        IFS='|' read -r _ d name t b tol f <<<"$item"; n=$((n + 1))
        if [ $n = 1 ]; then cat "$d/k.cu"; else sed -n '/^\/\* generated by axc from/,$p' "$d/k.cu"; fi
        objs+=("$d/cmpb.o" "$d/ref.o" "$d/gpu.o")
    done >"$bd/kt.cpp"
    { echo 'struct axk_entry { const char *name; void *fn; };'; echo 'axk_entry axk_table[] = {'
      for item in "${items[@]}"; do IFS='|' read -r _ d _ <<<"$item"; emu_table "$d/k.cu"; done
      echo '    {0, 0}};'; } >>"$bd/kt.cpp"
    { echo '#include <string.h>'
      for item in "${items[@]}"; do IFS='|' read -r _ _ name _ <<<"$item"; echo "int emu_main_$name(int, char **);"; done
      echo 'int main(int argc, char **argv)'; echo '{'
      for item in "${items[@]}"; do IFS='|' read -r _ _ name _ <<<"$item"
          echo "    if (argc > 1 && !strcmp(argv[1], \"$name\")) return emu_main_$name(argc - 1, argv + 1);"; done
      echo '    return 3;'; echo '}'; } >"$bd/main.c"
    local ok= culprit=
    { g++ -O1 -w -std=c++17 -include "$here/emu.h" -c "$bd/kt.cpp" -o "$bd/kt.o" &&
      "$cc" -O1 -c "$bd/main.c" -o "$bd/main.o" &&
      g++ -o "$bd/cmp" "$bd/main.o" "${objs[@]}" "$bd/kt.o" "$work/emu_rt.o" "$build/lib/libaxrt.a" -lpthread -lm; } >"$bd/build" 2>&1 && ok=1
    for item in "${items[@]}"; do
        IFS='|' read -r _ d name t b tol f <<<"$item"
        if [ -n "$ok" ]; then emu_run "$bd/cmp" "$name" "$d" "$t" "$b" "$tol" "$f"
        else emulate_alone "$d" "$name" "$t" "$b" "$tol" "$f" || culprit=1; fi
    done
    if [ -z "$ok$culprit" ]; then # each case builds alone, not together
        fail "emu-batch/$key" "the batch does not build where each case builds alone:"; tail_of "$bd/build"
    fi
}

# the same with the GEMMs on the tensor-core path (AXRT_GPU_MATH=bf16, sm_80),
# each mma.sync emulated (emu.h AXK_EMU_MMA): BFloat16 operands, so within 3e-2
# of the output's scale (gpu_check.sh says why the scale; a half model's tiles
# are its half values widened, then rounded to BFloat16: its storage's
# rounding on top)
emulate_mma() { # MODEL [DTYPE]
    local f=$1 dt=${2:-} b d t=emu-mma tol=scale:3e-2
    b=$(basename "$f" .ax); d=$work/$b
    [ -n "$dt" ] && { d=$d/$dt; t=emu-mma-$dt; tol=scale:$(awk -v h="$(half_tol "$b" "$dt")" 'BEGIN { sub("scale:", "", h); print 3e-2 + h }'); }
    if ! { g++ -O1 -w -std=c++17 -DAXK_EMU_MMA -include "$here/emu.h" -c "$d/kt.cpp" -o "$d/ktm.o" &&
           g++ -o "$d/cmpm" "$d/cmp.o" "$d/ref.o" "$d/gpu.o" "$d/ktm.o" "$work/emu_rt.o" "$build/lib/libaxrt.a" -lpthread -lm; } >"$d/buildm" 2>&1; then
        fail "$t/$b" "build failed:"; tail_of "$d/buildm"; return
    fi
    if timeout 120 "$d/cmpm" $tol $(input_specs "$f") >"$d/outm" 2>&1; then pass "$t/$b ($(cat "$d/outm"))"
    else fail "$t/$b" "does not match the C target within $tol:"; tail_of "$d/outm"; fi
}

half_models=" mlp r1_mlp_b1 r5_layernorm r6_softmax lenet5 mobilenetv2_block gpt_block
 dense dense_chain matmul conv conv_depthwise conv_transpose batchnorm maxpool meanpool globalmeanpool
 upsample layernorm groupnorm softmax log_softmax mha mha_mask embedding add_broadcast mul_broadcast
 fused_chain gelu exp nan_propagation concat slice transpose chunk mean argmax "
half_models=" $(echo $half_models) "
half_dtypes() { # MODEL.ax: Float16 and BFloat16 in turn down half_models, both for models/
    local b n
    b=$(basename "$1" .ax)
    case $1 in */tests/cuda/models/*) echo Float16 BFloat16; return ;; esac
    n=$(tr ' ' '\n' <<<"$half_models" | grep -v '^$' | grep -nx "$b" | cut -d: -f1)
    [ $((n % 2)) = 1 ] && echo Float16 || echo BFloat16
}
# the half model's host C, PTX (sm_80) and HSACO build as the Float32 one's
check_half() {
    local f=$1 dt=$2 b d
    b=$(basename "$f" .ax); d=$work/$b/$dt; mkdir -p "$d"
    if ! "$axc" --seed=0 --dtype=$dt "$f" -o "$d/c.c" 2>"$d/err"; then
        skip "$dt/$b (the c target refuses it at $dt: $(grep -o 'error: .*' "$d/err" | head -1))"; return 1
    fi
    if ! "$axc" --seed=0 --dtype=$dt --target=cuda "$f" -o "$d/m.c" 2>"$d/err"; then
        fail "host-$dt/$b" "axc --target=cuda --dtype=$dt failed:"; tail_of "$d/err"; return 1
    fi
    if host_cc "$d/m.c" 2>"$d/cc"; then pass "host-$dt/$b"
    else fail "host-$dt/$b" "the host C does not build warning-free:"; tail_of "$d/cc"; fi
    rtc_queue "$f" "$d" $dt && return 0
    if [ -z "$have_nvrtc" ]; then skip "ptx-$dt/$b (no NVRTC)"
    elif ! "$axc" --seed=0 --dtype=$dt --target=cuda --emit=ptx --arch=sm_80 "$f" -o "$d/m.ptx" 2>"$d/err"; then
        fail "ptx-$dt/$b" "NVRTC failed:"; tail_of "$d/err"
    elif [ -n "$ptxas" ] && ! "$ptxas" -arch=sm_80 "$d/m.ptx" -o "$d/m.cubin" 2>"$d/ptxas"; then
        fail "ptx-$dt/$b" "ptxas failed:"; tail_of "$d/ptxas"
    else pass "ptx-$dt/$b"; fi
    if [ -z "$have_hiprtc" ]; then skip "hsaco-$dt/$b (no hiprtc)"
    elif "$axc" --seed=0 --dtype=$dt --target=hip --emit=hsaco --arch=gfx90a "$f" -o "$d/m.hsaco" 2>"$d/err" &&
         [ "$(head -c 4 "$d/m.hsaco" | od -An -c | tr -d ' ')" = '177ELF' ]; then pass "hsaco-$dt/$b"
    else fail "hsaco-$dt/$b" "hiprtc failed or wrote no ELF:"; tail_of "$d/err"; fi
    return 0
}

command -v g++ >/dev/null && emu_objs || echo "SKIP: cuda emu (no g++)"
# small enough for one-pthread-per-GPU-thread emulation
emu_models=" mlp lenet5 r1_mlp_b1 r5_layernorm r6_softmax mobilenetv2_block gpt_block gru_kws "
# models whose GEMMs (dense, matmul, attention projections, implicit-GEMM
# convolutions) also run the mma path
mma_models=" mlp gpt_block dense dense_chain matmul matmul_2d mha mha_mask lenet5 mobilenetv2_block conv conv1d conv_1x1 conv_dilation conv_groups conv_pad conv_same conv_stride "
part=${AXC_CUDA_PART:-1/1}; part_i=${part%/*}; part_n=${part#*/}
for k in "${!models[@]}"; do
    [ $((k % part_n + 1)) = "$part_i" ] || continue
    f=${models[$k]}; b=$(basename "$f" .ax)
    if [ $# -gt 0 ]; then # run.sh NAME...: the models whose name holds one (and the loader)
        keep=; for want in "$@"; do [[ $b == *"$want"* ]] && keep=1; done
        [ -n "$keep" ] || continue
    fi
    check_model "$f" || continue
    case $f in */tests/ops/*|*/tests/cuda/models/*) ;; *) [[ $emu_models == *" $b "* ]] || continue ;; esac
    [ -e "$work/emu_rt.o" ] && emulate "$f"
    case $f in */tests/cuda/models/*) ;; *) [[ $half_models == *" $b "* ]] || continue ;; esac
    for dt in $(half_dtypes "$f"); do
        check_half "$f" $dt && [ -e "$work/emu_rt.o" ] && emulate "$f" $dt "$(half_tol "$b" $dt)"
    done
done

# the tensor-core path's PTX (not run: no GPU here): AXRT_GPU_MATH=bf16 puts
# mma.sync into every GEMM and implicit-GEMM conv kernel for sm_80 and sm_90 (and ptxas takes it);
# below sm_80, or without it, the GEMMs stay exact Float32 with no mma (a GEMM
# of at most 32 rows takes cg_gpu.c's emit_gemv, Float32 always: the mlp has none)
mma_ptx() { # ARCH MATH [MODEL]: the count of bf16 mma.sync in MODEL's (the BERT layer's) PTX, or "failed"
    AXRT_GPU_MATH=$2 "$axc" --seed=0 --target=cuda --emit=ptx --arch=$1 "${3:-$root/examples/r4_bert_layer.ax}" -o "$work/mma-$1-$2.ptx" 2>"$work/mma.err" || { echo failed; return; }
    if [ -n "$ptxas" ] && ! "$ptxas" -arch=$1 "$work/mma-$1-$2.ptx" -o "$work/mma.cubin" 2>>"$work/mma.err"; then echo failed; return; fi
    grep -c 'mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32' "$work/mma-$1-$2.ptx"
}
for dt in Float32 Float16 BFloat16; do emu_batch $dt; done
for dt in "${!rtc_list[@]}"; do rtc_batch "$dt"; done

if [ "$part_i" != 1 ]; then :
elif [ $# -gt 0 ] || [ -z "$have_nvrtc" ]; then skip "mma-ptx (no NVRTC, or a run of named models)"
else
    for arch in sm_80 sm_90; do
        got=$(mma_ptx $arch bf16)
        # the BERT layer's six GEMMs of 128 rows (q, k, v and out projections, the two
        # linears): four m16n8k16 per K step each, unrolled
        if [ "$got" = 24 ]; then pass "mma-ptx/$arch (24 mma.sync ... bf16; compiled, not run: no GPU here)"
        else fail "mma-ptx/$arch" "want 24 bf16 mma.sync in the PTX, got '$got'"; sed 's/^/  /' "$work/mma.err"; fi
        got=$(mma_ptx $arch bf16 "$root/examples/mlp.ax")
        if [ "$got" = 0 ]; then pass "mma-ptx/gemv-$arch (the mlp's one-row dense layers: Float32 GEMV kernels)"
        else fail "mma-ptx/gemv-$arch" "want no mma.sync in the mlp's PTX, got '$got'"; sed 's/^/  /' "$work/mma.err"; fi
        # the op corpus's conv (one implicit-GEMM kernel): four per K step
        got=$(mma_ptx $arch bf16 "$root/tests/ops/conv.ax")
        if [ "$got" = 4 ]; then pass "mma-ptx/conv-$arch (4 mma.sync ... bf16 in the implicit-GEMM conv)"
        else fail "mma-ptx/conv-$arch" "want 4 bf16 mma.sync in the conv's PTX, got '$got'"; sed 's/^/  /' "$work/mma.err"; fi
    done
    for case in "sm_75 bf16" "sm_90 fp32"; do
        got=$(mma_ptx $case)
        if [ "$got" = 0 ]; then pass "mma-ptx/none-${case// /-}"
        else fail "mma-ptx/none-${case// /-}" "want no mma.sync, got '$got'"; sed 's/^/  /' "$work/mma.err"; fi
    done
fi

[ -n "${AXC_CUDA_PART:-}" ] || { bash "$here/loader.sh"; bash "$here/kernel_cache.sh"; }
