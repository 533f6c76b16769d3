"""ONNX ops imported onto the IR's own ops (frontend/onnx_ops.c): ConvTranspose
-> conv_transpose, Resize/Upsample -> upsample, InstanceNormalization ->
groupnorm, Clip/Max/Min -> max/min, a Transpose of unit dims -> reshape; and the importer's checks of Mod and
Split.  Then `--emit=ax` (docs/onnx.md): each model written back as .ax
plus its --save-weights file must compute the same through `axc run` on the
.ax, or be refused with a located error and no output file (constant tensors
read as values: the language has none).  Each model is built with onnx.helper, run through generated C (`axc
run`) and the reference interpreter (`--interp`), and compared with PyTorch or
NumPy; `--emit=ir` must show the IR op it maps onto.  Bad models must give
exit 1, the expected located error and no output file."""
import os
import re
import subprocess
import tempfile

import numpy as np

try:
    import onnx
    import torch
    import torch.nn.functional as F
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None

RTOL, ATOL = 1e-4, 1e-5


def model(nodes, inputs, outputs, inits=(), opset=13):
    """inputs/outputs: (name, shape) of float32 tensors."""
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in inputs]
    vo = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s)) for n, s in outputs]
    inits = [numpy_helper.from_array(v, n) for n, v in inits]
    g = helper.make_graph(nodes, "g", vi, vo, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def conv_transpose_2d():
    """groups 2, strides (2, 1), dilations (1, 2), asymmetric pads, output_padding."""
    x, w, b = rand(1, 4, 5, 6), rand(4, 3, 3, 2, seed=1), rand(6, seed=2)
    pads, op = [1, 0, 0, 1], [1, 0]
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="up", group=2, strides=[2, 1],
                            dilations=[1, 2], pads=pads, output_padding=op)
    full = F.conv_transpose2d(t(x), t(w), t(b), stride=(2, 1), output_padding=tuple(op), groups=2,
                              dilation=(1, 2)).numpy()
    want = full[:, :, pads[0]:full.shape[2] - pads[2], pads[1]:full.shape[3] - pads[3]]
    m = model([node], [("x", x.shape)], [("y", want.shape)], [("w", w), ("b", b)])
    return m, {"x": x}, want, "conv_transpose"


def conv_transpose_1d_output_shape():
    """output_shape one past the natural size: the extra column is output padding."""
    x, w = rand(1, 2, 5), rand(2, 3, 3, seed=1)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up1", strides=[2], output_shape=[12])
    want = F.conv_transpose1d(t(x), t(w), stride=2, output_padding=1).numpy()
    return model([node], [("x", x.shape)], [("y", want.shape)], [("w", w)]), {"x": x}, want, "conv_transpose"


def resize(mode, coord, scales=None, sizes=None, torch_mode=None, corners=None, ir_op="upsample"):
    def case():
        x = rand(1, 3, 4, 5)
        ins, inits = ["x", "roi"], [("roi", np.zeros(0, np.float32))]
        if scales:
            ins.append("scales")
            inits.append(("scales", np.array(scales, np.float32)))
        else:
            ins += ["", "sizes"]
        node = helper.make_node("Resize", ins, ["y"], name="rs", mode=mode, coordinate_transformation_mode=coord,
                                nearest_mode="floor" if coord == "asymmetric" else "round_prefer_floor")
        kw = {"scale_factor": tuple(scales[2:])} if scales else {"size": tuple(sizes[2:])}
        if corners is not None:
            kw["align_corners"] = corners
        want = F.interpolate(t(x), mode=torch_mode, **kw).numpy()
        m = model([node], [("x", x.shape)], [("y", want.shape)], inits)
        if sizes:
            m.graph.initializer.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        return m, {"x": x}, want, ir_op
    case.__name__ = f"resize_{mode}_{coord}_{'scales' if scales else 'sizes'}"
    return case


