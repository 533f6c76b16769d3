"""compare.py LIST: every comparison of the llvm suite in one Python start.
LIST has one tab-separated row per comparison; each prints its PASS or FAIL
line (the suite's wording) in the order of the rows.

  listing NAME C_LISTING LLVM_LISTING
      the runner's listings of the same model(s) built by the C target and
      by the LLVM target.  Passes if they list the same elements and every
      value agrees within 1e-6 relative (absolute near zero: 1e-6 * the
      output's largest magnitude), and, because both targets run the same
      kernels and the same formulas in the same order, every value is
      bit-for-bit the same.
  jit NAME C_DIR JIT_DIR
      the .npy outputs of `axc run` (C) and `axc run --jit`: the same files,
      the same shapes, every value within 1e-6 relative."""
import os
import sys


def load_listing(path):
    rows = {}
    for line in open(path):
        parts = line.split()
        if len(parts) != 4:
            raise ValueError(f"{path}: unexpected line: {line.strip()}")
        rows[(parts[0], parts[1], int(parts[2]))] = float(parts[3])
    return rows


def compare_listings(c_path, l_path):
    """None when identical, else what differs."""
    c, l = load_listing(c_path), load_listing(l_path)
    if not c:
        return "no output values"
    if c.keys() != l.keys():
        return f"different outputs: {len(c)} values from C, {len(l)} from LLVM"
    scale = {}
    for (m, o, _), v in c.items():
        scale[(m, o)] = max(scale.get((m, o), 0.0), abs(v))
    worst, where = 0.0, None
    for k, v in c.items():
        if v != v or l[k] != l[k]:
            if (v != v) != (l[k] != l[k]):
                return f"NaN mismatch at {k}"
            continue
        rel = abs(v - l[k]) / max(abs(v), 1e-6 * scale[k[:2]], 1e-30)
        if rel > worst:
            worst, where = rel, k
    if worst > 1e-6:
        return f"max relative difference {worst:.3g} at {where}: C {c[where]!r}, LLVM {l[where]!r}"
    if worst != 0:
        return (f"within 1e-6 but not identical: max relative difference {worst:.3g} at {where}: "
                f"C {c[where]!r}, LLVM {l[where]!r}")
    return None


def compare_npy_dirs(a, b):
    """None when every output agrees within 1e-6 relative, else what differs."""
    import numpy as np
    names = sorted(os.listdir(a))
    if not names or names != sorted(os.listdir(b)):
        return f"outputs differ: {names} vs {sorted(os.listdir(b))}"
    for n in names:
        x = np.load(os.path.join(a, n)).astype(np.float64)
        y = np.load(os.path.join(b, n)).astype(np.float64)
        if x.shape != y.shape:
            return f"{n}: shape {x.shape} vs {y.shape}"
        scale = max(np.abs(x).max(), 1e-30)
        rel = np.abs(x - y) / np.maximum(np.abs(x), 1e-6 * scale)
        if rel.max() > 1e-6:
            return f"{n}: max relative difference {rel.max():.3g}"
    return None


def main():
    failed = 0
    for row in open(sys.argv[1]):
        kind, name, a, b = row.rstrip("\n").split("\t")
        try:
            why = compare_listings(a, b) if kind == "listing" else compare_npy_dirs(a, b)
        except (OSError, ValueError) as e:
            why = str(e)
        if kind == "listing":
            title = f"{name}: LLVM object matches the C target"
            verdict = f" (identical)"
        else:
            title = f"{name} (no C compiler) matches axc run"
            verdict = ""
        if why is None:
            print(f"PASS: llvm {title}{verdict}")
        else:
            failed += 1
            print(f"FAIL: llvm {title}\n  {why}")
    return 1 if failed else 0


sys.exit(main())
