"""PyTorch building blocks for the twins of .ax models.

A twin is a torch module whose state_dict names equal the .ax parameter names
(docs/language.md#layers), so one safetensors file loads into both.  The NHWC layers
below subclass the torch layer they mirror, so no wrapper prefix is added to
the parameter names; they only move the channel axis around."""

import math

import torch
import torch.nn.functional as F
from torch import nn

# The .ax activations and functions of docs/language.md#functions, as torch functions.
ACTIVATIONS = {
    "identity": lambda x: x,
    "relu": F.relu,
    "relu6": F.relu6,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "swish": F.silu,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "softplus": F.softplus,
    "hardswish": F.hardswish,
    "elu": F.elu,
    "leaky_relu": F.leaky_relu,
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
}


class Twin(nn.Module):
    """A module made of named layers and a forward function fn(self, *inputs).
    Layers are registered under their .ax names ("0", "fc1", ...)."""

    def __init__(self, fn, layers=None):
        super().__init__()
        for name, layer in (layers or {}).items():
            self.add_module(name, layer)
        self._fn = fn

    def __getitem__(self, name):
        return self._modules[name]

    def forward(self, *inputs):
        return self._fn(self, *inputs)


def to_nchw(x):
    return x.permute(0, 3, 1, 2)


def to_nhwc(x):
    return x.permute(0, 2, 3, 1)


def same_padding(size, kernel, stride, dilation):
    """(before, after) padding giving ceil(size / stride) outputs; the odd
    extra pixel goes after, as PyTorch's padding='same' and TensorFlow do."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


class Conv1dNLC(nn.Conv1d):
    """Conv((k,), in => out; ...) on [N, L, C]; pad is an int or "same"."""

    def __init__(self, cin, cout, k, activation="identity", **kw):
        super().__init__(cin, cout, k, **kw)
        self.act = ACTIVATIONS[activation]

    def forward(self, x):
        return self.act(super().forward(x.transpose(1, 2))).transpose(1, 2)


class ConvTransposeNHWC(nn.ConvTranspose2d):
    """ConvTranspose((kh, kw), in => out; ...) on NHWC."""

    def forward(self, x):
        return to_nhwc(super().forward(to_nchw(x)))


class GroupNormNHWC(nn.GroupNorm):
    """GroupNorm(groups, C) on channels-last [N, ..., C]."""

    def forward(self, x):
        perm = [0, x.dim() - 1, *range(1, x.dim() - 1)]
        back = [0, *range(2, x.dim()), 1]
        return super().forward(x.permute(*perm)).permute(*back)


class InstanceNormNLC(nn.InstanceNorm1d):
    """InstanceNorm(C; ...) on [N, L, C]."""

    def forward(self, x):
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class RMSNorm(nn.Module):
    """torch.nn.RMSNorm(d, eps) (PyTorch 2.4; Debian's is older): the weight,
    eps defaulting to the dtype's machine epsilon."""

    def __init__(self, d, eps=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight


class ConvNHWC(nn.Conv2d):
    """Conv((kh, kw), in => out; ...) on NHWC.  pad is an int, an (h, w)
    tuple, or "same"."""

    def __init__(self, cin, cout, kernel, stride=1, pad=0, dilation=1,
                 groups=1, bias=True, activation="identity"):
        self.same = pad == "same"
        super().__init__(cin, cout, kernel, stride=stride,
                         padding=0 if self.same else pad, dilation=dilation,
                         groups=groups, bias=bias)
        self.act = ACTIVATIONS[activation]

    def forward(self, x):
        x = to_nchw(x)
        if self.same:
            pads = [same_padding(x.shape[2 + i], self.kernel_size[i],
                                 self.stride[i], self.dilation[i]) for i in (0, 1)]
            x = F.pad(x, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
        return self.act(to_nhwc(super().forward(x)))


class BatchNormNHWC(nn.BatchNorm2d):
    """BatchNorm(C) on an NHWC tensor, through BatchNorm2d on NCHW."""

    def __init__(self, channels, eps=1e-5, activation="identity"):
        super().__init__(channels, eps=eps)
        self.act = ACTIVATIONS[activation]

    def forward(self, x):
        return self.act(to_nhwc(super().forward(to_nchw(x))))


class BatchNormLastDim(nn.BatchNorm1d):
    """BatchNorm(C) on a tensor of any rank whose last dim is C."""

    def forward(self, x):
        return super().forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)


class DenseAct(nn.Linear):
    """Dense(in => out; activation=a, bias=b)."""

    def __init__(self, cin, cout, activation="identity", bias=True):
        super().__init__(cin, cout, bias=bias)
        self.act = ACTIVATIONS[activation]

    def forward(self, x):
        return self.act(super().forward(x))


def max_pool(x, kernel, stride=None, pad=0):
    return to_nhwc(F.max_pool2d(to_nchw(x), kernel, stride or kernel, pad))


def mean_pool(x, kernel, stride=None, pad=0):
    """Zero padding counts, as AvgPool2d's default count_include_pad=True."""
    return to_nhwc(F.avg_pool2d(to_nchw(x), kernel, stride or kernel, pad))


def flatten_nhwc(x):
    """Flatten() of a row-major NHWC tensor (so no permute back to NCHW)."""
    return x.reshape(x.shape[0], -1)


def mha(d, heads, bias=True):
    return nn.MultiheadAttention(d, heads, bias=bias, batch_first=True)


def causal_mask(length):
    """torch's own causal mask: -inf above the diagonal."""
    return nn.Transformer.generate_square_subsequent_mask(length)


def attend(layer, q, k=None, v=None, mask=None):
    """MultiheadAttention's documented (slow) path: with gradients enabled
    torch 1.13 skips its fused fast path, which crashes when bias=False."""
    k = q if k is None else k
    v = k if v is None else v
    with torch.enable_grad():
        return layer(q, k, v, attn_mask=mask, need_weights=False)[0].detach()


def randomise(module, generator):
    """Non-trivial values for everything PyTorch initialises to constants
    (norm weights and statistics, attention biases), so a wrong formula or a
    mixed-up parameter cannot hide behind a 1 or a 0."""
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, (nn.BatchNorm1d, nn.BatchNorm2d)):
                sub.running_mean.normal_(0, 0.5, generator=generator)
                sub.running_var.uniform_(0.5, 2.0, generator=generator)
                sub.num_batches_tracked.fill_(17)
            if isinstance(sub, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)):
                sub.weight.uniform_(0.5, 1.5, generator=generator)
                sub.bias.normal_(0, 0.3, generator=generator)
            if isinstance(sub, (nn.InstanceNorm1d, nn.InstanceNorm2d)) and sub.affine:
                sub.weight.uniform_(0.5, 1.5, generator=generator)
                sub.bias.normal_(0, 0.3, generator=generator)
            if isinstance(sub, RMSNorm):
                sub.weight.uniform_(0.5, 1.5, generator=generator)
            if isinstance(sub, (nn.GRU, nn.LSTM)):   # wider than 1/sqrt(H): gates far from 0.5
                for p in sub.parameters():
                    p.uniform_(-0.7, 0.7, generator=generator)
            if isinstance(sub, nn.MultiheadAttention):
                for p in (sub.in_proj_bias, sub.out_proj.bias):
                    if p is not None:
                        p.normal_(0, 0.3, generator=generator)
            if isinstance(sub, nn.Linear) and sub.bias is not None:
                bound = 1 / math.sqrt(sub.in_features)
                sub.bias.uniform_(-bound, bound, generator=generator)
