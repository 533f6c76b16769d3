"""Float16/BFloat16 suite (docs/precision.md): every example model and the op
corpus compiled with --dtype=Float16 and --dtype=BFloat16, checked three ways.

Examples (tests/torch/cases.py EXAMPLES, their PyTorch twins, random weights):
  torch    axc at the half dtype == the twin at that dtype: for BFloat16
           PyTorch's own bf16 (twin.to(torch.bfloat16)); PyTorch 1.13 has no
           CPU Float16 kernels, so for Float16 the twin computes in float32
           on fp16-rounded weights and input with every module's output
           rounded to fp16 (forward hooks): fp16 storage, float compute.
           The weights go in as F16/BF16 safetensors (loaded directly).
  isa      the same build run under portable|avx2|avx512 (axrt_set_isa, isa_run.py: each dispatch
           path the CPU has: portable C, F16C, AVX-512 + vdpbf16ps) == the
           default run within the same tolerance.
  f32      the error against the Float32 model (F32 weights, converted by
           axc with round-to-nearest-even) is printed and must stay within
           the bound below.
Op corpus (tests/ops/*.ax): the generated C at the half dtype == the
reference interpreter at that dtype (it rounds every node's result to the
format), and == the Float32 interpreter within the bound.

Tolerances.  With u the unit roundoff (2^-11 Float16, 2^-8 BFloat16) every
stored tensor carries a relative error of at most u; accumulation is in
float (u32 = 2^-24), so a length-K dot product adds at most K*u32 relative,
below 1e-3*u for the K <= 3072 here.  Two correct implementations of the
same half model can round one intermediate differently (one ulp = 2u) and
pass that on; over L rounding stages on the longest path the difference,
measured against the output's scale (max |ref|: sums cancel, so an
element-wise relative bound would not hold), stays below 2u*(L+1).  Against
Float32 the half model's own rounding enters at every stage too (the
weights' and the activations', 2u per stage) on top of that: 4u*(L+1).
Op cases have at most three rounding stages (input, op, output cast):
6u against the interpreter at the same dtype, and 120u = 4u*3*10 against
Float32, 10 being the condition number |x f'(x) / f(x)| the corpus reaches
relative to the output's scale (exp over [-90, 90]: 90u at its largest
output).
Prints `PASS: half ...` / `FAIL: ...` lines; `half error vs Float32` lines
(with --table, the table of docs/precision.md) follow the
results.  Environment: AXC, AXC_ROOT; other arguments select cases whose
name contains any of them."""

import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.environ.get("AXC_ROOT", os.path.join(HERE, "..", "..")))
AXC = os.path.abspath(os.environ.get("AXC", os.path.join(ROOT, "build", "bin", "axc")))
for sub in ("tests/torch", "tests/ops", "python"):
    sys.path.insert(0, os.path.join(ROOT, sub))
import cases as C  # noqa: E402
import axc_torch  # noqa: E402
from twins import randomise  # noqa: E402
import run as ops  # noqa: E402  (tests/ops/run.py)

ops.AXC = AXC

TIMEOUT_S = 600
torch.set_num_threads(1)
UNIT = {"Float16": 2.0 ** -11, "BFloat16": 2.0 ** -8}
LARGEST = {"Float16": 65504.0, "BFloat16": 3.3895e38}  # beyond: infinity in the format
TORCH_DTYPE = {"Float16": torch.float16, "BFloat16": torch.bfloat16}
ST_SUFFIX = {"Float16": "f16", "BFloat16": "bf16"}
ISAS = ("portable", "avx2", "avx512")
# rounding stages on the longest path (layers and the ops between them) and
# gain G of each example
STAGES = {"mlp": 4, "r1_mlp_b1": 4, "r2_mlp_b32": 4, "r3_resnet_block": 8, "r4_bert_layer": 16,
          "r5_layernorm": 2, "r6_softmax": 2, "r7_depthwise": 2, "lenet5": 12, "mobilenetv2_block": 9, "gpt_block": 14,
          "gru_kws": 101}  # 49 steps of each of 2 GRU layers, a slice, the dense


def axc(workdir, args, env=None):
    cmd = [AXC, *args]
    try:
        done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=TIMEOUT_S,
                              env=env)
        return done.returncode, done.stderr, " ".join(cmd)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {TIMEOUT_S} s", " ".join(cmd)


