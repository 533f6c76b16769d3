"""The cases of the PyTorch suite: an .ax model, its PyTorch twin and its
inputs.  Inputs are (shape, kind) with kind one of
  "normal"    standard normal            "positive"  uniform in [0.1, 3)
  "f64"       standard normal, Float64   ("int", n)  Int64 indices below n
  ("int", n, dtype)  indices below n of NumPy dtype "int8" or "int32"
Every size is small and odd so transposed or misaligned loops show up."""

import os
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

import twins as T
from twins import Twin

DEEP = 1e-4  # tolerance of deep models (the language gives no bound; see brief)


@dataclass
class Case:
    name: str
    ax: str
    twin: object                      # () -> torch module
    inputs: dict                      # name -> (shape, kind), signature order
    outputs: list = None              # output names (--output-dir); None: one output
    flags: list = field(default_factory=list)
    tol: float = 1e-5
    float64: bool = False             # the twin computes in Float64
    stderr_has: tuple = ()            # substrings the default run's stderr must hold
    stderr_lacks: tuple = ()
    expect_exit: int = 0              # non-zero: only the exit status is checked
    directions: tuple = ("A", "interp", "B")


def fn_model(name, signature, body):
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"@axiom function {name}({signature})\n{lines}\nend\n"


def chain_model(name, signature, body):
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"@axiom {name}({signature}) begin\n{lines}\nend\n"


def stateless(fn):
    return lambda: Twin(lambda m, *xs: fn(*xs))


X = {"x": ((2, 3, 7), "normal")}


def activation_cases():
    cases = []
    for act in T.ACTIVATIONS:
        cases.append(Case(
            f"dense_activation_{act}",
            chain_model("dense_act", "x::Float32[3, 13]",
                        f"Dense(13 => 7, activation={act})"),
            lambda act=act: Twin(lambda m, x: m["0"](x), {"0": T.DenseAct(13, 7, act)}),
            {"x": ((3, 13), "normal")}))
    cases.append(Case(
        "dense_no_bias",
        chain_model("dense_nb", "x::Float32[2, 5, 13]", "Dense(13 => 7, bias=false)"),
        lambda: Twin(lambda m, x: m["0"](x), {"0": nn.Linear(13, 7, bias=False)}),
        {"x": ((2, 5, 13), "normal")}))
    return cases


FUNCTIONS = {  # .ax expression -> (torch function, input kind)
    "relu(x)": (F.relu, "normal"),
    "relu6(3.0 * x)": (lambda x: F.relu6(3 * x), "normal"),
    "sigmoid(x)": (torch.sigmoid, "normal"),
    "tanh(x)": (torch.tanh, "normal"),
    "swish(x)": (F.silu, "normal"),
    "silu(x)": (F.silu, "normal"),
    "gelu(x)": (F.gelu, "normal"),
    "gelu_tanh(x)": (lambda x: F.gelu(x, approximate="tanh"), "normal"),
    "softplus(x)": (F.softplus, "normal"),
    "elu(x)": (F.elu, "normal"),
    "leaky_relu(x)": (F.leaky_relu, "normal"),
    "leaky_relu(x, alpha=0.2)": (lambda x: F.leaky_relu(x, 0.2), "normal"),
    "identity(x)": (lambda x: x, "normal"),
    "softmax(x)": (lambda x: torch.softmax(x, -1), "normal"),
    "softmax(x, dims=0)": (lambda x: torch.softmax(x, 0), "normal"),
    "softmax(x, dims=1)": (lambda x: torch.softmax(x, 1), "normal"),
    "softmax(x; dims=-2)": (lambda x: torch.softmax(x, -2), "normal"),
    "log_softmax(x)": (lambda x: torch.log_softmax(x, -1), "normal"),
    "log_softmax(x, dims=1)": (lambda x: torch.log_softmax(x, 1), "normal"),
    "exp(x)": (torch.exp, "normal"),
    "log(x)": (torch.log, "positive"),
    "sqrt(x)": (torch.sqrt, "positive"),
    "abs(x)": (torch.abs, "normal"),
    "neg(x)": (torch.neg, "normal"),
    "erf(x)": (torch.erf, "normal"),
    "x + 1.0": (lambda x: x + 1.0, "normal"),
    "2.0 * x": (lambda x: 2.0 * x, "normal"),
    "x * 2.0": (lambda x: x * 2.0, "normal"),
    "x / 8.0": (lambda x: x / 8.0, "normal"),
    "1.5 - x": (lambda x: 1.5 - x, "normal"),
    "reshape(x, (2, -1))": (lambda x: x.reshape(2, -1), "normal"),
    "reshape(x, (-1, 7, 1))": (lambda x: x.reshape(-1, 7, 1), "normal"),
    "transpose(x, (2, 0, 1))": (lambda x: x.permute(2, 0, 1), "normal"),
    "transpose(x, (0, 2, 1))": (lambda x: x.permute(0, 2, 1), "normal"),
    "sum(x, dims=1)": (lambda x: x.sum(1, keepdim=True), "normal"),
    "sum(x, dims=-1)": (lambda x: x.sum(-1, keepdim=True), "normal"),
    "mean(x, dims=0)": (lambda x: x.mean(0, keepdim=True), "normal"),
    "mean(x, dims=-2)": (lambda x: x.mean(-2, keepdim=True), "normal"),
    "maximum(x, dims=2)": (lambda x: x.amax(2, keepdim=True), "normal"),
    "maximum(x, dims=-3)": (lambda x: x.amax(-3, keepdim=True), "normal"),
    "exp(neg(abs(x))) .* x": (lambda x: torch.exp(-x.abs()) * x, "normal"),
}


def case_name(expr):
    """A case name from an expression: operators become words, a minus sign
    'm' (dims=-1 and dims=1 stay apart)."""
    for op, word in ((".*", "mul"), ("./", "div"), (" + ", "add"), (" - ", "sub"),
                     (" * ", "mul"), (" / ", "div")):
        expr = expr.replace(op, f"_{word}_")
    keep = "".join(c if c.isalnum() else "m" if c == "-" else "_" for c in expr)
    return "fn_" + "_".join(part for part in keep.split("_") if part)


