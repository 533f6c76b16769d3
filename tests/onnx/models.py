"""Models exported by torch.onnx.export here (opsets 13 and 17), compiled to C
by `axc run` and compared with PyTorch (max abs error <= 1e-4).  Small input
sizes keep it within the 2-core budget.  Also a model exported with a symbolic
batch dimension, refused without --shape and compiled with it."""
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

try:
    import torch
    import torchvision
    import onnx  # noqa: F401  (torch.onnx.export needs it)
except ImportError:
    torch = None

TOL = 1e-4


def transformer():
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                             batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2), torch.randn(2, 8, 32)


def transformer_gelu():
    """GELU layers, which opsets before 20 export as Div, Erf, Add, Mul, Mul
    (axc's fuse_gelu makes them the dense layers' epilogue)."""
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                             activation="gelu", batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=1), 3 * torch.randn(2, 8, 32)


def resnet18():
    return torchvision.models.resnet18(num_classes=10), torch.randn(1, 3, 32, 32)


def mobilenet_v2():
    return torchvision.models.mobilenet_v2(num_classes=10, width_mult=0.5), torch.randn(1, 3, 32, 32)


def mobilenet_v3_small():
    """HardSwish and HardSigmoid (opset 17): the conv, depthwise and dense
    layers' hardswish epilogue, the squeeze-excitation's gate."""
    return torchvision.models.mobilenet_v3_small(num_classes=10), torch.randn(1, 3, 32, 32)


def efficientnet_b0():
    return torchvision.models.efficientnet_b0(num_classes=10), torch.randn(1, 3, 32, 32)


def shufflenet_v2():
    return torchvision.models.shufflenet_v2_x0_5(num_classes=10), torch.randn(1, 3, 32, 32)


def densenet121():
    """torchvision's DenseNet-121 (blocks 6, 12, 24, 16): its dense layers
    concatenate every earlier feature map, Concats of up to 25 inputs in
    one node (once refused over 16).  64x64 keeps it within the budget."""
    return torchvision.models.densenet121(num_classes=10), torch.randn(1, 3, 64, 64)


def squeezenet():
    return torchvision.models.squeezenet1_1(num_classes=10), torch.randn(1, 3, 48, 48)


def upsample():
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Upsample(scale_factor=2, mode="nearest"),
                            torch.nn.Conv2d(4, 4, 3), torch.nn.Upsample(scale_factor=2, mode="bilinear"),
                            torch.nn.Upsample(size=(20, 30), mode="bilinear", align_corners=True),
                            torch.nn.Upsample(size=(9, 7), mode="nearest"))
    return m, torch.randn(1, 3, 8, 8)


def conv_transpose():
    m = torch.nn.Sequential(torch.nn.ConvTranspose2d(3, 5, 3, stride=2, padding=1, output_padding=1),
                            torch.nn.ReLU(), torch.nn.ConvTranspose2d(5, 4, (3, 2), dilation=2),
                            torch.nn.ConvTranspose2d(4, 2, 4, stride=(1, 3), padding=(2, 1)))
    return m, torch.randn(1, 3, 6, 7)


def pads():
    m = torch.nn.Sequential(torch.nn.ReflectionPad2d(2), torch.nn.ReplicationPad2d((1, 2, 0, 3)),
                            torch.nn.ConstantPad2d(1, 0.5), torch.nn.Conv2d(3, 2, 3))
    return m, torch.randn(1, 3, 5, 6)


class FirstOutput(torch.nn.Module if torch else object):
    """The first output of a module that returns a tuple (an RNN's Y)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)[0]


def rnn():
    # 20 steps: the unrolled Y is concatenated in pieces of at most 16
    return FirstOutput(torch.nn.RNN(3, 5, batch_first=True)), torch.randn(2, 20, 3)


def gru():
    return FirstOutput(torch.nn.GRU(3, 5, num_layers=2, bidirectional=True, batch_first=True)), torch.randn(2, 7, 3)


class LastHidden(torch.nn.Module if torch else object):
    """A classifier on an LSTM's final hidden state h_n (its Y_h)."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 6, num_layers=2, batch_first=True)
        self.fc = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(self.lstm(x)[1][0][-1])


def lstm():
    return LastHidden(), torch.randn(3, 9, 4)


