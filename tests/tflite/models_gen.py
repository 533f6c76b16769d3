"""Writes the TFLite fixtures of tests/tflite/run.py into tests/tflite/models/:
for each model NAME, NAME.tflite, NAME.in.npy (its input) and NAME.ref.npz
(LiteRT's output for it, by its reference kernels: OpResolverType.BUILTIN_REF).

Run with the test venv's python (tests/tflite/venv.sh: ai-edge-litert and
flatbuffers from PyPI):
    build/tests/tflite-venv/bin/python tests/tflite/models_gen.py
The models are written with the schema's Python bindings (tflbuild.py), not
converted (`models_gen.py ops` or `moves` writes the single-operator or the
data-movement fixtures only): two float32 graphs (an MCU-style conv / depthwise / pools /
fully-connected / softmax one, and one of pad / add / mul / concatenation /
mean / logistic / relu6 / reshape), and their int8 twins, whose activation
scales and zero points come from the float graph's ranges on a calibration
batch (LiteRT's intermediate tensors), whose inputs are on their QUANTIZE's
int8 grid (on_grid), and whose weights are int8 per output
channel (the convolutions) or per tensor (fully connected), the biases int32
at input scale * weight scale, as TFLite's converter writes them.  Also the
hostile files the error tests read."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tflbuild as tb  # noqa: E402

OUT = os.path.join(HERE, "models")
rng = np.random.default_rng(35)


def params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255.0) or np.float32(1.0)
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return float(scale), zp


class Graph:
    """Builds one graph twice: float (q None) or int8 with q[name] = (scale, zp)."""

    def __init__(self, q=None):
        self.m, self.q = tb.Model(), q

    def act(self, name, shape, fixed=None):
        if self.q is None:
            return self.m.tensor(name, shape)
        scale, zp = fixed if fixed else self.q[name]
        return self.m.tensor(name, shape, tb.INT8, scale=scale, zp=zp)

    def scale_of(self, t):
        return self.m.tensors[t]["scale"]

    def weights(self, name, w, qdim, per_channel=True):
        if self.q is None:
            return self.m.tensor(name, w.shape, tb.FLOAT32, w), None
        axes = tuple(d for d in range(w.ndim) if d != qdim)
        amax = np.abs(w).max(axis=axes) if per_channel else np.array([np.abs(w).max()])
        scale = (np.maximum(amax, 1e-8) / 127).astype(np.float32)
        shp = [1] * w.ndim
        shp[qdim] = -1
        s = scale.reshape(shp) if per_channel else scale[0]
        qw = np.clip(np.round(w / s), -127, 127).astype(np.int8)
        return self.m.tensor(name, w.shape, tb.INT8, qw, scale=scale, zp=np.zeros(len(scale), np.int64),
                             qdim=qdim), scale

    def bias(self, name, b, x, wscale):
        if self.q is None:
            return self.m.tensor(name, b.shape, tb.FLOAT32, b)
        s = (np.float32(self.scale_of(x)) * wscale).astype(np.float32)
        s = np.broadcast_to(s, b.shape).astype(np.float32)
        qb = np.round(b / s).astype(np.int32)
        return self.m.tensor(name, b.shape, tb.INT32, qb, scale=s, zp=np.zeros(len(s), np.int64))

    def conv(self, x, name, cout, k, stride, pad, act, depthwise=False, shape_in=None):
        n, h, w_, c = shape_in
        if depthwise:
            wt = rng.normal(0, 0.5, (1, k, k, c)).astype(np.float32)
            W, ws = self.weights(name + "/w", wt, 3)
            cout = c
        else:
            wt = rng.normal(0, 1 / np.sqrt(k * k * c), (cout, k, k, c)).astype(np.float32)
            W, ws = self.weights(name + "/w", wt, 0)
        B = self.bias(name + "/b", rng.normal(0, 0.1, cout).astype(np.float32), x, ws)
        oh = -(-h // stride) if pad == 0 else (h - k) // stride + 1
        ow = -(-w_ // stride) if pad == 0 else (w_ - k) // stride + 1
        y = self.act(name, [n, oh, ow, cout])
        fields = dict(padding=pad, stride_w=stride, stride_h=stride, fused_activation_function=act)
        if depthwise:
            fields["depth_multiplier"] = 1
        self.m.op(tb.OPS["DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"], [x, W, B], [y],
                  ("DepthwiseConv2DOptions" if depthwise else "Conv2DOptions", fields))
        return y, [n, oh, ow, cout]

    def fc(self, x, name, k, n_out, act=0):
        wt = rng.normal(0, 1 / np.sqrt(k), (n_out, k)).astype(np.float32)
        W, ws = self.weights(name + "/w", wt, 0, per_channel=False)
        B = self.bias(name + "/b", rng.normal(0, 0.1, n_out).astype(np.float32), x, ws if ws is None else ws[0])
        y = self.act(name, [1, n_out])
        self.m.op(tb.OPS["FULLY_CONNECTED"], [x, W, B], [y],
                  ("FullyConnectedOptions", dict(fused_activation_function=act)))
        return y

    def same(self, x, name, shape):
        """An output with x's own parameters (pools, reshape, pad, concat)."""
        if self.q is None:
            return self.m.tensor(name, shape)
        t = self.m.tensors[x]
        return self.m.tensor(name, shape, tb.INT8, scale=t["scale"], zp=t["zp"])

    def entry(self, shape):
        """The float input, and (int8) its QUANTIZE."""
        x = self.m.tensor("x", shape)
        if self.q is None:
            return x, x
        xq = self.act("x_q", shape)
        self.m.op(tb.OPS["QUANTIZE"], [x], [xq])
        return x, xq

    def exit(self, y, shape):
        if self.q is None:
            return y
        out = self.m.tensor("y_float", shape)
        self.m.op(tb.OPS["DEQUANTIZE"], [y], [out])
        return out


