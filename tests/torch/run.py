"""PyTorch numerics suite for axc.

For every case of cases.py, in a temporary directory:
  weights  random twin weights -> safetensors -> `axc run --weights` (generated C)
           == twin output
  interp   the same through `axc run --interp` (the reference interpreter)
  seed     `axc run --interp --seed=7 --save-weights` -> load those weights into
           the twin with strict=True -> twin output == axc's output (on the
           interpreter: the seeded weights are drawn before a back end is chosen,
           and `weights` runs the generated C on the twin's; each example's
           generated C at a seed is checked against the interpreter by the
           compile suite)
Prints one `PASS: torch:<case>:<check>` / `FAIL: ...` line per check, details
indented by two spaces.  Environment: AXC (the axc binary), AXC_ROOT (repo).
Optional arguments select cases whose name contains any of them;
AXC_TORCH_JOBS sets the number of cases run at once (default: the number
of cores)."""

import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as C  # noqa: E402
import safetensors_io  # noqa: E402
from twins import randomise  # noqa: E402

AXC = os.environ.get("AXC", "build/bin/axc")
ROOT = os.environ.get("AXC_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TIMEOUT_S = 300
torch.set_num_threads(1)


def make_input(rng, shape, kind):
    if isinstance(kind, tuple):                      # ("int", n[, dtype]): indices
        return rng.integers(0, kind[1], size=shape, dtype=np.int64).astype(
            kind[2] if len(kind) > 2 else np.int64)
    if kind == "positive":
        return rng.uniform(0.1, 3.0, size=shape).astype(np.float32)
    if kind == "keymask":                            # [N, S] key padding mask, 0 = padding
        mask = rng.integers(0, 2, size=shape).astype(np.float32)
        mask[-1, :shape[1] * 2 // 3] = 0.0            # the last row: its first key blocks all padding
        mask[:, -1] = 1.0                             # every query sees a key
        return mask
    if kind == "f64":
        return rng.standard_normal(shape)
    return rng.standard_normal(shape).astype(np.float32)


def axc(workdir, *args):
    """Runs axc in workdir; returns (exit status, stderr, command text)."""
    cmd = [AXC, *args]
    try:
        done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT_S)
        return done.returncode, done.stderr, " ".join(cmd)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {TIMEOUT_S} s", " ".join(cmd)


def compare(case, got, ref):
    """None if got matches ref within the case's tolerance, else a reason."""
    want_dtype = np.float64 if case.float64 else np.float32
    if got.dtype != want_dtype:
        return f"dtype {got.dtype}, expected {np.dtype(want_dtype)}"
    if got.shape != ref.shape:
        return f"shape {got.shape}, expected {ref.shape}"
    if not np.all(np.isfinite(got)) and np.all(np.isfinite(ref)):
        return "non-finite values in the output"
    err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
    bound = case.tol * max(1.0, float(np.max(np.abs(ref))) if ref.size else 1.0)
    return None if err <= bound else f"max |a-b| = {err:.3g} > {bound:.3g}"


class Runner:
    """One case in one temporary directory."""

    def __init__(self, case, workdir):
        self.case, self.dir = case, workdir
        seed = zlib.crc32(case.name.encode())
        rng = np.random.default_rng(seed)
        self.inputs = {n: make_input(rng, s, k) for n, (s, k) in case.inputs.items()}
        with open(os.path.join(workdir, "model.ax"), "w") as f:
            f.write(case.ax)
        self.input_args = []
        for name, value in self.inputs.items():
            np.save(os.path.join(workdir, name + ".npy"), value)
            self.input_args += ["--input", f"{name}={name}.npy"]
        torch.manual_seed(seed)
        self.twin = case.twin()
        randomise(self.twin, torch.Generator().manual_seed(seed))
        self.twin.eval()
        if case.float64:
            self.twin.double()

    def reference(self):
        xs = []
        for value in self.inputs.values():
            t = torch.from_numpy(value)
            if t.is_floating_point():
                t = t.double() if self.case.float64 else t.float()
            else:
                t = t.long()  # torch indexes with Int64 only
            xs.append(t)
        with torch.no_grad():
            out = self.twin(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        return [o.numpy().astype(np.float64) for o in outs]

    def run_axc(self, tag, extra):
        """`axc run` writing outputs under tag; returns (outputs or None, details)."""
        outs = self.case.outputs
        if outs:
            os.makedirs(os.path.join(self.dir, tag), exist_ok=True)
            out_args = ["--output-dir", tag]
            paths = [os.path.join(tag, n + ".npy") for n in outs]
        else:
            out_args = ["--output", tag + ".npy"]
            paths = [tag + ".npy"]
        rc, err, cmd = axc(self.dir, "run", "model.ax", *self.case.flags, *extra,
                           *self.input_args, *out_args)
        details = [f"command: {cmd}", f"exit status: {rc}"] + \
                  [f"stderr: {line}" for line in err.splitlines()[:12]]
        if rc != 0:
            return None, details, err
        try:
            return [np.load(os.path.join(self.dir, p)) for p in paths], details, err
        except (OSError, ValueError) as e:
            return None, details + [f"cannot read the output: {e}"], err

    def check_outputs(self, got, details):
        for i, (g, r) in enumerate(zip(got, self.reference())):
            reason = compare(self.case, g, r)
            if reason:
                return details + [f"output {i}: {reason}"]
        return None

    def check_stderr(self, err, details):
        for text in self.case.stderr_has:
            if text not in err:
                return details + [f"stderr lacks '{text}'"]
        for text in self.case.stderr_lacks:
            if text in err:
                return details + [f"stderr holds '{text}'"]
        return None

    def direction_a(self, interp):
        """Twin weights into axc.  Returns None (pass) or failure details."""
        tag = "interp" if interp else "weights"
        weights = os.path.join(self.dir, "w.safetensors")
        if not os.path.exists(weights):
            safetensors_io.write(weights, self.twin.state_dict())
        got, details, err = self.run_axc(tag, ["--weights=w.safetensors"] + (["--interp"] if interp else []))
        if self.case.expect_exit:
            return self.check_refused(details, tag)
        if got is None:
            return details
        return self.check_stderr(err, details) or self.check_outputs(got, details)

    def check_refused(self, details, tag):
        status = int(details[1].split(": ")[1])
        if status != self.case.expect_exit:
            return details + [f"expected exit status {self.case.expect_exit}"]
        left = [p for p in os.listdir(self.dir) if p.startswith(tag)]
        return details + [f"output left behind: {left}"] if left else None

    def direction_b(self):
        """axc's seeded weights into the twin.  Returns None or failure details."""
        got, details, _ = self.run_axc("seed", ["--interp", "--seed=7", "--save-weights=w2.safetensors"])
        if got is None:
            return details
        try:
            saved = safetensors_io.read(os.path.join(self.dir, "w2.safetensors"))
        except (OSError, ValueError) as e:
            return details + [f"cannot read w2.safetensors: {e}"]
        own = self.twin.state_dict()
        state = {k: torch.from_numpy(v) for k, v in saved.items()}
        for key in own:  # BatchNorm's counter is not a parameter of the model
            if key.endswith("num_batches_tracked") and key not in state:
                state[key] = own[key]
        try:
            self.twin.load_state_dict(state, strict=True)
        except RuntimeError as e:
            return details + ["load_state_dict(strict=True): " + str(e).replace("\n", " ")]
        return self.check_outputs(got, details)


def run_case(case):
    """Returns [(check name, None or details)] for one case."""
    workdir = tempfile.mkdtemp(prefix="axc_torch_")
    try:
        runner = Runner(case, workdir)
        checks = {"weights": lambda: runner.direction_a(False),
                  "interp": lambda: runner.direction_a(True),
                  "seed": runner.direction_b}
        wanted = {"A": "weights", "interp": "interp", "B": "seed"}
        return [(wanted[d], checks[wanted[d]]()) for d in case.directions]
    except Exception as e:  # a broken twin or file is a failure of this case only
        return [("setup", [f"{type(e).__name__}: {e}"])]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(patterns):
    if not os.access(AXC, os.X_OK):
        print(f"FAIL: torch: axc binary not found at {AXC}")
        return 1
    selected = [c for c in C.all_cases(ROOT) if not patterns or any(p in c.name for p in patterns)]
    failed = 0
    with ThreadPoolExecutor(int(os.environ.get("AXC_TORCH_JOBS", "0")) or os.cpu_count() or 2) as pool:
        for case, results in zip(selected, pool.map(run_case, selected)):
            for check, details in results:
                print(f"{'FAIL' if details else 'PASS'}: torch:{case.name}:{check}")
                for line in details or []:
                    print("  " + line)
                failed += bool(details)
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
