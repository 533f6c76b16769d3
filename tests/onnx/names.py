"""Generated C from hostile names and constants (issue 33): every model must
give C that compiles with -std=c99 -Wall -Wextra -Wpedantic -Werror and
computes what the reference interpreter computes.

  G17  a model named after the runtime (axrt.onnx, AXRT_x.onnx, axk.onnx,
       __x.onnx), and inputs/outputs named after what the generated code
       uses (memcpy, expf, INFINITY, int64_t, axrt_relu_f32, arena, the
       model's own constants m_p3): mangled by ir_names.c's one rule.  A .ax
       model named axrt_layer (compiled with --profile) is refused, located.
  G18  --emit=ax of inputs whose names differ only in punctuation (a-b,
       a_b, a.b): distinct names, and the printed .ax compiles; inputs and
       outputs named '+', '-', '*' give distinct C arguments.
  G22  NaN and infinite ONNX scalars (LeakyRelu/Elu/Selu/HardSigmoid
       attributes, Clip bounds, a rank-0 constant operand, BatchNorm and
       LayerNorm epsilon): spelled as C99 can spell them."""
import os
import shlex
import subprocess
import tempfile

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None

AXC = os.path.abspath(os.environ.get("AXC", "build/bin/axc"))
ROOT = os.environ.get("AXC_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("AXC_BUILD", os.path.join(ROOT, "build"))
CC = shlex.split(os.environ.get("CC", "cc"))
WARN = ["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]
FAILED = []


def report(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'}: {name}")
    if not ok:
        FAILED.append(name)
        if detail:
            print("  " + str(detail).replace("\n", "\n  ")[:3000])


def model(nodes, inputs, outputs, inits=(), opset=13, shape=(2, 4)):
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in inputs]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs]
    g = helper.make_graph(nodes, "g", ins, outs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def axc(*args, cwd):
    return subprocess.run([AXC, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def compiles_and_matches(d, label, path, inputs, shape=(2, 4)):
    """path -> C built with WARN; `axc run` (the C) == `axc run --interp`."""
    r = axc(path, "-o", "m.c", cwd=d)
    if r.returncode:
        report(f"{label}: axc compiles it", False, r.stderr)
        return
    b = subprocess.run([*CC, *WARN, "-c", "-I", f"{BUILD}/include", "m.c", "-o", "m.o"], cwd=d,
                       capture_output=True, text=True)
    if b.returncode:
        report(f"{label}: the C compiles with {' '.join(WARN)}", False, b.stderr)
        return
    rng = np.random.default_rng(3)
    args = []
    for k, name in enumerate(inputs):
        np.save(f"{d}/in{k}.npy", (rng.standard_normal(shape) * 3).astype(np.float32))
        args += ["--input", f"{name}=in{k}.npy"]
    results = []
    for mode in ([], ["--interp"]):
        out = f"{d}/out{len(results)}"
        os.makedirs(out, exist_ok=True)
        r = axc("run", path, *args, *mode, "--output-dir", out, cwd=d)
        if r.returncode:
            report(f"{label}: axc run {' '.join(mode)}", False, r.stderr)
            return
        results.append({f: np.load(f"{out}/{f}") for f in sorted(os.listdir(out))})
    same = results[0].keys() == results[1].keys() and all(
        np.allclose(results[0][k], results[1][k], rtol=1e-5, atol=1e-6, equal_nan=True) for k in results[0])
    report(f"{label}: compiles with -Wpedantic -Werror, the C computes what the interpreter does", same,
           {k: (results[0][k], results[1].get(k)) for k in results[0]})


def runtime_names(d):
    """G17: model names from file names, argument names from value names."""
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    for stem in ("axrt", "AXRT_relu", "axk", "axc_profile", "__x", "_X"):
        sub = os.path.join(d, stem)
        os.makedirs(sub)
        onnx.save(model(relu, ["x"], ["y"]), f"{sub}/{stem}.onnx")
        compiles_and_matches(sub, f"G17 model file {stem}.onnx", f"{stem}.onnx", ["x"])
    names = ["memcpy", "expf", "INFINITY", "int64_t", "axrt_relu_f32", "arena", "m_p0", "x0_", "status"]
    nodes = [helper.make_node("Add", [names[0], names[1]], ["s"]), helper.make_node("Mul", ["s", names[2]], ["t"])]
    for k in range(3, 7):
        nodes.append(helper.make_node("Add", ["t" if k == 3 else f"u{k - 1}", names[k]], [f"u{k}"]))
    w = numpy_helper.from_array(np.full((2, 4), 0.5, np.float32), "w")
    nodes.append(helper.make_node("Mul", ["u6", "w"], [names[7]]))
    nodes.append(helper.make_node("Relu", [names[7]], [names[8]]))
    sub = os.path.join(d, "args")
    os.makedirs(sub)
    onnx.save(model(nodes, names[:7], [names[7], names[8]], [w]), f"{sub}/m.onnx")
    compiles_and_matches(sub, "G17 inputs and outputs named memcpy, expf, INFINITY, int64_t, axrt_*, arena, m_p0",
                         "m.onnx", names[:7])


def ax_model_name(d):
    """G17: a .ax model name with the runtime's prefix is refused, located."""
    for name in ("axrt", "axrt_layer", "AXRT_x"):
        open(f"{d}/m.ax", "w").write(f"@axiom {name}(x::Float32[1, 4]) begin\n    relu\nend\n")
        r = axc("m.ax", "--profile", "-o", "m.c", cwd=d)
        report(f"G17 .ax model named {name}: refused with a located error",
               r.returncode == 1 and "m.ax:1:" in r.stderr and f"model name '{name}' is reserved" in r.stderr
               and not os.path.exists(f"{d}/m.c"), (r.returncode, r.stderr))


def punctuation(d):
    """G18: a-b, a_b and a.b stay three inputs through --emit=ax."""
    names = ["a-b", "a_b", "a.b"]
    nodes = [helper.make_node("Add", ["a-b", "a_b"], ["s"]), helper.make_node("Sub", ["s", "a.b"], ["y-1"]),
             helper.make_node("Relu", ["s"], ["y_1"])]
    onnx.save(model(nodes, names, ["y-1", "y_1"]), f"{d}/p.onnx")
    r = axc("p.onnx", "--emit=ax", "-o", "p.ax", cwd=d)
    if r.returncode:
        report("G18 --emit=ax of inputs a-b, a_b, a.b", False, r.stderr)
        return
    header = [line for line in open(f"{d}/p.ax") if line.startswith("@axiom")][0]
    params = [p.split("::")[0].strip() for p in header[header.index("(") + 1:header.rindex(")")].split(",")
              if "::" in p]
    report("G18 --emit=ax gives a-b, a_b, a.b three distinct names", len(set(params)) == 3, header)
    r = axc("p.ax", "-o", "p.c", cwd=d)
    report("G18 the printed .ax compiles", r.returncode == 0, r.stderr)
    # '+', '-' and '*' all become '_': the second one's "__" is a spelling C
    # reserves, so appending alone never ended (a fuzzer finding)
    nodes = [helper.make_node("Sub", ["+", "-"], ["*"])]
    onnx.save(model(nodes, ["+", "-"], ["*"]), f"{d}/u.onnx")
    compiles_and_matches(d, "G18 inputs '+', '-' and output '*' (each '_' once mangled)", "u.onnx", ["+", "-"])


def nonfinite(d):
    """G22: each scalar that can be NaN or infinite, in each spelling."""
    def scalar(name, v):
        return numpy_helper.from_array(np.array(v, np.float32), name)
    cases = []
    for v, tag in ((np.inf, "inf"), (-np.inf, "-inf"), (np.nan, "nan")):
        cases += [
            (f"LeakyRelu alpha={tag}", [helper.make_node("LeakyRelu", ["x"], ["y"], alpha=float(v))], []),
            (f"Elu alpha={tag}", [helper.make_node("Elu", ["x"], ["y"], alpha=float(v))], []),
            (f"Selu gamma={tag}", [helper.make_node("Selu", ["x"], ["y"], gamma=float(v))], []),
            (f"HardSigmoid beta={tag}", [helper.make_node("HardSigmoid", ["x"], ["y"], beta=float(v))], []),
            (f"Add of a rank-0 constant {tag}", [helper.make_node("Add", ["x", "c"], ["y"])], [scalar("c", v)]),
        ]
    cases += [
        ("Clip to [-inf, inf]", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
         [scalar("lo", -np.inf), scalar("hi", np.inf)]),
        ("Clip to [-inf, 0.5]", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
         [scalar("lo", -np.inf), scalar("hi", 0.5)]),
        ("LayerNormalization epsilon=inf",
         [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=float("inf"))],
         [numpy_helper.from_array(np.ones(4, np.float32), "g"), numpy_helper.from_array(np.ones(4, np.float32), "b")]),
    ]
    for k, (label, nodes, inits) in enumerate(cases):
        sub = os.path.join(d, f"nf{k}")
        os.makedirs(sub)
        opset = 17 if "LayerNormalization" in label else 13
        onnx.save(model(nodes, ["x"], ["y"], inits, opset=opset), f"{sub}/m.onnx")
        compiles_and_matches(sub, f"G22 {label}", "m.onnx", ["x"])


def main():
    if onnx is None:
        print("SKIP: onnx names and constants (needs python3-onnx)")
        return 0
    for part in (runtime_names, ax_model_name, punctuation, nonfinite):
        with tempfile.TemporaryDirectory() as d:
            part(d)
    return 1 if FAILED else 0


if __name__ == "__main__":
    raise SystemExit(main())
