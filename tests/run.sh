#!/usr/bin/env bash
# Runs the test suites, in parallel, and ends with the one summary line CI reads:
#   N passed, N failed, N skipped
# Usage: tests/run.sh BUILD_DIR [SUITE...]
#   suites: layers unit cli ir torch ops half compile firmware install errors profile bench llvm onnx tflite train mpi cuda quant
# Suites (and each unit binary, each script of torch and train, each quarter
# of cuda's models and its loader checks) run as background jobs, AXC_TEST_JOBS at once
# (default: the number of cores), each into its own log; the logs are printed
# in suite order as soon as every earlier one is done.  firmware and install
# both run `make install` on BUILD_DIR, so they run one after the other in one
# job.  The console shows FAIL lines with their details and one line per skip
# reason; PASS and SKIP lines are counted.  Before the summary, the wall
# and CPU time of each suite (its jobs added up) and of the whole run.
set -u
B=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
B=$(cd "$root" && cd "$B" && pwd)
export AXC="$B/bin/axc" AXC_BUILD="$B" AXC_ROOT="$root"
export PYTHON=${PYTHON:-/usr/bin/python3}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(layers unit cli ir torch ops half compile firmware install errors profile bench llvm onnx tflite train mpi cuda quant)
max_jobs=${AXC_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}

run_start=$SECONDS
logs=$(mktemp -d)
log=$logs/all.log
# axc run's build cache (compiler/runcache.c) goes to a fresh directory, not
# the user's ~/.cache/axc: every run of the suites starts cold and leaves nothing.
export AXC_CACHE_DIR=$logs/axc-cache
trap 'rm -rf "$logs"' EXIT
: >"$log"

# One unit binary: cmocka's TAP output ("ok N - name" / "not ok N - name";
# its per-group "# ok - GROUP" summaries are not results: dropped).  A
# binary that exits non-zero without a failed test to show for it (a
# sanitizer's halt or leak report, an exit mid-run: the tests after it never
# ran) fails too.
run_unit_binary() {
    local t=$1 out status
    if [ ! -x "$t" ]; then  # a test source whose binary did not build (make test-unit stopped)
        echo "FAIL: unit $(basename "$t"): no binary; build it with make test-unit"
        return
    fi
    out=$(CMOCKA_MESSAGE_OUTPUT=TAP "$t" 2>&1)
    status=$?
    printf '%s\n' "$out" | sed -n \
        -e '/^# *ok - /d' \
        -e "s/^ok [0-9]* - \(.*\)/PASS: unit $(basename "$t"):\1/p" \
        -e "s/^not ok [0-9]* - \(.*\)/FAIL: unit $(basename "$t"):\1/p" \
        -e 's/^#\(.*\)/  \1/p'
    if [ "$status" -gt 127 ]; then
        echo "FAIL: unit $(basename "$t") crashed"
    elif [ "$status" -ne 0 ] && ! printf '%s\n' "$out" | grep -q '^not ok '; then
        echo "FAIL: unit $(basename "$t") exited with status $status and no failed test; its last lines:"
        printf '%s\n' "$out" | tail -n 5 | sed 's/^/    /'
    fi
}

# run_job WORD: one job of the list below.
run_job() {
    case $1 in
        layers) if sh "$root/scripts/layers.sh"; then echo "PASS: layers: no include points upward, no circle of files inside a folder"
                else echo "FAIL: layers: an include points upward or files inside a folder form a circle (above)"; fi
                sh "$root/scripts/layers.sh" --self-test
                if size=$("$PYTHON" "$root/scripts/check_size.py" 2>&1); then echo "PASS: check-size: no file or function past its limit"
                else echo "FAIL: check-size: a file or function past its limit"; printf '%s\n' "$size" | sed 's/^/  /'; fi
                "$PYTHON" "$root/scripts/check_size.py" --self-test ;;
        unit:*) run_unit_binary "$B/tests/${1#unit:}" ;;
        firmware+install) bash "$here/firmware/run.sh"; bash "$here/install/run.sh" ;;
        install+firmware) bash "$here/install/run.sh"; bash "$here/firmware/run.sh" ;;
        cli|ir|compile|firmware|install|errors|profile|bench|llvm|quant) bash "$here/$1/run.sh" ;;
        cuda:loader) bash "$here/cuda/loader.sh"; bash "$here/cuda/kernel_cache.sh" ;;
        cuda:*) AXC_CUDA_PART=${1#cuda:} bash "$here/cuda/run.sh" ;;
        train:interp)   # the PyTorch oracles again on the interpreter (axc train runs the compiled step by default)
            AXC_TRAIN_EXTRA=--interp "$PYTHON" "$here/train/run.py" oracle models shuffle
            AXC_TRAIN_EXTRA=--interp "$PYTHON" "$here/train/schedule.py" ;;
        torch:*|train:*) "$PYTHON" "$here/${1%%:*}/${1#*:}.py" ;;
        ops) "$PYTHON" "$here/ops/run.py" ;;
        half) "$PYTHON" "$here/half/run.py" ;;
        onnx) "$PYTHON" "$here/onnx/run.py" ;;
        tflite) "$PYTHON" "$here/tflite/run.py" ;;
        mpi) "$PYTHON" "$here/mpi/run.py" ;;
        *) echo "FAIL: unknown suite $1" ;;
    esac 2>&1
}