def function_cases():
    return [Case(case_name(expr), fn_model("fn", "x::Float32[2, 3, 7]", f"return {expr}"),
                 stateless(fn), {"x": ((2, 3, 7), kind)})
            for expr, (fn, kind) in FUNCTIONS.items()]


BINARY = [  # (expression, torch function, shape of a, shape of b, kind of b)
    ("a + b", torch.add, (3, 1), (1, 4), "normal"),
    ("a - b", torch.sub, (3, 1), (1, 4), "normal"),
    ("a .* b", torch.mul, (3, 1), (1, 4), "normal"),
    ("a ./ b", torch.div, (3, 1), (1, 4), "positive"),
    ("a + b", torch.add, (2, 3, 4), (4,), "normal"),
    ("a .* b", torch.mul, (2, 1, 5), (3, 1), "normal"),
    ("a - b", torch.sub, (2, 3, 5), (2, 3, 5), "normal"),
    ("a ./ b", torch.div, (5,), (2, 3, 5), "positive"),
    ("matmul(a, b)", torch.matmul, (3, 5), (5, 6), "normal"),
    ("matmul(a, b)", torch.matmul, (2, 1, 3, 5), (4, 5, 6), "normal"),
    ("matmul(a, b)", torch.matmul, (2, 3, 5), (5, 7), "normal"),
    ("concat(a, b, dims=1)", lambda a, b: torch.cat([a, b], 1), (2, 3, 5), (2, 4, 5), "normal"),
    ("concat(a, b, dims=-1)", lambda a, b: torch.cat([a, b], -1), (2, 3, 5), (2, 3, 2), "normal"),
    ("concat(a, b, a, dims=0)", lambda a, b: torch.cat([a, b, a], 0), (2, 3), (1, 3), "normal"),
]


FUSED = [  # (name, signature, expression, torch function, inputs): -O2 fuses each into one loop
    ("fused_bcast_rank3", "a::Float32[3, 5, 7], b::Float32[5, 1], c::Float32[7]",
     "tanh(a .* 2.0) + b .* c - 1.0",
     lambda a, b, c: torch.tanh(a * 2.0) + b * c - 1.0,
     {"a": ((3, 5, 7), "normal"), "b": ((5, 1), "normal"), "c": ((7,), "normal")}),
    ("fused_bcast_middle", "a::Float32[2, 1, 3, 5], b::Float32[2, 4, 1, 5]",
     "leaky_relu(a - b, alpha=0.2) .* sigmoid(b) ./ (abs(a) + 1.5)",
     lambda a, b: F.leaky_relu(a - b, 0.2) * torch.sigmoid(b) / (a.abs() + 1.5),
     {"a": ((2, 1, 3, 5), "normal"), "b": ((2, 4, 1, 5), "normal")}),
    ("fused_every_unary", "x::Float32[3, 11]",
     "gelu_tanh(softplus(elu(swish(gelu(relu6(erf(x) .* 4.0)))))) + sqrt(exp(neg(x))) + log(x .* x + 1.0)",
     lambda x: (F.gelu(F.softplus(F.elu(F.silu(F.gelu(F.relu6(torch.erf(x) * 4.0))))), approximate="tanh")
                + torch.sqrt(torch.exp(-x)) + torch.log(x * x + 1.0)),
     {"x": ((3, 11), "normal")}),
    ("fused_shared_operand", "x::Float32[4, 9], s::Float32[1, 1]",
     "relu(x) .* x ./ (s .* s + 1.0)",
     lambda x, s: F.relu(x) * x / (s * s + 1.0), {"x": ((4, 9), "normal"), "s": ((1, 1), "normal")}),
]


VIEWS = [  # (name, signature, body, torch function, inputs): transposes and reshapes that
           # -O2 reads through inside fused loops, and matmuls by a transpose -> dense
    ("view_transpose_chain", "x::Float32[3, 5], b::Float32[5, 3]",
     "return tanh(transpose(x, (1, 0)) .* b + 1.0)",
     lambda x, b: torch.tanh(x.T * b + 1.0), {"x": ((3, 5), "normal"), "b": ((5, 3), "normal")}),
    ("view_transpose_rank3_bcast", "x::Float32[2, 3, 5], c::Float32[5, 1, 3]",
     "return sigmoid(transpose(x, (2, 0, 1)) + c) .* 2.0",
     lambda x, c: torch.sigmoid(x.permute(2, 0, 1) + c) * 2.0,
     {"x": ((2, 3, 5), "normal"), "c": ((5, 1, 3), "normal")}),
    ("view_reshape_chain", "x::Float32[3, 10]",
     "return exp(reshape(sqrt(abs(x) + 1.0), (5, 6)) - 2.0)",
     lambda x: torch.exp(torch.sqrt(x.abs() + 1.0).reshape(5, 6) - 2.0), {"x": ((3, 10), "normal")}),
    ("view_reshape_split_transposed", "x::Float32[5, 6]",
     "return reshape(transpose(x .* 2.0, (1, 0)), (2, 3, 5)) + 1.0",
     lambda x: (x * 2.0).T.reshape(2, 3, 5) + 1.0, {"x": ((5, 6), "normal")}),
    ("view_reshape_bcast_opaque", "x::Float32[3, 5], b::Float32[5]",
     "return reshape(exp(x + b), (15,)) - 1.0",
     lambda x, b: torch.exp(x + b).reshape(15) - 1.0, {"x": ((3, 5), "normal"), "b": ((5,), "normal")}),
    ("view_transposed_self_read", "x::Float32[7, 7]",
     "a = relu(x) .* 3.0\nreturn softmax(a + transpose(a, (1, 0)) .* 0.5)",
     lambda x: torch.softmax(F.relu(x) * 3.0 + (F.relu(x) * 3.0).T * 0.5, -1), {"x": ((7, 7), "normal")}),
    ("matmul_transposed_2d", "q::Float32[2, 3, 5], k::Float32[7, 5], v::Float32[5]",
     "return softmax(matmul(q, transpose(k, (1, 0))) ./ 2.0) + matmul(v, transpose(k, (1, 0)))",
     lambda q, k, v: torch.softmax(torch.matmul(q, k.T) / 2.0, -1) + torch.matmul(v, k.T),
     {"q": ((2, 3, 5), "normal"), "k": ((7, 5), "normal"), "v": ((5,), "normal")}),
    ("matmul_transposed_rank3", "q::Float32[2, 3, 5], k::Float32[2, 7, 5]",
     "return matmul(q, transpose(k, (0, 2, 1)))",
     lambda q, k: torch.matmul(q, k.transpose(1, 2)), {"q": ((2, 3, 5), "normal"), "k": ((2, 7, 5), "normal")}),
]


