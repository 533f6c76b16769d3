#!/usr/bin/env python3
"""interp_ref.py — PyTorch references for tests/unit/test_interp.c.

Prints one tensor per line:  NAME RANK DIM... VALUE...
with every value as a C99 hexadecimal float (exact in both directions).
NAME is "<case>.<tensor>"; the C test builds the same graph by hand, feeds
it the printed inputs and parameters, and compares the interpreter's result
with the printed reference.  All inputs are random (fixed seed) float64 and
every reference is computed by torch in float64, so agreement is expected to
about 1e-12, except the dtype-conversion cases, which compare exactly.
Images are printed NHWC (the interpreter's layout); torch computes in NCHW.
"""
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)


def emit(name, t):
    t = torch.as_tensor(t).detach().to(torch.float64).contiguous()
    values = " ".join(float(v).hex() for v in t.reshape(-1).tolist())
    dims = " ".join(str(d) for d in t.shape)
    print(f"{name} {t.dim()} {dims} {values}".replace("  ", " "))


def nchw(x):
    return x.permute(0, 3, 1, 2)


def nhwc(x):
    return x.permute(0, 2, 3, 1)


def unary_cases():
    x = torch.randn(2, 3, 5) * 4
    x[0, 0, :] = torch.tensor([21.0, -21.0, 0.0, 19.5, -0.5])  # softplus threshold
    xpos = torch.rand(2, 3, 5) * 10 + 0.01
    emit("unary.x", x)
    emit("unary.xpos", xpos)
    refs = {
        "relu": F.relu(x), "relu6": F.relu6(x), "sigmoid": torch.sigmoid(x),
        "tanh": torch.tanh(x), "swish": F.silu(x), "gelu": F.gelu(x),
        "gelu_tanh": F.gelu(x, approximate="tanh"), "softplus": F.softplus(x),
        "elu": F.elu(x, alpha=0.7), "leaky_relu": F.leaky_relu(x, 0.05),
        "exp": torch.exp(x), "log": torch.log(xpos), "sqrt": torch.sqrt(xpos),
        "abs": torch.abs(x), "neg": torch.neg(x), "erf": torch.erf(x),
    }
    for name, value in refs.items():
        emit("unary." + name, value)


def unary_special_cases():
    # NaN, signed zeros, infinities and large magnitudes: the interpreter
    # must follow torch here too (relu(NaN) is NaN, relu(-0.0) is -0.0).
    x = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), -float("inf"), 30.0, -30.0, 1e-300])
    emit("unary_special.x", x)
    refs = {
        "relu": F.relu(x), "relu6": F.relu6(x), "sigmoid": torch.sigmoid(x),
        "tanh": torch.tanh(x), "swish": F.silu(x), "gelu": F.gelu(x),
        "gelu_tanh": F.gelu(x, approximate="tanh"), "softplus": F.softplus(x),
        "elu": F.elu(x, alpha=0.7), "leaky_relu": F.leaky_relu(x, 0.05),
        "exp": torch.exp(x), "log": torch.log(x), "sqrt": torch.sqrt(x),
        "abs": torch.abs(x), "neg": torch.neg(x), "erf": torch.erf(x),
    }
    for name, value in refs.items():
        emit("unary_special." + name, value)


def cast_cases():
    x = torch.randn(3, 7) * 1000
    x[0, :4] = torch.tensor([1 + 2.0**-11, 1 + 3 * 2.0**-11, 70000.0, 1e-6])  # f16 ties, overflow, subnormal
    x[1, :3] = torch.tensor([1 + 2.0**-8, -3.7, 2.5])
    emit("cast.x", x)
    emit("cast.f32", x.float())
    emit("cast.f16_bits", x.half().view(torch.int16))
    emit("cast.bf16_bits", x.bfloat16().view(torch.int16))
    emit("cast.i32", x.to(torch.int32))
    # Float64 input -> cast -> Float32 model: the product sees the rounded input
    emit("cast.f32_times_3", (x.float().double() * 3.0).float())
    # narrow inputs are widened exactly
    emit("cast.in_f16", x.half())
    emit("cast.in_bf16", x.bfloat16())
    emit("cast.in_f32", x.float())
    emit("cast.in_i8", torch.tensor([[-128, -1, 0, 5, 127]]))
    emit("cast.in_i64", torch.tensor([[-(2**40), 7, 2**52]]))


def binary_cases():
    a = torch.randn(2, 1, 4)
    b = torch.randn(3, 1) + 3  # away from zero for div
    emit("binary.a", a)
    emit("binary.b", b)
    emit("binary.add", a + b)
    emit("binary.sub", a - b)
    emit("binary.mul", a * b)
    emit("binary.div", a / b)
    emit("binary.x_plus_1.5", a + 1.5)
    emit("binary.2_times_x", 2.0 * a)
    emit("binary.x_over_8", a / 8.0)
    emit("binary.5_minus_x", 5.0 - a)


def reduce_cases():
    x = torch.randn(2, 3, 4) * 30
    emit("reduce.x", x)
    emit("reduce.sum1", x.sum(dim=1, keepdim=True))
    emit("reduce.mean2", x.mean(dim=2, keepdim=True))
    emit("reduce.maximum0", x.amax(dim=0, keepdim=True))
    emit("reduce.softmax1", torch.softmax(x, dim=1))
    emit("reduce.log_softmax2", torch.log_softmax(x, dim=2))


