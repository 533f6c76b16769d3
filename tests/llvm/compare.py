"""compare.py C_LISTING LLVM_LISTING: the runner's listings of the same
model(s) built by the C target and by the LLVM target.  Exits 1 unless
they list the same elements and every value agrees within 1e-6 relative
(absolute near zero: 1e-6 * the output's largest magnitude), and, because
both targets run the same kernels and the same formulas in the same order,
unless every value is bit-for-bit the same; prints "identical", or the
largest relative difference."""
import sys

def load(path):
    rows = {}
    for line in open(path):
        parts = line.split()
        if len(parts) != 4:
            sys.exit(f"{path}: unexpected line: {line.strip()}")
        rows[(parts[0], parts[1], int(parts[2]))] = float(parts[3])
    return rows

c, l = load(sys.argv[1]), load(sys.argv[2])
if not c:
    sys.exit("no output values")
if c.keys() != l.keys():
    sys.exit(f"different outputs: {len(c)} values from C, {len(l)} from LLVM")
scale = {}
for (m, o, _), v in c.items():
    scale[(m, o)] = max(scale.get((m, o), 0.0), abs(v))
worst, where = 0.0, None
for k, v in c.items():
    d = abs(v - l[k])
    if v != v or l[k] != l[k]:
        if (v != v) != (l[k] != l[k]):
            sys.exit(f"NaN mismatch at {k}")
        continue
    rel = d / max(abs(v), 1e-6 * scale[k[:2]], 1e-30)
    if rel > worst:
        worst, where = rel, k
if worst > 1e-6:
    sys.exit(f"max relative difference {worst:.3g} at {where}: C {c[where]!r}, LLVM {l[where]!r}")
if worst != 0:
    sys.exit(f"within 1e-6 but not identical: max relative difference {worst:.3g} at {where}: "
             f"C {c[where]!r}, LLVM {l[where]!r}")
print("identical")
