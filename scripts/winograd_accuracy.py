"""The accuracy table of Winograd convolution (docs/performance.md#winograd-convolution):
for every 3x3 layer of ResNet-18 at 224x224, the max error of axc's Winograd
F(4x4,3x3) and F(2x2,3x3), axc's direct convolution and PyTorch's Float32
convolution against a Float64 reference, each as max |y - ref| / max |ref|.
The layers run on torchvision's initialisation (Kaiming normal, fan_out)
over post-ReLU inputs (|N(0, 1)|, what a BatchNorm + ReLU hands on), one
seed per layer.  axc's kernels are called through ctypes on a shared copy of
build/lib/libaxrt.a (the calls the generated code makes, on the ISA the
runtime picks; AXRT_ISA forces one).  Stride-2 layers have no Winograd form.

  python3 scripts/winograd_accuracy.py [BUILD_DIR]     prints a Markdown table
"""
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F


class ConvParams(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("n", "h", "w", "c", "oh", "ow", "oc", "kh", "kw", "stride_h",
                                            "stride_w", "dilation_h", "dilation_w", "pad_top", "pad_left",
                                            "groups")]


def resnet18_3x3_layers():
    """(name, image size, cin, cout, stride) of each 3x3 conv, in order."""
    layers, size, cin = [], 56, 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            layers.append((f"layer{stage}.{block}.conv1", size, cin, cout, stride))
            size //= stride
            layers.append((f"layer{stage}.{block}.conv2", size, cout, cout, 1))
            cin = cout
    return layers


def load_runtime(build):
    tmp = tempfile.mkdtemp(prefix="axc_wino_")
    so = os.path.join(tmp, "libaxrt.so")
    subprocess.run(["cc", "-shared", "-o", so, "-Wl,--whole-archive", os.path.join(build, "lib", "libaxrt.a"),
                    "-Wl,--no-whole-archive", "-lm", "-lpthread"], check=True)
    lib = ctypes.CDLL(so)
    lib.axrt_isa_name.restype = ctypes.c_char_p
    lib.axrt_winograd_packed_elems.restype = ctypes.c_size_t
    lib.axrt_winograd_scratch_elems.restype = ctypes.c_size_t
    return lib


def ptr(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def axc_conv(lib, x, w, p, m):
    """x NHWC float32, w [oc, c, 3, 3]; m = 0 (direct), 2 or 4 (Winograd)."""
    y = np.zeros((p.n, p.oh, p.ow, p.oc), np.float32)
    if m == 0:
        packed = np.zeros(w.size, np.float32)
        lib.axrt_pack_conv2d_f32(ptr(w), ptr(packed), ctypes.byref(p))
        lib.axrt_conv2d_packed_ep_f32(ptr(x), ptr(packed), None, None, 0, ptr(y), ctypes.byref(p))
        return y
    u = np.zeros(lib.axrt_winograd_packed_elems(ctypes.byref(p), m), np.float32)
    scratch = np.zeros(lib.axrt_winograd_scratch_elems(ctypes.byref(p), m) + 1, np.float32)
    lib.axrt_pack_winograd_f32(ptr(w), ptr(u), ctypes.byref(p), m)
    lib.axrt_conv2d_winograd_f32(ptr(x), ptr(u), None, None, 0, ptr(y), ptr(scratch), m, ctypes.byref(p))
    return y


def error(y, ref):
    return float(np.abs(y.astype(np.float64) - ref).max() / np.abs(ref).max())


def main(build):
    lib = load_runtime(build)
    print(f"ISA {lib.axrt_isa_name().decode()}; error = max |y - ref| / max |ref|, ref in Float64\n")
    print("| layer | input | stride | Winograd F(4,3) | Winograd F(2,3) | axc direct | PyTorch Float32 |")
    print("|---|---|---|---|---|---|---|")
    for i, (name, size, cin, cout, stride) in enumerate(resnet18_3x3_layers()):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(1, size, size, cin, generator=g).abs()
        w = torch.randn(cout, cin, 3, 3, generator=g) * (2.0 / (cout * 9)) ** 0.5
        ref = F.conv2d(x.double().permute(0, 3, 1, 2), w.double(), stride=stride, padding=1)
        ref = ref.permute(0, 2, 3, 1).numpy()
        torch32 = F.conv2d(x.permute(0, 3, 1, 2), w, stride=stride, padding=1).permute(0, 2, 3, 1).numpy()
        oh = (size + 2 - 3) // stride + 1
        p = ConvParams(1, size, size, cin, oh, oh, cout, 3, 3, stride, stride, 1, 1, 1, 1, 1)
        xn, wn = np.ascontiguousarray(x.numpy()), np.ascontiguousarray(w.numpy())
        direct = error(axc_conv(lib, xn, wn, p, 0), ref)
        wino = [error(axc_conv(lib, xn, wn, p, m), ref) if stride == 1 else None for m in (4, 2)]
        cells = [f"{e:.2e}" if e is not None else "—" for e in wino]
        print(f"| {name} | {size}×{size}×{cin} | {stride} | {cells[0]} | {cells[1]} | {direct:.2e} | "
              f"{error(torch32, ref):.2e} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build")
