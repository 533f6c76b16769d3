"""The int8 scheme of `axc --quantize=int8` (docs/precision.md#int8-post-training-quantisation), written out in
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

qres (a graph, not a chain: qres_forward) adds the elementwise nodes: an add
of two int8 values as TFLite's (each operand's (q - zp) * 2^20 requantised by
s_k / (2 max(s_a, s_b)), the sum by 2 max(s_a, s_b) / (2^20 s_out), both
Q31 with round-half-away, the output's range its own); a concat requantising
each operand by s_k / s_out to its own range; a ReLU sharing its operand's
range, the clamp at the zero point.

qgap (qgap_forward) adds the global mean-pool in int8, TFLite's integer
mean: the exact sum over the pixels of (q - zp_in), rescaled by a Q31
multiplier of s_in / (count s_out) with round-half-away, plus the output zero
point, the output's range its own; the dense after it quantises the pool's
dequantised values with that range (the same integers).

usage: reference.py MODEL WEIGHTS CALIB X AXC_OUT
  MODEL: qmlp, lenet5 (the layer lists below mirror the .ax files), qres or qgap
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


def quantise(v32, s, zp):
    """the integers of float32 values v32 at (s, zp)"""
    return np.clip(round_away((np.asarray(v32, dtype=np.float32) / np.float32(s)).astype(np.float64)) + zp,
                   -128, 127).astype(np.int64)


def dequantise(q, s, zp):
    return torch.from_numpy((q - zp).astype(np.float32) * np.float32(s))


def add_q(qa, pa, qb, pb, pout):
    """TFLite's int8 add of integers qa at pa = (scale, zero point) and qb at
    pb, NumPy broadcasting, to pout's range."""
    twice = 2 * max(pa[0], pb[0])
    v = 0
    for q, (sk, zk) in ((qa, pa), (qb, pb)):
        v = v + requantize((q - zk) * (1 << 20), *fixed_point(sk / twice))
    return np.clip(pout[1] + requantize(v, *fixed_point(twice / (2.0 ** 20 * pout[0]))), -128, 127)


def mean_q(q, pin, pout, dim):
    """The int8 mean of integers q at pin over dim (kept): the exact sum of
    q - zp, rescaled by s_in / (count s_out), to pout's range."""
    total = (q - pin[1]).sum(axis=dim, keepdims=True)
    return np.clip(pout[1] + requantize(total, *fixed_point(pin[0] / (q.shape[dim] * pout[0]))), -128, 127)


def meanpool_q(q, pin, pout, **pool):
    """The int8 mean-pool of integers q (NHWC) at pin, F.avg_pool2d's window
    and divisor (pool: its keyword arguments): the exact window sum of
    q - zp (padding 0) rescaled by s_in / (divisor s_out), to pout's range.
    The divisor per output is PyTorch's own: the window's in-input count
    over its average of ones."""
    xc = torch.from_numpy((q - pin[1]).astype(np.float64)).permute(0, 3, 1, 2)
    ones = torch.ones_like(xc)
    total = F.avg_pool2d(xc, divisor_override=1, **pool).permute(0, 2, 3, 1).numpy()
    inside = F.avg_pool2d(ones, divisor_override=1, **pool)
    divisor = torch.round(inside / F.avg_pool2d(ones, **pool)).permute(0, 2, 3, 1).numpy()
    total = np.rint(total).astype(np.int64)
    out = np.empty_like(total)
    for d in np.unique(divisor):
        at = divisor == d
        out[at] = pout[1] + requantize(total[at], *fixed_point(pin[0] / (float(d) * pout[0])))
    return np.clip(out, -128, 127)


def qres_float(w, x):
    """qres.ax in float64: every node's value by name."""
    a = float_layer(("conv", "a", None, 1), x, w)
    b = float_layer(("conv", "b", None, 0), x, w)
    s = a + b
    h = torch.relu(s)
    cat = torch.cat([h, a], dim=3)
    u = torch.relu(cat)
    return {"x": x, "a": a, "b": b, "add": s, "cat": cat, "y": float_layer(("conv", "c", None, 0), u, w)}


def observed_ranges(float_fn, w, samples):
    """Every node's (min, max) over the calibration samples, as axc observes
    them: float_fn(w, x) gives the float64 value of each node by name."""
    rng = {}
    for smp in samples:
        for k, t in float_fn(w, torch.from_numpy(smp.astype(np.float64))).items():
            lo, hi = rng.get(k, (math.inf, -math.inf))
            rng[k] = (min(lo, float(t.min())), max(hi, float(t.max())))
    return rng


