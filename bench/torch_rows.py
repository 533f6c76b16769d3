"""The benchmark rows in PyTorch, and the PyTorch side of `make bench`.

Each row's module uses the parameter names axc gives the same model
(docs/language.md#models), so one safetensors file feeds every system.

The whole-model rows M1-M5 come from gen_models.py (torchvision networks
and a Transformer encoder), whose .ax is generated and whose parameter names
axc gets renamed.

  prepare(data_dir, row)
                     writes ROW.weights.safetensors (seeded parameters under
                     axc's names, with non-trivial norm statistics),
                     ROW.torch.safetensors (the same under PyTorch's names),
                     ROW.io.safetensors (input "x", reference output "ref"
                     computed in float64), ROW.onnx (the twin exported for the
                     ONNX-fed peers), ROW.meta.json (FLOP) and, for M rows,
                     ROW.ax
  python3 torch_rows.py DATA_DIR THREADS
                     the timing worker: the line protocol of harness.c for
                     system "pytorch" (eager, inference_mode, THREADS threads)
"""
import json
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

import gen_models

SEED = 20240601


class Mlp(nn.Module):
    """R1/R2: Dense(784 => 256, relu) -> Dense(256 => 10, softmax); axc names them "0", "1"."""

    def __init__(self):
        super().__init__()
        self.add_module("0", nn.Linear(784, 256))
        self.add_module("1", nn.Linear(256, 10))

    def forward(self, x):
        hidden = torch.relu(getattr(self, "0")(x))
        return torch.softmax(getattr(self, "1")(hidden), dim=-1)


class ResBlock(nn.Module):
    """R3: ResNet-18 basic block; takes and returns NHWC, computes channels_last."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(64)

    def forward(self, x):
        nchw = x.permute(0, 3, 1, 2)  # a channels_last view, no copy
        h = torch.relu(self.bn1(self.conv1(nchw)))
        return torch.relu(self.bn2(self.conv2(h)) + nchw).permute(0, 2, 3, 1)


class Norm(nn.Module):
    """R5: LayerNorm(768) as the single statement "0" of a chain."""

    def __init__(self):
        super().__init__()
        self.add_module("0", nn.LayerNorm(768))

    def forward(self, x):
        return getattr(self, "0")(x)


class Softmax(nn.Module):
    """R6: softmax over the last dim."""

    def forward(self, x):
        return torch.softmax(x, dim=-1)


class Depthwise(nn.Module):
    """R7: depthwise 3x3 convolution + BatchNorm + ReLU6 as the chain "0", "1";
    takes and returns NHWC, computes channels_last."""

    def __init__(self):
        super().__init__()
        self.add_module("0", nn.Conv2d(384, 384, 3, padding=1, groups=384, bias=False))
        self.add_module("1", nn.BatchNorm2d(384))

    def forward(self, x):
        h = getattr(self, "1")(getattr(self, "0")(x.permute(0, 3, 1, 2)))
        return torch.nn.functional.relu6(h).permute(0, 2, 3, 1)


def bert_layer():
    """R4: names match the .ax model by construction (its comment says so)."""
    return nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)


# row: (.ax file stem in examples/ for R rows, the model name of gen_models
# for M rows (its .ax is generated), module factory, input shape)
ROWS = {
    "R1": ("r1_mlp_b1", Mlp, (1, 784)),
    "R2": ("r2_mlp_b32", Mlp, (32, 784)),
    "R3": ("r3_resnet_block", ResBlock, (1, 56, 56, 64)),
    "R4": ("r4_bert_layer", bert_layer, (1, 128, 768)),
    "R5": ("r5_layernorm", Norm, (32, 768)),
    "R6": ("r6_softmax", Softmax, (32, 10000)),
    "R7": ("r7_depthwise", Depthwise, (1, 14, 14, 384)),
}
for _row, _name in (("M1", "resnet18"), ("M2", "mobilenet_v2"), ("M3", "efficientnet_b0"), ("M4", "minilm_encoder"),
                    ("M5", "mobilenet_v3_large")):
    ROWS[_row] = (_name, *gen_models.models()[_name])


def save_safetensors(path, tensors):
    """Writes float32 tensors (name -> array) as safetensors."""
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        blob = np.ascontiguousarray(value, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(value)), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def load_safetensors(path):
    """Reads an F32 safetensors file into name -> torch tensor."""
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8:8 + length]), raw[8 + length:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"]).copy())
    return out


def _perturb_norms(module, gen):
    """Norm layers start as identities; give them statistics worth checking."""
    for sub in module.modules():
        if isinstance(sub, (nn.BatchNorm2d, nn.LayerNorm)):
            sub.weight.data = torch.rand(sub.weight.shape, generator=gen) + 0.5
            sub.bias.data = torch.rand(sub.bias.shape, generator=gen) - 0.5
        if isinstance(sub, nn.BatchNorm2d):
            sub.running_mean = torch.rand(sub.running_mean.shape, generator=gen) - 0.5
            sub.running_var = torch.rand(sub.running_var.shape, generator=gen) + 0.5


def parameters(module):
    return {k: v for k, v in module.state_dict().items() if not k.endswith("num_batches_tracked")}


def count_flop(module, x):
    """FLOP of one forward pass (2 per multiply-add) of convolutions, linear
    layers and attention, counted by hooks; elementwise work is not counted.
    A Transformer encoder layer is counted whole (its inference fast path
    does not call its submodules)."""
    total = [0]
    layers = [m for m in module.modules() if isinstance(m, nn.TransformerEncoderLayer)]
    inside = {id(sub) for layer in layers for sub in layer.modules()}

    def hook(m, inputs, out):
        if isinstance(m, nn.TransformerEncoderLayer):
            n, length, d = inputs[0].shape
            ff = m.linear1.out_features
            total[0] += 2 * n * length * (4 * d * d + 2 * d * ff) + 2 * 2 * n * length * length * d
        elif id(m) in inside:
            return
        elif isinstance(m, nn.Conv2d):
            total[0] += 2 * out.numel() * m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, nn.Linear):
            total[0] += 2 * out.numel() * m.in_features
    handles = [m.register_forward_hook(hook) for m in module.modules()]
    with torch.inference_mode():
        module(x)
    for h in handles:
        h.remove()
    return total[0]


def prepare(data_dir, row):
    """Writes the row's files (deterministic from SEED)."""
    name, factory, shape = ROWS[row]
    seed = SEED + int(row[1:]) + (100 if row[0] == "M" else 0)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    module = factory().eval()
    _perturb_norms(module, gen)
    x = torch.rand(shape, generator=gen) * 2 - 1
    torch_weights = {k: v.float().numpy() for k, v in parameters(module).items()}
    if row[0] == "M":
        source, axc_weights = gen_models.to_ax(name, module)
        with open(f"{data_dir}/{row}.ax", "w") as f:
            f.write(source)
        axc_weights = {k: v.numpy() for k, v in axc_weights.items()}
    else:
        axc_weights = torch_weights
    with open(f"{data_dir}/{row}.meta.json", "w") as f:
        json.dump({"flop": count_flop(module, x)}, f)
    torch.onnx.export(module, (x,), f"{data_dir}/{row}.onnx", opset_version=17, input_names=["x"],
                      output_names=["y"], do_constant_folding=True)
    with torch.inference_mode():
        ref = module.double()(x.double()).float()
    save_safetensors(f"{data_dir}/{row}.weights.safetensors", axc_weights)
    save_safetensors(f"{data_dir}/{row}.torch.safetensors", torch_weights)
    save_safetensors(f"{data_dir}/{row}.io.safetensors", {"x": x.numpy(), "ref": ref.numpy()})


