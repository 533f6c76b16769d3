"""The op corpus's one differential runner (tests/ops/README.md).

For every tests/ops/*.ax case: make its inputs from its `# >>>` comment block,
run the reference interpreter (`axc run --interp -O0`, the oracle), then run the
same case, inputs and seeded weights on every target of TARGETS at every
optimisation level of the case, and compare each with the interpreter.  The
interpreter itself is checked against the case's PyTorch expression (`torch`
row), so the oracle has an oracle that shares nothing with axc.  A full run
also checks that every op of ir/ops.def occurs in some case (`ops coverage`).

Prints `PASS: ops <target>/<case>`, `FAIL: ...` (details indented by two
spaces) or `SKIP: ops <target>/<case> (reason)`: a target whose back end,
toolchain or device is absent, or a case marked `# >>> xfail`.
Environment: AXC (the axc binary), AXC_ROOT, CC (the C target's compiler),
AXC_OPS_JOBS (cases run at once; default: the number of cores).
Arguments: case names (or parts of names) to run; default all."""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.environ.get("AXC_ROOT", os.path.join(HERE, "..", "..")))
AXC = os.environ.get("AXC", os.path.join(ROOT, "build", "bin", "axc"))
TIMEOUT_S = 300
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
STRICT = "-Wall -Wextra -Wpedantic -Werror"   # the C target builds every case warning-free

# ---- the corpus format ---------------------------------------------------------

NP_DTYPES = {"Float32": np.float32, "f32": np.float32, "Float64": np.float64, "f64": np.float64,
             "Int32": np.int32, "i32": np.int32, "Int64": np.int64, "i64": np.int64,
             "Int8": np.int8, "i8": np.int8}
SPECIALS = {"0": 0.0, "-0": -0.0, "nan": np.nan, "inf": np.inf, "-inf": -np.inf}


@dataclass
class InputSpec:
    name: str
    dtype: type
    shape: tuple
    lo: float = -3.0
    hi: float = 3.0
    specials: list = field(default_factory=list)


@dataclass
class Case:
    name: str
    path: str
    seed: int
    inputs: list                      # InputSpec, signature order
    rtol: float = 1e-5
    atol: float = 1e-6
    torch_rtol: float = None          # interp vs PyTorch; default rtol/atol
    torch_atol: float = None
    opts: tuple = ("-O0", "-O2")
    flags: list = field(default_factory=list)
    torch: str = ""                   # Python statements binding every output name
    xfail: dict = field(default_factory=dict)   # target ("" = all) -> reason


def parse_tol(text):
    """`1e-5` (relative and absolute) or `rel=1e-5 abs=1e-7`."""
    words = dict(w.split("=", 1) if "=" in w else ("both", w) for w in text.split())
    both = float(words.get("both", 1e-5))
    return float(words.get("rel", both)), float(words.get("abs", words.get("both", both / 10)))


def parse_signature(text):
    """Input names, dtypes and shapes of the first model's signature."""
    consts = {m[0]: int(m[1]) for m in re.findall(r"^\s*const\s+(\w+)\s*=\s*(-?\d+)", text, re.M)}
    head = re.search(r"@axiom[^(]*\(([^)]*)\)", text)
    specs = []
    for name, dtype, dims in re.findall(r"(\w+)::(\w+)\[([^\]]*)\]", head.group(1) if head else ""):
        shape = tuple(int(consts.get(d.strip(), d.strip())) for d in dims.split(","))
        specs.append(InputSpec(name, NP_DTYPES[dtype], shape))
    return specs


def parse_case(path):
    """A Case from an .ax file and its `# >>> key: value` lines."""
    name = os.path.splitext(os.path.basename(path))[0]
    with open(path) as f:
        text = f.read()
    case = Case(name, path, zlib.crc32(name.encode()) % 1000, parse_signature(text))
    by_name = {s.name: s for s in case.inputs}
    torch_lines = []
    for key, value in re.findall(r"^#\s*>>>\s*([\w -]+?)\s*:\s*(.*?)\s*$", text, re.M):
        words = key.split()
        if words[0] == "seed":
            case.seed = int(value)
        elif words[0] == "input":       # input NAME: range=LO,HI specials=nan,inf
            spec = by_name[words[1]]
            for item in value.split():
                k, v = item.split("=", 1)
                if k == "range":
                    spec.lo, spec.hi = (float(x) for x in v.split(","))
                elif k == "specials":
                    spec.specials = [SPECIALS[x] for x in v.split(",")]
                else:
                    raise ValueError(f"{path}: unknown input setting {k}")
        elif words[0] == "tol":
            case.rtol, case.atol = parse_tol(value)
        elif words[0] == "torch-tol":
            case.torch_rtol, case.torch_atol = parse_tol(value)
        elif words[0] == "opt":
            case.opts = tuple(value.split())
        elif words[0] == "flags":
            case.flags = value.split()
        elif words[0] == "torch":
            torch_lines.append(value)
        elif words[0] == "xfail":       # xfail [TARGET...]: reason
            for target in words[1:] or [""]:
                case.xfail[target] = value
        else:
            raise ValueError(f"{path}: unknown annotation '{key}'")
    case.torch = "\n".join(torch_lines)
    return case


