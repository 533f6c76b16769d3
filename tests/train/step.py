"""Suite `train`, part 2: the generated C training step (`axc --train`, docs/training.md).

For the small MLP of run.py (each optimizer configuration, three losses) and the
other models of run.py (BatchNorm with its running statistics, LayerNorm,
attention, embedding, mean pooling): the step is generated from the same
initial weights, built with the host's cc (-std=c99 -Wall -Wextra -Wpedantic
-Werror) against libaxrt and run for 20 steps on the same batches as PyTorch
(torch.optim; Lion from its formula) and as `axc train` on the reference
interpreter; every state tensor must match both within 1e-4 relative (the other
models, each under Adam: within ten times the distance at which PyTorch's own
Float32 training ends from its Float64 one, at least 1e-5), and the forward on
the trained state must match the trained PyTorch twin in eval mode.
Then, where arm-none-eabi-gcc and qemu-system-arm exist (else SKIP), the same
step built for a Cortex-M4F (examples/firmware's startup and linker script)
runs under QEMU and its weights match the host build's within 1e-5 relative."""
import copy
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import run as tr  # noqa: E402  (the twins, data, optimizers and oracle of `axc train`)
import safetensors_io  # noqa: E402

AXC = tr.AXC
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("AXC_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("AXC_BUILD", os.path.join(ROOT, "build"))
CC = shlex.split(os.environ.get("CC", "cc"))   # "cc -fsanitize=..." under make test-asan
# make test-asan: no Cortex-M4 builds and QEMU runs (no code of ours is
# instrumented there; make test runs them), the portable kernels on the host
SANITIZED = os.environ.get("AXC_TEST_SANITIZED") == "1"
M4 = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]
WARN = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
report = tr.report


def c_array(name, ctype, a, steps):
    rows = a.reshape(steps, -1)
    fmt = (lambda v: float.hex(float(v))) if ctype == "float" else (lambda v: f"{int(v)}")
    body = ",\n".join("{" + ", ".join(fmt(v) for v in row) + "}" for row in rows)
    return f"static const {ctype} {name}[{steps}][{rows.shape[1]}] = {{\n{body}}};\n"


def write_data(d, x, t, out_count, every_step=False):
    """step_main.c's step_data.h for model m; every_step: it also prints the state
    after each step (as "<tensor>@<step>[i] v": parse() keys "<tensor>@<step>")."""
    xt = "float" if x.dtype == np.float32 else "int64_t"
    tt = "float" if t.dtype == np.float32 else "int64_t"
    open(f"{d}/step_data.h", "w").write(
        ("#define EVERY_STEP 1\n" if every_step else "") +
        '#include "m.h"\n#define STEPS %d\n#define STATE_BYTES M_STATE_BYTES\n#define STATE_INIT(st) m_state_init(st)\n'
        "%s%s#define TRAIN_STEP(st, s) m_train_step(st, x_data[s], t_data[s], NULL)\n"
        "#define FORWARD_STATE(st, y) m_forward_state(st, x_data[0], y, NULL)\n#define OUT_COUNT %d\n"
        "#define STATE_TENSORS M_STATE_TENSORS\n#define STATE_INFO m_state_tensors\n"
        "#define STATE_OFFSETS m_state_offsets\n"
        % (tr.STEPS, c_array("x_data", xt, x, tr.STEPS), c_array("t_data", tt, t, tr.STEPS), out_count))


def parse(text):
    """The harness's printout: {tensor: flat values}, the forward's output, ok."""
    vals, out = {}, []
    for line in text.splitlines():
        m = re.match(r"^(\S+)\[(\d+)\] (\S+)$", line)
        if m and m.group(1) == "out":
            out.append(float(m.group(3)))
        elif m:
            vals.setdefault(m.group(1), []).append(float(m.group(3)))
    return {k: np.array(v) for k, v in vals.items()}, np.array(out), "RESULT: PASS" in text


