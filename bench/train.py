"""Training steps per second: axc's generated C training step (`axc --train`)
against PyTorch eager, single thread (docs/training.md, issue 18).

Models: the MLP 784-256-10 (Dense + relu, Dense) and LeNet-5 with BatchNorm
after each conv (the `lenet5_bn` model of the train suite's oracle,
tests/train/run.py, and its PyTorch twin LeNetBn, at batch 32), both with
cross_entropy, batch 32, Adam (lr 1e-3), the same initial weights and
batches in both.  axc's step is built as users build it: the axc and libaxrt
that `make install` wrote (--stage PREFIX), `cc -O3` with `pkg-config
--cflags --libs axrt`, and timed in a loop of forward + loss + backward +
update calls; PyTorch's step is zero_grad, forward, F.cross_entropy,
backward, optimizer.step() with torch.set_num_threads(1).  The rounds are
interleaved (axc's step process waits on its stdin between rounds, PyTorch's
runs in this process; which goes first alternates), so that the load of a
shared machine falls on both alike; each round runs the same number of
steps after a warm-up, and the reported figure is the median over rounds of
steps per second (the best rounds' ratio beside it).  A first, untimed
round from the initial state (300 steps on the MLP, 20 on LeNet-5) checks
that both reach the same state (relative 1e-3: float32 on both sides;
BatchNorm's running statistics included); then the Markdown rows are
printed; timings are reported, never judged.  --smoke: 4 steps, the checks
only (PASS/FAIL lines for the bench suite).

Peak training memory (issue 18): axc's is known at compile time, the step's
arena (`training peak without remat` of --mem-report) plus its state
(parameters, BatchNorm's running statistics and Adam's moments, `training
state`).  PyTorch's is measured on steps after a warm-up step, two ways: (1)
torch.profiler with profile_memory=True, each op's self CPU allocation
counted at its start and each net free at its end; the peak of that running
sum over three steps plus the tensors live before the step (parameters,
buffers, their .grad, Adam's state; like axc's figure, not the batch) --
tensor bytes as PyTorch's CPU allocator hands them out; (2) in a fresh
process (glibc's mmap threshold fixed at 64 KiB, so that freed tensors go
back to the system and the resident size follows the live ones) after two
warm-up steps, the growth of the resident high-water mark (Linux VmHWM,
reset through /proc/self/clear_refs) over 5 more steps, added to the same
tensors live before a step: what the process really took, allocator and
page granularity included (tracemalloc does not see tensors).

  make install PREFIX=STAGE && python3 bench/train.py --stage STAGE [--models mlp lenet5]
      [--steps N] [--rounds R] [--smoke]
"""
import argparse
import importlib.util
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

# The train suite's oracle models (the same LeNet-5 definition, .ax and twin).
_spec = importlib.util.spec_from_file_location("train_oracle", os.path.join(ROOT, "tests", "train", "run.py"))
train_oracle = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(train_oracle)

BATCH, IN, HID, OUT = 32, 784, 256, 10


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(IN, HID), torch.nn.Linear(HID, OUT)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def lenet5_src():
    src = next(s for name, s, *_ in train_oracle.MODELS if name == "lenet5_bn")
    return src.replace("DTYPE", "Float32").replace("function m(x::Float32[4,", f"function lenet5(x::Float32[{BATCH},")


# name -> (label, .ax source, twin class, one example's input shape, steps of the checked
# first round, steps per timed round).  LeNet-5's check is after 20 steps, as the train
# suite's oracle: beyond, float32 round-off on both sides flips max-pool choices and
# ReLUs and the two runs part (1e-4 after 20 steps, 1e-2 after 50).
MODELS = {
    "mlp": (f"MLP {IN}-{HID}-{OUT}",
            f"@axiom function mlp(x::Float32[{BATCH}, {IN}])\n    fc1 = Dense({IN} => {HID})\n"
            f"    fc2 = Dense({HID} => {OUT})\n    return fc2(relu(fc1(x)))\nend\n", Mlp, (IN,), 300, 300),
    "lenet5": ("LeNet-5 + BatchNorm, 28x28", lenet5_src(), train_oracle.LeNetBn, (28, 28, 1), 20, 100),
}

HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "%(name)s.h"
static unsigned char state[%(NAME)s_STATE_BYTES] __attribute__((aligned(64)));
static unsigned char arena[%(NAME)s_TRAIN_ARENA_BYTES] __attribute__((aligned(64)));
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
/* The state after the first round, for the check: "name count" lines, then the floats. */
static void dump(const char *names, const char *values)
{
    FILE *fn = fopen(names, "w"), *fv = fopen(values, "wb");
    int k, d;
    for (k = 0; k < %(NAME)s_STATE_TENSORS; k++) {
        const axrt_tensor_info *ti = &%(name)s_state_tensors[k];
        size_t n = 1;
        for (d = 0; d < ti->rank; d++) n *= (size_t)ti->dims[d];
        fprintf(fn, "%%s %%zu\n", ti->name, n);
        fwrite(state + %(name)s_state_offsets[k], sizeof(float), n, fv);
    }
    fclose(fn), fclose(fv);
}
int main(int argc, char **argv)
{
    /* argv: x.bin t.bin batches names.txt values.bin; stdin: the steps of each round, a line
       each; the state after the first round goes to names.txt and values.bin */
    int batches = atoi(argv[3]), steps, r, s, k;
    char line[16];
    float *x = malloc(sizeof(float) * %(xs)d * batches);
    int64_t *t = malloc(sizeof(int64_t) * %(ts)d * batches);
    FILE *f = fopen(argv[1], "rb");
    if (argc != 6 || !f || fread(x, sizeof(float) * %(xs)d, batches, f) != (size_t)batches) return 2;
    fclose(f);
    f = fopen(argv[2], "rb");
    if (!f || fread(t, sizeof(int64_t) * %(ts)d, batches, f) != (size_t)batches) return 2;
    fclose(f);
    %(name)s_state_init(state);
    for (s = 0; s < 3; s++) %(name)s_train_step(state, x, t, arena);      /* warm-up */
    %(name)s_state_init(state);
    for (r = 0; fgets(line, sizeof line, stdin) && (steps = atoi(line)) > 0; r++) {
        double t0 = now();
        float loss = 0;
        for (s = 0; s < steps; s++) {
            k = s %% batches;
            loss = %(name)s_train_step(state, x + (size_t)k * %(xs)d, t + (size_t)k * %(ts)d, arena);
        }
        printf("round %%d steps %%d seconds %%.9f loss %%.6f\n", r, steps, now() - t0, loss);
        fflush(stdout);
        if (r == 0)
            dump(argv[4], argv[5]);
    }
    return 0;
}
"""


def batches_of(x, t, batches):
    return ([torch.from_numpy(x[k * BATCH:(k + 1) * BATCH]) for k in range(batches)],
            [torch.from_numpy(t[k * BATCH:(k + 1) * BATCH]) for k in range(batches)])


class TorchStep:
    """The PyTorch side: a model from init, stepped round by round."""

    def __init__(self, twin, init, x, t, batches):
        self.xs, self.ts, self.batches = *batches_of(x, t, batches), batches
        warm = twin()   # warm-up on a copy, so the timed run starts from init as axc's does
        warm.load_state_dict(init, strict=False)
        wopt = torch.optim.Adam(warm.parameters(), lr=1e-3)
        for k in range(3):
            wopt.zero_grad()
            F.cross_entropy(warm(self.xs[k % batches]), self.ts[k % batches]).backward()
            wopt.step()
        self.model = twin()
        self.model.load_state_dict(init, strict=False)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def round(self, steps):
        model, opt, xs, ts = self.model, self.opt, self.xs, self.ts
        t0 = time.perf_counter()
        for s in range(steps):
            k = s % self.batches
            opt.zero_grad()
            F.cross_entropy(model(xs[k]), ts[k]).backward()
            opt.step()
        return time.perf_counter() - t0

    def state(self):
        return {k: v.detach().numpy().copy() for k, v in self.model.state_dict().items() if "num_batches" not in k}


def tensor_bytes(model, opt):
    """Bytes of the tensors a step starts with: parameters, buffers, gradients, optimizer
    state (not the batch: axc's figure leaves out the caller's input too)."""
    ts = [p for p in model.parameters()] + [b for b in model.buffers()]
    ts += [p.grad for p in model.parameters() if p.grad is not None]
    ts += [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)]
    return sum(t.numel() * t.element_size() for t in ts)


def torch_profiled_peak(twin, init, x, t):
    """Method (1) of the docstring: bytes live at the peak of an Adam step."""
    from torch.profiler import ProfilerActivity, profile
    model = twin()
    model.load_state_dict(init, strict=False)
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
from train import MODELS, BATCH
label, src, twin, shape = MODELS[sys.argv[2]][:4]
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
model = twin()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
xb, tb = torch.randn(BATCH, *shape), torch.randint(0, 10, (BATCH,))
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


def torch_rss_growth(name):
    """Method (2) of the docstring: VmHWM growth (bytes) over 5 warm steps in a fresh process."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    r = subprocess.run([sys.executable, "-c", RSS_PROBE, HERE, name], capture_output=True, text=True, env=env)
    return int(r.stdout.split()[-1]) if r.returncode == 0 and r.stdout.split() else None


