"""Suite `train`, part 3: `--ram` rematerialises the training step (docs/training.md, issue 19).

For the MLP, LeNet-5 and the transformer block of examples/ (their batch set for
training; the block also with --clip-grad-norm) and examples/resmlp50.ax, with the
loss and optimizer of MODELS:
  - `--ram=1` fails (exit 1, no output file) naming the smallest arena axc
    reaches and the node of peak pressure; at exactly that budget the step is
    written, its arena within it;
  - guard (no later pass hoists a copy back): the generated C holds one kernel
    per value --mem-report says it recomputed, by id, and its
    <NAME>_TRAIN_ARENA_BYTES is the reported peak with remat;
  - the generated step with and without --ram, built with the host's cc and run
    for STEPS steps (tests/train/step_main.c): every loss, every state tensor
    and the forward on the trained state print the same (%.9g: Float32 exact);
  - `axc train` with and without --ram: byte-identical --save-weights files;
  - LeNet-5's rematerialised step built for a Cortex-M4F runs under QEMU (where
    arm-none-eabi-gcc and qemu-system-arm exist, else SKIP), its weights within
    1e-5 of the host build's (step.py's firmware check).
A model where remat recomputes nothing would pass the comparisons trivially, so
every model but the MLP (whose peak is a weight gradient: it has nothing to
recompute) must recompute at least one value."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import run as tr  # noqa: E402
import step  # noqa: E402

AXC, ROOT, report = tr.AXC, step.ROOT, tr.report
STEPS = 4
# name, batch, loss, optimizer flags
MODELS = [("mlp", 4, "mse", ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
          ("lenet5", 4, "cross_entropy", ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
          ("gpt_block", 2, "mse", ["--optimizer=adam", "--lr=0.001"]),
          # clipping by norm holds every gradient to the step's end: another peak to recompute for
          ("gpt_block", 2, "mse", ["--optimizer=adam", "--lr=0.001", "--clip-grad-norm=0.5"]),
          ("resmlp50", 16, "mse", ["--optimizer=sgd", "--lr=0.0001"]),   # its random init diverges at 0.01
          ("deep_residual", 16, "mse", ["--optimizer=sgd", "--lr=1e-10"])]
HALF_PEAK = {"deep_residual"}   # also fits --ram at half the plain peak (checkpointing)
# inputs scaled down: 40 residual ReLU blocks at their random init grow a value ~1e6 times
INPUT_SCALE = {"deep_residual": 1e-5}


def with_batch(name, batch):
    """The example's (or this folder's) source with its input's batch (dim 0) set to batch."""
    path = f"{ROOT}/examples/{name}.ax"
    src = open(path if os.path.exists(path) else f"{os.path.dirname(__file__)}/{name}.ax").read()
    fixed = re.sub(r"(x::Float32\[)\d+", rf"\g<1>{batch}", src, count=1)
    assert "x::Float32[" in src, f"{name}: no input x"
    return fixed


def axc(*args):
    return subprocess.run([AXC, *args], capture_output=True, text=True)


def data(d, in_shape, out_shape, loss, scale=1.0):
    """STEPS batches of inputs and targets, as .npy files and as arrays."""
    rng = np.random.default_rng(5)
    shape = tuple(out_shape[1:])
    x = (scale * rng.standard_normal((STEPS * in_shape[0],) + tuple(in_shape[1:]))).astype(np.float32)
    if loss == "cross_entropy":
        t = rng.integers(0, shape[-1], (STEPS * out_shape[0],)).astype(np.int64)
    else:
        t = rng.standard_normal((STEPS * out_shape[0],) + shape).astype(np.float32)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/t.npy", t)
    return x, t