def generate(d, src, init, loss, opt, flags):
    open(f"{d}/m.ax", "w").write(src)
    safetensors_io.write(f"{d}/init.safetensors", init)
    return subprocess.run([AXC, "--train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", f"--loss={loss}",
                           f"--optimizer={opt}", *flags, "-o", f"{d}/m.c"], capture_output=True, text=True)


def host_build(d):
    return subprocess.run([*CC, *WARN, "-O1", "-I", d, "-I", f"{BUILD}/include", f"{HERE}/step_main.c", f"{d}/m.c",
                           f"{BUILD}/lib/libaxrt.a", "-lm", "-o", f"{d}/host"], capture_output=True, text=True)


def run_host(d, portable=False):
    env = dict(os.environ, AXRT_ISA="portable") if portable else None
    r = subprocess.run([f"{d}/host"], capture_output=True, text=True, env=env)
    return r, parse(r.stdout)


def compare(got, ref, keys):
    return {k: tr.rel_err(got[k], np.asarray(ref[k]).reshape(-1)) for k in keys}


def one_case(d, label, src, twin, loss, opt, targs, flags, x, t, init, drift=False):
    """Generated step vs torch and vs axc train; returns the host's weights and the
    tolerance they were held to, or (None, None).
    drift: the tolerance is ten times the distance at which PyTorch's own Float32
    training ends from its Float64 one (run.py float32_reference, at least 1e-5),
    else 1e-4."""
    r = generate(d, src, init, loss, opt, flags)
    if r.returncode:
        report(f"{label}: axc --train", False, r.stderr)
        return None, None
    probe = copy.deepcopy(twin).eval()   # a forward in train() mode would move the running statistics
    write_data(d, x, t, probe(torch.from_numpy(x[:tr.BATCH])).detach().numpy().size)
    r = host_build(d)
    if r.returncode:
        report(f"{label}: cc -std=c99 -Wall -Wextra -Wpedantic -Werror", False, r.stderr[-3000:])
        return None, None
    res, (got, out, ok) = run_host(d)
    if res.returncode or not ok:
        report(f"{label}: host run", False, res.stdout[-2000:] + res.stderr[-2000:])
        return None, None
    keys = list(init)
    rr, interp = tr.axc_train(d, src, init, loss, opt, flags, x, t)
    if drift:
        ref, tol = tr.float32_reference(twin, loss, opt, targs, x, t, keys)
        twin.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in ref.items()})
    else:
        tr.torch_train(twin, loss, opt, targs, x, t, tr.STEPS)
        ref, tol = {k: v.detach().numpy() for k, v in twin.state_dict().items()}, 1e-4
    what = "10x PyTorch Float32's own drift from Float64, >= 1e-5" if drift else "1e-4"
    errs = {k: tr.rel_err(tr.comparable(k, got[k]), tr.comparable(k, np.asarray(ref[k]).reshape(-1))) for k in keys}
    moved = max(tr.rel_err(got[k], init[k].numpy().reshape(-1)) for k in keys)
    report(f"{label}: generated C vs PyTorch Float32 (20 steps, rel <= {what})",
           max(errs.values()) <= tol and moved > 1e-4 and set(got) == set(keys),
           f"relative errors {errs}, tolerance {tol:.3g}, moved {moved:.3g}, tensors {sorted(got)}")
    if rr.returncode:
        report(f"{label}: generated C vs axc train", False, rr.stderr)
    else:
        errs = {k: tr.rel_err(tr.comparable(k, got[k]), tr.comparable(k, np.asarray(interp[k]).reshape(-1)))
                for k in keys}
        report(f"{label}: generated C vs axc train (interpreter, rel <= {what})",
               max(errs.values()) <= tol, f"relative errors {errs}, tolerance {tol:.3g}")
    twin.eval()
    y = twin(torch.from_numpy(x[:tr.BATCH])).detach().numpy().reshape(-1)
    # the weights agree within 1e-4, so a deep model's outputs within a few times that
    tol = 1e-3 if drift else 1e-4
    report(f"{label}: forward on the trained state vs the trained twin (rel <= {tol:g})",
           out.shape == y.shape and tr.rel_err(out, y) <= tol, f"out {out[:6]} twin {y[:6]}")
    return got, tol


