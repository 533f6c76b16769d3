#!/usr/bin/env bash
# Runs every test suite and ends with the one summary line CI reads:
#   N passed, N failed
# Usage: tests/run.sh BUILD_DIR [SUITE...]   (suites: layers unit cli ir torch compile firmware install errors)
set -u
B=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
B=$(cd "$root" && cd "$B" && pwd)
export AXC="$B/bin/axc" AXC_BUILD="$B" AXC_ROOT="$root"
export PYTHON=${PYTHON:-/usr/bin/python3}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(layers unit cli ir torch compile firmware install errors)

log=$(mktemp)
# axc run's build cache (compiler/runcache.c) goes to a fresh directory, not
# the user's ~/.cache/axc: every run of the suites starts cold and leaves nothing.
cache=$(mktemp -d)
export AXC_CACHE_DIR=$cache
trap 'rm -f "$log"; rm -rf "$cache"' EXIT

run_unit() {
    local t
    for t in "$B"/tests/test_*; do
        [ -x "$t" ] || continue
        # cmocka's TAP output: "ok N - name" / "not ok N - name"
        # (cmocka's per-group "# ok - GROUP" summaries are not results: dropped)
        CMOCKA_MESSAGE_OUTPUT=TAP "$t" 2>&1 | sed -n \
            -e '/^# *ok - /d' \
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
        *) echo "FAIL: unknown suite $s" ;;
    esac 2>&1 | tee -a "$log" | grep -v '^PASS: ' || true
done

# Every line a suite prints is a result (PASS/FAIL/SKIP) or an indented
# detail of a FAIL or SKIP; anything else is stray output a reader cannot place.
stray=$(awk '/^(PASS|FAIL|SKIP): /{last=$1; next}
             /^  / && (last == "FAIL:" || last == "SKIP:") {next}
             /^$/ {next} {print}' "$log" | head -n 5)
if [ -n "$stray" ]; then
    echo "FAIL: run.sh: suites print only PASS/FAIL/SKIP lines and indented details"
    printf '%s\n' "$stray" | sed 's/^/  /'
    echo "FAIL: run.sh" >>"$log"
else
    echo "PASS: run.sh: no stray output" >>"$log"
fi

passed=$(grep -c '^PASS: ' "$log")
failed=$(grep -c '^FAIL: ' "$log")
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
    echo "FAIL: no test ran"; failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
