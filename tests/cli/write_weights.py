"""write_weights.py KIND FILE...: safetensors files for small.ax (fc1: 5 => 4,
fc2: 4 => 2).  KIND "small": exactly its parameters.  KIND "broken": fc1.bias
misshapen, fc2.bias missing and an extra bogus.weight, so one run of axc
must name all three.  KIND "perturb": rewrites FILE (written by axc
--save-weights) with noise added to every float tensor, so that zero-initialised
biases and norms become non-zero too.  Several FILEs: each as if alone (one
Python start for all: importing safetensors_io imports PyTorch)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))
import safetensors_io  # noqa: E402


def main(kind, path):
    rng = np.random.default_rng(2)
    if kind == "perturb":
        tensors = safetensors_io.read(path)
        for name, t in tensors.items():
            if t.dtype.kind == "f":
                tensors[name] = (t + 0.1 * rng.standard_normal(t.shape)).astype(t.dtype)
        safetensors_io.write(path, tensors)
        return
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    tensors = {"fc1.weight": f32(4, 5), "fc1.bias": f32(4), "fc2.weight": f32(2, 4), "fc2.bias": f32(2)}
    if kind == "broken":
        tensors["fc1.bias"] = f32(5)
        del tensors["fc2.bias"]
        tensors["bogus.weight"] = f32(3)
    safetensors_io.write(path, tensors)


if __name__ == "__main__":
    for file in sys.argv[2:]:
        main(sys.argv[1], file)
