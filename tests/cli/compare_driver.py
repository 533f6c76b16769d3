"""compare_driver.py OUT.txt REF.npy: both columns the C driver printed (via
mlp_forward and via mlp_model.run) equal `axc run`'s output within 1e-6 of
max(1, max|ref|).  Exit 0 when they do, else prints why."""

import sys

import numpy as np


def main(text_path, ref_path):
    got = np.loadtxt(text_path, ndmin=2)
    ref = np.load(ref_path).astype(np.float64).reshape(-1)
    if got.shape != (ref.size, 2):
        print(f"driver printed {got.shape}, expected ({ref.size}, 2)")
        return 1
    bound = 1e-6 * max(1.0, float(np.max(np.abs(ref))))
    for column, how in enumerate(("mlp_forward", "mlp_model.run")):
        err = float(np.max(np.abs(got[:, column] - ref)))
        if not err <= bound:
            print(f"{how}: max |a-b| = {err:.3g} > {bound:.3g} against axc run")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
