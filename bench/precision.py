"""`make bench-precision`: Float16 and BFloat16 against Float32 on the GEMM
rows R2 (MLP 784-256-10, batch 32) and R3 (ResNet-18 block 56x56x64), one
thread, through `axc run --bench N` (the generated C built by axc run, the
runtime choosing its kernels at run time: AXRT_ISA in the environment forces
one).  Prints a Markdown table: median time per dtype, the ratio to Float32,
and the largest difference from the Float32 model relative to its largest
output (same seeded weights and input).

--smoke: one run per cell, no figures worth reading; prints PASS/FAIL lines
(the `bench` test suite) so that the rows are known to run.

Timings are reported, never judged; record them on an idle machine."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ROWS = {"R2": ("MLP 784-256-10, batch 32", "r2_mlp_b32"),
        "R3": ("ResNet-18 block 56x56x64", "r3_resnet_block")}
DTYPES = ("Float32", "Float16", "BFloat16")


def bench_one(axc, row, dtype, runs, work):
    """(median us, output array) of one row at one dtype."""
    out = os.path.join(work, f"{row}_{dtype}.npy")
    cmd = [axc, "run", os.path.join(ROOT, "examples", ROWS[row][1] + ".ax"), "--seed=0", f"--dtype={dtype}",
           "--threads=1", "--bench", str(runs), "--output", out]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    median = re.search(r"median ([0-9.]+) us", done.stdout + done.stderr)
    isa = re.search(r"kernels (\S+),", done.stdout + done.stderr)
    return float(median.group(1)), np.load(out), isa.group(1) if isa else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--axc", default=os.path.join(ROOT, "build", "bin", "axc"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rows", default="R2,R3")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    runs = 1 if args.smoke else args.runs
    failed = 0
    lines = ["| row | dtype | median (us) | vs Float32 | max abs diff / max abs Float32 | kernels |",
             "|---|---|---:|---:|---:|---|"]
    with tempfile.TemporaryDirectory(prefix="axc_bench_precision_") as work:
        for row in args.rows.split(","):
            base = None
            for dtype in DTYPES:
                try:
                    t, y, isa = bench_one(args.axc, row, dtype, runs, work)
                except (subprocess.CalledProcessError, AttributeError, OSError) as e:
                    print(f"FAIL: bench precision {row} {dtype}\n  {e}")
                    failed += 1
                    continue
                if base is None:
                    base = (t, y)
                err = float(np.max(np.abs(y - base[1])) / max(1e-30, float(np.max(np.abs(base[1])))))
                ok = np.all(np.isfinite(y)) and err < 0.05
                if args.smoke:
                    print(f"{'PASS' if ok else 'FAIL'}: bench precision {row} {dtype} (error vs Float32 {err:.2e})")
                failed += not ok
                lines.append(f"| {row} {ROWS[row][0]} | {dtype} | {t:.0f} | {base[0] / t:.2f}x | {err:.2e} | {isa} |")
    if not args.smoke:
        print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