def make_inputs(case):
    """{name: array}: uniform in [lo, hi] (integers: lo..hi inclusive), the
    specials first, from the case's seed."""
    rng = np.random.default_rng(case.seed)
    arrays = {}
    for s in case.inputs:
        if np.issubdtype(s.dtype, np.integer):
            a = rng.integers(int(s.lo), int(s.hi) + 1, size=s.shape).astype(s.dtype)
        else:
            a = rng.uniform(s.lo, s.hi, size=s.shape).astype(s.dtype)
            flat = a.reshape(-1)
            for i, v in enumerate(s.specials[:flat.size]):
                flat[i] = v
        arrays[s.name] = a
    return arrays


# ---- comparing -------------------------------------------------------------------

def compare(got, ref, rtol, atol):
    """None when got matches ref: same dtype and shape, NaN where ref is NaN,
    equal infinities, else |got-ref| <= atol + rtol*|ref|.  Else a reason."""
    if got.dtype != ref.dtype or got.shape != ref.shape:
        return f"{got.dtype}{list(got.shape)}, expected {ref.dtype}{list(ref.shape)}"
    g, r = got.astype(np.float64).reshape(-1), ref.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        return report(g, r, rtol, atol)


def report(g, r, rtol, atol):
    """compare() on flat float64 arrays."""
    nan_r, nan_g = np.isnan(r), np.isnan(g)
    inf = np.isinf(r) | np.isinf(g)
    bad = (nan_r != nan_g) | (inf & ~nan_r & ~nan_g & (g != r))
    finite = ~nan_r & ~nan_g & ~inf
    bad |= finite & ~(np.abs(g - r) <= atol + rtol * np.abs(r))
    if not bad.any():
        return None
    where = np.flatnonzero(bad)
    shown = ", ".join(f"[{i}] {g[i]:.9g} vs {r[i]:.9g}" for i in where[:4])
    return f"{len(where)} of {r.size} values differ (rtol {rtol:g}, atol {atol:g}): {shown}"


def compare_all(got, ref, rtol, atol):
    """Details of every output that differs ([] when all agree)."""
    problems = [f"outputs {sorted(got)}, expected {sorted(ref)}"] if sorted(got) != sorted(ref) else []
    for name in sorted(set(got) & set(ref)):
        reason = compare(got[name], ref[name], rtol, atol)
        if reason:
            problems.append(f"{name}: {reason}")
    return problems


# ---- running axc -------------------------------------------------------------------

def axc(workdir, args, env=None):
    """(exit status, stderr, command) of one axc call in workdir."""
    cmd = [AXC, *args]
    try:
        done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True,
                              timeout=TIMEOUT_S, env=env)
        return done.returncode, done.stderr, shlex.join(cmd)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {TIMEOUT_S} s", shlex.join(cmd)


def run_model(case, workdir, tag, extra):
    """`axc run` of the case with its inputs and seeded weights, outputs under
    workdir/tag.  Returns ({output name: array} or None, details)."""
    out = os.path.join(workdir, tag)
    os.makedirs(out)
    inputs = [a for s in case.inputs for a in ("--input", f"{s.name}={s.name}.npy")]
    rc, err, cmd = axc(workdir, ["run", case.path, f"--seed={case.seed}", *case.flags, *extra,
                                 *inputs, "--output-dir", out])
    details = [f"command: {cmd}", f"exit status: {rc}"] + [f"stderr: {l}" for l in err.splitlines()[:10]]
    if rc != 0:
        return None, details
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out) if f.endswith(".npy")}, details


# ---- targets -------------------------------------------------------------------------
# One row per back end.  probe() runs once and returns None (available) or why
# not; args(opt) are the extra `axc run` arguments of one run on that target.
# A new back end plugs in by adding a row (and, if `axc run` cannot run it yet,
# a probe that says so).