def qres_forward(w, samples, x32):
    """qres in int8; returns (float32 output, its LSB)."""
    rng = observed_ranges(qres_float, w, samples)
    p = {k: act_params(*r) for k, r in rng.items()}   # h and u share add's and cat's
    a, _ = quant_layer(("conv", "a", None, 1), x32, w, rng["x"], rng["a"])
    b, _ = quant_layer(("conv", "b", None, 0), x32, w, rng["x"], rng["b"])
    qa, qb = quantise(a, *p["a"]), quantise(b, *p["b"])
    q_add = add_q(qa, p["a"], qb, p["b"], p["add"])
    s_add, z_add = p["add"]
    q_h = np.maximum(q_add, z_add)
    s_cat, z_cat = p["cat"]
    parts = [z_cat + requantize(q - zk, *fixed_point(sk / s_cat)) for q, (sk, zk) in ((q_h, p["add"]), (qa, p["a"]))]
    q_u = np.maximum(np.clip(np.concatenate(parts, axis=3), -128, 127), z_cat)
    return quant_layer(("conv", "c", None, 0), dequantise(q_u, s_cat, z_cat).numpy(), w, rng["cat"], rng["y"])


def qgap_float(w, x):
    """qgap.ax in float64: every node's value by name."""
    a = float_layer(("conv", "a", "relu", 1), x, w)
    g = a.mean(dim=(1, 2))
    return {"x": x, "a": a, "gap": g, "y": float_layer(("dense", "d", None), g, w)}


def qgap_forward(w, samples, x32):
    """qgap in int8; returns (float32 output, its LSB)."""
    rng = observed_ranges(qgap_float, w, samples)
    p = {k: act_params(*r) for k, r in rng.items()}
    a, _ = quant_layer(("conv", "a", "relu", 1), x32, w, rng["x"], rng["a"])
    (sa, za), (sg, zg) = p["a"], p["gap"]
    qa = quantise(a, sa, za)
    count = qa.shape[1] * qa.shape[2]
    total = (qa - za).sum(axis=(1, 2))
    q_gap = np.clip(zg + requantize(total, *fixed_point(sa / (count * sg))), -128, 127)
    return quant_layer(("dense", "d", None), dequantise(q_gap, sg, zg).numpy(), w, rng["gap"], rng["y"])


POOL1 = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
POOL2 = dict(kernel_size=2, ceil_mode=True)
POOL3 = dict(kernel_size=3, stride=1, padding=1)


def qpool_float(w, x):
    """qpool.ax in float64: every node's value by name."""
    nchw = lambda t: t.permute(0, 3, 1, 2)   # noqa: E731
    nhwc = lambda t: t.permute(0, 2, 3, 1)   # noqa: E731
    a = float_layer(("conv", "a", "relu", 1), x, w)
    p1 = nhwc(F.avg_pool2d(nchw(a), **POOL1))
    b = float_layer(("conv", "b", "relu", 0), p1, w)
    p2 = nhwc(F.avg_pool2d(nchw(b), **POOL2))
    p3 = nhwc(F.avg_pool2d(nchw(p2), **POOL3))
    p4 = nhwc(F.adaptive_avg_pool2d(nchw(p3), 1))
    return {"x": x, "a": a, "p1": p1, "b": b, "p2": p2, "p3": p3, "p4": p4,
            "y": float_layer(("dense", "d", None), p4.reshape(1, -1), w)}


def qpool_forward(w, samples, x32):
    """qpool in int8: each pool on the integers; returns (float32 output, its LSB)."""
    rng = observed_ranges(qpool_float, w, samples)
    p = {k: act_params(*r) for k, r in rng.items()}
    a, _ = quant_layer(("conv", "a", "relu", 1), x32, w, rng["x"], rng["a"])
    q1 = meanpool_q(quantise(a, *p["a"]), p["a"], p["p1"], **POOL1)
    b, _ = quant_layer(("conv", "b", "relu", 0), dequantise(q1, *p["p1"]).numpy(), w, rng["p1"], rng["b"])
    q2 = meanpool_q(quantise(b, *p["b"]), p["b"], p["p2"], **POOL2)
    q3 = meanpool_q(q2, p["p2"], p["p3"], **POOL3)
    q4 = meanpool_q(q3, p["p3"], p["p4"], kernel_size=q3.shape[1:3])   # AdaptiveAvgPool2d(1)'s window
    flat = dequantise(q4, *p["p4"]).numpy().reshape(1, -1)   # Flatten: the same integers, range and bytes
    return quant_layer(("dense", "d", None), flat, w, rng["p4"], rng["y"])