def memory_line(name, peak, state, twin, init, x, t):
    tp, before = torch_profiled_peak(twin, init, x, t)
    rss = torch_rss_growth(name)
    axc = int(peak) + int(state)
    rss_text = (f"{before + rss} bytes by the resident high-water mark ({before} + its growth {rss} over 5 warm "
                "steps)" if rss is not None else "resident high-water mark not measured (needs Linux /proc)")
    text = (f"{name} peak training memory, one step: axc {axc} bytes at compile time (arena {peak} + state {state}); "
            f"PyTorch {tp} bytes of tensors at the step's peak by its profiler ({before} live before the step), "
            f"{rss_text}")
    return text, tp > before > 0, axc, tp


def build_step(args, d, name, src, init, example):
    """axc --train + cc as a user would; returns (step binary, arena bytes, state bytes)."""
    open(f"{d}/{name}.ax", "w").write(src)
    safetensors_io.write(f"{d}/init.safetensors", init)
    gen = subprocess.run([f"{args.stage}/bin/axc", "--train", f"{d}/{name}.ax", "--weights", f"{d}/init.safetensors",
                          "--loss=cross_entropy", "--optimizer=adam", "--lr=1e-3", "-o", f"{d}/{name}.c",
                          "--mem-report"], capture_output=True, text=True)
    if gen.returncode:
        sys.exit(f"axc --train {name} failed:\n{gen.stderr}")
    peak = re.search(r"training peak without remat: (\d+)", gen.stdout).group(1)
    state = re.search(r"training state: (\d+)", gen.stdout).group(1)
    open(f"{d}/main.c", "w").write(HARNESS % {"name": name, "NAME": name.upper(), "xs": BATCH * example, "ts": BATCH})
    env = dict(os.environ, PKG_CONFIG_PATH=f"{args.stage}/lib/pkgconfig")
    axrt = subprocess.run(["pkg-config", "--cflags", "--libs", "axrt"], check=True, capture_output=True,
                          text=True, env=env).stdout.split()
    build = subprocess.run([args.cc, "-std=c99", "-O3", "-I", d, f"{d}/main.c", f"{d}/{name}.c", *axrt,
                            "-o", f"{d}/step"], capture_output=True, text=True)
    if build.returncode:
        sys.exit(f"cc failed:\n{build.stderr}")
    return f"{d}/step", peak, state


