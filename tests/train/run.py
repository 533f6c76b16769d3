"""Suite `train`: `axc train` (docs/training.md) against PyTorch.

Oracle: the same initial weights (written by this script), the same batches
in the same order, 20 steps; every trained parameter must match PyTorch's
torch.optim (Lion: the formula of docs/training.md written out below) within
1e-4 relative (max abs difference over the tensor's max abs value).
Gradients: one SGD step with lr=1 gives each parameter's gradient (init -
trained), checked against PyTorch autograd and against central finite
differences of the loss through the reference interpreter (axc run --interp)
in Float64.  The trained file loads into the PyTorch twin with strict=True."""
import copy
import os
import shlex
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "torch"))
import safetensors_io  # noqa: E402

AXC = os.environ.get("AXC", "build/bin/axc")
# AXC_TRAIN_EXTRA=--interp: every `axc train` here on the reference interpreter
# instead of the compiled step (tests/run.sh runs the oracles both ways)
EXTRA = os.environ.get("AXC_TRAIN_EXTRA", "").split()
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
    """docs/training.md: u = sign(b1 m + (1 - b1) g), p -= lr (u + wd p), m = b2 m + (1 - b2) g."""
    u = torch.sign(b1 * m + (1 - b1) * g)
    p -= lr * (u + wd * p)
    m.mul_(b2).add_((1 - b2) * g)


def clip_grads(params, clip):
    """torch.nn.utils' clipping of the gradients, clip = ("norm", max_norm) for
    clip_grad_norm_ or ("value", bound) for clip_grad_value_ (None: none); whether
    it changed any gradient."""
    params = list(params)
    if clip and clip[0] == "norm":
        return float(torch.nn.utils.clip_grad_norm_(params, clip[1])) > clip[1]
    if clip:
        changed = any(bool((p.grad.abs() > clip[1]).any()) for p in params)
        torch.nn.utils.clip_grad_value_(params, clip[1])
        return changed
    return False


def torch_train(twin, loss, opt, args, x, t, steps, clip=None, each=None):
    """steps of training, the gradients clipped first (clip_grads) when clip is
    given, each(step) called after each update; the number of steps that clipped."""
    params = list(twin.parameters())
    if opt == "lion":
        moments = [torch.zeros_like(p) for p in params]
    else:
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[opt]
        optimizer = cls(params, **args)
    clipped = 0
    for s in range(steps):
        xb, tb = torch.from_numpy(x[s * BATCH:(s + 1) * BATCH]), torch.from_numpy(t[s * BATCH:(s + 1) * BATCH])
        twin.zero_grad()
        loss_fn(loss, twin(xb), tb).backward()
        clipped += clip_grads(params, clip)
        if opt == "lion":
            with torch.no_grad():
                for p, m in zip(params, moments):
                    lion_step(p, p.grad, m, args.get("lr", 1e-4), 0.9, 0.99, args.get("weight_decay", 0.0))
        else:
            optimizer.step()
        if each:
            each(s)
    return clipped


def axc_train(d, src, init, loss, opt, flags, x, t):
    open(f"{d}/m.ax", "w").write(src)
    safetensors_io.write(f"{d}/init.safetensors", init)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/t.npy", t)
    cmd = [AXC, "train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--input", f"x={d}/x.npy",
           "--target", f"{d}/t.npy", f"--loss={loss}", f"--optimizer={opt}", *flags, *EXTRA,
           "--save-weights", f"{d}/out.safetensors"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, (safetensors_io.read(f"{d}/out.safetensors") if r.returncode == 0 else None)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    a = a.reshape(b.shape) if a.size == b.size else a
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12))


def report(name, ok, detail=""):
    name = f"{name} [{' '.join(EXTRA)}]" if EXTRA else name
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


def oracle_cases():
    """Every loss with every optimizer configuration on the compiled step; on the
    interpreter (the rerun, EXTRA=--interp) each configuration once, the losses
    taken in turn (each of the three three times): the interpreter's loss
    gradient and its optimizer update are separate steps (compiler/train.c:
    interp_step, then apply_updates), so the cross product repeats what these
    nine cases already run."""
    losses = (("cross_entropy", "relu"), ("mse", "tanh"), ("bce_with_logits", "gelu"))
    if EXTRA:
        return [(*losses[i % 3], o) for i, o in enumerate(OPTIMIZERS)]
    return [(loss, act, o) for loss, act in losses for o in OPTIMIZERS]


def oracle(d, rng):
    for loss, act, (opt, targs, flags) in oracle_cases():
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
    """Central differences of the loss of the interpreter's forward (axc run --interp),
    one per parameter tensor along a random Gaussian direction v over all its
    entries: (L(w + h v) - L(w - h v)) / 2h against g . v, relative to
    sum |g_i v_i| (no cancellation flatters it).  Every entry's gradient enters
    (two sampled entries per tensor did before, with four runs instead of two);
    a wrong entry goes unseen only if its error and the others' cancel in g . v
    exactly, which a continuous random v makes a probability-zero event."""
    worst = 0.0
    dirs = np.random.default_rng(zlib.crc32(name.encode()))
    for k in init:
        # the draw the two sampled entries took, kept so that the later cases' data stay as they were
        # (max_min's Float32 oracle is within 1.6x of its bound on other data)
        rng.choice(init[k].numel(), size=min(2, init[k].numel()), replace=False)
        v = dirs.standard_normal(init[k].shape)
        vals = []
        for sgn in (1, -1):
            w = {kk: vv.numpy().copy() for kk, vv in init.items()}
            w[k] = w[k] + sgn * h * v
            safetensors_io.write(f"{d}/fd.safetensors", w)
            r = subprocess.run([AXC, "run", "--interp", f"{d}/m.ax", "--weights", f"{d}/fd.safetensors",
                                "--input", f"x={d}/x.npy", "--output", f"{d}/y.npy"],
                               capture_output=True, text=True)
            if r.returncode:
                report(name + " vs finite differences", False, r.stderr)
                return
            vals.append(loss_np(loss, np.load(f"{d}/y.npy"), t))
        fd = (vals[0] - vals[1]) / (2 * h)
        gv = np.asarray(grads[k]).reshape(v.shape) * v
        worst = max(worst, abs(fd - gv.sum()) / max(np.abs(gv).sum(), 1e-3))
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


