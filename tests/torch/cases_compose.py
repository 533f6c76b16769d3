"""Cases of language.md §9 (blocks, instances with dotted names, Chain,
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
    """The model of language.md §9: a Chain of two instances, a list of
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


def compose_cases():
    return [
        Case("compose_blocks_chain_list_for", NET_AX,
             lambda: Net(4), {"x": ((1, 7, 9, 4), "normal")}, tol=DEEP),
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
    return compose_cases() + torchvision_cases(root)
