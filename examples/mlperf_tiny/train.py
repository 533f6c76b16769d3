"""Trains the PyTorch twins of the MLPerf Tiny models (twins.py) briefly on
synthetic data and writes, for each model M, what the firmware build needs:

    OUT/M.safetensors   the trained parameters under the .ax model's names
    OUT/M_cal.npy       16 held-out samples [16, 1, *input], for --calibrate

Usage: python3 train.py [--out DIR] [--steps N] [--axc AXC] [MODEL ...]
(default: all four models, 60 Adam steps of batch 32 each, OUT = .).
With --axc, the .ax model compiled with the trained weights (`AXC run`) is
run on 4 held-out samples and compared with the twin in eval mode; the
script fails if they differ by more than 1e-4 of the largest output."""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import twins  # noqa: E402
from axc_torch import save_safetensors  # noqa: E402

BATCH = 32


def train(name, steps, rng):
    """The twin of `name` after `steps` Adam steps, in eval mode; prints its loss."""
    torch.manual_seed(0)
    twin = twins.TWINS[name]()
    opt = torch.optim.Adam(twin.parameters(), lr=3e-3)
    x, t = twins.synthetic(twin, BATCH * 16, rng)
    started = time.time()
    for step in range(steps):
        k = step % 16
        xb, tb = torch.from_numpy(x[k * BATCH:(k + 1) * BATCH]), torch.from_numpy(t[k * BATCH:(k + 1) * BATCH])
        out = twin(xb)
        loss = F.mse_loss(out, tb) if twin.classes is None else F.cross_entropy(out, tb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    twin.eval()
    xv, tv = twins.synthetic(twin, 256, rng)
    with torch.no_grad():
        out = twin(torch.from_numpy(xv))
    if twin.classes is None:
        quality = "held-out reconstruction MSE %.4f" % F.mse_loss(out, torch.from_numpy(tv)).item()
    else:
        quality = "held-out accuracy %.1f %%" % (100 * (out.argmax(1).numpy() == tv).mean())
    print(f"{name}: {steps} steps in {time.time() - started:.1f} s, last loss {loss.item():.4f}, {quality}")
    return twin


def check_against_axc(name, twin, weights, axc, rng):
    """Largest |axc run - twin| over 4 held-out samples, relative to the largest output."""
    x, _ = twins.synthetic(twin, 4, rng)
    worst, largest = 0.0, 0.0
    with tempfile.TemporaryDirectory() as d:
        for i in range(len(x)):
            np.save(f"{d}/x.npy", x[i:i + 1])
            subprocess.run([axc, "run", os.path.join(HERE, name + ".ax"), "--weights", weights,
                            "--input", f"x={d}/x.npy", "--output", f"{d}/y.npy"], check=True,
                           stdout=subprocess.DEVNULL)
            with torch.no_grad():
                ref = twin(torch.from_numpy(x[i:i + 1])).numpy()
            worst = max(worst, float(np.abs(np.load(f"{d}/y.npy") - ref).max()))
            largest = max(largest, float(np.abs(ref).max()))
    print(f"{name}: axc run vs PyTorch twin: max abs difference {worst:.3g} ({worst / largest:.3g} of max |output|)")
    return worst <= 1e-4 * largest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=list(twins.TWINS))
    ap.add_argument("--out", default=".")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--axc")
    args = ap.parse_args()
    torch.set_num_threads(1)
    ok = True
    for name in args.models:
        if name not in twins.TWINS:
            sys.exit(f"train.py: unknown model {name!r} (known: {', '.join(twins.TWINS)})")
        rng = np.random.default_rng(5)
        twin = train(name, args.steps, rng)
        weights = os.path.join(args.out, name + ".safetensors")
        save_safetensors(twins.state_dict_for_axc(twin), weights)
        cal, _ = twins.synthetic(twin, 16, rng)
        np.save(os.path.join(args.out, name + "_cal.npy"), cal[:, None])
        if args.axc:
            ok = check_against_axc(name, twin, weights, args.axc, rng) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