def qshuffle_float(w, x):
    """qshuffle.ax in float64: every node's value by name."""
    a = float_layer(("conv", "a", "relu", 0), x, w)
    b = float_layer(("conv", "b", None, 1), x, w)
    cat = torch.cat([a, b], dim=3)
    s = cat.reshape(1, 4, 4, 2, 8).permute(0, 1, 2, 4, 3).reshape(1, 4, 4, 16)
    c = float_layer(("conv", "c", "relu", 0), s[..., 8:], w)
    v = torch.cat([s[..., :8], c], dim=3)
    return {"x": x, "a": a, "b": b, "cat": cat, "c": c, "v": v,
            "y": float_layer(("dense", "d", None), v.permute(0, 3, 1, 2).reshape(1, 256), w)}


def concat_q(parts, pout):
    """An int8 concat along the channels: each (integers, params) requantised
    by s_k / s_out to pout's range."""
    return np.clip(np.concatenate([pout[1] + requantize(q - pk[1], *fixed_point(pk[0] / pout[0]))
                                   for q, pk in parts], axis=3), -128, 127)


def qshuffle_forward(w, samples, x32):
    """qshuffle in int8: the shuffle, chunk, transpose and reshapes move the
    concat's integers with its range (no requantisation); returns (float32
    output, its LSB)."""
    rng = observed_ranges(qshuffle_float, w, samples)
    p = {k: act_params(*r) for k, r in rng.items()}
    a, _ = quant_layer(("conv", "a", "relu", 0), x32, w, rng["x"], rng["a"])
    b, _ = quant_layer(("conv", "b", None, 1), x32, w, rng["x"], rng["b"])
    q_cat = concat_q([(quantise(a, *p["a"]), p["a"]), (quantise(b, *p["b"]), p["b"])], p["cat"])
    q_s = q_cat.reshape(1, 4, 4, 2, 8).transpose(0, 1, 2, 4, 3).reshape(1, 4, 4, 16)
    c, _ = quant_layer(("conv", "c", "relu", 0), dequantise(q_s[..., 8:], *p["cat"]).numpy(), w, rng["cat"],
                       rng["c"])
    q_v = concat_q([(q_s[..., :8], p["cat"]), (quantise(c, *p["c"]), p["c"])], p["v"])
    flat = dequantise(q_v.transpose(0, 3, 1, 2).reshape(1, 256), *p["v"]).numpy()
    return quant_layer(("dense", "d", None), flat, w, rng["v"], rng["y"])


def qbcast_float(w, x):
    """qbcast.ax in float64: every node's value by name (a mean over two dims
    is one mean per dim, as axc lowers it)."""
    a = float_layer(("conv", "a", "relu", 1), x, w)
    m1 = a.mean(dim=1, keepdim=True)
    m = m1.mean(dim=2, keepdim=True)
    s = float_layer(("conv", "b", None, 0), x, w) + m
    c = s.mean(dim=3, keepdim=True)
    t = s + c
    return {"x": x, "a": a, "m1": m1, "m": m, "b": float_layer(("conv", "b", None, 0), x, w), "s": s, "c": c,
            "t": t, "y": float_layer(("dense", "d", None), t.reshape(1, 160), w)}


def qbcast_forward(w, samples, x32):
    """qbcast in int8: the means and the broadcasting adds on the integers;
    returns (float32 output, its LSB)."""
    rng = observed_ranges(qbcast_float, w, samples)
    p = {k: act_params(*r) for k, r in rng.items()}
    a, _ = quant_layer(("conv", "a", "relu", 1), x32, w, rng["x"], rng["a"])
    q_m1 = mean_q(quantise(a, *p["a"]), p["a"], p["m1"], 1)
    q_m = mean_q(q_m1, p["m1"], p["m"], 2)
    b, _ = quant_layer(("conv", "b", None, 0), x32, w, rng["x"], rng["b"])
    q_s = add_q(quantise(b, *p["b"]), p["b"], q_m, p["m"], p["s"])
    q_t = add_q(q_s, p["s"], mean_q(q_s, p["s"], p["c"], 3), p["c"], p["t"])
    flat = dequantise(q_t.reshape(1, 160), *p["t"]).numpy()
    return quant_layer(("dense", "d", None), flat, w, rng["t"], rng["y"])


GRAPHS = {"qres": qres_forward, "qgap": qgap_forward, "qpool": qpool_forward, "qshuffle": qshuffle_forward,
          "qbcast": qbcast_forward}


def main():
    model, weights, calib, x_path, out_path = sys.argv[1:6]
    w = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in safetensors_io.read(weights).items()}
    v = torch.from_numpy(np.load(x_path).astype(np.float32))
    scale = None
    if model in GRAPHS:
        v, scale = GRAPHS[model](w, np.load(calib), v.numpy())
    else:
        layers = MODELS[model]
        lo, hi = ranges(layers, w, np.load(calib))
    for i, layer in enumerate(MODELS.get(model, [])):
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
