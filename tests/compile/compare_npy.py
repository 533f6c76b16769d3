"""compare_npy.py GOT_DIR REF_DIR TOL: every REF_DIR/*.npy has a twin in
GOT_DIR with the same dtype and shape, and max|a-b| <= TOL * max(1, max|ref|).
Exit status 0 when all agree; otherwise prints one line per disagreement."""

import os
import sys

import numpy as np


def main(got_dir, ref_dir, tol):
    names = sorted(n for n in os.listdir(ref_dir) if n.endswith(".npy"))
    if not names:
        print(f"no .npy output in {ref_dir}")
        return 1
    problems = []
    for name in names:
        got_path = os.path.join(got_dir, name)
        if not os.path.exists(got_path):
            problems.append(f"{name}: missing from the generated-code run")
            continue
        got, ref = np.load(got_path), np.load(os.path.join(ref_dir, name))
        if got.dtype != ref.dtype or got.shape != ref.shape:
            problems.append(f"{name}: {got.dtype}{got.shape} vs {ref.dtype}{ref.shape}")
            continue
        ref64 = ref.astype(np.float64)
        err = float(np.max(np.abs(got.astype(np.float64) - ref64))) if ref.size else 0.0
        bound = tol * max(1.0, float(np.max(np.abs(ref64))) if ref.size else 1.0)
        if not err <= bound:
            problems.append(f"{name}: max |a-b| = {err:.3g} > {bound:.3g}")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