def write_harness(d, name, x, t, out_count):
    xt, tt = "float", "float" if t.dtype == np.float32 else "int64_t"
    up = name.upper()
    with open(f"{d}/step_data.h", "w") as f:
        f.write(f'#include "{name}.h"\n#define STEPS {STEPS}\n#define STATE_BYTES {up}_STATE_BYTES\n'
                f"#define STATE_INIT(st) {name}_state_init(st)\n" + step.c_array("x_data", xt, x, STEPS) +
                step.c_array("t_data", tt, t, STEPS) +
                f"#define TRAIN_STEP(st, s) {name}_train_step(st, x_data[s], t_data[s], NULL)\n"
                f"#define FORWARD_STATE(st, y) {name}_forward_state(st, x_data[0], y, NULL)\n"
                f"#define OUT_COUNT {out_count}\n#define STATE_TENSORS {up}_STATE_TENSORS\n"
                f"#define STATE_INFO {name}_state_tensors\n#define STATE_OFFSETS {name}_state_offsets\n")


def build_run(d, name, sub):
    os.makedirs(f"{d}/{sub}", exist_ok=True)
    for f in (f"{name}.c", f"{name}.h"):
        os.replace(f"{d}/{f}", f"{d}/{sub}/{f}")
    r = subprocess.run([*step.CC, *step.WARN, "-O1", "-I", f"{d}/{sub}", "-I", d, "-I", f"{step.BUILD}/include",
                        f"{step.HERE}/step_main.c", f"{d}/{sub}/{name}.c", f"{step.BUILD}/lib/libaxrt.a", "-lm",
                        "-o", f"{d}/{sub}/host"], capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr[-2000:]
    r = subprocess.run([f"{d}/{sub}/host"], capture_output=True, text=True)
    return (r.stdout if r.returncode == 0 else None), r.stderr[-2000:]


def smallest_budget(d, label, model, flags):
    """--ram=1: exit 1, no file, the error naming the smallest arena and the peak's node."""
    r = axc("--train", model, *flags, "--ram=1", "-o", f"{d}/none.c")
    m = re.search(r"needs a (\d+)-byte arena, over the --ram budget of 1 bytes; peak pressure at %\d+ \w+", r.stderr)
    report(f"{label}: --ram=1 fails naming the smallest arena and the peak (no output file)",
           r.returncode == 1 and m is not None and not os.path.exists(f"{d}/none.c"), r.stderr[-1500:])
    return int(m.group(1)) if m else None


def half_peak(d, label, model, flags, smallest):
    """--ram at half the plain training peak fits (the budget the rest of the checks then use)."""
    plain = re.search(r"^training peak without remat: (\d+) bytes", axc("--train", model, *flags, "--mem-report",
                      "-o", f"{d}/plain.c").stdout, re.M)
    half = int(plain.group(1)) // 2 if plain else 0
    r = axc("--train", model, *flags, f"--ram={half}", "--mem-report", "-o", f"{d}/half.c")
    peak = re.search(r"^training peak with remat: (\d+) bytes", r.stdout, re.M)
    extra = re.search(r"^remat extra work: (\d+) FLOPs", r.stdout, re.M)
    ok = r.returncode == 0 and peak and int(peak.group(1)) <= half and smallest <= half
    report(f"{label}: --ram={half} (half the plain peak {plain and plain.group(1)}) fits: peak "
           f"{peak and peak.group(1)}, extra {extra and extra.group(1)} FLOPs", bool(ok), r.stderr[-1200:])
    return half if ok else smallest


def guard(label, rep, c_text, h_text, budget):
    """The copies --mem-report names are in the C, the arena is the one reported."""
    peak = re.search(r"^training peak with remat: (\d+) bytes", rep, re.M)
    listed = re.search(r"^  recomputed:(.*)$", rep, re.M)
    ids = re.findall(r"%(\d+) \w+ '", listed.group(1)) if listed else []
    in_c = re.findall(r"/\* %(\d+) \w+ \"[^\"]*\(recomputed\)\"", c_text)
    arena = re.search(r"_TRAIN_ARENA_BYTES \(\(size_t\)(\d+)\)", h_text)
    ok = peak and arena and int(arena.group(1)) == int(peak.group(1)) <= budget and sorted(ids) == sorted(in_c)
    report(f"{label}: the C recomputes what --mem-report lists ({len(ids)} values), arena {arena and arena.group(1)}"
           f" <= --ram={budget}", bool(ok), f"reported {ids}, in the C {in_c}, peak {peak and peak.group(1)}")
    return len(ids)


def firmware(d, name, label, host_out):
    """The rematerialised step (d/remat) on a Cortex-M4F under QEMU, as step.py runs its steps
    (under make test-asan, as there: its portable kernels on the host)."""
    objs = None
    if not step.SANITIZED:
        if not step.cross_tools():
            print(f"SKIP: {label}: Cortex-M4 under QEMU (arm-none-eabi-gcc or qemu-system-arm missing)")
            return
        os.makedirs(f"{d}/m4", exist_ok=True)
        objs = step.shared_runtime_m4(f"{d}/m4")
        if not objs:
            return
    shutil.copy(f"{d}/remat/{name}.c", f"{d}/m.c")
    shutil.copy(f"{d}/remat/{name}.h", f"{d}/{name}.h")
    shutil.copy(f"{d}/remat/host", f"{d}/host")
    step.firmware(d, label, step.parse(host_out)[0], {"objs": objs}, "4M")


def one_model(d, name, batch, loss, flags):
    label = f"train remat {name} (batch {batch}, {loss}, {' '.join(flags)})"
    model = f"{d}/{name}.ax"
    open(model, "w").write(with_batch(name, batch))
    common = ["--seed=1", f"--loss={loss}", *flags]
    budget = smallest_budget(d, label, model, common)
    if budget is None:
        return
    if name in HALF_PEAK:
        budget = half_peak(d, label, model, common, budget)
    r = axc("--train", model, *common, f"--ram={budget}", "--mem-report", "-o", f"{d}/{name}.c")
    if r.returncode:
        report(f"{label}: --ram={budget} (the smallest named) fits", False, r.stderr[-1500:])
        return
    count = guard(label, r.stdout, open(f"{d}/{name}.c").read(), open(f"{d}/{name}.h").read(), budget)
    if name != "mlp":
        report(f"{label}: values recomputed at the smallest budget", count > 0, r.stdout[-800:])
    header = open(f"{d}/{name}.h").read()
    ishape, oshape = ([int(v) for v in re.search(rf"{what} \S+ Float32\[([\d, ]+)\]", header).group(1).split(",")]
                      for what in ("input ", "output"))
    x, t = data(d, ishape, oshape, loss, INPUT_SCALE.get(name, 1.0))
    write_harness(d, name, x.reshape(STEPS, -1), t.reshape(STEPS, -1), int(np.prod(oshape)))
    remat_out, err = build_run(d, name, "remat")
    plain = axc("--train", model, *common, "-o", f"{d}/{name}.c")
    plain_out, err2 = build_run(d, name, "plain") if plain.returncode == 0 else (None, plain.stderr)
    same = remat_out is not None and remat_out == plain_out and "RESULT: PASS" in remat_out
    first = next((f"remat: {a}\nplain: {b}" for a, b in zip((remat_out or "").splitlines(),
                                                          (plain_out or "").splitlines()) if a != b), "")
    report(f"{label}: generated step with --ram={budget} and without, {STEPS} steps: bit-identical "
           f"losses, state and forward", same, "" if same else f"{first}\n{(err + err2)[-1500:]}")
    if same and name == "lenet5":
        firmware(d, name, f"{label} --ram={budget}", remat_out)
    saved = []
    for extra, out in (([], "plain"), ([f"--ram={budget}"], "remat")):
        r = axc("train", model, *common, *extra, "--input", f"x={d}/x.npy", "--target", f"{d}/t.npy",
                "--save-weights", f"{d}/{out}.safetensors")
        saved.append(open(f"{d}/{out}.safetensors", "rb").read() if r.returncode == 0 else r.stderr)
    report(f"{label}: axc train with --ram={budget} and without: identical --save-weights",
           isinstance(saved[0], bytes) and saved[0] == saved[1], str(saved[1])[-800:] if saved[0] != saved[1] else "")


def main():
    with tempfile.TemporaryDirectory() as d:
        for name, batch, loss, flags in MODELS:
            one_model(d, name, batch, loss, flags)


if __name__ == "__main__":
    main()