def bench_model(args, name):
    """One model: the check, interleaved timing, the memory figures.  Returns a result dict."""
    label, src, twin, shape, check_steps, steps = MODELS[name]
    check_steps, steps = args.steps or check_steps, args.steps or steps
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    batches = 8
    x = rng.standard_normal((batches * BATCH, *shape)).astype(np.float32)
    t = rng.integers(0, 10, batches * BATCH).astype(np.int64)
    init = {k: v.detach().clone() for k, v in twin().state_dict().items() if "num_batches" not in k}
    example = int(np.prod(shape))
    with tempfile.TemporaryDirectory() as d:
        exe, peak, state = build_step(args, d, name, src, init, example)
        x.tofile(f"{d}/x.bin")
        t.tofile(f"{d}/t.bin")
        torch_side = TorchStep(twin, init, x, t, batches)
        axc_times, torch_times, ref = [], [], None
        with subprocess.Popen([exe, f"{d}/x.bin", f"{d}/t.bin", str(batches), f"{d}/names.txt", f"{d}/w.bin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, OMP_NUM_THREADS="1")) as proc:
            def axc_round(n):
                proc.stdin.write(f"{n}\n")
                proc.stdin.flush()
                m = re.search(r"seconds (\S+)", proc.stdout.readline() or "")
                if not m:
                    sys.exit(f"the {name} step harness stopped")
                return float(m.group(1))
            axc_round(check_steps)   # the checked round, from init on both sides; not timed
            torch_side.round(check_steps)
            ref = torch_side.state()
            for r in range(args.rounds if not args.smoke else 0):
                for side in ((0, 1) if r % 2 == 0 else (1, 0)):
                    if side == 0:
                        axc_times.append(axc_round(steps))
                    else:
                        torch_times.append(torch_side.round(steps))
            proc.stdin.close()
        names = [line.split() for line in open(f"{d}/names.txt")]
        flat = np.fromfile(f"{d}/w.bin", dtype=np.float32)
    got, at = {}, 0
    for key, n in names:
        got[key] = flat[at:at + int(n)]
        at += int(n)
    errs = {k: float(np.max(np.abs(got[k] - v.reshape(-1))) / max(np.max(np.abs(v)), 1e-30))
            for k, v in ref.items() if k in got}
    ok = max(errs.values()) <= 1e-3 and set(ref) <= set(got)
    mem_text, mem_ok, axc_mem, torch_mem = memory_line(name, peak, state, twin, init, x, t)
    return {"label": label, "steps": steps, "check_steps": check_steps, "errs": errs, "ok": ok, "mem_text": mem_text, "mem_ok": mem_ok,
            "axc": axc_times, "torch": torch_times, "peak": peak, "state": state, "axc_mem": axc_mem,
            "torch_mem": torch_mem}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", required=True, help="the prefix `make install` wrote (bin/axc, lib/pkgconfig)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument("--steps", type=int, default=0,
                    help="steps of the checked round and of each timed round (default: per model)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.steps = 4
    torch.set_num_threads(1)
    results = {name: bench_model(args, name) for name in args.models}
    if args.smoke:
        for name, res in results.items():
            print(f"{'PASS' if res['ok'] else 'FAIL'}: bench train {name} smoke "
                  f"(axc --train vs PyTorch Adam, {res['check_steps']} steps)")
            if not res["ok"]:
                print(f"  relative errors {res['errs']}")
            # the figures on the result line itself: run.sh allows details only under FAIL/SKIP
            print(f"{'PASS' if res['mem_ok'] else 'FAIL'}: bench train {res['mem_text']}")
        return 0 if all(r["ok"] and r["mem_ok"] for r in results.values()) else 1
    print(f"| batch {BATCH}, cross_entropy, Adam, 1 thread | axc --train steps/s | PyTorch eager steps/s | ratio "
          "(median) | ratio (best rounds) | axc peak memory (compile time) | PyTorch peak (profiler) |")
    print("|---|---|---|---|---|---|---|")
    for res in results.values():
        n = res["steps"]
        a, p = n / float(np.median(res["axc"])), n / float(np.median(res["torch"]))
        best = min(res["torch"]) / min(res["axc"])
        print(f"| {res['label']} | {a:.0f} | {p:.0f} | {a / p:.2f}x | {best:.2f}x | {res['axc_mem']} B | "
              f"{res['torch_mem']} B |")
    print(f"\n{args.rounds} interleaved rounds each; load average {os.getloadavg()[0]:.1f} at the end.")
    for name, res in results.items():
        print(f"\n{name}: training arena {res['peak']} bytes (`training peak without remat`), state {res['state']} "
              f"bytes; the state after {res['check_steps']} steps agrees with PyTorch within "
              f"{max(res['errs'].values()):.2g} relative{'' if res['ok'] else ' (CHECK FAILED)'}.")
        print(f"\n{res['mem_text']}.")
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
