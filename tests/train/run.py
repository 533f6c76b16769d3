"""Suite `train`: `axc train` (interface.md §8) against PyTorch.

Oracle: the same initial weights (written by this script), the same batches
in the same order, 20 steps; every trained parameter must match PyTorch's
torch.optim (Lion: the formula of interface.md written out below) within
1e-4 relative (max abs difference over the tensor's max abs value).
Gradients: one SGD step with lr=1 gives each parameter's gradient (init -
trained), checked against PyTorch autograd and against central finite
differences of the loss through the reference interpreter (axc run --interp)
in Float64.  The trained file loads into the PyTorch twin with strict=True."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "torch"))
import safetensors_io  # noqa: E402

AXC = os.environ.get("AXC", "build/bin/axc")
BATCH, IN, HID, OUT, STEPS = 4, 6, 5, 3, 20
ACTS = {"relu": F.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "gelu": F.gelu,
        "swish": F.silu, "softplus": F.softplus, "elu": F.elu, "leaky_relu": F.leaky_relu,
        "exp": torch.exp, "neg": torch.neg, "erf": torch.erf, "mish": F.mish, "selu": F.selu,
        "hardswish": F.hardswish, "relu6": F.relu6, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "abs": torch.abs, "softmax": lambda x: torch.softmax(x, -1),
        "log_softmax": lambda x: torch.log_softmax(x, -1)}


def model_src(act, dtype):
    return (f"@axiom dtype={dtype} function m(x::{dtype}[{BATCH}, {IN}])\n    fc1 = Dense({IN} => {HID})\n"
            f"    fc2 = Dense({HID} => {OUT})\n    return fc2({act}(fc1(x)) .* 2.0)\nend\n")


class Twin(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fc1, self.fc2, self.act = torch.nn.Linear(IN, HID), torch.nn.Linear(HID, OUT), ACTS[act]

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)) * 2.0)


def loss_fn(name, y, t):
    if name == "mse":
        return F.mse_loss(y, t)
    if name == "cross_entropy":
        return F.cross_entropy(y, t)
    return F.binary_cross_entropy_with_logits(y, t)


def make_data(rng, loss, steps, np_dtype):
    x = rng.standard_normal((steps * BATCH, IN)).astype(np_dtype)
    if loss == "cross_entropy":
        t = rng.integers(0, OUT, steps * BATCH).astype(np.int64)
    elif loss == "mse":
        t = rng.standard_normal((steps * BATCH, OUT)).astype(np_dtype)
    else:
        t = rng.random((steps * BATCH, OUT)).astype(np_dtype)
    return x, t


def lion_step(p, g, m, lr, b1, b2, wd):
    """interface.md §8: u = sign(b1 m + (1 - b1) g), p -= lr (u + wd p), m = b2 m + (1 - b2) g."""
    u = torch.sign(b1 * m + (1 - b1) * g)
    p -= lr * (u + wd * p)
    m.mul_(b2).add_((1 - b2) * g)


def torch_train(twin, loss, opt, args, x, t, steps):
    params = list(twin.parameters())
    if opt == "lion":
        moments = [torch.zeros_like(p) for p in params]
    else:
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[opt]
        optimizer = cls(params, **args)
    for s in range(steps):
        xb, tb = torch.from_numpy(x[s * BATCH:(s + 1) * BATCH]), torch.from_numpy(t[s * BATCH:(s + 1) * BATCH])
        twin.zero_grad()
        loss_fn(loss, twin(xb), tb).backward()
        if opt == "lion":
            with torch.no_grad():
                for p, m in zip(params, moments):
                    lion_step(p, p.grad, m, args.get("lr", 1e-4), 0.9, 0.99, args.get("weight_decay", 0.0))
        else:
            optimizer.step()


def axc_train(d, src, init, loss, opt, flags, x, t):
    open(f"{d}/m.ax", "w").write(src)
    safetensors_io.write(f"{d}/init.safetensors", init)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/t.npy", t)
    cmd = [AXC, "train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--input", f"x={d}/x.npy",
           "--target", f"{d}/t.npy", f"--loss={loss}", f"--optimizer={opt}", *flags,
           "--save-weights", f"{d}/out.safetensors"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, (safetensors_io.read(f"{d}/out.safetensors") if r.returncode == 0 else None)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


def report(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'}: {name}")
    if detail and not ok:
        print("  " + detail.replace("\n", "\n  "))


OPTIMIZERS = [
    ("sgd", {"lr": 0.05}, ["--lr", "0.05"]),
    ("sgd", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
     ["--lr", "0.05", "--momentum", "0.9", "--nesterov", "--weight-decay", "0.01"]),
    ("sgd", {"lr": 0.05, "momentum": 0.8}, ["--lr", "0.05", "--momentum", "0.8"]),
    ("adam", {"lr": 0.01}, ["--lr", "0.01"]),
    ("adam", {"lr": 0.01, "weight_decay": 0.1, "betas": (0.8, 0.99)},
     ["--lr", "0.01", "--weight-decay", "0.1", "--beta1", "0.8", "--beta2", "0.99"]),
    ("adamw", {}, []),
    ("adamw", {"lr": 0.01, "weight_decay": 0.1, "eps": 1e-6},
     ["--lr", "0.01", "--weight-decay", "0.1", "--eps", "1e-6"]),
    ("lion", {"lr": 1e-3}, ["--lr", "1e-3"]),
    ("lion", {"lr": 1e-3, "weight_decay": 0.5}, ["--lr", "1e-3", "--weight-decay", "0.5"]),
]


def oracle(d, rng):
    for loss, act in (("cross_entropy", "relu"), ("mse", "tanh"), ("bce_with_logits", "gelu")):
        for opt, targs, flags in OPTIMIZERS:
            twin = Twin(act)
            init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
            x, t = make_data(rng, loss, STEPS, np.float32)
            r, got = axc_train(d, model_src(act, "Float32"), init, loss, opt, flags, x, t)
            name = f"train oracle {loss} {act} {opt} {' '.join(flags)}".strip()
            if r.returncode != 0:
                report(name, False, r.stderr)
                continue
            torch_train(twin, loss, opt, targs, x, t, STEPS)
            errs = {k: rel_err(got[k], v.detach().numpy()) for k, v in twin.state_dict().items()}
            moved = max(rel_err(got[k], init[k].numpy()) for k in init)
            report(name, max(errs.values()) <= 1e-4 and moved > 1e-4,
                   f"relative errors {errs}, moved {moved:.3g}")
            # loadable into the twin with strict=True
            try:
                Twin(act).load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in got.items()}, strict=True)
            except RuntimeError as e:
                report(f"{name} strict load", False, str(e))


def loss_np(loss, y, t):
    return float(loss_fn(loss, torch.from_numpy(y), torch.from_numpy(t)))


def gradients(d, rng):
    """Every rule through one SGD step with lr=1, Float64."""
    torch.set_default_dtype(torch.float64)
    for act in ACTS:
        for loss in ("mse", "cross_entropy", "bce_with_logits") if act == "tanh" else ("mse",):
            twin = Twin(act)
            init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
            x, t = make_data(rng, loss, 1, np.float64)
            if act in ("log_softmax",):
                pass
            r, got = axc_train(d, model_src(act, "Float64"), init, loss, "sgd", ["--lr", "1"], x, t)
            name = f"train gradient {act} {loss}"
            if r.returncode != 0:
                report(name + " vs autograd", False, r.stderr)
                continue
            grads = {k: init[k].numpy() - np.asarray(got[k]) for k in init}
            twin.zero_grad()
            loss_fn(loss, twin(torch.from_numpy(x)), torch.from_numpy(t)).backward()
            errs = {k: rel_err(grads[k], p.grad.numpy()) for k, p in twin.named_parameters()}
            report(name + " vs autograd", max(errs.values()) <= 1e-9, f"relative errors {errs}")
            fd_check(d, name, act, loss, init, grads, x, t, rng)
    torch.set_default_dtype(torch.float32)


def fd_check(d, name, act, loss, init, grads, x, t, rng, h=1e-6):
    """Central differences of the loss of the interpreter's forward (axc run --interp)."""
    worst = 0.0
    for k in init:
        flat = init[k].numpy().reshape(-1)
        for i in rng.choice(flat.size, size=min(2, flat.size), replace=False):
            vals = []
            for sgn in (1, -1):
                w = {kk: vv.numpy().copy() for kk, vv in init.items()}
                w[k].reshape(-1)[i] += sgn * h
                safetensors_io.write(f"{d}/fd.safetensors", w)
                r = subprocess.run([AXC, "run", "--interp", f"{d}/m.ax", "--weights", f"{d}/fd.safetensors",
                                    "--input", f"x={d}/x.npy", "--output", f"{d}/y.npy"],
                                   capture_output=True, text=True)
                if r.returncode:
                    report(name + " vs finite differences", False, r.stderr)
                    return
                vals.append(loss_np(loss, np.load(f"{d}/y.npy"), t))
            fd = (vals[0] - vals[1]) / (2 * h)
            g = grads[k].reshape(-1)[i]
            worst = max(worst, abs(fd - g) / max(abs(g), 1e-3))
    report(name + " vs finite differences", worst <= 1e-5, f"worst relative difference {worst:.3g}")


class LnNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.fc = torch.nn.LayerNorm(6), torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(F.gelu(self.ln(x)))


class AttnNet(torch.nn.Module):
    """Single-head attention written in matmul/softmax/transpose, residual, LayerNorm."""
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = torch.nn.Linear(6, 6), torch.nn.Linear(6, 6, bias=False), torch.nn.Linear(6, 6)
        self.ln = torch.nn.LayerNorm(6)

    def forward(self, x):
        s = torch.softmax(torch.matmul(self.q(x), self.k(x).transpose(1, 2)) / 2.0, -1)
        return self.ln(x + torch.matmul(s, self.v(x)))


class EmbNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.e, self.d = torch.nn.Embedding(10, 5), torch.nn.Linear(15, 3)

    def forward(self, i):
        return self.d(torch.tanh(self.e(i)).reshape(i.shape[0], 15))


class BnNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.bn, self.fc2 = torch.nn.Linear(6, 5, bias=False), torch.nn.BatchNorm1d(5), torch.nn.Linear(5, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.bn(self.fc1(x))))


class PoolNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(3, 4), torch.nn.Linear(4, 3)

    def forward(self, x):   # NHWC, as axc
        h = torch.sigmoid(self.fc1(x)).permute(0, 3, 1, 2)
        h = F.avg_pool2d(h, 2).permute(0, 2, 3, 1)
        return self.fc2(h.mean((1, 2)))