SOFTMAX_Q = (1 / 256, -128)
NINPUTS = 12   # inputs per model


def on_grid(x, scale, zp):
    """x moved to the int8 grid of (scale, zp): the float its QUANTIZE's integer
    stands for, (q - zp) * scale (docs/tflite.md: the values an int8 model's
    first operators see exactly as TFLite does)."""
    s = np.float32(scale)
    r = x / s
    q = np.clip(np.sign(r) * np.floor(np.abs(r) + 0.5) + zp, -128, 127)   # TFLite's round half away
    return ((q - zp) * s).astype(np.float32)


def mcu(q, softmax=True):
    """conv 3x3 + ReLU, depthwise 3x3 /2 + ReLU6, conv 1x1, average pool, max pool, reshape, FC, softmax
    (or, softmax False, the FC's logits as the output)."""
    g = Graph(q)
    x, xq = g.entry([1, 16, 16, 3])
    y, s = g.conv(xq, "conv1", 8, 3, 1, 0, 1, shape_in=[1, 16, 16, 3])
    y, s = g.conv(y, "dw1", 8, 3, 2, 0, 3, depthwise=True, shape_in=s)
    y, s = g.conv(y, "pw1", 16, 1, 1, 1, 1, shape_in=s)
    p = g.same(y, "avgpool", [1, 4, 4, 16])
    g.m.op(tb.OPS["AVERAGE_POOL_2D"], [y], [p], ("Pool2DOptions", dict(padding=1, stride_w=2, stride_h=2,
                                                                         filter_width=2, filter_height=2)))
    mp = g.same(p, "maxpool", [1, 4, 4, 16])
    g.m.op(tb.OPS["MAX_POOL_2D"], [p], [mp], ("Pool2DOptions", dict(padding=0, stride_w=1, stride_h=1,
                                                                      filter_width=3, filter_height=3)))
    shape = g.m.tensor("shape", [2], tb.INT32, [1, 256])
    r = g.same(mp, "flat", [1, 256])
    g.m.op(tb.OPS["RESHAPE"], [mp, shape], [r], ("ReshapeOptions", dict(new_shape=[1, 256])))
    f = g.fc(r, "fc", 256, 10)
    if not softmax:
        return g.m.build([x], [g.exit(f, [1, 10])])
    sm = g.act("softmax", [1, 10], SOFTMAX_Q if q else None)
    g.m.op(tb.OPS["SOFTMAX"], [f], [sm], ("SoftmaxOptions", dict(beta=1.0)))
    return g.m.build([x], [g.exit(sm, [1, 10])])


