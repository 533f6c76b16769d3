#!/usr/bin/env bash
# The command-line contract of docs/cli.md#compile-options, #generated-c and the golden diagnostics
# of tests/cli/diag/ (NAME.ax + NAME.err, the exact expected stderr).
# Environment: AXC, AXC_BUILD (include/ lib/), AXC_ROOT, PYTHON.
# AXC_BLESS=1 writes a missing NAME.err from axc's stderr (inspect it by eye).
set -u
root=${AXC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
AXC=${AXC:-$root/build/bin/axc}
AXC_BUILD=${AXC_BUILD:-$root/build}
PYTHON=${PYTHON:-/usr/bin/python3}
here=$root/tests/cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2

# check NAME COMMAND...: PASS when the command (a check_* function) succeeds;
# otherwise FAIL with what it wrote, indented.
check() {
    local name=$1; shift
    if "$@" >"$tmp/why" 2>&1; then echo "PASS: cli:$name"
    else echo "FAIL: cli:$name"; sed 's/^/  /' "$tmp/why" | head -25; fi
}

# run_axc ARGS...: runs axc, leaving stdout in out, stderr in err, status in rc.
run_axc() {
    "$AXC" "$@" >out 2>err
    rc=$?
    echo "axc $*: exit $rc"
}

show() { echo "stdout:"; head -5 out; echo "stderr:"; head -8 err; }

expect_rc() {  # expect_rc WANTED...: rc is one of them, and axc did not crash
    local w
    for w in "$@"; do [ "$rc" -eq "$w" ] && return 0; done
    echo "expected exit status $*"; show; return 1
}

cat >mlp.ax <<'AX'
@axiom mlp(x::Float32[1, 784]) begin
    Dense(784 => 256, activation=relu)
    Dense(256 => 10, activation=softmax)
end
AX
cat >small.ax <<'AX'
@axiom function small(x::Float32[3, 5])
    fc1 = Dense(5 => 4, activation=relu)
    fc2 = Dense(4 => 2)
    return fc2(fc1(x))
end
AX
cat >two.ax <<'AX'
@axiom first(x::Float32[2, 3]) begin
    relu
end
@axiom second(x::Float32[2, 3]) begin
    Dense(3 => 4)
end
AX
cat >bad.ax <<'AX'
@axiom bad(x::Float32[1, 512]) begin
    Dense(784 => 256)
end
AX
"$PYTHON" - <<'PY'
import numpy as np
x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
np.save("x.npy", x)
np.save("wrong_shape.npy", np.zeros((5, 3), np.float32))
np.save("fortran.npy", np.asfortranarray(x))
np.save("big_endian.npy", x.astype(">f4"))
assert open("fortran.npy", "rb").read(128).find(b"'fortran_order': True") > 0
PY

check_help() { run_axc --help && expect_rc 0 && [ -s out ] || { echo "no help text on stdout"; false; }; }
check_version() { run_axc --version && expect_rc 0 && [ -s out ] || { echo "no version on stdout"; false; }; }
check_unknown_option() { run_axc --frobnicate mlp.ax -o u.c; expect_rc 2; }
check_missing_file() {
    run_axc nosuch.ax -o m.c; expect_rc 2 || return 1
    grep -q 'nosuch\.ax' err || { echo "stderr does not name nosuch.ax"; show; return 1; }
}
check_error_leaves_nothing() {
    run_axc bad.ax -o bad.c -MD; expect_rc 1 || return 1
    local f; for f in bad.c bad.h bad.d; do [ ! -e $f ] || { echo "$f left behind"; return 1; }; done
}
check_error_keeps_old_output() {
    echo "old c" >keep.c; echo "old h" >keep.h
    run_axc bad.ax -o keep.c; expect_rc 1 || return 1
    [ "$(cat keep.c)" = "old c" ] && [ "$(cat keep.h)" = "old h" ] \
        || { echo "an existing output file was changed after a failure"; return 1; }
}
check_c_and_header() {
    mkdir -p gen
    run_axc mlp.ax -o gen/mlp.c; expect_rc 0 || return 1
    [ -s gen/mlp.c ] && [ -s gen/mlp.h ] || { echo "gen/mlp.c or gen/mlp.h missing"; ls gen; return 1; }
}
check_header_option() {
    mkdir -p hdr inc
    run_axc mlp.ax -o hdr/mlp.c --header=inc/api.h; expect_rc 0 || return 1
    [ -s inc/api.h ] && [ ! -e hdr/mlp.h ] || { echo "header not at inc/api.h only"; ls hdr inc; return 1; }
    gcc -std=c99 -Wall -Werror -I"$AXC_BUILD/include" -Iinc -c hdr/mlp.c -o hdr/mlp.o
}
check_header_contents() {
    [ -s gen/mlp.h ] || { echo "gen/mlp.h missing"; return 1; }
    grep -q '#define MLP_ARENA_BYTES' gen/mlp.h || { echo "no MLP_ARENA_BYTES"; return 1; }
    grep -Eq 'int mlp_forward\(const float \*[A-Za-z_0-9]*, *float \*[A-Za-z_0-9]*, *void \*[A-Za-z_0-9]*\)' gen/mlp.h \
        || { echo "no 'int mlp_forward(const float *x, float *y, void *arena)'"; grep forward gen/mlp.h; return 1; }
    grep -q 'extern const axrt_model mlp_model' gen/mlp.h || { echo "no mlp_model declaration"; return 1; }
    grep -q '#include "axrt.h"' gen/mlp.h || { echo "header does not include axrt.h"; return 1; }
}
check_emit_ir() { run_axc mlp.ax --emit=ir; expect_rc 0 && grep -q dense out || { echo "no 'dense' in the IR"; show; false; }; }
check_emit_mem() { run_axc mlp.ax --emit=mem; expect_rc 0 && grep -q '[0-9]' out || { echo "no plan printed"; show; false; }; }
# --print-after-all names every row of the pipeline table that ran, in
# order; under --ram the row-by-row expansion is not made (instead of made
# and undone), and the --ram row runs.
rows_ran() { grep -o '^\*\*\* IR after [a-z_0-9]*' err | sed 's/.* //' | tr '\n' ' '; }
expect_rows() {
    local got; got=$(rows_ran)
    [ "$got" = "$1" ] || { echo "rows: '$got'"; echo "want: '$1'"; false; }
}
check_print_after_all() {
    local fuse="fuse_matmul_transposed fold_batchnorm fold_scale_shift fuse_residual fuse_gelu fuse_activation"
    fuse="$fuse fuse_spatial_mean fuse_elementwise schedule"
    cp "$here/../ir/cases/expand_depthwise.ax" ed.ax
    run_axc ed.ax --seed=1 --print-after-all -o pa.c && expect_rc 0 || return 1
    expect_rows "lower shape dtype $fuse fuse_expand_depthwise fuse_input_scale memplan select " || return 1
    grep -q rows_fused err || { echo "no rows_fused in the IR printed"; return 1; }
    run_axc ed.ax --seed=1 -O0 --print-after-all -o pa.c && expect_rc 0 || return 1
    expect_rows "lower shape dtype memplan select " || return 1
    run_axc ed.ax --seed=1 --ram=1M --print-after-all -o pa.c && expect_rc 0 || return 1
    expect_rows "lower shape dtype $fuse memplan fit_ram select " || return 1
    ! grep -q rows_fused err || { echo "rows_fused printed under --ram"; return 1; }
}
# Under --quantize the residual add that int8 runs apart (a layer's, with a
# ReLU after it) is never fused into the layer (instead of fused and split
# again before calibration); at -O0 int8 folds and fuses as -O1 does.
check_print_after_all_int8() {
    cp "$here/../quant/qres.ax" qres.ax
    "$PYTHON" -c "import numpy as np; np.save('qres_x.npy', np.random.default_rng(1).standard_normal((2, 1, 8, 8, 4)).astype(np.float32))" || return 1
    run_axc qres.ax --quantize=int8 --calibrate x=qres_x.npy --print-after-all -o pq.c && expect_rc 0 || return 1
    expect_rows "lower shape dtype fuse_matmul_transposed fold_batchnorm fold_scale_shift fuse_residual fuse_gelu fuse_activation fuse_spatial_mean fuse_elementwise schedule memplan quantize select " || return 1
    sed -n '/^\*\*\* IR after fuse_residual/,/^\*\*\* IR after fuse_activation/p' err | grep -q ' = add %' ||
        { echo "the residual add of int8 conv 'b' was fused"; return 1; }
    run_axc qres.ax -O0 --quantize=int8 --calibrate x=qres_x.npy --print-after-all -o pq.c && expect_rc 0 || return 1
    expect_rows "lower shape dtype fold_batchnorm fuse_activation memplan quantize select " || return 1
}
check_depfile() {
    "$PYTHON" "$here/write_weights.py" small w.safetensors || return 1
    run_axc small.ax -o dep.c --weights=w.safetensors -MD -MF f.d -MT target; expect_rc 0 || return 1
    [ -s f.d ] || { echo "f.d not written"; return 1; }
    grep -q '^target *:' f.d && grep -q 'small\.ax' f.d && grep -q 'w\.safetensors' f.d \
        || { echo "f.d does not name target, small.ax and w.safetensors:"; cat f.d; return 1; }
}
check_model_option() {
    run_axc two.ax --model=second -o two.c; expect_rc 0 || return 1
    grep -q 'second_forward' two.h && ! grep -q 'first_forward' two.h \
        || { echo "two.h should declare second_forward only"; grep forward two.h; return 1; }
}
check_all_models() {
    run_axc two.ax -o both.c; expect_rc 0 || return 1
    grep -q 'second_forward' both.h && grep -q 'first_forward' both.h \
        || { echo "both.h should declare both models"; grep forward both.h; return 1; }
}
check_bench() {
    run_axc run mlp.ax --bench 5; expect_rc 0 || return 1
    [ "$(wc -l <out)" -eq 1 ] && grep -Eq '^mlp: min [0-9.]+ us, median [0-9.]+ us, max [0-9.]+ us over 5 runs$' out \
        || { echo "bench line does not match"; show; return 1; }
}
# --bench names the kernels' instruction set and threads on stderr; every
# instruction set (AXRT_ISA, those this CPU has) and thread count gives
# outputs within 1e-5 of the reference interpreter.
check_isa_threads() {
    run_axc run mlp.ax --bench 3 --threads 2; expect_rc 0 || return 1
    grep -Eq '^mlp: kernels [a-z0-9]+, 2 thread\(s\)$' err || { echo "no kernels line"; show; return 1; }
    mkdir -p ref && run_axc run mlp.ax --interp --seed 5 --output-dir ref; expect_rc 0 || return 1
    local isa t
    for isa in portable avx2 avx512; do
        for t in 1 3; do
            mkdir -p $isa$t && AXRT_ISA=$isa "$AXC" run mlp.ax --seed 5 --threads $t --bench 1 --output-dir $isa$t >out 2>err \
                || { echo "AXRT_ISA=$isa --threads $t failed"; show; return 1; }
            grep -q "kernels $isa, $t thread" err || [ "$isa" != portable ] || { echo "portable not forced"; show; return 1; }
            "$PYTHON" "$root/tests/compile/compare_npy.py" $isa$t ref 1e-5 \
                || { echo "AXRT_ISA=$isa --threads $t differs from the interpreter"; return 1; }
        done
    done
}
check_good_npy() {  # the control for the three rejections below
    run_axc run small.ax --input x=x.npy --output y.npy; expect_rc 0 || return 1
    "$PYTHON" -c "import numpy as np, sys; y = np.load('y.npy'); sys.exit(y.shape != (3, 2) or y.dtype != np.float32)" \
        || { echo "y.npy is not float32 [3, 2]"; return 1; }
    rm -f y.npy
}
check_bad_npy() {  # check_bad_npy FILE
    run_axc run small.ax --input x="$1" --output y.npy; expect_rc 1 2 || return 1
    grep -q "$1" err || { echo "stderr does not name $1"; show; return 1; }
    [ ! -e y.npy ] || { echo "y.npy written"; return 1; }
}
check_weights_errors() {
    "$PYTHON" "$here/write_weights.py" broken broken.safetensors || return 1
    run_axc small.ax -o wb.c --weights=broken.safetensors; expect_rc 1 || return 1
    local n; for n in fc2.bias bogus.weight fc1.bias; do
        grep -q "$n" err || { echo "stderr does not name $n"; show; return 1; }
    done
    [ ! -e wb.c ] || { echo "wb.c written"; return 1; }
}
check_driver() {
    mkdir -p drv
    run_axc mlp.ax --seed=5 -o drv/mlp.c; expect_rc 0 || return 1
    "$PYTHON" -c "import numpy as np; np.save('xd.npy', (np.sin(np.arange(784)) * 2).astype(np.float32).reshape(1, 784))"
    run_axc run mlp.ax --seed=5 --input x=xd.npy --output yd.npy; expect_rc 0 || return 1
    # $CC (word-split): under `make test-asan` it carries the sanitizer
    # flags the instrumented libaxrt.a needs at link time.
    ${CC:-gcc} -std=c99 -Wall -Wextra -Werror -I"$AXC_BUILD/include" -Idrv -o drv/driver \
        "$here/driver.c" drv/mlp.c "$AXC_BUILD/lib/libaxrt.a" -lm || return 1
    ./drv/driver >drv/out.txt || { echo "driver failed"; cat drv/out.txt; return 1; }
    "$PYTHON" "$here/compare_driver.py" drv/out.txt yd.npy
}
# Graph inputs and outputs are not capped (issue 10): 40 of each compile as
# strict C99, and `axc run` (generated C, with 40 --input files) matches the
# interpreter and numpy's y_i = relu(a_i) + a_{i+1 mod 40}.
check_many_io() {
    local n=40 i sig="" rets="" inputs=""
    for ((i = 0; i < n; i++)); do
        sig+="${sig:+, }a$i::Float32[2, 3]"
        rets+="${rets:+, }relu(a$i) + a$(((i + 1) % n))"
        inputs+=" --input a$i=io/a$i.npy"
    done
    mkdir -p io io/gen io/ref
    printf '@axiom function many(%s)\n    return %s\nend\n' "$sig" "$rets" >many.ax
    run_axc many.ax -o io/many.c; expect_rc 0 || return 1
    gcc -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$AXC_BUILD/include" -Iio -c io/many.c -o io/many.o \
        || return 1
    "$PYTHON" -c "
import numpy as np
for i in range($n): np.save(f'io/a{i}.npy', np.sin(np.arange(6.0) + 7 * i).astype(np.float32).reshape(2, 3))" || return 1
    run_axc run many.ax $inputs --output-dir io/gen; expect_rc 0 || return 1
    run_axc run --interp many.ax $inputs --output-dir io/ref; expect_rc 0 || return 1
    "$PYTHON" "$root/tests/compile/compare_npy.py" io/gen io/ref 1e-6 || return 1
    "$PYTHON" -c "
import numpy as np, os, sys
a = [np.load(f'io/a{i}.npy') for i in range($n)]
outs = sorted(f for f in os.listdir('io/gen') if f.endswith('.npy'))
if len(outs) != $n: sys.exit(f'{len(outs)} outputs, expected $n')
for k in range($n):
    y = np.load(f'io/gen/out{k}.npy')
    if not np.allclose(y, np.maximum(a[k], 0) + a[(k + 1) % $n], rtol=0, atol=1e-6): sys.exit(f'out{k} differs from numpy')"
}

# ---- issue 12: the first hour of a new user --------------------------------
check_no_weights_note() {
    run_axc mlp.ax -o nw.c; expect_rc 0 || return 1
    grep -q 'note: no --weights given.*--seed' err || { echo "no note naming --seed"; show; return 1; }
    run_axc mlp.ax -o nw.c --seed=0; expect_rc 0 || return 1
    [ ! -s err ] || { echo "a note despite an explicit --seed"; show; return 1; }
}
check_output_extensions() {
    local o
    for o in m.s m.txt m; do
        run_axc mlp.ax -o $o --seed=0; expect_rc 2 || return 1
        grep -q -- "-o $o" err || { echo "stderr does not name -o $o"; show; return 1; }
        [ ! -e $o ] || { echo "$o written"; return 1; }
    done
    run_axc run mlp.ax -o r.c --seed=0; expect_rc 2 || return 1
    grep -q -- "-o r.c is not used" err || { echo "'axc run -o' not refused"; show; return 1; }
}
check_option_hints() {
    run_axc mlp.ax --thread 2 -o t.c; expect_rc 2 || return 1
    grep -q "did you mean '--threads'" err || { show; return 1; }
    run_axc mlp.ax --weight w.safetensors -o t.c; expect_rc 2 || return 1
    grep -q "did you mean '--weights'" err || { show; return 1; }
    local opt
    for opt in --train --shuffle --nesterov; do
        run_axc run mlp.ax $opt; expect_rc 2 || return 1
        grep -q "option '$opt' is not valid in this mode" err || { echo "$opt: no 'not valid in this mode'"; show; return 1; }
    done
    run_axc mlp.ax --emit=ax; expect_rc 2 || return 1
    grep -q "prints an imported model (FILE.onnx, FILE.tflite)" err || { show; return 1; }
    run_axc train mlp.ax --loss=mse; expect_rc 2 || return 1
    grep -q "'axc train' needs --target" err || { show; return 1; }
    run_axc mlp.ax --epochs=2 -o t.c; expect_rc 2 || return 1
    grep -q "only valid with 'axc train'" err || { show; return 1; }
}
check_io_exit_codes() {  # docs/cli.md#exit-status: an unreadable file is an I/O error (2) whatever its role
    run_axc nosuch.ax -o m.c; expect_rc 2 || return 1
    run_axc mlp.ax -o m.c --weights=nosuch.safetensors; expect_rc 2 || return 1
    grep -q "nosuch.safetensors" err || { show; return 1; }
    run_axc run small.ax --input x=nosuch.npy; expect_rc 2 || return 1
}
check_npy_as_weights() {
    run_axc small.ax -o m.c --weights=x.npy; expect_rc 1 || return 1
    grep -q "x.npy is a NumPy .npy file, not a safetensors file" err || { show; return 1; }
    ! grep -q "header length" err || { show; return 1; }
}
check_input_name_lists() {
    run_axc run small.ax --input nope=x.npy; expect_rc 2 || return 1
    grep -q "its inputs: x" err || { show; return 1; }
}
check_output_directory() {
    mkdir -p isdir.c
    run_axc mlp.ax -o isdir.c --seed=0; expect_rc 2 || return 1
    grep -q "cannot write 'isdir.c'" err || { show; return 1; }
}
# 25 layers labelled like PyTorch's nested modules with '_' (layer1_0_fc):
# every missing tensor is paired with the file's dotted name, nothing is cut
# off by the error limit, and no pair is also listed as unexpected.
check_renamed_tensors() {
    { echo '@axiom function deep(x::Float32[1, 4])'
      for i in $(seq 0 24); do echo "    layer${i}_0_fc = Dense(4 => 4)"; done
      printf '    return '; for i in $(seq 24 -1 1); do printf 'layer%d_0_fc(' $i; done
      printf 'layer0_0_fc(x'; for i in $(seq 1 24); do printf ')'; done; echo ')'
      echo 'end'; } >deep.ax
    "$PYTHON" - <<'PY' || return 1
import json, struct
h, off = {}, 0
for i in range(25):
    for n, shape in (("weight", [4, 4]), ("bias", [4])):
        size = 4 * (16 if n == "weight" else 4)
        h["layer%d.0.fc.%s" % (i, n)] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + size]}
        off += size
