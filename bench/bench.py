"""`make bench`: axc as its users build it, against PyTorch eager, C + OpenBLAS,
oneDNN, ONNX Runtime, OpenVINO and XLA, in one interleaved run.

Steps: write seeded weights, inputs, float64 PyTorch references and ONNX
exports (once; torch_rows.py, gen_models.py for the whole models); compile
each model with the *installed* axc (--stage, what `make install` wrote) and
build its C the way docs/cli.md tells users: `cc -O3 $(pkg-config --cflags
axrt)`, linked with `pkg-config --libs axrt` (no -march=native for axc's
code: the runtime picks its kernels at run time).  Then, for each thread
count: start the C harness (axc, OpenBLAS, oneDNN in one process), the
PyTorch worker and the ONNX-fed peers (py_peers.py in the bench-local virtual
environment, optional: missing ones are reported n/a), pinned to that many
CPUs; check every system's output against the reference; time in
interleaved rounds (round-robin over systems, order rotated each round) and
report medians.  Output: Markdown on stdout and in bench/results.md, the
ratio chart bench/results.svg (with --record also bench/last-run.md and
bench/last-run.svg, the committed copies docs/performance.md shows).

--smoke: rows R1 only, checks without timing; prints PASS/FAIL/SKIP lines
(the `bench` test suite) and fails when a check fails.

Timings are reported, never judged: nothing here fails on a slow number.
"""
import argparse
import collections
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time

import chart
import torch_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SYSTEMS = ["axc", "axc+openblas", "pytorch", "openblas", "onednn", "onnxruntime", "openvino", "xla"]
# axc+openblas: the same models compiled with --blas=openblas (float32 dense and
# matmul through cblas_sgemm); a column of its own, not a peer in the ratios.
PEERS = SYSTEMS[2:]
TITLES = {"axc": "axc", "axc+openblas": "axc+openblas", "pytorch": "PyTorch", "openblas": "OpenBLAS", "onednn": "oneDNN",
          "onnxruntime": "ONNX Runtime", "openvino": "OpenVINO", "xla": "XLA"}
# The process that runs each system: the C harness, the PyTorch worker, or
# one py_peers.py process per ONNX-fed peer.
GROUP = {"axc": "c", "axc+openblas": "c-blas", "openblas": "c", "onednn": "c", "pytorch": "pytorch",
         "onnxruntime": "onnxruntime", "openvino": "openvino", "xla": "xla"}
ANCHOR_PEAK_GFLOPS = 227.0  # shared/bench/anchors.md: one AVX-512 core, FMA loop
ANCHOR_L2_TRIAD_GBS = 106.0
TARGET_NS_PER_CELL = 0.25e9  # time per (row, system, round)
MAX_ITERS = 5000
MIN_ITERS = 3
SETTLE_S = 0.25  # idle before each multi-thread timing block (time_all)
TOLERANCE = 1e-4

MLP_PARAM_BYTES = 4 * (784 * 256 + 256 + 256 * 10 + 10)
# row: (title, minimum bytes moved for the memory-bound rows, else None)
ROW_INFO = {
    "R1": ("MLP 784-256-10, batch 1", MLP_PARAM_BYTES + 4 * (784 + 10)),
    "R2": ("MLP 784-256-10, batch 32", None),
    "R3": ("ResNet-18 block 56x56x64", None),
    "R4": ("BERT-base layer, seq 128", None),
    "R5": ("LayerNorm(768), batch 32", 4 * (2 * 32 * 768 + 2 * 768)),
    "R6": ("softmax 10000, batch 32", 4 * 2 * 32 * 10000),
    "R7": ("depthwise 3x3 + BN + ReLU6, 14x14x384", 4 * (2 * 14 * 14 * 384 + 384 * 9 + 384)),
    "M1": ("ResNet-18 (torchvision), 224x224", None),
    "M2": ("MobileNetV2 (torchvision), 224x224", None),
    "M3": ("EfficientNet-B0 (torchvision), 224x224", None),
    "M4": ("MiniLM-L6-shaped encoder, seq 128", None),
    "M5": ("MobileNetV3-Large (torchvision), 224x224", None),
}
# Elementwise rows whose FLOP the hooks in torch_rows.count_flop do not see.
ELEMENTWISE_FLOP = {"R5": 8 * 32 * 768, "R6": 4 * 32 * 10000}
GEMM_BOUND = ("R2", "R3", "R4", "M1", "M4")
# Rows whose FLOP are matrix products only, the same for every algorithm a
# peer may choose (no convolution, where Winograd does fewer): a peer faster
# than the measured FMA peak on one of them did not run float32 FMAs of the
# probed instruction set alone.
MATMUL_ROWS = ("R1", "R2", "R4", "M4")
# What axc's "amx" table does beyond AVX-512's (the report's head).
AMX_NOTE = (" (AVX-512's kernels, with dense layers of 32 rows or more (128 inputs and outputs) on the AMX "
            "tile unit, each float split into three BFloat16 parts, six products for one in Float32 accuracy, "
            "the model's weights kept converted: their rate is not bound by the FMA peak below)")
