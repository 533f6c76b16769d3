"""Whole-model rows of `make bench`: torchvision's ResNet-18, MobileNetV2,
EfficientNet-B0 and MobileNetV3-Large, and a MiniLM-sized Transformer
encoder, written out as flat .ax files.

The .ax language had no blocks or loops when this was written (it has them now:
docs/language.md#composition), so this script walks the PyTorch module and writes one labelled
layer per PyTorch layer.  A PyTorch path "layer1.0.conv1" becomes the axc
layer "layer1_0_conv1"; axc_weights() renames the state_dict the same way
(and reshapes the 1x1 convolutions of squeeze-excitation, which axc computes
as Dense on the pooled vector).

  models()                 name -> (module factory, input shape NHWC)
  to_ax(name, module)      (.ax source, {axc parameter name: tensor})
  python3 gen_models.py NAME OUT.ax   writes one model with seeded weights
                                      (for looking at the generated source)
"""
import sys

import torch
from torch import nn

ENCODER_LAYERS, ENCODER_D, ENCODER_HEADS, ENCODER_FF, ENCODER_SEQ = 6, 384, 12, 1536, 128


class Nhwc(nn.Module):
    """Wraps an NCHW torchvision network so that it takes NHWC, as axc does."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x.permute(0, 3, 1, 2))


def _torchvision(ctor):
    def make():
        return Nhwc(ctor(weights=None))
    return make


def encoder():
    """MiniLM-L6 shape (d 384, 12 heads, FFN 1536, 6 post-LN layers, GELU)
    without embeddings: the encoder stack that dominates its time."""
    layer = nn.TransformerEncoderLayer(ENCODER_D, ENCODER_HEADS, ENCODER_FF, dropout=0.0, activation="gelu",
                                       batch_first=True)
    return nn.TransformerEncoder(layer, ENCODER_LAYERS, enable_nested_tensor=False)


def models():
    import torchvision.models as tvm
    return {
        "resnet18": (_torchvision(tvm.resnet18), (1, 224, 224, 3)),
        "mobilenet_v2": (_torchvision(tvm.mobilenet_v2), (1, 224, 224, 3)),
        "efficientnet_b0": (_torchvision(tvm.efficientnet_b0), (1, 224, 224, 3)),
        "minilm_encoder": (encoder, (1, ENCODER_SEQ, ENCODER_D)),
        "mobilenet_v3_large": (_torchvision(tvm.mobilenet_v3_large), (1, 224, 224, 3)),
    }


class Emitter:
    """Collects layer declarations, value statements and renamed weights."""

    def __init__(self):
        self.decls, self.stmts, self.weights, self.count = [], [], {}, 0

    def value(self, expr):
        self.count += 1
        name = f"t{self.count}"
        self.stmts.append(f"    {name} = {expr}")
        return name

    def layer(self, path, ctor, module=None, params=None):
        """Declares layer `path` (dots become underscores) and records its
        parameters: module's own state_dict, or params when given."""
        name = path.replace(".", "_")
        self.decls.append(f"    {name} = {ctor}")
        state = params if params is not None else {k: v for k, v in module.state_dict().items()
                                                   if not k.endswith("num_batches_tracked")}
        for k, v in state.items():
            self.weights[f"{name}.{k}"] = v.detach().float().contiguous()
        return name


ACTIVATIONS = {nn.ReLU: "relu", nn.ReLU6: "relu6", nn.SiLU: "swish", nn.Sigmoid: "sigmoid", nn.GELU: "gelu",
               nn.Hardswish: "hardswish", nn.Hardsigmoid: "hardsigmoid"}


def pair(v):
    return v if isinstance(v, tuple) else (v, v)


def conv(e, path, m, x):
    kh, kw = m.kernel_size
    ctor = (f"Conv(({kh}, {kw}), {m.in_channels} => {m.out_channels}, stride={pair(m.stride)}, "
            f"pad={pair(m.padding)}, groups={m.groups}, bias={'true' if m.bias is not None else 'false'})")
    return e.value(f"{e.layer(path, ctor, m)}({x})")