def nchw(x):
    return x.permute(0, 3, 1, 2)


def nhwc(x):
    return x.permute(0, 2, 3, 1)


class ConvNet(torch.nn.Module):
    """Strided, padded, dilated, grouped and depthwise convs, an overlapping
    MaxPool and a padded strided MeanPool."""
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1)
        self.c2 = torch.nn.Conv2d(6, 6, 3, dilation=2, padding=(1, 2), groups=3)
        self.dw = torch.nn.Conv2d(6, 6, 3, groups=6, padding=1, bias=False)
        self.fc = torch.nn.Linear(6, 3)

    def forward(self, x):
        h = self.dw(torch.tanh(self.c2(torch.tanh(self.c1(nchw(x))))))
        h = F.avg_pool2d(F.max_pool2d(h, 2, stride=1), 3, stride=2, padding=1)
        return self.fc(h.mean((2, 3)))


class LeNetBn(torch.nn.Module):
    """LeNet-5 with BatchNorm after each conv (NHWC flatten, as axc); the convs have no
    bias, as usual before a BatchNorm (its gradient would be zero: round-off that Adam
    and Lion scale up to lr-sized steps on both sides, differently)."""
    def __init__(self):
        super().__init__()
        self.c1, self.bn1 = torch.nn.Conv2d(1, 6, 5, padding=2, bias=False), torch.nn.BatchNorm2d(6)
        self.c2, self.bn2 = torch.nn.Conv2d(6, 16, 5, bias=False), torch.nn.BatchNorm2d(16)
        self.f1, self.f2, self.f3 = torch.nn.Linear(400, 120), torch.nn.Linear(120, 84), torch.nn.Linear(84, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn1(self.c1(nchw(x)))), 2)
        h = F.max_pool2d(F.relu(self.bn2(self.c2(h))), 2)
        h = nhwc(h).reshape(h.shape[0], 400)
        return self.f3(F.relu(self.f2(F.relu(self.f1(h)))))


class Block(torch.nn.Module):
    """Post-LN transformer block with causal multi-head attention."""
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.ln1, self.ln2 = torch.nn.LayerNorm(8), torch.nn.LayerNorm(8)
        self.ff1, self.ff2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

    def forward(self, x):
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        h = self.ln1(x + self.attn(x, x, x, attn_mask=mask, need_weights=False)[0])
        return self.ln2(h + self.ff2(F.gelu(self.ff1(h))))


class CrossAttn(torch.nn.Module):
    """Non-causal attention without biases, queries and keys from different tensors."""
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)
        self.attn = torch.nn.MultiheadAttention(6, 3, bias=False, batch_first=True)
        self.out = torch.nn.Linear(6, 2)

    def forward(self, x):
        y = torch.tanh(self.fc(x))
        return self.out(self.attn(x, y, y, need_weights=False)[0])


class NormNet(torch.nn.Module):
    """A pad=same strided conv (asymmetric padding, its input gradient needed), GroupNorm,
    ConvTranspose2d, a ceil-mode MaxPool and InstanceNorm."""
    def __init__(self):
        super().__init__()
        self.c0 = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.c1, self.gn = torch.nn.Conv2d(4, 6, 3, stride=2), torch.nn.GroupNorm(3, 6)
        self.up = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        h = torch.tanh(self.up(self.gn(self.c1(F.pad(torch.tanh(self.c0(nchw(x))), (1, 1, 0, 1))))))
        h = torch.tanh(F.instance_norm(F.max_pool2d(h, 3, 2, ceil_mode=True)))
        return self.fc(h.mean((2, 3)))


class ExtremaPow(torch.nn.Module):
    """maximum/minimum over a dim (torch.amax/amin), a tensor power, a nearest Upsample."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 5), torch.nn.Linear(5, 2)

    def forward(self, x):
        h = self.fc1(x)
        s = torch.sigmoid(h)
        r = torch.amax(h, 1, keepdim=True) + torch.amin(s ** (s + 0.5), 2, keepdim=True)
        return self.fc2(nhwc(F.interpolate(nchw(r), scale_factor=(2, 3), mode="nearest")) * h.mean((1, 2), keepdim=True))


class ProdFmod(torch.nn.Module):
    """prod over the batch with exactly one zero per column 0 (x's row 0 is zero in
    every batch and fc1's bias[0] is 0, so d/d bias[0] takes torch's zero path), fmod
    with both operands trained (d/db = -trunc(a/b))."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(6, 5), torch.nn.Linear(6, 5), torch.nn.Linear(5, 3)
        with torch.no_grad():
            self.fc1.bias[0] = 0

    def forward(self, x):
        h = self.fc1(x)
        r = torch.fmod(self.fc2(x) * 3.0, torch.sigmoid(h) + 0.5)
        return self.fc3(torch.tanh(r * torch.prod(h, 0, keepdim=True)))


