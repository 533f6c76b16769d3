"""Regenerates the quantised ONNX fixtures of tests/onnx/quantised.py in
tests/onnx/qmodels/ (committed, a few KB each, so that the test needs no
network).  Two steps, two Pythons:

  /usr/bin/python3 tests/onnx/qmodels_gen.py export DIR
      small torchvision-style float models (PyTorch, torch.onnx.export) and
      their inputs and calibration samples into DIR
  VENV/bin/python tests/onnx/qmodels_gen.py quantize DIR tests/onnx/qmodels
      (VENV from `sh bench/venv.sh VENV`: onnxruntime and onnx) quantises
      each with onnxruntime.quantization.quantize_static in both formats
      (QDQ and QOperator), per tensor and per channel, runs ONNX Runtime on
      the input and writes NAME.onnx, NAME.in.npy and NAME.ort.npz (per
      output: ORT's integers (.q), those of ORT with graph optimisations
      off (.q_unoptimised: a QDQ graph then runs DequantizeLinear, the float
      op and QuantizeLinear one by one), the scale and the zero point of its
      last DequantizeLinear)

reduce_range=True (7-bit weights): on an x86 CPU without VNNI, ORT's u8s8
kernels (vpmaddubsw) saturate pairs of products at int16, so without it
ORT's integers are not the products' (seen here: up to 20 LSB off its own
unoptimised QDQ path); with 7-bit weights no pair can saturate.

Seeds are fixed; the fixtures are whatever this script writes."""
import os
import sys

import numpy as np

SHAPE = (4, 3, 12, 12)


def models():
    import torch
    import torch.nn as nn
    return {**conv_models(torch, nn), **other_models(torch, nn)}


def conv_models(torch, nn):
    """The ResNet and MobileNetV2 blocks."""

    class Block(nn.Module):
        """ResNet's basic block: conv-BN-ReLU, conv-BN, residual add, ReLU."""

        def __init__(self, c):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(y)) + x)

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(2))
            self.block = Block(8)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            y = self.block(self.stem(x))
            return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))

    class TinyMobile(nn.Module):
        """MobileNetV2's inverted residual: expand, depthwise, project, skip."""

        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU6())
            self.expand = nn.Sequential(nn.Conv2d(8, 16, 1), nn.ReLU6())
            self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU6())
            self.project = nn.Conv2d(16, 8, 1)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            x = self.stem(x)
            x = x + self.project(self.dw(self.expand(x)))
            return self.fc(x.mean((2, 3)))

    return {"qresnet": TinyResNet, "qmobile": TinyMobile}


def other_models(torch, nn):
    """The MLP and SqueezeNet's fire module."""

    class TinyMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 12 * 12, 32), nn.ReLU(), nn.Linear(32, 16),
                                     nn.ReLU(), nn.Linear(16, 5))

        def forward(self, x):
            return self.net(x)

    class TinySqueeze(nn.Module):
        """SqueezeNet's fire module (squeeze, two expands, concat) and its
        classifier (conv, ReLU, global pool, Flatten: the pool's integers are
        the output)."""

        def __init__(self):
            super().__init__()
            self.squeeze = nn.Sequential(nn.Conv2d(3, 4, 1), nn.ReLU())
            self.e1, self.e3 = nn.Conv2d(4, 6, 1), nn.Conv2d(4, 6, 3, padding=1)
            self.cls = nn.Sequential(nn.Conv2d(12, 5, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())

        def forward(self, x):
            s = self.squeeze(x)
            return self.cls(torch.cat([torch.relu(self.e1(s)), torch.relu(self.e3(s))], 1))

    return {"qmlp": TinyMLP, "qsqueeze": TinySqueeze}


def export(out):
    import torch
    os.makedirs(out, exist_ok=True)
    for name, cls in models().items():
        torch.manual_seed(len(name))
        m = cls().eval()
        for mod in m.modules():   # non-trivial BatchNorm statistics
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
                mod.weight.data.uniform_(0.5, 1.5)
                mod.bias.data.uniform_(-0.2, 0.2)
        x = torch.randn(SHAPE)
        torch.onnx.export(m, x, os.path.join(out, name + ".f32.onnx"), input_names=["x"], output_names=["y"],
                          opset_version=13)
        rng = np.random.default_rng(len(name))
        np.save(os.path.join(out, name + ".calib.npy"), rng.standard_normal((32,) + SHAPE[1:]).astype(np.float32))
        np.save(os.path.join(out, name + ".in.npy"), rng.standard_normal(SHAPE).astype(np.float32))


def last_dequantize(model, output):
    """The scale and zero point of the DequantizeLinear that computes output."""
    from onnx import numpy_helper
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.output[0] == output and node.op_type == "DequantizeLinear":
            zp = inits[node.input[2]] if len(node.input) > 2 and node.input[2] else np.uint8(0)
            return float(inits[node.input[1]]), int(zp), zp.dtype
    raise SystemExit(f"{output}: not computed by a DequantizeLinear")


def quantize(src, dst):
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self, data):
            self.rows = iter([{"x": data[i:i + SHAPE[0]]} for i in range(0, len(data), SHAPE[0])])

        def get_next(self):
            return next(self.rows, None)

    os.makedirs(dst, exist_ok=True)
    for name in models_names(src):
        calib = np.load(os.path.join(src, name + ".calib.npy"))
        x = np.load(os.path.join(src, name + ".in.npy"))
        for fmt, tag in ((QuantFormat.QDQ, "qdq"), (QuantFormat.QOperator, "qop")):
            for per_channel in (False, True):
                out = f"{name}_{tag}{'_pc' if per_channel else ''}"
                path = os.path.join(dst, out + ".onnx")
                quantize_static(os.path.join(src, name + ".f32.onnx"), path, Reader(calib), quant_format=fmt,
                                per_channel=per_channel, activation_type=QuantType.QUInt8 if tag == "qop"
                                else QuantType.QInt8, weight_type=QuantType.QInt8, reduce_range=True)
                model = onnx.load(path)
                runs = []
                for level in (ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
                    opts = ort.SessionOptions()
                    opts.graph_optimization_level = level
                    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
                    runs.append(sess.run(None, {"x": x}))
                arrays = {}
                for o, y, y_ref in zip(model.graph.output, runs[0], runs[1]):
                    scale, zp, dtype = last_dequantize(model, o.name)
                    q = np.round(y / np.float32(scale)).astype(np.int64) + zp
                    arrays[o.name + ".q"] = q.astype(np.int32)
                    q = np.round(y_ref / np.float32(scale)).astype(np.int64) + zp
                    arrays[o.name + ".q_unoptimised"] = q.astype(np.int32)
                    arrays[o.name + ".scale"] = np.float32(scale)
                    arrays[o.name + ".zp"] = np.int32(zp)
                np.save(os.path.join(dst, out + ".in.npy"), x)
                np.savez(os.path.join(dst, out + ".ort.npz"), **arrays)
                print(out, os.path.getsize(path), "bytes")


def models_names(src):
    return sorted(f[:-len(".f32.onnx")] for f in os.listdir(src) if f.endswith(".f32.onnx"))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "export":
        export(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "quantize":
        quantize(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
