#!/usr/bin/env bash
# The command-line contract of interface.md §1-2 and the golden diagnostics
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
check depfile check_depfile
check model-option check_model_option
check all-models check_all_models
check bench-line check_bench
check input-good check_good_npy
check input-wrong-shape check_bad_npy wrong_shape.npy
check input-fortran-order check_bad_npy fortran.npy
check input-big-endian check_bad_npy big_endian.npy
check weights-missing-extra-misshapen check_weights_errors
check c-driver check_driver
check many-inputs-outputs check_many_io

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