def mlp_cases(d, rng, fw):
    tr.BATCH = 4
    cases = [("cross_entropy", "relu", o) for o in tr.OPTIMIZERS]
    cases += [("mse", "tanh", tr.OPTIMIZERS[3]), ("bce_with_logits", "gelu", tr.OPTIMIZERS[1])]
    for loss, act, (opt, targs, flags) in cases:
        twin = tr.Twin(act)
        init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
        x, t = tr.make_data(rng, loss, tr.STEPS, np.float32)
        label = f"train step mlp {loss} {act} {opt} {' '.join(flags)}".strip()
        got, _ = one_case(d, label, tr.model_src(act, "Float32"), twin, loss, opt, targs, flags, x, t, init)
        if got is not None and fw and loss == "cross_entropy":   # each optimizer on the Cortex-M4
            firmware(d, label, got, fw)


def model_cases(d, rng, fw):
    """Every model of run.py under Adam (L2 weight decay, betas 0.8/0.99), against
    PyTorch's Float32 within ten times its own drift from Float64."""
    for name, src, twin_cls, (shape, kind), loss in tr.MODELS:
        tr.BATCH = shape[0]
        opt, targs, flags = tr.OPTIMIZERS[4]
        twin = twin_cls()
        init = {k: v.detach().clone() for k, v in twin.state_dict().items() if "num_batches" not in k}
        probe = tr.model_data(rng, shape, kind, (1, 1), "mse", 1, np.float32)[0]
        out_shape = copy.deepcopy(twin).eval()(torch.from_numpy(probe)).shape
        x, t = tr.model_data(rng, shape, kind, out_shape, loss, tr.STEPS, np.float32)
        label = f"train step {name} {opt} {' '.join(flags)}"
        got, tol = one_case(d, label, src.replace("DTYPE", "Float32"), twin, loss, opt, targs, flags, x, t, init,
                            drift=True)
        if got is not None and fw and name in ("batchnorm", "lenet5_bn"):
            firmware(d, label, got, fw, "4M" if name == "lenet5_bn" else "256K", tol)
    tr.BATCH = 4


def dropout_case(d, rng):
    """Dropout in the generated step: its masks come from the state's header (seed,
    step), as `axc train` draws them, so 20 steps of each give the same weights
    (rel <= 1e-4, as every model's generated step against the interpreter: Float32
    against Float64 round-off, which Adam's normalised steps carry into a bias at
    ~1e-5), and PyTorch with the same masks injected (run.py's DropNet) agrees;
    the forward on the state is inference (no mask, no 1/(1-p) scale): it equals the
    twin in eval mode with the generated step's weights."""
    tr.BATCH = 4
    src = tr.DROP_SRC.replace("P1", "0.5").replace("P2", "0.25").replace("DTYPE", "Float32")
    for opt, targs, flags in (("sgd", {"lr": 0.05}, ["--lr", "0.05"]), ("adam", {"lr": 0.01}, ["--lr", "0.01"])):
        label = f"train step dropout {opt}"
        flags = flags + ["--seed", "11"]
        twin = tr.DropNet(0.5, 0.25)
        init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
        x, t = tr.make_data(rng, "mse", tr.STEPS, np.float32)
        r = generate(d, src, init, "mse", opt, flags)
        if r.returncode:
            report(f"{label}: axc --train", False, r.stderr)
            continue
        write_data(d, x, t, tr.BATCH * tr.OUT)
        r = host_build(d)
        if r.returncode:
            report(f"{label}: cc -std=c99 -Wall -Wextra -Wpedantic -Werror", False, r.stderr[-3000:])
            continue
        res, (got, out, ok) = run_host(d)
        if res.returncode or not ok:
            report(f"{label}: host run", False, res.stdout[-2000:] + res.stderr[-2000:])
            continue
        rr, interp = tr.axc_train(d, src, init, "mse", opt, flags, x, t)
        if rr.returncode:
            report(f"{label}: generated C vs axc train", False, rr.stderr)
            continue
        errs = compare(got, interp, init)
        moved = max(tr.rel_err(got[k], init[k].numpy().reshape(-1)) for k in init)
        report(f"{label}: generated C vs axc train (20 steps, the same masks, rel <= 1e-4)",
               max(errs.values()) <= 1e-4 and moved > 1e-3, f"relative errors {errs}, moved {moved:.3g}")
        tr.drop_train(twin, "mse", opt, targs, x, t, tr.STEPS, 11)
        errs = compare(got, {k: v.detach().numpy() for k, v in twin.state_dict().items()}, init)
        report(f"{label}: generated C vs PyTorch with the same masks (rel <= 1e-4)", max(errs.values()) <= 1e-4,
               f"relative errors {errs}")
        infer = tr.DropNet(0.5, 0.25)
        infer.load_state_dict({k: torch.from_numpy(got[k].astype(np.float32).reshape(init[k].shape)) for k in init})
        y = infer.eval()(torch.from_numpy(x[:tr.BATCH])).detach().numpy().reshape(-1)
        report(f"{label}: forward on the state is inference with the trained weights (rel <= 1e-5)",
               out.shape == y.shape and tr.rel_err(out, y) <= 1e-5, f"out {out[:6]} twin {y[:6]}")