class Bilinear(torch.nn.Module):
    """bilinear Upsample, align_corners false and true."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(5, 4), torch.nn.Linear(4, 3)

    def forward(self, x):
        h = nchw(torch.tanh(self.fc1(x)))
        h = F.interpolate(h, scale_factor=(2, 3), mode="bilinear", align_corners=False)
        h = F.interpolate(torch.sigmoid(h), scale_factor=(3, 2), mode="bilinear", align_corners=True)
        return self.fc2(nhwc(h))


class MaskedAttn(torch.nn.Module):
    """Attention with a key padding mask: x's last feature is the mask (0: padding;
    model_data's "mask" kind keeps key 0 of every row)."""
    def __init__(self):
        super().__init__()
        self.attn, self.fc = torch.nn.MultiheadAttention(6, 2, batch_first=True), torch.nn.Linear(6, 3)

    def forward(self, x):
        h = x[:, :, :6]
        a = self.attn(h, h, h, key_padding_mask=x[:, :, 6] == 0, need_weights=False)[0]
        return self.fc(torch.tanh(a))


class Recurrent(torch.nn.Module):
    """A two-layer bidirectional GRU, then an LSTM (PyTorch's gate orders), the last step read."""
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(4, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.lstm = torch.nn.LSTM(10, 4, batch_first=True)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        y = self.lstm(torch.tanh(self.gru(x)[0]))[0]
        return self.fc(y[:, -1])


class Pieces(torch.nn.Module):
    """chunk, strided slices and concat."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(6, 8), torch.nn.Linear(9, 3)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        a, b = torch.chunk(h, 2, 1)
        return self.fc2(torch.cat([b, h[:, 1:8:3] * 2.0, a[:, 0:2]], 1))


class ClampNet(torch.nn.Module):
    """torch.clamp with number bounds, and with computed tensor bounds (each gets
    dy where x is past it; x gets dy within them, the bounds included)."""
    def __init__(self):
        super().__init__()
        self.fc1, self.lo, self.fc2 = torch.nn.Linear(6, 5), torch.nn.Linear(6, 1), torch.nn.Linear(5, 3)

    def forward(self, x):
        h, b = self.fc1(x), self.lo(x)
        return self.fc2(torch.clamp(h, -0.5, 0.7) + torch.clamp(h, b, b + 1.0))


class VectorMatmul(torch.nn.Module):
    """matmul with 1-D operands: vector @ matrix, matrix @ vector and
    vector @ vector, as torch.matmul promotes and then drops the dims."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.col, self.fc3 = (torch.nn.Linear(6, 5), torch.nn.Linear(6, 5),
                                                  torch.nn.Linear(6, 1), torch.nn.Linear(5, 3))

    def forward(self, x):
        h, v = self.fc1(x), self.col(x).reshape(4)
        u = torch.matmul(v, h)
        w = torch.matmul(self.fc2(x), u)
        s = torch.matmul(v, w).reshape(1, 1)
        return self.fc3(torch.tanh(h * torch.tanh(w.reshape(4, 1)) + torch.tanh(u.reshape(1, 5)) * torch.tanh(s)))


