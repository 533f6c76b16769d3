"""Suite `mpi`: data-parallel training (docs/distributed.md).

seam: `axc --train --grad-exchange` emits <name>_train_grads and
<name>_train_apply; tests/mpi/seam_main.c checks that grads then apply equals
the whole <name>_train_step bitwise and that the gradients are handed out in
buffer order (what bucketing relies on); without the option the generated
files are byte-identical to those of a plain `axc --train`."""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
AXC = os.environ.get("AXC", os.path.join(ROOT, "build", "bin", "axc"))
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(AXC)))
CC = os.environ.get("CC", "cc")

SEAM_MODELS = {
    # name: (source, loss, optimizer flags, batch elements of x, of target, target C type, classes)
    "mlp_adam": ("@axiom mlp(x::Float32[4, 8]) begin\n    fc1 = Dense(8 => 16, activation=relu)\n"
                 "    fc2 = Dense(16 => 3)\nend\n", "cross_entropy", ["--optimizer=adam"], 32, 4, "int64_t", 3),
    "cnn_bn_sgd": ("@axiom cnn(x::Float32[2, 8, 8, 1]) begin\n    c1 = Conv((3, 3), 1 => 4, pad=1)\n"
                   "    bn = BatchNorm(4, activation=relu)\n    p = MaxPool((2, 2))\n    f = Flatten()\n"
                   "    fc = Dense(64 => 3)\nend\n", "cross_entropy", ["--optimizer=sgd", "--momentum=0.9", "--lr=0.05"],
                   128, 2, "int64_t", 3),
}


def report(ok, name, detail=""):
    print(("PASS: " if ok else "FAIL: ") + name)
    if not ok and detail:
        for line in detail.strip().splitlines()[-15:]:
            print("  " + line)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def seam_case(tmp, name):
    src, loss, opt, nx, nt, ttype, classes = SEAM_MODELS[name]
    d = os.path.join(tmp, name)
    os.makedirs(d)
    ax = os.path.join(d, "m.ax")
    with open(ax, "w") as f:
        f.write(src)
    base = [AXC, "--train", ax, "--loss=" + loss, "--seed=3", *opt]
    for out, extra in (("plain.c", []), ("split.c", ["--grad-exchange"])):
        r = run(base + extra + ["-o", os.path.join(d, out)])
        if r.returncode:
            return report(False, f"mpi seam {name}: axc --train", r.stderr)
    plain = open(os.path.join(d, "plain.c")).read()
    split_c = open(os.path.join(d, "split.c")).read()
    report("train_grads" not in plain and "train_grads" in split_c,
           f"mpi seam {name}: the split step only with --grad-exchange")
    model = src.split("(")[0].split()[-1]
    upper = model.upper()
    with open(os.path.join(d, "seam_data.h"), "w") as f:
        f.write(f'#include "split.h"\n#define PREFIX(n) {model}_##n\n#define STATE_BYTES {upper}_STATE_BYTES\n'
                f"#define GRAD_BYTES {upper}_GRAD_BYTES\n#define STATE_TENSORS {upper}_STATE_TENSORS\n"
                f"#define BATCH_X {nx}\n#define BATCH_T {nt}\n#define TARGET_TYPE {ttype}\n"
                f"#define CLASSES {classes}\n#define STEPS 6\n")
    exe = os.path.join(d, "seam")
    r = run([CC, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", d, "-I", os.path.join(ROOT, "runtime"),
             os.path.join(HERE, "seam_main.c"), os.path.join(d, "split.c"), os.path.join(BUILD, "lib", "libaxrt.a"),
             "-lm", "-lpthread", "-o", exe])
    if r.returncode:
        return report(False, f"mpi seam {name}: the split step compiles warning-free", r.stderr)
    r = run([exe])
    report(r.returncode == 0 and "RESULT: PASS" in r.stdout, f"mpi seam {name}: grads + apply == train_step bitwise",
           r.stdout + r.stderr)


def main():
    tmp = tempfile.mkdtemp(prefix="axc-mpi-")
    try:
        for name in SEAM_MODELS:
            seam_case(tmp, name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
