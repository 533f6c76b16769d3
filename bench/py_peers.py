"""The ONNX-fed peers of `make bench`: ONNX Runtime, OpenVINO and XLA (jax.jit
on CPU), each run from the ONNX file that bench.py exported from the row's
PyTorch twin (DATA/ROW.onnx; BatchNorm already folded into the convolutions
by the exporter's constant folding, as deployment does).

XLA has no ONNX importer; run_onnx_jax() below walks the ONNX graph with jax
operations (static shape arithmetic stays in NumPy) and jax.jit compiles the
result, with the float weights passed as arguments rather than baked in as
constants.  Matrix products and convolutions ask for full float32 precision.

  python py_peers.py SYSTEM DATA_DIR THREADS
      SYSTEM: onnxruntime, openvino or xla; answers the line protocol of
      harness.c ("info", "check ROW SYSTEM", "time ROW SYSTEM ITERS").  Runs
      in the bench-local virtual environment (bench/venv.sh); a peer that
      cannot be imported or cannot load a row answers "n/a REASON".
      "kernels ROW SYSTEM": OpenVINO answers "TYPE=FLOP ..." (its matrix
      products' FLOP by the kernel each ran; "none" without any), the
      others "n/a".
"""
import json
import os
import struct
import sys
import time

import numpy as np

TOLERANCE = 1e-4