# --isa avx2: each system's own switch that holds it to AVX2 (on an AVX-512
# machine: the AVX2 table of every system that has one): the environment every
# worker inherits, XLA's flag, and what the report says was held and not.
ISA_HOLD = {"avx2": {
    "env": {"AXRT_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2",
            "OPENBLAS_CORETYPE": "Haswell"},
    "xla_flag": "--xla_cpu_max_isa=AVX2",
    "held": ("axc (AXRT_ISA=avx2), OpenBLAS (OPENBLAS_CORETYPE=Haswell), oneDNN and OpenVINO's CPU plugin "
             "(ONEDNN_MAX_CPU_ISA=AVX2), PyTorch (ATEN_CPU_CAPABILITY=avx2 and its oneDNN)"),
    "not_held": ("ONNX Runtime (MLAS picks its kernels from CPUID; no switch found) and XLA (jax 0.10 takes "
                 "XLA_FLAGS=--xla_cpu_max_isa=AVX2, yet its matrix products ran YNNPACK's AVX-512 kernel, and "
                 "with YNNPACK off its generated code multiplied on zmm registers: 124-186 GFLOP/s on one "
                 "core of a Sapphire Rapids Xeon whose AVX2 probe gives 116); their times are shown but "
                 "neither is anyone's best peer"),
    "unheld": ("onnxruntime", "xla"),
    # peers asked, row by row, which kernels ran their matrix products
    # (py_peers.py "kernels"), and the kernel names the hold does not cover:
    # OpenVINO's CPU plugin runs some FullyConnected nodes on MLAS
    # (gemm_mlas_f32), which picks AVX-512 from CPUID whatever
    # ONEDNN_MAX_CPU_ISA says (vfmadd231ps on zmm in its plugin library)
    "audited": ("openvino",),
    "unheld_kernels": r"mlas|avx512|amx"}}
# The peers the run's --isa could not hold (ISA_HOLD unheld): never a row's best peer.
UNHELD = set()
# row -> {peer: why}: a peer held to --isa in general whose matrix products,
# on this row, ran at least UNHELD_SHARE of the row's FLOP on kernels the
# hold does not cover (audit_kernels): not this row's best peer either.
UNHELD_IN_ROW = {}
UNHELD_SHARE = 0.1

def log(message):
    print(message, file=sys.stderr, flush=True)


def progress(message):
    """A progress line redrawn in place on a terminal; nothing otherwise
    (logs and CI stay quiet).  progress(None) erases it."""
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K" + (message or ""))
        sys.stderr.flush()


def run(cmd, **kw):
    log("  " + " ".join(shlex.quote(c) for c in cmd))
    subprocess.run(cmd, check=True, **kw)


def stale(target, sources):
    """True when target is missing or older than any source."""
    if not os.path.exists(target):
        return True
    mtime = os.path.getmtime(target)
    return any(os.path.getmtime(s) > mtime for s in sources)


def prepare_data(data_dir, rows):
    sources = [torch_rows.__file__, f"{HERE}/gen_models.py"]
    for row in rows:
        if stale(f"{data_dir}/{row}.io.safetensors", sources):
            log(f"bench: weights, input, reference and ONNX export for {row}")
            torch_rows.prepare(data_dir, row)


def model_source(row, data_dir):
    stem = torch_rows.ROWS[row][0]
    return f"{data_dir}/{row}.ax" if row[0] == "M" else f"{ROOT}/examples/{stem}.ax"


def generate_models(axc, data_dir, gen_dir, rows, extra=()):
    """Compiles each row's .ax with its weights (and the axc options extra)
    into gen_dir/ROW.c; returns row -> (C name of the model, arena macro)
    read from the header."""
    names = {}
    for row in rows:
        model, weights, out = model_source(row, data_dir), f"{data_dir}/{row}.weights.safetensors", f"{gen_dir}/{row}.c"
        if stale(out, [axc, model, weights]):
            run([axc, model, "-o", out, f"--weights={weights}", *extra])
        with open(f"{gen_dir}/{row}.h") as f:
            header = f.read()
        names[row] = (re.search(r"\bint (\w+)_forward\(", header).group(1),
                      re.search(r"#define (\w+_ARENA_BYTES)\b", header).group(1))
    return names