class MaxMinNet(torch.nn.Module):
    """Elementwise max/min (torch.maximum/minimum) of two layers, one broadcast
    from a column: dy goes to the winner."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.col, self.fc3 = (torch.nn.Linear(6, 5), torch.nn.Linear(6, 5),
                                                  torch.nn.Linear(6, 1), torch.nn.Linear(5, 3))

    def forward(self, x):
        a, b, c = self.fc1(x), self.fc2(x), self.col(x)
        return self.fc3(torch.maximum(a, b) + torch.minimum(c, a))


class MaxTieNet(torch.nn.Module):
    """max/min of two layers that start equal, so that they tie everywhere (and
    stay equal): torch.maximum/minimum give each half of dy, where a rule that
    gave a tie to one operand would train fc1 and leave fc2."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(6, 5), torch.nn.Linear(6, 5), torch.nn.Linear(5, 3)
        self.fc2.load_state_dict(self.fc1.state_dict())

    def forward(self, x):
        a, b = self.fc1(x), self.fc2(x)
        return self.fc3(torch.maximum(a, b) + 0.5 * torch.minimum(a, b))


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
    ("conv", "@axiom dtype=DTYPE function m(x::DTYPE[2, 9, 9, 4])\n    c1 = Conv((3, 3), 4 => 6, stride=2, pad=1)\n"
     "    c2 = Conv((3, 3), 6 => 6, dilation=2, pad=(1, 2), groups=3)\n    dw = Conv((3, 3), 6 => 6, groups=6, pad=1, bias=false)\n"
     "    mp = MaxPool((2, 2), stride=1)\n    ap = MeanPool((3, 3), stride=2, pad=1)\n    gp = GlobalMeanPool()\n"
     "    fc = Dense(6 => 3)\n    return fc(gp(ap(mp(dw(tanh(c2(tanh(c1(x)))))))))\nend\n",
     ConvNet, ((2, 9, 9, 4), "normal"), "mse"),
    ("lenet5_bn", "@axiom dtype=DTYPE function m(x::DTYPE[4, 28, 28, 1])\n    c1 = Conv((5, 5), 1 => 6, pad=2, bias=false)\n    bn1 = BatchNorm(6)\n"
     "    c2 = Conv((5, 5), 6 => 16, bias=false)\n    bn2 = BatchNorm(16)\n    f1 = Dense(400 => 120)\n    f2 = Dense(120 => 84)\n"
     "    f3 = Dense(84 => 10)\n    pool = MaxPool((2, 2))\n    flat = Flatten()\n"
     "    h = pool(relu(bn2(c2(pool(relu(bn1(c1(x))))))))\n    return f3(relu(f2(relu(f1(flat(h))))))\nend\n",
     LeNetBn, ((4, 28, 28, 1), "normal"), "cross_entropy"),
    ("transformer", "@axiom dtype=DTYPE function m(x::DTYPE[2, 5, 8])\n    attn = MultiHeadAttention(8 => 2, causal=true)\n"
     "    ln1 = LayerNorm(8)\n    ff1 = Dense(8 => 16)\n    ff2 = Dense(16 => 8)\n    ln2 = LayerNorm(8)\n"
     "    h = ln1(x + attn(x))\n    return ln2(h + ff2(gelu(ff1(h))))\nend\n", Block, ((2, 5, 8), "normal"), "mse"),
    ("cross_attention", "@axiom dtype=DTYPE function m(x::DTYPE[2, 4, 6])\n    fc = Dense(6 => 6)\n"
     "    attn = MultiHeadAttention(6 => 3, bias=false)\n    out = Dense(6 => 2)\n    y = tanh(fc(x))\n"
     "    return out(attn(x, y, y))\nend\n", CrossAttn, ((2, 4, 6), "normal"), "mse"),
    ("norms_convt", "@axiom dtype=DTYPE function m(x::DTYPE[2, 6, 5, 4])\n    c0 = Conv((3, 3), 4 => 4, pad=1)\n"
     "    c1 = Conv((3, 3), 4 => 6, stride=2, pad=same)\n"
     "    gn = GroupNorm(3, 6)\n    up = ConvTranspose((3, 3), 6 => 4, stride=2, pad=1, output_padding=1)\n"
     "    mp = MaxPool((3, 3), stride=2, ceil=true)\n    inn = InstanceNorm(4)\n    gp = GlobalMeanPool()\n"
     "    fc = Dense(4 => 3)\n    return fc(gp(tanh(inn(mp(tanh(up(gn(c1(tanh(c0(x)))))))))))\nend\n", NormNet, ((2, 6, 5, 4), "normal"), "mse"),
    ("extrema_pow_upsample", "@axiom dtype=DTYPE function m(x::DTYPE[2, 3, 4, 6])\n    fc1 = Dense(6 => 5)\n"
     "    fc2 = Dense(5 => 2)\n    up = Upsample((2, 3))\n    h = fc1(x)\n    s = sigmoid(h)\n"
     "    r = maximum(h, dims=1) + minimum(s .^ (s + 0.5), dims=2)\n    return fc2(up(r) .* mean(mean(h, dims=1), dims=2))\nend\n",
     ExtremaPow, ((2, 3, 4, 6), "normal"), "mse"),
    ("concat_slice", "@axiom dtype=DTYPE function m(x::DTYPE[4, 6])\n    fc1 = Dense(6 => 8)\n    fc2 = Dense(9 => 3)\n"
     "    h = tanh(fc1(x))\n    a, b = chunk(h, 2; dims=1)\n"
     "    return fc2(concat(b, h[:, 1:8:3] .* 2.0, a[:, 0:2]; dims=1))\nend\n", Pieces, ((4, 6), "normal"),
     "bce_with_logits"),
    ("clamp", "@axiom dtype=DTYPE function m(x::DTYPE[4, 6])\n    fc1 = Dense(6 => 5)\n    lo = Dense(6 => 1)\n"
     "    fc2 = Dense(5 => 3)\n    h = fc1(x)\n    b = lo(x)\n"
     "    return fc2(clamp(h, -0.5, 0.7) + clamp.(h, b, b + 1.0))\nend\n", ClampNet, ((4, 6), "normal"), "mse"),
    ("max_min", "@axiom dtype=DTYPE function m(x::DTYPE[4, 6])\n    fc1 = Dense(6 => 5)\n    fc2 = Dense(6 => 5)\n"
     "    col = Dense(6 => 1)\n    fc3 = Dense(5 => 3)\n    a = fc1(x)\n"
     "    return fc3(max.(a, fc2(x)) + min(col(x), a))\nend\n", MaxMinNet, ((4, 6), "normal"), "mse"),
    ("max_tie", "@axiom dtype=DTYPE function m(x::DTYPE[4, 6])\n    fc1 = Dense(6 => 5)\n    fc2 = Dense(6 => 5)\n"
     "    fc3 = Dense(5 => 3)\n    a = fc1(x)\n    b = fc2(x)\n"
     "    return fc3(max.(a, b) + 0.5 * min.(a, b))\nend\n", MaxTieNet, ((4, 6), "normal"), "mse"),
    ("vector_matmul", "@axiom dtype=DTYPE function m(x::DTYPE[4, 6])\n    fc1 = Dense(6 => 5)\n    fc2 = Dense(6 => 5)\n"
     "    col = Dense(6 => 1)\n    fc3 = Dense(5 => 3)\n    h = fc1(x)\n    v = reshape(col(x), (4,))\n"
     "    u = matmul(v, h)\n    w = matmul(fc2(x), u)\n    s = reshape(matmul(v, w), (1, 1))\n"
     "    return fc3(tanh(h .* tanh(reshape(w, (4, 1))) + tanh(reshape(u, (1, 5))) .* tanh(s)))\nend\n",
     VectorMatmul, ((4, 6), "normal"), "mse"),
    ("prod_fmod", "@axiom dtype=DTYPE function m(x::DTYPE[4, 6])\n    fc1 = Dense(6 => 5)\n    fc2 = Dense(6 => 5)\n"
     "    fc3 = Dense(5 => 3)\n    h = fc1(x)\n    r = fmod(fc2(x) .* 3.0, sigmoid(h) + 0.5)\n"
     "    return fc3(tanh(r .* prod(h, dims=0)))\nend\n", ProdFmod, ((4, 6), "zero_row"), "mse"),
    ("bilinear", "@axiom dtype=DTYPE function m(x::DTYPE[2, 3, 4, 5])\n    fc1 = Dense(5 => 4)\n"
     "    up1 = Upsample((2, 3), mode=bilinear)\n    up2 = Upsample((3, 2), mode=bilinear, align_corners=true)\n"
     "    fc2 = Dense(4 => 3)\n    return fc2(up2(sigmoid(up1(tanh(fc1(x))))))\nend\n",
     Bilinear, ((2, 3, 4, 5), "normal"), "mse"),
    ("masked_attention", "@axiom dtype=DTYPE function m(x::DTYPE[2, 5, 7])\n"
     "    attn = MultiHeadAttention(6 => 2)\n    fc = Dense(6 => 3)\n    h = x[:, :, 0:6]\n"
     "    mask = reshape(x[:, :, 6:7], (2, 5))\n    return fc(tanh(attn(h, mask)))\nend\n",
     MaskedAttn, ((2, 5, 7), "mask"), "mse"),
    ("gru_lstm", "@axiom dtype=DTYPE function m(x::DTYPE[3, 6, 4])\n"
     "    gru = GRU(4 => 5, num_layers=2, bidirectional=true)\n    lstm = LSTM(10 => 4)\n    fc = Dense(4 => 3)\n"
     "    y = lstm(tanh(gru(x)))\n    return fc(reshape(y[:, 5:6, :], (3, 4)))\nend\n",
     Recurrent, ((3, 6, 4), "normal"), "cross_entropy"),
]