def have_openblas(d):
    with open(f"{d}/ob.c", "w") as f:
        f.write("#include <cblas.h>\nint main(void) { return cblas_sdot(0, 0, 1, 0, 1) != 0.0f; }\n")
    return subprocess.run([*CC, f"{d}/ob.c", "-o", f"{d}/ob", "-lopenblas"], capture_output=True).returncode == 0


def blas_case(d, rng):
    """axc --train --blas=openblas: the step's Float32 dense and matmul call
    cblas_sgemm on the state's weights; 20 Adam steps of the MLP match the
    libaxrt step and `axc train` (rel <= 1e-5; sums in another order)."""
    label = "train step --blas=openblas mlp adam"
    if not have_openblas(d):
        print(f"SKIP: {label} (OpenBLAS's cblas.h or -lopenblas missing)")
        return
    tr.BATCH = 4
    twin = tr.Twin("relu")
    init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
    x, t = tr.make_data(rng, "cross_entropy", tr.STEPS, np.float32)
    src, flags = tr.model_src("relu", "Float32"), ["--lr", "0.01", "--blas=openblas"]
    r = generate(d, src, init, "cross_entropy", "adam", flags)
    if r.returncode:
        report(f"{label}: axc --train", False, r.stderr)
        return
    write_data(d, x, t, tr.BATCH * tr.OUT)
    r = subprocess.run([*CC, *WARN, "-O1", "-I", d, "-I", f"{BUILD}/include", f"{HERE}/step_main.c", f"{d}/m.c",
                        f"{BUILD}/lib/libaxrt.a", "-lopenblas", "-lm", "-o", f"{d}/host"], capture_output=True, text=True)
    uses = "cblas_sgemm" in open(f"{d}/m.c").read()
    if r.returncode or not uses:
        report(f"{label}: builds warning-free and calls cblas_sgemm", False, r.stderr[-3000:])
        return
    res, (got, _, ok) = run_host(d)
    rr, interp = tr.axc_train(d, src, init, "cross_entropy", "adam", flags[:2], x, t)
    if res.returncode or not ok or rr.returncode:
        report(f"{label}: runs", False, res.stdout[-1500:] + rr.stderr)
        return
    errs = compare(got, interp, init)
    moved = max(tr.rel_err(got[k], init[k].numpy().reshape(-1)) for k in init)
    report(f"{label}: generated C vs axc train (rel <= 1e-5)", max(errs.values()) <= 1e-5 and moved > 1e-3,
           f"relative errors {errs}, moved {moved:.3g}")


