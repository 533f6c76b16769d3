"""Suite `train`: `axc train`'s loop (docs/training.md#the-training-loop): --drop-last,
a validation set per epoch, --early-stop, checkpoints and --resume.

Oracles:
- --drop-last: a file of 6 whole batches and 3 more samples trains as PyTorch's
  DataLoader(drop_last=True) does (the same loop over the 6 batches), every
  parameter within 1e-9 relative (Float64); without it, a smaller last batch
  (tests/train/last_batch.py).
- validation: the per-epoch val_loss and val_accuracy axc prints equal those of
  the PyTorch twin evaluated after each epoch on the same validation set (whose
  size is not a multiple of the batch), the loss to the 6 digits printed, the accuracy
  to its 4.
- --early-stop=P: validating on targets the training moves away from, the run
  stops at the first epoch whose last P validation losses (as printed) are none
  below the best before them, and its weights equal, byte for byte, a run of that
  many epochs.
- --resume: 2 epochs with --checkpoint, then --resume for epochs 3 and 4, gives
  the same --save-weights bytes as 4 epochs in one run (Adam, --shuffle, Dropout,
  a step schedule: moments, step count, Dropout's counter, shuffle and schedule
  position all carried); a checkpoint of another model is refused.
Each runs on the compiled step (these options are the compiled loop's); the
interpreter refuses them with a message."""
import os
import pty
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import run as base  # noqa: E402  (tests/train/run.py: model, twin, data, axc_train)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "torch"))
import safetensors_io  # noqa: E402

EPOCHS = 3


def axc(d, flags, out="w.safetensors"):
    cmd = [base.AXC, "train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--input", f"x={d}/x.npy",
           "--target", f"{d}/t.npy", *flags, "--save-weights", f"{d}/{out}"]
    return subprocess.run(cmd, capture_output=True, text=True)


def setup(d, rng, loss, act, dtype, samples, np_dtype):
    twin = base.Twin(act)
    if np_dtype == np.float64:
        twin = twin.double()
    init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
    safetensors_io.write(f"{d}/init.safetensors", init)
    with open(f"{d}/m.ax", "w") as f:
        f.write(base.model_src(act, dtype))
    x, t = base.make_data(rng, loss, 8, np_dtype)
    x, t = x[:samples], t[:samples]
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/t.npy", t)
    return twin, x, t


def drop_last(d, rng):
    torch.set_default_dtype(torch.float64)
    twin, x, t = setup(d, rng, "mse", "tanh", "Float64", 6 * base.BATCH + 3, np.float64)
    r = axc(d, ["--loss=mse", "--optimizer=sgd", "--lr=0.1", "--epochs", str(EPOCHS), "--drop-last"])
    if r.returncode:
        base.report("loop: --drop-last as DataLoader(drop_last=True)", False, r.stderr)
        return
    got = safetensors_io.read(f"{d}/w.safetensors")
    xs, ts = np.concatenate([x[:6 * base.BATCH]] * EPOCHS), np.concatenate([t[:6 * base.BATCH]] * EPOCHS)
    base.torch_train(twin, "mse", "sgd", {"lr": 0.1}, xs, ts, 6 * EPOCHS)
    errs = {k: base.rel_err(got[k], v.detach().numpy()) for k, v in twin.state_dict().items()}
    base.report("loop: --drop-last as DataLoader(drop_last=True)", max(errs.values()) <= 1e-9, str(errs))


