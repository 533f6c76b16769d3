#!/bin/sh
# Line coverage of the compiler's folders by the test suite:
# builds axc and the unit tests with --coverage into build-cov/, runs the
# suites (all of them, or those named as arguments), then totals gcov's
# per-file line counts.  Prints one line per folder and "total: N.N%".
# Usage: scripts/coverage.sh [SUITE...]
set -eu
cd "$(dirname "$0")/.."
B=build-cov
rm -rf "$B/obj"
make --no-print-directory -j2 B=$B SAN=--coverage all test-unit >/dev/null
# Code built from the instrumented libaxrt.a (axc run's shared objects, the
# suites' programs) must link libgcov too.
CC="${CC:-cc} --coverage" bash tests/run.sh $B "$@" | tail -1
for dir in base ir grammar frontend io passes codegen compiler; do
    (cd "$B/obj/$dir" && gcov -n -o . ./*.gcda 2>/dev/null) |
        awk -v d="$dir" '
            /^File / { f = $2; gsub(/\047/, "", f) }
            /^Lines executed:/ && f !~ /^\// && f !~ /(^|\/)gen\// {
                split($2, p, "%"); sub(/.*:/, "", p[1]); n = $4
                hit += p[1] * n / 100; all += n }
            END { if (all) printf "%s: %.1f%% of %d lines\n", d, 100 * hit / all, all
                  print "#", hit, all > "/dev/stderr" }'
done 2>"$B/coverage.counts"
awk '{ hit += $2; all += $3 } END { if (all) printf "total: %.1f%%\n", 100 * hit / all }' "$B/coverage.counts"
