"""ONNX opsets 18-21 (frontend/onnx_ops.c): every mapped op whose semantics
changed after opset 17, and the ops new in those opsets that the importer
maps, each in a model of the opset that changed it, run through generated C
(`axc run`) and the reference interpreter (`--interp`) and compared with
PyTorch or NumPy (mapping.py's run_good), then written back with --emit=ax
and run again (run_as_ax: the same outputs, or a located refusal):

  Reduce*  axes as an optional input (18), noop_with_empty_axes
  Split    num_outputs (18), the last part smaller when uneven
  Pad      the axes input (18), mode wrap (19); CenterCropPad (18)
  Resize   axes and keep_aspect_ratio_policy (18), antialias=1 where it
           changes nothing, half_pixel_symmetric (19)
  Mish (18), Gelu (20, approximate none/tanh), GroupNormalization (18: scale
  and bias per group; 21: per channel)

What these opsets add and axc does not map (antialias when downscaling, an
axes attribute where axes became an input, Cast to float8, AveragePool
dilations (19), unknown mode names...) must be refused: exit 1, a located error naming the node, no
output file (mapping.py's run_bad).  Models are built with onnx.helper; the
onnx package may predate these opsets (only the opset number is written)."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mapping import model, rand, report, run_as_ax, run_bad, run_good, t  # noqa: E402

try:
    import onnx
    import torch.nn.functional as F
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None

REDUCE = {
    "ReduceMean": lambda x, ax, kd: np.mean(x, axis=ax, keepdims=kd),
    "ReduceSum": lambda x, ax, kd: np.sum(x, axis=ax, keepdims=kd),
    "ReduceMax": lambda x, ax, kd: np.max(x, axis=ax, keepdims=kd),
    "ReduceMin": lambda x, ax, kd: np.min(x, axis=ax, keepdims=kd),
    "ReduceProd": lambda x, ax, kd: np.prod(x, axis=ax, keepdims=kd),
    "ReduceL1": lambda x, ax, kd: np.sum(np.abs(x), axis=ax, keepdims=kd),
    "ReduceL2": lambda x, ax, kd: np.sqrt(np.sum(x * x, axis=ax, keepdims=kd)),
    "ReduceSumSquare": lambda x, ax, kd: np.sum(x * x, axis=ax, keepdims=kd),
    "ReduceLogSum": lambda x, ax, kd: np.log(np.sum(x, axis=ax, keepdims=kd)),
    "ReduceLogSumExp": lambda x, ax, kd: np.log(np.sum(np.exp(x), axis=ax, keepdims=kd)),
}


def reduce18(op, axes, keepdims):
    """axes as the optional second input (opset 18); None: the input absent, every axis."""
    def case():
        x = rand(2, 3, 4, seed=11)
        if op == "ReduceLogSum":
            x = np.abs(x) + 0.5
        ins, inits = ["x"], []
        if axes is not None:
            ins.append("axes")
            inits.append(("axes", np.array(axes, np.int64)))
        node = helper.make_node(op, ins, ["y"], name="red", keepdims=keepdims)
        want = REDUCE[op](x.astype(np.float64), tuple(axes) if axes else None, bool(keepdims))   # [] too: every axis
        want = np.asarray(want, np.float32)
        return model([node], [("x", x.shape)], [("y", want.shape)], inits, opset=18), {"x": x}, want, None
    case.__name__ = f"{op.lower()}_opset18_axes{('_'.join(map(str, axes)) or 'empty') if axes is not None else 'none'}_keepdims{keepdims}"
    return case


def reduce_noop_empty_axes():
    """noop_with_empty_axes=1 and no axes input: the input unchanged, not reduced."""
    x = rand(2, 3, seed=12)
    node = helper.make_node("ReduceMax", ["x"], ["y"], name="red", noop_with_empty_axes=1)
    return model([node], [("x", x.shape)], [("y", x.shape)], opset=18), {"x": x}, x, None


def split_num_outputs(n, parts, opset=18):
    """Split of an axis of length n into parts by num_outputs, put back in reverse order."""
    def case():
        x = rand(2, n, seed=13)
        outs = [f"p{i}" for i in range(parts)]
        nodes = [helper.make_node("Split", ["x"], outs, name="sp", axis=1, num_outputs=parts),
                 helper.make_node("Concat", outs[::-1], ["y"], name="cat", axis=1)]
        size = -(-n // parts)
        chunks = [x[:, i * size:min((i + 1) * size, n)] for i in range(parts)]
        want = np.concatenate(chunks[::-1], axis=1)
        return model(nodes, [("x", x.shape)], [("y", want.shape)], opset=opset), {"x": x}, want, None
    case.__name__ = f"split_num_outputs_{n}_into_{parts}"
    return case


def pad(mode, pads, axes, opset):
    """Pad with the axes input (opset 18) or mode wrap (19), against np.pad."""
    def case():
        x = rand(2, 3, 4, seed=14)
        ins, inits = ["x", "pads"], [("pads", np.array(pads, np.int64))]
        if mode == "constant":
            ins.append("cv")
            inits.append(("cv", np.array(1.5, np.float32)))
        if axes is not None:
            ins += [""] * (3 - len(ins)) + ["axes"]
            inits.append(("axes", np.array(axes, np.int64)))
        node = helper.make_node("Pad", ins, ["y"], name="pad", mode=mode)
        full = [[0, 0] for _ in range(x.ndim)]
        for k, a in enumerate(axes if axes is not None else range(x.ndim)):
            full[a % x.ndim] = [pads[k], pads[k + len(pads) // 2]]
        kw = {"constant_values": 1.5} if mode == "constant" else {}
        want = np.pad(x, full, mode=mode, **kw)
        return model([node], [("x", x.shape)], [("y", want.shape)], inits, opset=opset), {"x": x}, want, None
    case.__name__ = f"pad_{mode}_opset{opset}_axes{'_'.join(map(str, axes)) if axes is not None else 'none'}"
    return case


def center_crop_pad(target, axes):
    """CenterCropPad: a centred crop where the target is shorter, zeros around where longer."""
    def case():
        x = rand(2, 5, 4, seed=20)
        node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], name="ccp",
                                **({"axes": axes} if axes is not None else {}))
        want = x
        for t_len, a in zip(target, axes if axes is not None else range(x.ndim)):
            d = want.shape[a]
            if t_len < d:
                want = np.take(want, range((d - t_len) // 2, (d - t_len) // 2 + t_len), axis=a)
            elif t_len > d:
                width = [(0, 0)] * x.ndim
                width[a] = ((t_len - d) // 2, t_len - d - (t_len - d) // 2)
                want = np.pad(want, width)
        return model([node], [("x", x.shape)], [("y", want.shape)], [("shape", np.array(target, np.int64))],
                     opset=18), {"x": x}, want, None
    case.__name__ = f"center_crop_pad_{'_'.join(map(str, target))}_axes{'_'.join(map(str, axes)) if axes else 'all'}"
    return case


def linear_axis(x, axis, scale, m, coord):
    """onnx's linear resize of one axis (its reference's formulas, written out here)."""
    n = x.shape[axis]
    out = []
    for i in range(m):
        if coord == "half_pixel_symmetric":
            c = (n / 2) * (1 - m / (scale * n)) + (i + 0.5) / scale - 0.5
        else:
            c = (i + 0.5) / scale - 0.5
        c = min(max(c, 0.0), n - 1.0)
        k0 = int(np.floor(c))
        k1 = min(k0 + 1, n - 1)
        f = c - k0
        out.append(np.take(x, k0, axis=axis) * (1 - f) + np.take(x, k1, axis=axis) * f)
    return np.stack(out, axis=axis)


def resize18(name, opset, attrs, scales=None, sizes=None, want_fn=None):
    def case():
        x = rand(1, 2, 4, 5, seed=15)
        ins, inits = ["x", "", "scales" if scales else ""], []
        if scales:
            inits.append(("scales", np.array(scales, np.float32)))
        else:
            ins.append("sizes")
            inits.append(("sizes", np.array(sizes, np.int64)))
        node = helper.make_node("Resize", ins, ["y"], name="rs", **attrs)
        want = want_fn(x).astype(np.float32)
        return model([node], [("x", x.shape)], [("y", want.shape)], inits, opset=opset), {"x": x}, want, None
    case.__name__ = f"resize_{name}_opset{opset}"
    return case


def resize_axes_linear(x):
    return F.interpolate(t(x), scale_factor=(2, 3), mode="bilinear", align_corners=False).numpy()


def resize_keep_not_smaller(x):
    """sizes (8, 12) of 4 x 5 -> the larger ratio 2.4 on both: 10 x 12."""
    return linear_axis(linear_axis(x, 2, 2.4, 10, "half_pixel"), 3, 2.4, 12, "half_pixel")


def resize_keep_not_larger(x):   # (without axes N and C take part: ratio 1, x unchanged)
    """sizes (8, 12) of 4 x 5 -> the smaller ratio 2 on both: 8 x 10."""
    return F.interpolate(t(x), scale_factor=(2, 2), mode="bilinear", align_corners=False).numpy()


def resize_half_pixel_symmetric(x):
    """scale 1.5 of 4 and 5: lengths 6 and 7 (7.5 floored), the second centred."""
    return linear_axis(linear_axis(x, 2, 1.5, 6, "half_pixel_symmetric"), 3, 1.5, 7, "half_pixel_symmetric")


def unary(op, opset, fn, **attrs):
    def case():
        x = rand(3, 17, seed=16) * 3
        node = helper.make_node(op, ["x"], ["y"], name="act", **attrs)
        want = fn(t(x)).numpy()
        ir = {"Mish": "mish", "Gelu": "gelu_tanh" if attrs.get("approximate") == "tanh" else "gelu"}[op]
        return model([node], [("x", x.shape)], [("y", x.shape)], opset=opset), {"x": x}, want, ir
    case.__name__ = f"{op.lower()}_opset{opset}{''.join(f'_{k}_{v}' for k, v in attrs.items())}"
    return case


def groupnorm(opset, shape, groups):
    """GroupNormalization: scale/bias per group at opset 18, per channel at 21, against torch."""
    def case():
        c = shape[1]
        x = rand(*shape, seed=17) * 2 + 1
        n = groups if opset < 21 else c
        w, b = rand(n, seed=18), rand(n, seed=19)
        node = helper.make_node("GroupNormalization", ["x", "w", "b"], ["y"], name="gn", num_groups=groups,
                                epsilon=1e-3)
        wc, bc = (np.repeat(w, c // groups), np.repeat(b, c // groups)) if opset < 21 else (w, b)
        want = F.group_norm(t(x), groups, t(wc), t(bc), eps=1e-3).numpy()
        return model([node], [("x", x.shape)], [("y", x.shape)], [("w", w), ("b", b)], opset=opset), \
            {"x": x}, want, "groupnorm"
    case.__name__ = f"groupnormalization_opset{opset}_rank{len(shape)}_groups{groups}"
    return case


GOOD = [*(reduce18(op, [1], 1) for op in REDUCE), reduce18("ReduceMean", [-1, 0], 0), reduce18("ReduceMax", None, 0),
        reduce18("ReduceSum", [], 1), reduce_noop_empty_axes,
        split_num_outputs(7, 3), split_num_outputs(6, 3, opset=21),
        pad("constant", [1, 2, 0, 3], [-1, 1], 18), pad("reflect", [1, 2], [2], 18), pad("wrap", [0, 2, 3, 1, 0, 2], None, 19),
        center_crop_pad([2, 7], [1, -1]), center_crop_pad([3, 2, 3], None),
        resize18("axes_linear", 18, {"mode": "linear", "axes": [2, 3]}, scales=[2, 3], want_fn=resize_axes_linear),
        resize18("keep_not_smaller", 18, {"mode": "linear", "keep_aspect_ratio_policy": "not_smaller", "axes": [2, 3]},
                 sizes=[8, 12], want_fn=resize_keep_not_smaller),
        resize18("keep_not_larger", 18, {"mode": "linear", "keep_aspect_ratio_policy": "not_larger", "axes": [-2, -1]},
                 sizes=[8, 12], want_fn=resize_keep_not_larger),
        resize18("keep_not_larger_all_axes", 18, {"mode": "linear", "keep_aspect_ratio_policy": "not_larger"},
                 sizes=[1, 2, 8, 12], want_fn=lambda x: x),
        resize18("antialias_upscale", 18, {"mode": "linear", "antialias": 1}, scales=[1, 1, 2, 3],
                 want_fn=resize_axes_linear),
        resize18("half_pixel_symmetric", 19, {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
                 scales=[1, 1, 1.5, 1.5], want_fn=resize_half_pixel_symmetric),
        unary("Mish", 18, F.mish), unary("Gelu", 20, F.gelu),
        unary("Gelu", 20, lambda v: F.gelu(v, approximate="tanh"), approximate="tanh"),
        groupnorm(18, (2, 6, 3, 4), 3), groupnorm(21, (2, 6, 5), 2), groupnorm(21, (2, 4, 3, 3), 4)]


def bad(name, nodes, pattern, opset, inputs=(("x", (2, 6)),), outputs=(("y", (2, 6)),), inits=()):
    def case():
        return model(nodes, inputs, outputs, inits, opset=opset), pattern
    case.__name__ = name
    return case


def axes_init(v):
    return [("axes", np.array(v, np.int64))]


BAD = [
    bad("reduce_axes_attribute_opset18", [helper.make_node("ReduceMean", ["x"], ["y"], name="rm", axes=[1])],
        r"ONNX node 'rm' \(ReduceMean\): an axes attribute at opset 18, where axes is an input", 18,
        outputs=(("y", (2, 1)),)),
    bad("split_num_outputs_and_sizes", [helper.make_node("Split", ["x", "s"], ["a", "b"], name="sp", num_outputs=2)],
        r"ONNX node 'sp' \(Split\): both split sizes and num_outputs", 18,
        outputs=(("a", (2, 3)), ("b", (2, 3))), inits=[("s", np.array([3, 3], np.int64))]),
    bad("split_num_outputs_mismatch", [helper.make_node("Split", ["x"], ["a", "b"], name="sp", num_outputs=3)],
        r"ONNX node 'sp' \(Split\): num_outputs is 3 but the node has 2 outputs", 18,
        outputs=(("a", (2, 3)), ("b", (2, 3)))),
    bad("pad_axes_count", [helper.make_node("Pad", ["x", "p", "", "axes"], ["y"], name="pd")],
        r"ONNX node 'pd' \(Pad\): pads has 2 values for 2 axes", 18, outputs=(("y", (2, 8)),),
        inits=[("p", np.array([1, 1], np.int64))] + axes_init([0, 1])),
    bad("resize_antialias_downscale", [helper.make_node("Resize", ["x", "", "sc"], ["y"], name="rs", mode="linear",
                                                        antialias=1)],
        r"ONNX node 'rs' \(Resize\): unsupported: antialias=1 when downscaling", 18,
        inputs=(("x", (1, 1, 4, 4)),), outputs=(("y", (1, 1, 2, 2)),),
        inits=[("sc", np.array([1, 1, 0.5, 0.5], np.float32))]),
    bad("resize_unknown_coordinate_mode", [helper.make_node("Resize", ["x", "", "sc"], ["y"], name="rs",
                                                            coordinate_transformation_mode="half_pixel_sym")],
        r"ONNX node 'rs' \(Resize\): unknown coordinate_transformation_mode 'half_pixel_sym'", 19,
        inputs=(("x", (1, 1, 4, 4)),), outputs=(("y", (1, 1, 8, 8)),),
        inits=[("sc", np.array([1, 1, 2, 2], np.float32))]),
    bad("resize_unknown_keep_aspect_ratio_policy",
        [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="rs", keep_aspect_ratio_policy="fit")],
        r"ONNX node 'rs' \(Resize\): unknown keep_aspect_ratio_policy 'fit'", 18,
        inputs=(("x", (1, 1, 4, 4)),), outputs=(("y", (1, 1, 8, 8)),), inits=[("sz", np.array([1, 1, 8, 8], np.int64))]),
    bad("resize_axes_repeated", [helper.make_node("Resize", ["x", "", "sc"], ["y"], name="rs", axes=[2, -2])],
        r"ONNX node 'rs' \(Resize\): axis 2 is repeated in axes", 18,
        inputs=(("x", (1, 1, 4, 4)),), outputs=(("y", (1, 1, 8, 4)),), inits=[("sc", np.array([2, 1], np.float32))]),
    bad("gelu_unknown_approximate", [helper.make_node("Gelu", ["x"], ["y"], name="ge", approximate="erf")],
        r"ONNX node 'ge' \(Gelu\): unsupported: Gelu approximate='erf'", 20),
    bad("cast_to_float8", [helper.make_node("Cast", ["x"], ["y"], name="c8", to=17)],
        r"ONNX node 'c8' \(Cast\): unsupported: Cast to ONNX data type 17", 19),
    bad("groupnorm_groups_not_dividing", [helper.make_node("GroupNormalization", ["x", "w", "b"], ["y"], name="gn",
                                                           num_groups=4)],
        r"ONNX node 'gn' \(GroupNormalization\): num_groups 4 does not divide the 6 channels", 21,
        inputs=(("x", (1, 6, 3)),), outputs=(("y", (1, 6, 3)),),
        inits=[("w", np.ones(6, np.float32)), ("b", np.zeros(6, np.float32))]),
    bad("center_crop_pad_shape_count", [helper.make_node("CenterCropPad", ["x", "s"], ["y"], name="ccp", axes=[1])],
        r"ONNX node 'ccp' \(CenterCropPad\): shape has 2 values for 1 axes", 18,
        outputs=(("y", (2, 4)),), inits=[("s", np.array([2, 4], np.int64))]),
    bad("averagepool_dilations_opset19", [helper.make_node("AveragePool", ["x"], ["y"], name="ap", kernel_shape=[2, 2],
                                                            dilations=[2, 2])],
        r"ONNX node 'ap' \(AveragePool\): unsupported: dilated pooling", 19,
        inputs=(("x", (1, 1, 5, 5)),), outputs=(("y", (1, 1, 3, 3)),)),
    bad("opset22", [helper.make_node("Relu", ["x"], ["y"], name="r")],
        r"uses ONNX opset 22, which is unsupported: axc reads opsets up to 21", 22),
]


def main():
    if onnx is None:
        print("SKIP: onnx opsets 18-21 (needs python3-onnx and python3-torch)")
        return 0
    axc = os.environ.get("AXC", "axc")
    rc = 0
    with tempfile.TemporaryDirectory() as d:
        for case in GOOD:
            ok, why = run_good(axc, d, case)
            rc |= report(ok, f"onnx opset 18-21 {case.__name__}: matches the reference, generated C and interpreter", why)
            ok, what, why = run_as_ax(axc, d, case)
            rc |= report(ok, f"onnx opset 18-21 --emit=ax {case.__name__}: {what or 'written back as .ax'}", why)
        for case in BAD:
            ok, why = run_bad(axc, d, case)
            rc |= report(ok, f"onnx opset 18-21 {case.__name__}: exit 1, a located error, no output", why)
    return rc


if __name__ == "__main__":
    sys.exit(main())
