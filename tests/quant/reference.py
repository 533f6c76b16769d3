"""The int8 scheme of `axc --quantize=int8` (interface.md §7), written out in
PyTorch from the description in passes/pass_quant.c and runtime/axrt.h, not
from axc's code: calibration ranges from the float model (float64) over the
calibration samples; activations per tensor, asymmetric (range widened to
hold 0, scale = (hi - lo) / 255 as float32, zero point round-half-away);
weights per output channel, symmetric, scale max|w| / 127; bias at
s_x * s_w; int32 accumulation (exact in float64 here); requantisation by a
Q31 multiplier and a right shift with round-half-away; ReLU/ReLU6 as the
clamp; max-pool and flatten in float on the dequantised values, a max-pool
after a dense/conv layer sharing that layer's output range (TFLite's rule: the
same scale and zero point in and out, so axc's int8 max-pool on the integers
gives the same values), flatten keeping its input's range.

usage: reference.py MODEL WEIGHTS CALIB X AXC_OUT
  MODEL: qmlp or lenet5 (the layer lists below mirror the .ax files)
Prints one line per output element class and exits 1 unless every element
is within one output LSB of the reference (and says how many are exact)."""

import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/torch")
import safetensors_io  # noqa: E402

# (kind, parameter prefix, options): dense/conv layers with their fused activation
MODELS = {
    "qmlp": [("dense", "0", "relu"), ("dense", "1", "relu6"), ("dense", "2", None)],
    "lenet5": [("conv", "0", "relu", 2), ("maxpool",), ("conv", "3", "relu", 0), ("maxpool",),
               ("flatten",), ("dense", "7", "relu"), ("dense", "8", "relu"), ("dense", "9", None)],
}


def round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def act_params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    s = float(np.float32((hi - lo) / 255))
    if not (s > 0 and math.isfinite(s)):
        s = 1.0
    zp = int(np.clip(round_away(-128 - lo / s), -128, 127))
    return s, zp


def fixed_point(m):
    frac, e = math.frexp(m)
    q = int(round_away(frac * 2.0 ** 31))
    if q == 1 << 31:
        q >>= 1
        e += 1
    s = 31 - e
    if m <= 0 or s > 62:
        return 0, 1
    if s < 1:
        return (1 << 31) - 1, 1
    return q, s


def requantize(acc, mult, shift):
    p = acc.astype(object) * mult
    mag = np.abs(p)
    r = (mag + (1 << (shift - 1))) >> shift
    return np.where(p < 0, -r, r).astype(np.int64)


def float_layer(layer, x, w):
    """x NHWC (or [rows, in]) float64; the float model's layer."""
    kind = layer[0]
    if kind == "dense":
        y = x @ w[layer[1] + ".weight"].T + w[layer[1] + ".bias"]
    elif kind == "conv":
        y = F.conv2d(x.permute(0, 3, 1, 2), w[layer[1] + ".weight"], w[layer[1] + ".bias"],
                     padding=layer[3]).permute(0, 2, 3, 1)
    elif kind == "maxpool":
        return F.max_pool2d(x.permute(0, 3, 1, 2), 2).permute(0, 2, 3, 1)
    else:
        return x.reshape(x.shape[0], -1)
    act = layer[2]
    return torch.relu(y) if act == "relu" else torch.clamp(y, 0, 6) if act == "relu6" else y


def ranges(layers, w, samples):
    """min and max of the model input and of every layer's output."""
    lo = [math.inf] * (len(layers) + 1)
    hi = [-math.inf] * (len(layers) + 1)
    for x in samples:
        v = torch.from_numpy(x.astype(np.float64))
        vals = [v]
        for layer in layers:
            v = float_layer(layer, v, w)
            vals.append(v)
        for i, t in enumerate(vals):
            lo[i] = min(lo[i], float(t.min()))
            hi[i] = max(hi[i], float(t.max()))
    for i, layer in enumerate(layers):   # vals[i + 1] is layer i's output
        shared = layer[0] == "flatten" or (layer[0] == "maxpool" and layers[i - 1][0] in ("dense", "conv"))
        if shared:
            lo[i + 1], hi[i + 1] = lo[i], hi[i]
    return lo, hi


def quant_layer(layer, x32, w, in_range, out_range):
    """x32 float32 tensor -> float32 tensor, the layer in int8."""
    sx, zx = act_params(*in_range)
    sy, zy = act_params(*out_range)
    xq = np.clip(round_away((x32 / np.float32(sx)).astype(np.float64)) + zx, -128, 127)
    wf = w[layer[1] + ".weight"].double().numpy()
    oc = wf.shape[0]
    amax = np.abs(wf.reshape(oc, -1)).max(axis=1)
    sw = np.where(amax > 0, amax / 127, 1.0)
    wq = np.clip(round_away(wf / sw.reshape((oc,) + (1,) * (wf.ndim - 1))), -127, 127)
    sacc = np.float64(np.float32(sx)) * sw
    bq = round_away(w[layer[1] + ".bias"].double().numpy() / sacc)
    xc = torch.from_numpy(xq - zx)
    if layer[0] == "dense":
        acc = xc @ torch.from_numpy(wq).T
    else:
        acc = F.conv2d(xc.permute(0, 3, 1, 2), torch.from_numpy(wq), padding=layer[3]).permute(0, 2, 3, 1)
    acc = np.rint(acc.numpy()).astype(np.int64) + bq.astype(np.int64)
    q = np.empty_like(acc)
    for o in range(oc):
        mult, shift = fixed_point(float(sacc[o]) / sy)
        q[..., o] = zy + requantize(acc[..., o], mult, shift)
    lo = -128 if layer[2] is None else zy
    hi = min(127, zy + int(round_away(6 / sy))) if layer[2] == "relu6" else 127
    q = np.clip(q, lo, hi)
    return torch.from_numpy((q - zy).astype(np.float32) * np.float32(sy)), sy


def main():
    model, weights, calib, x_path, out_path = sys.argv[1:6]
    layers = MODELS[model]
    w = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in safetensors_io.read(weights).items()}
    lo, hi = ranges(layers, w, np.load(calib))
    v = torch.from_numpy(np.load(x_path).astype(np.float32))
    scale = None
    for i, layer in enumerate(layers):
        if layer[0] in ("dense", "conv"):
            v, scale = quant_layer(layer, v.numpy(), w, (lo[i], hi[i]), (lo[i + 1], hi[i + 1]))
        else:
            v = float_layer(layer, v, w).float()
    ref = v.numpy().astype(np.float64).ravel()
    got = np.load(out_path).astype(np.float64).ravel()
    diff = np.abs(ref - got)
    exact = int((diff == 0).sum())
    print(f"  {model}: {exact} of {ref.size} outputs exact, largest difference {diff.max() / scale:.3g} LSB "
          f"(LSB {scale:.4g})")
    sys.exit(0 if diff.max() <= 1.0001 * scale else 1)


if __name__ == "__main__":
    main()