# The jobs, in output order.
jobs_list=()
has() { printf '%s\n' "${suites[@]}" | grep -qxF "$1"; }
for s in "${suites[@]}"; do
    case $s in
        unit) for t in "$root"/tests/unit/test_*.c; do jobs_list+=("unit:$(basename "$t" .c)"); done ;;
        torch) jobs_list+=(torch:run torch:minilm torch:debug_helpers) ;;
        cuda) jobs_list+=(cuda:1/4 cuda:2/4 cuda:3/4 cuda:4/4 cuda:loader) ;; # tests/cuda/run.sh's AXC_CUDA_PART
        train) jobs_list+=(train:run train:step train:clip train:remat train:drift train:hostile train:schedule train:loop train:last_batch train:amp train:interp) ;;
        firmware|install)
            other=$([ "$s" = install ] && echo firmware || echo install)
            if has "$other"; then
                printf '%s\n' "${jobs_list[@]}" | grep -q '+' || jobs_list+=("$s+$other")
            else jobs_list+=("$s"); fi ;;
        *) jobs_list+=("$s") ;;
    esac
done

# Start order: longest processing time first (LPT), so that on few cores the
# long jobs do not start last and the wall time approaches CPU / jobs.  A
# job's figure is its CPU seconds on the last run that ran it
# (BUILD_DIR/tests/job-times, written below), else on a fresh 2-core run
# (tests/job-times, the same format: what a fresh clone sees; refresh it by
# copying the first), else the largest figure known: a job never measured
# starts among the first, as a long job started last is what leaves cores
# idle at the end.  Only the order matters: a stale figure costs wall time,
# never a result.
job_times=$B/tests/job-times
start_order=$( { cat "$job_times" 2>/dev/null; cat "$here/job-times"; echo "-- jobs"
                 for i in "${!jobs_list[@]}"; do echo "${jobs_list[$i]} $i"; done; } |
    awk '/^#/ { next } $0 == "-- jobs" { jobs = 1; next }
         !jobs { if (!($1 in cpu)) cpu[$1] = $3; if ($3 > top) top = $3; next }
         { print ($1 in cpu ? cpu[$1] : top + 0), $2 }' | sort -k1,1nr -k2,2n | cut -d' ' -f2)

# Prints (console) and appends (count log) every finished job not yet shown
# whose predecessors are all shown.
next=0
flush() {
    while [ "$next" -lt ${#jobs_list[@]} ] && [ -e "$logs/$next.done" ]; do
        cat "$logs/$next.log" >>"$log"
        grep -v '^PASS: \|^SKIP: ' "$logs/$next.log"
        grep '^SKIP: ' "$logs/$next.log" | sed -n 's/^SKIP: \([^/(]*\)\/[^(]*(\(.*\))$/\1: \2/p' | sed 's/-O[0-9]:/:/' \
            | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/skipped \1: \2/'
        next=$((next + 1))
    done
}

running=0
for i in $start_order; do
    if [ "$running" -ge "$max_jobs" ]; then
        wait -n; running=$((running - 1)); flush
    fi
    { t0=$SECONDS; run_job "${jobs_list[$i]}" >"$logs/$i.log"
      times >"$logs/$i.times"   # this job's processes: user and system CPU time
      cpu=$(awk 'NR == 2 {for (f = 1; f <= 2; f++) {split($f, t, /[ms]/); s += t[1] * 60 + t[2]}}
                 END {printf "%d", s + 0.5}' "$logs/$i.times")
      echo "${jobs_list[$i]} $((SECONDS - t0)) $cpu" >"$logs/$i.done"; } &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do wait -n; running=$((running - 1)); flush; done
wait
flush

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

# per-suite wall and CPU (user + system) times, longest first (unit, torch,
# train: their jobs' sums; they overlap)
cat "$logs"/*.done | sed 's/^\([a-z]*\):[^ ]*/\1/' |
    awk '{t[$1] += $2; c[$1] += $3} END {for (s in t) printf "%d %s %d\n", t[s], s, c[s]}' | sort -rn |
    awk '{printf "%s%s %d s (cpu %d s)", (NR > 1 ? ", " : "time: "), $2, $1, $3} END {print ""}'
# this run's job times first, then those of jobs it did not run
[ -d "$B/tests" ] && { cat "$logs"/*.done; cat "$job_times" 2>/dev/null; } | awk '!seen[$1]++' >"$logs/times" &&
    cp "$logs/times" "$job_times"
cpu_all=$(cat "$logs"/*.done | awk '{c += $3} END {print c + 0}')
echo "time: all suites $((SECONDS - run_start)) s wall, $cpu_all s cpu, on $max_jobs jobs"

passed=$(grep -c '^PASS: ' "$log")
failed=$(grep -c '^FAIL: ' "$log")
skipped=$(grep -c '^SKIP: ' "$log")
if [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
    echo "FAIL: no test ran"; failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