def model_data(rng, shape, kind, out_shape, loss, steps, np_dtype):
    n = (steps * shape[0],) + shape[1:]
    x = rng.integers(0, 10, n).astype(np.int64) if kind == "int" else rng.standard_normal(n).astype(np_dtype)
    if kind == "zero_row":   # row 0 of every batch zero
        x.reshape((steps, shape[0], -1))[:, 0] = 0
    if kind == "mask":   # the last feature a key padding mask, key 0 always kept
        x[..., -1] = rng.random(x.shape[:-1]) < 0.6
        x[:, 0, -1] = 1
    if loss == "cross_entropy":
        t = rng.integers(0, out_shape[-1], steps * shape[0]).astype(np.int64)
    else:
        t = rng.standard_normal((steps * out_shape[0],) + tuple(out_shape[1:])).astype(np_dtype)
    return x, t


def comparable(key, value):
    """What an oracle compares: all of it, but for attention's key bias (the middle
    third of in_proj_bias), whose gradient is zero in exact arithmetic (softmax does
    not change when every key's score moves by the same q.b_k), so that Adam and Lion,
    which scale any gradient to about lr, turn both sides' round-off into unrelated
    steps.  The gradient tests check that block (against autograd, in Float64)."""
    value = np.asarray(value)
    if key.endswith("in_proj_bias"):
        third = value.shape[0] // 3
        return np.concatenate([value[:third], value[2 * third:]])
    return value


def float32_reference(twin, loss, opt, targs, x, t, keys):
    """The reference an oracle compares a Float32 model with: PyTorch's own Float32
    training of (a copy of) twin on x, t; and its tolerance: ten times the distance
    at which that ends from the same training in Float64 from the same start (the
    round-off any Float32 implementation carries, which a model can amplify by
    itself: a max-pool or ReLU decision that flips in one step of 20, a norm after a
    conv, products of layers, Adam scaling a gradient that cancels to nearly zero
    into a full step; two Float32 trajectories then part by a few times that, and
    the `axc train` one, in double but for its Float32 parameters, ended up to 7x
    from PyTorch's on vector_matmul under Nesterov SGD), and at least 1e-5.
    Returns (reference state, tolerance)."""
    twin32, twin64 = copy.deepcopy(twin), copy.deepcopy(twin).double()
    torch_train(twin32, loss, opt, targs, x, t, STEPS)
    torch_train(twin64, loss, opt, targs, x if x.dtype == np.int64 else x.astype(np.float64),
                t if t.dtype == np.int64 else t.astype(np.float64), STEPS)
    ref = {k: v.detach().numpy() for k, v in twin32.state_dict().items()}
    ref64 = {k: v.detach().numpy() for k, v in twin64.state_dict().items()}
    drift = max(rel_err(comparable(k, ref[k]), comparable(k, ref64[k])) for k in keys)
    return ref, max(1e-5, 10 * drift)


MODEL_OPTIMIZERS = (OPTIMIZERS[1], OPTIMIZERS[4], OPTIMIZERS[6], OPTIMIZERS[8])


