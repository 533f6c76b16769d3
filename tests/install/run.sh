#!/usr/bin/env bash
# Install suite: `make install PREFIX=DIR` lays out interface.md §5, the
# installed axc finds its runtime, pkg-config works, and a host project built
# with the installed axc.mk is correct under -j, rebuilds nothing when nothing
# changed, and regenerates exactly the model whose .ax or weights changed.
# Environment (set by tests/run.sh): AXC_ROOT, AXC_BUILD, PYTHON.
set -u
root=${AXC_ROOT:?}
build=${AXC_BUILD:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
proj=$work/proj

pass() { echo "PASS: install $1"; }
fail() { echo "FAIL: install $1"; shift; if [ $# -gt 0 ]; then printf '  %s\n' "$@"; fi; }
tail_of() { tail -n 15 "$1" | sed 's/^/  /'; }
# expect NAME COMMAND...: PASS if the command succeeds, else FAIL with its output.
expect() {
    local name=$1; shift
    if "$@" >"$work/out.log" 2>&1; then pass "$name"; else fail "$name"; tail_of "$work/out.log"; fi
}

check_layout() {
    local f missing=()
    for f in bin/axc include/axrt.h lib/libaxrt.a lib/pkgconfig/axrt.pc share/axc/axc.mk \
        share/axc/runtime/axrt.h; do
        [ -f "$prefix/$f" ] || missing+=("$f")
    done
    for f in "$root"/runtime/*.c "$root"/runtime/*.h "$root"/runtime/*.inc; do
        [ -f "$prefix/share/axc/runtime/$(basename "$f")" ] || missing+=("share/axc/runtime/$(basename "$f")")
    done
    if [ ${#missing[@]} -eq 0 ]; then pass "layout (interface.md 5)"
    else fail "layout (interface.md 5)" "missing: ${missing[*]}"; fi
}

# A program that links the installed libaxrt through pkg-config's flags.
pkg_config_link() {
    printf '#include "axrt.h"\nint main(void) { return axrt_dtype_size(AXRT_F32) == 4 ? 0 : 1; }\n' \
        >"$work/pc.c"
    ${CC:-cc} -o "$work/pc" "$work/pc.c" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs axrt) &&
        "$work/pc"
}

# A host project: two models (one with <stem>.safetensors beside it), main.c
# printing both, the runtime from the installed sources, all through axc.mk.
make_project() {
    mkdir -p "$proj"
    cp "$root/examples/mlp.ax" "$proj/mlp.ax"
    cp "$root/examples/r6_softmax.ax" "$proj/soft.ax"
    sed -i "s/@axiom softmax_wide/@axiom soft/" "$proj/soft.ax"
    "$prefix/bin/axc" "$proj/mlp.ax" -o "$work/seed3.c" --seed=3 --save-weights="$proj/mlp.safetensors"
    cat >"$proj/main.c" <<'EOF'
#include <stdio.h>
#include "mlp.h"
#include "soft.h"
static float in[1 << 19], out[1 << 19]; /* soft: 32 x 10000 */
int main(void)
{
    const axrt_model *models[2] = {&mlp_model, &soft_model};
    for (int m = 0; m < 2; m++) {
        const void *ins[1] = {in};
        void *outs[1] = {out};
        if (models[m]->run(ins, outs, NULL) != 0) return 1;
        printf("%s %.9g\n", models[m]->name, (double)out[0]);
    }
    return 0;
}
EOF
    cat >"$proj/Makefile" <<EOF
include $prefix/share/axc/axc.mk
CFLAGS = -std=c99 -O2 -Wall -Wextra
CPPFLAGS += \$(AXRT_CFLAGS)
app: main.o mlp.o soft.o \$(AXRT_OBJS)
	\$(CC) -o \$@ \$^ -lm
main.o: mlp.h soft.h
EOF
}

# Commands make would run now (make -n), one per line.
planned() { env -u AXC make -C "$proj" --no-print-directory -n app 2>&1; }

check_rebuilds() {
    local plan
    if ! env -u AXC make -C "$proj" --no-print-directory -j8 app >"$work/j.log" 2>&1; then
        fail "host project builds with make -j8"; tail_of "$work/j.log"; return 1
    fi
    if [ "$(grep -c '/bin/axc .*mlp.ax' "$work/j.log")" -eq 1 ] &&
        grep -q -- '--weights=mlp.safetensors' "$work/j.log" &&
        "$proj/app" >"$work/app.out"; then
        pass "host project builds with make -j8 (one axc run per model, weights used)"
    else
        fail "host project builds with make -j8 (one axc run per model, weights used)"
        tail_of "$work/j.log"
    fi
    if grep -q 'mlp.ax' "$proj"/.axc-deps/mlp.d && grep -q 'mlp.safetensors' "$proj"/.axc-deps/mlp.d; then
        pass "dependency file lists the .ax and its weights"
    else fail "dependency file lists the .ax and its weights"; cat "$proj"/.axc-deps/*.d | sed 's/^/  /'; fi
    plan=$(planned)
    if [ -z "$(printf '%s\n' "$plan" | grep -v 'Nothing to be done\|is up to date')" ]; then
        pass "second make does nothing"
    else fail "second make does nothing" "$plan"; fi
    touch "$proj/mlp.ax"
    expect_plan "touching mlp.ax rebuilds mlp only" "mlp.ax" "soft.ax"
    env -u AXC make -C "$proj" --no-print-directory app >/dev/null 2>&1
    touch "$proj/mlp.safetensors"
    expect_plan "touching the weights rebuilds mlp only" "mlp.ax" "soft.ax"
    env -u AXC make -C "$proj" --no-print-directory app >/dev/null 2>&1
    touch "$proj/soft.ax"
    expect_plan "touching soft.ax rebuilds soft only" "soft.ax" "mlp.ax"
}

# expect_plan NAME REGENERATED UNTOUCHED: make -n runs axc for REGENERATED,
# recompiles main.o and relinks, but neither regenerates UNTOUCHED nor
# recompiles the runtime.
expect_plan() {
    local plan
    plan=$(planned)
    if printf '%s\n' "$plan" | grep -q "/bin/axc .*$2" &&
        ! printf '%s\n' "$plan" | grep -q "/bin/axc .*$3" &&
        ! printf '%s\n' "$plan" | grep -q 'axrt\.c' &&
        printf '%s\n' "$plan" | grep -q -- '-o app'; then
        pass "$1"
    else fail "$1" "make -n printed:" "$plan"; fi
}

main() {
    if ! make -C "$root" --no-print-directory B="$build" install PREFIX="$prefix" \
        >"$work/install.log" 2>&1; then
        fail "make install"; tail_of "$work/install.log"; return
    fi
    pass "make install"
    check_layout
    expect "pkg-config --cflags --libs axrt links" pkg_config_link
    expect "installed axc run finds its runtime" \
        "$prefix/bin/axc" run "$root/examples/mlp.ax" --output "$work/y.npy"
    make_project
    check_rebuilds
}

main
