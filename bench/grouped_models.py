"""`make bench-grouped`: the models whose time is in grouped convolutions,
torchvision's RegNet-Y-400MF (8 channels a group) and ResNeXt-50 32x4d (4 to
32), batch 1, 224x224, random weights (seed 0), on one thread: axc (the ONNX
export compiled by `axc run --bench`), PyTorch eager (channels_last,
inference_mode) and ONNX Runtime (the bench venv, bench/venv.sh), in
interleaved rounds, the system order rotated each round, every process
pinned to one CPU.  Two figures a system: the median wall time of a call and
its median CPU time (process time; for axc the CPU time of `--bench 1+5*RUNS`
less that of `--bench 1`, over 5*RUNS: the start-up, loading and packing the
weights, varies by some 0.2 s of CPU between processes).  On a shared machine
the wall time mostly measures the load (a process given 40 % of a core runs
2.5 times slower by the wall clock), the CPU time the code.
Each system's output is first checked against PyTorch's
(max |y - ref| / max |ref| <= 1e-4).  A measurement, not a test.

  python3 bench/grouped_models.py --axc build/bin/axc --venv-python build/bench/venv/bin/python \\
      [--dir build/bench/grouped] [--rounds 3] [--runs 10] [--models regnet_y_400mf,resnext50_32x4d]
  python3 bench/grouped_models.py --worker SYSTEM MODEL.onnx RUNS    (one timing, internal)
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import time

MODELS = ("regnet_y_400mf", "resnext50_32x4d")
TOLERANCE = 1e-4


def torch_model(name):
    import torch
    import torchvision.models as tvm
    torch.manual_seed(0)
    return getattr(tvm, name)(weights=None).eval()


def export(name, path):
    """The model's ONNX file, input x.npy and PyTorch output y.npy beside it."""
    import numpy as np
    import torch
    model = torch_model(name)
    torch.manual_seed(1)
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, x, path, input_names=["x"], output_names=["y"], opset_version=13)
    with torch.inference_mode():
        y = model(x)
    np.save(path + ".x.npy", x.numpy())
    np.save(path + ".y.npy", y.numpy())


def worker(system, path, runs):
    """Times `runs` calls after two warm-ups; prints the wall and CPU medians in ms, and
    writes the output to path.SYSTEM.npy for the check."""
    import numpy as np
    x = np.load(path + ".x.npy")
    if system == "onnxruntime":
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        call = lambda: session.run(None, {"x": x})[0]
    else:
        import torch
        torch.set_num_threads(1)
        name = os.path.basename(path)[:-len(".onnx")]
        model = torch_model(name).to(memory_format=torch.channels_last)
        xt = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)

        def call():
            with torch.inference_mode():
                return model(xt).numpy()
    np.save(f"{path}.{system}.npy", call())
    call()
    times, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        call()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    times.sort(), cpu.sort()
    print(f"median_ms {times[len(times) // 2] * 1e3:.3f} cpu_ms {cpu[len(cpu) // 2] * 1e3:.3f}")


def relative_error(path, system):
    import numpy as np
    got, ref = np.load(f"{path}.{system}.npy"), np.load(path + ".y.npy")
    return float(np.abs(got.reshape(ref.shape) - ref).max() / np.abs(ref).max())


def time_axc(axc, path, runs, check):
    cmd = [axc, "run", path, "--input", f"x={path}.x.npy"]
    if check:
        subprocess.run(cmd + ["--output", f"{path}.axc.npy"], check=True, capture_output=True)
    cpu = []
    for n in (1, 1 + 5 * runs):   # the same start-up (loading, packing) in both
        c0 = children_cpu()
        out = subprocess.run(cmd + ["--bench", str(n)], check=True, capture_output=True, text=True).stdout
        cpu.append(children_cpu() - c0)
    return float(re.search(r"median ([0-9.]+) us", out).group(1)) / 1e3, (cpu[1] - cpu[0]) / (5 * runs) * 1e3


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_peer(python, system, path, runs):
    out = subprocess.run([python, os.path.abspath(__file__), "--worker", system, path, str(runs)],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"median_ms ([0-9.]+) cpu_ms ([0-9.]+)", out)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=3, metavar=("SYSTEM", "MODEL", "RUNS"))
    ap.add_argument("--axc", default="build/bin/axc")
    ap.add_argument("--venv-python", default="build/bench/venv/bin/python")
    ap.add_argument("--dir", default="build/bench/grouped")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], int(args.worker[2]))
        return 0
    os.makedirs(args.dir, exist_ok=True)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})   # the children inherit it
    systems = {"axc": lambda p, check=False: time_axc(args.axc, p, args.runs, check),
               "pytorch": lambda p, check=False: time_peer(sys.executable, "pytorch", p, args.runs)}
    if os.path.exists(args.venv_python):
        systems["onnxruntime"] = lambda p, check=False: time_peer(args.venv_python, "onnxruntime", p, args.runs)
    else:
        print(f"bench-grouped: no {args.venv_python} (sh bench/venv.sh DIR): ONNX Runtime n/a", file=sys.stderr)
    names = list(systems)
    print(f"| model | clock | {' | '.join(names)} | " + " | ".join(f"{n} / axc" for n in names[1:]) + " |")
    print("|---" * (2 * len(names) + 1) + "|")
    for model in args.models.split(","):
        path = os.path.join(args.dir, model + ".onnx")
        if not os.path.exists(path + ".y.npy"):
            export(model, path)
        times = {n: [] for n in names}
        for n in names:   # the check run also warms caches
            systems[n](path, check=True)
            err = relative_error(path, n)
            print(f"# {model} {n}: max |y - ref| / max |ref| = {err:.2e}" + ("" if err <= TOLERANCE else " WRONG"),
                  file=sys.stderr)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                times[n].append(systems[n](path))
        for clock, k in (("wall", 0), ("CPU", 1)):
            med = {n: sorted(t[k] for t in ts)[len(ts) // 2] for n, ts in times.items()}
            print(f"| {model} | {clock} | " + " | ".join(f"{med[n]:.1f} ms" for n in names) + " | " +
                  " | ".join(f"{med[n] / med['axc']:.2f}" for n in names[1:]) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
