"""compare_runs.py DIR_A DIR_B TOL — every NAME.npy in DIR_A matches DIR_B's
within TOL relative to the tensor's largest magnitude (max |a-b| / max |a|).
Prints the worst error; exit status 1 when it exceeds TOL or a file is missing."""
import glob
import os
import sys

import numpy as np


def main():
    a_dir, b_dir, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    files = sorted(glob.glob(os.path.join(a_dir, "*.npy")))
    if not files:
        print("no outputs in", a_dir)
        return 1
    worst = 0.0
    for f in files:
        a = np.load(f).astype(np.float64)
        b = np.load(os.path.join(b_dir, os.path.basename(f))).astype(np.float64)
        if a.shape != b.shape:
            print(os.path.basename(f), "shapes differ:", a.shape, b.shape)
            return 1
        scale = max(float(np.max(np.abs(a))) if a.size else 0.0, 1e-30)
        worst = max(worst, float(np.max(np.abs(a - b))) / scale if a.size else 0.0)
    print("worst relative difference %.3g (limit %g)" % (worst, tol))
    return 0 if worst <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
