"""Training steps per second: axc's generated C training step (`axc --train`)
against PyTorch eager, single thread (interface.md §8, issue 18).

Model: the MLP 784-256-10 (Dense + relu, Dense) with cross_entropy, batch 32,
Adam (lr 1e-3), the same initial weights and batches in both.  axc's step is
built as users build it: the axc and libaxrt that `make install` wrote
(--stage PREFIX), `cc -O3` with `pkg-config --cflags --libs axrt`, and timed in a loop of
forward + loss + backward + update calls; PyTorch's step is
zero_grad, forward, F.cross_entropy, backward, optimizer.step() with
torch.set_num_threads(1).  Both run the same number of steps after a warm-up;
the reported figure is the median over rounds of steps per second.  The
script checks first that both reach the same weights after the timed steps
(relative 1e-3: float32 over hundreds of Adam steps) and prints the Markdown
rows; timings are reported, never judged.  --smoke: a few steps, the check
only (PASS/FAIL lines for the bench suite).

Peak training memory (issue 18): axc's is known at compile time, the step's
arena (`training peak without remat` of --mem-report) plus its state
(parameters and Adam's moments, `training state`).  PyTorch's is measured on
steps after a warm-up step, two ways: (1) torch.profiler with
profile_memory=True, each op's self CPU allocation counted at its start and
each net free at its end; the peak of that running sum over three steps plus the tensors live
before the step (parameters, their .grad, Adam's state; like axc's figure,
not the batch) -- tensor
bytes as PyTorch's CPU allocator hands them out; (2) in a fresh process (glibc's
mmap threshold fixed at 64 KiB, so that freed tensors go back to the system
and the resident size follows the live ones) after two warm-up steps, the growth of the resident high-water mark (Linux VmHWM,
reset through /proc/self/clear_refs) over 5 more steps, added to the same
tensors live before a step: what the process really took, allocator and page
granularity included (tracemalloc does not see tensors).

  make install PREFIX=STAGE && python3 bench/train.py --stage STAGE [--steps N] [--rounds R] [--smoke]
"""
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
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
import safetensors_io  # noqa: E402

BATCH, IN, HID, OUT = 32, 784, 256, 10
SRC = (f"@axiom function mlp(x::Float32[{BATCH}, {IN}])\n    fc1 = Dense({IN} => {HID})\n"
       f"    fc2 = Dense({HID} => {OUT})\n    return fc2(relu(fc1(x)))\nend\n")

HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mlp.h"
static unsigned char state[MLP_STATE_BYTES] __attribute__((aligned(64)));
static unsigned char arena[MLP_TRAIN_ARENA_BYTES] __attribute__((aligned(64)));
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv)
{
    /* argv: x.bin t.bin batches steps rounds out.bin */
    int batches = atoi(argv[3]), steps = atoi(argv[4]), rounds = atoi(argv[5]), r, s, k;
    float *x = malloc(sizeof(float) * %(xs)d * batches);
    int64_t *t = malloc(sizeof(int64_t) * %(ts)d * batches);
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(x, sizeof(float) * %(xs)d, batches, f) != (size_t)batches) return 2;
    fclose(f);
    f = fopen(argv[2], "rb");
    if (!f || fread(t, sizeof(int64_t) * %(ts)d, batches, f) != (size_t)batches) return 2;
    fclose(f);
    mlp_state_init(state);
    for (s = 0; s < 3; s++) mlp_train_step(state, x, t, arena);      /* warm-up */
    mlp_state_init(state);
    for (r = 0; r < rounds; r++) {
        double t0 = now();
        float loss = 0;
        for (s = 0; s < steps; s++) {
            k = s %% batches;
            loss = mlp_train_step(state, x + (size_t)k * %(xs)d, t + (size_t)k * %(ts)d, arena);
        }
        printf("round %%d steps %%d seconds %%.9f loss %%.6f\n", r, steps, now() - t0, loss);
        if (r == 0) {   /* the weights after the first round, for the check */
            f = fopen(argv[6], "wb");
            for (k = 0; k < MLP_STATE_TENSORS; k++) {
                const axrt_tensor_info *ti = &mlp_state_tensors[k];
                size_t n = 1; int d;
                for (d = 0; d < ti->rank; d++) n *= (size_t)ti->dims[d];
                fwrite(state + mlp_state_offsets[k], sizeof(float), n, f);
            }
            fclose(f);
        }
    }
    return 0;
}
"""


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(IN, HID), torch.nn.Linear(HID, OUT)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def torch_rounds(init, x, t, batches, steps, rounds):
    model = Mlp()
    model.load_state_dict(init)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xs = [torch.from_numpy(x[k * BATCH:(k + 1) * BATCH]) for k in range(batches)]
    ts = [torch.from_numpy(t[k * BATCH:(k + 1) * BATCH]) for k in range(batches)]

    def step(k):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs[k]), ts[k])
        loss.backward()
        opt.step()
        return loss

    warm = Mlp()   # warm-up on a copy, so the timed run starts from init as axc's does
    warm.load_state_dict(init)
    wopt = torch.optim.Adam(warm.parameters(), lr=1e-3)
    for k in range(3):
        wopt.zero_grad()
        F.cross_entropy(warm(xs[k % batches]), ts[k % batches]).backward()
        wopt.step()
    times, weights = [], None
    for r in range(rounds):
        t0 = time.perf_counter()
        for s in range(steps):
            step(s % batches)
        times.append(time.perf_counter() - t0)
        if r == 0:
            weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return times, weights


def tensor_bytes(model, opt):
    """Bytes of the tensors a step starts with: parameters, gradients, optimizer state
    (not the batch: axc's figure leaves out the caller's input too)."""
    ts = [p for p in model.parameters()] + [p.grad for p in model.parameters() if p.grad is not None]
    ts += [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)]
    return sum(t.numel() * t.element_size() for t in ts)


def torch_profiled_peak(init, x, t):
    """Method (1) of the docstring: bytes live at the peak of an Adam step."""
    from torch.profiler import ProfilerActivity, profile
    model = Mlp()
    model.load_state_dict(init)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xb, tb = torch.from_numpy(x[:BATCH]), torch.from_numpy(t[:BATCH])

    def step():
        opt.zero_grad()
        F.cross_entropy(model(xb), tb).backward()
        opt.step()
    step()
    before = tensor_bytes(model, opt)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(3):   # the highest of three steps' peaks
            step()
    changes = []
    for e in prof.events():
        d = e.self_cpu_memory_usage
        if d:
            changes.append((e.time_range.start if d > 0 else e.time_range.end, d))
    live = peak = 0
    for _, d in sorted(changes):
        live += d
        peak = max(peak, live)
    return before + peak, before


RSS_PROBE = r"""
import sys
import torch, torch.nn.functional as F
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
from train import Mlp, BATCH, IN, OUT
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
model = Mlp()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
xb, tb = torch.randn(BATCH, IN), torch.randint(0, OUT, (BATCH,))
def step():
    opt.zero_grad()
    F.cross_entropy(model(xb), tb).backward()
    opt.step()
step(); step()   # gradients, moments and libtorch's code pages exist from here on
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")   # Linux: VmHWM := VmRSS
base = status("VmRSS:")
for _ in range(5):
    step()
print(status("VmHWM:") - base)
"""


def torch_rss_growth():
    """Method (2) of the docstring: VmHWM growth (bytes) over 5 warm steps in a fresh process."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    r = subprocess.run([sys.executable, "-c", RSS_PROBE, HERE], capture_output=True, text=True, env=env)
    return int(r.stdout.split()[-1]) if r.returncode == 0 and r.stdout.split() else None