def fused_cases():
    return ([Case(name, fn_model("fused", signature, f"return {expr}"), stateless(fn), inputs)
             for name, signature, expr, fn, inputs in FUSED]
            + [Case(name, fn_model("views", signature, body), stateless(fn), inputs)
               for name, signature, body, fn, inputs in VIEWS])


def shape_text(shape):
    return ", ".join(map(str, shape))


def binary_cases():
    cases = []
    for expr, fn, sa, sb, kind in BINARY:
        name = f"{case_name(expr)}_{'x'.join(map(str, sa))}_{'x'.join(map(str, sb))}"
        cases.append(Case(
            name, fn_model("binop", f"a::Float32[{shape_text(sa)}], b::Float32[{shape_text(sb)}]",
                           f"return {expr}"),
            stateless(fn), {"a": (sa, "normal"), "b": (sb, kind)}))
    return cases


def layer(name, signature, body, layers, forward, inputs, **kw):
    """A chain-form case whose twin is Twin(forward, layers)."""
    return Case(name, chain_model(name, signature, body),
                lambda: Twin(forward, layers()), inputs, **kw)


def only(key):
    return lambda m, x: m[key](x)


def layer_cases():
    img = {"x": ((1, 9, 11, 3), "normal")}
    cases = [
        layer("layernorm", "x::Float32[2, 5, 13]", "LayerNorm(13)",
              lambda: {"0": nn.LayerNorm(13)}, only("0"), {"x": ((2, 5, 13), "normal")}),
        layer("layernorm_eps", "x::Float32[3, 33]", "LayerNorm(33, eps=1e-3)",
              lambda: {"0": nn.LayerNorm(33, eps=1e-3)}, only("0"), {"x": ((3, 33), "normal")}),
        layer("dropout", "x::Float32[3, 13]", "Dense(13 => 7)\nDropout(0.5)\nDense(7 => 5)",
              lambda: {"0": nn.Linear(13, 7), "2": nn.Linear(7, 5)},
              lambda m, x: m["2"](m["0"](x)), {"x": ((3, 13), "normal")}),
        layer("flatten", "x::Float32[2, 3, 4, 5]", "Flatten()\nDense(60 => 7)",
              lambda: {"1": nn.Linear(60, 7)}, lambda m, x: m["1"](T.flatten_nhwc(x)),
              {"x": ((2, 3, 4, 5), "normal")}),
        layer("embedding", "idx::Int64[2, 7]", "Embedding(33 => 13)",
              lambda: {"0": nn.Embedding(33, 13)}, only("0"), {"idx": ((2, 7), ("int", 33))}),
        layer("embedding_int32", "idx::Int32[2, 7]", "Embedding(33 => 13)",
              lambda: {"0": nn.Embedding(33, 13)}, only("0"), {"idx": ((2, 7), ("int", 33, "int32"))}),
        layer("embedding_int8", "idx::Int8[3, 5]", "Embedding(120 => 6)",
              lambda: {"0": nn.Embedding(120, 6)}, only("0"), {"idx": ((3, 5), ("int", 120, "int8"))}),
        layer("chain_bare_functions", "x::Float32[3, 4]", "Dense(4 => 8)\nrelu\nDense(8 => 2)\nsoftmax",
              lambda: {"0": nn.Linear(4, 8), "2": nn.Linear(8, 2)},
              lambda m, x: torch.softmax(m["2"](F.relu(m["0"](x))), -1), {"x": ((3, 4), "normal")}),
        layer("chain_labelled", "x::Float32[3, 4]", "fc1 = Dense(4 => 8, activation=tanh)\nfc2 = Dense(8 => 2)",
              lambda: {"fc1": nn.Linear(4, 8), "fc2": nn.Linear(8, 2)},
              lambda m, x: m["fc2"](torch.tanh(m["fc1"](x))), {"x": ((3, 4), "normal")}),
    ]
    return cases + conv_cases(img) + dwconv_inplace_cases() + pool_cases() + norm_cases()


CONVS = [  # (name, .ax arguments after the kernel, ConvNHWC kwargs, kernel, cin, cout)
    ("conv_basic", "3 => 5", {}, (3, 3), 3, 5),
    ("conv_stride2", "3 => 5, stride=2", {"stride": 2}, (3, 3), 3, 5),
    ("conv_stride_tuple", "3 => 5, stride=(1, 2)", {"stride": (1, 2)}, (3, 3), 3, 5),
    ("conv_pad1", "3 => 5, pad=1", {"pad": 1}, (3, 3), 3, 5),
    ("conv_pad_tuple", "3 => 5, pad=(2, 0)", {"pad": (2, 0)}, (3, 3), 3, 5),
    ("conv_pad_same", "3 => 5, pad=same", {"pad": "same"}, (3, 3), 3, 5),
    ("conv_pad_same_even_kernel", "3 => 5, pad=same", {"pad": "same"}, (4, 4), 3, 5),
    ("conv_pad_same_stride2", "3 => 5, stride=2, pad=same", {"stride": 2, "pad": "same"}, (3, 3), 3, 5),
    ("conv_rect_kernel", "3 => 4, pad=(1, 2)", {"pad": (1, 2)}, (3, 5), 3, 4),
    ("conv_dilation2", "3 => 5, dilation=2, pad=2", {"dilation": 2, "pad": 2}, (3, 3), 3, 5),
    ("conv_groups3", "6 => 9, groups=3, pad=1", {"groups": 3, "pad": 1}, (3, 3), 6, 9),
    ("conv_depthwise", "6 => 6, groups=6, pad=1", {"groups": 6, "pad": 1}, (3, 3), 6, 6),
    ("conv_depthwise_x2", "4 => 8, groups=4", {"groups": 4}, (3, 3), 4, 8),
    ("conv_1x1", "3 => 7", {}, (1, 1), 3, 7),
    ("conv_7x7", "3 => 4, stride=2, pad=3", {"stride": 2, "pad": 3}, (7, 7), 3, 4),
    ("conv_relu_nobias", "3 => 5, activation=relu, bias=false",
     {"activation": "relu", "bias": False}, (3, 3), 3, 5),
]