def misc(q):
    """pad, add (broadcast constant) + ReLU, mul, relu6, concatenation, mean, FC + ReLU, relu, logistic."""
    g = Graph(q)
    x, xq = g.entry([1, 6, 6, 4])
    pads = g.m.tensor("pads", [4, 2], tb.INT32, [[0, 0], [1, 1], [2, 0], [0, 0]])
    p = g.same(xq, "pad", [1, 8, 8, 4])
    g.m.op(tb.OPS["PAD"], [xq, pads], [p], ("PadOptions", {}))
    cst = rng.normal(0, 0.5, (1, 1, 1, 4)).astype(np.float32)
    if q:
        cs, cz = params(cst.min(), cst.max())
        c = g.m.tensor("c", [1, 1, 1, 4], tb.INT8, np.clip(np.round(cst / cs) + cz, -128, 127), scale=cs, zp=cz)
    else:
        c = g.m.tensor("c", [1, 1, 1, 4], tb.FLOAT32, cst)
    a = g.act("add", [1, 8, 8, 4])
    g.m.op(tb.OPS["ADD"], [p, c], [a], ("AddOptions", dict(fused_activation_function=1)))
    shared = q["concat"] if q else None   # TFLite's int8 concatenation: one scale for all
    mu = g.act("mul", [1, 8, 8, 4], shared)
    g.m.op(tb.OPS["MUL"], [a, p], [mu], ("MulOptions", dict(fused_activation_function=0)))
    r6 = g.act("relu6", [1, 8, 8, 4], shared)
    g.m.op(tb.OPS["RELU6"], [mu], [r6])
    cat = g.act("concat", [1, 8, 8, 8])
    g.m.op(tb.OPS["CONCATENATION"], [r6, mu], [cat], ("ConcatenationOptions", dict(axis=3)))
    axes = g.m.tensor("axes", [2], tb.INT32, [1, 2])
    mean = g.act("mean", [1, 8])
    g.m.op(tb.OPS["MEAN"], [cat, axes], [mean], ("ReducerOptions", dict(keep_dims=False)))
    f = g.fc(mean, "fc", 8, 5, act=1)
    rl = g.act("relu", [1, 5])
    g.m.op(tb.OPS["RELU"], [f], [rl])
    lg = g.act("logistic", [1, 5], SOFTMAX_Q if q else None)
    g.m.op(tb.OPS["LOGISTIC"], [rl], [lg])
    return g.m.build([x], [g.exit(lg, [1, 5])])


