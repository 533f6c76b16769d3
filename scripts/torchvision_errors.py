"""Prints, for each torchvision example of examples/, its .ax line count and
the largest absolute difference between `axc run` (generated C, twin weights
loaded with --weights) and the torchvision model on the same input, with the
largest output magnitude for scale.  Usage (from the repository root):
  AXC=build/bin/axc /usr/bin/python3 scripts/torchvision_errors.py"""

import os
import shutil
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
os.environ.setdefault("AXC", os.path.join(ROOT, "build", "bin", "axc"))

import run  # noqa: E402
import safetensors_io  # noqa: E402
from cases_compose import torchvision_cases  # noqa: E402


def main():
    for case in torchvision_cases(ROOT):
        workdir = tempfile.mkdtemp(prefix="axc_tv_")
        try:
            runner = run.Runner(case, workdir)
            safetensors_io.write(os.path.join(workdir, "w.safetensors"), runner.twin.state_dict())
            got, details, _ = runner.run_axc("weights", ["--weights=w.safetensors"])
            if got is None:
                print(f"{case.name}: axc failed: {details}")
                continue
            ref = runner.reference()[0]
            err = float(np.max(np.abs(got[0].astype(np.float64) - ref)))
            lines = case.ax.count("\n")
            print(f"{case.name}: {lines} lines, max |axc - torch| = {err:.3g} "
                  f"(max |torch| = {float(np.max(np.abs(ref))):.3g})")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
