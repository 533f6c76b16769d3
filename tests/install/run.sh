#!/usr/bin/env bash
# Install suite: `make install PREFIX=DIR` lays out docs/firmware.md, the
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
# The host runtime that axc.mk compiles from the installed sources (about 33 s
# of cc -O2): compiled once, by the docs/firmware.md snippet's build (its own
# flags, checked there), into this directory, which the host project of
# check_rebuilds then uses too (AXRT_OBJDIR).
axrt_objdir=$work/axrt-obj

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
        share/axc/runtime/axrt.h share/axc/python/axc_torch.py share/axc/examples/mlp.ax \
        share/axc/examples/firmware/Makefile share/axc/examples/firmware/main.c \
        share/axc/examples/firmware/startup.c share/axc/examples/firmware/mps2_an386.ld \
        share/axc/examples/firmware/map_sizes.awk; do
        [ -f "$prefix/$f" ] || missing+=("$f")
    done
    for f in "$root"/runtime/*.c "$root"/runtime/*.h "$root"/runtime/*.inc; do
        [ -f "$prefix/share/axc/runtime/$(basename "$f")" ] || missing+=("share/axc/runtime/$(basename "$f")")
    done
    if [ ${#missing[@]} -eq 0 ]; then pass "layout (docs/firmware.md)"
    else fail "layout (docs/firmware.md)" "missing: ${missing[*]}"; fi
}

# The installed header promises only what is installed: every header it
# names exists, and "other headers" are not promised when axrt.h is the only one.
check_header_promises() {
    local h=$prefix/include/axrt.h missing=() name
    for name in $(grep -o '[A-Za-z_0-9]*\.h\b' "$h" | sort -u); do
        case $name in stddef.h|stdint.h|string.h|math.h|axrt.h) continue ;; esac
        [ -f "$prefix/include/$name" ] || missing+=("$name")
    done
    if grep -qi 'other headers' "$h" && [ "$(ls "$prefix"/include/*.h | wc -l)" -lt 2 ]; then
        missing+=("'other headers' (only axrt.h is installed)")
    fi
    if [ ${#missing[@]} -eq 0 ]; then pass "axrt.h names only headers that are installed"
    else fail "axrt.h names only headers that are installed" "missing: ${missing[*]}"; fi
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
AXRT_OBJDIR = $axrt_objdir
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

# ---- README and docs/, followed literally ---------------------------------------

# The documents whose marked blocks this suite runs: the README's quick start
# and the manual in docs/ (a block keeps its name when it moves between them).
doc_files() { printf '%s\n' "$root/README.md" "$root"/docs/*.md; }

# readme_block NAME: the fenced block after the line "<!-- test: NAME ..." in
# README.md or a docs/*.md file.
readme_block() {
    local f
    doc_files | while IFS= read -r f; do
        awk -v tag="<!-- test: $1 " '
            index($0, tag) == 1 { found = 1; next }
            found == 1 && /^```[a-z]*$/ { found = 2; next }
            found == 2 && /^```$/ { exit }
            found == 2 { print }' "$f"
    done
}

# The blocks this suite knows how to run (check_first_screen, check_readme_snippet).
RUN_BLOCKS="first-screen-clone first-screen-project torch-round-trip axc-mk-snippet"

# Every block the documents mark "<!-- test: NAME" is one this suite runs, and
# is marked once: a marked block that nothing runs would claim a test it lacks.
check_marked_blocks() {
    local names unknown=() name
    names=$(doc_files | xargs grep -ho '^<!-- test: [A-Za-z0-9_-]*' | sed 's/^<!-- test: //')
    for name in $names; do
        case " $RUN_BLOCKS " in *" $name "*) ;; *) unknown+=("'$name' is marked but not run") ;; esac
    done
    for name in $(printf '%s\n' $names | sort | uniq -d); do unknown+=("'$name' is marked twice"); done
    for name in $RUN_BLOCKS; do
        printf '%s\n' $names | grep -qxF "$name" || unknown+=("'$name' is run but no document marks it")
    done
    if [ ${#unknown[@]} -eq 0 ]; then
        pass "every block marked tested in README.md and docs/*.md is run ($(printf '%s\n' $names | wc -l) blocks)"
    else fail "every block marked tested in README.md and docs/*.md is run" "${unknown[@]}"; fi
}

# The first screen in a clean HOME: the clone's block in the repository (make
# gets the suite's build directory, the one substitution), then the project
# block and the PyTorch round trip in an empty directory, with python3 the
# suite's Python and cc the suite's compiler.
check_first_screen() {
    local home=$work/home clean=$work/clean tools=$work/tools name=first-screen
    mkdir -p "$home" "$clean" "$tools"
    ln -sf "$PYTHON" "$tools/python3"
    if [ -n "${CC:-}" ]; then printf '#!/bin/sh\nexec %s "$@"\n' "$CC" >"$tools/cc" && chmod +x "$tools/cc"; fi
    local b
    for b in first-screen-clone first-screen-project torch-round-trip; do
        [ -n "$(readme_block $b)" ] || { fail "README $name" "neither README.md nor docs/*.md has a block '<!-- test: $b'"; return; }
    done
    { echo 'set -ex'
      printf 'make() { command make --no-print-directory B=%q "$@"; }\n' "$build"
      printf 'cd %q\n' "$root"
      readme_block first-screen-clone
      printf 'cd %q\n' "$clean"
      readme_block first-screen-project
      echo 'echo "axc is $(command -v axc)"'
      readme_block torch-round-trip
    } >"$work/first-screen.sh"
    if ! (cd "$clean" && env -u AXC -u PKG_CONFIG_PATH -u PYTHONPATH HOME="$home" PATH="$tools:$PATH" \
            bash "$work/first-screen.sh") >"$work/first.log" 2>&1; then
        fail "README $name followed literally (make demo, make install, PATH, compile and link, torch round trip)"
        tail_of "$work/first.log"; return
    fi
    if grep -q "^axc is $home/.local/bin/axc$" "$work/first.log" &&
        grep -q "axc and PyTorch agree" "$work/first.log" &&
        [ -f "$home/.local/share/axc/python/axc_torch.py" ] &&
        "$clean/app" | grep -Eq '^(0\.[0-9]{4} ){10}$'; then
        pass "README $name followed literally (make demo, make install, PATH, compile and link, torch round trip)"
    else
        fail "README $name followed literally (make demo, make install, PATH, compile and link, torch round trip)"
        tail_of "$work/first.log"
    fi
}

# The axc.mk snippet of docs/firmware.md, as printed, with DIR = the install: a plain
# `make` builds app (axc.mk does not take the default goal), and keeps doing so
# after the model changes; the runtime objects are optimised although the
# snippet sets no CFLAGS.  Its runtime objects go to the directory the host
# project of check_rebuilds shares (make's command line sets AXRT_OBJDIR).
check_readme_snippet() {
    local dir=$work/snippet
    mkdir -p "$dir"
    readme_block axc-mk-snippet | sed "s|DIR/|$prefix/|" >"$dir/Makefile"
    cp "$root/examples/mlp.ax" "$dir/mlp.ax"
    cp "$root/examples/demo_main.c" "$dir/main.c"
    grep -q '^include ' "$dir/Makefile" || { fail "docs/firmware.md axc.mk snippet" "no snippet extracted"; return; }
    (cd "$dir" && env -u AXC make --no-print-directory AXC_FLAGS=--seed=1 AXRT_OBJDIR="$axrt_objdir") >"$work/snip.log" 2>&1
    if [ -x "$dir/app" ] && "$dir/app" >/dev/null; then pass "docs/firmware.md axc.mk snippet: plain make builds app"
    else fail "docs/firmware.md axc.mk snippet: plain make builds app"; tail_of "$work/snip.log"; return; fi
    local rt
    rt=$(grep -- " -c .* -o $axrt_objdir/.*\.o" "$work/snip.log")
    if [ -n "$rt" ] && ! printf '%s\n' "$rt" | grep -v -q -- '-O2'; then
        pass "docs/firmware.md axc.mk snippet: runtime objects built with -O2 (the snippet sets no CFLAGS)"
    else
        fail "docs/firmware.md axc.mk snippet: runtime objects built with -O2 (the snippet sets no CFLAGS)"
        tail_of "$work/snip.log"
    fi
    touch "$dir/mlp.ax"
    (cd "$dir" && env -u AXC make --no-print-directory AXC_FLAGS=--seed=1 AXRT_OBJDIR="$axrt_objdir") >"$work/snip2.log" 2>&1
    if [ "$dir/app" -nt "$dir/mlp.ax" ] &&
        [ -z "$(cd "$dir" && env -u AXC make --no-print-directory -n AXC_FLAGS=--seed=1 AXRT_OBJDIR="$axrt_objdir" 2>&1 |
                grep -v 'up to date\|Nothing to be done')" ]; then
        pass "docs/firmware.md axc.mk snippet: plain make after touching mlp.ax relinks app"
    else fail "docs/firmware.md axc.mk snippet: plain make after touching mlp.ax relinks app"; tail_of "$work/snip2.log"; fi
}

# axc_torch.save_safetensors writes every dtype axc reads, byte-exact (read
# back by hand and by axc: a state_dict with an F64, an F16 and a BF16 tensor
# loads and the model's outputs match PyTorch's).
check_torch_helper() {
    PYTHONPATH="$prefix/share/axc/python" "$PYTHON" - "$prefix/bin/axc" "$work/th" >"$work/th.log" 2>&1 <<'PY'
import os, sys, torch, numpy as np, axc_torch
axc, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
os.chdir(work)
sd = {"a": torch.randn(3, 4, dtype=torch.bfloat16), "b": torch.arange(6).reshape(2, 3),
      "c": np.linspace(-1, 1, 5, dtype=np.float16), "d": torch.randn(2, dtype=torch.float64)}
axc_torch.save_safetensors(sd, "all.safetensors")
back = axc_torch.load_safetensors("all.safetensors")
assert back["a"].dtype == np.float32 and np.array_equal(back["a"], sd["a"].float().numpy())
assert back["b"].dtype == np.int64 and np.array_equal(back["b"], sd["b"].numpy())
assert np.array_equal(back["c"], sd["c"]) and np.array_equal(back["d"], sd["d"].numpy())
raw = open("all.safetensors", "rb").read()
assert (8 + int.from_bytes(raw[:8], "little")) % 8 == 0, "header not padded to 8 bytes"
open("m.ax", "w").write("@axiom m(x::Float32[2, 4]) begin\n    fc = Dense(4 => 3)\nend\n")
torch.manual_seed(1)
net = torch.nn.Module()
net.fc = torch.nn.Linear(4, 3).to(torch.float64)
net.forward = lambda x: net.fc(x.double())
r = axc_torch.check(net, "m.ax", {"x": torch.randn(2, 4)}, axc=axc)
print(r)
assert r.ok and r.max_abs < 1e-6
net.fc.bias.data[0] += 1.0   # weights=None: the changed state_dict is what axc gets
r = axc_torch.check(net, "m.ax", {"x": torch.randn(2, 4)}, axc=axc)
assert r.ok, str(r)
# a twin whose weights are not the file's must be reported, not hidden
axc_torch.save_safetensors({"fc.weight": torch.zeros(3, 4), "fc.bias": torch.zeros(3)}, "zero.safetensors")
r3 = axc_torch.check(net, "m.ax", {"x": torch.randn(2, 4)}, axc=axc, weights="zero.safetensors")
print(r3)
assert not r3.ok and "DISAGREE" in str(r3)
assert "first layer that differs: fc " in str(r3), "no layer-by-layer verdict"
print("helper ok")
PY
    if grep -q "helper ok" "$work/th.log"; then pass "axc_torch: safetensors round trip and check() against axc run"
    else fail "axc_torch: safetensors round trip and check() against axc run"; tail_of "$work/th.log"; fi
}

# axc.mk never ships random parameters unasked: a model with parameters and
# no weights file fails naming AXC_SEED; a parameter-free one builds; with
# AXC_SEED=1 the first builds too, from the seed; and a model found through
# the project's vpath takes the .safetensors beside it (the same C as
# --weights gives).  AXC_SHAPE_<stem> fixes an ONNX input's symbolic batch.
check_weights_required() {
    local d=$work/noweights m=$work/models
    mkdir -p "$d" "$m"
    cp "$root/examples/mlp.ax" "$m/mlp.ax"
    cp "$root/examples/r6_softmax.ax" "$d/soft.ax"
    printf 'include %s/share/axc/axc.mk\nvpath %%.ax %s\nvpath %%.safetensors %s\n' "$prefix" "$m" "$m" >"$d/Makefile"
    if env -u AXC make -C "$d" --no-print-directory mlp.c >"$work/nw.log" 2>&1 ||
        ! grep -q "has parameters and no --weights.*AXC_SEED=N" "$work/nw.log"; then
        fail "axc.mk: a model without weights fails naming AXC_SEED"; tail_of "$work/nw.log"; return
    fi
    pass "axc.mk: a model without weights fails naming AXC_SEED"
    if env -u AXC make -C "$d" --no-print-directory soft.c >"$work/nw.log" 2>&1 && [ -f "$d/soft.c" ]; then
        pass "axc.mk: a parameter-free model needs no weights"
    else fail "axc.mk: a parameter-free model needs no weights"; tail_of "$work/nw.log"; fi
    mkdir -p "$work/ref_seed" "$work/ref_weights"   # references named mlp.c: the C names its header
    "$prefix/bin/axc" "$m/mlp.ax" --seed=1 -o "$work/ref_seed/mlp.c" 2>/dev/null
    if env -u AXC make -C "$d" --no-print-directory AXC_SEED=1 mlp.c >"$work/nw.log" 2>&1 &&
        cmp -s "$d/mlp.c" "$work/ref_seed/mlp.c"; then pass "axc.mk: AXC_SEED=1 builds it from seed 1"
    else fail "axc.mk: AXC_SEED=1 builds it from seed 1"; tail_of "$work/nw.log"; fi
    rm -f "$d/mlp.c" "$d/mlp.h"
    "$prefix/bin/axc" "$m/mlp.ax" --seed=7 -o "$work/w.c" --save-weights="$m/mlp.safetensors" 2>/dev/null
    "$prefix/bin/axc" "$m/mlp.ax" --weights="$m/mlp.safetensors" -o "$work/ref_weights/mlp.c"
    if env -u AXC make -C "$d" --no-print-directory mlp.c >"$work/nw.log" 2>&1 &&
        cmp -s "$d/mlp.c" "$work/ref_weights/mlp.c"; then pass "axc.mk: the .safetensors beside a vpath model is used"
    else fail "axc.mk: the .safetensors beside a vpath model is used"; tail_of "$work/nw.log"; fi
    if ! "${PYTHON:-python3}" -c "import onnx" 2>/dev/null; then echo "SKIP: install axc.mk AXC_SHAPE_<stem> (no python3-onnx)"; return; fi
    "${PYTHON:-python3}" - "$d/dyn.onnx" <<'PY'
import sys
from onnx import TensorProto as T, helper as h
g = h.make_graph([h.make_node('Relu', ['x'], ['y'], name='r')], 'g',
                 [h.make_tensor_value_info('x', T.FLOAT, ['batch', 4])], [h.make_tensor_value_info('y', T.FLOAT, ['batch', 4])])
open(sys.argv[1], 'wb').write(h.make_model(g, opset_imports=[h.make_opsetid('', 13)]).SerializeToString())
PY
    if env -u AXC make -C "$d" --no-print-directory AXC_SHAPE_dyn=x=3x4 dyn.c >"$work/nw.log" 2>&1 &&
        grep -q '3, 4' "$d/dyn.h"; then pass "axc.mk: AXC_SHAPE_dyn=x=3x4 fixes an ONNX input's batch"
    else fail "axc.mk: AXC_SHAPE_dyn=x=3x4 fixes an ONNX input's batch"; tail_of "$work/nw.log"; cat "$d/dyn.h" 2>/dev/null | head -30 | sed 's/^/  /'; fi
}

main() {
    if ! make -C "$root" --no-print-directory B="$build" install PREFIX="$prefix" \
        >"$work/install.log" 2>&1; then
        fail "make install"; tail_of "$work/install.log"; return
    fi
    pass "make install"
    check_layout
    check_header_promises
    expect "pkg-config --cflags --libs axrt links" pkg_config_link
    expect "installed axc run finds its runtime" \
        "$prefix/bin/axc" run "$root/examples/mlp.ax" --output "$work/y.npy"
    check_readme_snippet   # first: it compiles the runtime objects check_rebuilds' project shares
    make_project
    check_rebuilds
    check_weights_required
    check_torch_helper
    check_first_screen
    check_marked_blocks
}

main