AXC_ROWS_TEMPLATE = """/* Generated by bench/bench.py: the axc system, one entry per compiled row,
 * calling <model>_forward with the row's input, output and its own arena. */
#include "harness.h"
{includes}

#define AXC_ROW(model, ARENA_BYTES)                                                   \\
    static const float *model##_x;                                                    \\
    static float *model##_y;                                                          \\
    static void *model##_arena;                                                       \\
    static const char *setup_##model(const bench_tensors *w, const float *x, float *y) \\
    {{                                                                                 \\
        (void)w; /* embedded in the generated code */                                 \\
        model##_x = x;                                                                \\
        model##_y = y;                                                                \\
        model##_arena = bench_floats((ARENA_BYTES) / sizeof(float) + 1);              \\
        return 0;                                                                     \\
    }}                                                                                 \\
    static void run_##model(void) {{ model##_forward(model##_x, model##_y, model##_arena); }}

{rows}

const bench_impl bench_axc_rows[] = {{
{table}
    {{0, 0, 0, 0}},
}};
"""


def write_axc_rows(gen_dir, names, system="axc"):
    text = AXC_ROWS_TEMPLATE.format(
        includes="\n".join(f'#include "{row}.h"' for row in names),
        rows="\n".join(f"AXC_ROW({model}, {arena})" for model, arena in names.values()),
        table="\n".join(f'    {{"{row}", "{system}", setup_{model}, run_{model}}},' for row, (model, _) in names.items()))
    path = f"{gen_dir}/axc_rows.c"
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    return path


def pkg_config(*args, stage=None):
    env = dict(os.environ)
    if stage:
        env["PKG_CONFIG_PATH"] = f"{stage}/lib/pkgconfig"
    return shlex.split(subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True,
                                      env=env).stdout)


def axrt_features(stage):
    """-D flags for what the installed axrt.h declares (thread count, ISA name)."""
    with open(f"{stage}/include/axrt.h") as f:
        header = f.read()
    flags = []
    if re.search(r"\baxrt_isa_name\s*\(", header):
        flags.append("-DBENCH_AXRT_ISA_NAME")
    if re.search(r"\baxrt_set_threads\s*\(", header):
        flags.append("-DBENCH_AXRT_SET_THREADS")
    return flags


# The user's build of generated code (docs/cli.md "Using it"): ordinary flags,
# the installed header and library through pkg-config.
USER_CFLAGS = ["-std=c99", "-O3"]


def compile_units(gen_dir, stage, rows, blas=False):
    """(source, flags) for every object of the harness (blas: the generated
    code was compiled with --blas=openblas and includes <cblas.h>)."""
    axrt = pkg_config("--cflags", "axrt", stage=stage)
    if blas:
        axrt = [*axrt, *pkg_config("--cflags", "openblas")]
    native = ["-O3", "-march=native"]
    warn = ["-Wall", "-Wextra", "-Wshadow"]
    units = [(f"{gen_dir}/{row}.c", [*USER_CFLAGS, *axrt]) for row in rows]
    units.append((f"{gen_dir}/axc_rows.c", ["-std=c11", "-O2", *warn, f"-I{HERE}", f"-I{gen_dir}", *axrt]))
    # The timing harness and the weight loader touch axc's side: ordinary
    # flags, as a user would build them; -march=native only for peer code.
    units.append((f"{HERE}/harness.c", ["-std=c11", "-O2", *warn, *axrt_features(stage), *axrt]))
    units.append((f"{HERE}/safetensors.c", ["-std=c11", "-O2", *warn]))
    units.append((f"{HERE}/limits.c", ["-std=c11", "-O2", *warn]))
    units.append((f"{HERE}/dnnl_rows.c", ["-std=c11", *native, *warn]))
    units.append((f"{HERE}/blas_rows.c", ["-std=c11", *native, "-ffast-math", *warn, *pkg_config("--cflags", "openblas")]))
    return units


def build_harness(cc, gen_dir, obj_dir, stage, rows, blas=False):
    """Compiles what changed and links DIR/harness; returns its path."""
    headers = [f"{HERE}/harness.h", f"{stage}/include/axrt.h"]
    headers += [f"{gen_dir}/{f}" for f in os.listdir(gen_dir) if f.endswith(".h")]
    objects = []
    for src, flags in compile_units(gen_dir, stage, rows, blas):
        obj = f"{obj_dir}/{os.path.basename(src)[:-2]}.o"
        if stale(obj, [src, *headers]):
            run([*shlex.split(cc), *flags, "-c", src, "-o", obj])
        objects.append(obj)
    exe = f"{obj_dir}/harness"
    libaxrt = f"{stage}/lib/libaxrt.a"
    if stale(exe, objects + [libaxrt]):
        libdir = pkg_config("--variable=libdir", "openblas")[0]
        run([*shlex.split(cc), *objects, "-o", exe, *pkg_config("--libs", "axrt", stage=stage),
             *pkg_config("--libs", "openblas"), f"-Wl,-rpath,{libdir}", "-ldnnl", "-lm"])
    return exe


class Worker:
    """A process speaking the harness.c line protocol, pinned to cpus."""

    def __init__(self, cmd, cpus, threads):
        n = str(threads)
        env = dict(os.environ, OMP_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, MKL_NUM_THREADS=n)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     preexec_fn=lambda: os.sched_setaffinity(0, cpus))

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


