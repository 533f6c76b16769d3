#!/usr/bin/env bash
# Bench suite: the benchmark harness of `make bench` end to end on row R1,
# checks only, never timing (bench/bench.py --smoke): installs axc into a
# scratch prefix, compiles R1 with the installed axc, builds the harness the
# way `make bench` does (pkg-config) and checks every system that can run
# against the float64 PyTorch reference.  One PASS/FAIL/SKIP line per system
# (the ONNX-fed peers are SKIP without the bench-local venv).
# Environment (set by tests/run.sh): AXC_ROOT, AXC_BUILD, PYTHON.
set -u
root=${AXC_ROOT:?}
build=${AXC_BUILD:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Float16/BFloat16 rows (bench/precision.py --smoke): R2 and R3 run at every
# dtype and stay close to Float32; no timing is judged.
"$PYTHON" "$root/bench/precision.py" --smoke --axc "$build/bin/axc" 2>"$work/precision.log" ||
    { echo "FAIL: bench precision --smoke"; tail -n 15 "$work/precision.log" | sed 's/^/  /'; }

# The report's above-peak line: a peer faster than threads x the FMA peak on
# a matrix-product row is named, one at the peak or on a conv row is not.
if "$PYTHON" - "$root/bench" <<'EOF' >"$work/peak.log" 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import bench
medians = {"R4": {"axc": 20e6, "openvino": 10e6, "onnxruntime": 20e6}, "R3": {"axc": 1e6, "onednn": 1e3}}
flop = {"R4": 2e9, "R3": 1e9}  # R4: OpenVINO 200 GFLOP/s, ONNX Runtime 100; R3 a conv row
line = bench.above_peak(medians, flop, 150.0, 1)
assert len(line) == 2 and "OpenVINO on R4 (200 GFLOP/s)" in line[0] and "ONNX Runtime" not in line[0], line
assert bench.above_peak(medians, flop, 100.0, 2) == [] and bench.above_peak(medians, flop, 0.0, 1) == []
EOF
then echo "PASS: bench report names peers above the FMA peak"
else echo "FAIL: bench report names peers above the FMA peak"; sed 's/^/  /' "$work/peak.log"; fi

# The fastest-rounds table: the best peer is the fastest of those whose output
# checked ok on its fastest round (a wrong one is passed over), and each
# spread is that system's median / fastest round; under --isa, a peer it
# could not hold (ONNX Runtime, XLA), or not on that row (its kernels), is
# shown but never the best.
if "$PYTHON" - "$root/bench" <<'EOF' >"$work/fastest.log" 2>&1
import sys
sys.path.insert(0, sys.argv[1])
import bench
fastest = {"R4": {"axc": 20.0, "onnxruntime": 25.0, "openvino": 22.0, "xla": 10.0}}
medians = {"R4": {"axc": 30.0, "onnxruntime": 27.5, "openvino": 33.0, "xla": 11.0}}
checks = {"R4": {"axc": ("ok", ""), "onnxruntime": ("ok", ""), "openvino": ("ok", ""), "xla": ("fail", "1")}}
rows = bench.fastest_table(medians, fastest, checks)
assert rows[2] == "| R4 | 1.10 (OpenVINO) | 1.50 | 1.50 |", rows
checks["R4"]["openvino"] = ("fail", "1")
rows = bench.fastest_table(medians, fastest, checks)
assert rows[2] == "| R4 | 1.25 (ONNX Runtime) | 1.50 | 1.10 |", rows
bench.UNHELD.update(bench.ISA_HOLD["avx2"]["unheld"])  # --isa avx2: ONNX Runtime and XLA not held
checks["R4"]["openvino"] = checks["R4"]["xla"] = ("ok", "")
rows = bench.fastest_table(medians, fastest, checks)
assert rows[2] == "| R4 | 1.10 (OpenVINO) | 1.50 | 1.50 |", rows
time_rows = bench.time_table(checks, medians)
assert "(not held)" in time_rows[2] and time_rows[2].endswith("| 1.10 (OpenVINO) |"), time_rows
# held in general, not on one row: OpenVINO's matrix products on MLAS for 65 % of R4's FLOP
pattern = bench.ISA_HOLD["avx2"]["unheld_kernels"]
why = bench.audit_kernels("brgemm_avx2_f32=604 gemm_mlas_f32=1208", pattern, 1862)
assert why == "gemm_mlas_f32: 65 % of its FLOP", why
assert bench.audit_kernels("brgemm_avx2_f32=1000 gemm_mlas_f32=99", pattern, 1099) is None  # 9 %
assert bench.audit_kernels("n/a no kernel list", pattern, 1000) is None
assert bench.audit_kernels("none", pattern, 1000) is None
bench.UNHELD.discard("onnxruntime")  # XLA still not held at all
bench.UNHELD_IN_ROW["R4"] = {"openvino": why}
rows = bench.fastest_table(medians, fastest, checks)
assert rows[2] == "| R4 | 1.25 (ONNX Runtime) | 1.50 | 1.10 |", rows
time_rows = bench.time_table(checks, medians)
cells = time_rows[2].split(" | ")  # ONNX Runtime held, OpenVINO not on R4, XLA not at all
assert [c.endswith("(not held)") for c in cells[-4:-1]] == [False, True, True], time_rows
assert time_rows[2].endswith("| 0.92 (ONNX Runtime) |"), time_rows
assert "OpenVINO on R4 (gemm_mlas_f32: 65 % of its FLOP)" in bench.unheld_rows_line()[0]
EOF
then echo "PASS: bench report's fastest-rounds table (peers not held to --isa never best)"
else echo "FAIL: bench report's fastest-rounds table"; sed 's/^/  /' "$work/fastest.log"; fi

# OpenBLAS on a CPU newer than its build falls back to Prescott: the bench
# names the nearest core it has (SkylakeX with AVX-512, Haswell with AVX2)
# for every worker, says so, and leaves a core someone set, or one OpenBLAS
# knew, alone.
if "$PYTHON" - "$root/bench" "$work" <<'EOF' >"$work/blas.log" 2>&1
import os, sys
sys.path.insert(0, sys.argv[1])
import bench
fake = f"{sys.argv[2]}/fake-harness"
def harness_saying(core):
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\nread line && echo 'OpenBLAS 0.3.21 DYNAMIC_ARCH, core {core} | oneDNN 2.6.3'\n")
    os.chmod(fake, 0o755)
    return fake
os.environ.pop("OPENBLAS_CORETYPE", None)
bench.cpu_flags = lambda: {"avx2", "fma", "avx512f"}
assert bench.openblas_nearest_core(harness_saying("Haswell"), ".") == [] and "OPENBLAS_CORETYPE" not in os.environ
line = bench.openblas_nearest_core(harness_saying("Prescott"), ".")
assert os.environ["OPENBLAS_CORETYPE"] == "SkylakeX" and "OPENBLAS_CORETYPE=SkylakeX" in line[0], line
os.environ["OPENBLAS_CORETYPE"] = "Haswell"  # --isa avx2 set it: kept
assert bench.openblas_nearest_core(fake, ".") == [] and os.environ["OPENBLAS_CORETYPE"] == "Haswell"
del os.environ["OPENBLAS_CORETYPE"]
bench.cpu_flags = lambda: {"avx2", "fma"}
assert "OPENBLAS_CORETYPE=Haswell" in bench.openblas_nearest_core(fake, ".")[0]
del os.environ["OPENBLAS_CORETYPE"]
bench.cpu_flags = lambda: {"sse3"}
assert bench.openblas_nearest_core(fake, ".") == [] and "OPENBLAS_CORETYPE" not in os.environ
EOF
then echo "PASS: bench names OpenBLAS's nearest core where it fell back to Prescott"
else echo "FAIL: bench names OpenBLAS's nearest core"; sed 's/^/  /' "$work/blas.log"; fi

if ! "$PYTHON" -c "import torch, torchvision" >/dev/null 2>&1; then
    echo "SKIP: bench smoke (needs $PYTHON with torch and torchvision)"
    exit 0
fi
if ! make -C "$root" --no-print-directory install B="$build" PREFIX="$work/stage" >"$work/install.log" 2>&1; then
    echo "FAIL: bench smoke: make install"
    tail -n 15 "$work/install.log" | sed 's/^/  /'
    exit 0
fi
# Training steps (bench/train.py --smoke): the installed axc --train's MLP
# step, built with pkg-config, against PyTorch's Adam after a few steps; no
# timing is judged.
"$PYTHON" "$root/bench/train.py" --smoke --stage "$work/stage" --cc "${CC:-cc}" >"$work/train.out" 2>"$work/train.log"
if grep -q '^\(PASS\|FAIL\): bench train' "$work/train.out"; then cat "$work/train.out"
else echo "FAIL: bench train smoke"; tail -n 15 "$work/train.log" | sed 's/^/  /'; fi
if ! "$PYTHON" "$root/bench/bench.py" --smoke --build-dir "$work/bench" --stage "$work/stage" \
    --cc "${CC:-cc}" 2>"$work/bench.log"; then
    echo "FAIL: bench smoke: bench.py --smoke"
    tail -n 15 "$work/bench.log" | sed 's/^/  /'
fi