class FinalStates(torch.nn.Module if torch else object):
    """A bidirectional LSTM's h_n and c_n side by side (Y_h and Y_c)."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 5, bidirectional=True, batch_first=True)

    def forward(self, x):
        _, (h, c) = self.lstm(x)
        return torch.cat([h, c], dim=-1)


def lstm_states():
    return FinalStates(), torch.randn(2, 6, 3)


MODELS = [("densenet121", densenet121, (13,)), ("gru", gru, (13, 17)), ("lstm", lstm, (13, 17)), ("lstm_states", lstm_states, (13,)), ("rnn", rnn, (14,)), ("pads", pads, (13,)), ("conv_transpose", conv_transpose, (13,)), ("upsample", upsample, (11, 13)), ("efficientnet_b0", efficientnet_b0, (13,)), ("shufflenet_v2", shufflenet_v2, (13,)),
          ("squeezenet1_1", squeezenet, (13,)), ("resnet18", resnet18, (13,)), ("mobilenet_v2", mobilenet_v2, (13, 17)),
          ("mobilenet_v3_small", mobilenet_v3_small, (17,)),
          ("transformer_encoder", transformer, (13, 17)), ("transformer_gelu", transformer_gelu, (17,))]


def check(name, build, opset, tmp):
    torch.manual_seed(0)
    model, x = build()
    model.eval()
    # random batch-norm statistics so that folding them is tested too
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    path = os.path.join(tmp, f"{name}_{opset}.onnx")
    with warnings.catch_warnings():   # with grad on: no fused fast path to export
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"],
                          output_names=["output"])
    with torch.no_grad():
        want = model(x).numpy()
    widest = max_concat_inputs(path)
    if name.startswith("densenet") and widest <= 16:
        print(f"FAIL: onnx model {name}: its widest Concat has {widest} inputs, expected over 16")
        return 1
    xin, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xin, x.numpy())
    r = subprocess.run([os.environ.get("AXC", "axc"), "run", path, "--input", f"input={xin}",
                        "--output", out], capture_output=True, text=True, timeout=600)
    label = f"onnx model {name} (opset {opset}) compiled to C matches PyTorch"
    if r.returncode != 0:
        print(f"FAIL: {label}\n  axc exit {r.returncode}: {r.stderr.strip()[:500]}")
        return 1
    got = np.load(out)
    err = float(np.abs(got.reshape(want.shape) - want).max()) if got.size == want.size else float("inf")
    if err > TOL:
        print(f"FAIL: {label}\n  max abs error {err:.3g}, shape {got.shape} vs {want.shape}")
        return 1
    if "gelu" in name:   # the Erf chain became the dense layers' epilogue (fuse_gelu)
        ir = subprocess.run([os.environ.get("AXC", "axc"), path, "--emit=ir"], capture_output=True, text=True).stdout
        if "act=gelu" not in ir or " erf " in ir:
            print(f"FAIL: {label}\n  the Erf GELU is not a dense layer's gelu epilogue in --emit=ir")
            return 1
    concat = f", a Concat of {widest} inputs" if widest > 16 else ""
    print(f"PASS: {label} (max abs error {err:.2g}{concat})")
    return 0


def max_concat_inputs(path):
    import onnx as onnx_lib
    m = onnx_lib.load(path)
    return max((len(n.input) for n in m.graph.node if n.op_type == "Concat"), default=0)


def symbolic_batch(tmp):
    """A model exported with a symbolic batch dimension: refused without
    --shape (the error names the input and the option), compiled with
    --shape input=2x3x16x16 and matching PyTorch at batch 2."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 5)).eval()
    x = torch.randn(2, 3, 16, 16)
    path = os.path.join(tmp, "dyn.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path, opset_version=13, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    xin, out = os.path.join(tmp, "xd.npy"), os.path.join(tmp, "yd.npy")
    np.save(xin, x.numpy())
    axc, rc = os.environ.get("AXC", "axc"), 0
    r = subprocess.run([axc, "run", path, "--input", f"input={xin}", "--output", out], capture_output=True,
                       text=True, timeout=300)
    label = "onnx symbolic batch without --shape: a located error naming the input and --shape"
    if r.returncode == 1 and "input 'input' has the symbolic dimension 0 ('batch')" in r.stderr and \
            "--shape input=1x3x16x16" in r.stderr:
        print(f"PASS: {label}")
    else:
        print(f"FAIL: {label}\n  exit {r.returncode}: {r.stderr.strip()[:400]}")
        rc = 1
    r = subprocess.run([axc, "run", path, "--shape", "input=2x3x16x16", "--input", f"input={xin}", "--output", out],
                       capture_output=True, text=True, timeout=300)
    label = "onnx symbolic batch with --shape input=2x3x16x16 compiled to C matches PyTorch"
    with torch.no_grad():
        want = model(x).numpy()
    if r.returncode != 0:
        print(f"FAIL: {label}\n  axc exit {r.returncode}: {r.stderr.strip()[:400]}")
        return 1
    got = np.load(out)
    err = float(np.abs(got - want).max()) if got.shape == want.shape else float("inf")
    if err > TOL:
        print(f"FAIL: {label}\n  max abs error {err:.3g}, shape {got.shape} vs {want.shape}")
        return 1
    print(f"PASS: {label} (max abs error {err:.2g})")
    return rc


def main():
    if torch is None:
        print("SKIP: onnx models (needs python3-torch, python3-torchvision, python3-onnx)")
        return 0
    only = os.environ.get("AXC_ONNX_MODELS")
    rc = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, build, opsets in MODELS:
            if only and name not in only.split(","):
                continue
            for opset in opsets:
                rc |= check(name, build, opset, tmp)
        if not only or "symbolic_batch" in only.split(","):
            rc |= symbolic_batch(tmp)
    return rc


if __name__ == "__main__":
    sys.exit(main())
