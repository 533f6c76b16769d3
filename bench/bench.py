"""`make bench`: the six benchmark models (examples/r1..r6), compiled by axc,
against PyTorch eager, plain C + OpenBLAS and oneDNN, in one run.

Steps: write seeded weights, inputs and float64 PyTorch references (once);
compile each model with axc and those weights; build the C harness (all C
systems in one binary, timed by one loop); start it and the PyTorch worker
pinned to one CPU; check every system's output against the reference; then
time in interleaved rounds (round-robin over systems, order rotated each
round) and report medians.  Output: a Markdown report on stdout and in
bench/results.md (with --record also bench/last-run.md, the committed copy).

Timings are reported, never judged: nothing here fails on a slow number.
"""
import argparse
import datetime
import os
import platform
import shlex
import subprocess
import sys

import torch_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SYSTEMS = ["axc", "pytorch", "openblas", "onednn"]
TITLES = {"axc": "axc", "pytorch": "PyTorch", "openblas": "OpenBLAS", "onednn": "oneDNN"}
ANCHOR_PEAK_GFLOPS = 217.0  # bench/anchors.md: one AVX-512 core, FMA loop
ANCHOR_L2_TRIAD_GBS = 106.0
TARGET_NS_PER_CELL = 0.25e9  # time per (row, system, round)
MAX_ITERS = 5000
MIN_ITERS = 3

# row: (description, FLOP, bytes moved at minimum or None when compute-bound)
MLP_FLOP = 2 * (784 * 256 + 256 * 10)
MLP_PARAM_BYTES = 4 * (784 * 256 + 256 + 256 * 10 + 10)
BERT_FLOP = 2 * 128 * 768 * (3 * 768 + 768 + 2 * 3072) + 2 * 2 * 12 * 128 * 128 * 64
ROW_INFO = {
    "R1": ("MLP 784-256-10, batch 1", MLP_FLOP, MLP_PARAM_BYTES + 4 * (784 + 10)),
    "R2": ("MLP 784-256-10, batch 32", 32 * MLP_FLOP, None),
    "R3": ("ResNet-18 block 56x56x64", 2 * 2 * 56 * 56 * 64 * 9 * 64, None),
    "R4": ("BERT-base layer, seq 128", BERT_FLOP, None),
    "R5": ("LayerNorm(768), batch 32", 8 * 32 * 768, 4 * (2 * 32 * 768 + 2 * 768)),
    "R6": ("softmax 10000, batch 32", 4 * 32 * 10000, 4 * 2 * 32 * 10000),
}


def log(message):
    print(message, file=sys.stderr, flush=True)


def run(cmd):
    log("  " + " ".join(shlex.quote(c) for c in cmd))
    subprocess.run(cmd, check=True)


def stale(target, sources):
    """True when target is missing or older than any source."""
    if not os.path.exists(target):
        return True
    mtime = os.path.getmtime(target)
    return any(os.path.getmtime(s) > mtime for s in sources)


def prepare_data(data_dir):
    for row in torch_rows.ROWS:
        io_file = f"{data_dir}/{row}.io.safetensors"
        if stale(io_file, [torch_rows.__file__]):
            log(f"bench: weights, input and reference for {row}")
            torch_rows.prepare(data_dir, row)


def generate_models(axc, data_dir, gen_dir):
    """axc-compiles examples/rN_*.ax with the row's weights into gen_dir."""
    for row, (stem, _, _) in torch_rows.ROWS.items():
        model, weights, out = f"{ROOT}/examples/{stem}.ax", f"{data_dir}/{row}.weights.safetensors", f"{gen_dir}/{stem}.c"
        if stale(out, [axc, model, weights]):
            run([axc, model, "-o", out, f"--weights={weights}"])


def pkg_config(*args):
    return shlex.split(subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True).stdout)