PROBE_AX = "@axiom probe(x::Float32[1, 3]) begin\n    relu\nend\n"


def backend_missing(target, suffix):
    """None if `axc --target=<target>` compiles a tiny model, else why not."""
    d = tempfile.mkdtemp(prefix="axc_ops_probe_")
    try:
        with open(os.path.join(d, "probe.ax"), "w") as f:
            f.write(PROBE_AX)
        rc, err, _ = axc(d, ["probe.ax", f"--target={target}", "-o", "probe" + suffix])
        said = err.strip().splitlines()[-1] if err.strip() else f"exit status {rc}"
        return None if rc == 0 else f"axc --target={target}: {said.replace('axc: error: ', '').split(';')[0]}"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def tool_missing(*names):
    """None if one of the programs is on PATH, else a reason."""
    return None if any(shutil.which(n) for n in names) else f"no {' or '.join(names)}"


def cc_words():
    return os.environ.get("CC") or "cc"


def probe_c():
    return tool_missing(cc_words().split()[0]) or backend_missing("c", ".c")


def probe_cuda():
    return backend_missing("cuda", ".cu") or tool_missing("nvcc") or \
        (None if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
         else "no CUDA device")


def probe_hip():
    return backend_missing("hip", ".hip") or tool_missing("hipcc") or \
        (None if shutil.which("rocminfo") and subprocess.run(["rocminfo"], capture_output=True).returncode == 0
         else "no HIP device")


def probe_llvm():
    return backend_missing("llvm", ".ll") or tool_missing("llvm-config", "clang")


TARGETS = [
    # name, probe, `axc run` arguments at one -O level.  The interpreter row
    # checks it on the optimised (fused) graph against itself at -O0.
    ("interp", lambda: None, lambda opt: [opt, "--interp"]),
    ("c", probe_c, lambda opt: [opt, "--target=c", f"--cc={cc_words()} {STRICT}"]),
    ("cuda", probe_cuda, lambda opt: [opt, "--target=cuda"]),
    ("hip", probe_hip, lambda opt: [opt, "--target=hip"]),
    ("llvm", probe_llvm, lambda opt: [opt, "--target=llvm"]),
]


def torch_missing():
    try:
        import torch  # noqa: F401
        return None
    except ImportError:
        return "no PyTorch"


# ---- one case ------------------------------------------------------------------------

def torch_reference(case, workdir, arrays):
    """The case's PyTorch statements on its inputs and the interpreter's weights.
    Returns ({output: array} or None, details)."""
    import torch
    import torch.nn.functional as F
    import safetensors_io   # tests/torch's reader, independent of axc
    weights = os.path.join(workdir, "w.safetensors")
    env = {"torch": torch, "F": F, "np": np,
           "P": {k: torch.from_numpy(v) for k, v in safetensors_io.read(weights).items()}
           if os.path.exists(weights) else {},
           "nchw": lambda t: t.permute(0, 3, 1, 2), "nhwc": lambda t: t.permute(0, 2, 3, 1)}
    env.update({k: torch.from_numpy(v.copy()) for k, v in arrays.items()})
    before = set(env)
    try:
        with torch.no_grad():
            exec(case.torch, env)
    except Exception as e:  # a broken reference fails this case only
        return None, [f"torch: {type(e).__name__}: {e}"]
    return {k: v.detach().numpy() for k, v in env.items()
            if k not in before and isinstance(v, torch.Tensor)}, []


def run_case(case, targets):
    """[(line, details)] for one case on every target."""
    lines = []
    workdir = tempfile.mkdtemp(prefix=f"axc_ops_{case.name}_")
    try:
        arrays = make_inputs(case)
        for name, a in arrays.items():
            np.save(os.path.join(workdir, name + ".npy"), a)
        ref, details = run_model(case, workdir, "interp", ["--interp", "-O0", "--save-weights=w.safetensors"])
        if ref is None:
            return [(f"FAIL: ops interp/{case.name}", details)]
        lines += check_torch(case, workdir, arrays, ref)
        for target, missing, args in targets:
            if missing:
                lines.append((f"SKIP: ops {target}/{case.name} ({missing})", None))
                continue
            for opt in case.opts:
                if target == "interp" and opt == "-O0":
                    continue
                label = f"{target}{'' if opt == '-O2' else opt}/{case.name}"
                got, details = run_model(case, workdir, f"{target}{opt}", args(opt))
                problems = details if got is None else compare_all(got, ref, case.rtol, case.atol)
                if problems and got is not None:
                    problems = details[:1] + problems
                lines.append(outcome(case, target, label, problems))
        return lines
    except Exception as e:  # a broken case file fails this case only
        return lines + [(f"FAIL: ops {case.name}", [f"{type(e).__name__}: {e}"])]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def outcome(case, target, label, problems):
    """(line, details) of one check; an `xfail` case that fails is a SKIP, one
    that passes is a FAIL (so the mark is removed once the bug is fixed)."""
    xfail = case.xfail.get(target, case.xfail.get(""))
    if not xfail:
        return (f"{'FAIL' if problems else 'PASS'}: ops {label}", problems)
    if problems:
        return (f"SKIP: ops {label} (xfail: {xfail})", None)
    return (f"FAIL: ops {label}", [f"marked xfail ({xfail}) but it passes: remove the mark"])