def load_safetensors(path):
    """F32 safetensors file -> name -> NumPy array."""
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8:8 + length]), raw[8 + length:]
    out = {}
    for name, info in header.items():
        if name != "__metadata__":
            begin, end = info["data_offsets"]
            out[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"]).copy()
    return out


# ---- ONNX Runtime ---------------------------------------------------------

def ort_setup(threads):
    import onnxruntime as ort

    def load(path):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        return lambda x: session.run(None, {name: x})[0]
    return f"ONNX Runtime {ort.__version__}", load


# ---- OpenVINO -------------------------------------------------------------

def openvino_setup(threads):
    import openvino as ov
    core = ov.Core()
    core.set_property("CPU", {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32",
                              "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})

    def load(path):
        compiled = core.compile_model(path, "CPU")
        request = compiled.create_infer_request()

        def run(x):
            request.infer({0: x})
            return request.get_output_tensor(0).data
        run.kernels = lambda: openvino_matrix_kernels(compiled)
        return run
    return f"OpenVINO {ov.__version__}", load


def openvino_matrix_kernels(compiled):
    """{primitive type: FLOP} of the compiled model's FullyConnected nodes
    (2 x outputs x the input's last dimension), the kernel each ran as the
    runtime model names it (e.g. brgemm_avx2_f32, or gemm_mlas_f32: MLAS,
    which picks its kernels from CPUID whatever ONEDNN_MAX_CPU_ISA says)."""
    flop = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        if info["layerType"].astype(str) != "FullyConnected":
            continue
        kind = info["primitiveType"].astype(str)
        k = op.input(0).get_partial_shape().to_shape()[-1]
        flop[kind] = flop.get(kind, 0) + 2 * int(np.prod(op.output(0).get_partial_shape().to_shape())) * int(k)
    return flop


# ---- XLA through jax ------------------------------------------------------

def xla_setup(threads):
    flags = os.environ.get("XLA_FLAGS", "")
    if threads == 1:
        flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    os.environ["XLA_FLAGS"] = flags.strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import onnx
    from onnx import numpy_helper

    def load(path):
        graph = onnx.load(path).graph
        static, params = {}, {}
        for init in graph.initializer:
            value = numpy_helper.to_array(init)
            (params if value.dtype == np.float32 else static)[init.name] = value
        params = jax.device_put(params)
        fn = jax.jit(lambda p, x: run_onnx_jax(graph, static, p, x))

        def run(x):
            return np.asarray(fn(params, x).block_until_ready())
        return run
    return f"XLA (jax {jax.__version__}, jax.jit on CPU)", load


def run_onnx_jax(graph, static, params, x):
    """Evaluates the ONNX graph on x with jax (under jit: traced once)."""
    from onnx import helper
    env = {**static, **params, graph.input[0].name: x}
    for node in graph.node:
        ins = [env[i] if i else None for i in node.input]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        outs = JAX_OPS[node.op_type](ins, attrs)
        for name, value in zip(node.output, outs if isinstance(outs, tuple) else (outs,)):
            env[name] = value
    return env[graph.output[0].name]


def _xp(*values):
    """NumPy when every operand is a static array (shape arithmetic), else jnp."""
    import jax.numpy as jnp
    return np if all(isinstance(v, (np.ndarray, np.generic)) for v in values if v is not None) else jnp


def _gemm(ins, a):
    A, B = ins[0], ins[1]
    A = A.T if a.get("transA", 0) else A
    B = B.T if a.get("transB", 0) else B
    y = a.get("alpha", 1.0) * _matmul(A, B)
    return y + a.get("beta", 1.0) * ins[2] if len(ins) > 2 and ins[2] is not None else y


def _matmul(A, B):
    import jax
    import jax.numpy as jnp
    return jnp.matmul(A, B, precision=jax.lax.Precision.HIGHEST)


def _conv(ins, a):
    import jax
    x, w = ins[0], ins[1]
    p = a.get("pads", [0, 0, 0, 0])
    y = jax.lax.conv_general_dilated(x, w, window_strides=a.get("strides", [1, 1]), padding=[(p[0], p[2]), (p[1], p[3])],
                                     rhs_dilation=a.get("dilations", [1, 1]), feature_group_count=a.get("group", 1),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"), precision=jax.lax.Precision.HIGHEST)
    return y + ins[2].reshape(1, -1, 1, 1) if len(ins) > 2 and ins[2] is not None else y


def _maxpool(ins, a):
    import jax
    import jax.numpy as jnp
    k, s, p = a["kernel_shape"], a.get("strides", [1, 1]), a.get("pads", [0, 0, 0, 0])
    return jax.lax.reduce_window(ins[0], -jnp.inf, jax.lax.max, (1, 1, *k), (1, 1, *s),
                                 [(0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])])


def _slice(ins, a):
    data, starts, ends = ins[0], ins[1], ins[2]
    axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
    steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for axis, b, e, s in zip(axes, starts, ends, steps):
        index[int(axis)] = slice(int(b), int(e), int(s))
    return data[tuple(index)]


def _reshape(ins, a):
    shape = [int(d) if d != 0 else ins[0].shape[i] for i, d in enumerate(ins[1])]
    return ins[0].reshape(shape)


def _layernorm(ins, a):
    import jax.numpy as jnp
    x, axis = ins[0], a.get("axis", -1)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = jnp.mean(x, axis=axes, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True)
    y = (x - mean) / jnp.sqrt(var + a.get("epsilon", 1e-5)) * ins[1]
    return y + ins[2] if len(ins) > 2 and ins[2] is not None else y


def _clip(ins, a):
    import jax.numpy as jnp
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("min", -np.inf)
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else a.get("max", np.inf)
    return jnp.clip(ins[0], lo, hi)


def _binary(op):
    return lambda ins, a: getattr(_xp(*ins), op)(ins[0], ins[1])


def _div(ins, a):
    """ONNX Div: integer operands divide as integers (shape arithmetic)."""
    xp = _xp(*ins)
    if all(np.issubdtype(np.asarray(v).dtype if xp is np else v.dtype, np.integer) for v in ins):
        return (xp.trunc(xp.true_divide(ins[0], ins[1]))).astype(np.asarray(ins[0]).dtype if xp is np else ins[0].dtype)
    return xp.divide(ins[0], ins[1])


def _jax_ops():
    import jax
    import jax.numpy as jnp
    from onnx import numpy_helper
    return {
        "Identity": lambda ins, a: ins[0],
        "Constant": lambda ins, a: numpy_helper.to_array(a["value"]),
        "Shape": lambda ins, a: np.array(ins[0].shape, dtype=np.int64),
        "Gather": lambda ins, a: _xp(*ins).take(ins[0], ins[1], axis=a.get("axis", 0)),
        "Unsqueeze": lambda ins, a: _xp(ins[0]).expand_dims(ins[0], tuple(int(i) for i in ins[1])),
        "Concat": lambda ins, a: _xp(*ins).concatenate(ins, axis=a["axis"]),
        "Slice": _slice,
        "Reshape": _reshape,
        "Flatten": lambda ins, a: ins[0].reshape(int(np.prod(ins[0].shape[:a.get("axis", 1)])), -1),
        "Transpose": lambda ins, a: jnp.transpose(ins[0], a.get("perm")),
        "Add": _binary("add"), "Sub": _binary("subtract"), "Mul": _binary("multiply"), "Div": _div,
        "Gemm": _gemm,
        "MatMul": lambda ins, a: _matmul(ins[0], ins[1]),
        "Conv": _conv,
        "MaxPool": _maxpool,
        "GlobalAveragePool": lambda ins, a: jnp.mean(ins[0], axis=(2, 3), keepdims=True),
        "Relu": lambda ins, a: jnp.maximum(ins[0], 0),
        "Clip": _clip,
        "Sigmoid": lambda ins, a: jax.nn.sigmoid(ins[0]),
        "HardSigmoid": lambda ins, a: jnp.clip(a.get("alpha", 0.2) * ins[0] + a.get("beta", 0.5), 0, 1),
        "HardSwish": lambda ins, a: ins[0] * jnp.clip(ins[0] / 6 + 0.5, 0, 1),
        "Erf": lambda ins, a: jax.lax.erf(ins[0]),
        "Softmax": lambda ins, a: jax.nn.softmax(ins[0], axis=a.get("axis", -1)),
        "LayerNormalization": _layernorm,
    }


JAX_OPS = {}
SETUPS = {"onnxruntime": ort_setup, "openvino": openvino_setup, "xla": xla_setup}


def worker(system, data_dir, threads):
    """Answers the harness.c protocol for one peer at a fixed thread count."""
    try:
        version, load = SETUPS[system](threads)
        if system == "xla":
            JAX_OPS.update(_jax_ops())
        broken = None
    except Exception as e:  # a missing or broken optional peer: every row n/a
        version, load, broken = f"{system} unavailable", None, f"{type(e).__name__}: {e}".splitlines()[0][:120]
    rows = {}
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["info"]:
            print(version if not broken else f"{version} ({broken})", flush=True)
            continue
        cmd, row = words[0], words[1]
        if broken:
            print(f"n/a {broken}", flush=True)
            continue
        if row not in rows:
            rows[row] = load_row(load, data_dir, row)
        run, x, ref, why = rows[row]
        if why:
            print(f"n/a {why}", flush=True)
        elif cmd == "kernels":  # FLOP of the matrix products by the kernel that ran them
            kernels = getattr(run, "kernels", None)
            flop = kernels() if kernels else None
            print(("n/a no kernel list" if flop is None else " ".join(f"{kind}={n}" for kind, n in sorted(flop.items()))
                   or "none"), flush=True)
        elif cmd == "check":
            y = np.asarray(run(x), dtype=np.float64).reshape(ref.shape)
            rel = np.abs(y - ref).max() / np.abs(ref).max()
            rel = rel if np.isfinite(rel) else float("inf")
            print(f"{'ok' if rel <= TOLERANCE else 'fail'} {rel:.3g}", flush=True)
        elif cmd == "time":
            run(x)
            times = []
            for _ in range(int(words[3])):
                t0 = time.perf_counter_ns()
                run(x)
                times.append(time.perf_counter_ns() - t0)
            print(f"{np.median(times):.0f}", flush=True)


def load_row(load, data_dir, row):
    """(run, x, ref, None), or (None, None, None, reason) when it cannot load."""
    path = f"{data_dir}/{row}.onnx"
    if not os.path.exists(path):
        return None, None, None, "no ONNX export of this row"
    try:
        io = load_safetensors(f"{data_dir}/{row}.io.safetensors")
        run = load(path)
        run(io["x"])
        return run, io["x"], io["ref"].astype(np.float64), None
    except Exception as e:
        return None, None, None, f"{type(e).__name__}: {e}".splitlines()[0][:120]


if __name__ == "__main__":
    worker(sys.argv[1], sys.argv[2], int(sys.argv[3]))