DWCONV_INPLACE = [  # (name, depthwise .ax arguments after the kernel, ConvNHWC kwargs, kernel)
    ("dwconv_inplace_3x3_relu6", "pad=1, activation=relu6", {"pad": 1, "activation": "relu6"}, (3, 3)),
    ("dwconv_inplace_5x3_tanh", "pad=(2, 1), activation=tanh", {"pad": (2, 1), "activation": "tanh"}, (5, 3)),
    ("dwconv_inplace_dilation2", "dilation=2, pad=2", {"dilation": 2, "pad": 2}, (3, 3)),
    ("dwconv_inplace_pad_same_even", "pad=same, bias=false", {"pad": "same", "bias": False}, (4, 2)),
    ("dwconv_stride2_not_inplace", "stride=2, pad=1", {"stride": 2, "pad": 1}, (3, 3)),
]


def dwconv_inplace_cases():
    """A depthwise conv between two 1x1 convs: its input and result are arena
    intermediates, so -O1 and up compute it over its own input with a ring of rows
    (runtime/axrt_dwconv.c); the last case is Float64 (unpacked weights)."""
    cases = []
    for name, args, kw, kernel in DWCONV_INPLACE:
        body = f"Conv((1, 1), 3 => 7, activation=relu)\nConv(({kernel[0]}, {kernel[1]}), 7 => 7, groups=7, {args})\nConv((1, 1), 7 => 2)"
        layers = lambda kw=kw, kernel=kernel: {"0": T.ConvNHWC(3, 7, (1, 1), activation="relu"),
                                               "1": T.ConvNHWC(7, 7, kernel, groups=7, **kw),
                                               "2": T.ConvNHWC(7, 2, (1, 1))}
        cases.append(layer(name, "x::Float32[2, 13, 11, 3]", body, layers,
                           lambda m, x: m["2"](m["1"](m["0"](x))), {"x": ((2, 13, 11, 3), "normal")}))
    name, args, kw, kernel = DWCONV_INPLACE[0]
    body = f"Conv((1, 1), 3 => 7, activation=relu)\nConv(({kernel[0]}, {kernel[1]}), 7 => 7, groups=7, {args})\nConv((1, 1), 7 => 2)"
    cases.append(layer("dwconv_inplace_f64", "x::Float64[2, 9, 11, 3]", body,
                       lambda: {"0": T.ConvNHWC(3, 7, (1, 1), activation="relu"),
                                "1": T.ConvNHWC(7, 7, kernel, groups=7, **kw),
                                "2": T.ConvNHWC(7, 2, (1, 1))},
                       lambda m, x: m["2"](m["1"](m["0"](x))), {"x": ((2, 9, 11, 3), "f64")},
                       flags=["--eltype-mismatch=promote"], float64=True, tol=1e-12))
    return cases


def conv_cases(img):
    cases = []
    for name, args, kw, kernel, cin, cout in CONVS:
        shape = (2, 9, 11, cin)
        cases.append(layer(
            name, f"x::Float32[{shape_text(shape)}]", f"Conv(({kernel[0]}, {kernel[1]}), {args})",
            lambda cin=cin, cout=cout, kernel=kernel, kw=kw: {"0": T.ConvNHWC(cin, cout, kernel, **kw)},
            only("0"), {"x": (shape, "normal")}))
    return cases


POOLS = [  # (name, .ax layer, torch function, input shape)
    ("maxpool_2x2_odd", "MaxPool((2, 2))", lambda x: T.max_pool(x, 2), (2, 7, 9, 3)),
    ("maxpool_3x3_stride2", "MaxPool((3, 3), stride=2)", lambda x: T.max_pool(x, 3, 2), (1, 9, 8, 3)),
    ("maxpool_pad1", "MaxPool((3, 3), stride=2, pad=1)", lambda x: T.max_pool(x, 3, 2, 1), (1, 8, 7, 3)),
    ("maxpool_rect", "MaxPool((2, 3))", lambda x: T.max_pool(x, (2, 3)), (1, 7, 11, 2)),
    ("meanpool_2x2_odd", "MeanPool((2, 2))", lambda x: T.mean_pool(x, 2), (2, 7, 9, 3)),
    ("meanpool_pad1", "MeanPool((3, 3), stride=2, pad=1)", lambda x: T.mean_pool(x, 3, 2, 1), (1, 8, 7, 3)),
    ("meanpool_stride1", "MeanPool((3, 3), stride=1)", lambda x: T.mean_pool(x, 3, 1), (1, 7, 7, 2)),
    ("globalmeanpool", "GlobalMeanPool()", lambda x: x.mean((1, 2)), (2, 5, 7, 6)),
]


def pool_cases():
    return [layer(name, f"x::Float32[{shape_text(shape)}]", body, lambda: {}, (lambda m, x, fn=fn: fn(x)),
                  {"x": (shape, "normal")}) for name, body, fn, shape in POOLS]