def model_optimizers(i):
    """The optimizer configurations the i-th model trains under: all four on the
    compiled step; on the interpreter rerun (EXTRA=--interp) one, in turn down the
    list (each on five models): the model's forward and gradients on the
    interpreter are checked by its Float64 gradient case and its Float32 training
    by that one configuration, while every configuration runs on the interpreter
    in oracle(); the model x optimizer cross product repeats both."""
    return MODEL_OPTIMIZERS if not EXTRA else (MODEL_OPTIMIZERS[i % len(MODEL_OPTIMIZERS)],)


def models(d, rng):
    """The other models: gradients in Float64 (autograd, finite differences), then the
    oracle (a Float32 model against PyTorch's Float32, float32_reference) for each
    optimizer kind, Adam included."""
    global BATCH
    pick = os.environ.get("TRAIN_MODELS", "").split()
    for i, (name, src, twin_cls, (shape, kind), loss) in enumerate(MODELS):
        if pick and name not in pick:
            continue
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
            # axc run --interp is inference mode (running statistics): no finite differences with BatchNorm.
            # On the interpreter rerun neither: its gradients match autograd within 1e-9 (above), and the
            # compiled run checked them against finite differences (the same forward, axc run --interp)
            if "bn" not in name and name != "batchnorm" and not EXTRA:
                fd_check(d, f"train gradient {name}", None, loss, init, grads, x, t, rng)
        torch.set_default_dtype(torch.float32)
        for opt, targs, flags in model_optimizers(i):
            twin = twin_cls()
            init = {k: v.detach().clone() for k, v in twin.state_dict().items() if "num_batches" not in k}
            x, t = model_data(rng, shape, kind, out_shape, loss, STEPS, np.float32)
            r, got = axc_train(d, src.replace("DTYPE", "Float32"), init, loss, opt, flags, x, t)
            label = f"train oracle {name} {opt} {' '.join(flags)}"
            if r.returncode:
                report(label, False, r.stderr)
                continue
            ref, tol = float32_reference(twin, loss, opt, targs, x, t, init)
            errs = {k: rel_err(comparable(k, got[k]), comparable(k, ref[k])) for k in init}
            report(f"{label} vs PyTorch Float32 (rel <= 10x its own drift from Float64, >= 1e-5)",
                   max(errs.values()) <= tol and set(got) == set(init),
                   f"relative errors {errs}, tolerance {tol:.3g}")
    BATCH = 4


M64 = (1 << 64) - 1


def mix64(z):
    """runtime/axrt.h axrt_mix64 (splitmix64's mixer), as docs/training.md documents it."""
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def dropout_keep(seed, stream, step, shape, p):
    """The kept elements of Dropout layer `stream` (graph order) at 1-based step `step`."""
    base = mix64(mix64(mix64(seed) ^ stream) ^ step)
    n = int(np.prod(shape))
    return np.array([(mix64(base ^ i) >> 11) * 2.0 ** -53 >= p for i in range(n)]).reshape(shape)


DROP_SRC = ("@axiom dtype=DTYPE function m(x::DTYPE[4, 6])\n    fc1 = Dense(6 => 8)\n    d1 = Dropout(P1)\n"
            "    fc2 = Dense(8 => 3)\n    d2 = Dropout(P2)\n    return fc2(d1(tanh(fc1(d2(x)))))\nend\n")


class DropNet(torch.nn.Module):
    """The twin with its masks injected: keep2 on the input (stream 0), keep1 on the hidden (stream 1)."""
    def __init__(self, p1, p2):
        super().__init__()
        self.fc1, self.fc2, self.p1, self.p2 = torch.nn.Linear(6, 8), torch.nn.Linear(8, 3), p1, p2
        self.keep1 = self.keep2 = None

    def forward(self, x):
        if self.keep2 is not None:
            x = x * torch.from_numpy(self.keep2).to(x.dtype) / (1 - self.p2)
        h = torch.tanh(self.fc1(x))
        if self.keep1 is not None:
            h = h * torch.from_numpy(self.keep1).to(h.dtype) / (1 - self.p1)
        return self.fc2(h)


def drop_train(twin, loss, opt, args, x, t, steps, seed):
    """torch_train with step s's masks (1-based) injected before each step."""
    params = list(twin.parameters())
    optimizer = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[opt](params, **args)
    for s in range(steps):
        twin.keep2 = dropout_keep(seed, 0, s + 1, (4, 6), twin.p2) if twin.p2 else None
        twin.keep1 = dropout_keep(seed, 1, s + 1, (4, 8), twin.p1) if twin.p1 else None
        xb, tb = torch.from_numpy(x[s * 4:(s + 1) * 4]), torch.from_numpy(t[s * 4:(s + 1) * 4])
        twin.zero_grad()
        loss_fn(loss, twin(xb), tb).backward()
        optimizer.step()


