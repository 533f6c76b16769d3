"""Suite `mpi`: data-parallel training (docs/distributed.md).

train N=1,2,3 (the compiled step, gradients exchanged in buckets during the
backward pass) and train --interp N=2 (the interpreter, after it):
`mpirun --oversubscribe -np N axc train` on a model declared
with batch B gives, after 20 steps, the weights of single-process `axc train`
on the same model declared with batch N x B, within 1e-6 relative (max abs
difference over the tensor's max abs value); two runs with the same N are
bitwise identical.  ddp: PyTorch DistributedDataParallel (gloo, CPU, world
size N by multiprocessing spawn), each rank on the same block of each global
batch, is a second oracle (1e-4 relative, as the train suite's PyTorch
oracle).  N=2 with 128-byte buckets: most sent during the backward pass, the
same result; a bad AXC_BUCKET_BYTES refused.  faults: a rank killed mid-run (on
both paths) makes mpirun exit non-zero within a
bounded time, and the weights file there before is left as it was; a sample
count not a multiple of N x B, or fewer samples than one global step, is
refused before any step; a missing libaxrt_mpi is said clearly.
exchange N=2,3: the split step driven by libaxrt_mpi (tests/mpi/exchange_main.c)
with 128-byte buckets, exchanged during the backward pass and after it,
equals one process's <name>_train_step on the global batch (1e-6).

seam: `axc --train --grad-exchange` emits <name>_train_grads and
<name>_train_apply; tests/mpi/seam_main.c checks that grads then apply equals
the whole <name>_train_step bitwise and that the gradients are handed out in
buffer order (what bucketing relies on); without the option the generated
files are byte-identical to those of a plain `axc --train`."""
import os
import shutil
import signal
import time
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


B, IN, HID, OUT, STEPS = 4, 8, 16, 3, 20
TRAIN_FLAGS = ["--loss=cross_entropy", "--optimizer=adam", "--lr=0.01"]
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self,tcp",
               OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")


def write_model(d, batch):
    path = os.path.join(d, f"m{batch}.ax")
    with open(path, "w") as f:
        f.write(f"@axiom m(x::Float32[{batch}, {IN}]) begin\n    fc1 = Dense({IN} => {HID}, activation=relu)\n"
                f"    fc2 = Dense({HID} => {OUT})\nend\n")
    return path


