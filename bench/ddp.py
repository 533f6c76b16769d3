"""Data-parallel training steps per second (docs/distributed.md; not a test).

The generated training step split at its seam (axc --train --grad-exchange)
driven by tests/mpi/exchange_main.c with libaxrt_mpi, on one machine
(`mpirun --oversubscribe`, shared memory or loopback TCP, whatever Open MPI
picks), for two models at a fixed batch per rank (weak scaling, as DDP is
used): the MLP 784-256-10 (batch 32 per rank) and a small CNN (two 3x3
convs with max pooling, then a Dense, 28x28x1 inputs, batch 16 per rank),
both cross_entropy with Adam.  Per model:
  1 rank            steps/s with the exchange (a no-op sum over one rank)
  2 ranks blocking  every bucket exchanged after the backward pass
  2 ranks buckets   buckets exchanged as the backward pass completes them
and the scaling ratio (samples/s of 2 ranks over 1 rank; 2.0 is perfect),
the communication the step waits for (wait ms per step) and the share of
it the buckets hide: 1 - wait(buckets) / wait(blocking).  Two cores shared
with other work: read the figures as an illustration, not a measurement of
a cluster.  Usage: python3 bench/ddp.py [--build build] [--steps 200]
[--bucket 65536]."""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MODELS = {
    "mlp": (32, 784, 10, "@axiom mlp(x::Float32[{b}, 784]) begin\n    fc1 = Dense(784 => 256, activation=relu)\n"
                         "    fc2 = Dense(256 => 10)\nend\n"),
    "cnn": (16, 784, 10, "@axiom cnn(x::Float32[{b}, 28, 28, 1]) begin\n    c1 = Conv((3, 3), 1 => 8, pad=1, activation=relu)\n"
                         "    p1 = MaxPool((2, 2))\n    c2 = Conv((3, 3), 8 => 16, pad=1, activation=relu)\n"
                         "    p2 = MaxPool((2, 2))\n    f = Flatten()\n    fc = Dense(784 => 10)\nend\n"),
}


def build(d, name, build_dir):
    batch, sample, classes, src = MODELS[name]
    os.makedirs(d)
    with open(os.path.join(d, "m.ax"), "w") as f:
        f.write(src.format(b=batch))
    axc = os.path.join(build_dir, "bin", "axc")
    subprocess.run([axc, "--train", os.path.join(d, "m.ax"), "--grad-exchange", "--seed=1", "--loss=cross_entropy",
                    "--optimizer=adam", "-o", os.path.join(d, "m.c")], check=True, capture_output=True)
    up = name.upper()
    with open(os.path.join(d, "exchange_data.h"), "w") as f:
        f.write(f'#include "m.h"\n#define PREFIX(n) {name}_##n\n#define STATE_BYTES {up}_STATE_BYTES\n'
                f"#define GRAD_BYTES {up}_GRAD_BYTES\n#define STATE_TENSORS {up}_STATE_TENSORS\n"
                f"#define BATCH {batch}\n#define SAMPLE {sample}\n#define CLASSES {classes}\n")
    lib = os.path.join(build_dir, "lib")
    exe = os.path.join(d, "exchange")
    subprocess.run(["mpicc", "-std=c99", "-O3", "-march=native", "-I", d, "-I", os.path.join(build_dir, "include"),
                    os.path.join(ROOT, "tests", "mpi", "exchange_main.c"), os.path.join(d, "m.c"), "-L" + lib,
                    "-Wl,-rpath," + lib, "-laxrt_mpi", os.path.join(lib, "libaxrt.a"), "-lm", "-lpthread", "-o", exe],
                   check=True)
    grad_bytes = int(open(os.path.join(d, "m.h")).read().split(f"#define {up}_GRAD_BYTES ((size_t)")[1].split(")")[0])
    return exe, grad_bytes


def measure(exe, ranks, mode, steps, bucket):
    r = subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), exe, str(steps), mode, str(bucket), "0"],
                       capture_output=True, text=True, env=ENV, check=True)
    words = r.stdout.split()
    return float(words[words.index("steps/s") + 1]), float(words[words.index("wait_ms") + 1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--bucket", type=int, default=65536)
    a = ap.parse_args()
    print(f"| model | gradient bytes | 1 rank steps/s | 2 ranks blocking steps/s | 2 ranks buckets steps/s "
          f"| scaling (2 ranks, samples/s) | wait ms/step blocking / buckets | hidden |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="axc-ddp-") as tmp:
        for name in MODELS:
            exe, grad_bytes = build(os.path.join(tmp, name), name, a.build)
            one, _ = measure(exe, 1, "buckets", a.steps, a.bucket)
            blk, wait_blk = measure(exe, 2, "blocking", a.steps, a.bucket)
            bkt, wait_bkt = measure(exe, 2, "buckets", a.steps, a.bucket)
            hidden = 1 - wait_bkt / wait_blk if wait_blk > 0 else 0.0
            print(f"| {name} | {grad_bytes} | {one:.0f} | {blk:.0f} | {bkt:.0f} | {2 * bkt / one:.2f} "
                  f"| {wait_blk:.3f} / {wait_bkt:.3f} | {100 * hidden:.0f}% |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