def dropout(d, rng):
    """Dropout in training: masks from the counter-based generator (not PyTorch's), so
    the twin gets the same masks injected; one SGD step (lr=1) in Float64 checks that
    the backward used the forward's mask and its 1/(1-p) scale; 20 Adam steps; p=0
    against plain PyTorch; another --seed another result."""
    global BATCH
    BATCH = 4
    src = DROP_SRC.replace("P1", "0.5").replace("P2", "0.25")
    keeps = [dropout_keep(11, k, s, (400,), 0.5) for k in (0, 1) for s in range(1, 6)]
    frac = float(np.mean(keeps))
    report("train dropout generator keeps 1 - p", 0.45 < frac < 0.55, f"kept {frac}")
    for dtype, opt, targs, flags, steps in (("Float64", "sgd", {"lr": 1.0}, ["--lr", "1"], 1),
                                              ("Float32", "adam", {"lr": 0.01}, ["--lr", "0.01"], STEPS)):
        torch.set_default_dtype(torch.float64 if dtype == "Float64" else torch.float32)
        np_dtype = np.float64 if dtype == "Float64" else np.float32
        twin = DropNet(0.5, 0.25)
        init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
        x, t = make_data(rng, "mse", steps, np_dtype)
        r, got = axc_train(d, src.replace("DTYPE", dtype), init, "mse", opt, flags + ["--seed", "11"], x, t)
        name = f"train dropout {opt} {steps} step(s) vs autograd with the same masks"
        if r.returncode:
            report(name, False, r.stderr)
            continue
        drop_train(twin, "mse", opt, targs, x, t, steps, 11)
        errs = {k: rel_err(got[k], v.detach().numpy()) for k, v in twin.state_dict().items()}
        report(name, max(errs.values()) <= (1e-9 if dtype == "Float64" else 1e-4), f"relative errors {errs}")
        if dtype == "Float64":
            r2, got2 = axc_train(d, src.replace("DTYPE", dtype), init, "mse", opt, flags + ["--seed", "12"], x, t)
            report("train dropout another --seed draws other masks", r2.returncode == 0 and
                   rel_err(got2["fc1.weight"], got["fc1.weight"]) > 1e-6, r2.stderr)
    torch.set_default_dtype(torch.float32)
    twin = DropNet(0.0, 0.0)
    init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
    x, t = make_data(rng, "mse", STEPS, np.float32)
    src0 = DROP_SRC.replace("P1", "0.0").replace("P2", "0.0").replace("DTYPE", "Float32")
    r, got = axc_train(d, src0, init, "mse", "sgd", ["--lr", "0.05"], x, t)
    if r.returncode:
        report("train dropout p=0 oracle", False, r.stderr)
        return
    drop_train(twin, "mse", "sgd", {"lr": 0.05}, x, t, STEPS, 0)
    errs = {k: rel_err(got[k], v.detach().numpy()) for k, v in twin.state_dict().items()}
    report("train dropout p=0 oracle", max(errs.values()) <= 1e-4, f"relative errors {errs}")


def batch_order(seed, epoch, batches):
    """compiler/train_loop.c axc_batch_order: Fisher-Yates, the draw for position i
    mix64(mix64(seed) ^ (epoch << 32) ^ i) mod (i + 1)."""
    order = list(range(batches))
    for i in range(batches - 1, 0, -1):
        j = mix64(mix64(seed) ^ (epoch << 32) ^ i) % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def shuffle(d, rng):
    """--shuffle: each epoch's batches in the order drawn from --seed, against PyTorch
    fed that order; without --shuffle, file order (the plain oracle above)."""
    global BATCH
    BATCH, batches, epochs, seed = 4, 5, 3, 3
    orders = [batch_order(seed, e, batches) for e in range(epochs)]
    report("train shuffle orders are permutations and not all file order",
           all(sorted(o) == list(range(batches)) for o in orders) and any(o != list(range(batches)) for o in orders),
           f"orders {orders}")
    twin = Twin("tanh")
    init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
    x, t = make_data(rng, "mse", batches, np.float32)
    flags = ["--lr", "0.05", "--momentum", "0.9", "--epochs", str(epochs), "--shuffle", "--seed", str(seed)]
    r, got = axc_train(d, model_src("tanh", "Float32"), init, "mse", "sgd", flags, x, t)
    if r.returncode:
        report("train shuffle oracle", False, r.stderr)
        return
    idx = np.concatenate([np.arange(b * BATCH, (b + 1) * BATCH) for o in orders for b in o])
    torch_train(twin, "mse", "sgd", {"lr": 0.05, "momentum": 0.9}, x[idx], t[idx], batches * epochs)
    errs = {k: rel_err(got[k], v.detach().numpy()) for k, v in twin.state_dict().items()}
    report("train shuffle oracle", max(errs.values()) <= 1e-4, f"relative errors {errs}")
    r2, again = axc_train(d, model_src("tanh", "Float32"), init, "mse", "sgd", flags, x, t)
    report("train shuffle is deterministic", r2.returncode == 0 and
           all(np.array_equal(np.asarray(again[k]), np.asarray(got[k])) for k in got), r2.stderr)


def run_kernel(exe, name, ints, *arrays, real=None):
    text = " ".join([name] + [str(int(v)) for v in ints] + ([repr(float(real))] if real is not None else []) +
                    [repr(float(v)) for a in arrays for v in np.asarray(a, np.float64).reshape(-1)])
    r = subprocess.run([exe], input=text, capture_output=True, text=True)
    return np.array([float(v) for v in r.stdout.split()]) if r.returncode == 0 else None


