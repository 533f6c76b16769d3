"""Suite `train`, part 9: mixed-precision training (docs/training.md#mixed-precision).

A digits MLP (64 => 32 relu => 10, batch 32, cross_entropy, Adam lr 1e-3,
1536 samples of scikit-learn's 8x8 digits / 16 where sklearn is installed,
else drift.py's synthetic digits; EPOCHS epochs) declared with dtype=BFloat16
and dtype=Float16, trained by the generated C step (axc --train, the host's
cc) and compared with PyTorch:
  BFloat16  torch.autocast("cpu", dtype=torch.bfloat16) over a Float32 model
            (Float32 master weights; the loss in Float32, as autocast does)
  Float16   PyTorch 1.13's CPU autocast has no Float16 and its CPU matmuls no
            Half, so the twin rounds to Float16 where the half model stores
            values (the weights used, each layer's output, every gradient
            that flows back: torch's .half()) and computes in Float32 between
            (what axc's half kernels do: they accumulate in float), with
            Float32 masters and torch.cuda.amp.GradScaler's rule written out
            (scale 65536, x2 after 2000 finite steps, an inf or NaN gradient
            skips the step and halves the scale).
Oracle: the mean loss of each epoch.  Tolerance: three times the largest
per-epoch distance between PyTorch's half run and PyTorch's Float32 run of
the same model, data and initial weights.  Both half runs differ from each
other only by rounding (summation order inside the Float32 accumulators,
which then may round to a neighbouring half value), a perturbation of the
same kind as, and smaller than, the one between half and Float32
arithmetic; the factor 3 leaves room for its growth along the trajectory.
The Float16 runs must also skip the same number of steps.
Then `axc train` (the compiled path) on the same model and data must write
parameters bitwise equal to the C step's, also when stopped halfway with
--checkpoint and continued with --resume, and one unit check on the Float16
step: a step whose gradients overflow leaves parameters, masters and moments
untouched and halves the scale (65536 -> 32768), and 2000 finite steps
double it again (1999 do not)."""
import os
import re
import shlex
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "torch"))
import drift  # noqa: E402
import run as tr  # noqa: E402
import safetensors_io  # noqa: E402

AXC = tr.AXC
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(AXC)))
CC = shlex.split(os.environ.get("CC", "cc"))
BATCH, SAMPLES, EPOCHS, HID, LR = 32, 1536, 8, 32, 1e-3
SRC = ("@axiom dtype={dtype} function m(x::Float32[%d, 64])\n    fc1 = Dense(64 => %d, activation=relu)\n"
       "    fc2 = Dense(%d => 10)\n    return fc2(fc1(x))\nend\n") % (BATCH, HID, HID)
TORCH_DTYPE = {"BFloat16": torch.bfloat16, "Float16": torch.float16}
report = tr.report


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(64, HID), torch.nn.Linear(HID, 10)

    def forward(self, x, rnd=lambda v: v):
        """rnd: where the half model stores a value (identity: Float32)."""
        h = rnd(F.relu(rnd(F.linear(rnd(x), rnd(self.fc1.weight), rnd(self.fc1.bias)))))
        return rnd(F.linear(h, rnd(self.fc2.weight), rnd(self.fc2.bias))).float()


class RoundF16(torch.autograd.Function):
    """Float16 storage: the value and the gradient flowing back rounded to Float16."""
    @staticmethod
    def forward(ctx, v):
        return v.half().float()

    @staticmethod
    def backward(ctx, g):
        return g.half().float()


def torch_curve(init, x, t, mode):
    """Per-step losses and skipped steps of the PyTorch run: mode Float32, BFloat16, Float16."""
    model = Mlp()
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()})
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    scale, growth, skipped, losses = 65536.0, 0, 0, []
    xs, ts = torch.from_numpy(x), torch.from_numpy(t)
    for _ in range(EPOCHS):
        for b in range(0, SAMPLES, BATCH):
            xb, tb = xs[b:b + BATCH], ts[b:b + BATCH]
            opt.zero_grad()
            if mode == "BFloat16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    y = model(xb)
                loss = F.cross_entropy(y.float(), tb)
            else:
                loss = F.cross_entropy(model(xb, RoundF16.apply if mode == "Float16" else (lambda v: v)), tb)
            losses.append(float(loss))
            if mode != "Float16":
                loss.backward()
                opt.step()
                continue
            (loss * scale).backward()   # GradScaler.scale, step, update
            if not all(bool(torch.isfinite(p.grad).all()) for p in model.parameters()):
                scale, growth, skipped = scale * 0.5, 0, skipped + 1
                continue
            for p in model.parameters():
                p.grad.mul_(1.0 / scale)
            opt.step()
            growth += 1
            if growth == 2000:
                scale, growth = scale * 2, 0
    return np.array(losses), skipped


def epoch_means(losses):
    return losses.reshape(EPOCHS, -1).mean(axis=1)