def load_row(data_dir, row):
    """The row's module with its saved weights, and its input and reference."""
    _, factory, _ = ROWS[row]
    module = factory().eval()
    weights = load_safetensors(f"{data_dir}/{row}.torch.safetensors")
    missing, unexpected = module.load_state_dict(weights, strict=False)
    if unexpected or [k for k in missing if not k.endswith("num_batches_tracked")]:
        raise ValueError(f"{row}: weights do not match: missing {missing}, unexpected {unexpected}")
    if row in ("R3", "R7") or isinstance(module, gen_models.Nhwc):
        module = module.to(memory_format=torch.channels_last)
    io = load_safetensors(f"{data_dir}/{row}.io.safetensors")
    return module, io["x"], io["ref"]


def worker(data_dir, threads):
    """Answers harness.c's commands for system "pytorch", one line each."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    rows = {}
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["info"]:
            print(f"PyTorch {torch.__version__}", flush=True)
            continue
        cmd, row = words[0], words[1]
        if row not in rows:
            rows[row] = load_row(data_dir, row)
        module, x, ref = rows[row]
        with torch.inference_mode():
            if cmd == "check":
                y = module(x)
                rel = ((y - ref).abs().max() / ref.abs().max()).item()
                print(f"{'ok' if rel <= 1e-4 else 'fail'} {rel:.3g}", flush=True)
            elif cmd == "time":
                module(x)
                times = []
                for _ in range(int(words[3])):
                    t0 = time.perf_counter_ns()
                    module(x)
                    times.append(time.perf_counter_ns() - t0)
                print(f"{np.median(times):.0f}", flush=True)


if __name__ == "__main__":
    worker(sys.argv[1], int(sys.argv[2]))