# name, .ax body (DTYPE substituted), twin, input (shape, kind), loss
MODELS = [
    ("meanpool", "@axiom dtype=DTYPE function m(x::DTYPE[2, 4, 6, 3])\n    fc1 = Dense(3 => 4)\n    pool = MeanPool((2, 2))\n"
     "    gp = GlobalMeanPool()\n    fc2 = Dense(4 => 3)\n    return fc2(gp(pool(sigmoid(fc1(x)))))\nend\n",
     PoolNet, ((2, 4, 6, 3), "normal"), "mse"),
    ("batchnorm", "@axiom dtype=DTYPE function m(x::DTYPE[8, 6])\n    fc1 = Dense(6 => 5, bias=false)\n    bn = BatchNorm(5)\n"
     "    fc2 = Dense(5 => 3)\n    return fc2(relu(bn(fc1(x))))\nend\n", BnNet, ((8, 6), "normal"), "cross_entropy"),
    ("layernorm", "@axiom dtype=DTYPE function m(x::DTYPE[4, 3, 6])\n    ln = LayerNorm(6)\n    fc = Dense(6 => 3)\n"
     "    return fc(gelu(ln(x)))\nend\n", LnNet, ((4, 3, 6), "normal"), "mse"),
    ("attention", "@axiom dtype=DTYPE function m(x::DTYPE[2, 5, 6])\n    q = Dense(6 => 6)\n    k = Dense(6 => 6, bias=false)\n"
     "    v = Dense(6 => 6)\n    ln = LayerNorm(6)\n"
     "    s = softmax(matmul(q(x), transpose(k(x), (0, 2, 1))) ./ 2.0)\n    return ln(x + matmul(s, v(x)))\nend\n",
     AttnNet, ((2, 5, 6), "normal"), "mse"),
    ("embedding", "@axiom dtype=DTYPE function m(x::Int64[4, 3])\n    e = Embedding(10 => 5)\n    d = Dense(15 => 3)\n"
     "    return d(reshape(tanh(e(x)), (4, 15)))\nend\n", EmbNet, ((4, 3), "int"), "cross_entropy"),
]