def compile_units(gen_dir):
    """(source, flags) for every object of the harness."""
    opt = ["-O3", "-march=native"]
    warn = ["-Wall", "-Wextra", "-Wshadow"]
    runtime = sorted(f"{ROOT}/runtime/{f}" for f in os.listdir(f"{ROOT}/runtime") if f.endswith(".c"))
    generated = [f"{gen_dir}/{stem}.c" for stem, _, _ in torch_rows.ROWS.values()]
    units = [(src, ["-std=c99", *opt, f"-I{ROOT}/runtime"]) for src in runtime + generated]
    units += [(f"{HERE}/{name}.c", ["-std=c11", *opt, *warn, f"-I{gen_dir}", f"-I{ROOT}/runtime"])
              for name in ("harness", "safetensors", "axc_rows", "dnnl_rows")]
    units.append((f"{HERE}/blas_rows.c", ["-std=c11", *opt, "-ffast-math", *warn, *pkg_config("--cflags", "openblas")]))
    return units


def build_harness(cc, gen_dir, obj_dir):
    """Compiles what changed and links DIR/harness; returns its path."""
    headers = [f"{HERE}/harness.h"]
    headers += [f"{ROOT}/runtime/{f}" for f in os.listdir(f"{ROOT}/runtime") if f.endswith((".h", ".inc"))]
    headers += [f"{gen_dir}/{f}" for f in os.listdir(gen_dir) if f.endswith(".h")]
    objects = []
    for src, flags in compile_units(gen_dir):
        obj = f"{obj_dir}/{os.path.basename(src)[:-2]}.o"
        if stale(obj, [src, *headers]):
            run([*shlex.split(cc), *flags, "-c", src, "-o", obj])
        objects.append(obj)
    exe = f"{obj_dir}/harness"
    if stale(exe, objects):
        libdir = pkg_config("--variable=libdir", "openblas")[0]
        run([*shlex.split(cc), *objects, "-o", exe, *pkg_config("--libs", "openblas"), f"-Wl,-rpath,{libdir}",
             "-ldnnl", "-lm"])
    return exe


class Worker:
    """A process speaking the harness.c line protocol, pinned to one CPU."""

    def __init__(self, cmd, cpu):
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply:
            raise RuntimeError(f"worker died answering '{line}'")
        return reply

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def worker_for(system, workers):
    return workers["pytorch" if system == "pytorch" else "c"]


def check_all(workers):
    """row -> system -> (status, detail): "ok"/"fail" with the relative
    error, or "n/a" with the reason (such a system is not timed)."""
    checks = {}
    for row in torch_rows.ROWS:
        checks[row] = {}
        for system in SYSTEMS:
            status, _, detail = worker_for(system, workers).ask(f"check {row} {system}").partition(" ")
            checks[row][system] = (status, detail)
            log(f"bench: check {row} {system}: {status} {detail}")
    return checks


def time_all(workers, checks, rounds):
    """row -> system -> list of per-round medians (ns), interleaved rounds."""
    runnable = {row: [s for s in SYSTEMS if checks[row][s][0] != "n/a"] for row in checks}
    iters = {}
    for row, systems in runnable.items():
        for system in systems:
            once = float(worker_for(system, workers).ask(f"time {row} {system} 1"))
            iters[row, system] = max(MIN_ITERS, min(MAX_ITERS, int(TARGET_NS_PER_CELL / max(once, 1.0))))
    samples = {row: {s: [] for s in systems} for row, systems in runnable.items()}
    for r in range(rounds):
        log(f"bench: round {r + 1} of {rounds}")
        for row, systems in runnable.items():
            k = r % len(systems)
            for system in systems[k:] + systems[:k]:
                reply = worker_for(system, workers).ask(f"time {row} {system} {iters[row, system]}")
                samples[row][system].append(float(reply))
    return samples


def median(values):
    v = sorted(values)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2