def start_workers(harness, harness_blas, data_dir, venv_python, cpus, threads):
    workers = {"c": Worker([harness, data_dir, str(threads)], cpus, threads),
               "c-blas": Worker([harness_blas, data_dir, str(threads)], cpus, threads),
               "pytorch": Worker([sys.executable, f"{HERE}/torch_rows.py", data_dir, str(threads)], cpus, threads)}
    for peer in ("onnxruntime", "openvino", "xla"):
        python = venv_python if venv_python and os.path.exists(venv_python) else sys.executable
        workers[peer] = Worker([python, f"{HERE}/py_peers.py", peer, data_dir, str(threads)], cpus, threads)
    return workers


def check_all(workers, rows, hold=None, flop=None):
    """row -> system -> (status, detail): "ok"/"fail" with the relative
    error, or "n/a" with the reason (such a system is not timed); under an
    --isa hold, its audited peers' rows too (audit_row_holds)."""
    checks = {}
    for row in rows:
        checks[row] = {}
        for system in SYSTEMS:
            try:
                reply = workers[GROUP[system]].ask(f"check {row} {system}")
            except (RuntimeError, BrokenPipeError) as e:
                reply = f"n/a {e}"
            status, _, detail = reply.partition(" ")
            checks[row][system] = (status, detail)
            log(f"bench: check {row} {system}: {status} {detail}")
    if hold:
        audit_row_holds(workers, rows, hold, flop)
    return checks


def time_once(workers, row, system, iters):
    """Median ns of iters runs, or None when the worker cannot answer (it
    died or replied n/a); such a system is dropped from later rounds."""
    try:
        return float(workers[GROUP[system]].ask(f"time {row} {system} {iters}"))
    except (RuntimeError, BrokenPipeError, ValueError) as e:
        log(f"bench: {row} {system} not timed: {e}")
        return None


def time_all(workers, checks, rounds, settle_s):
    """row -> system -> list of per-round medians (ns), interleaved rounds.
    Each timed block waits settle_s first: with several threads, the worker
    threads of the system timed before (OpenMP, OpenBLAS, ONNX Runtime, TBB
    pools spin for up to ~0.1 s after their work) must not share the cores
    with the one timed now; each system is then measured as a process alone
    on the machine would run."""
    runnable = {row: [s for s in SYSTEMS if checks[row][s][0] != "n/a"] for row in checks}
    iters = {}
    for row, systems in runnable.items():
        for system in list(systems):
            once = time_once(workers, row, system, 1)
            if once is None:
                systems.remove(system)
                continue
            iters[row, system] = max(MIN_ITERS, min(MAX_ITERS, int(TARGET_NS_PER_CELL / max(once, 1.0))))
    samples = {row: {s: [] for s in systems} for row, systems in runnable.items()}
    for r in range(rounds):
        for row, systems in runnable.items():
            k = r % len(systems) if systems else 0
            for system in systems[k:] + systems[:k]:
                progress(f"bench: round {r + 1} of {rounds}, {row}, {system}")
                time.sleep(settle_s)
                t = time_once(workers, row, system, iters[row, system])
                if t is None:
                    systems.remove(system)
                else:
                    samples[row][system].append(t)
    progress(None)
    return {row: {s: v for s, v in per.items() if v} for row, per in samples.items()}


