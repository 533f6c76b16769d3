"""Cases of docs/language.md#composition (blocks, instances with dotted names, Chain,
lists, compile-time for) and the torchvision examples of examples/.  Each
twin's state_dict names are PyTorch's own (layer1.0.conv1.weight ...), so
one safetensors file loads into both without renaming."""

import os

import torch
import torch.nn.functional as F
from torch import nn

import twins as T
from cases import Case, DEEP

BASIC_AX = """
@axiom block function basic(x; cin, cout, stride=1)
    conv1 = Conv((3, 3), cin => cout, stride=stride, pad=1, bias=false)
    bn1   = BatchNorm(cout)
    conv2 = Conv((3, 3), cout => cout, pad=1, bias=false)
    bn2   = BatchNorm(cout)
    h = x |> conv1 |> bn1 |> relu |> conv2 |> bn2
    return relu(h + x)
end
"""


class Basic(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = T.ConvNHWC(cin, cout, 3, stride=stride, pad=1, bias=False)
        self.bn1 = T.BatchNormNHWC(cout)
        self.conv2 = T.ConvNHWC(cout, cout, 3, pad=1, bias=False)
        self.bn2 = T.BatchNormNHWC(cout)

    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + x)


class Net(nn.Module):
    """The model of docs/language.md#composition: a Chain of two instances, a list of
    four, one applied twice (shared weights), a Chain ending in a function."""

    def __init__(self, c):
        super().__init__()
        self.layer1 = nn.Sequential(Basic(c, c), Basic(c, c))
        self.blocks = nn.ModuleList([Basic(c, c) for _ in range(3)])
        self.head = nn.Sequential(T.ConvNHWC(c, 5, 1), nn.ReLU())

    def forward(self, x):
        h = self.layer1(x)
        for b in self.blocks:
            h = b(h)
        h = self.blocks[0](h)
        return self.head(h)


NET_AX = "const C = 4\n" + BASIC_AX + """
@axiom function net(x::Float32[1, 7, 9, C])
    layer1 = Chain(basic(cin=C, cout=C), basic(cin=C, cout=C))
    blocks = [basic(cin=C, cout=C) for i in 1:3]
    head = Chain(Conv((1, 1), C => 5), relu)
    h = layer1(x)
    for b in blocks
        h = b(h)
    end
    h = blocks[0](h)
    return head(h)
end
"""

NESTED_AX = """
@axiom block function mlp(x; d, hidden)
    fc1 = Dense(d => hidden)
    fc2 = Dense(hidden => d)
    return x + fc2(gelu(fc1(x)))
end

@axiom block function stage(x; d, n)
    norm = LayerNorm(d)
    layers = [mlp(d=d, hidden=2 * d) for i in 1:n]
    h = norm(x)
    for i in 0:n - 1
        h = layers[i](h)
    end
    return h
end

@axiom function deep(x::Float32[2, 5, 6])
    encoder = Chain(stage(d=6, n=2), stage(d=6, n=3))
    return encoder(x)
end
"""


class Mlp(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x)))