def machine_line(cc, versions):
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    compiler = subprocess.run([*shlex.split(cc), "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return f"{cpu}, {os.cpu_count()} CPUs; {compiler}; {versions}"


def percent(part, whole):
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def check_table(checks):
    lines = ["| row | " + " | ".join(TITLES[s] for s in SYSTEMS) + " |", "|---" * (len(SYSTEMS) + 1) + "|"]
    for row, per_system in checks.items():
        cells = [f"{status} ({detail})" if status == "n/a" else f"{status} {detail}" for status, detail in per_system.values()]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return lines


def time_table(checks, medians):
    others = SYSTEMS[1:]
    lines = ["| row | model | " + " | ".join(f"{TITLES[s]} µs" for s in SYSTEMS) + " | "
             + " | ".join(f"{TITLES[s]}/axc" for s in others) + " |", "|---" * (2 + len(SYSTEMS) + len(others)) + "|"]
    for row, (title, _, _) in ROW_INFO.items():
        t = medians[row]
        cells = [f"{t[s] / 1e3:.1f}{'' if checks[row][s][0] == 'ok' else ' (wrong)'}" if s in t else "n/a" for s in SYSTEMS]
        ratios = [f"{t[s] / t['axc']:.2f}" if s in t and "axc" in t else "n/a" for s in others]
        lines.append(f"| {row} | {title} | " + " | ".join(cells + ratios) + " |")
    return lines


def efficiency_table(medians, peak, triad):
    lines = ["| row | GFLOP | axc GFLOP/s | % of measured peak | % of 217 GFLOP/s | bytes moved | axc GB/s "
             "| % of measured L2 triad | % of 106 GB/s |", "|---" * 9 + "|"]
    for row, (_, flop, nbytes) in ROW_INFO.items():
        t = medians[row].get("axc")
        if not t:
            lines.append(f"| {row} | {flop / 1e9:.4f} |" + " n/a |" * 7)
            continue
        gflops = flop / t
        memory = ["-"] * 4
        if nbytes:
            gbs = nbytes / t
            memory = [f"{nbytes / 1e3:.0f} kB", f"{gbs:.1f}", percent(gbs, triad), percent(gbs, ANCHOR_L2_TRIAD_GBS)]
        lines.append(f"| {row} | {flop / 1e9:.4f} | {gflops:.2f} | {percent(gflops, peak)} | "
                     f"{percent(gflops, ANCHOR_PEAK_GFLOPS)} | " + " | ".join(memory) + " |")
    return lines


def report(machine, cpu, rounds, peak, triad, checks, medians):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# axc benchmark, {now}", "", f"Machine: {machine}.",
             f"Single thread, every process pinned to CPU {cpu}; {rounds} interleaved rounds, medians of per-round medians.",
             f"FMA peak measured here: {peak:.1f} GFLOP/s (anchors.md: {ANCHOR_PEAK_GFLOPS:.0f}); "
             f"L2 triad measured here: {triad:.1f} GB/s (anchors.md: {ANCHOR_L2_TRIAD_GBS:.0f}).", "",
             "## Correctness: max |y - ref| / max |ref| against PyTorch in float64 (tolerance 1e-4)", ""]
    lines += check_table(checks)
    lines += ["", "## Time: median µs; ratio = other / axc (> 1: axc is faster)", ""]
    lines += time_table(checks, medians)
    lines += ["", "## axc efficiency (bytes and bandwidth for the memory-bound rows R1, R5, R6)", ""]
    lines += efficiency_table(medians, peak, triad)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True, help="where data, generated code and the harness go")
    ap.add_argument("--axc", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--record", action="store_true", help="also write bench/last-run.md")
    args = ap.parse_args()
    data_dir, gen_dir, obj_dir = (f"{args.build_dir}/{d}" for d in ("data", "gen", "obj"))
    for d in (data_dir, gen_dir, obj_dir):
        os.makedirs(d, exist_ok=True)
    prepare_data(data_dir)
    generate_models(os.path.abspath(args.axc), data_dir, gen_dir)
    harness = build_harness(args.cc, gen_dir, obj_dir)
    cpu = max(os.sched_getaffinity(0))
    workers = {"c": Worker([harness, data_dir], cpu),
               "pytorch": Worker([sys.executable, f"{HERE}/torch_rows.py", data_dir], cpu)}
    versions = f"{workers['c'].ask('info')}; {workers['pytorch'].ask('info')}"
    peak, triad = float(workers["c"].ask("peak")), float(workers["c"].ask("triad"))
    checks = check_all(workers)
    samples = time_all(workers, checks, args.rounds)
    for w in workers.values():
        w.close()
    medians = {row: {s: median(v) for s, v in per.items()} for row, per in samples.items()}
    text = report(machine_line(args.cc, versions), cpu, args.rounds, peak, triad, checks, medians)
    print(text)
    for name in ["results.md"] + (["last-run.md"] if args.record else []):
        with open(f"{HERE}/{name}", "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