def median(values):
    v = sorted(values)
    n = len(v)
    return (v[n // 2] + v[(n - 1) // 2]) / 2


def cpu_info(field):
    """The first CPU's /proc/cpuinfo field, or None where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            found = re.search(rf"^{field}\s*:\s*(.*)$", f.read(), re.M)
    except OSError:
        return None
    return found.group(1).strip() if found else None


def cpu_flags():
    return set((cpu_info("flags") or "").split())


def cpu_line():
    cpu = cpu_info("model name") or platform.processor() or platform.machine()
    have = cpu_flags()
    flags = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile") if f in have]
    return f"{cpu}, {os.cpu_count()} CPUs, ISA flags: {' '.join(flags) or 'unknown'}"


def percent(part, whole):
    return f"{100 * part / whole:.0f} %" if whole else "n/a"


def check_table(checks):
    lines = ["| row | " + " | ".join(TITLES[s] for s in SYSTEMS) + " |", "|---" * (len(SYSTEMS) + 1) + "|"]
    for row, per_system in checks.items():
        cells = [f"n/a ({detail})" if status == "n/a" else f"{status} {detail}" for status, detail in per_system.values()]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return lines


def fmt_time(ns):
    return f"{ns / 1e3:.1f} µs" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


def ratios(medians):
    """row -> peer -> peer time / axc time (rows and peers with both)."""
    return {row: {s: t[s] / t["axc"] for s in PEERS if s in t} for row, t in medians.items() if "axc" in t}


def held(system, row):
    """Whether the run's --isa held system on row (UNHELD, UNHELD_IN_ROW)."""
    return system not in UNHELD and system not in UNHELD_IN_ROW.get(row, {})


def best_peer(row, times, checks_row):
    """The peer with the least time among those whose output checked ok and
    that the run's --isa held on the row, or None."""
    ok = [s for s in PEERS if s in times and checks_row[s][0] == "ok" and held(s, row)]
    return min(ok, key=lambda s: times[s]) if ok else None


def audit_kernels(reply, pattern, flop):
    """Why a peer's "kernels" reply ("KIND=FLOP ...") shows it not held on a
    row of flop FLOP: the kinds matching pattern and their share of the row,
    where at least UNHELD_SHARE; else None (also for "n/a")."""
    if reply.startswith("n/a") or not flop:
        return None
    unheld = {}
    for word in reply.split():
        kind, _, n = word.partition("=")
        if re.search(pattern, kind):
            unheld[kind] = int(n)
    share = sum(unheld.values()) / flop
    return f"{', '.join(sorted(unheld))}: {share * 100:.0f} % of its FLOP" if share >= UNHELD_SHARE else None


def audit_row_holds(workers, rows, hold, flop):
    """UNHELD_IN_ROW from each audited peer's kernels, row by row."""
    for row in rows:
        for peer in hold["audited"]:
            try:
                reply = workers[GROUP[peer]].ask(f"kernels {row} {peer}")
            except (RuntimeError, BrokenPipeError) as e:
                reply = f"n/a {e}"
            why = audit_kernels(reply, hold["unheld_kernels"], flop[row])
            log(f"bench: kernels {row} {peer}: {reply}{' -> not held' if why else ''}")
            if why:
                UNHELD_IN_ROW.setdefault(row, {})[peer] = why


def unheld_rows_line():
    """The report's line naming the rows a peer was not held on, or []."""
    parts = [f"{TITLES[peer]} on {row} ({why})" for row, per in UNHELD_IN_ROW.items() for peer, why in per.items()]
    if not parts:
        return []
    return [f"Not held on single rows (matrix products on kernels the hold does not cover, as the peer names "
            f"them, {UNHELD_SHARE * 100:.0f} % of the row's FLOP or more; shown, never best): {'; '.join(parts)}."]


def time_table(checks, medians):
    lines = ["| row | model | " + " | ".join(TITLES[s] for s in SYSTEMS) + " | best peer / axc |",
             "|---" * (3 + len(SYSTEMS)) + "|"]
    r = ratios(medians)
    for row, t in medians.items():
        cells = [fmt_time(t[s]) + ("" if checks[row][s][0] == "ok" else " (wrong)") +
                 ("" if held(s, row) else " (not held)") if s in t else "n/a" for s in SYSTEMS]
        best = best_peer(row, t, checks[row])
        cells.append(f"{r[row][best]:.2f} ({TITLES[best]})" if best and row in r else "n/a")
        lines.append(f"| {row} | {ROW_INFO[row][0]} | " + " | ".join(cells) + " |")
    return lines


def ratio_table(medians, checks):
    if not ratios(medians):
        why = {detail for per_row in checks.values() for s, (st, detail) in per_row.items() if s == "axc" and st == "n/a"}
        return [f"(none: axc did not run{' — ' + '; '.join(sorted(why)) if why else ''})"]
    lines = ["| row | " + " | ".join(TITLES[s] for s in PEERS) + " |", "|---" * (1 + len(PEERS)) + "|"]
    for row, per_peer in ratios(medians).items():
        lines.append(f"| {row} | " + " | ".join(f"{per_peer[s]:.2f}" if s in per_peer else "n/a" for s in PEERS) + " |")
    return lines


def fastest_table(medians, fastest, checks):
    """Each row's best peer / axc on every system's fastest round, and the
    spread (median / fastest round) of axc and of that peer: on a machine
    shared with other tenants the median carries their load, which does not
    slow every system alike, and the fastest round is the nearest to a quiet
    machine (the medians stay the figures of record)."""
    lines = ["| row | best peer / axc, fastest rounds | axc: median / fastest | that peer: median / fastest |",
             "|---" * 4 + "|"]
    for row, t in fastest.items():
        best = best_peer(row, t, checks[row])
        if "axc" not in t or not best:
            continue
        lines.append(f"| {row} | {t[best] / t['axc']:.2f} ({TITLES[best]}) | {medians[row]['axc'] / t['axc']:.2f} | "
                     f"{medians[row][best] / t[best]:.2f} |")
    return lines


# The convolution kernels of the generated C, by what they compute.
CONV_KERNELS = {"axrt_conv2d_packed_f32": "direct", "axrt_conv2d_packed_ep_f32": "direct",
                "axrt_conv2d_depthwise_f32": "depthwise", "axrt_dwconv_inplace_f32": "depthwise",
                "axrt_expand_depthwise_f32": "expand+depthwise", "axrt_expand_dw_project_f32": "depth-first block",
                "axrt_conv2d_grouped_f32": "grouped"}


def conv_algorithms(gen_dir, row):
    """Which convolution algorithms the row's generated C calls, with counts
    ("Winograd F(4,3) x11, F(2,3) x2, direct x7"), or "-" for none.  A
    Winograd call's m is its second-to-last argument."""
    with open(f"{gen_dir}/{row}.c") as f:
        code = f.read()
    counts = collections.Counter()
    for args in re.findall(r"axrt_conv2d_winograd_f32\((.*?)\);", code, flags=re.S):
        m = args.split(",")[-2].strip()
        counts[f"Winograd F({m},3)"] += 1
    for name, algo in CONV_KERNELS.items():
        counts[algo] += len(re.findall(rf"\b{name}\(", code))
    return ", ".join(f"{algo} x{n}" for algo, n in sorted(counts.items()) if n) or "-"


def efficiency_table(medians, flop, peak, triad, gen_dir):
    """axc's rate against the machine: FLOP/s against the FMA peak, bytes/s
    against the L2 triad, and the time of the binding limit (the larger of
    FLOP / peak and bytes / triad) against the time taken; and the
    convolution algorithms that ran (Winograd does fewer multiply-adds than
    the direct FLOP counted here, so its rows can pass 100 %)."""
    lines = ["| row | GFLOP | axc GFLOP/s | % of measured FMA peak | bytes moved | axc GB/s | % of measured L2 triad "
             "| % of its bound | conv algorithm (calls) |", "|---" * 9 + "|"]
    for row in medians:
        t = medians[row].get("axc")
        if not t:
            lines.append(f"| {row} | {flop[row] / 1e9:.4f} |" + " n/a |" * 7)
            continue
        gflops = flop[row] / t
        nbytes = ROW_INFO[row][1]
        memory = [f"{nbytes / 1e3:.0f} kB", f"{nbytes / t:.1f}", percent(nbytes / t, triad)] if nbytes else ["-"] * 3
        share = percent(gflops, peak) + ("" if row in GEMM_BOUND else " (not GEMM-bound)")
        bound = max(flop[row] / peak if peak else 0.0, nbytes / triad if nbytes and triad else 0.0)
        lines.append(f"| {row} | {flop[row] / 1e9:.4f} | {gflops:.1f} | {share} | " + " | ".join(memory) +
                     f" | {percent(bound, t)} | {conv_algorithms(gen_dir, row)} |")
    return lines


def above_peak(medians, flop, peak, threads):
    """A line naming each peer that ran a MATMUL_ROWS row faster than
    `threads` cores at the measured FMA peak allow, or [] when none did."""
    if not peak:
        return []
    faster = [f"{TITLES[s]} on {row} ({flop[row] / t[s]:.0f} GFLOP/s)" for row, t in medians.items()
              if row in MATMUL_ROWS for s in PEERS if s in t and flop[row] / t[s] > peak * threads]
    if not faster:
        return []
    return [f"Faster than {threads} x the measured FMA peak ({peak * threads:.0f} GFLOP/s), so not float32 "
            f"FMAs of the probed instruction set alone: {'; '.join(faster)}.", ""]


def report(head, checks, medians_by_threads, fastest_by_threads, flop, peak, triad, gen_dir):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# axc benchmark, {now}", "", *head, "",
             f"## Correctness: max |y - ref| / max |ref| against PyTorch in float64 (tolerance {TOLERANCE:g})", ""]
    for threads, per_row in checks.items():
        lines += [f"{threads} thread{'s' if threads > 1 else ''}:", "", *check_table(per_row), ""]
    for threads, medians in medians_by_threads.items():
        lines += [f"## {threads} thread{'s' if threads > 1 else ''}: median time per run; "
                  "a wrong result is marked", "", *time_table(checks[threads], medians), "",
                  f"Ratio peer time / axc time ({threads} thread{'s' if threads > 1 else ''}; > 1: axc is faster):",
                  "", *ratio_table(medians, checks[threads]), "", *above_peak(medians, flop, peak, threads),
                  f"Fastest rounds ({threads} thread{'s' if threads > 1 else ''}): the ratio on each system's "
                  "fastest round, and how far each one's median is from it:", "",
                  *fastest_table(medians, fastest_by_threads[threads], checks[threads]), ""]
    if 1 in medians_by_threads:
        lines += ["## axc efficiency, 1 thread (FLOP: multiply-adds x 2 of matrix products and convolutions; "
                  "bytes: parameters + input + output for the memory-bound rows R1, R5, R6, R7)", "",
                  *efficiency_table(medians_by_threads[1], flop, peak, triad, gen_dir), ""]
    return "\n".join(lines)


def row_flop(data_dir, row):
    with open(f"{data_dir}/{row}.meta.json") as f:
        return json.load(f)["flop"] + ELEMENTWISE_FLOP.get(row, 0)


def smoke(workers, rows):
    """PASS/FAIL/SKIP per system for the rows' checks; True when none failed."""
    checks = check_all(workers, rows)
    ok = True
    for row, per_system in checks.items():
        for system, (status, detail) in per_system.items():
            word = {"ok": "PASS", "n/a": "SKIP"}.get(status, "FAIL")
            ok &= word != "FAIL"
            print(f"{word}: bench smoke {row} {system} against the float64 reference ({status} {detail})")
    return ok


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True, help="where data, generated code and the harness go")
    ap.add_argument("--stage", required=True, help="the prefix `make install` wrote (bin/axc, lib/pkgconfig)")
    ap.add_argument("--venv-python", help="python of the bench-local virtual environment (ONNX-fed peers)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--rows", default=",".join(ROW_INFO), help="comma-separated rows (default all)")
    ap.add_argument("--isa", choices=sorted(ISA_HOLD), help="hold axc and every peer that has a switch to this ISA")
    ap.add_argument("--smoke", action="store_true", help="R1 only, check without timing, PASS/FAIL lines")
    ap.add_argument("--record", action="store_true", help="also write bench/last-run.md and bench/last-run.svg")
    return ap.parse_args()