def norm_cases():
    return [
        layer("batchnorm_nhwc", "x::Float32[2, 5, 7, 6]", "BatchNorm(6)",
              lambda: {"0": T.BatchNormNHWC(6)}, only("0"), {"x": ((2, 5, 7, 6), "normal")}),
        layer("batchnorm_eps_relu", "x::Float32[1, 3, 5, 13]", "BatchNorm(13, eps=1e-3, activation=relu)",
              lambda: {"0": T.BatchNormNHWC(13, eps=1e-3, activation="relu")}, only("0"),
              {"x": ((1, 3, 5, 13), "normal")}),
        layer("batchnorm_2d_input", "x::Float32[3, 7]", "BatchNorm(7)",
              lambda: {"0": T.BatchNormLastDim(7)}, only("0"), {"x": ((3, 7), "normal")}),
        layer("conv_bn_relu", "x::Float32[1, 7, 7, 3]",
              "Conv((3, 3), 3 => 8, pad=1, bias=false)\nBatchNorm(8)\nrelu",
              lambda: {"0": T.ConvNHWC(3, 8, 3, pad=1, bias=False), "1": T.BatchNormNHWC(8)},
              lambda m, x: F.relu(m["1"](m["0"](x))), {"x": ((1, 7, 7, 3), "normal")}),
        layer("groupnorm_nhwc", "x::Float32[2, 5, 7, 12]", "GroupNorm(4, 12)",
              lambda: {"0": T.GroupNormNHWC(4, 12)}, only("0"), {"x": ((2, 5, 7, 12), "normal")}),
        layer("groupnorm_1d_eps", "x::Float32[3, 9, 6]", "GroupNorm(6, 6, eps=1e-3)",
              lambda: {"0": T.GroupNormNHWC(6, 6, eps=1e-3)}, only("0"), {"x": ((3, 9, 6), "normal")}),
        layer("conv1d_stride_pad", "x::Float32[2, 13, 5]", "Conv((3,), 5 => 7, stride=2, pad=1)",
              lambda: {"0": T.Conv1dNLC(5, 7, 3, stride=2, padding=1)}, only("0"),
              {"x": ((2, 13, 5), "normal")}),
        layer("conv1d_groups_dilation_relu", "x::Float32[1, 17, 6]",
              "Conv((3,), 6 => 4, groups=2, dilation=2, activation=relu)",
              lambda: {"0": T.Conv1dNLC(6, 4, 3, groups=2, dilation=2, activation="relu")}, only("0"),
              {"x": ((1, 17, 6), "normal")}),
        layer("instancenorm_affine", "x::Float32[2, 11, 6]", "InstanceNorm(6, affine=true, eps=1e-3)",
              lambda: {"0": T.InstanceNormNLC(6, affine=True, eps=1e-3)}, only("0"),
              {"x": ((2, 11, 6), "normal")}),
        layer("convtranspose_stride_outpad", "x::Float32[2, 5, 7, 3]",
              "ConvTranspose((3, 3), 3 => 5, stride=2, pad=1, output_padding=1)",
              lambda: {"0": T.ConvTransposeNHWC(3, 5, 3, stride=2, padding=1, output_padding=1)},
              only("0"), {"x": ((2, 5, 7, 3), "normal")}),
        layer("convtranspose_groups", "x::Float32[1, 4, 6, 4]",
              "ConvTranspose((2, 3), 4 => 6, stride=(2, 1), pad=(0, 1), groups=2)",
              lambda: {"0": T.ConvTransposeNHWC(4, 6, (2, 3), stride=(2, 1), padding=(0, 1), groups=2)},
              only("0"), {"x": ((1, 4, 6, 4), "normal")}),
        layer("rmsnorm", "x::Float32[2, 5, 13]", "RMSNorm(13)",
              lambda: {"0": T.RMSNorm(13)}, only("0"), {"x": ((2, 5, 13), "normal")}),
        layer("rmsnorm_eps", "x::Float32[3, 33]", "RMSNorm(33, eps=1e-5)",
              lambda: {"0": T.RMSNorm(33, eps=1e-5)}, only("0"), {"x": ((3, 33), "normal")}),
    ]


def rnn_cases():
    """GRU/LSTM against nn.GRU/nn.LSTM (batch_first, PyTorch's names and gate
    order): deep, bidirectional, without bias, sequence-first, with initial
    states, and the last step's h through slicing."""
    def seq(m, x):
        return m["0"](x)[0]
    cases = []
    for kind in ("GRU", "LSTM"):
        mod, low = getattr(nn, kind), kind.lower()
        cases += [
            layer(f"{low}_basic", "x::Float32[2, 7, 3]", f"{kind}(3 => 5)",
                  lambda mod=mod: {"0": mod(3, 5, batch_first=True)}, seq, {"x": ((2, 7, 3), "normal")}),
            layer(f"{low}_deep_bidirectional", "x::Float32[3, 5, 4]",
                  f"{kind}(4 => 6, num_layers=3, bidirectional=true)",
                  lambda mod=mod: {"0": mod(4, 6, num_layers=3, bidirectional=True, batch_first=True)}, seq,
                  {"x": ((3, 5, 4), "normal")}),
            layer(f"{low}_nobias_seq_first", "x::Float32[6, 2, 3]",
                  f"{kind}(3 => 4, bias=false, batch_first=false)",
                  lambda mod=mod: {"0": mod(3, 4, bias=False)}, seq, {"x": ((6, 2, 3), "normal")}),
        ]
    cases += [
        Case("gru_initial_state_last_step",
             fn_model("gru_h0", "x::Float32[2, 9, 3], h0::Float32[2, 2, 5]",
                      "gru = GRU(3 => 5, num_layers=2)\nfc = Dense(5 => 2)\ny = gru(x, h0)\n"
                      "return fc(y[:, -1, :])"),
             lambda: Twin(lambda m, x, h0: m["fc"](m["gru"](x, h0)[0][:, -1, :]),
                          {"gru": nn.GRU(3, 5, num_layers=2, batch_first=True), "fc": nn.Linear(5, 2)}),
             {"x": ((2, 9, 3), "normal"), "h0": ((2, 2, 5), "normal")}),
        Case("lstm_initial_state_bidirectional",
             fn_model("lstm_hc", "x::Float32[3, 4, 2], h0::Float32[2, 3, 5], c0::Float32[2, 3, 5]",
                      "lstm = LSTM(2 => 5, bidirectional=true)\nreturn lstm(x, h0, c0)"),
             lambda: Twin(lambda m, x, h0, c0: m["lstm"](x, (h0, c0))[0],
                          {"lstm": nn.LSTM(2, 5, bidirectional=True, batch_first=True)}),
             {"x": ((3, 4, 2), "normal"), "h0": ((2, 3, 5), "normal"), "c0": ((2, 3, 5), "normal")}),
        Case("gru_final_state_bidirectional",
             fn_model("gru_hn", "x::Float32[2, 6, 3]",
                      "gru = GRU(3 => 4, num_layers=2, bidirectional=true)\ny, h = gru(x)\nreturn y, h"),
             lambda: Twin(lambda m, x: m["gru"](x),
                          {"gru": nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)}),
             {"x": ((2, 6, 3), "normal")}, outputs=["y", "h"]),
        Case("lstm_final_states_seq_first",
             fn_model("lstm_hc_n", "x::Float32[5, 2, 3]",
                      "lstm = LSTM(3 => 4, num_layers=2, bidirectional=true, batch_first=false)\n"
                      "y, h, c = lstm(x)\nreturn y, h, c"),
             lambda: Twin(lambda m, x: (lambda y, hc: (y, hc[0], hc[1]))(*m["lstm"](x)),
                          {"lstm": nn.LSTM(3, 4, num_layers=2, bidirectional=True)}),
             {"x": ((5, 2, 3), "normal")}, outputs=["y", "h", "c"]),
    ]
    return cases