def model_data(rng, shape, kind, out_shape, loss, steps, np_dtype):
    n = (steps * shape[0],) + shape[1:]
    x = rng.integers(0, 10, n).astype(np.int64) if kind == "int" else rng.standard_normal(n).astype(np_dtype)
    if loss == "cross_entropy":
        t = rng.integers(0, out_shape[-1], steps * shape[0]).astype(np.int64)
    else:
        t = rng.standard_normal((steps * out_shape[0],) + tuple(out_shape[1:])).astype(np_dtype)
    return x, t


def models(d, rng):
    """The other models: gradients in Float64 (autograd, finite differences), then the
    oracle in Float32 for each optimizer kind."""
    global BATCH
    for name, src, twin_cls, (shape, kind), loss in MODELS:
        BATCH = shape[0]
        torch.set_default_dtype(torch.float64)
        twin = twin_cls()
        init = {k: v.detach().clone() for k, v in twin.state_dict().items() if "num_batches" not in k}
        out_shape = twin(torch.from_numpy(model_data(rng, shape, kind, (1, 1), "mse", 1, np.float64)[0])).shape
        x, t = model_data(rng, shape, kind, out_shape, loss, 1, np.float64)
        r, got = axc_train(d, src.replace("DTYPE", "Float64"), init, loss, "sgd", ["--lr", "1"], x, t)
        if r.returncode:
            report(f"train gradient {name} vs autograd", False, r.stderr)
        else:
            grads = {k: init[k].numpy() - np.asarray(got[k]) for k in init}
            twin.zero_grad()
            loss_fn(loss, twin(torch.from_numpy(x)), torch.from_numpy(t)).backward()
            errs = {k: rel_err(grads[k], p.grad.numpy()) for k, p in twin.named_parameters()}
            report(f"train gradient {name} vs autograd", max(errs.values()) <= 1e-9, f"relative errors {errs}")
            if name != "batchnorm":   # axc run --interp is inference mode: running statistics
                fd_check(d, f"train gradient {name}", None, loss, init, grads, x, t, rng)
        torch.set_default_dtype(torch.float32)
        for opt, targs, flags in (OPTIMIZERS[1], OPTIMIZERS[4], OPTIMIZERS[6], OPTIMIZERS[8]):
            twin = twin_cls()
            init = {k: v.detach().clone() for k, v in twin.state_dict().items() if "num_batches" not in k}
            x, t = model_data(rng, shape, kind, out_shape, loss, STEPS, np.float32)
            r, got = axc_train(d, src.replace("DTYPE", "Float32"), init, loss, opt, flags, x, t)
            label = f"train oracle {name} {opt} {' '.join(flags)}"
            if r.returncode:
                report(label, False, r.stderr)
                continue
            torch_train(twin, loss, opt, targs, x, t, STEPS)
            errs = {k: rel_err(got[k], v.detach().numpy()) for k, v in twin.state_dict().items() if k in init}
            report(label, max(errs.values()) <= 1e-4 and set(got) == set(init), f"relative errors {errs}")
    BATCH = 4


def main():
    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    with tempfile.TemporaryDirectory() as d:
        oracle(d, rng)
        gradients(d, rng)
        models(d, rng)


if __name__ == "__main__":
    main()
