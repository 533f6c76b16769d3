"""GPU rows of the benchmark (never a timed test): axc's cuda target against
PyTorch eager CUDA and torch.compile on R1-R6 at their batch sizes and at
batch 256, GEMM throughput as a share of cuBLAS on the same shapes, and the
memory-bound rows as a share of the measured device bandwidth.

Each row: `axc --target=cuda` writes host C, built here into a shared object
against libaxrt_gpu; its <name>_forward_device runs on PyTorch's device
buffers and current stream (the same primary context), timed with CUDA events
after warm-up.  With no GPU (torch.cuda.is_available() false) it says so and
exits 0: the figures then wait for a machine with a device.

Usage: python3 bench/gpu_rows.py [--build DIR] [--runs N] [--rows R1,R2,...]
       python3 bench/gpu_rows.py --generate DIR [--build DIR]   (no GPU needed)
       python3 bench/gpu_rows.py --generated DIR --build BUNDLE
--generate writes each row's and batch's .ax and cuda-target C into DIR/ROW.BATCH
(make gpu-bundle does), so that --generated can time them on a device machine
without axc; BUNDLE then holds include/ and lib/ as a build folder does.
R4 (BERT layer) is timed for axc only (its PyTorch twin is the BERT rows of
bench/torch_rows.py, on the CPU)."""
import argparse
import ctypes
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = {
    "R1": ("examples/r1_mlp_b1.ax", "mlp"),
    "R2": ("examples/r2_mlp_b32.ax", "mlp"),
    "R3": ("examples/r3_resnet_block.ax", "block"),
    "R4": ("examples/r4_bert_layer.ax", "bert"),
    "R5": ("examples/r5_layernorm.ax", "layernorm"),
    "R6": ("examples/r6_softmax.ax", "softmax"),
}


def with_batch(text, batch):
    """The .ax text with its first input's leading dimension set to batch."""
    return re.sub(r"(::Float32\[)(\d+)", lambda m: m.group(1) + str(batch), text, count=1)


def generate_model(build, ax_text, work):
    """Writes work/m.ax and axc's cuda-target C for it (work/m.c, work/m.h)."""
    ax = os.path.join(work, "m.ax")
    open(ax, "w").write(ax_text)
    axc = os.path.join(build, "bin", "axc")
    subprocess.run([axc, "--seed=0", "--target=cuda", ax, "-o", os.path.join(work, "m.c")], check=True,
                   capture_output=True)


def build_model(build, work):
    """work/m.c built into a shared object against build's libaxrt_gpu."""
    so = os.path.join(work, "m.so")
    subprocess.run(["cc", "-std=c99", "-O2", "-fPIC", "-shared", os.path.join(work, "m.c"),
                    "-I" + os.path.join(build, "include"), os.path.join(build, "lib", "libaxrt_gpu.a"),
                    "-ldl", "-o", so], check=True)
    name = re.search(r"extern const axrt_gpu_model (\w+)_gpu_model;", open(os.path.join(work, "m.h")).read())
    return ctypes.CDLL(so), name.group(1)


def row_cases(rows, generated=None):
    """(row, batch, .ax text at that batch) for each row: its own batch and
    256; with generated, the rows and texts that --generate wrote there."""
    for row in rows.split(","):
        if generated:
            for work in sorted(glob.glob(os.path.join(generated, row + ".*")), key=lambda w: int(w.rsplit(".", 1)[1])):
                yield row, int(work.rsplit(".", 1)[1]), open(os.path.join(work, "m.ax")).read()
            continue
        text = open(os.path.join(ROOT, ROWS[row][0])).read()
        first = int(re.search(r"::Float32\[(\d+)", text).group(1))
        for batch in sorted({first, 256}):
            yield row, batch, with_batch(text, batch)


def torch_module(kind, shape, torch):
    nn = torch.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10), nn.Softmax(-1))
    if kind == "layernorm":
        return nn.LayerNorm(shape[-1])
    if kind == "softmax":
        return nn.Softmax(-1)

    class Block(nn.Module):  # NCHW, as PyTorch runs it
        def __init__(self):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64)
            self.c2, self.b2 = nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64)

        def forward(self, x):
            return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)
    return Block()