def attention_cases():
    d = 16
    seq = {"x": ((2, 7, d), "normal")}
    return [
        Case("mha_self", fn_model("mha_self", f"x::Float32[2, 7, {d}]",
                                  f"attn = MultiHeadAttention({d} => 4)\nreturn attn(x)"),
             lambda: Twin(lambda m, x: T.attend(m["attn"], x), {"attn": T.mha(d, 4)}), seq, tol=DEEP),
        Case("mha_one_head", fn_model("mha_one", f"x::Float32[1, 5, {d}]",
                                      f"attn = MultiHeadAttention({d} => 1)\nreturn attn(x)"),
             lambda: Twin(lambda m, x: T.attend(m["attn"], x), {"attn": T.mha(d, 1)}),
             {"x": ((1, 5, d), "normal")}, tol=DEEP),
        Case("mha_cross", fn_model("mha_cross", f"q::Float32[1, 5, {d}], k::Float32[1, 9, {d}], "
                                   f"v::Float32[1, 9, {d}]",
                                   f"attn = MultiHeadAttention({d} => 2)\nreturn attn(q, k, v)"),
             lambda: Twin(lambda m, q, k, v: T.attend(m["attn"], q, k, v), {"attn": T.mha(d, 2)}),
             {"q": ((1, 5, d), "normal"), "k": ((1, 9, d), "normal"), "v": ((1, 9, d), "normal")},
             tol=DEEP),
        Case("mha_causal", fn_model("mha_causal", f"x::Float32[2, 7, {d}]",
                                    f"attn = MultiHeadAttention({d} => 4, causal=true)\nreturn attn(x)"),
             lambda: Twin(lambda m, x: T.attend(m["attn"], x, mask=T.causal_mask(7)),
                          {"attn": T.mha(d, 4)}), seq, tol=DEEP),
        Case("mha_no_bias", fn_model("mha_nb", f"x::Float32[2, 7, {d}]",
                                     f"attn = MultiHeadAttention({d} => 4, bias=false)\nreturn attn(x)"),
             lambda: Twin(lambda m, x: T.attend(m["attn"], x), {"attn": T.mha(d, 4, bias=False)}),
             seq, tol=DEEP),
    ] + long_attention_cases()


def attend_masked(layer, q, k, v, mask):
    """MultiheadAttention with a key padding mask (0 = padding, as axc's)."""
    with torch.enable_grad():
        return layer(q, k, v, key_padding_mask=mask == 0, need_weights=False)[0].detach()


def long_attention_cases():
    """Sequences past one block of keys (runtime axrt_flash.inc: 128) and of
    query rows (24), lengths no multiple of either: the online softmax across
    key blocks, the causal cut, a key mask hiding whole blocks."""
    d = 32
    long_seq = {"x": ((1, 300, d), "normal")}
    return [
        Case("mha_long_self", fn_model("mha_long", f"x::Float32[1, 300, {d}]",
                                       f"attn = MultiHeadAttention({d} => 4)\nreturn attn(x)"),
             lambda: Twin(lambda m, x: T.attend(m["attn"], x), {"attn": T.mha(d, 4)}), long_seq, tol=DEEP),
        Case("mha_long_causal", fn_model("mha_long_causal", f"x::Float32[1, 300, {d}]",
                                         f"attn = MultiHeadAttention({d} => 2, causal=true)\nreturn attn(x)"),
             lambda: Twin(lambda m, x: T.attend(m["attn"], x, mask=T.causal_mask(300)),
                          {"attn": T.mha(d, 2)}), long_seq, tol=DEEP),
        Case("mha_long_cross_masked",
             fn_model("mha_long_masked", f"q::Float32[2, 50, {d}], k::Float32[2, 333, {d}], "
                      f"v::Float32[2, 333, {d}], mask::Float32[2, 333]",
                      f"attn = MultiHeadAttention({d} => 4)\nreturn attn(q, k, v, mask)"),
             lambda: Twin(lambda m, q, k, v, mask: attend_masked(m["attn"], q, k, v, mask), {"attn": T.mha(d, 4)}),
             {"q": ((2, 50, d), "normal"), "k": ((2, 333, d), "normal"), "v": ((2, 333, d), "normal"),
              "mask": ((2, 333), "keymask")}, tol=DEEP),
    ]


def chunk_cases():
    """chunk (docs/language.md#more-operators): one producer, several results (ir.h)."""
    return [
        Case("chunk_uneven_parts", fn_model("ch", "x::Float32[2, 7, 3]",
                                            "a, b, c = chunk(x, 3; dims=1)\n"
                                            "d, e = chunk(relu(x), 2; dims=-1)\n"
                                            "return a, relu(b) + 1.0, c, d .* 2.0, e"),
             stateless(lambda x: (torch.chunk(x, 3, 1)[0], F.relu(torch.chunk(x, 3, 1)[1]) + 1.0,
                                  torch.chunk(x, 3, 1)[2], torch.chunk(F.relu(x), 2, -1)[0] * 2.0,
                                  torch.chunk(F.relu(x), 2, -1)[1])),
             {"x": ((2, 7, 3), "normal")}, outputs=["a", "out1", "c", "out3", "e"]),
        Case("chunk_fewer_parts", fn_model("ch3", "x::Float32[5, 6]",
                                           "p, q, r = chunk(x .* 3.0, 4; dims=1)\n"
                                           "return concat(r, p; dims=1) .* concat(q, q; dims=1)"),
             stateless(lambda x: torch.cat([torch.chunk(x * 3.0, 4, 1)[2],
                                            torch.chunk(x * 3.0, 4, 1)[0]], 1)
                       * torch.cat([torch.chunk(x * 3.0, 4, 1)[1]] * 2, 1)),
             {"x": ((5, 6), "normal")}),
        Case("chunk_rows_into_layers", fn_model("ch2", "x::Float32[6, 5]",
                                                "fc = Dense(5 => 3)\ntop, bottom = chunk(x, 2; dims=0)\n"
                                                "return fc(top), softmax(bottom; dims=0)"),
             lambda: Twin(lambda m, x: (m["fc"](torch.chunk(x, 2, 0)[0]),
                                        torch.softmax(torch.chunk(x, 2, 0)[1], 0)),
                          {"fc": nn.Linear(5, 3)}),
             {"x": ((6, 5), "normal")}, outputs=["out0", "out1"]),
    ]


