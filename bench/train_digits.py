"""Seconds per epoch of the digits CNN (tests/train/drift.py's model: two 3x3 convs with
ReLU and 2x2 max pooling, a dense layer; batch 32, cross_entropy, Adam lr 1e-3) on one
thread, four ways (docs/training.md#the-training-loop, issue 36):
  axc train            the compiled step (built through the run cache, warm)
  axc train --interp   the reference interpreter
  C step               `axc --train` + cc -O2 + a loop calling <name>_train_step
  PyTorch eager        zero_grad, forward, F.cross_entropy, backward, Adam.step()
The data are 1792 8x8 digits (56 batches): scikit-learn's where installed, else
drift.py's synthetic ones.  The axc train figures come from its own last progress
line (steps per second since its loop began: the build and loading not counted).
Timings are printed, never judged.  Usage: python3 bench/train_digits.py [--epochs E]"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "train"))
import drift  # noqa: E402
import run as tr  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch"))
import safetensors_io  # noqa: E402

BUILD = os.environ.get("AXC_BUILD", os.path.join(HERE, "..", "build"))
AXC = os.path.join(BUILD, "bin", "axc")
BATCH, BATCHES = 32, 56

MAIN = r"""
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "m.h"
int main(int argc, char **argv)
{
    int epochs = atoi(argv[1]);
    FILE *f = fopen(argv[2], "rb");
    static float x[%(n)d * 64];
    static int64_t t[%(n)d];
    if (!f || fread(x, sizeof x, 1, f) != 1 || fread(t, sizeof t, 1, f) != 1) return 1;
    fclose(f);
    void *state = aligned_alloc(64, (M_STATE_BYTES + 63) / 64 * 64);
    m_state_init(state);
    struct timespec a, b;
    double loss = 0;
    m_train_step(state, x, t, NULL);   /* warm-up */
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int e = 0; e < epochs; e++)
        for (int s = 0; s < %(batches)d; s++) loss += m_train_step(state, x + s * %(batch)d * 64, t + s * %(batch)d, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%%.6f %%g\n", ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec)) / epochs, loss);
    return 0;
}
"""


def axc_epoch(d, extra, epochs):
    cmd = [AXC, "train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--input", f"x={d}/x.npy",
           "--target", f"{d}/t.npy", "--loss=cross_entropy", "--optimizer=adam", "--lr=1e-3",
           f"--epochs={epochs}", *extra, "--save-weights", f"{d}/w.safetensors"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, AXRT_THREADS="1"))
    if r.returncode:
        sys.exit(r.stderr)
    rate = float(re.findall(r"([0-9.]+) steps/s", r.stdout)[-1])
    return BATCHES / rate


def c_epoch(d, epochs):
    subprocess.run([AXC, "--train", f"{d}/m.ax", "--weights", f"{d}/init.safetensors", "--loss=cross_entropy",
                    "--optimizer=adam", "--lr=1e-3", "-o", f"{d}/m.c"], check=True)
    with open(f"{d}/main.c", "w") as f:
        f.write(MAIN % {"n": BATCH * BATCHES, "batches": BATCHES, "batch": BATCH})
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-O2", "-I", d, "-I", f"{BUILD}/include", f"{d}/main.c",
                    f"{d}/m.c", f"{BUILD}/lib/libaxrt.a", "-lm", "-lpthread", "-o", f"{d}/step"], check=True)
    r = subprocess.run([f"{d}/step", str(epochs), f"{d}/data.bin"], capture_output=True, text=True, check=True,
                       env=dict(os.environ, AXRT_THREADS="1"))
    return float(r.stdout.split()[0])


def torch_epoch(init, x, t, epochs):
    torch.set_num_threads(1)
    twin = drift.DigitsCnn()
    twin.load_state_dict(init)
    opt = torch.optim.Adam(twin.parameters(), lr=1e-3)
    xs = [torch.from_numpy(x[s * BATCH:(s + 1) * BATCH]) for s in range(BATCHES)]
    ts = [torch.from_numpy(t[s * BATCH:(s + 1) * BATCH]) for s in range(BATCHES)]
    a = time.perf_counter()
    for _ in range(epochs):
        for xb, tb in zip(xs, ts):
            opt.zero_grad()
            F.cross_entropy(twin(xb), tb).backward()
            opt.step()
    return (time.perf_counter() - a) / epochs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    torch.manual_seed(3)
    x, t = drift.digits(rng, BATCH * BATCHES)
    twin = drift.DigitsCnn()
    init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/m.ax", "w").write(drift.SRC)
        safetensors_io.write(f"{d}/init.safetensors", init)
        np.save(f"{d}/x.npy", x)
        np.save(f"{d}/t.npy", t)
        with open(f"{d}/data.bin", "wb") as f:
            f.write(x.tobytes() + t.tobytes())
        axc_epoch(d, [], 1)   # builds (or finds) the cached step
        rows = [("axc train (compiled step)", axc_epoch(d, [], args.epochs)),
                ("axc train --interp", axc_epoch(d, ["--interp"], 1)),
                ("C step (axc --train, cc -O2)", c_epoch(d, args.epochs)),
                ("PyTorch eager", torch_epoch(init, x, t, args.epochs))]
    torch_s = rows[-1][1]
    print(f"| digits CNN, {BATCHES} batches of {BATCH}, Adam, 1 thread | s/epoch | PyTorch / it |")
    print("|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {s:.4f} | {torch_s / s:.2f}x |")


if __name__ == "__main__":
    main()