def interpreter(model, ref=True):
    from ai_edge_litert import interpreter as lite
    kind = lite.OpResolverType.BUILTIN_REF if ref else lite.OpResolverType.AUTO
    it = lite.Interpreter(model_content=model, experimental_op_resolver_type=kind,
                          experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    return it


def run(model, x):
    it = interpreter(model)
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it, it.get_tensor(it.get_output_details()[0]["index"])


def write(name, model, xs, yq):
    """The model, its inputs xs (stacked) and LiteRT's outputs for each;
    yq: the (scale, zero point) of the int8 tensor its DEQUANTIZE reads."""
    y = np.stack([run(model, x)[1] for x in xs])
    with open(os.path.join(OUT, name + ".tflite"), "wb") as f:
        f.write(model)
    np.save(os.path.join(OUT, name + ".in.npy"), np.stack(xs))
    np.savez(os.path.join(OUT, name + ".ref.npz"), y=y, y_scale=yq[0], y_zp=yq[1])
    print(name, len(model), "bytes, outputs", y.shape)


def hostile(model):
    """Files axc must refuse with a located error: (name, bytes)."""
    m = tb.Model()
    x = m.tensor("x", [1, 4])
    y = m.tensor("y", [1, 4])
    m.op(tb.OPS["FLOOR"], [x], [y])
    floor = m.build([x], [y])
    m = tb.Model()
    x = m.tensor("x", [1, 4])
    w = m.tensor("w", [3, 4], tb.FLOAT32, np.ones((3, 4)))
    m.tensors[w]["buffer"] = 9   # past the model's buffers
    y = m.tensor("y", [1, 3])
    m.op(tb.OPS["FULLY_CONNECTED"], [x, w, -1], [y], ("FullyConnectedOptions", {}))
    badbuf = m.build([x], [y])
    return [("unsupported_floor", floor), ("bad_buffer", badbuf), ("truncated", model[: len(model) // 2])]


def single_op(kind, xq, yq, cq=None, rnd=None, const_first=False):
    """One int8 operator between the input's QUANTIZE and the output's
    DEQUANTIZE: kind 'add' / 'mul' (a constant int8 operand cq = (scale,
    zp), its integers random, its first operand when const_first; 'mul_scalar' a rank-0 one), 'mean'
    (over H and W) or 'avgpool' (2x2,
    stride 2, SAME: windows cut by the edge); xq, yq the input's and the
    output's (scale, zp)."""
    m = tb.Model()
    shape = [1, 5, 5, 6]
    x = m.tensor("x", shape)
    xi = m.tensor("x_q", shape, tb.INT8, scale=xq[0], zp=xq[1])
    m.op(tb.OPS["QUANTIZE"], [x], [xi])
    if kind in ("add", "mul", "mul_scalar"):
        cshape = [] if kind == "mul_scalar" else [1, 1, 5, 6]
        c = m.tensor("c", cshape, tb.INT8, rnd.integers(-128, 128, cshape), scale=cq[0], zp=cq[1])
        oshape = shape
        y = m.tensor("y_q", oshape, tb.INT8, scale=yq[0], zp=yq[1])
        m.op(tb.OPS["ADD" if kind == "add" else "MUL"], [c, xi] if const_first else [xi, c], [y],
             ("AddOptions" if kind == "add" else "MulOptions", dict(fused_activation_function=0)))
    elif kind == "mean":
        axes = m.tensor("axes", [2], tb.INT32, [1, 2])
        oshape = [1, 6]
        y = m.tensor("y_q", oshape, tb.INT8, scale=yq[0], zp=yq[1])
        m.op(tb.OPS["MEAN"], [xi, axes], [y], ("ReducerOptions", dict(keep_dims=False)))
    else:   # TFLite's int8 AVERAGE_POOL_2D: output parameters equal to the input's
        oshape = [1, 3, 3, 6]
        y = m.tensor("y_q", oshape, tb.INT8, scale=xq[0], zp=xq[1])
        m.op(tb.OPS["AVERAGE_POOL_2D"], [xi], [y], ("Pool2DOptions", dict(padding=0, stride_w=2, stride_h=2,
                                                                            filter_width=2, filter_height=2)))
    out = m.tensor("y", oshape)
    m.op(tb.OPS["DEQUANTIZE"], [y], [out])
    return m.build([x], [out]), shape


def single_ops():
    """The single-operator int8 fixtures (i8_op_*): random int8 inputs,
    output parameters narrow enough that some results saturate."""
    rnd = np.random.default_rng(3504)
    for kind, xq, yq, cq in (("add", (0.05, 3), (0.06, -10), (0.04, -7)),
                             ("mul", (0.1, -5), (0.12, 4), (0.05, 9)),
                             ("mean", (0.07, 11), (0.02, -3), None),
                             ("avgpool", (0.09, -20), (0.09, -20), None),
                             ("mul_scalar", (0.1, 7), (0.05, -2), (0.03, 4))):
        model, shape = single_op(kind, xq, yq, cq, rnd)
        xs = [((rnd.integers(-128, 128, shape) - xq[1]) * np.float32(xq[0])).astype(np.float32)
              for _ in range(NINPUTS)]
        write("i8_op_" + kind, model, xs, yq)


# LOGISTIC, TANH and SOFTMAX (with its beta): input (scale, zp) each, output
# parameters TFLite's int8 kernels require
TABLE_OPS = (("logistic", ((0.05, 3), (0.1, -20), (0.25, 0)), (1 / 256, -128)),
             ("tanh", ((0.02, 5), (0.05, -3), (0.1, 0)), (1 / 128, 0)),
             ("softmax", ((0.05, 3, 1.0), (0.1, -7, 0.7), (0.25, 10, 2.0)), SOFTMAX_Q))


def table_op(kind, xq, yq, beta):
    """One int8 LOGISTIC, TANH or SOFTMAX (over the last axis of 16) between
    the input's QUANTIZE and the output's DEQUANTIZE, input [1, 16, 16]."""
    m = tb.Model()
    shape = [1, 16, 16]
    x = m.tensor("x", shape)
    xi = m.tensor("x_q", shape, tb.INT8, scale=xq[0], zp=xq[1])
    m.op(tb.OPS["QUANTIZE"], [x], [xi])
    y = m.tensor("y_q", shape, tb.INT8, scale=yq[0], zp=yq[1])
    if kind == "softmax":
        m.op(tb.OPS["SOFTMAX"], [xi], [y], ("SoftmaxOptions", dict(beta=beta)))
    else:
        m.op(tb.OPS[kind.upper()], [xi], [y])
    out = m.tensor("y", shape)
    m.op(tb.OPS["DEQUANTIZE"], [y], [out])
    return m.build([x], [out]), shape


def table_inputs(rnd, xq):
    """Two inputs holding each of the 256 integers once (shuffled), and two
    whose rows of 16 lie in a random window of 2 to 40 integers (softmax
    rows that are not all but one zero)."""
    qs = [rnd.permutation(256).reshape(1, 16, 16) - 128 for _ in range(2)]
    for _ in range(2):
        width = rnd.integers(2, 41, (1, 16, 1))
        low = rnd.integers(-128, 128 - width)
        qs.append(low + rnd.integers(0, 1 << 20, (1, 16, 16)) % width)
    return [((q - xq[1]) * np.float32(xq[0])).astype(np.float32) for q in qs]


def table_ops():
    """The single-operator LOGISTIC, TANH and SOFTMAX fixtures
    (i8_op_<kind>_<k>: every input integer, three input scales)."""
    rnd = np.random.default_rng(3505)
    for kind, inputs, yq in TABLE_OPS:
        for k, xq in enumerate(inputs, 1):
            model, shape = table_op(kind, xq[:2], yq, xq[2] if kind == "softmax" else None)
            write("i8_op_%s_%d" % (kind, k), model, table_inputs(rnd, xq), yq)


def const_first_ops():
    """ADD and MUL whose first operand is the constant (i8_op_<kind>_const_first)."""
    rnd = np.random.default_rng(3506)
    for kind, xq, yq, cq in (("add", (0.05, -4), (0.07, 6), (0.03, 11)),
                             ("mul", (0.08, 2), (0.1, -9), (0.06, -5))):
        model, shape = single_op(kind, xq, yq, cq, rnd, const_first=True)
        xs = [((rnd.integers(-128, 128, shape) - xq[1]) * np.float32(xq[0])).astype(np.float32)
              for _ in range(4)]
        write("i8_op_%s_const_first" % kind, model, xs, yq)


def move_model(kind, xq, shape):
    """The input's QUANTIZE (xq = (scale, zp)), then data movement alone
    (kind 'reshape' to [1, N], 'maxpool' 3x3 /2 SAME, 'pad', 'none'), then
    the DEQUANTIZE; 'int8_out': the reshape's int8 tensor is the output."""
    m = tb.Model()
    x = m.tensor("x", shape)
    xi = m.tensor("x_q", shape, tb.INT8, scale=xq[0], zp=xq[1])
    m.op(tb.OPS["QUANTIZE"], [x], [xi])
    if kind in ("reshape", "int8_out"):
        oshape = [1, int(np.prod(shape))]
        y = m.tensor("y_q", oshape, tb.INT8, scale=xq[0], zp=xq[1])
        m.op(tb.OPS["RESHAPE"], [xi, m.tensor("shape", [2], tb.INT32, oshape)], [y],
             ("ReshapeOptions", dict(new_shape=oshape)))
    elif kind == "maxpool":
        oshape = [1, -(-shape[1] // 2), -(-shape[2] // 2), shape[3]]
        y = m.tensor("y_q", oshape, tb.INT8, scale=xq[0], zp=xq[1])
        m.op(tb.OPS["MAX_POOL_2D"], [xi], [y], ("Pool2DOptions", dict(padding=0, stride_w=2, stride_h=2,
                                                                        filter_width=3, filter_height=3)))
    elif kind == "pad":
        pads = [[0, 0], [1, 2], [0, 1], [0, 0]]
        oshape = [n + lo + hi for n, (lo, hi) in zip(shape, pads)]
        y = m.tensor("y_q", oshape, tb.INT8, scale=xq[0], zp=xq[1])
        m.op(tb.OPS["PAD"], [xi, m.tensor("pads", [4, 2], tb.INT32, pads)], [y], ("PadOptions", {}))
    else:
        y, oshape = xi, shape
    if kind == "int8_out":
        return m.build([x], [y])
    out = m.tensor("y", oshape)
    m.op(tb.OPS["DEQUANTIZE"], [y], [out])
    return m.build([x], [out])


def move_ops():
    """The data-movement fixtures (i8_move_*: QUANTIZE, data movement alone,
    DEQUANTIZE or an int8 output), inputs off the int8 grid, past both ends
    of its range, and (a scale of 1/16) on its ties: k/32 for odd k."""
    rnd = np.random.default_rng(3507)
    for kind, xq, shape in (("reshape", (1 / 16, 3), [1, 4, 4, 6]), ("maxpool", (0.05, -7), [1, 6, 6, 4]),
                            ("pad", (0.1, 10), [1, 5, 5, 3]), ("none", (0.03, -20), [1, 64]),
                            ("int8_out", (0.07, 0), [1, 2, 3, 4])):
        if xq[0] == 1 / 16:
            xs = [(rnd.integers(-400, 401, shape) / 32).astype(np.float32) for _ in range(NINPUTS)]
        else:
            xs = [rnd.normal(0, 150 * xq[0], shape).astype(np.float32) for _ in range(NINPUTS)]
        write("i8_move_" + kind, move_model(kind, xq, shape), xs, xq)


def main():
    os.makedirs(OUT, exist_ok=True)
    if sys.argv[1:] == ["ops"]:   # the single-operator fixtures only
        single_ops()
        table_ops()
        const_first_ops()
        return
    if sys.argv[1:] == ["moves"]:   # the data-movement fixtures only
        move_ops()
        return
    for name, build, shape, out in (("mcu", mcu, [1, 16, 16, 3], None), ("misc", misc, [1, 6, 6, 4], None),
                                    ("mcu_logits", lambda q: mcu(q, False), [1, 16, 16, 3], "fc")):
        xs = [rng.normal(0, 1, shape).astype(np.float32) for _ in range(8)]
        state = rng.bit_generator.state
        fmodel = build(None)
        rng.bit_generator.state = state   # the same weights for the int8 twin
        x = [rng.normal(0, 1, shape).astype(np.float32) for _ in range(NINPUTS)]
        write("f32_" + name, fmodel, x, (0, 0))
        # calibrate on the float model, then rebuild the same weights as int8
        lo, hi = {}, {}
        for xc in xs:
            it, _ = run(fmodel, xc)
            for d in it.get_tensor_details():
                v = it.get_tensor(d["index"])
                if v.dtype == np.float32 and v.size:
                    lo[d["name"]] = min(lo.get(d["name"], 0.0), float(v.min()))
                    hi[d["name"]] = max(hi.get(d["name"], 0.0), float(v.max()))
        q = {n: params(lo[n], hi[n]) for n in lo}
        q["x_q"] = q["x"]
        rng.bit_generator.state = state
        write("i8_" + name, build(q), [on_grid(xi, *q["x"]) for xi in x], q[out] if out else SOFTMAX_Q)
        if name == "misc":   # its PAD first, in float: the inputs off the int8 grid as well
            rng.bit_generator.state = state
            write("i8_misc_offgrid", build(q), x, q[out] if out else SOFTMAX_Q)
        rng.bit_generator.state = state
    single_ops()
    table_ops()
    const_first_ops()
    move_ops()
    for name, data in hostile(fmodel):
        with open(os.path.join(OUT, "bad_" + name + ".tflite"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