j = json.dumps(h).encode()
open("deep.safetensors", "wb").write(struct.pack("<Q", len(j)) + j + bytes(off))
PY
    run_axc deep.ax -o deep.c --weights=deep.safetensors; expect_rc 1 || return 1
    [ "$(grep -c "the file has 'layer[0-9]*\.0\.fc\.\(weight\|bias\)' of the same shape" err)" -eq 20 ] \
        || { echo "expected 20 paired lines (the error limit)"; show; return 1; }
    grep -q "missing tensor 'layer0_0_fc.weight' (Float32\[4, 4\]) in deep.safetensors; the file has 'layer0.0.fc.weight'" err \
        || { show; return 1; }
    ! grep -q "unexpected tensor 'layer0.0.fc" err || { echo "a paired tensor also listed as unexpected"; show; return 1; }
}
check_unused_layer() {
    cat >unused.ax <<'AX'
@axiom function unused(x::Float32[1, 4])
    fc1 = Dense(4 => 2)
    fc2 = Dense(2 => 2)
    return fc1(x)
end
AX
    run_axc unused.ax -o unused.c --seed=0; expect_rc 0 || return 1
    grep -q "unused.ax:3:5: warning: layer 'fc2' is declared but never used" err || { show; return 1; }
    run_axc unused.ax -o unused.c --seed=0 -Werror; expect_rc 1 || return 1
    # a list used only by a for loop or by indexing is used
    cat >looped.ax <<'AX'
@axiom function looped(x::Float32[1, 4])
    blocks = [Dense(4 => 4) for i in 1:2]
    heads = [Dense(4 => 4) for i in 1:2]
    h = x
    for b in blocks
        h = b(h)
    end
    return heads[1](h)
end
AX
    run_axc looped.ax -o looped.c --seed=0 -Werror; expect_rc 0 || return 1
}
# The generated files do not depend on where the source lies: the same
# model compiled from two directories (absolute paths, as make's vpath
# gives) is byte-identical, and --file-prefix-map names it as asked.
check_reproducible() {
    mkdir -p r1/sub r2/deeper/sub && cp mlp.ax r1/sub/ && cp mlp.ax r2/deeper/sub/
    run_axc "$PWD/r1/sub/mlp.ax" -o r1/m.c --seed=0; expect_rc 0 || return 1
    run_axc "$PWD/r2/deeper/sub/mlp.ax" -o r2/m.c --seed=0; expect_rc 0 || return 1
    cmp r1/m.c r2/m.c && cmp r1/m.h r2/m.h || { echo "outputs differ"; diff r1/m.c r2/m.c | head -5; return 1; }
    ! grep -q "$PWD" r1/m.c r1/m.h || { echo "the absolute path is embedded"; return 1; }
    (cd r1 && "$AXC" sub/mlp.ax -o rel.c --seed=0) && (cd r2/deeper && "$AXC" sub/mlp.ax -o ../rel.c --seed=0) || return 1
    cmp r1/rel.c r2/rel.c || { echo "relative compiles differ"; return 1; }
    run_axc "$PWD/r1/sub/mlp.ax" -o r1/map.c --seed=0 --file-prefix-map="$PWD/r1/=models/"; expect_rc 0 || return 1
    grep -q "Generated by axc from models/sub/mlp.ax" r1/map.c || { head -2 r1/map.c; return 1; }
}
# axc run keeps the shared object it builds: a second run of the same model
# does not call the C compiler (CC counts its calls), another model does.
check_run_cache() {
    local cache=$tmp/cache count=$tmp/cc-calls
    printf '#!/bin/sh\necho call >>"%s"\nexec %s "$@"\n' "$count" "${CC:-cc}" >cc-count && chmod +x cc-count
    rm -f "$count"
    AXC_CACHE_DIR=$cache CC=$PWD/cc-count run_axc run small.ax --seed=1 --output c1.npy; expect_rc 0 || return 1
    AXC_CACHE_DIR=$cache CC=$PWD/cc-count run_axc run small.ax --seed=1 --output c2.npy; expect_rc 0 || return 1
    [ "$(wc -l <"$count")" -eq 1 ] || { echo "the C compiler ran $(wc -l <"$count") times for two identical runs"; return 1; }
    cmp c1.npy c2.npy || { echo "cached run differs"; return 1; }
    AXC_CACHE_DIR=$cache CC=$PWD/cc-count run_axc run small.ax --seed=2 --output c3.npy; expect_rc 0 || return 1
    [ "$(wc -l <"$count")" -eq 2 ] || { echo "other weights did not rebuild"; return 1; }
    AXC_CACHE_DIR=off CC=$PWD/cc-count run_axc run small.ax --seed=1 --output c4.npy; expect_rc 0 || return 1
    [ "$(wc -l <"$count")" -eq 3 ] || { echo "AXC_CACHE_DIR=off still used a cache"; return 1; }
    env -u AXC_CACHE_DIR XDG_CACHE_HOME="$tmp/xdg" CC=$PWD/cc-count "$AXC" run small.ax --seed=1 >/dev/null 2>&1
    ls "$tmp"/xdg/axc/*.so >/dev/null 2>&1 || { echo "no entry under \$XDG_CACHE_HOME/axc"; return 1; }
}

# --blas=openblas (docs/performance.md): float32 dense and matmul call
# cblas_sgemm; the generated C builds warning-free, and every example with a
# dense or matmul gives the default build's outputs within 1e-5 (weights
# from --seed 3 with noise added, so that the biases are not all zero).
have_openblas() {
    printf '#include <cblas.h>\nint main(void) { return cblas_sdot(0, 0, 1, 0, 1) != 0.0f; }\n' >ob.c
    "${CC:-cc}" ob.c -o ob -lopenblas >/dev/null 2>&1
}
check_blas_option() {
    run_axc mlp.ax -o m.c --blas=mkl; expect_rc 2 || return 1
    grep -q "unknown BLAS 'mkl' (expected openblas)" err || { show; return 1; }
    [ ! -e m.c ] || { echo "m.c written on a usage error"; return 1; }
}
check_blas_equal() {
    local f name
    for f in "$root"/examples/{mlp,r1_mlp_b1,r2_mlp_b32,r4_bert_layer,gpt_block,lenet5}.ax \
             "$root"/tests/ops/matmul.ax "$root"/tests/ops/matmul_2d.ax; do
        name=$(basename "$f" .ax)
        run_axc "$f" -o "b_$name.c" --seed 3 --save-weights="w_$name.safetensors" --blas=openblas; expect_rc 0 || return 1
        "$PYTHON" "$here/write_weights.py" perturb "w_$name.safetensors" || return 1
        grep -q cblas_sgemm "b_$name.c" || { echo "$name: no cblas_sgemm call"; return 1; }
        ! grep -Eq 'axrt_(dense|matmul)_' "b_$name.c" || { echo "$name: libaxrt GEMM still called"; return 1; }
        "${CC:-cc}" -std=c99 -Wall -Wextra -Wpedantic -Werror -I"$AXC_BUILD/include" -c "b_$name.c" -o "b_$name.o" \
            || { echo "$name: generated C does not build warning-free"; return 1; }
        mkdir -p "d_$name" "o_$name"
        run_axc run "$f" --weights="w_$name.safetensors" --seed 3 --output-dir "d_$name"; expect_rc 0 || return 1
        run_axc run --blas=openblas "$f" --weights="w_$name.safetensors" --seed 3 --output-dir "o_$name"
        expect_rc 0 || return 1
        "$PYTHON" "$root/tests/compile/compare_npy.py" "o_$name" "d_$name" 1e-5 \
            || { echo "$name: --blas=openblas differs from the default build"; return 1; }
    done
}

check help check_help
check version check_version
check unknown-option-exit-2 check_unknown_option
check missing-file-exit-2 check_missing_file
check error-exit-1-no-output check_error_leaves_nothing
check error-keeps-old-output check_error_keeps_old_output
check c-and-header check_c_and_header
check header-option check_header_option
check header-contents check_header_contents
check emit-ir check_emit_ir
check emit-mem check_emit_mem
check print-after-all check_print_after_all
check print-after-all-int8 check_print_after_all_int8
check depfile check_depfile
check model-option check_model_option
check all-models check_all_models
check bench-line check_bench
check isa-threads check_isa_threads
check input-good check_good_npy
check input-wrong-shape check_bad_npy wrong_shape.npy
check input-fortran-order check_bad_npy fortran.npy
check input-big-endian check_bad_npy big_endian.npy
check weights-missing-extra-misshapen check_weights_errors
check c-driver check_driver
check many-inputs-outputs check_many_io
check no-weights-note check_no_weights_note
check output-extensions check_output_extensions
check option-hints check_option_hints
check io-exit-codes check_io_exit_codes
check npy-as-weights check_npy_as_weights
check input-name-lists-inputs check_input_name_lists
check output-directory-named check_output_directory
check renamed-tensors-paired check_renamed_tensors
check unused-layer-warns check_unused_layer
check reproducible-output check_reproducible
check run-cache check_run_cache
check blas-option check_blas_option
if have_openblas; then check blas-equals-default check_blas_equal
else echo "SKIP: cli:blas-equals-default (no OpenBLAS: cblas.h, -lopenblas)"; fi

# ---- hostile input (issue 11) ------------------------------------------------

# A 25,000-term sum overflowed the stack of every recursive walk: now a
# located error; 999 nested calls (under the limit) still compile.
check_deep_expression() {
    "$PYTHON" -c "
print('@axiom function s(x::Float32[4])')
print('    return ' + ' + '.join(['x'] * 25000))
print('end')" >deep.ax
    run_axc deep.ax -o deep.c; expect_rc 1 || return 1
    grep -q 'nested too deeply' err || { echo "no 'nested too deeply'"; show; return 1; }
    "$PYTHON" -c "
print('@axiom function s(x::Float32[4])')
print('    return ' + 'relu(' * 998 + 'x' + ')' * 998)
print('end')" >nested.ax
    run_axc nested.ax -o nested.c; expect_rc 0 || return 1
    # const C1 = C0 + 1, ..., 50,000 deep: the evaluation recursed per const
    "$PYTHON" -c "
print('const C0 = 1')
for i in range(1, 50000): print(f'const C{i} = C{i-1} + 1')
print('@axiom function s(x::Float32[C49999])')
print('    return x')
print('end')" >constchain.ax
    run_axc constchain.ax -o constchain.c; expect_rc 1 || return 1
    grep -q 'chain of more than 1000 other constants' err || { echo "no message about the chain"; show; return 1; }
}
# y1 = y0 .* y0, y2 = y1 .* y1, ...: one fused program whose nested form
# doubles per step; --emit=ir printed it expanded (2^40 steps, a hang).
check_fused_dag_dump() {
    "$PYTHON" -c "
print('@axiom function s(x::Float32[4])')
print('    y0 = relu(x)')
for i in range(1, 41): print(f'    y{i} = y{i-1} .* y{i-1}')
print('    return y40')
print('end')" >dag.ax
    "$AXC" dag.ax --emit=ir >out 2>err & local pid=$!
    ( sleep 30; kill -9 $pid 2>/dev/null ) & local guard=$!
    wait $pid; rc=$?; kill $guard 2>/dev/null; wait $guard 2>/dev/null
    expect_rc 0 || return 1
    [ "$(wc -c <out)" -lt 100000 ] || { echo "the IR dump is $(wc -c <out) bytes"; return 1; }
}
# A chain of 20,000 reshapes: the code generator followed it recursively.
check_reshape_chain() {
    "$PYTHON" -c "
print('@axiom function s(x::Float32[4, 4])')
print('    y0 = reshape(x, (16,))')
for i in range(1, 20000): print(f'    y{i} = reshape(y{i-1}, (%s))' % ('4, 4' if i % 2 else '16,'))
print('    return y19999')
print('end')" >chain.ax
    (ulimit -s 1024; "$AXC" -O0 chain.ax -o chain.c >out 2>err); rc=$?; expect_rc 0
}

# A directory named as an output made the commit fail after renaming the
# others, and the files already renamed -- the user's -- were unlinked.
check_commit_failure_keeps_old() {
    local opt
    for opt in --header=adir -MFadir --save-weights=adir; do
        rm -rf adir; mkdir adir
        echo "old c" >keep2.c; echo "old h" >keep2.h; echo "old d" >keep2.d
        run_axc small.ax -o keep2.c -MD $opt; expect_rc 2 || return 1
        [ "$(cat keep2.c)" = "old c" ] && [ "$(cat keep2.h 2>/dev/null)" = "old h" -o "$opt" = --header=adir ] \
            || { echo "$opt: an old output was lost"; ls -la; return 1; }
        [ -d adir ] && [ -z "$(ls -A adir)" ] || { echo "$opt: the directory changed"; return 1; }
    done
    [ -z "$(ls -A | grep '^\.')" ] || { echo "temporaries left:"; ls -A; return 1; }
}
# Outputs aliasing the model (by any spelling or a hard link) or each other.
check_output_aliases() {
    cp small.ax alias.ax && cp alias.ax alias.orig && ln -f alias.ax alias_link.ax
    local args
    for args in "-o alias.ax" "-o a.c --header=alias.ax" "-o a.c -MF ./alias.ax" "-o a.c --save-weights=alias.ax" \
                "-o alias_link.ax" "-o same.c --header=same.c" "-o ./m2.h" "-o a.c -MD -MF a.h"; do
        run_axc alias.ax $args; expect_rc 2 || return 1
        cmp -s alias.ax alias.orig || { echo "$args: the model was overwritten"; return 1; }
    done
    run_axc run alias.ax --output alias.ax; expect_rc 2 || return 1
    run_axc run alias.ax --input x=x.npy --output x.npy; expect_rc 2 || return 1
    cmp -s alias.ax alias.orig || { echo "run --output: the model was overwritten"; return 1; }
    [ ! -e same.c ] && [ ! -e a.c ] || { echo "an output was written"; return 1; }
}
# A FIFO (and, as root, a character device made here) named as an output is
# written in place and stays what it was.
check_special_outputs() {
    rm -f fifo.npy got.npy; mkfifo fifo.npy || return 1
    cat fifo.npy >got.npy & local reader=$!
    ( sleep 30; kill $reader 2>/dev/null ) & local guard=$!
    run_axc run small.ax --input x=x.npy --output fifo.npy
    [ -p fifo.npy ] || { kill $reader $guard; echo "fifo.npy is no longer a FIFO"; ls -l fifo.npy; return 1; }
    expect_rc 0 || { kill $reader $guard; return 1; }
    wait $reader; kill $guard 2>/dev/null; wait $guard 2>/dev/null
    "$PYTHON" -c "import numpy as np; assert np.load('got.npy').shape == (3, 2)" || { echo "bad data through the FIFO"; return 1; }
    # a link to this process's stdout (as /dev/stdout is) redirected to a file
    rm -f mystdout so.npy; ln -s /proc/self/fd/1 mystdout
    "$AXC" run small.ax --input x=x.npy --output mystdout >so.npy 2>err; rc=$?
    expect_rc 0 || return 1
    [ -L mystdout ] || { echo "the link mystdout was replaced"; return 1; }
    "$PYTHON" -c "import numpy as np; assert np.load('so.npy').shape == (3, 2)" || { echo "bad data through stdout"; return 1; }
    if [ "$(id -u)" = 0 ]; then
        rm -f null.c; mknod null.c c 1 3 || return 1
        run_axc small.ax -o null.c --header=null.h; expect_rc 0 || return 1
        [ -c null.c ] || { echo "the device null.c was replaced"; ls -l null.c; return 1; }
        run_axc run small.ax --output /dev/null; expect_rc 0 || return 1
        [ -c /dev/null ] || { echo "/dev/null was replaced"; return 1; }
    fi
}
# wait_for FILE: up to 20 s for FILE to appear.
wait_for() { local i; for i in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.1; done; echo "$1 never appeared"; return 1; }
# SIGTERM during the renames (the test hook pauses after the first one):
# the signal waits for the commit; the set is all new, nothing hidden left.
check_signal_during_commit() {
    mkdir -p sig && rm -rf sig/* sig/.[!.]* 2>/dev/null
    echo old >sig/m.c; echo old >sig/m.h; echo old >sig/m.d
    AXC_TEST_PAUSE_COMMIT=$tmp/sig.flag "$AXC" small.ax -o sig/m.c -MD >out 2>err & local pid=$!
    wait_for sig.flag || { kill $pid; return 1; }
    kill -TERM $pid; rm -f sig.flag; wait $pid; rc=$?
    expect_rc 143 || return 1
    local f; for f in m.c m.h m.d; do
        [ "$(cat sig/$f)" != old ] || { echo "sig/$f is still the old file (a mixed set)"; return 1; }
    done
    [ "$(ls -A sig | wc -l)" = 3 ] || { echo "left in sig/:"; ls -A sig; return 1; }
}
# SIGTERM after staging, before the commit: old files kept, temporaries gone.
check_signal_before_commit() {
    mkdir -p sig2 && echo old >sig2/m.c && echo old >sig2/m.h
    AXC_TEST_PAUSE_STAGED=$tmp/sig2.flag "$AXC" small.ax -o sig2/m.c >out 2>err & local pid=$!
    wait_for sig2.flag || { kill $pid; return 1; }
    kill -TERM $pid; wait $pid; rc=$?; rm -f sig2.flag
    expect_rc 143 || return 1
    [ "$(cat sig2/m.c)" = old ] && [ "$(cat sig2/m.h)" = old ] || { echo "an old output changed"; return 1; }
    [ "$(ls -A sig2 | wc -l)" = 2 ] || { echo "temporaries left in sig2/:"; ls -A sig2; return 1; }
}
# axc run killed while its C compiler runs: no $TMPDIR/axc-run-* left.
check_run_interrupted() {
    mkdir -p runtmp && rm -rf runtmp/*
    printf '#!/bin/sh\ntouch "%s/cc.started"\nexec sleep 30\n' "$tmp" >slowcc && chmod +x slowcc
    rm -f cc.started
    TMPDIR=$tmp/runtmp "$AXC" run small.ax --cc=./slowcc >out 2>err & local pid=$!
    wait_for cc.started || { kill $pid; return 1; }
    kill -TERM $pid; wait $pid; rc=$?   # (a background job ignores SIGINT)
    expect_rc 143 || return 1
    [ -z "$(ls -A runtmp)" ] || { echo "left in TMPDIR:"; ls -AR runtmp; return 1; }
}
# Out of memory is a message and exit 2, not an abort (not under ASan,
# whose allocator ignores ulimit -v).
check_out_of_memory() {
    if [ -n "${ASAN_OPTIONS+x}" ]; then echo "(skipped under ASan)"; return 0; fi
    cat >oom.ax <<'AX'
@axiom oom(x::Float32[1, 30000]) begin
    Dense(30000 => 30000)
end
AX
    (ulimit -v 1000000; "$AXC" oom.ax -o oom.c >out 2>err); rc=$?
    expect_rc 2 || return 1
    grep -q 'out of memory' err || { echo "no 'out of memory'"; show; return 1; }
    [ ! -e oom.c ] && [ -z "$(ls -A | grep '^\.oom')" ] || { echo "output or temporaries left"; return 1; }
}
# /dev/zero as the model, --weights or --input: refused at the format's bound.
check_endless_inputs() {
    local case
    for case in "/dev/zero -o z.c" "small.ax -o z.c --weights=/dev/zero" "run small.ax --input x=/dev/zero"; do
        # a memory cap makes an unbounded read fail fast (not under ASan,
        # whose shadow memory needs more address space than any cap)
        (if [ -z "${ASAN_OPTIONS+x}" ]; then ulimit -v 4000000; fi; timeout 60 "$AXC" $case >out 2>err); rc=$?
        expect_rc 1 2 || { echo "case: $case"; return 1; }
        grep -q 'larger than' err || { echo "$case: no 'larger than'"; show; return 1; }
    done
}
# Writes to a full stdout fail: exit 2 with a message.
check_stdout_errors() {
    [ -w /dev/full ] || { echo "(no /dev/full)"; return 0; }
    local case
    for case in "small.ax --emit=ir" "run small.ax --input x=x.npy" "--help" "run small.ax --bench 3" "--version"; do
        "$AXC" $case >/dev/full 2>err; rc=$?
        expect_rc 2 || { echo "case: $case"; return 1; }
        grep -q 'standard output' err || { echo "$case: no message"; cat err; return 1; }
    done
}

# MultiHeadAttention's scratch (lq * lk elements) wrapped past 64 bits.
check_mha_scratch_overflow() {
    cat >mhabig.ax <<'AX'
@axiom function att(x::Float32[1, 2147483647, 1])
    a = MultiHeadAttention(1 => 1)
    return a(x, x, x)
end
AX
    run_axc mhabig.ax -o mhabig.c; expect_rc 1 || return 1
    grep -q 'scratch' err || { echo "no message about the scratch size"; show; return 1; }
}

# -O2 grew quadratically with the statement count (pass_schedule and
# pass_fuse_elementwise rescanned the graph per node): 64,000 statements
# took over a minute; now about a second (bench/compile_scaling.sh).
check_large_chain_compiles() {
    { echo '@axiom chain(x::Float32[1, 8]) begin'; for _ in $(seq 64000); do echo '    relu'; done; echo end; } >chain64k.ax
    timeout 60 "$AXC" -O2 chain64k.ax -o chain64k.c >out 2>err; rc=$?
    expect_rc 0
}

# A 1 MB source line with an error at its end was echoed whole.
check_long_line_excerpt() {
    "$PYTHON" -c "
import sys
sys.stdout.write('@axiom s(x::Float32[1, 8]) begin\n' + 'relu;' * 200000 + ' bogus\nend\n')" >longline.ax
    run_axc longline.ax -o longline.c; expect_rc 1 || return 1
    grep -q "unknown name 'bogus'" err || { echo "no error about bogus"; show; return 1; }
    [ "$(wc -c <err)" -lt 2000 ] || { echo "stderr is $(wc -c <err) bytes"; return 1; }
    grep -q 'bogus$' err && grep -q '\^~~~~$' err || { echo "the excerpt lost the error's span"; cat err; return 1; }
}
# concat of 17 operands: the message names the limit.
# A concat takes any number of operands (once at most 16): 200 of x and
# relu(x) alternating, run, give the operands in order.
check_concat_many() {
    "$PYTHON" -c "
print('@axiom function c(x::Float32[1, 2])')
print('    r = relu(x)')
print('    return concat(' + ', '.join(['x', 'r'] * 100) + '; dims=1)')
print('end')" >cat200.ax
    "$PYTHON" -c "import numpy as np; np.save('xc.npy', np.array([[-1.5, 2.0]], np.float32))"
    run_axc run cat200.ax --input x=xc.npy --output yc.npy; expect_rc 0 || return 1
    "$PYTHON" -c "
import numpy as np, sys
x = np.array([[-1.5, 2.0]], np.float32)
want = np.concatenate([x, np.maximum(x, 0)] * 100, axis=1)
sys.exit(0 if np.array_equal(np.load('yc.npy'), want) else 'concat of 200 operands differs')" || return 1
}
# An ONNX model given as --weights: said so, by extension and by content.
check_onnx_as_weights() {
    printf '\x08\x07\x12\x07pytorch' >m.onnx; cp m.onnx renamed.bin
    local w; for w in m.onnx renamed.bin; do
        run_axc small.ax -o m.c --weights=$w; expect_rc 1 || return 1
        grep -q "$w is an ONNX model; pass it as the model" err || { show; return 1; }
        ! grep -q "header length" err || { show; return 1; }
    done
}
# AXRT_ISA naming no instruction set, or one this CPU lacks: a line on
# stderr names it and the set used instead (once per runtime copy: `axc run`
# holds its own and the model's, so at most two, the same); the run succeeds.
check_isa_not_honoured() {
    AXRT_ISA=avx51 "$AXC" run mlp.ax --bench 1 >out 2>err || { echo "run failed"; show; return 1; }
    local n; n=$(grep -c 'AXRT_ISA=avx51 is unknown (portable, avx2, avx512 or amx); the kernels use [a-z0-9]*$' err)
    [ "$n" -ge 1 ] && [ "$n" -le 2 ] && [ "$(grep 'AXRT_ISA=' err | sort -u | wc -l)" -eq 1 ] \
        || { echo "no line naming AXRT_ISA=avx51 and the set used (or more than one per runtime copy)"; show; return 1; }
    if ! grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
        AXRT_ISA=avx512 "$AXC" run mlp.ax --bench 1 >out 2>err || { echo "run failed"; show; return 1; }
        grep -q 'AXRT_ISA=avx512 is not supported by this CPU; the kernels use' err || { show; return 1; }
    fi
}
# An NCHW image for an NHWC input: the error names both layouts.
check_layout_named() {
    printf '@axiom img(x::Float32[1, 6, 6, 3]) begin\n    Conv((3, 3), 3 => 2)\nend\n' >img.ax
    "$PYTHON" -c "import numpy as np; np.save('nchw.npy', np.zeros((1, 3, 6, 6), np.float32))"
    run_axc run img.ax --seed=0 --input x=nchw.npy; expect_rc 1 || return 1
    grep -q 'the model takes NHWC images.*the file holds NCHW' err || { show; return 1; }
}
# 65 models in a file is an input error (exit 1), located.
check_too_many_models() {
    "$PYTHON" -c "
for i in range(65): print(f'@axiom m{i}(x::Float32[2]) begin\n    relu\nend')" >m65.ax
    run_axc m65.ax -o m65.c; expect_rc 1 || return 1
    grep -q 'm65.ax:[0-9]*:[0-9]*: error: more than 64 models' err || { echo "not a located error"; show; return 1; }
}

check deep-expression check_deep_expression
check long-line-excerpt check_long_line_excerpt
check concat-200-operands check_concat_many
check onnx-as-weights check_onnx_as_weights
check isa-not-honoured-warns check_isa_not_honoured
check layout-named check_layout_named
check too-many-models-exit-1 check_too_many_models
check large-chain-compiles-O2 check_large_chain_compiles
check mha-scratch-overflow check_mha_scratch_overflow
check fused-dag-dump check_fused_dag_dump
check reshape-chain check_reshape_chain
check commit-failure-keeps-old check_commit_failure_keeps_old
check output-aliases-refused check_output_aliases
check special-file-outputs check_special_outputs
check signal-during-commit check_signal_during_commit
check signal-before-commit check_signal_before_commit
check run-interrupted-cleans-up check_run_interrupted
check out-of-memory-exit-2 check_out_of_memory
check endless-inputs-bounded check_endless_inputs
check stdout-write-errors check_stdout_errors

# axc run's cache against planted, damaged and oversized entries; its LRU bound
AXC="$AXC" bash "$here/cache.sh"

# Golden diagnostics, run beside the file so it prints without a path.
check_diag() {
    local name=$1 dir=$tmp/diag_$1
    mkdir -p "$dir" && cp "$here/diag/$name.ax" "$dir/"
    (cd "$dir" && "$AXC" "$name.ax" -o "$name.c" >/dev/null 2>"$name.stderr"); rc=$?
    local golden=$here/diag/$name.err
    if [ ! -e "$golden" ] && [ "${AXC_BLESS:-0}" = 1 ]; then cp "$dir/$name.stderr" "$golden"; fi
    [ "$rc" -eq 1 ] || { echo "exit status $rc, expected 1"; cat "$dir/$name.stderr"; return 1; }
    [ ! -e "$dir/$name.c" ] || { echo "$name.c written"; return 1; }
    [ -e "$golden" ] || { echo "no $name.err; axc printed:"; cat "$dir/$name.stderr"; return 1; }
    diff -u "$golden" "$dir/$name.stderr" >"$dir/diff" || { echo "stderr differs (- expected, + got):"; tail -n +3 "$dir/diff"; return 1; }
}
for ax in "$here"/diag/*.ax; do
    name=$(basename "$ax" .ax)
    check "diag:$name" check_diag "$name"
done
