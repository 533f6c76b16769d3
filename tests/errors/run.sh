#!/usr/bin/env bash
# The `errors` suite: every entry of the error catalogue docs/errors.md is
# triggered by its example (one PASS/FAIL line per entry), then the share of
# the compiler's diagnostic formats the examples trigger.
# Environment: AXC, AXC_ROOT, PYTHON.
set -u
root=${AXC_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
export AXC=${AXC:-$root/build/bin/axc}
PYTHON=${PYTHON:-/usr/bin/python3}
"$PYTHON" "$root/tests/errors/check.py" "$root/docs/errors.md" "$root"