def time_ms(fn, runs, torch):
    for _ in range(max(3, runs // 10)):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / runs


def axc_row(lib, name, shape, out_shape, runs, torch):
    err = ctypes.create_string_buffer(8192)
    init = getattr(lib, name + "_init")
    init.restype = ctypes.c_void_p
    gpu = init(err, ctypes.c_size_t(len(err)))
    if not gpu:
        raise RuntimeError(err.value.decode())
    x = torch.randn(*shape, device="cuda")
    y = torch.empty(*out_shape, device="cuda")
    fwd = getattr(lib, name + "_forward_device")
    fwd.argtypes = [ctypes.c_void_p] * 4
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    return time_ms(lambda: fwd(gpu, x.data_ptr(), y.data_ptr(), stream), runs, torch)


def print_head(torch):
    """Prints the device, its measured copy bandwidth and the table's head;
    returns the bandwidth in GB/s."""
    dev = torch.cuda.get_device_name(0)
    big = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    copy_ms = time_ms(lambda: big.clone(), 20, torch)
    bandwidth = 2 * big.numel() / (copy_ms * 1e-3) / 1e9
    print(f"device: {dev}; measured copy bandwidth {bandwidth:.0f} GB/s")
    print("| row | batch | axc ms | eager ms | compile ms | axc vs eager | note |")
    print("|---|---|---|---|---|---|---|")
    return bandwidth


def time_row(args, torch, bandwidth, row, batch, text):
    """Builds one row at one batch (or takes --generated's C), times axc and
    PyTorch on it and prints its table line."""
    kind = ROWS[row][1]
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(args.generated, f"{row}.{batch}") if args.generated else tmp
        if not args.generated:
            generate_model(args.build, text, work)
        lib, name = build_model(args.build, work)
        shape = [int(d) for d in re.search(r"::Float32\[([\d, ]+)\]", text).group(1).split(",")]
        if kind == "bert":
            t_axc = axc_row(lib, name, shape, shape, args.runs, torch)
            print(f"| {row} | {batch} | {t_axc:.4f} | - | - | - | axc only |")
            return
        tshape = [shape[0], shape[3], shape[1], shape[2]] if kind == "block" else shape
        m = torch_module(kind, tshape, torch).cuda().eval()
        x = torch.randn(*tshape, device="cuda")
        with torch.no_grad():
            y = m(x)
            out_shape = list(y.shape) if kind != "block" else shape
            t_axc = axc_row(lib, name, shape, out_shape, args.runs, torch)
            t_eager = time_ms(lambda: m(x), args.runs, torch)
            try:
                mc = torch.compile(m)
                t_comp = time_ms(lambda: mc(x), args.runs, torch)
            except Exception as e:  # no Triton, say
                t_comp, why = float("nan"), f"torch.compile: {type(e).__name__}"
            else:
                why = ""
        note = why
        if kind == "mlp":
            flop = 2 * batch * (784 * 256 + 256 * 10)
            w1 = torch.randn(784, 256, device="cuda")
            a = torch.randn(batch, 784, device="cuda")
            t_blas = time_ms(lambda: a @ w1, args.runs, torch)
            note += f" GEMM {flop / t_axc / 1e9:.2f} TFLOP/s; cuBLAS first GEMM {2 * batch * 784 * 256 / t_blas / 1e9:.2f}"
        if kind in ("layernorm", "softmax"):
            note += f" {2 * 4 * x.numel() / (t_axc * 1e-3) / 1e9 / bandwidth:.0%} of bandwidth"
        print(f"| {row} | {batch} | {t_axc:.4f} | {t_eager:.4f} | {t_comp:.4f} | "
              f"{t_eager / t_axc:.2f}x | {note.strip()} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--rows", default="R1,R2,R3,R4,R5,R6")
    ap.add_argument("--generate", metavar="DIR", help="only write each row's C into DIR")
    ap.add_argument("--generated", metavar="DIR", help="time the C that --generate wrote")
    args = ap.parse_args()
    if args.generate:
        for row, batch, text in row_cases(args.rows):
            work = os.path.join(args.generate, f"{row}.{batch}")
            os.makedirs(work, exist_ok=True)
            generate_model(args.build, text, work)
        return 0
    try:
        import torch
    except ImportError:
        print("gpu rows: no PyTorch: nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("gpu rows: no GPU present (torch.cuda.is_available() is false): "
              "the GPU figures wait for a machine with a device")
        return 0
    bandwidth = print_head(torch)
    for row, batch, text in row_cases(args.rows, args.generated):
        time_row(args, torch, bandwidth, row, batch, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