def conv_kernels(exe):
    """The conv weight and input gradients (tests/train/kernels.c) in Float64 against autograd."""
    # n, h, w, c, oc, kh, kw, stride, dilation, pad (top, left, bottom, right), groups
    for n, h, w, c, oc, kh, kw, st, dl, pad, g in ((2, 7, 6, 4, 6, 3, 3, (2, 1), (1, 2), (1, 0, 1, 0), 2),
                                                    (1, 6, 7, 3, 3, 3, 2, (1, 2), (1, 1), (0, 1, 1, 0), 3),
                                                    (2, 5, 5, 2, 4, 1, 1, (1, 1), (1, 1), (0, 0, 0, 0), 1)):
        x = torch.randn(n, c, h, w, requires_grad=True)
        wt = torch.randn(oc, c // g, kh, kw, requires_grad=True)
        y = F.conv2d(F.pad(x, (pad[1], pad[3], pad[0], pad[2])), wt, stride=st, dilation=dl, groups=g)
        dy = torch.randn_like(y)
        y.backward(dy)
        oh, ow = y.shape[2], y.shape[3]
        label = f"conv n{n} {h}x{w}x{c}->{oc} k{kh}x{kw} stride {st} dilation {dl} pad {pad} groups {g}"
        dy_nhwc, x_nhwc = nhwc(dy).detach().numpy(), nhwc(x).detach().numpy()
        got = run_kernel(exe, "conv_grad_weight", (n, h, w, c, oh, ow, oc, kh, kw, *st, *dl, pad[0], pad[1], g),
                         dy_nhwc, x_nhwc)
        report(f"train kernel conv_grad_weight {label}", got is not None and rel_err(got, wt.grad.numpy()) < 1e-12)
        got = run_kernel(exe, "conv_grad_input", (n, oh, ow, oc, h, w, c, kh, kw, *st, *dl, pad[0], pad[1], g),
                         dy_nhwc, wt.detach().numpy())
        report(f"train kernel conv input gradient (conv_transpose2d) {label}",
               got is not None and rel_err(got, nhwc(x.grad).numpy()) < 1e-12)


def kernels(d, rng):
    """libaxrt's backward kernels (the C back end's, for the generated training step) in
    Float64 against PyTorch autograd, through tests/train/kernels.c."""
    exe = f"{d}/kernels"
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    build = os.path.dirname(os.path.dirname(os.path.abspath(AXC)))
    r = subprocess.run([*shlex.split(os.environ.get("CC", "cc")), "-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror",
                        f"-I{build}/include", os.path.join(root, "tests", "train", "kernels.c"),
                        f"{build}/lib/libaxrt.a", "-lm", "-lpthread", "-o", exe], capture_output=True, text=True)
    if r.returncode:
        report("train kernels build", False, r.stderr)
        return
    torch.set_default_dtype(torch.float64)
    conv_kernels(exe)
    # n, h, w, c, k, stride, pad, max, count_include_pad
    for n, h, w, c, k, st, pad, is_max, cip in ((2, 6, 7, 3, (3, 2), (1, 2), (1, 1), 1, 1), (1, 5, 5, 2, (2, 2), (2, 2), (0, 0), 1, 1),
                                                (2, 7, 6, 3, (3, 3), (2, 1), (1, 1), 0, 1), (1, 6, 6, 2, (3, 3), (2, 2), (1, 1), 0, 0)):
        x = torch.randn(n, c, h, w, requires_grad=True)
        y = (F.max_pool2d(x, k, st, pad) if is_max else
             F.avg_pool2d(x, k, st, pad, count_include_pad=bool(cip)))
        dy = torch.randn_like(y)
        y.backward(dy)
        got = run_kernel(exe, "pool_grad", (n, h, w, c, y.shape[2], y.shape[3], *k, *st, pad[0], pad[1], pad[0], pad[1],
                                            is_max, cip), nhwc(dy).numpy(), nhwc(x).detach().numpy())
        report(f"train kernel pool_grad {'max' if is_max else 'mean'} {h}x{w} k{k} stride {st} pad {pad}"
               f"{'' if is_max or cip else ' count_include_pad=false'}",
               got is not None and rel_err(got, nhwc(x.grad).numpy()) < 1e-12)
    x = torch.randn(5, 7, requires_grad=True)
    y = x[1:5:2, 0:7:3]
    dy = torch.randn_like(y)
    y.backward(dy)
    got = run_kernel(exe, "scatter", (35, 2, 2, 3, 14, 3, 7), dy.numpy())
    report("train kernel scatter_strided (a slice's gradient)", got is not None and rel_err(got, x.grad.numpy()) < 1e-15)
    idx = torch.tensor([3, 0, 3, 5, 1, 3])
    wt = torch.randn(7, 4, requires_grad=True)
    y = F.embedding(idx, wt)
    dy = torch.randn_like(y)
    y.backward(dy)
    got = run_kernel(exe, "embedding_grad", (6, 7, 4, *idx.tolist()), dy.numpy())
    report("train kernel embedding_grad (repeated rows)", got is not None and rel_err(got, wt.grad.numpy()) < 1e-15)
    x = rng.standard_normal(50)
    keep = dropout_keep(5, 2, 9, (50,), 0.3)
    got = run_kernel(exe, "dropout", (50, 2, 5, 9), x, real=0.3)
    report("train kernel dropout (the generator's mask, scaled)",
           got is not None and rel_err(got, x * keep / 0.7) < 1e-15 and 0 < keep.sum() < 50)
    torch.set_default_dtype(torch.float32)


def main():
    rng = np.random.default_rng(7)
    torch.manual_seed(7)
    only = sys.argv[1:]   # suite parts to run (oracle gradients models dropout shuffle kernels); default all
    with tempfile.TemporaryDirectory() as d:
        for part in (oracle, gradients, models, dropout, shuffle, kernels):
            if not only or part.__name__ in only:
                part(d, rng)


if __name__ == "__main__":
    main()