def cross_tools():
    tools = ["arm-none-eabi-gcc", "qemu-system-arm"]
    return all(shutil.which(t) for t in tools)


def shared_runtime_m4(fw):
    """build_runtime_m4 once per run of the suites: step.py and remat.py run as
    separate jobs (tests/run.sh), each needing the same objects.  They go next to
    the run's axc cache ($AXC_CACHE_DIR, a fresh directory per tests/run.sh run),
    built by whichever job comes first under an exclusive lock; the other finds
    them complete (a marker written last) and builds nothing.  The directory's
    name holds a hash of the runtime's sources and the flags, so a cache that
    outlives the run never hands out stale objects.  Without AXC_CACHE_DIR (or
    with it off): built into fw, as before."""
    cache = os.environ.get("AXC_CACHE_DIR", "off")
    if cache == "off":
        return build_runtime_m4(fw)
    key = hashlib.sha256(" ".join(M4 + WARN).encode())
    for src in sorted(os.listdir(f"{ROOT}/runtime")):
        if src.endswith((".c", ".h", ".inc")):
            key.update(src.encode() + open(f"{ROOT}/runtime/{src}", "rb").read())
    shared = os.path.join(os.path.dirname(os.path.abspath(cache)), f"train-m4-runtime-{key.hexdigest()[:16]}")
    os.makedirs(shared, exist_ok=True)
    with open(f"{shared}/lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(f"{shared}/complete"):
            return open(f"{shared}/complete").read().split()
        objs = build_runtime_m4(shared)
        if objs:
            open(f"{shared}/complete", "w").write("\n".join(objs))
        return objs


def build_runtime_m4(fw):
    """The runtime core for the Cortex-M4F, once (as tests/firmware does, from the sources)."""
    objs = []
    for src in sorted(os.listdir(f"{ROOT}/runtime")):
        if not src.endswith(".c"):
            continue
        o = f"{fw}/rt_{src[:-2]}.o"
        r = subprocess.run(["arm-none-eabi-gcc", *M4, *WARN, "-Os", "-ffunction-sections", "-fdata-sections",
                            "-c", f"{ROOT}/runtime/{src}", "-o", o], capture_output=True, text=True)
        if r.returncode:
            report("train step firmware: runtime for Cortex-M4", False, r.stderr[-2000:])
            return None
        objs.append(o)
    return objs


def linker_script(d, ram):
    """The firmware examples' script with RAM (256K there) set to ram; the
    board has 4 MiB of SSRAM at 0x20000000, and LeNet-5's training step
    (state with moments, batch activations) needs more than 256K."""
    text = open(f"{ROOT}/examples/firmware/mps2_an386.ld").read()
    fixed = re.sub(r"(RAM\s*\(rwx\)\s*:\s*ORIGIN = 0x20000000, LENGTH = )256K", rf"\g<1>{ram}", text)
    assert fixed != text or ram == "256K", "the firmware linker script's RAM line moved"
    with open(f"{d}/fw.ld", "w") as f:
        f.write(fixed)
    return f"{d}/fw.ld"


def firmware(d, label, host_weights, fw, ram="256K", host_tol=1e-5):
    """The step on a Cortex-M4F under QEMU: its weights within 1e-5 of the host's
    with the portable kernels (the same sums), and within host_tol (at least
    1e-5) of the host's with its instruction set's kernels (sums in another
    order: under Adam, LeNet-5 with BatchNorm carries that apart as PyTorch's
    Float32 does its own round-off, so the model cases pass their drift tolerance).
    Under make test-asan (fw["objs"] None): the host's portable kernels only."""
    objs = fw["objs"]
    if objs is None:
        portable_on_host(d, label, host_weights, host_tol)
        return
    fwdir = f"{ROOT}/examples/firmware"
    r = subprocess.run(["arm-none-eabi-gcc", *M4, "-std=c99", "-Wall", "-Wextra", "-Werror", "-Os", "-c",
                        f"{fwdir}/startup.c", "-o", f"{d}/startup.o"], capture_output=True, text=True)
    cmd = ["arm-none-eabi-gcc", *M4, *WARN, "-Os", "-ffunction-sections", "-fdata-sections", "-I", d,
           "-I", f"{ROOT}/runtime", f"{d}/startup.o", f"{HERE}/step_main.c", f"{d}/m.c", *objs,
           "-Wl,--gc-sections", "--specs=nano.specs", "--specs=rdimon.specs", "-u", "_printf_float",
           "-T", linker_script(d, ram), "-lm", "-o", f"{d}/fw.elf"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        report(f"{label}: Cortex-M4 build", False, r.stderr[-3000:])
        return
    r = subprocess.run(["timeout", "120", "qemu-system-arm", "-M", "mps2-an386", "-nographic", "-monitor", "none",
                        "-serial", "none", "-semihosting-config", "enable=on,target=native", "-kernel",
                        f"{d}/fw.elf"], capture_output=True, text=True)
    got, _, ok = parse(r.stdout)
    res, (portable, _, pok) = run_host(d, portable=True)
    if r.returncode or not ok or not pok:
        report(f"{label}: Cortex-M4 under QEMU", False, f"qemu exit {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
        return
    errs = {k: tr.rel_err(got[k], portable[k]) for k in portable}
    report(f"{label}: Cortex-M4 (QEMU) weights vs the host's (portable kernels, rel <= 1e-5)",
           set(got) == set(portable) and max(errs.values()) <= 1e-5, f"relative errors {errs}")
    errs = {k: tr.rel_err(got[k], host_weights[k]) for k in host_weights}
    tol = max(1e-5, host_tol)
    report(f"{label}: Cortex-M4 (QEMU) weights vs the host's (rel <= 1e-5 or the case's tolerance)",
           max(errs.values()) <= tol, f"relative errors {errs}, tolerance {tol:.3g}")


def portable_on_host(d, label, host_weights, host_tol):
    """What the firmware check compares QEMU's weights with, under the sanitizers:
    the host build's portable kernels within the case's tolerance (plus the 1e-5
    QEMU may differ by) of its instruction set's kernels."""
    r, (portable, _, ok) = run_host(d, portable=True)
    if r.returncode or not ok:
        report(f"{label}: portable kernels on the host", False, f"exit {r.returncode}\n{r.stderr[-1500:]}")
        return
    errs = {k: tr.rel_err(portable[k], host_weights[k]) for k in host_weights}
    tol = max(1e-5, host_tol) + 1e-5
    report(f"{label}: portable kernels on the host vs its instruction set's (rel <= {tol:.3g})",
           set(portable) == set(host_weights) and max(errs.values()) <= tol, f"relative errors {errs}")


def firmware_runtime(d, what):
    """firmware()'s fw for a script's run in d: the Cortex-M4F runtime objects,
    {"objs": None} under make test-asan (the host's portable kernels instead), or
    None (SKIP printed for what) without the cross tools or when the runtime fails."""
    if SANITIZED:
        print(f"SKIP: {what} on Cortex-M4 (QEMU) (under make test-asan: make test runs it)")
        return {"objs": None}
    if not cross_tools():
        print(f"SKIP: {what} on Cortex-M4 (QEMU) (arm-none-eabi-gcc or qemu-system-arm missing)")
        return None
    os.makedirs(f"{d}/m4")
    objs = shared_runtime_m4(f"{d}/m4")
    return {"objs": objs} if objs else None


def main():
    rng = np.random.default_rng(11)
    torch.manual_seed(11)
    with tempfile.TemporaryDirectory() as d:
        fw = firmware_runtime(d, "train step")
        mlp_cases(d, rng, fw)
        model_cases(d, rng, fw)
        dropout_case(d, rng)
        blas_case(d, rng)


if __name__ == "__main__":
    main()