def check_torch(case, workdir, arrays, ref):
    """The `torch` row: the interpreter against the case's PyTorch expression."""
    label = f"torch/{case.name}"
    why = TORCH_MISSING or ("" if case.torch else "the case has no torch reference")
    if why:
        return [(f"SKIP: ops {label} ({why})", None)]
    want, details = torch_reference(case, workdir, arrays)
    if want is None:
        return [(f"FAIL: ops {label}", details)]
    want = {k: v for k, v in want.items() if k in ref}
    rtol = case.torch_rtol if case.torch_rtol is not None else case.rtol
    atol = case.torch_atol if case.torch_atol is not None else case.atol
    # integer results (argmax's indices) must keep PyTorch's integer dtype
    problems = [f"{k}: {ref[k].dtype}, PyTorch gives {v.dtype}" for k, v in want.items()
                if np.issubdtype(v.dtype, np.integer) and ref[k].dtype != v.dtype]
    problems += compare_all(ref, {k: v.astype(ref[k].dtype) for k, v in want.items()}, rtol, atol)
    return [outcome(case, "torch", label, problems)]


TORCH_MISSING = None


def ops_used(case):
    """The IR op names of the case at -O0 and -O2 (`axc --emit=ir`)."""
    used = set()
    for opt in ("-O0", "-O2"):
        done = subprocess.run([AXC, case.path, "--emit=ir", opt, "-w", *case.flags],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
        used |= set(re.findall(r"^\s*%\d+ = (\w+)", done.stdout, re.M))
    return used


def check_coverage(cases):
    """One line: every op of ir/ops.def occurs in some case (at -O0 or -O2)."""
    with open(os.path.join(ROOT, "ir", "ops.def")) as f:
        defined = re.findall(r"^OP\((\w+)\s*,", f.read(), re.M)
    used = set()
    for case in cases:
        used |= ops_used(case)
    # these occur only in training graphs (passes/pass_grad.c): the train suite
    # checks them against PyTorch autograd and finite differences
    training_only = {"unary_grad", "conv_grad_weight", "pool_grad", "slice_grad", "embedding_grad", "dropout"}
    missing = [op for op in defined if op not in used and op not in training_only]
    name = "ops coverage: every op of ir/ops.def occurs in a case"
    if missing:
        return f"FAIL: {name}", [f"no case uses: {' '.join(missing)}"]
    return f"PASS: {name}", []


def main(patterns):
    global TORCH_MISSING
    if not os.access(AXC, os.X_OK):
        print(f"FAIL: ops: axc binary not found at {AXC}")
        return 1
    paths = sorted(os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".ax"))
    cases = []
    for p in paths:
        if patterns and not any(x in os.path.basename(p) for x in patterns):
            continue
        try:
            cases.append(parse_case(p))
        except (ValueError, KeyError, AttributeError) as e:
            print(f"FAIL: ops {os.path.basename(p)}: bad annotation\n  {e}")
    TORCH_MISSING = torch_missing()
    if not TORCH_MISSING:
        import torch
        torch.set_num_threads(1)
    targets = [(name, probe(), args) for name, probe, args in TARGETS]
    jobs = int(os.environ.get("AXC_OPS_JOBS", "0")) or os.cpu_count() or 2
    failed = 0
    if not patterns:
        line, details = check_coverage(cases)
        print(line)
        for d in details:
            print("  " + d)
        failed += line.startswith("FAIL")
    with ThreadPoolExecutor(jobs) as pool:
        for lines in pool.map(lambda c: run_case(c, targets), cases):
            for line, details in lines:
                print(line)
                for d in details or []:
                    print("  " + d)
                failed += line.startswith("FAIL")
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