def main():
    args = parse_args()
    if args.isa:
        hold = ISA_HOLD[args.isa]
        os.environ.update(hold["env"])
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {hold['xla_flag']}".strip()
        UNHELD.update(hold["unheld"])
    rows = ["R1"] if args.smoke else args.rows.split(",")
    thread_counts = [1] if args.smoke else [int(t) for t in args.threads.split(",")]
    data_dir, gen_dir, harness, harness_blas = build_all(args, rows)
    blas_note = openblas_nearest_core(harness, data_dir)
    allowed = sorted(os.sched_getaffinity(0))
    checks, medians, fastest, head, peak, triad = {}, {}, {}, [], 0.0, 0.0
    flop = {row: row_flop(data_dir, row) for row in rows}
    for threads in thread_counts:
        if threads > len(allowed):
            log(f"bench: {threads} threads skipped: only {len(allowed)} CPUs allowed")
            continue
        cpus = set(allowed[-threads:])
        workers = start_workers(harness, harness_blas, data_dir, args.venv_python, cpus, threads)
        try:
            if args.smoke:
                return 0 if smoke(workers, rows) else 1
            if not head:
                head, peak, triad = machine_head(args, workers)
                head += blas_note
            checks[threads] = check_all(workers, rows, ISA_HOLD.get(args.isa), flop)
            samples = time_all(workers, checks[threads], args.rounds, SETTLE_S if threads > 1 else 0.0)
        finally:
            for w in workers.values():
                w.close()
        medians[threads] = {row: {s: median(v) for s, v in per.items()} for row, per in samples.items()}
        fastest[threads] = {row: {s: min(v) for s, v in per.items()} for row, per in samples.items()}
        head.append(f"{threads} thread{'s' if threads > 1 else ''}: processes pinned to CPU "
                    f"{','.join(map(str, sorted(cpus)))}"
                    + (f"; each timed block starts after {SETTLE_S} s idle, once the system timed before has "
                       "parked its spinning threads." if threads > 1 else "."))
    head += unheld_rows_line()
    text = report(head, checks, medians, fastest, flop, peak, triad, gen_dir)
    print(text)
    svg = chart.ratio_chart(medians, checks, [TITLES[s] for s in PEERS], PEERS, ROW_INFO)
    outputs = [("results.md", text), ("results.svg", svg)]
    if args.record:
        outputs += [("last-run.md", text), ("last-run.svg", svg)]
    for name, content in outputs:
        with open(f"{HERE}/{name}", "w") as f:
            f.write(content)
    if args.record:
        update_readme(f"{HERE}/../docs/performance.md", text)
    return 0