def upsample_opset9():
    x = rand(1, 2, 3, 3)
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], name="us", mode="nearest")
    want = F.interpolate(t(x), scale_factor=(2, 2), mode="nearest").numpy()
    m = model([node], [("x", x.shape)], [("y", want.shape)], [("scales", np.array([1, 1, 2, 2], np.float32))], opset=9)
    return m, {"x": x}, want, "upsample"


def instancenorm(shape):
    def case():
        x, s, b = rand(*shape) * 3 + 1, rand(shape[1], seed=1), rand(shape[1], seed=2)
        node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], name="in", epsilon=1e-3)
        want = F.instance_norm(t(x), weight=t(s), bias=t(b), eps=1e-3).numpy()
        return model([node], [("x", x.shape)], [("y", want.shape)], [("s", s), ("b", b)]), {"x": x}, want, "groupnorm"
    case.__name__ = f"instancenorm_rank{len(shape)}"
    return case


def specials(shape):
    x = rand(*shape) * 4
    x.flat[:4] = [np.inf, -np.inf, 1e30, -1e30]
    return x


def transpose_unit_dims():
    """A Transpose that only moves dims of size 1 ([1, 4, 6] -> [4, 1, 6]) is a reshape: no copy."""
    x = rand(1, 4, 6)
    node = helper.make_node("Transpose", ["x"], ["y"], name="unit", perm=[1, 0, 2])
    want = np.transpose(x, (1, 0, 2))
    return model([node], [("x", x.shape)], [("y", want.shape)]), {"x": x}, want, "reshape"


def clip():
    x = specials((3, 7))
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")]
    inits = [("lo", np.array(-1.5, np.float32)), ("hi", np.array(2.25, np.float32))]
    return model(nodes, [("x", x.shape)], [("y", x.shape)], inits), {"x": x}, np.clip(x, -1.5, 2.25), "max"


def maximum():
    x, z = specials((3, 7)), rand(7, seed=3) * 4
    z[0] = -np.inf
    nodes = [helper.make_node("Max", ["x", "z"], ["y"], name="mx")]
    return model(nodes, [("x", x.shape), ("z", z.shape)], [("y", x.shape)]), {"x": x, "z": z}, np.maximum(x, z), "max"


def argmax(op, axis, keepdims):
    """ArgMax/ArgMin: Int64 indices of the first extreme (ties in the data), as NumPy."""
    def case():
        x = np.round(rand(3, 4, 5, seed=4) * 2)   # few values: ties
        node = helper.make_node(op, ["x"], ["y"], name="arg", axis=axis, keepdims=keepdims)
        want = (np.argmax if op == "ArgMax" else np.argmin)(x, axis=axis)
        want = np.expand_dims(want, axis) if keepdims else want
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, list(want.shape))])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        return m, {"x": x}, want.astype(np.int64), "argmax"
    case.__name__ = f"{op.lower()}_axis{axis}_keepdims{keepdims}"
    return case


def cumsum(axis, exclusive, reverse):
    """CumSum (a dense with a 0/1 triangle along the axis), against NumPy's cumsum."""
    def case():
        x = rand(2, 5, 3, seed=5)
        ax = np.array(axis, np.int64)
        node = helper.make_node("CumSum", ["x", "axis"], ["y"], name="cs", exclusive=exclusive, reverse=reverse)
        v = np.flip(x, axis) if reverse else x
        c = np.cumsum(v, axis=axis) - (v if exclusive else 0)
        want = np.flip(c, axis) if reverse else c
        return model([node], [("x", x.shape)], [("y", x.shape)], [("axis", ax)]), {"x": x}, want, "dense"
    case.__name__ = f"cumsum_axis{axis}_exclusive{exclusive}_reverse{reverse}"
    return case


def trilu(upper, k):
    """Trilu on the last two dims of [2, 4, 5], against NumPy's triu/tril."""
    def case():
        x = rand(2, 4, 5, seed=6)
        node = helper.make_node("Trilu", ["x", "k"], ["y"], name="tri", upper=upper)
        want = (np.triu if upper else np.tril)(x, k)
        return model([node], [("x", x.shape)], [("y", x.shape)], [("k", np.array(k, np.int64))]), {"x": x}, want, "mul"
    case.__name__ = f"trilu_upper{upper}_k{k}"
    return case