def build_shared(work, sub, args):
    """`axc ARGS -o SUB/model.c`, then SUB/model.so built as `axc run` builds
    it (compiler/run.c: axc_compile_shared; axrt_set_isa and axrt_isa_name kept for isa_run.py)."""
    d = os.path.join(work, sub)
    os.makedirs(d, exist_ok=True)
    rc, err, cmd = axc(work, [*args, "-o", os.path.join(sub, "model.c")])
    if rc:
        return rc, err, cmd
    home = os.environ.get("AXC_BUILD", os.path.dirname(os.path.dirname(AXC)))
    cc = [*os.environ.get("CC", "cc").split(), "-std=c99", "-O2", "-fPIC", "-shared", "-o",
          os.path.join(d, "model.so"), os.path.join(d, "model.c"), f"-I{home}/include",
          "-Wl,-u,axrt_set_threads", "-Wl,-u,axrt_set_isa", "-Wl,-u,axrt_isa_name", f"{home}/lib/libaxrt.a", "-lm", "-lpthread"]
    done = subprocess.run(cc, capture_output=True, text=True, timeout=TIMEOUT_S)
    return done.returncode, done.stderr, " ".join(cc)


def scaled_error(got, ref):
    """max |got - ref| / max(1, max |ref|), inf on a shape mismatch or NaN."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.shape != ref.shape or np.isnan(got).any() != np.isnan(ref).any():
        return float("inf")
    finite = np.isfinite(ref)
    if not finite.any():
        return 0.0
    err = np.max(np.abs(got[finite] - ref[finite]))
    return float(err / max(1.0, float(np.max(np.abs(ref[finite])))))


def line(ok, name, details=(), figure=""):
    print(f"{'PASS' if ok else 'FAIL'}: half {name}{f' ({figure})' if figure else ''}")
    for d in ([] if ok else details):
        print("  " + d)
    return 0 if ok else 1


# ---- examples ------------------------------------------------------------------------

def half_twin_output(twin, xs, dtype):
    """The twin's output at dtype (see the module doc for Float16)."""
    tdt = TORCH_DTYPE[dtype]
    with torch.no_grad():
        if dtype == "BFloat16":
            model = twin.to(tdt)
            out = model(*[x.to(tdt) for x in xs]).float()
            twin.float()
            return out.numpy()
        state = {k: v.clone() for k, v in twin.state_dict().items()}
        for v in twin.state_dict().values():
            if v.is_floating_point():
                v.copy_(v.to(tdt).float())
        hooks = [m.register_forward_hook(lambda m, i, o: o.to(tdt).float() if torch.is_tensor(o) else o)
                 for m in twin.modules() if not list(m.children())]
        try:
            out = twin(*[x.to(tdt).float() for x in xs]).to(tdt).float()
        finally:
            for h in hooks:
                h.remove()
            twin.load_state_dict(state)
        return out.numpy()


def run_example(name, dtypes, table):
    twin_fn, inputs, _ = C.EXAMPLES[name]
    failed = 0
    work = tempfile.mkdtemp(prefix="axc_half_")
    try:
        seed = zlib.crc32(name.encode())
        rng = np.random.default_rng(seed)
        args = []
        xs = []
        for n, (shape, _kind) in inputs.items():
            x = rng.standard_normal(shape).astype(np.float32)
            np.save(os.path.join(work, n + ".npy"), x)
            args += ["--input", f"{n}={n}.npy"]
            xs.append(torch.from_numpy(x))
        torch.manual_seed(seed)
        twin = twin_fn()
        randomise(twin, torch.Generator().manual_seed(seed))
        twin.eval()
        shutil.copy(os.path.join(ROOT, "examples", name + ".ax"), work)
        axc_torch.save_safetensors(twin.state_dict(), os.path.join(work, "w.safetensors"))
        rc, err, cmd = axc(work, ["run", name + ".ax", "--weights=w.safetensors", *args, "--output", "f32.npy"])
        if rc:
            return line(False, f"{name}: Float32 run", [cmd, err[-400:]])
        f32 = np.load(os.path.join(work, "f32.npy"))
        for dtype in dtypes:
            failed += check_example_dtype(name, dtype, twin, xs, args, work, f32, table)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return failed