def build_all(args, rows):
    """Writes the rows' data, compiles their models with axc (and again with
    --blas=openblas) and builds the two C harnesses: returns the data folder,
    the generated code's folder and the harnesses."""
    stage = os.path.abspath(args.stage)
    data_dir, gen_dir, obj_dir, gen_blas, obj_blas = (f"{args.build_dir}/{d}" for d in
                                                      ("data", "gen", "obj", "gen-blas", "obj-blas"))
    for d in (data_dir, gen_dir, obj_dir, gen_blas, obj_blas):
        os.makedirs(d, exist_ok=True)
    prepare_data(data_dir, rows)
    write_axc_rows(gen_dir, generate_models(f"{stage}/bin/axc", data_dir, gen_dir, rows))
    harness = build_harness(args.cc, gen_dir, obj_dir, stage, rows)
    names_blas = generate_models(f"{stage}/bin/axc", data_dir, gen_blas, rows, ["--blas=openblas"])
    write_axc_rows(gen_blas, names_blas, "axc+openblas")
    return data_dir, gen_dir, harness, build_harness(args.cc, gen_blas, obj_blas, stage, rows, blas=True)


# OpenBLAS's DYNAMIC_ARCH build picks its kernels from the CPU's family and
# model; a build older than the CPU falls back to Prescott's SSE3 kernels
# (Debian's 0.3.21 on an Emerald Rapids Xeon, model 207: R2 at a quarter of
# the speed its SkylakeX kernels reach). OpenBLAS, axc+openblas and PyTorch
# (which multiplies through OpenBLAS) would then be timed on a fallback: the
# bench names the newest core this build has for the CPU's vector unit.
OPENBLAS_NEAREST_CORE = (("avx512f", "SkylakeX"), ("avx2", "Haswell"))