def memory_line(peak, state, init, x, t):
    tp, before = torch_profiled_peak(init, x, t)
    rss = torch_rss_growth()
    axc = int(peak) + int(state)
    rss_text = (f"{before + rss} bytes by the resident high-water mark ({before} + its growth {rss} over 5 warm "
                "steps)" if rss is not None else "resident high-water mark not measured (needs Linux /proc)")
    text = (f"peak training memory, one step: axc {axc} bytes at compile time (arena {peak} + state {state}); "
            f"PyTorch {tp} bytes of tensors at the step's peak by its profiler ({before} live before the step), "
            f"{rss_text}")
    return text, tp > before > 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", required=True, help="the prefix `make install` wrote (bin/axc, lib/pkgconfig)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.steps, args.rounds = 4, 1
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    batches = 8
    x = rng.standard_normal((batches * BATCH, IN)).astype(np.float32)
    t = rng.integers(0, OUT, batches * BATCH).astype(np.int64)
    init = {k: v.detach().clone() for k, v in Mlp().state_dict().items()}
    with tempfile.TemporaryDirectory() as d:
        open(f"{d}/mlp.ax", "w").write(SRC)
        safetensors_io.write(f"{d}/init.safetensors", init)
        x.tofile(f"{d}/x.bin")
        t.tofile(f"{d}/t.bin")
        gen = subprocess.run([f"{args.stage}/bin/axc", "--train", f"{d}/mlp.ax", "--weights", f"{d}/init.safetensors",
                              "--loss=cross_entropy", "--optimizer=adam", "--lr=1e-3", "-o", f"{d}/mlp.c",
                              "--mem-report"], capture_output=True, text=True)
        if gen.returncode:
            sys.exit(f"axc --train failed:\n{gen.stderr}")
        peak = re.search(r"training peak without remat: (\d+)", gen.stdout).group(1)
        state = re.search(r"training state: (\d+)", gen.stdout).group(1)
        open(f"{d}/main.c", "w").write(HARNESS % {"xs": BATCH * IN, "ts": BATCH})
        env = dict(os.environ, PKG_CONFIG_PATH=f"{args.stage}/lib/pkgconfig")
        axrt = subprocess.run(["pkg-config", "--cflags", "--libs", "axrt"], check=True, capture_output=True,
                              text=True, env=env).stdout.split()
        build = subprocess.run([args.cc, "-std=c99", "-O3", "-I", d, f"{d}/main.c", f"{d}/mlp.c", *axrt,
                                "-o", f"{d}/step"], capture_output=True, text=True)
        if build.returncode:
            sys.exit(f"cc failed:\n{build.stderr}")
        run = subprocess.run([f"{d}/step", f"{d}/x.bin", f"{d}/t.bin", str(batches), str(args.steps),
                              str(args.rounds), f"{d}/w.bin"], capture_output=True, text=True,
                             env=dict(os.environ, OMP_NUM_THREADS="1"))
        if run.returncode:
            sys.exit(f"harness failed:\n{run.stderr}")
        axc_times = [float(m.group(1)) for m in re.finditer(r"seconds (\S+)", run.stdout)]
        flat = np.fromfile(f"{d}/w.bin", dtype=np.float32)
        torch_times, ref = torch_rounds(init, x, t, batches, args.steps, args.rounds)
    mem_text, mem_ok = memory_line(peak, state, init, x, t)
    names = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    at, errs = 0, {}
    for k in names:
        n = ref[k].size
        got = flat[at:at + n]
        at += n
        errs[k] = float(np.max(np.abs(got - ref[k].reshape(-1))) / np.max(np.abs(ref[k])))
    ok = max(errs.values()) <= 1e-3
    if args.smoke:
        print(f"{'PASS' if ok else 'FAIL'}: bench train smoke (axc --train vs PyTorch Adam, {args.steps} steps)")
        if not ok:
            print(f"  relative errors {errs}")
        # the figures on the result line itself: run.sh allows details only under FAIL/SKIP
        print(f"{'PASS' if mem_ok else 'FAIL'}: bench train {mem_text}")
        return 0 if ok and mem_ok else 1
    a = args.steps / float(np.median(axc_times))
    p = args.steps / float(np.median(torch_times))
    print(f"| MLP {IN}-{HID}-{OUT}, batch {BATCH}, Adam, 1 thread | axc --train | PyTorch eager | ratio |")
    print("|---|---|---|---|")
    print(f"| training steps/s | {a:.0f} | {p:.0f} | {a / p:.2f}x |")
    print(f"\naxc: training arena {peak} bytes (`training peak without remat`), state {state} bytes; "
          f"weights after {args.steps} steps agree with PyTorch within {max(errs.values()):.2g} relative"
          f"{'' if ok else ' (CHECK FAILED)'}.")
    print(f"\n{mem_text}.")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