def validation(d, rng):
    torch.set_default_dtype(torch.float64)
    twin, x, t = setup(d, rng, "cross_entropy", "relu", "Float64", 6 * base.BATCH, np.float64)
    vx, vt = base.make_data(rng, "cross_entropy", 3, np.float64)
    vx, vt = vx[:3 * base.BATCH - 1], vt[:3 * base.BATCH - 1]   # not a whole number of batches
    np.save(f"{d}/vx.npy", vx)
    np.save(f"{d}/vt.npy", vt)
    r = axc(d, ["--loss=cross_entropy", "--optimizer=adam", "--lr=0.02", "--epochs", str(EPOCHS),
                "--val-input", f"x={d}/vx.npy", "--val-target", f"{d}/vt.npy"])
    if r.returncode:
        base.report("loop: validation loss and accuracy per epoch", False, r.stderr)
        return
    lines = re.findall(r"epoch (\d+)/\d+  loss \S+  val_loss (\S+)  val_accuracy (\S+)", r.stdout)
    optimizer = torch.optim.Adam(twin.parameters(), lr=0.02)
    want = []
    for _ in range(EPOCHS):
        for s in range(6):
            xb, tb = torch.from_numpy(x[s * base.BATCH:(s + 1) * base.BATCH]), torch.from_numpy(t[s * base.BATCH:(s + 1) * base.BATCH])
            twin.zero_grad()
            F.cross_entropy(twin(xb), tb).backward()
            optimizer.step()
        with torch.no_grad():
            y = twin(torch.from_numpy(vx))
            want.append((F.cross_entropy(y, torch.from_numpy(vt)).item(),
                         (y.argmax(1) == torch.from_numpy(vt)).double().mean().item()))
    ok = len(lines) == EPOCHS and all(
        abs(float(v) - w[0]) <= 1e-5 * abs(w[0]) and abs(float(a) - round(w[1], 4)) < 1e-9
        for (_, v, a), w in zip(lines, want))
    base.report("loop: validation loss and accuracy per epoch", ok, f"axc {lines}\ntorch {want}\n{r.stdout}")
    r = axc(d, ["--loss=cross_entropy", "--interp", "--val-input", f"x={d}/vx.npy", "--val-target", f"{d}/vt.npy"])
    base.report("loop: --interp refuses --val-target", r.returncode == 2 and "compiled step only" in r.stderr,
                r.stderr)


def early_stop(d, rng):
    torch.set_default_dtype(torch.float64)
    _, x, t = setup(d, rng, "mse", "tanh", "Float64", 6 * base.BATCH, np.float64)
    np.save(f"{d}/vx.npy", x)
    np.save(f"{d}/vt.npy", -t)   # training on t moves the model away from -t
    common = ["--loss=mse", "--optimizer=sgd", "--lr=0.05"]
    val = ["--val-input", f"x={d}/vx.npy", "--val-target", f"{d}/vt.npy"]
    r = axc(d, common + val + ["--epochs=20", "--early-stop=2"])
    stopped = re.search(r"early stop after epoch (\d+)", r.stdout)
    if r.returncode or not stopped:
        base.report("loop: --early-stop", False, r.stdout + r.stderr)
        return
    epochs = int(stopped.group(1))
    losses = [float(v) for v in re.findall(r"val_loss (\S+)", r.stdout)]
    want = next((e + 1 for e in range(2, len(losses)) if min(losses[e - 1:e + 1]) >= min(losses[:e - 1])), None)
    r2 = axc(d, common + [f"--epochs={epochs}"], "w2.safetensors")
    same = r2.returncode == 0 and open(f"{d}/w.safetensors", "rb").read() == open(f"{d}/w2.safetensors", "rb").read()
    base.report("loop: --early-stop stops after patience and keeps that epoch's weights",
                epochs == want == len(losses) and same,
                f"stopped after {epochs} ({want} expected), same weights {same}\n{r.stdout}")


DROPOUT_SRC = """@axiom function m(x::Float32[4, 6])
    fc1 = Dense(6 => 16, activation=relu)
    drop = Dropout(0.3)
    fc2 = Dense(16 => 3)
    return fc2(drop(fc1(x)))
end
"""


def resume(d, rng):
    torch.set_default_dtype(torch.float32)
    setup(d, rng, "cross_entropy", "relu", "Float32", 8 * base.BATCH, np.float32)
    with open(f"{d}/m.ax", "w") as f:
        f.write(DROPOUT_SRC)
    common = ["--seed=3", "--loss=cross_entropy", "--optimizer=adam", "--lr=0.01", "--shuffle",
              "--lr-schedule=step", "--step-size=5", "--gamma=0.5"]
    cmd = [base.AXC, "train", f"{d}/m.ax", "--input", f"x={d}/x.npy", "--target", f"{d}/t.npy", *common]
    whole = subprocess.run(cmd + ["--epochs=4", "--save-weights", f"{d}/w4.safetensors"], capture_output=True, text=True)
    first = subprocess.run(cmd + ["--epochs=2", "--checkpoint", f"{d}/c.ckpt", "--checkpoint-every=2",
                                  "--save-weights", f"{d}/w2.safetensors"], capture_output=True, text=True)
    second = subprocess.run(cmd + ["--epochs=4", "--resume", f"{d}/c.ckpt", "--save-weights", f"{d}/wr.safetensors"],
                            capture_output=True, text=True)
    rcs = (whole.returncode, first.returncode, second.returncode)
    if any(rcs):
        base.report("loop: 2 epochs + --resume 2 equals 4 epochs byte for byte", False,
                    f"{rcs} {whole.stderr} {first.stderr} {second.stderr}")
        return
    a, b = open(f"{d}/w4.safetensors", "rb").read(), open(f"{d}/wr.safetensors", "rb").read()
    moved = open(f"{d}/w2.safetensors", "rb").read() != a
    base.report("loop: 2 epochs + --resume 2 equals 4 epochs byte for byte", a == b and moved,
                f"identical {a == b}, epochs 3-4 changed the weights {moved}")
    with open(f"{d}/m.ax", "w") as f:
        f.write(DROPOUT_SRC.replace("16", "8"))
    r = subprocess.run(cmd + ["--epochs=4", "--resume", f"{d}/c.ckpt", "--save-weights", f"{d}/bad.safetensors"],
                       capture_output=True, text=True)
    base.report("loop: --resume of another model's checkpoint is refused",
                r.returncode == 1 and "training state" in r.stderr and not os.path.exists(f"{d}/bad.safetensors"),
                r.stderr)


