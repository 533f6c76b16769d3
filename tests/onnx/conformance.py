"""ONNX conformance: the official backend tests of Debian's libonnx-testdata.

Every float32 test (all inputs and outputs float32 with static shapes) of
node/, pytorch-converted/, pytorch-operator/ and simple/ is run through
`axc run --interp` (the reference interpreter: classification in seconds)
and classified:
  pass         every output within rtol 1e-3, atol 1e-7 (onnx's runner)
  unsupported  axc exits 1 with an "unsupported" error (located, no output)
  fail         anything else: a wrong answer, another error, a crash
Every SUBSET-th passing case is run again through generated C (`axc run`,
no --interp), which must match too.  Counts are printed; ratchet.txt holds
the floor of each count of passes (a drop FAILs) and the ceiling of fails.
On a terminal a progress line ("onnx conformance 120/520") is redrawn on
standard error, as base/progress.c does for axc's own long operations;
nothing when standard error is not a terminal (logs and CI stay clean).
"""
import concurrent.futures as cf
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import onnx
    from onnx import numpy_helper
except ImportError:  # python3-onnx missing
    onnx = None

DATA = "/usr/share/libonnx-testdata/data"
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
SUBSET = 8


def static_float(vis):
    for vi in vis:
        t = vi.type.tensor_type
        if vi.type.WhichOneof("value") != "tensor_type" or t.elem_type != 1:
            return False
        if any(not d.HasField("dim_value") for d in t.shape.dim):
            return False
    return True


def cases():
    for suite in SUITES:
        root = os.path.join(DATA, suite)
        if not os.path.isdir(root):
            continue
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            model = os.path.join(d, "model.onnx")
            sets = sorted(x for x in os.listdir(d) if x.startswith("test_data_set")) if os.path.isdir(d) else []
            if not os.path.isfile(model) or not sets:
                continue
            try:
                m = onnx.load(model, load_external_data=False)
            except Exception:
                continue
            init = {t.name for t in m.graph.initializer}
            ins = [i for i in m.graph.input if i.name not in init]
            if static_float(ins) and static_float(m.graph.output):
                yield suite, name, d, [i.name for i in ins], [o.name for o in m.graph.output]


def run_case(case, interp, tmp):
    suite, name, d, ins, outs = case
    ds = os.path.join(d, "test_data_set_0")
    work = tempfile.mkdtemp(dir=tmp)
    args = [os.environ.get("AXC", "axc"), "run", os.path.join(d, "model.onnx")]
    if interp:
        args.append("--interp")
    for k, n in enumerate(ins):
        x = numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"input_{k}.pb")))
        p = os.path.join(work, f"in{k}.npy")
        np.save(p, x)
        args += ["--input", f"{n}={p}"]
    args += ["--output-dir", work]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "fail", "timeout"
    err = (r.stderr or "").strip().splitlines()
    first = err[0] if err else ""
    if r.returncode == 1 and "unsupported" in r.stderr:
        return "unsupported", first
    if r.returncode != 0:
        return "fail", f"exit {r.returncode}: {first}"
    for k, n in enumerate(outs):
        want = numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"output_{k}.pb")))
        fname = n.replace("/", "_").replace("\\", "_")
        fname = "_" + fname[1:] if fname.startswith(".") else fname
        p = os.path.join(work, f"{fname}.npy")
        if not os.path.isfile(p):
            return "fail", f"no output {n}"
        got = np.load(p)
        if got.shape != want.shape:
            if got.size == want.size:
                got = got.reshape(want.shape)
            else:
                return "fail", f"output {n}: shape {got.shape}, expected {want.shape}"
        if not np.allclose(got, want, rtol=1e-3, atol=1e-7, equal_nan=True):
            bad = np.abs(got.astype(np.float64) - want)
            return "fail", f"output {n}: max abs error {np.nanmax(bad):.3g}"
    return "pass", ""


class Progress:
    """"\rLABEL i/N" on standard error at most five times a second, erased
    by end(); silent unless standard error is a terminal."""

    def __init__(self, label, total):
        self.label, self.total, self.last, self.shown = label, total, 0.0, False
        self.on_tty = sys.stderr.isatty()

    def step(self, done):
        now = time.monotonic()
        if not self.on_tty or (now - self.last < 0.2 and done < self.total):
            return
        self.last, self.shown = now, True
        sys.stderr.write(f"\r\033[K{self.label} {done}/{self.total}")
        sys.stderr.flush()

    def end(self):
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        self.shown = False


def read_ratchet(path):
    floors = {}
    if os.path.isfile(path):
        for line in open(path):
            parts = line.split("#")[0].split()
            if len(parts) == 2:
                floors[parts[0]] = int(parts[1])
    return floors


def main():
    if onnx is None or not os.path.isdir(DATA):
        print("SKIP: onnx conformance (needs python3-onnx and libonnx-testdata)")
        return 0
    probe = subprocess.run([os.environ.get("AXC", "axc"), "run", "/nonexistent.onnx", "--interp"],
                           capture_output=True, text=True)
    if "without the ONNX front end" in probe.stderr:
        print("SKIP: onnx conformance (axc built without the ONNX front end)")
        return 0
    all_cases = list(cases())
    jobs = int(os.environ.get("AXC_JOBS", os.cpu_count() or 2))
    counts = {}
    results = {}
    with tempfile.TemporaryDirectory() as tmp, cf.ThreadPoolExecutor(jobs) as pool:
        futs = {pool.submit(run_case, c, True, tmp): c for c in all_cases}
        bar = Progress("onnx conformance", len(all_cases))
        for done, f in enumerate(cf.as_completed(futs), 1):
            c = futs[f]
            results[(c[0], c[1])] = f.result()
            bar.step(done)
        bar.end()
        passing = [c for c in all_cases if results[(c[0], c[1])][0] == "pass"]
        subset = passing[::SUBSET]
        bar = Progress("onnx conformance through generated C", len(subset))
        cfuts = [pool.submit(run_case, c, False, tmp) for c in subset]
        for done, _ in enumerate(cf.as_completed(cfuts), 1):
            bar.step(done)
        bar.end()
        cres = [f.result() for f in cfuts]
    for (suite, name), (status, why) in sorted(results.items()):
        counts[(suite, status)] = counts.get((suite, status), 0) + 1
        if status == "fail":
            print(f"  {suite}/{name}: fail: {why}")
    rc = 0
    for c, (status, why) in zip(subset, cres):
        if status != "pass":
            print(f"FAIL: onnx conformance {c[0]}/{c[1]} through generated C: {why}")
            rc = 1
    print(f"PASS: onnx conformance: {len(subset)} passing cases also pass through generated C" if rc == 0 else
          "  (generated C differs from the interpreter above)")
    here = os.path.dirname(os.path.abspath(__file__))
    floors = read_ratchet(os.path.join(here, "ratchet.txt"))
    for suite in SUITES:
        p, f, u = (counts.get((suite, s), 0) for s in ("pass", "fail", "unsupported"))
        total = p + f + u
        if not total:
            continue
        line = f"onnx conformance {suite}: {p} pass, {f} fail, {u} unsupported of {total} float32 tests"
        floor = floors.get(f"{suite}.pass", 0)
        ceiling = floors.get(f"{suite}.fail", None)
        if p < floor or (ceiling is not None and f > ceiling):
            print(f"FAIL: {line} (ratchet: at least {floor} pass, at most {ceiling} fail)")
            rc = 1
        else:
            print(f"PASS: {line}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