def shape_cases():
    x = torch.randn(2, 3, 4)
    emit("shape.x", x)
    emit("shape.reshape", x.reshape(6, 4))
    emit("shape.transpose", x.permute(2, 0, 1))
    a, b, c = torch.randn(2, 2, 3), torch.randn(2, 1, 3), torch.randn(2, 4, 3)
    emit("shape.a", a)
    emit("shape.b", b)
    emit("shape.c", c)
    emit("shape.concat", torch.cat([a, b, c], dim=1))


def matmul_cases():
    pairs = {
        "batched": (torch.randn(2, 1, 3, 4), torch.randn(3, 4, 5)),
        "vec_mat": (torch.randn(4), torch.randn(2, 4, 3)),
        "mat_vec": (torch.randn(2, 3, 4), torch.randn(4)),
        "dot": (torch.randn(4), torch.randn(4)),
    }
    for name, (a, b) in pairs.items():
        emit(f"matmul_{name}.a", a)
        emit(f"matmul_{name}.b", b)
        emit(f"matmul_{name}.y", torch.matmul(a, b))


def dense_norm_cases():
    x = torch.randn(2, 3, 5)
    w, b = torch.randn(4, 5), torch.randn(4)
    emit("dense.x", x)
    emit("dense.w", w)
    emit("dense.b", b)
    emit("dense.y", F.linear(x, w, b))
    emit("dense.y_nobias_gelu", F.gelu(F.linear(x, w)))

    x = torch.randn(2, 3, 6) * 3 + 1
    w, b = torch.randn(6), torch.randn(6)
    emit("layernorm.x", x)
    emit("layernorm.w", w)
    emit("layernorm.b", b)
    emit("layernorm.y", F.layer_norm(x, (6,), w, b, eps=1e-5))

    x = torch.randn(2, 3, 3, 4)
    w, b, mean, var = torch.randn(4), torch.randn(4), torch.randn(4), torch.rand(4) + 0.5
    for name, t in (("x", x), ("w", w), ("b", b), ("mean", mean), ("var", var)):
        emit("batchnorm." + name, t)
    y = F.batch_norm(nchw(x), mean, var, w, b, training=False, eps=1e-3)
    emit("batchnorm.y_relu", F.relu(nhwc(y)))


def conv_cases():
    # stride (2,1), dilation (1,2), pad top=1 left=0 bottom=2 right=1, groups=2
    x = torch.randn(2, 7, 8, 4)
    w, b = torch.randn(6, 2, 3, 2), torch.randn(6)
    emit("conv.x", x)
    emit("conv.w", w)
    emit("conv.b", b)
    padded = F.pad(nchw(x), (0, 1, 1, 2))  # (left, right, top, bottom)
    emit("conv.y", nhwc(F.conv2d(padded, w, b, stride=(2, 1), dilation=(1, 2), groups=2)))

    # depthwise 3x3, pad 1, no bias, relu6 epilogue
    x = torch.randn(1, 5, 4, 3)
    w = torch.randn(3, 1, 3, 3)
    emit("dwconv.x", x)
    emit("dwconv.w", w)
    emit("dwconv.y_relu6", nhwc(F.relu6(F.conv2d(nchw(x), w, padding=1, groups=3))))


def pool_cases():
    x = torch.randn(1, 5, 6, 2)
    emit("pool.x", x)
    # 3x3 windows, stride 2, pad 1: the windows overhang every edge
    emit("pool.max", nhwc(F.max_pool2d(nchw(x), 3, stride=2, padding=1)))
    emit("pool.mean", nhwc(F.avg_pool2d(nchw(x), 3, stride=2, padding=1,
                                        count_include_pad=True)))
    # asymmetric: pad bottom=1 right=1 only, 2x2 windows, stride 2
    emit("pool.max_asym",
         nhwc(F.max_pool2d(F.pad(nchw(x), (0, 1, 0, 1), value=-math.inf), 2, stride=2)))
    emit("pool.mean_asym", nhwc(F.avg_pool2d(F.pad(nchw(x), (0, 1, 0, 1)), 2, stride=2)))
    x = torch.randn(2, 3, 4, 5)
    emit("gpool.x", x)
    emit("gpool.y", x.mean(dim=(1, 2)))


def mha_case(name, d, heads, lq, lk, bias, causal, self_attention):
    mha = torch.nn.MultiheadAttention(d, heads, bias=bias, batch_first=True)
    with torch.no_grad():  # non-trivial biases (torch initialises them to zero)
        for p in mha.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    q = torch.randn(2, lq, d)
    k = q if self_attention else torch.randn(2, lk, d)
    v = q if self_attention else torch.randn(2, lk, d)
    mask = torch.triu(torch.ones(lq, lk, dtype=torch.bool), diagonal=1) if causal else None
    y, _ = mha(q, k, v, attn_mask=mask, need_weights=False)
    for tname, t in (("q", q), ("k", k), ("v", v), ("y", y)):
        emit(f"{name}.{tname}", t)
    for pname, p in mha.state_dict().items():
        emit(f"{name}.{pname}", p)


def embedding_cases():
    w = torch.randn(7, 4)
    idx = torch.tensor([[3, 0, 6], [6, 1, 3]])
    emit("embedding.w", w)
    emit("embedding.idx", idx)
    emit("embedding.y", F.embedding(idx, w))


def main():
    unary_cases()
    unary_special_cases()
    cast_cases()
    binary_cases()
    reduce_cases()
    shape_cases()
    matmul_cases()
    dense_norm_cases()
    conv_cases()
    pool_cases()
    mha_case("mha_causal", d=8, heads=2, lq=3, lk=5, bias=True, causal=True,
             self_attention=False)
    mha_case("mha_self", d=6, heads=3, lq=4, lk=4, bias=False, causal=False,
             self_attention=True)
    embedding_cases()


if __name__ == "__main__":
    main()