def emit(e, path, m, x):
    """Applies module m (at state_dict prefix path) to value x; returns the
    result's value name."""
    from torchvision.models.efficientnet import MBConv
    from torchvision.models.mobilenetv2 import InvertedResidual
    from torchvision.models.mobilenetv3 import InvertedResidual as InvertedResidualV3
    from torchvision.models.resnet import BasicBlock
    from torchvision.ops.misc import SqueezeExcitation
    sub = (lambda name: f"{path}.{name}") if path else (lambda name: name)
    if isinstance(m, nn.Conv2d):
        return conv(e, path, m, x)
    if isinstance(m, nn.BatchNorm2d):
        return e.value(f"{e.layer(path, f'BatchNorm({m.num_features}, eps={m.eps})', m)}({x})")
    if type(m) in ACTIVATIONS:
        return e.value(f"{ACTIVATIONS[type(m)]}({x})")
    if isinstance(m, (nn.Dropout, nn.Identity)):
        return x
    if isinstance(m, nn.Linear):
        return e.value(f"{e.layer(path, f'Dense({m.in_features} => {m.out_features})', m)}({x})")
    if isinstance(m, nn.MaxPool2d):
        k, s, p = pair(m.kernel_size), pair(m.stride), pair(m.padding)
        return e.value(f"{e.layer(path, f'MaxPool({k}, stride={s}, pad={p})', params={})}({x})")
    if isinstance(m, nn.Sequential):
        for name, child in m.named_children():
            x = emit(e, sub(name), child, x)
        return x
    if isinstance(m, (InvertedResidual, InvertedResidualV3, MBConv)):
        body = "conv" if isinstance(m, InvertedResidual) else "block"
        y = emit(e, sub(body), getattr(m, body), x)
        return e.value(f"{x} + {y}") if m.use_res_connect else y
    if isinstance(m, SqueezeExcitation):
        return squeeze_excitation(e, path, m, x)
    if isinstance(m, BasicBlock):
        h = emit(e, sub("bn1"), m.bn1, emit(e, sub("conv1"), m.conv1, x))
        h = emit(e, sub("bn2"), m.bn2, emit(e, sub("conv2"), m.conv2, e.value(f"relu({h})")))
        skip = emit(e, sub("downsample"), m.downsample, x) if m.downsample is not None else x
        return e.value(f"relu({h} + {skip})")
    raise NotImplementedError(f"{path}: {type(m).__name__} has no .ax spelling here")


def squeeze_excitation(e, path, m, x):
    """scale = sigmoid(fc2(silu(fc1(mean over H, W)))), x .* scale; the 1x1
    convolutions on the pooled [N, C, 1, 1] are Dense layers on [N, C]."""
    cin, csq = m.fc1.in_channels, m.fc1.out_channels
    pooled = e.value(f"{e.layer(path + '.avgpool', 'GlobalMeanPool()', params={})}({x})")
    dense = []
    for name, fc, a, b in (("fc1", m.fc1, cin, csq), ("fc2", m.fc2, csq, cin)):
        params = {"weight": fc.weight.reshape(b, a), "bias": fc.bias}
        dense.append(e.layer(f"{path}.{name}", f"Dense({a} => {b})", params=params))
    h = e.value(f"{ACTIVATIONS[type(m.activation)]}({dense[0]}({pooled}))")
    s = e.value(f"{ACTIVATIONS[type(m.scale_activation)]}({dense[1]}({h}))")
    return e.value(f"{x} .* reshape({s}, (1, 1, 1, {cin}))")


def emit_torchvision(e, net, x):
    import torchvision.models as tvm
    if isinstance(net, tvm.ResNet):
        for name in ("conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4"):
            x = emit(e, name, getattr(net, name), x)
        x = e.value(f"{e.layer('avgpool', 'GlobalMeanPool()', params={})}({x})")
        return emit(e, "fc", net.fc, x)
    x = emit(e, "features", net.features, x)
    x = e.value(f"{e.layer('avgpool', 'GlobalMeanPool()', params={})}({x})")
    return emit(e, "classifier", net.classifier, x)


def emit_encoder(e, enc, x):
    for i, layer in enumerate(enc.layers):
        p = f"layers.{i}"
        attn = e.layer(f"{p}.self_attn", f"MultiHeadAttention({ENCODER_D} => {ENCODER_HEADS})", layer.self_attn)
        lin1 = e.layer(f"{p}.linear1", f"Dense({ENCODER_D} => {ENCODER_FF})", layer.linear1)
        lin2 = e.layer(f"{p}.linear2", f"Dense({ENCODER_FF} => {ENCODER_D})", layer.linear2)
        n1 = e.layer(f"{p}.norm1", f"LayerNorm({ENCODER_D})", layer.norm1)
        n2 = e.layer(f"{p}.norm2", f"LayerNorm({ENCODER_D})", layer.norm2)
        h = e.value(f"{n1}({x} + {attn}({x}))")
        x = e.value(f"{n2}({h} + {lin2}(gelu({lin1}({h}))))")
    return x


def to_ax(name, module):
    """The .ax source of model `name` (module as models() builds it) and its
    weights under axc's names."""
    shape = models()[name][1]
    e = Emitter()
    if isinstance(module, Nhwc):
        out = emit_torchvision(e, module.net, "x")
        what = f"torchvision {name}"
    else:
        out = emit_encoder(e, module, "x")
        what = (f"Transformer encoder, {ENCODER_LAYERS} post-LN layers, d {ENCODER_D}, {ENCODER_HEADS} heads, "
                f"FFN {ENCODER_FF} (MiniLM-L6 shape, no embeddings)")
    dims = ", ".join(map(str, shape))
    lines = [f"# {what}, batch 1, written by bench/gen_models.py from the PyTorch module;",
             "# layer names are the state_dict paths with '.' replaced by '_'.",
             f"@axiom function {name}(x::Float32[{dims}])", *e.decls, *e.stmts, f"    return {out}", "end", ""]
    return "\n".join(lines), e.weights


if __name__ == "__main__":
    torch.manual_seed(0)
    source, _ = to_ax(sys.argv[1], models()[sys.argv[1]][0]().eval())
    with open(sys.argv[2], "w") as f:
        f.write(source)
