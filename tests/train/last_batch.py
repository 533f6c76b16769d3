"""Suite `train`: `axc train`'s smaller last batch (docs/training.md#the-training-loop).

Oracle: a file of N = k*B + r samples (B the model's batch, 0 < r < B) trains,
without --drop-last, as PyTorch's loop over torch.utils.data.DataLoader(
drop_last=False) does: each epoch the k whole batches (file order, or --shuffle's
order of whole batches: tests/train/run.py batch_order), then one batch of the
file's last r samples, whose loss is the mean over those r.  PyTorch gets those
batches from a DataLoader (batch_size=B, drop_last=False; under --shuffle a
batch_sampler in axc's order).  Float64, every parameter (and BatchNorm's running
statistics) within 1e-9 relative, on the compiled step and on --interp:
- MLP, mse, SGD with momentum and Nesterov, 3 epochs of 27 = 6*4 + 3 samples;
- MLP, cross_entropy, Adam, --shuffle, 3 epochs;
- BatchNorm model (batch 8, 29 = 3*8 + 5 samples), Adam: the last batch's
  statistics over its 5 samples (running_var unbiased with 5);
- fewer samples than one batch (3 of 4): one batch of 3 per epoch;
- the epoch's loss printed (with a validation set) is the sample-weighted mean of
  its batches' losses, to the 6 digits printed;
then the compiled step against --interp in Float32 (onecycle, clipping by norm,
--shuffle), every parameter within 1e-5 relative; and two files whose sample
counts differ by less than a batch refused."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(__file__))
import run as base  # noqa: E402  (tests/train/run.py: twins, data, batch_order, rel_err, report)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "torch"))
import safetensors_io  # noqa: E402

EPOCHS = 3
BN_SRC = ("@axiom dtype=DTYPE function m(x::DTYPE[8, 6])\n    fc1 = Dense(6 => 5, bias=false)\n    bn = BatchNorm(5)\n"
          "    fc2 = Dense(5 => 3)\n    return fc2(relu(bn(fc1(x))))\nend\n")


def axc(d, flags, out="w.safetensors"):
    cmd = [base.AXC, "train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--input", f"x={d}/x.npy",
           "--target", f"{d}/t.npy", "--epochs", str(EPOCHS), *flags, "--save-weights", f"{d}/{out}"]
    return subprocess.run(cmd, capture_output=True, text=True)


def write_case(d, src, twin, x, t):
    init = {k: v.detach().clone() for k, v in twin.state_dict().items() if "num_batches" not in k}
    safetensors_io.write(f"{d}/init.safetensors", init)
    open(f"{d}/m.ax", "w").write(src)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/t.npy", t)


def loader(x, t, batch, shuffle_seed, epoch):
    """DataLoader(drop_last=False) over x, t; under --shuffle its whole batches in
    axc's order for this epoch, the smaller last batch after them."""
    ds = TensorDataset(torch.from_numpy(x), torch.from_numpy(t))
    if shuffle_seed is None:
        return DataLoader(ds, batch_size=batch, shuffle=False, drop_last=False)
    whole = len(x) // batch
    order = [list(range(b * batch, (b + 1) * batch)) for b in base.batch_order(shuffle_seed, epoch, whole)]
    if len(x) % batch:
        order.append(list(range(whole * batch, len(x))))
    return DataLoader(ds, batch_sampler=order)


def torch_epochs(twin, loss, opt, args, x, t, batch, shuffle_seed=None):
    """The twin trained EPOCHS epochs; each epoch's sample-weighted mean loss."""
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[opt]
    optimizer = cls(twin.parameters(), **args)
    means = []
    for epoch in range(EPOCHS):
        total = 0.0
        for xb, tb in loader(x, t, batch, shuffle_seed, epoch):
            optimizer.zero_grad()
            value = base.loss_fn(loss, twin(xb), tb)
            value.backward()
            optimizer.step()
            total += value.item() * len(xb)
        means.append(total / len(x))
    return means


def compare(name, d, twin, r, tol=1e-9):
    if r.returncode:
        base.report(name, False, r.stderr)
        return
    got = safetensors_io.read(f"{d}/w.safetensors")
    want = {k: v.detach().numpy() for k, v in twin.state_dict().items() if "num_batches" not in k}
    errs = {k: base.rel_err(got[k], want[k]) for k in want}
    base.report(name, set(got) == set(want) and max(errs.values()) <= tol, f"relative errors {errs}")
    if os.environ.get("TRAIN_LOOP_VERBOSE"):
        print(f"  largest relative difference {max(errs.values()):.3g}")


def oracle(d, rng, label, src, twin_cls, loss, opt, args, flags, samples, batch, shuffle_seed=None):
    torch.set_default_dtype(torch.float64)
    twin = twin_cls()
    x = rng.standard_normal((samples, 6))
    t = rng.integers(0, 3, samples).astype(np.int64) if loss == "cross_entropy" else rng.standard_normal((samples, 3))
    write_case(d, src.replace("DTYPE", "Float64"), twin, x, t)
    torch_epochs(twin, loss, opt, args, x, t, batch, shuffle_seed)
    common = [f"--loss={loss}", f"--optimizer={opt}", *flags]
    # twice on the compiled step: the second loads both steps from the run cache
    # (two cached libraries loaded at once must stay two: compiler/run.c entry_fd)
    for extra, how in (([], ""), ([], " (cached steps)"), (["--interp"], " --interp")):
        compare(f"last batch: {label} as DataLoader(drop_last=False){how}", d, twin, axc(d, common + extra))