def check_example_dtype(name, dtype, twin, xs, args, work, f32, table):
    tdt, u, stages = TORCH_DTYPE[dtype], UNIT[dtype], STAGES[name]
    wfile = f"w_{ST_SUFFIX[dtype]}.safetensors"
    state = {k: (v.to(tdt) if v.is_floating_point() else v) for k, v in twin.state_dict().items()}
    axc_torch.save_safetensors(state, os.path.join(work, wfile))
    rc, err, cmd = build_shared(work, "model", [name + ".ax", f"--dtype={dtype}", f"--weights={wfile}"])
    if rc:
        return line(False, f"{name} {dtype}: axc -o and cc", [cmd, err[-400:]])
    # the default instruction set, then each one forced, on the one build (isa_run.py)
    done = subprocess.run([sys.executable, os.path.join(HERE, "isa_run.py"), os.path.join(work, "model"), *ISAS],
                          cwd=work, capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode:
        return line(False, f"{name} {dtype}: isa_run.py", [cmd, done.stderr[-400:]])
    got = np.load(os.path.join(work, "model", "default.npy"))
    ref = half_twin_output(twin, xs, dtype)
    bound_same = 2 * u * (stages + 1)
    e_torch = scaled_error(got, ref)
    failed = line(e_torch <= bound_same, f"torch/{name} {dtype}",
                  [cmd, f"scaled error vs PyTorch {dtype} {e_torch:.3g} > {bound_same:.3g}"],
                  f"scaled error {e_torch:.2e}, bound {bound_same:.2e}")
    for isa in ISAS:
        e_isa = scaled_error(np.load(os.path.join(work, "model", f"{isa}.npy")), got)
        failed += line(e_isa <= bound_same, f"isa {isa}/{name} {dtype}",
                       [cmd, f"scaled error vs the default path {e_isa:.3g} > {bound_same:.3g}"])
    # Float32 weights converted by axc (round to nearest even): the same model,
    # so the same generated C byte for byte (hence the same output)
    os.makedirs(os.path.join(work, "conv"), exist_ok=True)
    rc, err, cmd = axc(work, [name + ".ax", f"--dtype={dtype}", "--weights=w.safetensors",
                              "-o", os.path.join("conv", "model.c")])
    same = rc == 0 and all(filecmp.cmp(os.path.join(work, "conv", f), os.path.join(work, "model", f), shallow=False)
                           for f in ("model.c", "model.h"))
    failed += line(same, f"f32-weights/{name} {dtype}",
                   [cmd, "F32 weights converted by axc differ from F16/BF16 weights rounded by PyTorch"])
    bound_f32 = 4 * u * (stages + 1)
    e_f32 = scaled_error(got, f32)
    rel = float(np.max(np.abs(got - f32)) / max(1e-30, float(np.max(np.abs(f32)))))
    table.append((name, dtype, e_f32, rel, bound_f32))
    failed += line(e_f32 <= bound_f32, f"f32/{name} {dtype}",
                   [f"scaled error vs the Float32 model {e_f32:.3g} > {bound_f32:.3g}"],
                   f"scaled error {e_f32:.2e}, bound {bound_f32:.2e}")
    return failed


# ---- an ONNX model (parameters that come with the model, as Float32) -------------------

def run_onnx(dtypes):
    """A Linear+ReLU+Linear exported by torch.onnx: its Float32 initializers
    are converted to the half dtype by axc; the output must stay within the
    bound of the Float32 run (L = 4)."""
    failed = 0
    work = tempfile.mkdtemp(prefix="axc_half_onnx_")
    try:
        torch.manual_seed(3)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval()
        x = torch.randn(2, 16)
        try:
            torch.onnx.export(model, x, os.path.join(work, "m.onnx"), input_names=[ONNX_INPUT])
        except Exception as e:  # no ONNX export in this PyTorch
            print(f"SKIP: half onnx (torch.onnx.export: {type(e).__name__})")
            return 0
        np.save(os.path.join(work, "x.npy"), x.numpy())
        rc, err, cmd = axc(work, ["run", "m.onnx", "--output", "f32.npy", "--input", f"{ONNX_INPUT}=x.npy"])
        if rc:
            return line(False, "onnx Float32", [cmd, err[-400:]])
        f32 = np.load(os.path.join(work, "f32.npy"))
        for dtype in dtypes:
            rc, err, cmd = axc(work, ["run", "m.onnx", f"--dtype={dtype}", "--output", "h.npy",
                                      "--input", f"{ONNX_INPUT}=x.npy"])
            if rc:
                failed += line(False, f"onnx {dtype}", [cmd, err[-400:]])
                continue
            e, bound = scaled_error(np.load(os.path.join(work, "h.npy")), f32), 4 * UNIT[dtype] * 5
            failed += line(e <= bound, f"onnx {dtype}", [cmd, f"scaled error {e:.3g} > {bound:.3g}"],
                           f"scaled error {e:.2e}, bound {bound:.2e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return failed


ONNX_INPUT = "x"


# ---- the op corpus ---------------------------------------------------------------------

def run_op_case(case, dtypes):
    failed = 0
    work = tempfile.mkdtemp(prefix=f"axc_half_{case.name}_")
    try:
        arrays = ops.make_inputs(case)
        for n, a in arrays.items():
            np.save(os.path.join(work, n + ".npy"), a)
        f32, details = ops.run_model(case, work, "f32", ["--interp", "-O0"])
        if f32 is None:
            return line(False, f"ops/{case.name}: Float32 interpreter", details)
        for dtype in dtypes:
            u = UNIT[dtype]
            ref, details = ops.run_model(case, work, f"interp_{dtype}", ["--interp", "-O0", f"--dtype={dtype}"])
            got, gdetails = ops.run_model(case, work, f"c_{dtype}",
                                          [f"--dtype={dtype}", f"--cc={ops.cc_words()} {ops.STRICT}"])
            if ref is None or got is None:
                failed += line(False, f"ops/{case.name} {dtype}", (details if ref is None else gdetails))
                continue
            problems = compare_scaled(got, ref, 6 * u, np.inf)
            failed += line(not problems, f"ops/{case.name} {dtype}", gdetails[:1] + problems)
            problems = compare_scaled(got, f32, 120 * u, LARGEST[dtype])
            failed += line(not problems, f"ops-f32/{case.name} {dtype}", gdetails[:1] + problems)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return failed


def compare_scaled(got, ref, bound, limit):
    """Problems of each output whose NaN pattern or scaled error differs;
    elements where ref is infinite or beyond limit (the format's range: the
    half model overflows there) are left out."""
    problems = []
    for name in sorted(ref):
        if name not in got:
            problems.append(f"{name}: missing")
            continue
        g, r = got[name].astype(np.float64), ref[name].astype(np.float64)
        if g.shape != r.shape:
            problems.append(f"{name}: shape {g.shape} vs {r.shape}")
            continue
        if (np.isnan(g) != np.isnan(r)).any():
            problems.append(f"{name}: NaN in different places")
            continue
        out = np.isinf(r) | (np.abs(r) > limit)
        e = scaled_error(np.where(out, 0, g), np.where(out, 0, r))
        if e > bound:
            problems.append(f"{name}: scaled error {e:.3g} > {bound:.3g}")
    return problems


def main(patterns):
    show_table = "--table" in patterns
    patterns = [p for p in patterns if p != "--table"]
    if not os.access(AXC, os.X_OK):
        print(f"FAIL: half: axc binary not found at {AXC}")
        return 1
    dtypes = ("Float16", "BFloat16")
    failed, table = 0, []
    for name in C.EXAMPLES:
        if not patterns or any(p in name for p in patterns):
            failed += run_example(name, dtypes, table)
    if not patterns or any("onnx" in p for p in patterns):
        failed += run_onnx(dtypes)
    for f in sorted(os.listdir(os.path.join(ROOT, "tests", "ops"))):
        if f.endswith(".ax") and (not patterns or any(p in f for p in patterns)):
            failed += run_op_case(ops.parse_case(os.path.join(ROOT, "tests", "ops", f)), dtypes)
    if table and show_table:
        # only on request: under tests/run.sh a suite prints only result lines
        print("  half error vs Float32 (max |half - f32| / max(1, max |f32|); relative to max |f32|; bound)")
        for name, dtype, e, rel, bound in table:
            print(f"    {name:18s} {dtype:8s} {e:9.2e} {rel:9.2e} {bound:9.2e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