def lp_normalization(p, axis):
    def case():
        x = rand(3, 4, 6, seed=7)
        node = helper.make_node("LpNormalization", ["x"], ["y"], name="lp", p=p, axis=axis)
        want = x / np.linalg.norm(x, ord=p, axis=axis, keepdims=True)
        return model([node], [("x", x.shape)], [("y", x.shape)]), {"x": x}, want, "sum"
    case.__name__ = f"lp_normalization_p{p}_axis{axis}"
    return case


def compare_folded():
    """LessOrEqual/GreaterOrEqual of constants fold (shape computations), ties included."""
    a = np.array([1, 2, 3, 4, 5, 6], np.int64)
    b = np.array([3, 2, 1, 4, 6, 0], np.int64)
    x = rand(6)
    nodes = [helper.make_node("Constant", [], ["a"], value=numpy_helper.from_array(a)),
             helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(b)),
             helper.make_node("LessOrEqual", ["a", "b"], ["le"]),
             helper.make_node("GreaterOrEqual", ["a", "b"], ["ge"]),
             helper.make_node("Cast", ["le"], ["lef"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["ge"], ["gef"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["gef", "x"], ["gx"]),
             helper.make_node("Add", ["lef", "gx"], ["y"])]
    want = (a <= b).astype(np.float32) + (a >= b).astype(np.float32) * x
    return model(nodes, [("x", x.shape)], [("y", x.shape)]), {"x": x}, want, None


def mod_integers():
    """Mod fmod=0 of integer constants folds with Python's sign (the divisor's)."""
    a = np.array([-7, 7, -7, 7, 5, -6], np.int64)
    b = np.array([2, -2, -3, 3, -5, 4], np.int64)
    x = rand(6)
    nodes = [helper.make_node("Constant", [], ["a"], value=numpy_helper.from_array(a)),
             helper.make_node("Constant", [], ["b"], value=numpy_helper.from_array(b)),
             helper.make_node("Mod", ["a", "b"], ["r"], name="mod"),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"], name="add")]
    return model(nodes, [("x", x.shape)], [("y", x.shape)]), {"x": x}, x + np.mod(a, b).astype(np.float32), None


def torch_cnn():
    """A small CNN as torch.onnx.export writes it (Conv, BatchNorm, MaxPool, Flatten, Gemm)."""
    import io
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(64, 5)).eval()
    with torch.no_grad():
        net[1].running_mean.uniform_(-1, 1)
        net[1].running_var.uniform_(0.5, 2)
    x = rand(1, 3, 8, 8)
    buf = io.BytesIO()
    torch.onnx.export(net, t(x), buf, input_names=["x"], output_names=["y"], opset_version=13)
    with torch.no_grad():
        want = net(t(x)).numpy()
    return onnx.load_from_string(buf.getvalue()), {"x": x}, want, "conv"


def concat_200():
    """A Concat of 200 inputs (a and b alternating) is one IR concat: no
    input-count limit in the importer, the IR or the back ends."""
    a, b = rand(2, 1, 3), rand(2, 2, 3, seed=1)
    node = helper.make_node("Concat", ["a", "b"] * 100, ["y"], name="cat", axis=1)
    want = np.concatenate([a, b] * 100, axis=1)
    m = model([node], [("a", a.shape), ("b", b.shape)], [("y", want.shape)])
    return m, {"a": a, "b": b}, want, "concat"


GOOD = [concat_200, torch_cnn, conv_transpose_2d, conv_transpose_1d_output_shape,
        resize("nearest", "half_pixel", scales=[1, 1, 2, 3], torch_mode="nearest"),
        resize("linear", "half_pixel", sizes=[1, 3, 12, 10], torch_mode="bilinear", corners=False),
        resize("linear", "align_corners", scales=[1, 1, 3, 2], torch_mode="bilinear", corners=True),
        resize("cubic", "half_pixel", scales=[1, 1, 2, 1.5], torch_mode="bicubic", corners=False, ir_op=None),
        resize("nearest", "asymmetric", scales=[1, 1, 1.5, 2.5], torch_mode="nearest", ir_op=None),
        upsample_opset9, transpose_unit_dims, instancenorm((2, 3, 4, 5)), instancenorm((2, 3, 7)), clip, maximum, mod_integers,
        argmax("ArgMax", 1, 1), argmax("ArgMax", -1, 0), argmax("ArgMin", 0, 0),
        cumsum(1, 0, 0), cumsum(-1, 1, 0), cumsum(1, 1, 1), cumsum(0, 0, 1), trilu(1, 0), trilu(0, -1), trilu(1, 2),
        lp_normalization(2, -1), lp_normalization(1, 1), compare_folded]


def split_bad():
    x = rand(2, 6)
    node = helper.make_node("Split", ["x"], ["a", "b"], name="sp", axis=1, split=[2, 3])
    return model([node], [("x", x.shape)], [("a", (2, 2)), ("b", (2, 3))], opset=11), \
        r"ONNX node 'sp' \(Split\): split sizes sum to 5, not the axis length 6"


def argmax_last_index():
    node = helper.make_node("ArgMax", ["x"], ["y"], name="arg", axis=1, select_last_index=1)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [2, 1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), r"unsupported: select_last_index=1"


def mod_float_fmod0():
    node = helper.make_node("Mod", ["x", "z"], ["y"], name="m0")
    return model([node], [("x", (4,)), ("z", (4,))], [("y", (4,))]), \
        r"ONNX node 'm0' \(Mod\): Mod with fmod=0 on floating-point tensors"


BAD = [split_bad, mod_float_fmod0, argmax_last_index]


def run_good(axc, d, case):
    m, inputs, want, ir_op = case()
    path = os.path.join(d, f"{case.__name__}.onnx")
    open(path, "wb").write(m.SerializeToString())
    args = []
    for n, v in inputs.items():
        np.save(os.path.join(d, f"{n}.npy"), v)
        args += ["--input", f"{n}={d}/{n}.npy"]
    for interp in ([], ["--interp"]):
        out = os.path.join(d, "y.npy")
        r = subprocess.run([axc, "run", path, *interp, *args, "--output", out], capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            return False, f"axc run {' '.join(interp)}: exit {r.returncode}: {r.stderr.strip()[:300]}"
        got = np.load(out)
        if got.size != want.size:
            return False, f"{' '.join(interp) or 'generated C'}: output {got.shape}, reference {want.shape}"
        got = got.reshape(want.shape)
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            return False, f"{' '.join(interp) or 'generated C'}: max abs error {np.nanmax(np.abs(got - want)):.3g}"
    if ir_op:
        r = subprocess.run([axc, path, "--emit=ir"], capture_output=True, text=True, timeout=60)
        if not re.search(rf"= {ir_op} |\b{ir_op}\(", r.stdout):
            return False, f"--emit=ir shows no {ir_op}: {r.stdout.strip()[:400]} {r.stderr.strip()[:200]}"
    return True, ""


def run_as_ax(axc, d, case):
    """--emit=ax, then axc run on the .ax with its weights: the same answer, or a refusal."""
    m, inputs, want, _ = case()
    path, ax, st = (os.path.join(d, f"{case.__name__}.{e}") for e in ("onnx", "ax", "safetensors"))
    open(path, "wb").write(m.SerializeToString())
    r = subprocess.run([axc, path, "--emit=ax", "-o", ax, "--save-weights", st], capture_output=True, text=True,
                       timeout=60)
    if r.returncode == 1 and "--emit=ax cannot write ONNX node" in r.stderr:
        left = [f for f in (ax, st) if os.path.exists(f)]
        return not left, "refused", f"refused but wrote {left}"
    if r.returncode != 0:
        return False, "", f"--emit=ax: exit {r.returncode}: {r.stderr.strip()[:300]}"
    args = []
    for n, v in inputs.items():
        np.save(os.path.join(d, f"{n}.npy"), v)
        args += ["--input", f"{n}={d}/{n}.npy"]
    out = os.path.join(d, "y_ax.npy")
    r = subprocess.run([axc, "run", ax, "--weights", st, *args, "--output", out], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        return False, "", f"axc run on the .ax: exit {r.returncode}: {r.stderr.strip()[:300]}\n  {open(ax).read()}"
    got = np.load(out)
    if got.size != want.size:
        return False, "", f"output {got.shape}, reference {want.shape}"
    got = got.reshape(want.shape)
    ok = np.allclose(got, want, rtol=RTOL, atol=ATOL)
    return ok, "same outputs", "" if ok else f"max abs error {np.nanmax(np.abs(got - want)):.3g}"


def run_bad(axc, d, case):
    m, pattern = case()
    path = os.path.join(d, f"{case.__name__}.onnx")
    open(path, "wb").write(m.SerializeToString())
    out = os.path.join(d, "bad.c")
    if os.path.exists(out):   # left by an earlier model wrongly accepted: not this one's
        os.remove(out)
    r = subprocess.run([axc, path, "-o", out], capture_output=True, text=True, timeout=60)
    ok = r.returncode == 1 and not os.path.exists(out) and re.search(pattern, r.stderr)
    return ok, f"exit {r.returncode}, expected /{pattern}/: {r.stderr.strip()[:300]}"


def report(ok, line, why):
    """Prints the PASS/FAIL line (details indented); 1 when it failed."""
    print(f"{'PASS' if ok else 'FAIL'}: {line}")
    if not ok:
        print("  " + why)
    return 0 if ok else 1


def det_shapes(axc, d):
    """Det of one 2x2 matrix is a scalar (shape ()), of a batch [3, 2, 2] a
    vector [3]: the very shapes, not only the values (the conformance runner
    reshapes a same-sized answer, which hid a [1] for ())."""
    for shape in ((2, 2), (3, 2, 2)):
        x = rand(*shape, seed=4)
        want = np.linalg.det(x.astype(np.float64)).astype(np.float32)
        m = model([helper.make_node("Det", ["x"], ["y"], name="det")], [("x", shape)], [("y", want.shape)])
        path = os.path.join(d, "det.onnx")
        open(path, "wb").write(m.SerializeToString())
        np.save(os.path.join(d, "xdet.npy"), x)
        for interp in ([], ["--interp"]):
            out = os.path.join(d, "ydet.npy")
            r = subprocess.run([axc, "run", path, *interp, "--input", f"x={d}/xdet.npy", "--output", out],
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                return False, f"Det {shape} {' '.join(interp)}: exit {r.returncode}: {r.stderr.strip()[:300]}"
            got = np.load(out)
            if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
                return False, f"Det {shape} {' '.join(interp) or 'generated C'}: {got.shape} {got} vs {want.shape} {want}"
    return True, ""


def main():
    if onnx is None:
        print("SKIP: onnx op mapping (needs python3-onnx and python3-torch)")
        return 0
    axc = os.environ.get("AXC", "axc")
    rc = 0
    with tempfile.TemporaryDirectory() as d:
        for case in GOOD:
            ok, why = run_good(axc, d, case)
            rc |= report(ok, f"onnx mapping {case.__name__}: matches the reference, generated C and interpreter", why)
        written = 0
        for case in GOOD:
            ok, what, why = run_as_ax(axc, d, case)
            written += what == "same outputs"
            rc |= report(ok, f"onnx --emit=ax {case.__name__}: {what or 'written back as .ax'}", why)
        rc |= report(written >= len(GOOD) // 2, f"onnx --emit=ax: {written} of {len(GOOD)} models written back and "
                     "recomputed (the refusals stay the exception)", "too few")
        ok, why = det_shapes(axc, d)
        rc |= report(ok, "onnx mapping Det: a rank-0 result for one matrix, [3] for three", why)
        for case in BAD:
            ok, why = run_bad(axc, d, case)
            rc |= report(ok, f"onnx mapping {case.__name__}: exit 1, a located error, no output", why)
    return rc


if __name__ == "__main__":
    import sys
    sys.exit(main())