def terminal(d, rng):
    """On a terminal: one line per epoch redrawn in place (loss, samples/s, time left),
    no step lines; off one (every other test here) the step lines."""
    torch.set_default_dtype(torch.float64)
    setup(d, rng, "mse", "tanh", "Float64", 6 * base.BATCH, np.float64)
    master, slave = pty.openpty()
    p = subprocess.Popen([base.AXC, "train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--input",
                          f"x={d}/x.npy", "--target", f"{d}/t.npy", "--loss=mse", "--epochs=3",
                          "--save-weights", f"{d}/w.safetensors"], stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait()
    os.close(master)
    text = out.decode(errors="replace")
    lines = [ln.split("\r")[-1] for ln in text.replace("\r\n", "\n").split("\n") if ln.strip()]
    ok = p.returncode == 0 and "step 1/" not in text and len(lines) == 3 and \
        all(re.search(rf"epoch {e + 1}/3  loss \S+  \d+ samples/s  \d+:\d\d left", ln) for e, ln in enumerate(lines))
    base.report("loop: on a terminal one progress line per epoch", ok, repr(text))


def compiled_vs_interp(d, rng):
    """The compiled step and the interpreter train alike within Float32 rounding (the
    interpreter's optimizer runs in double): Float32 MLP, 3 epochs of --shuffle,
    onecycle (lr and beta1 set per step) and clip_grad_norm_, and clip_grad_value_
    under SGD with momentum; every parameter within 1e-5 relative."""
    torch.set_default_dtype(torch.float32)
    setup(d, rng, "cross_entropy", "relu", "Float32", 8 * base.BATCH, np.float32)
    for flags in (["--optimizer=adam", "--lr=0.02", "--lr-schedule=onecycle", "--clip-grad-norm=0.3"],
                  ["--optimizer=sgd", "--lr=0.1", "--momentum=0.9", "--clip-grad-value=0.05", "--warmup-steps=4"]):
        common = ["--loss=cross_entropy", "--epochs=3", "--shuffle", "--seed=5", *flags]
        r1, r2 = axc(d, common, "c.safetensors"), axc(d, common + ["--interp"], "i.safetensors")
        name = f"loop: compiled step vs --interp within Float32 rounding ({' '.join(flags)})"
        if r1.returncode or r2.returncode:
            base.report(name, False, r1.stderr + r2.stderr)
            continue
        a, b = safetensors_io.read(f"{d}/c.safetensors"), safetensors_io.read(f"{d}/i.safetensors")
        init = safetensors_io.read(f"{d}/init.safetensors")
        errs = {k: base.rel_err(a[k], b[k]) for k in b}
        moved = max(base.rel_err(b[k], init[k]) for k in b)
        base.report(name, max(errs.values()) <= 1e-5 and moved > 1e-2, f"{errs}, moved {moved:.3g}")
        if os.environ.get("TRAIN_LOOP_VERBOSE"):
            print(f"  largest relative difference {max(errs.values()):.3g}, moved {moved:.3g}")


def main():
    if not os.path.exists(base.AXC):
        print(f"SKIP: loop ({base.AXC} not built)")
        return
    rng = np.random.default_rng(36)
    torch.manual_seed(36)
    with tempfile.TemporaryDirectory() as d:
        for part in (drop_last, validation, early_stop, resume, terminal, compiled_vs_interp):
            part(d, rng)
    torch.set_default_dtype(torch.float32)


if __name__ == "__main__":
    main()
