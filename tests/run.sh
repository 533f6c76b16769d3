#!/usr/bin/env bash
# Runs every test suite and ends with the one summary line CI reads:
#   N passed, N failed
# Usage: tests/run.sh BUILD_DIR [SUITE...]   (suites: layers unit cli ir torch compile firmware install errors onnx)
set -u
B=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
B=$(cd "$root" && cd "$B" && pwd)
export AXC="$B/bin/axc" AXC_BUILD="$B" AXC_ROOT="$root"
export PYTHON=${PYTHON:-/usr/bin/python3}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(layers unit cli ir torch compile firmware install errors onnx)

log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_unit() {
    local t
    for t in "$B"/tests/test_*; do
        [ -x "$t" ] || continue
        # cmocka's TAP output: "ok N - name" / "not ok N - name"
        CMOCKA_MESSAGE_OUTPUT=TAP "$t" 2>&1 | sed -n \
            -e "s/^ok [0-9]* - \(.*\)/PASS: unit $(basename "$t"):\1/p" \
            -e "s/^not ok [0-9]* - \(.*\)/FAIL: unit $(basename "$t"):\1/p" \
            -e 's/^#\(.*\)/  \1/p'
        if [ "${PIPESTATUS[0]}" -gt 127 ]; then echo "FAIL: unit $(basename "$t") crashed"; fi
    done
}

for s in "${suites[@]}"; do
    case $s in
        layers) if sh "$root/scripts/layers.sh"; then echo "PASS: layers: no include points upward"
                else echo "FAIL: layers: an include points upward"; fi
                sh "$root/scripts/layers.sh" --self-test ;;
        unit) run_unit ;;
        cli|ir|compile|firmware|install|errors) bash "$here/$s/run.sh" ;;
        torch) "$PYTHON" "$here/torch/run.py" ;;
        onnx) "$PYTHON" "$here/onnx/run.py" ;;
        *) echo "FAIL: unknown suite $s" ;;
    esac 2>&1 | tee -a "$log" | grep -v '^PASS: ' || true
done

passed=$(grep -c '^PASS: ' "$log")
failed=$(grep -c '^FAIL: ' "$log")
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
    echo "FAIL: no test ran"; failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