def program_cases():
    """Whole-program features: several inputs and outputs, the function form,
    shared and inline layers, const and -D, and the Float64-input trap."""
    const_ax = "const H = 8\n" + chain_model("with_const", "x::Float32[2, 5]",
                                             "Dense(5 => H, activation=tanh)\nDense(H => 3)")

    def const_twin(h):
        return lambda: Twin(lambda m, x: m["1"](torch.tanh(m["0"](x))),
                            {"0": nn.Linear(5, h), "1": nn.Linear(h, 3)})

    f64_ax = chain_model("f64_input", "pixels::Float64[2, 5]", "Dense(5 => 3, activation=sigmoid)")

    def f64_twin():
        return Twin(lambda m, x: torch.sigmoid(m["0"](x)), {"0": nn.Linear(5, 3)})

    f64_in = {"pixels": ((2, 5), "f64")}
    two = {"a": ((2, 7), "normal"), "b": ((2, 7), "normal")}
    return [
        Case("multi_io", fn_model("multi_io", "a::Float32[2, 7], b::Float32[2, 7]",
                                  "fc = Dense(7 => 5)\ns = a .* b\nreturn fc(s), s"),
             lambda: Twin(lambda m, a, b: (m["fc"](a * b), a * b), {"fc": nn.Linear(7, 5)}),
             two, outputs=["out0", "s"]),
        Case("multi_out_names", fn_model("heads", "x::Float32[3, 7]",
                                         "head = Dense(7 => 2)\ng = relu(x)\nq = x + 1.0\n"
                                         "return head(g), q, g"),
             lambda: Twin(lambda m, x: (m["head"](F.relu(x)), x + 1.0, F.relu(x)),
                          {"head": nn.Linear(7, 2)}),
             {"x": ((3, 7), "normal")}, outputs=["out0", "q", "g"]),
        *chunk_cases(),
        Case("function_shared_layer", fn_model("shared", "x::Float32[3, 7]",
                                               "fc = Dense(7 => 7)\nh = x |> fc |> relu\n"
                                               "h = fc(h)\nreturn h"),
             lambda: Twin(lambda m, x: m["fc"](F.relu(m["fc"](x))), {"fc": nn.Linear(7, 7)}),
             {"x": ((3, 7), "normal")}, outputs=["h"]),
        Case("function_inline_layers", fn_model("inline", "x::Float32[3, 7]",
                                                "return x |> Dense(7 => 5) |> relu |> Dense(5 => 2)"),
             lambda: Twin(lambda m, x: m["1"](F.relu(m["0"](x))),
                          {"0": nn.Linear(7, 5), "1": nn.Linear(5, 2)}),
             {"x": ((3, 7), "normal")}),
        Case("const", const_ax, const_twin(8), {"x": ((2, 5), "normal")}),
        Case("const_override_D", const_ax, const_twin(12), {"x": ((2, 5), "normal")},
             flags=["-D", "H=12"]),
        Case("float64_input_warns", f64_ax, f64_twin, f64_in, stderr_has=("warning", "pixels")),
        Case("float64_input_convert", f64_ax, f64_twin, f64_in,
             flags=["--eltype-mismatch=convert"], stderr_lacks=("warning",)),
        Case("float64_input_promote", f64_ax, f64_twin, f64_in, flags=["--eltype-mismatch=promote"],
             float64=True, tol=1e-12, stderr_lacks=("warning",)),
        Case("float64_input_error", f64_ax, f64_twin, f64_in, flags=["--eltype-mismatch=error"],
             expect_exit=1, directions=("A",)),
    ]


def _resnet_twin():
    return Twin(lambda m, x: F.relu(m["bn2"](m["conv2"](F.relu(m["bn1"](m["conv1"](x))))) + x),
                {"conv1": T.ConvNHWC(64, 64, 3, pad=1, bias=False), "bn1": T.BatchNormNHWC(64),
                 "conv2": T.ConvNHWC(64, 64, 3, pad=1, bias=False), "bn2": T.BatchNormNHWC(64)})


def _mlp_twin():
    return Twin(lambda m, x: torch.softmax(m["1"](F.relu(m["0"](x))), -1),
                {"0": nn.Linear(784, 256), "1": nn.Linear(256, 10)})


def _lenet_twin():
    def forward(m, x):
        x = T.max_pool(F.relu(m["0"](x)), 2)
        x = T.max_pool(F.relu(m["3"](x)), 2)
        x = T.flatten_nhwc(x)
        return m["9"](F.relu(m["8"](F.relu(m["7"](x)))))
    return Twin(forward, {"0": T.ConvNHWC(1, 6, 5, pad=2), "3": T.ConvNHWC(6, 16, 5),
                          "7": nn.Linear(400, 120), "8": nn.Linear(120, 84), "9": nn.Linear(84, 10)})


def _mobilenet_twin():
    def forward(m, x):
        h = F.relu6(m["bn1"](m["expand"](x)))
        h = F.relu6(m["bn2"](m["dw"](h)))
        return x + m["bn3"](m["project"](h))
    return Twin(forward, {
        "expand": T.ConvNHWC(32, 192, 1, bias=False), "bn1": T.BatchNormNHWC(192),
        "dw": T.ConvNHWC(192, 192, 3, pad=1, groups=192, bias=False), "bn2": T.BatchNormNHWC(192),
        "project": T.ConvNHWC(192, 32, 1, bias=False), "bn3": T.BatchNormNHWC(32)})