def epoch_loss(d, rng):
    """The printed epoch loss: the mean over the epoch's samples."""
    torch.set_default_dtype(torch.float64)
    twin = base.Twin("tanh")
    x, t = rng.standard_normal((27, 6)), rng.standard_normal((27, 3))
    write_case(d, base.model_src("tanh", "Float64"), twin, x, t)
    np.save(f"{d}/vx.npy", x[:5])
    np.save(f"{d}/vt.npy", t[:5])
    means = torch_epochs(twin, "mse", "sgd", {"lr": 0.1}, x, t, base.BATCH)
    r = axc(d, ["--loss=mse", "--optimizer=sgd", "--lr=0.1", "--val-input", f"x={d}/vx.npy",
                "--val-target", f"{d}/vt.npy"])
    printed = [float(v) for v in re.findall(r"^epoch \d+/\d+  loss (\S+)", r.stdout, re.M)]
    ok = r.returncode == 0 and len(printed) == EPOCHS and \
        all(abs(p - m) <= 1e-5 * abs(m) for p, m in zip(printed, means))
    base.report("last batch: the epoch loss printed is the mean over the epoch's samples", ok,
                f"printed {printed}, PyTorch {means}\n{r.stderr}")


def compiled_vs_interp(d, rng):
    torch.set_default_dtype(torch.float32)
    twin = base.Twin("relu")
    x = rng.standard_normal((8 * base.BATCH + 1, 6)).astype(np.float32)
    t = rng.integers(0, 3, len(x)).astype(np.int64)
    write_case(d, base.model_src("relu", "Float32"), twin, x, t)
    common = ["--loss=cross_entropy", "--optimizer=adam", "--lr=0.02", "--lr-schedule=onecycle",
              "--clip-grad-norm=0.3", "--shuffle", "--seed=5"]
    r1, r2 = axc(d, common, "c.safetensors"), axc(d, common + ["--interp"], "i.safetensors")
    name = "last batch: compiled step vs --interp within Float32 rounding"
    if r1.returncode or r2.returncode:
        base.report(name, False, r1.stderr + r2.stderr)
        return
    a, b = safetensors_io.read(f"{d}/c.safetensors"), safetensors_io.read(f"{d}/i.safetensors")
    errs = {k: base.rel_err(a[k], b[k]) for k in b}
    base.report(name, max(errs.values()) <= 1e-5, str(errs))
    if os.environ.get("TRAIN_LOOP_VERBOSE"):
        print(f"  largest relative difference {max(errs.values()):.3g}")


def mismatch(d, rng):
    np.save(f"{d}/t.npy", rng.standard_normal((26, 3)))
    np.save(f"{d}/x.npy", rng.standard_normal((27, 6)))
    r = axc(d, ["--loss=mse"])
    base.report("last batch: files whose sample counts differ are refused",
                r.returncode == 1 and "x.npy' holds 27 samples but" in r.stderr and "holds 26" in r.stderr, r.stderr)


def main():
    if not os.path.exists(base.AXC):
        print(f"SKIP: last_batch ({base.AXC} not built)")
        return
    rng = np.random.default_rng(37)
    torch.manual_seed(37)
    mlp_t, mlp_r = base.model_src("tanh", "DTYPE"), base.model_src("relu", "DTYPE")
    sgd = {"lr": 0.05, "momentum": 0.9, "nesterov": True}
    sgd_flags = ["--lr=0.05", "--momentum=0.9", "--nesterov"]
    with tempfile.TemporaryDirectory() as d:
        oracle(d, rng, "MLP mse SGD (27 = 6x4 + 3)", mlp_t, lambda: base.Twin("tanh"), "mse", "sgd", sgd, sgd_flags,
               27, base.BATCH)
        oracle(d, rng, "MLP cross_entropy Adam --shuffle (27 = 6x4 + 3)", mlp_r, lambda: base.Twin("relu"),
               "cross_entropy", "adam", {"lr": 0.01}, ["--lr=0.01", "--shuffle", "--seed=9"], 27, base.BATCH, 9)
        oracle(d, rng, "BatchNorm Adam (29 = 3x8 + 5)", BN_SRC, base.BnNet, "cross_entropy", "adam", {"lr": 0.01},
               ["--lr=0.01"], 29, 8)
        oracle(d, rng, "MLP mse SGD (3 samples, batch 4)", mlp_t, lambda: base.Twin("tanh"), "mse", "sgd", sgd,
               sgd_flags, 3, base.BATCH)
        epoch_loss(d, rng)
        compiled_vs_interp(d, rng)
        mismatch(d, rng)
    torch.set_default_dtype(torch.float32)


if __name__ == "__main__":
    main()
