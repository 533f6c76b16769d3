#!/usr/bin/env bash
# Generated-C checks on every examples/*.ax:
#   compile:<ex>:gcc|clang|g++  `axc ex.ax -o ex.c`, then the .c compiles cleanly
#                               as strict C99 (gcc, clang) and as C++ (g++)
#   compile:<ex>:includes       ex.c and ex.h include only <stddef.h> <stdint.h>
#                               <string.h> <math.h> "axrt.h" and "ex.h"
#   xcheck:<ex>                 `axc run --seed 3` (generated C) agrees with
#                               `axc run --interp --seed 3` (rel 1e-5; 1e-4 deep)
# Environment: AXC, AXC_BUILD (include/), AXC_ROOT, PYTHON.  Optional
# arguments select examples by name.  AXC_TEST_SANITIZED=1 (make test-asan)
# skips the gcc/clang/g++ compiles: they run no code of ours, so the plain
# make test, which runs them on the same generated C, is where they count.
set -u
root=${AXC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
AXC=${AXC:-$root/build/bin/axc}
AXC_BUILD=${AXC_BUILD:-$root/build}
PYTHON=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Models whose outputs go through attention, convolution stacks or long sums.
deep=" r3_resnet_block r4_bert_layer lenet5 mobilenetv2_block gpt_block "

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; shift; local f; for f in "$@"; do sed 's/^/  /' "$f" | head -20; done; }

# compile_with NAME CASE COMMAND...: one compiler on the generated source.
compile_with() {
    local name=$1 case=$2; shift 2
    if "$@" >"$tmp/$name.$case.log" 2>&1; then pass "compile:$name:$case"
    else echo "$*" >"$tmp/$name.$case.cmd"; fail "compile:$name:$case" "$tmp/$name.$case.cmd" "$tmp/$name.$case.log"; fi
}

# The generated files include only the headers docs/cli.md#generated-c allows.
check_includes() {
    local name=$1 dir=$2
    grep -h '^[[:space:]]*#[[:space:]]*include' "$dir/$name.c" "$dir/$name.h" \
        | grep -vE '^[[:space:]]*#[[:space:]]*include[[:space:]]*(<(stddef|stdint|string|math)\.h>|"axrt\.h"|"'"$name"'\.h")' \
        >"$dir/includes.log"
    if [ -s "$dir/includes.log" ]; then fail "compile:$name:includes" "$dir/includes.log"
    else pass "compile:$name:includes"; fi
}

check_compile() {
    local name=$1 ex=$2 dir=$tmp/$1
    mkdir -p "$dir"
    "$AXC" "$ex" -o "$dir/$name.c" >"$dir/axc.log" 2>&1
    local rc=$?
    if [ $rc -ne 0 ]; then
        echo "$AXC $ex -o $name.c: exit $rc" >"$dir/axc.cmd"
        for cc in includes gcc clang g++; do fail "compile:$name:$cc" "$dir/axc.cmd" "$dir/axc.log"; done
        return
    fi
    check_includes "$name" "$dir"
    if [ "${AXC_TEST_SANITIZED:-}" = 1 ]; then   # no code of ours runs in these: make test has them
        for cc in gcc clang g++; do echo "SKIP: compile:$name:$cc (under make test-asan: make test runs it)"; done
        return
    fi
    local inc="-I$AXC_BUILD/include -I$dir"
    # gcc and g++ check the source only (-fsyntax-only: their diagnostics at
    # -O0 are the front end's; the code generation they would add on the
    # weights' initialisers is most of their time); xcheck below builds the
    # same code into an object with cc -O2 and runs it
    compile_with "$name" gcc gcc -std=c99 -Wall -Wextra -Wpedantic -Werror $inc -fsyntax-only "$dir/$name.c"
    compile_with "$name" clang clang -std=c99 -Wall -Wextra -Wpedantic -Werror $inc -c "$dir/$name.c" -o "$dir/clang.o"
    compile_with "$name" g++ g++ -x c++ -Wall -Wextra -Werror $inc -fsyntax-only "$dir/$name.c"
}

check_interp_agrees() {
    local name=$1 ex=$2 dir=$tmp/$1 tol=1e-5
    case $deep in *" $name "*) tol=1e-4 ;; esac
    local ok=1
    mkdir -p "$dir/gen" "$dir/ref"
    "$AXC" run "$ex" --seed=3 --output-dir "$dir/gen" >"$dir/gen.log" 2>&1 || ok=0
    "$AXC" run "$ex" --interp --seed=3 --output-dir "$dir/ref" >"$dir/ref.log" 2>&1 || ok=0
    if [ $ok = 0 ]; then
        fail "xcheck:$name" "$dir/gen.log" "$dir/ref.log"
    elif "$PYTHON" "$root/tests/compile/compare_npy.py" "$dir/gen" "$dir/ref" "$tol" >"$dir/cmp.log" 2>&1; then
        pass "xcheck:$name"
    else
        fail "xcheck:$name" "$dir/cmp.log"
    fi
}

# The examples run as parallel jobs (AXC_TEST_JOBS, default the number of
# cores), each into its own report, printed in order at the end.
jobs=${AXC_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
names=()
for ex in "$root"/examples/*.ax; do
    name=$(basename "$ex" .ax)
    if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qxF "$name"; then continue; fi
    [ "$(jobs -rp | wc -l)" -lt "$jobs" ] || wait -n
    names+=("$name")
    mkdir -p "$tmp/$name"
    { check_compile "$name" "$ex"; check_interp_agrees "$name" "$ex"; } >"$tmp/$name.report" &
done
wait
for name in "${names[@]}"; do cat "$tmp/$name.report"; done