def _gpt_twin():
    def forward(m, x):
        h = x + T.attend(m["attn"], m["ln1"](x), mask=T.causal_mask(16))
        return h + m["proj"](F.gelu(m["fc"](m["ln2"](h))))
    return Twin(forward, {"ln1": nn.LayerNorm(64), "attn": T.mha(64, 4), "ln2": nn.LayerNorm(64),
                          "fc": nn.Linear(64, 256), "proj": nn.Linear(256, 64)})


def _bert_twin():
    return nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", batch_first=True)


EXAMPLES = {  # examples/NAME.ax -> (twin, inputs, tolerance)
    "mlp": (_mlp_twin, {"x": ((1, 784), "normal")}, 1e-5),
    "r1_mlp_b1": (_mlp_twin, {"x": ((1, 784), "normal")}, 1e-5),
    "r2_mlp_b32": (_mlp_twin, {"x": ((32, 784), "normal")}, 1e-5),
    "r3_resnet_block": (_resnet_twin, {"x": ((1, 56, 56, 64), "normal")}, DEEP),
    "r4_bert_layer": (_bert_twin, {"x": ((1, 128, 768), "normal")}, DEEP),
    "r5_layernorm": (lambda: Twin(only("0"), {"0": nn.LayerNorm(768)}), {"x": ((32, 768), "normal")}, 1e-5),
    "r6_softmax": (stateless(lambda x: torch.softmax(x, -1)), {"x": ((32, 10000), "normal")}, 1e-5),
    "r7_depthwise": (lambda: Twin(lambda m, x: F.relu6(m["1"](m["0"](x))),
                                  {"0": T.ConvNHWC(384, 384, 3, pad=1, groups=384, bias=False),
                                   "1": T.BatchNormNHWC(384)}),
                     {"x": ((1, 14, 14, 384), "normal")}, DEEP),
    "lenet5": (_lenet_twin, {"x": ((1, 28, 28, 1), "normal")}, DEEP),
    "mobilenetv2_block": (_mobilenet_twin, {"x": ((1, 14, 14, 32), "normal")}, DEEP),
    "gpt_block": (_gpt_twin, {"x": ((1, 16, 64), "normal")}, DEEP),
    "gru_kws": (lambda: Twin(lambda m, x: m["fc"](m["gru"](x)[0][:, -1, :]),
                             {"gru": nn.GRU(10, 32, num_layers=2, batch_first=True), "fc": nn.Linear(32, 12)}),
                {"x": ((1, 49, 10), "normal")}, DEEP),
}


def example_cases(root):
    cases = []
    for name, (twin, inputs, tol) in EXAMPLES.items():
        with open(os.path.join(root, "examples", name + ".ax")) as f:
            cases.append(Case("example_" + name, f.read(), twin, inputs, tol=tol))
    return cases


# ---- Winograd convolution (--conv-algo, runtime/axrt_winograd.c) -----------------------------

WINOGRAD = [  # (name, input NHWC, cout, pad, activation, residual, --conv-algo)
    ("winograd_partial_tiles_pad1", (1, 13, 11, 16), 16, 1, "identity", False, "winograd"),
    ("winograd_pad0_relu", (2, 10, 7, 8), 24, 0, "relu", False, "winograd"),
    ("winograd_odd_channels_residual", (1, 9, 14, 19), 19, 1, "relu", True, "winograd"),
    ("winograd_wide_relu6", (1, 28, 28, 64), 48, 1, "relu6", False, "winograd"),
    ("winograd_tiny", (1, 3, 5, 4), 6, 0, "identity", False, "winograd"),
    ("winograd_hardswish", (1, 10, 9, 8), 12, 1, "hardswish", False, "winograd"),
    # F(2x2,3x3), forced (--conv-algo=winograd2; auto takes direct on these few-tile images)
    ("winograd_f2_residual", (1, 7, 7, 256), 256, 1, "relu", True, "winograd2"),
    ("winograd_f2_partial", (1, 10, 9, 256), 264, 0, "identity", False, "winograd2"),
]


def winograd_cases(root):
    """3x3 stride-1 convs forced through Winograd F(4x4,3x3)
    (--conv-algo=winograd), or F(2x2,3x3) (--conv-algo=winograd2): partial tiles,
    padding 0 and 1, channel counts off the vector width, the
    bias/activation/residual epilogue; then the
    ResNet block forced both ways.  (torchvision_resnet18 runs its 64-channel
    layers as Winograd under auto; forcing all of ResNet-18 embeds ~150 MB of
    transformed weights, minutes of C compilation.)"""
    cases = []
    for name, shape, cout, pad, act, residual, algo in WINOGRAD:
        cin = shape[3]
        sig = f"x::Float32[{shape_text(shape)}]"
        conv = f"Conv((3, 3), {cin} => {cout}, pad={pad}, activation={act})"
        if residual:
            ax = fn_model(name, sig, f"c = {conv}\nreturn relu(c(x) + x)")
            twin = lambda cin=cin, cout=cout, pad=pad, act=act: Twin(
                lambda m, x: F.relu(m["c"](x) + x), {"c": T.ConvNHWC(cin, cout, 3, pad=pad, activation=act)})
            cases.append(Case(name, ax, twin, {"x": (shape, "normal")}, flags=["--conv-algo=" + algo],
                              directions=("A", "B")))
        else:
            cases.append(layer(name, sig, conv,
                               lambda cin=cin, cout=cout, pad=pad, act=act:
                                   {"0": T.ConvNHWC(cin, cout, 3, pad=pad, activation=act)},
                               only("0"), {"x": (shape, "normal")}, flags=["--conv-algo=" + algo],
                               directions=("A", "B")))
    twin, inputs, tol = EXAMPLES["r3_resnet_block"]
    with open(os.path.join(root, "examples", "r3_resnet_block.ax")) as f:
        block = f.read()
    for algo in ("winograd", "direct"):
        cases.append(Case("winograd_r3_resnet_block_" + algo, block, twin, inputs, tol=tol,
                          flags=["--conv-algo=" + algo], directions=("A",)))
    return cases


def all_cases(root):
    import cases_compose  # noqa: E402 (it imports Case from here)
    return (activation_cases() + function_cases() + binary_cases() + fused_cases() + layer_cases()
            + attention_cases() + rnn_cases() + program_cases() + example_cases(root)
            + winograd_cases(root) + cases_compose.all_cases(root))
