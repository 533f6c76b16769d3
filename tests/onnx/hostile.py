"""Malformed and hostile ONNX models: each gives a clear error, exit status 1
and no output file.  Plus external data beside the model, which is read."""
import os
import subprocess
import tempfile

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None


def relu_graph(nodes=None, inits=(), inputs=None, opset=13):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = nodes or [helper.make_node("Relu", ["x"], ["y"], name="r")]
    g = helper.make_graph(nodes, "g", inputs or [x], [y], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def add_w(w):
    """y = x + w (w an initializer)."""
    return relu_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [w])


def cases(d):
    good = relu_graph().SerializeToString()
    yield "truncated", good[: len(good) // 2], r"not a valid ONNX model"
    yield "empty", b"", r"not a valid ONNX model"
    yield "garbage", bytes(range(256)) * 4, r"not a valid ONNX model"
    huge = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40])
    yield "huge dims", add_w(huge).SerializeToString(), r"tensor 'w' has a negative or too large dimension"
    neg = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-1, 4])
    yield "negative dims", add_w(neg).SerializeToString(), r"tensor 'w' has a negative or too large dimension"
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], raw_data=b"\0" * 8)
    yield "short raw data", add_w(short).SerializeToString(), r"tensor 'w' has 8 bytes of raw data for its 4 elements"
    few = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], float_data=[1.0, 2.0])
    yield "too few values", add_w(few).SerializeToString(), r"tensor 'w' has 2 values for its 4 elements"
    cyc = [helper.make_node("Relu", ["b"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="second"),
           helper.make_node("Add", ["x", "a"], ["y"], name="add")]
    yield "cyclic graph", relu_graph(cyc).SerializeToString(), r"ONNX node 'first' \(Relu\): input 'b' is not defined before this node"
    miss = [helper.make_node("Add", ["x", "missing_w"], ["y"], name="add")]
    yield "missing initializer", relu_graph(miss).SerializeToString(), r"ONNX node 'add' \(Add\): input 'missing_w' is not defined"
    unsup = [helper.make_node("NonZero", ["x"], ["t"], name="n1"), helper.make_node("Unique", ["t"], ["y"], name="u1")]
    yield "unsupported ops listed", relu_graph(unsup).SerializeToString(), r"unsupported ONNX operators in 2 nodes: 'n1' \(NonZero, opset 13\), 'u1' \(Unique, opset 13\)"
    dyn = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    yield "dynamic input", relu_graph(inputs=[dyn]).SerializeToString(), r"input 'x' has a dynamic or non-positive dimension 0 \('N'\)"
    yield "opset 22", relu_graph(opset=22).SerializeToString(), r"uses ONNX opset 22, which is unsupported"
    for op, rows, what in (("GRU", 12, "R 'r' does not have the shape"), ("LSTM", 17, "W 'w' does not have the shape")):
        w = numpy_helper.from_array(np.zeros((1, rows if op == "LSTM" else 12, 4), np.float32), "w")
        r = numpy_helper.from_array(np.zeros((1, 12, 3), np.float32), "r")   # hidden_size 4 wants [1, G*4, 4]
        rnn = [helper.make_node(op, ["x3", "w", "r"], ["", "y"], name="rnn", hidden_size=4)]
        x3 = helper.make_tensor_value_info("x3", TensorProto.FLOAT, [1, 1, 4])
        yield f"{op} weights of the wrong shape", relu_graph(rnn, [w, r], inputs=[x3]).SerializeToString(), what
    huge_rnn = [helper.make_node("GRU", ["x3", "x3", "x3"], ["", "y"], name="rnn", hidden_size=1 << 40)]
    yield "GRU of a huge hidden_size", relu_graph(huge_rnn, inputs=[helper.make_tensor_value_info(
        "x3", TensorProto.FLOAT, [1, 1, 4])]).SerializeToString(), r"\(GRU\): unsupported: this hidden_size"
    for name, loc in (("outside", "../secret.bin"), ("absolute", "/etc/passwd")):
        t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4],
                        data_location=TensorProto.EXTERNAL)
        t.external_data.add(key="location", value=loc)
        yield f"external data {name} its directory", add_w(t).SerializeToString(), \
            r"tensor 'w': external data location '.*' must be a relative path inside the model's directory"
    os.symlink("/etc/hostname", os.path.join(d, "link.bin"))
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="link.bin")
    yield "external data through a symlink out of its directory", add_w(t).SerializeToString(), \
        r"must be a relative path inside the model's directory"
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="short.bin")
    open(os.path.join(d, "short.bin"), "wb").write(b"\0" * 4)
    yield "external data too short", add_w(t).SerializeToString(), r"external data 'short.bin' .* does not hold its 16 bytes"