def build(d, dtype, init):
    open(f"{d}/m.ax", "w").write(SRC.format(dtype=dtype))
    safetensors_io.write(f"{d}/init.safetensors", init)
    r = subprocess.run([AXC, "--train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--loss=cross_entropy",
                        "--optimizer=adam", f"--lr={LR}", "-o", f"{d}/m.c"], capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run([*CC, "-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-I", d, "-I",
                            f"{BUILD}/include", f"{HERE}/amp_main.c", f"{d}/m.c", f"{BUILD}/lib/libaxrt.a", "-lm",
                            "-o", f"{d}/amp"], capture_output=True, text=True)
    return r


def c_curve(d):
    r = subprocess.run([f"{d}/amp", "curve", f"{d}/x.bin", f"{d}/t.bin", str(SAMPLES), str(BATCH), str(EPOCHS),
                        f"{d}/params.bin"], capture_output=True, text=True)
    losses = [float(v) for v in re.findall(r"^loss \d+ (\S+)$", r.stdout, re.M)]
    words = re.search(r"scale (\S+) growth (\d+) skipped (\d+)", r.stdout)
    return r, np.array(losses), int(words.group(3)) if words else -1


def half_bits(values, dtype):
    """The half bits of safetensors_io's values (BFloat16 widened to Float32)."""
    a = np.ascontiguousarray(values)
    return (a.view(np.uint32) >> 16).astype(np.uint16) if dtype == "BFloat16" else a.astype(np.float16).view(np.uint16)


def axc_train_same(d, dtype, init_keys, resume):
    """axc train on the same model and data (resume: EPOCHS // 2 epochs with
    --checkpoint, then --resume to EPOCHS): its weights' bits equal the C step's."""
    base = [AXC, "train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--input", f"x={d}/x.npy", "--target",
            f"{d}/t.npy", "--loss=cross_entropy", "--optimizer=adam", f"--lr={LR}", "--save-weights",
            f"{d}/out.safetensors"]
    runs = [[f"--epochs={EPOCHS // 2}", "--checkpoint", f"{d}/ck"], [f"--epochs={EPOCHS}", "--resume", f"{d}/ck"]]
    for extra in runs if resume else [[f"--epochs={EPOCHS}"]]:
        r = subprocess.run(base + extra, capture_output=True, text=True)
        if r.returncode:
            return False, r.stderr[-2000:]
    got = safetensors_io.read(f"{d}/out.safetensors")
    mine = np.concatenate([half_bits(got[k], dtype).reshape(-1) for k in init_keys])
    step = np.fromfile(f"{d}/params.bin", dtype=np.uint16)
    return mine.shape == step.shape and bool((mine == step).all()), f"{int((mine != step).sum())} differ"


def overflow_check(d):
    r = subprocess.run([f"{d}/amp", "overflow", f"{d}/x.bin", str(BATCH)], capture_output=True, text=True)
    words = re.findall(r"scale (\S+) growth (\d+) skipped (\d+) steps (\d+)", r.stdout)
    unchanged = re.search(r"tensors unchanged (\d)", r.stdout)
    expected = [("32768.0", "0", "1", "1"), ("32768.0", "1999", "1", "2000"), ("65536.0", "0", "1", "2001")]
    ok = r.returncode == 0 and unchanged is not None and unchanged.group(1) == "1" and words == expected
    report("train amp Float16: an overflowing step is skipped (state untouched), the scale halves, "
           "2000 finite steps double it", ok, r.stdout[-1500:] + r.stderr[-1500:])


def main():
    rng = np.random.default_rng(5)
    torch.manual_seed(5)
    images, t = drift.digits(rng, SAMPLES)
    x = (images.reshape(SAMPLES, 64) / 16).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        x.tofile(f"{d}/x.bin")
        t.tofile(f"{d}/t.bin")
        np.save(f"{d}/x.npy", x)
        np.save(f"{d}/t.npy", t)
        torch.manual_seed(6)
        init32 = {k: v.numpy() for k, v in Mlp().state_dict().items()}
        for dtype in ("BFloat16", "Float16"):
            # initial weights representable in the half type: both runs start from the same masters
            init = {k: torch.from_numpy(v).to(TORCH_DTYPE[dtype]).float().numpy() for k, v in init32.items()}
            f32 = epoch_means(torch_curve(init, x, t, "Float32")[0])
            want, want_skipped = torch_curve(init, x, t, dtype)
            want = epoch_means(want)
            r = build(d, dtype, init)
            if r.returncode:
                report(f"train amp {dtype}: axc --train and cc", False, r.stderr[-3000:])
                continue
            r, got, skipped = c_curve(d)
            if r.returncode or got.size != EPOCHS * SAMPLES // BATCH:
                report(f"train amp {dtype}: the C step's run", False, r.stdout[-1000:] + r.stderr[-1000:])
                continue
            got = epoch_means(got)
            tol = 3 * float(np.abs(want - f32).max())
            dist = float(np.abs(got - want).max())
            curves = "\n".join([f"{dtype} per-epoch loss: axc " + " ".join(f"{v:.4f}" for v in got),
                                f"{dtype} per-epoch loss: torch " + " ".join(f"{v:.4f}" for v in want),
                                f"{dtype} per-epoch loss: torch Float32 " + " ".join(f"{v:.4f}" for v in f32),
                                f"{dtype}: skipped steps axc {skipped}, torch {want_skipped}"])
            # the curves are details: shown under a FAIL (run.sh allows indented lines only there)
            report(f"train amp {dtype}: digits MLP loss per epoch within PyTorch's (max distance {dist:.2e}, "
                   f"tolerance {tol:.2e} = 3 x its half-vs-Float32 distance)",
                   dist <= tol and skipped == want_skipped, curves)
            ok, detail = axc_train_same(d, dtype, list(init), False)
            report(f"train amp {dtype}: axc train writes the C step's parameters bit for bit", ok, detail)
            ok, detail = axc_train_same(d, dtype, list(init), True)
            report(f"train amp {dtype}: axc train --checkpoint, then --resume: the same bits", ok, detail)
            if dtype == "Float16":
                overflow_check(d)


if __name__ == "__main__":
    main()
