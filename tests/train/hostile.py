"""Suite `train`, part 4: hostile input on the training and calibration data
path (issue 33).  Each check says which defect it guards:

  G9   the last update makes the weights non-finite: exit 1, the old
       --save-weights file untouched; --beta1/--beta2 >= 1 and --nesterov
       without momentum refused as torch.optim refuses them (exit 2).
  G10  --save-weights naming the --target, an --input or the --weights file
       (also through another path to the same inode): refused, data intact.
  G11  /dev/zero or a FIFO as --input/--target: refused before any read
       (a memory cap and a timeout make an unbounded read or a wait fail).
  G16  a NaN or an infinity in --calibrate data: a located error (file,
       input, sample, element), exit 1, no output written.
  G23  the generated training step given an out-of-range class index
       returns NaN with every byte of the state untouched (a model with
       BatchNorm, whose running statistics the step writes early)."""
import os
import resource
import shlex
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "torch"))

AXC = os.path.abspath(os.environ.get("AXC", "build/bin/axc"))
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("AXC_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("AXC_BUILD", os.path.join(ROOT, "build"))
CC = shlex.split(os.environ.get("CC", "cc"))
WARN = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
MLP = "@axiom f(x::Float32[2, 4]) begin\n    Dense(4 => 3)\nend\n"
BN = ("@axiom function m(x::Float32[4, 6])\n    fc1 = Dense(6 => 5, bias=false)\n    bn = BatchNorm(5)\n"
      "    fc2 = Dense(5 => 3)\n    return fc2(relu(bn(fc1(x))))\nend\n")


def report(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'}: {name}")
    if detail and not ok:
        print("  " + str(detail).replace("\n", "\n  "))


def axc(*args, cwd, cap_memory=False, timeout=60):
    def limit():   # an unbounded read runs out of this instead of the machine's memory
        if cap_memory and "ASAN_OPTIONS" not in os.environ:
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    try:
        return subprocess.run([AXC, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", "timed out")


def train_args(target="t.npy", out="w.safetensors", extra=()):
    return ["train", "m.ax", "--seed=0", "--input", "x=x.npy", "--target", target, "--loss=mse",
            *extra, "--save-weights", out]


def setup(d, src=MLP, x=None, t=None):
    open(f"{d}/m.ax", "w").write(src)
    np.save(f"{d}/x.npy", np.ones((2, 4), np.float32) if x is None else x)
    np.save(f"{d}/t.npy", np.ones((2, 3), np.float32) if t is None else t)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def nonfinite_weights(d):
    """G9: one step whose loss and gradients are finite but whose update
    overflows Float32 (lr 3e38): before the fix it wrote inf weights, exit 0."""
    setup(d, x=np.full((2, 4), 100, np.float32), t=np.zeros((2, 3), np.float32))
    open(f"{d}/w.safetensors", "wb").write(b"the last good weights")
    r = axc(*train_args(extra=["--optimizer=sgd", "--lr", "3e38"]), cwd=d)
    report("G9 non-finite weights after the last update: refused, old file untouched",
           r.returncode == 1 and "non-finite" in r.stderr and "not written" in r.stderr
           and read(f"{d}/w.safetensors") == b"the last good weights", (r.returncode, r.stderr))


def optimizer_ranges(d):
    """G9: torch.optim's ValueErrors: 0 <= beta < 1, nesterov needs momentum."""
    setup(d)
    cases = [(["--optimizer=adam", "--beta1=1"], "--beta1 expects a number in [0, 1)"),
             (["--optimizer=adam", "--beta2=1"], "--beta2 expects a number in [0, 1)"),
             (["--optimizer=adamw", "--beta2=1.5"], "--beta2 expects a number in [0, 1)"),
             (["--optimizer=sgd", "--nesterov"], "--nesterov needs a positive --momentum")]
    for flags, message in cases:
        r = axc(*train_args(extra=flags), cwd=d)
        report(f"G9 {' '.join(flags)} refused", r.returncode == 2 and message in r.stderr
               and not os.path.exists(f"{d}/w.safetensors"), (r.returncode, r.stderr))
    for flags in (["--optimizer=adam", "--beta1=0.99", "--beta2=0"], ["--optimizer=sgd", "--nesterov", "--momentum=0.5"]):
        r = axc(*train_args(extra=flags), cwd=d)
        report(f"G9 {' '.join(flags)} accepted", r.returncode == 0, r.stderr)


def output_is_input(d):
    """G10: --save-weights over the training data, by name or by inode."""
    setup(d)
    safe = b"weights"
    open(f"{d}/init.safetensors", "wb").write(safe)
    os.link(f"{d}/t.npy", f"{d}/t_link.npy")
    os.mkdir(f"{d}/sub")
    data = {p: read(f"{d}/{p}") for p in ("x.npy", "t.npy")}
    for label, out in (("--target", "t.npy"), ("--target by a hard link", "t_link.npy"),
                       ("--target by another path", "sub/../t.npy"), ("--input", "x.npy")):
        r = axc(*train_args(out=out), cwd=d)
        report(f"G10 --save-weights naming the {label} refused",
               r.returncode == 2 and "would overwrite" in r.stderr
               and all(read(f"{d}/{p}") == v for p, v in data.items()), (r.returncode, r.stderr))
    r = axc("train", "m.ax", "--weights", "init.safetensors", "--input", "x=x.npy", "--target", "t.npy",
            "--loss=mse", "--save-weights", "init.safetensors", cwd=d)
    report("G10 --save-weights naming the --weights refused",
           r.returncode == 2 and "would overwrite" in r.stderr and read(f"{d}/init.safetensors") == safe,
           (r.returncode, r.stderr))


def special_files(d):
    """G11: devices and FIFOs are not training data."""
    setup(d)
    os.mkfifo(f"{d}/fifo")
    for label, extra in (("/dev/zero as --input", ["--input", "x=/dev/zero", "--target", "t.npy"]),
                         ("/dev/zero as --target", ["--input", "x=x.npy", "--target", "/dev/zero"]),
                         ("a FIFO as --target", ["--input", "x=x.npy", "--target", "fifo"]),
                         ("a directory as --input", ["--input", "x=sub", "--target", "t.npy"])):
        os.makedirs(f"{d}/sub", exist_ok=True)
        r = axc("train", "m.ax", "--seed=0", *extra, "--loss=mse", "--save-weights", "w.safetensors",
                cwd=d, cap_memory=True, timeout=60)
        report(f"G11 {label} refused before reading", r.returncode == 2 and "not a regular file" in r.stderr
               and not os.path.exists(f"{d}/w.safetensors"), (r.returncode, r.stderr))
    open(f"{d}/bad.npy", "wb").write(b"PK\x03\x04 a zip, not an array" * 4)
    r = axc(*train_args(target="bad.npy"), cwd=d)
    report("G11 a file without the .npy magic refused by its header", r.returncode == 1
           and "not a .npy file" in r.stderr, (r.returncode, r.stderr))


def calibration(d):
    """G16: non-finite calibration data is refused where it is."""
    open(f"{d}/q.ax", "w").write("@axiom q(x::Float32[1, 4]) begin\n    Dense(4 => 2)\n    relu\nend\n")
    for bad in (np.inf, -np.inf, np.nan):
        cal = np.zeros((3, 1, 4), np.float32)
        cal[1, 0, 2] = bad
        np.save(f"{d}/cal.npy", cal)
        r = axc("q.ax", "--seed=0", "--quantize=int8", "--calibrate", "x=cal.npy", "-o", "q.c", cwd=d)
        report(f"G16 {bad} in the calibration data: a located error",
               r.returncode == 1 and "cal.npy" in r.stderr and "sample 1, element 2" in r.stderr
               and "finite" in r.stderr and not os.path.exists(f"{d}/q.c"), (r.returncode, r.stderr))
    np.save(f"{d}/cal.npy", np.ones((3, 1, 4), np.float32))
    r = axc("q.ax", "--seed=0", "--quantize=int8", "--calibrate", "x=cal.npy", "-o", "q.c", cwd=d)
    report("G16 finite calibration data accepted", r.returncode == 0, r.stderr)


STEP_MAIN = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "m.h"
static unsigned char state[M_STATE_BYTES] __attribute__((aligned(64)));
static unsigned char before[M_STATE_BYTES];
int main(void)
{
    float x[4][6];
    int64_t good[4] = {0, 1, 2, 1}, bad[4] = {0, 1, 3, 1};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) x[i][j] = (float)(i * 6 + j) / 7.0f - 1.0f;
    m_state_init(state);
    if (isnan(m_train_step(state, &x[0][0], good, NULL))) { puts("good step NaN"); return 1; }
    memcpy(before, state, sizeof state);
    float loss = m_train_step(state, &x[0][0], bad, NULL);
    printf("loss %g state %s\n", loss, memcmp(before, state, sizeof state) ? "changed" : "untouched");
    return !(isnan(loss) && !memcmp(before, state, sizeof state));
}
"""


def step_bad_class(d):
    """G23: the generated step refuses a bad class index before any write."""
    open(f"{d}/m.ax", "w").write(BN)
    r = axc("--train", "m.ax", "--seed=0", "--loss=cross_entropy", "-o", "m.c", cwd=d)
    if r.returncode:
        report("G23 axc --train (BatchNorm, cross_entropy)", False, r.stderr)
        return
    open(f"{d}/main.c", "w").write(STEP_MAIN)
    b = subprocess.run([*CC, *WARN, "-O1", "-I", d, "-I", f"{BUILD}/include", f"{d}/main.c", f"{d}/m.c",
                        f"{BUILD}/lib/libaxrt.a", "-lm", "-o", f"{d}/host"], capture_output=True, text=True)
    if b.returncode:
        report("G23 the step builds", False, b.stderr)
        return
    run = subprocess.run([f"{d}/host"], capture_output=True, text=True)
    report("G23 out-of-range class index: NaN, state untouched (BatchNorm statistics included)",
           run.returncode == 0, run.stdout + run.stderr)


def main():
    parts = (nonfinite_weights, optimizer_ranges, output_is_input, special_files, calibration, step_bad_class)
    only = sys.argv[1:]
    for part in parts:
        if only and part.__name__ not in only:
            continue
        with tempfile.TemporaryDirectory() as d:
            part(d)


if __name__ == "__main__":
    main()