def run(axc, d, path):
    out = os.path.join(d, "out.c")
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run([axc, path, "-o", out], capture_output=True, text=True, timeout=60)
    return r, os.path.exists(out)


def external_ok(axc, d):
    """Weights as external data beside the model are read and used."""
    w = np.arange(4, dtype=np.float32).reshape(1, 4)
    open(os.path.join(d, "w.bin"), "wb").write(b"\0" * 8 + w.tobytes())
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "w.bin"), ("offset", "8"), ("length", "16")):
        t.external_data.add(key=k, value=v)
    path = os.path.join(d, "ext.onnx")
    open(path, "wb").write(add_w(t).SerializeToString())
    x = np.array([[1, -2, 3, -4]], dtype=np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    r = subprocess.run([axc, "run", path, "--input", f"x={d}/x.npy", "--output", f"{d}/y.npy"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return False, r.stderr
    got = np.load(os.path.join(d, "y.npy"))
    return np.array_equal(got, x + w), f"got {got}, expected {x + w}"


def output_name_stays_inside(axc, d):
    """An output named '../escape' is written inside --output-dir."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("../escape", TensorProto.FLOAT, [1, 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["../escape"], name="r")], "g", [x], [y])
    path = os.path.join(d, "esc.onnx")
    open(path, "wb").write(helper.make_model(g).SerializeToString())
    out = os.path.join(d, "outdir")
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([axc, "run", path, "--interp", "--output-dir", out], capture_output=True, text=True, timeout=60)
    return r.returncode == 0 and not os.path.exists(os.path.join(d, "escape.npy")) and len(os.listdir(out)) == 1, \
        f"exit {r.returncode}, {os.listdir(out)}: {r.stderr[:300]}"


def main():
    if onnx is None:
        print("SKIP: onnx hostile models (needs python3-onnx)")
        return 0
    axc = os.environ.get("AXC", "axc")
    rc = 0
    import re
    with tempfile.TemporaryDirectory() as d:
        sub = os.path.join(d, "model")
        os.makedirs(sub)
        for name, data, pattern in cases(sub):
            path = os.path.join(sub, "m.onnx")
            open(path, "wb").write(data)
            r, wrote = run(axc, d, path)
            ok = r.returncode == 1 and not wrote and re.search(pattern, r.stderr) and "internal" not in r.stderr
            print(f"{'PASS' if ok else 'FAIL'}: onnx hostile model: {name}: exit 1, a clear error, no output")
            if not ok:
                rc = 1
                print(f"  exit {r.returncode}, output written: {wrote}, expected /{pattern}/\n  " +
                      r.stderr.strip()[:400].replace("\n", "\n  "))
        ok, why = output_name_stays_inside(axc, sub)
        print(f"{'PASS' if ok else 'FAIL'}: onnx output named '../escape' stays inside --output-dir")
        if not ok:
            rc = 1
            print("  " + why)
        ok, why = external_ok(axc, sub)
        print(f"{'PASS' if ok else 'FAIL'}: onnx external data beside the model is read (offset, length)")
        if not ok:
            rc = 1
            print("  " + why.strip()[:400])
    return rc


if __name__ == "__main__":
    import sys
    sys.exit(main())
