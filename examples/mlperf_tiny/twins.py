"""PyTorch twins of the four MLPerf Tiny reference models in this folder and
the synthetic data they are trained on.

Each twin takes the .ax model's input layout (channels last, NHWC, batch
first) and has the .ax model's parameter names, so its state_dict (without
BatchNorm's num_batches_tracked) is the .ax model's weights file.  The
architectures are those of the MLPerf Tiny benchmark repository
(mlcommons/tiny, benchmark/training/*/; Banbury et al., "MLPerf Tiny
Benchmark", NeurIPS 2021), cited in each .ax file.  TensorFlow's 'same'
padding (the extra row/column of a stride-2 layer at the bottom/right) is
written out with F.pad, as PyTorch's padding='same' refuses strides > 1.

The data sets (Speech Commands, COCO-derived Visual Wake Words, CIFAR-10,
ToyADMOS/MIMII) cannot be downloaded here, so each model is trained on
synthetic data of its input's shape: a fixed random template per class plus
noise for the classifiers, points near an 8-dimensional subspace for the
autoencoder.  The figures that matter here (sizes, instruction counts,
device-host agreement) do not depend on the data."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def same_pad(x, kernel, stride):
    """Pads an NCHW tensor as TensorFlow's 'same' (output ceil(size / stride))."""
    pads = []
    for size, k, s in reversed(list(zip(x.shape[2:], kernel, stride))):
        total = max((math.ceil(size / s) - 1) * s + k - size, 0)
        pads += [total // 2, total - total // 2]
    return F.pad(x, pads)


class SameConv(nn.Conv2d):
    """nn.Conv2d with TensorFlow's 'same' padding."""

    def forward(self, x):
        return super().forward(same_pad(x, self.kernel_size, self.stride))


class Separable(nn.Module):
    """Depthwise 3x3 (stride s) + BatchNorm + ReLU, pointwise 1x1 + BatchNorm + ReLU."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.dw = SameConv(cin, cin, 3, stride=stride, groups=cin, bias=False)
        self.bn1 = nn.BatchNorm2d(cin)
        self.pw = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn2(self.pw(F.relu(self.bn1(self.dw(x))))))


class DsCnn(nn.Module):
    """ds_cnn.ax: keyword spotting, [N, 49, 10, 1] -> 12 logits."""
    input_shape, classes = (49, 10, 1), 12

    def __init__(self):
        super().__init__()
        self.conv1 = SameConv(1, 64, (10, 4), stride=2, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.blocks = nn.Sequential(*[Separable(64, 64) for _ in range(4)])
        self.fc = nn.Linear(64, 12)

    def forward(self, x):
        h = self.blocks(F.relu(self.bn1(self.conv1(x.permute(0, 3, 1, 2)))))
        return self.fc(h.mean(dim=(2, 3)))


class MobileNetV1(nn.Module):
    """mobilenet_v1_025.ax: visual wake words, [N, 96, 96, 3] -> 2 logits."""
    input_shape, classes = (96, 96, 3), 2
    PLAN = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2)] + \
        [(128, 128, 1)] * 5 + [(128, 256, 2), (256, 256, 1)]

    def __init__(self):
        super().__init__()
        self.conv1 = SameConv(3, 8, 3, stride=2, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.blocks = nn.Sequential(*[Separable(*p) for p in self.PLAN])
        self.fc = nn.Linear(256, 2)

    def forward(self, x):
        h = self.blocks(F.relu(self.bn1(self.conv1(x.permute(0, 3, 1, 2)))))
        return self.fc(h.mean(dim=(2, 3)))


class IdentityBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = SameConv(c, c, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = SameConv(c, c, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class DownBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = SameConv(cin, cout, 3, stride=2, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = SameConv(cout, cout, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride=2)

    def forward(self, x):
        h = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(self.shortcut(x) + h)


class ResNet8(nn.Module):
    """resnet8.ax: image classification, [N, 32, 32, 3] -> 10 logits."""
    input_shape, classes = (32, 32, 3), 10

    def __init__(self):
        super().__init__()
        self.conv1 = SameConv(3, 16, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.stack1 = IdentityBlock(16)
        self.stack2 = DownBlock(16, 32)
        self.stack3 = DownBlock(32, 64)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x.permute(0, 3, 1, 2))))
        return self.fc(self.stack3(self.stack2(self.stack1(h))).mean(dim=(2, 3)))


class FcBnRelu(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.dense = nn.Linear(cin, cout)
        self.bn = nn.BatchNorm1d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.dense(x)))


class FcAutoencoder(nn.Module):
    """fc_autoencoder.ax: anomaly detection, [N, 640] -> [N, 640] reconstruction."""
    input_shape, classes = (640,), None

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(FcBnRelu(640, 128), *[FcBnRelu(128, 128) for _ in range(3)],
                                     FcBnRelu(128, 8))
        self.decoder = nn.Sequential(FcBnRelu(8, 128), *[FcBnRelu(128, 128) for _ in range(3)])
        self.out = nn.Linear(128, 640)

    def forward(self, x):
        return self.out(self.decoder(self.encoder(x)))


TWINS = {"ds_cnn": DsCnn, "mobilenet_v1_025": MobileNetV1, "resnet8": ResNet8,
         "fc_autoencoder": FcAutoencoder}


def synthetic(twin, count, rng):
    """(inputs [count, *input_shape] float32, targets) of the twin's task:
    class labels (int64) for a classifier, the inputs themselves for the
    autoencoder.  Values stay within about [-1, 1], as the firmware
    harness's fixed input pattern (examples/firmware/main.c) does."""
    shape = twin.input_shape
    size = int(np.prod(shape))
    templates = np.random.default_rng(1234).uniform(-0.6, 0.6, (max(twin.classes or 1, 1), size))
    if twin.classes is None:
        basis = np.random.default_rng(99).standard_normal((8, size)) / math.sqrt(8)
        x = np.tanh(rng.standard_normal((count, 8)) @ basis) * 0.8 + 0.05 * rng.standard_normal((count, size))
        x = x.astype(np.float32).reshape((count,) + shape)
        return x, x
    labels = rng.integers(0, twin.classes, count)
    x = templates[labels] + 0.3 * rng.standard_normal((count, size))
    return x.astype(np.float32).reshape((count,) + shape), labels.astype(np.int64)


def state_dict_for_axc(module):
    """The module's state_dict without BatchNorm's step counters."""
    return {k: v for k, v in module.state_dict().items() if not k.endswith("num_batches_tracked")}


def macs(twin):
    """Multiply-accumulates of one inference (batch 1) of the twin: its
    convolutions' and dense layers' (BatchNorm, pooling and adds not counted)."""
    total = [0]

    def count(module, inputs, output):
        if isinstance(module, nn.Conv2d):
            kh, kw = module.kernel_size
            total[0] += output.numel() * (module.in_channels // module.groups) * kh * kw
        elif isinstance(module, nn.Linear):
            total[0] += output.numel() * module.in_features

    hooks = [m.register_forward_hook(count) for m in twin.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    twin.eval()
    with torch.no_grad():
        twin(torch.zeros((1,) + twin.input_shape))
    for h in hooks:
        h.remove()
    return total[0]
