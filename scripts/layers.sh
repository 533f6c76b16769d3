#!/bin/sh
# make layers: fails when an #include "..." points upward between the
# compiler's folders.  Layers, bottom first (each may include the ones to its
# left that the table below names, and itself):
#
#   base      arena, diagnostics, files: includes nothing of ours
#   runtime   the freestanding libaxrt: includes nothing of ours (a leaf)
#   runtime/gpu  libaxrt_gpu, the runtime's optional GPU part: may use runtime/axrt.h
#   ir        the IR and its op table; may use runtime/axrt.h (dtypes, layouts)
#   grammar   .ax text -> syntax tree (flex/bison)
#   io        tensor files (safetensors, .npy) and parameter binding
#   frontend  syntax tree -> IR (lowering); ONNX -> IR (onnx_*.c, with the
#             generated onnx.pb-c.h)
#   passes    IR -> IR (shape, dtype, fusion, schedule, memory plan, the
#             training graphs)
#   codegen   IR -> target code (the back ends and their target table)
#   compiler  the axc driver: the only folder that may include everything
#
# Then, inside each folder, no circle of files (scripts/layers_cycles.py,
# from the objects' symbols under $AXC_BUILD/obj, default build/obj: make
# all first), except the few its ALLOWED table names.
#
# Usage: scripts/layers.sh [ROOT]      (ROOT defaults to the repository)
#        scripts/layers.sh --self-test (plants an upward include and a circle
#                                       of files, expects failures)
set -eu

allowed() {  # folder -> folders it may include from
    case $1 in
        base) echo "base" ;;
        runtime) echo "runtime" ;;
        runtime/gpu) echo "runtime/gpu runtime" ;;
        ir) echo "ir base runtime" ;;
        grammar) echo "grammar base" ;;
        io) echo "io base ir runtime" ;;
        frontend) echo "frontend base ir grammar io" ;;
        passes) echo "passes base ir runtime" ;;
        codegen) echo "codegen base ir passes runtime" ;;
        compiler) echo "compiler base ir grammar io frontend passes codegen runtime runtime/gpu" ;;
    esac
}
FOLDERS="base runtime runtime/gpu ir grammar io frontend passes codegen compiler"

check() {
    root=$1 bad=0
    for dir in $FOLDERS; do
        [ -d "$root/$dir" ] || continue
        ok=$(allowed "$dir")
        for f in "$root/$dir"/*.c "$root/$dir"/*.h "$root/$dir"/*.inc "$root/$dir"/*.y "$root/$dir"/*.l; do
            [ -f "$f" ] || continue
            sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
            while read -r hdr; do
                case $hdr in axc.tab.h|axc.lex.h) owner=grammar ;; onnx.pb-c.h) owner=frontend ;; *) owner="" ;; esac
                if [ -z "$owner" ]; then
                    for d in $FOLDERS; do
                        if [ -f "$root/$d/$hdr" ]; then owner=$d; break; fi
                    done
                fi
                if [ -z "$owner" ]; then
                    echo "layers: ${f#"$root"/}: includes \"$hdr\", which no layer owns"
                    echo bad
                    continue
                fi
                case " $ok " in
                    *" $owner "*) ;;
                    *) echo "layers: ${f#"$root"/}: $dir/ may not include $owner/$hdr (upward)"
                       echo bad ;;
                esac
            done
        done
    done | { out=$(cat); printf '%s\n' "$out" | grep -v '^bad$' | grep . || true
             ! printf '%s\n' "$out" | grep -q '^bad$'; }
}

here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--self-test" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for d in $FOLDERS; do [ -d "$here/$d" ] && [ ! -d "$tmp/$d" ] && cp -r "$here/$d" "$tmp/$d"; done
    printf '#include "driver.h"\n' >> "$tmp/ir/ir.c"
    if check "$tmp" >/dev/null; then
        echo "FAIL: layers: an upward include (ir -> compiler) was not caught"; exit 1
    fi
    echo "PASS: layers: an upward include (ir -> compiler) is caught"
    exec "${PYTHON:-python3}" "$here/scripts/layers_cycles.py" --self-test
fi
includes=0
check "${1:-$here}" || includes=1
"${PYTHON:-python3}" "$here/scripts/layers_cycles.py" "${AXC_BUILD:-${1:-$here}/build}/obj" || exit 1
exit $includes