class Stage(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList([Mlp(d, 2 * d) for _ in range(n)])

    def forward(self, x):
        h = self.norm(x)
        for layer in self.layers:
            h = layer(h)
        return h


SE_AX = """
@axiom function se_blocks(x::Float32[2, 6, 6, 16])
    dw1 = Conv((3, 3), 16 => 16, pad=1, groups=16, bias=false)
    fc1a = Dense(16 => 4)
    fc1b = Dense(4 => 16)
    project1 = Conv((1, 1), 16 => 16)
    dw2 = Conv((3, 3), 16 => 16, pad=1, groups=16, bias=false)
    fc2a = Dense(16 => 4)
    fc2b = Dense(4 => 16)
    project2 = Conv((1, 1), 16 => 48, bias=false)
    pool = GlobalMeanPool()
    h1 = swish(dw1(x))
    s1 = sigmoid(4.0 * fc1b(swish(fc1a(8.0 * pool(h1)))))
    y1 = project1(reshape(s1, (2, 1, 1, 16)) .* h1) + x
    h2 = swish(dw2(y1))
    s2 = sigmoid(4.0 * fc2b(swish(fc2a(8.0 * pool(h2)))))
    return project2(h2 .* reshape(s2, (2, 1, 1, 16)))
end
"""


MBV3_AX = """
@axiom function mbv3_block(x::Float32[1, 32, 30, 3])
    stem = Conv((3, 3), 3 => 16, stride=2, pad=1, activation=hardswish)
    expand = Conv((1, 1), 16 => 48, activation=hardswish)
    dw = Conv((5, 5), 48 => 48, pad=2, groups=48, activation=hardswish)
    fca = Dense(48 => 12)
    fcb = Dense(12 => 48)
    project = Conv((1, 1), 48 => 16)
    expand2 = Conv((1, 1), 16 => 32, activation=hardswish)
    dw2 = Conv((3, 3), 32 => 32, stride=2, pad=1, groups=32, activation=hardswish)
    project2 = Conv((1, 1), 32 => 8)
    pool = GlobalMeanPool()
    h0 = stem(4.0 * x)
    h = dw(expand(h0))
    s = hardsigmoid(4.0 * fcb(relu(fca(pool(h)))))
    y = project(h .* reshape(s, (1, 1, 1, 48))) + h0
    return project2(dw2(expand2(y)))
end
"""


class Mbv3Block(nn.Module):
    """A MobileNetV3 stem and two blocks: hardswish as the epilogue of a
    strided 3x3 conv, 1x1 expansions, a 5x5 depthwise conv (in place) and a
    strided 3x3 one after its expansion (the kernels' AXRT_ACT_HARDSWISH), a
    hardsigmoid-gated squeeze-excitation, a residual."""

    def __init__(self):
        super().__init__()
        self.stem = T.ConvNHWC(3, 16, 3, stride=2, pad=1, activation="hardswish")
        self.expand = T.ConvNHWC(16, 48, 1, activation="hardswish")
        self.dw = T.ConvNHWC(48, 48, 5, pad=2, groups=48, activation="hardswish")
        self.fca, self.fcb = nn.Linear(48, 12), nn.Linear(12, 48)
        self.project = T.ConvNHWC(48, 16, 1)
        self.expand2 = T.ConvNHWC(16, 32, 1, activation="hardswish")
        self.dw2 = T.ConvNHWC(32, 32, 3, stride=2, pad=1, groups=32, activation="hardswish")
        self.project2 = T.ConvNHWC(32, 8, 1)

    def forward(self, x):
        h0 = self.stem(4.0 * x)
        h = self.dw(self.expand(h0))
        s = F.hardsigmoid(4.0 * self.fcb(F.relu(self.fca(h.mean((1, 2))))))
        y = self.project(h * s.reshape(1, 1, 1, 48)) + h0
        return self.project2(self.dw2(self.expand2(y)))


class SeBlocks(nn.Module):
    """Two squeeze-and-excitation blocks on a batch of two (one scale per
    image and channel): the first projection (36 pixels, 16 outputs, a
    residual) runs with the scale folded into its weight, the second (48
    outputs) keeps the mul (cg_c_fold_input_scale)."""

    def __init__(self):
        super().__init__()
        for k in "12":
            setattr(self, "dw" + k, T.ConvNHWC(16, 16, 3, pad=1, groups=16, bias=False))
            setattr(self, "fc" + k + "a", nn.Linear(16, 4))
            setattr(self, "fc" + k + "b", nn.Linear(4, 16))
        self.project1 = T.ConvNHWC(16, 16, 1)
        self.project2 = T.ConvNHWC(16, 48, 1, bias=False)

    def excite(self, h, k):
        pooled = 8.0 * h.mean((1, 2))   # spread: the images' scales differ
        s = torch.sigmoid(4.0 * getattr(self, "fc" + k + "b")(F.silu(getattr(self, "fc" + k + "a")(pooled))))
        return h * s.reshape(h.shape[0], 1, 1, h.shape[3])

    def forward(self, x):
        h1 = F.silu(self.dw1(x))
        y1 = self.project1(self.excite(h1, "1")) + x
        return self.project2(self.excite(F.silu(self.dw2(y1)), "2"))


def compose_cases():
    return [
        Case("compose_blocks_chain_list_for", NET_AX,
             lambda: Net(4), {"x": ((1, 7, 9, 4), "normal")}, tol=DEEP),
        Case("se_blocks_scale_folded", SE_AX, SeBlocks, {"x": ((2, 6, 6, 16), "normal")}, tol=DEEP),
        Case("mbv3_block_hardswish_epilogues", MBV3_AX, Mbv3Block, {"x": ((1, 32, 30, 3), "normal")}, tol=DEEP),
        Case("compose_nested_blocks", NESTED_AX,
             _Encoder,
             {"x": ((2, 5, 6), "normal")}, tol=DEEP),
    ]


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(Stage(6, 2), Stage(6, 3))

    def forward(self, x):
        return self.encoder(x)




def torchvision_twin(name, **kw):
    """A torchvision model taking NHWC input: its own module (so its own
    state_dict names), its forward preceded by NHWC -> NCHW."""
    def make():
        import torchvision
        model = getattr(torchvision.models, name)(**kw)
        nchw = model.forward
        model.forward = lambda x: nchw(x.permute(0, 3, 1, 2))
        return model
    return make


TORCHVISION = {  # examples/NAME.ax -> (twin, inputs, tolerance)
    "resnet18": (torchvision_twin("resnet18"), {"x": ((1, 64, 64, 3), "normal")}, DEEP),
    "mobilenet_v2": (torchvision_twin("mobilenet_v2"), {"x": ((1, 64, 64, 3), "normal")}, DEEP),
    "efficientnet_b0": (torchvision_twin("efficientnet_b0"), {"x": ((1, 64, 64, 3), "normal")},
                        DEEP),
    "squeezenet1_1": (torchvision_twin("squeezenet1_1"), {"x": ((1, 64, 64, 3), "normal")}, DEEP),
    "shufflenet_v2_x1_0": (torchvision_twin("shufflenet_v2_x1_0"), {"x": ((1, 64, 64, 3), "normal")},
                           DEEP),
}


def torchvision_cases(root):
    try:
        import torchvision  # noqa: F401
    except ImportError:
        return []
    cases = []
    for name, (twin, inputs, tol) in TORCHVISION.items():
        with open(os.path.join(root, "examples", name + ".ax")) as f:
            cases.append(Case("torchvision_" + name, f.read(), twin, inputs, tol=tol))
    return cases


def all_cases(root):
    return compose_cases() + op_cases() + torchvision_cases(root)


# ---- operators of docs/language.md#more-operators -------------------------------------------

def _fn_case(name, expr, fn, shape, kind="normal", tol=1e-5):
    ax = f"@axiom function {name}(x::Float32[{', '.join(map(str, shape))}])\n" \
         f"    return {expr}\nend\n"
    return Case(name, ax, lambda: T.Twin(lambda m, x: fn(x)), {"x": (shape, kind)}, tol=tol)


def _nchw(fn):
    return lambda x: T.to_nhwc(fn(T.to_nchw(x)))


def op_cases():
    img = (2, 9, 11, 3)
    return [
        _fn_case("op_hardswish", "hardswish(4.0 * x)", lambda x: F.hardswish(4 * x), (3, 17)),
        _fn_case("op_hardsigmoid", "hardsigmoid(4.0 * x)", lambda x: F.hardsigmoid(4 * x), (3, 17)),
        _fn_case("op_mish", "mish(4.0 * x)", lambda x: F.mish(4 * x), (3, 17)),
        _fn_case("op_selu", "selu(x)", F.selu, (3, 17)),
        _fn_case("op_reciprocal", "reciprocal(x)", torch.reciprocal, (3, 17), "positive"),
        Case("op_dense_hardswish", "@axiom f(x::Float32[3, 17]) begin\n"
             "    Dense(17 => 5, activation=hardswish)\nend\n",
             lambda: T.Twin(lambda m, x: F.hardswish(m["0"](x)), {"0": nn.Linear(17, 5)}),
             {"x": ((3, 17), "normal")}),
        _fn_case("op_mean_dims_1_2", "mean(x; dims=(1, 2))",
                 lambda x: x.mean(dim=(1, 2), keepdim=True), img),
        _fn_case("op_sum_dims_0_last_nokeep", "sum(x; dims=(0, -1), keepdims=false)",
                 lambda x: x.sum(dim=(0, -1)), img),
        _fn_case("op_maximum_dims_nokeep", "maximum(x; dims=(1, 2), keepdims=false)",
                 lambda x: x.amax(dim=(1, 2)), img),
        _fn_case("op_minimum", "minimum(x; dims=2)", lambda x: x.amin(dim=2, keepdim=True), img),
        _fn_case("op_prod", "prod(x; dims=1)", lambda x: x.prod(dim=1, keepdim=True), (3, 5, 7),
                 "positive"),
        _fn_case("op_maxpool_ceil", "x |> MaxPool((3, 3), stride=2, ceil=true)",
                 _nchw(lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True)), (2, 10, 12, 3)),
        _fn_case("op_maxpool_ceil_pad", "x |> MaxPool((3, 2), stride=(2, 3), pad=1, ceil=true)",
                 _nchw(lambda x: F.max_pool2d(x, (3, 2), (2, 3), 1, ceil_mode=True)), img),
        _fn_case("op_meanpool_ceil", "x |> MeanPool((3, 3), stride=2, pad=1, ceil=true)",
                 _nchw(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)), (2, 10, 12, 3)),
        _fn_case("op_meanpool_exclude_pad",
                 "x |> MeanPool((3, 2), stride=(2, 1), pad=1, count_include_pad=false)",
                 _nchw(lambda x: F.avg_pool2d(x, (3, 2), (2, 1), 1, count_include_pad=False)), img),
        _fn_case("op_meanpool_ceil_exclude_pad",
                 "x |> MeanPool((3, 3), stride=2, pad=1, ceil=true, count_include_pad=false)",
                 _nchw(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
                 (2, 10, 12, 3)),
        _fn_case("op_adaptive_mean_1x1", "x |> AdaptiveMeanPool((1, 1))",
                 _nchw(lambda x: F.adaptive_avg_pool2d(x, 1)), img),
        _fn_case("op_slice", "x[:, 1:4, -3:, 0:6:4]", lambda x: x[:, 1:4, -3:, 0:6:4], (2, 5, 7, 6)),
        _fn_case("op_slice_index", "x[1, :, -2]", lambda x: x[1, :, -2], (2, 5, 7, 6)),
        _fn_case("op_slice_negative_stop", "x[:, -4:-1, 1::2]", lambda x: x[:, -4:-1, 1::2],
                 (3, 7, 9)),
        Case("op_chunk", "@axiom function f(x::Float32[2, 3, 7])\n"
             "    a, b, c = chunk(x, 3; dims=-1)\n    return a + b, c\nend\n",
             lambda: T.Twin(lambda m, x: (x.chunk(3, -1)[0] + x.chunk(3, -1)[1], x.chunk(3, -1)[2])),
             {"x": ((2, 3, 7), "normal")}, outputs=["out0", "c"]),
        Case("op_split", "@axiom function f(x::Float32[2, 6, 5])\n"
             "    p, q, r = split(x, (1, 3, 2); dims=1)\n    return q .* 2.0, r\nend\n",
             lambda: T.Twin(lambda m, x: (x.split((1, 3, 2), 1)[1] * 2, x.split((1, 3, 2), 1)[2])),
             {"x": ((2, 6, 5), "normal")}, outputs=["out0", "r"]),
        _fn_case("op_adaptive_mean_3x1", "x |> AdaptiveMeanPool((3, 1))",
                 _nchw(lambda x: F.adaptive_avg_pool2d(x, (3, 1))), img),
    ]