def openblas_nearest_core(harness, data_dir):
    """Sets OPENBLAS_CORETYPE for every worker where OpenBLAS chose Prescott on
    a CPU with AVX2 or AVX-512 and nobody set it: returns the report's line
    saying so (a list, empty where nothing was set)."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return []
    info = subprocess.run([harness, data_dir, "1"], input="info\n", capture_output=True, text=True).stdout
    if "core Prescott" not in info:
        return []
    have = cpu_flags()
    for flag, core in OPENBLAS_NEAREST_CORE:
        if flag in have:
            os.environ["OPENBLAS_CORETYPE"] = core
            return [f"OpenBLAS did not know this CPU and chose its Prescott (SSE3) kernels: every worker ran with "
                    f"OPENBLAS_CORETYPE={core}, the newest core of this build for the CPU's {flag} (OpenBLAS, "
                    "axc+openblas, and PyTorch, whose matrix products run on OpenBLAS)."]
    return []


README_BEGIN, README_END = "<!-- bench:last-run -->\n", "<!-- /bench:last-run -->"


def update_readme(path, text):
    """Replaces docs/performance.md's block between the bench:last-run markers with
    this report: its head lines, the chart, and its tables from the 1-thread
    timings on (headings as bold lines), so that the documented performance
    table is what the run printed."""
    with open(path) as f:
        readme = f.read()
    begin, end = readme.find(README_BEGIN), readme.find(README_END)
    if begin < 0 or end < begin:
        sys.exit(f"bench: {path} has no {README_BEGIN.strip()} ... {README_END} block")
    lines = text.splitlines()
    head = lines[2:lines.index("", 2)]
    tables = re.sub(r"^## (.*)$", r"**\1**", text[text.index("## 1 thread: median"):], flags=re.M)
    block = "\n".join([f"`bench/last-run.md`, {lines[0].lstrip('# ')} (`make bench BENCH_FLAGS=--record`):", "",
                       "\n".join(f"- {h}" for h in head), "",
                       "![peer time / axc time per row, from bench/last-run.svg](../bench/last-run.svg)", "",
                       tables.rstrip(), ""])
    with open(path, "w") as f:
        f.write(readme[:begin + len(README_BEGIN)] + block + readme[end:])


def machine_head(args, workers):
    """The report's first lines (machine, builds, the measured limits), the
    measured FMA peak (GFLOP/s) and L2 triad bandwidth (GB/s)."""
    compiler = subprocess.run([*shlex.split(args.cc), "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    versions = "; ".join(workers[g].ask("info") for g in ("c", "pytorch", "onnxruntime", "openvino", "xla"))
    peak, triad = float(workers["c"].ask("peak")), float(workers["c"].ask("triad"))
    isa = workers["c"].ask("isa")
    load = os.getloadavg()
    return [f"Machine: {cpu_line()}; load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} at the start.",
            f"Compiler: {compiler}. Peers: {versions}.",
            f"axc: generated C built as `{args.cc} {' '.join(USER_CFLAGS)} $(pkg-config --cflags axrt)`, linked with "
            f"`pkg-config --libs axrt` from `make install PREFIX=...`; kernel path libaxrt chose: "
            f"**{isa}**{AMX_NOTE if isa == 'amx' else ''}.",
            f"Measured on one core: FMA peak {peak:.1f} GFLOP/s"
            f"{' (AVX2 probe, AXRT_ISA=avx2)' if os.environ.get('AXRT_ISA') == 'avx2' else ''}, L2 triad {triad:.1f} GB/s "
            f"(anchors.md: {ANCHOR_PEAK_GFLOPS:.0f} GFLOP/s, {ANCHOR_L2_TRIAD_GBS:.0f} GB/s on a Xeon).",
            isa_line(args.isa),
            f"{args.rounds} interleaved rounds; each cell the median over rounds of the per-round median."], peak, triad


def isa_line(isa):
    """Which systems were held to an instruction set (--isa), or AXRT_ISA's
    choice for axc alone."""
    if isa:
        hold = ISA_HOLD[isa]
        return f"Held to {isa.upper()} (`--isa {isa}`): {hold['held']}. Not held: {hold['not_held']}."
    if os.environ.get("AXRT_ISA"):
        return f"axc held to AXRT_ISA={os.environ['AXRT_ISA']}; the peers chose their own kernels."
    return "Every system chose its own kernels for this CPU."


if __name__ == "__main__":
    sys.exit(main())