def write_data(d, samples, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    x, y = os.path.join(d, f"x{samples}.npy"), os.path.join(d, f"y{samples}.npy")
    np.save(x, rng.standard_normal((samples, IN)).astype(np.float32))
    np.save(y, rng.integers(0, OUT, samples).astype(np.int64))
    return x, y


def write_init(d):
    """Initial weights (PyTorch's nn.Linear init, seed 0), shared by every run."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
    import safetensors_io
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(IN, HID), torch.nn.ReLU(), torch.nn.Linear(HID, OUT))
    sd = net.state_dict()
    path = os.path.join(d, "init.safetensors")
    safetensors_io.write(path, {"fc1.weight": sd["0.weight"], "fc1.bias": sd["0.bias"],
                                "fc2.weight": sd["2.weight"], "fc2.bias": sd["2.bias"]})
    return path


def read_weights(path):
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
    import safetensors_io
    return {k: np.asarray(v, dtype=np.float64) for k, v in safetensors_io.read(path).items()}


def rel_errors(a, b):
    import numpy as np
    return {k: float(np.abs(a[k] - b[k]).max() / max(np.abs(a[k]).max(), 1e-30)) for k in a}


def axc_train(d, model, x, y, init, out, ranks=None, extra=(), timeout=300, env=None):
    cmd = [AXC, "train", model, "--weights", init, *TRAIN_FLAGS, "--input", "x=" + x, "--target", y,
           "--save-weights", out, *extra]
    if ranks:
        cmd = ["mpirun", "--oversubscribe", "-np", str(ranks), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or MPI_ENV, cwd=d)


def train_cases(tmp, init, ranks=(1, 2, 3), extra=()):
    """extra=(): the compiled step split at its seam, gradients exchanged in
    buckets during the backward pass; ("--interp",): the interpreter's loop,
    gradients exchanged after it.  The single-process reference runs on the
    same executor."""
    how = " --interp" if extra else ""
    for n in ranks:
        d = os.path.join(tmp, f"n{n}{how.strip()}")
        os.makedirs(d)
        x, y = write_data(d, STEPS * n * B)
        local, whole = write_model(d, B), write_model(d, n * B)
        ref = axc_train(d, whole, x, y, init, os.path.join(d, "single.safetensors"), extra=extra, env=os.environ)
        runs = [axc_train(d, local, x, y, init, os.path.join(d, f"mpi{k}.safetensors"), ranks=n, extra=extra)
                for k in (0, 1)]
        bad = [r for r in [ref] + runs if r.returncode]
        if bad:
            report(False, f"mpi train{how} N={n}: runs", bad[0].stdout + bad[0].stderr)
            continue
        on_seam = "buckets started during the backward pass" in runs[0].stdout
        report(on_seam != bool(extra), f"mpi train{how} N={n}: runs on the "
               + ("interpreter" if extra else "compiled step with the bucketed exchange"), runs[0].stdout)
        errs = rel_errors(read_weights(os.path.join(d, "single.safetensors")),
                          read_weights(os.path.join(d, "mpi0.safetensors")))
        worst = max(errs.values())
        report(worst <= 1e-6, f"mpi train{how} N={n}: {STEPS} steps == single process on the global batch {n * B} "
               f"(1e-6; worst relative difference {worst:.3g})",
               "\n".join(f"{k}: {v:.3g}" for k, v in errs.items()))
        same = open(os.path.join(d, "mpi0.safetensors"), "rb").read() == open(os.path.join(d, "mpi1.safetensors"), "rb").read()
        report(same, f"mpi train{how} N={n}: two runs bitwise identical")
        steps = runs[0].stdout.count("step ")
        report(steps == STEPS, f"mpi train{how} N={n}: progress from rank 0 only", runs[0].stdout)
        if n in (2, 3):
            ddp_case(d, n, x, y, init, how)
        if n == 2 and not extra:
            small_buckets_case(d, local, x, y, init)


def small_buckets_case(d, model, x, y, init):
    """AXC_BUCKET_BYTES=128: the model's gradients fill several buckets, most
    sent while the backward pass goes on; the result is unchanged.  A bad
    value is refused before any step."""
    import re
    out = os.path.join(d, "buckets.safetensors")
    r = axc_train(d, model, x, y, init, out, ranks=2, env=dict(MPI_ENV, AXC_BUCKET_BYTES="128"))
    m = re.search(r"exchange: (\d+) of (\d+) buckets started during the backward pass", r.stdout)
    worst = max(rel_errors(read_weights(os.path.join(d, "single.safetensors")), read_weights(out)).values()) \
        if r.returncode == 0 else float("inf")
    report(r.returncode == 0 and m is not None and int(m.group(1)) > 0 and worst <= 1e-6,
           f"mpi train N=2: 128-byte buckets, {m.group(1) if m else '?'} of {m.group(2) if m else '?'} sent during "
           f"the backward pass, == single process (1e-6; worst relative difference {worst:.3g})", r.stdout + r.stderr)
    r = axc_train(d, model, x, y, init, os.path.join(d, "bad.safetensors"), ranks=2,
                  env=dict(MPI_ENV, AXC_BUCKET_BYTES="12"))
    report(r.returncode != 0 and "AXC_BUCKET_BYTES='12' is not a byte count" in r.stderr and "step 1/" not in r.stdout
           and not os.path.exists(os.path.join(d, "bad.safetensors")),
           "mpi train N=2: a bad AXC_BUCKET_BYTES is refused before any step", r.stdout + r.stderr)


DDP_SCRIPT = r'''
import os, sys
import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
sys.path.insert(0, sys.argv[6])
import safetensors_io

def worker(rank, n, B, x, y, init, out, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", port
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=n)
    w = safetensors_io.read(init)
    net = torch.nn.Sequential(torch.nn.Linear(w["fc1.weight"].shape[1], w["fc1.weight"].shape[0]), torch.nn.ReLU(),
                              torch.nn.Linear(w["fc2.weight"].shape[1], w["fc2.weight"].shape[0]))
    net.load_state_dict({"0.weight": torch.tensor(np.asarray(w["fc1.weight"])), "0.bias": torch.tensor(np.asarray(w["fc1.bias"])),
                         "2.weight": torch.tensor(np.asarray(w["fc2.weight"])), "2.bias": torch.tensor(np.asarray(w["fc2.bias"]))})
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(ddp.parameters(), lr=0.01)
    X, Y = torch.tensor(np.load(x)), torch.tensor(np.load(y))
    for s in range(X.shape[0] // (n * B)):
        first = (s * n + rank) * B          # rank r: the r-th block of B of each global batch
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ddp(X[first:first + B]), Y[first:first + B])
        loss.backward()                     # DDP: gradients averaged over the ranks
        opt.step()
    if rank == 0:
        sd = net.state_dict()
        safetensors_io.write(out, {"fc1.weight": sd["0.weight"], "fc1.bias": sd["0.bias"],
                                   "fc2.weight": sd["2.weight"], "fc2.bias": sd["2.bias"]})
    dist.destroy_process_group()

if __name__ == "__main__":
    n, B = int(sys.argv[1]), int(sys.argv[2])
    mp.spawn(worker, args=(n, B, sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[7], sys.argv[8]), nprocs=n)
'''


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def ddp_case(d, n, x, y, init, how=""):
    script = os.path.join(d, "ddp.py")
    with open(script, "w") as f:
        f.write(DDP_SCRIPT)
    out = os.path.join(d, "ddp.safetensors")
    r = subprocess.run([sys.executable, script, str(n), str(B), x, y, init, os.path.join(ROOT, "tests", "torch"), out,
                        free_port()], capture_output=True, text=True, timeout=300)
    if r.returncode:
        return report(False, f"mpi ddp{how} N={n}: PyTorch DDP ran", r.stdout + r.stderr)
    errs = rel_errors(read_weights(out), read_weights(os.path.join(d, "mpi0.safetensors")))
    worst = max(errs.values())
    report(worst <= 1e-4, f"mpi ddp{how} N={n}: axc under mpirun == PyTorch DDP (gloo) within 1e-4 "
           f"(worst relative difference {worst:.3g})",
           "\n".join(f"{k}: {v:.3g}" for k, v in errs.items()))


def rank_pids(parent):
    """{rank: pid} of mpirun's children (Open MPI starts local ranks itself)."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
            if b"OMPI_COMM_WORLD_RANK" in env:
                found[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
        except (OSError, ValueError, IndexError):
            continue
    return found


def killed_rank_case(d, model, x, y, init, weights, before, extra):
    """A rank killed once the steps run (rank 0 printed step 1): many epochs
    so that the run is still going."""
    how = " --interp" if extra else ""
    cmd = ["mpirun", "--oversubscribe", "-np", "2", AXC, "train", model, "--weights", init, *TRAIN_FLAGS,
           "--input", "x=" + x, "--target", y, "--epochs", "200000", "--save-weights", weights, *extra]
    log = os.path.join(d, "killed.out")
    with open(log, "w") as out_file:
        p = subprocess.Popen(cmd, stdout=out_file, stderr=subprocess.PIPE, text=True, env=MPI_ENV, cwd=d)
        pids, t0, stepping = {}, time.time(), False
        while not (len(pids) == 2 and stepping) and time.time() - t0 < 120 and p.poll() is None:
            time.sleep(0.2)
            pids = rank_pids(p.pid)
            stepping = "step 1/" in open(log).read()
        if 1 in pids and stepping:
            os.kill(pids[1], signal.SIGKILL)
        try:
            _, err = p.communicate(timeout=60)
            hung = False
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            hung = True
    report(1 in pids and stepping and not hung and p.returncode != 0,
           f"mpi fault{how}: a rank killed mid-run: mpirun exits non-zero within 60 s",
           f"rank pids {pids}, stepping {stepping}, hung {hung}, exit {p.returncode}\n{err}")
    report(("signal 9" in err or "Killed" in err or "rank" in err), f"mpi fault{how}: the killed rank is named on stderr",
           err)
    report(open(weights, "rb").read() == before, f"mpi fault{how}: the weights file is left as it was")


def fault_cases(tmp, init):
    d = os.path.join(tmp, "faults")
    os.makedirs(d)
    model = write_model(d, B)
    x, y = write_data(d, 2 * 8 * B)
    weights = os.path.join(d, "w.safetensors")
    with open(weights, "wb") as f:
        f.write(b"the weights of an earlier run")
    before = open(weights, "rb").read()
    for extra in ((), ("--interp",)):
        killed_rank_case(d, model, x, y, init, weights, before, extra)
    # bad shard sizes, refused before any step
    for name, samples, want in (("not divisible", 3 * 2 * B + B, "not a multiple of the global batch"),
                                ("fewer samples than one global step", B, "fewer than one global step")):
        x, y = write_data(d, samples)
        r = axc_train(d, model, x, y, init, weights, ranks=2, timeout=120)
        report(r.returncode != 0 and want in r.stderr and "step 1/" not in r.stdout
               and open(weights, "rb").read() == before,
               f"mpi fault: {name}: a clear error before any step", r.stdout + r.stderr)
    # no libaxrt_mpi
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="1", AXRT_MPI_LIB=os.path.join(d, "no-such-libaxrt_mpi.so"))
    r = axc_train(d, model, x, y, init, weights, env=env)
    report(r.returncode == 2 and "cannot open libaxrt_mpi.so" in r.stderr and open(weights, "rb").read() == before,
           "mpi fault: under mpirun without libaxrt_mpi: a clear error", r.stderr)


def exchange_program(d, batch):
    """tests/mpi/exchange_main.c built for the model declared with `batch`."""
    sub = os.path.join(d, f"b{batch}")
    os.makedirs(sub)
    model = write_model(sub, batch)
    r = run([AXC, "--train", model, "--grad-exchange", "--seed=2", *TRAIN_FLAGS, "-o", os.path.join(sub, "m.c")])
    if r.returncode:
        return None, r.stderr
    with open(os.path.join(sub, "exchange_data.h"), "w") as f:
        f.write('#include "m.h"\n#define PREFIX(n) m_##n\n#define STATE_BYTES M_STATE_BYTES\n'
                "#define GRAD_BYTES M_GRAD_BYTES\n#define STATE_TENSORS M_STATE_TENSORS\n"
                f"#define BATCH {batch}\n#define SAMPLE {IN}\n#define CLASSES {OUT}\n")
    exe = os.path.join(sub, "exchange")
    lib = os.path.join(BUILD, "lib")
    r = run(["mpicc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", sub, "-I", os.path.join(BUILD, "include"),
             os.path.join(HERE, "exchange_main.c"), os.path.join(sub, "m.c"), "-L" + lib, "-Wl,-rpath," + lib,
             "-laxrt_mpi", os.path.join(lib, "libaxrt.a"), "-lm", "-lpthread", "-o", exe])
    return (exe, "") if r.returncode == 0 else (None, r.stderr)


def state_values(text):
    import numpy as np
    return np.array([float(line.split()[1]) for line in text.splitlines()[1:]])


def exchange_cases(tmp):
    import numpy as np
    d = os.path.join(tmp, "exchange")
    os.makedirs(d)
    for n in (2, 3):
        ref_exe, err = exchange_program(d, n * B)
        exe, err2 = exchange_program(d, B) if n == 2 else (exe, "")
        if not ref_exe or not exe:
            return report(False, "mpi exchange: the split step builds against libaxrt_mpi", err + err2)
        ref = subprocess.run([ref_exe, str(STEPS), "whole", "0", "1"], capture_output=True, text=True, env=MPI_ENV)
        want = state_values(ref.stdout)
        for mode in ("buckets", "blocking"):
            r = subprocess.run(["mpirun", "--oversubscribe", "-np", str(n), exe, str(STEPS), mode, "128", "1"],
                               capture_output=True, text=True, env=MPI_ENV, timeout=120)
            got = state_values(r.stdout) if r.returncode == 0 else np.zeros(0)
            ok = r.returncode == 0 and got.shape == want.shape and want.size > 0
            worst = float(np.abs(got - want).max() / np.abs(want).max()) if ok else float("inf")
            report(ok and worst <= 1e-6, f"mpi exchange N={n} {mode}: libaxrt_mpi's buckets == one process on the "
                   f"global batch (1e-6; worst relative difference {worst:.3g})", r.stdout[:2000] + r.stderr)


def main():
    tmp = tempfile.mkdtemp(prefix="axc-mpi-")
    try:
        for name in SEAM_MODELS:
            seam_case(tmp, name)
        if not shutil.which("mpirun"):
            print("SKIP: mpi train (mpirun not found: sh scripts/deps.sh installs openmpi-bin)")
            return
        if not os.path.exists(os.path.join(BUILD, "lib", "libaxrt_mpi.so")):
            print("SKIP: mpi train (libaxrt_mpi.so not built: mpi.h not found when axc was built)")
            return
        init = write_init(tmp)
        train_cases(tmp, init)
        train_cases(tmp, init, ranks=(2,), extra=("--interp",))
        exchange_cases(tmp)
        fault_cases(tmp, init)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
