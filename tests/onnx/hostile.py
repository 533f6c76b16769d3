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


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, payload):
    """A length-delimited protobuf field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def deep_graph_model(depth):
    """A ModelProto whose graph's node has a GRAPH attribute whose graph's
    node has one ... depth deep (raw wire bytes: onnx's own serializer and
    checker refuse that depth)."""
    graph = b""
    for _ in range(depth):
        attr = field(1, b"body") + varint(20 << 3) + varint(5) + field(6, graph)   # name, type GRAPH, g
        node = field(4, b"If") + field(5, attr)                                      # op_type, attribute
        graph = field(1, node)                                                       # GraphProto.node
    opset = varint(2 << 3) + varint(13)
    return varint(1 << 3) + varint(8) + field(7, graph) + field(8, opset)


def cases(d):
    yield from basic_cases(d)
    yield from guard_cases(d)


def basic_cases(d):
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
    yield "dynamic input", relu_graph(inputs=[dyn]).SerializeToString(), r"input 'x' has the symbolic dimension 0 \('N'\): fix its shape at compile time with --shape x="
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


def guard_cases(d):
    """The bounds added after hostile files got past them (issue 33's G-numbers)."""
    # issue 33: G1 protobuf nesting bounded before protobuf-c's recursive unpack
    yield "GRAPH attributes nested 3000 deep", deep_graph_model(3000), \
        r"nests graphs, attributes or types more than 64 messages deep"
    yield "GRAPH attributes nested 10 deep (under the bound: parsed)", deep_graph_model(10), \
        r"unsupported ONNX operators in 1 node: '\?' \(If, opset 13\)"
    # G20: blocksize 2^62 (b * b overflowed to 0, then a modulo by it)
    d2s = [helper.make_node("DepthToSpace", ["x4"], ["y"], name="d2s", blocksize=1 << 62)]
    yield "DepthToSpace blocksize 2^62", relu_graph(d2s, inputs=[helper.make_tensor_value_info(
        "x4", TensorProto.FLOAT, [1, 4, 2, 2])]).SerializeToString(), \
        r"ONNX node 'd2s' \(DepthToSpace\): needs a 4-D input whose dims the blocksize divides"
    s2d = [helper.make_node("SpaceToDepth", ["x4"], ["y"], name="s2d", blocksize=1 << 32)]
    yield "SpaceToDepth blocksize 2^32", relu_graph(s2d, inputs=[helper.make_tensor_value_info(
        "x4", TensorProto.FLOAT, [1, 4, 2, 2])]).SerializeToString(), \
        r"ONNX node 's2d' \(SpaceToDepth\): needs a 4-D input whose dims the blocksize divides"
    # G5: a FIFO as external data (opened before any file-type check: a hang)
    os.mkfifo(os.path.join(d, "fifo.bin"))
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value="fifo.bin")
    yield "external data a FIFO", add_w(t).SerializeToString(), r"tensor 'w': external data 'fifo.bin' is not a regular file"
    # G8: one value field only, the one of the data type
    both = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], float_data=[1, 2, 3, 4], int64_data=[5, 6, 7, 8])
    yield "tensor with float_data and int64_data", add_w(both).SerializeToString(), \
        r"tensor 'w' holds its values in more than one field"
    wrong = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], int64_data=[5, 6, 7, 8])
    yield "FLOAT tensor in int64_data", add_w(wrong).SerializeToString(), \
        r"tensor 'w' of ONNX data type 1 holds its values in int64_data, not float_data"
    raw_and_typed = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 4], float_data=[1, 2, 3, 4],
                                raw_data=np.zeros(4, np.float32).tobytes())
    yield "tensor with raw_data and float_data", add_w(raw_and_typed).SerializeToString(), \
        r"tensor 'w' holds its values in more than one field"
    # G6: a required input named ''
    empty = [helper.make_node("Add", ["x", ""], ["y"], name="add")]
    yield "required input ''", relu_graph(empty).SerializeToString(), \
        r"ONNX node 'add' \(Add\): a required input is empty \(''\) or missing \(2 inputs given\)"
    # G7: 2^32 declared elements, no data: refused before allocating for them
    big = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[1 << 32])
    yield "2^32 elements without data", add_w(big).SerializeToString(), r"tensor 'w' has 0 values for its 4294967296 elements"


def run(axc, d, path):
    out = os.path.join(d, "out.c")
    if os.path.exists(out):
        os.remove(out)
    try:
        r = subprocess.run([axc, path, "-o", out], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:   # a hang (a FIFO read) is a failure, not a crash of the suite
        r = subprocess.CompletedProcess([axc], -1, "", "timed out after 60 s")
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


INT64_MAX = (1 << 63) - 1


def run_onnx(axc, d, model, x):
    """`axc run` of model on x: (output or None, stderr)."""
    path = os.path.join(d, "valid.onnx")
    open(path, "wb").write(model.SerializeToString())
    np.save(os.path.join(d, "vx.npy"), x)
    r = subprocess.run([axc, "run", path, "--input", f"x={d}/vx.npy", "--output", f"{d}/vy.npy"],
                       capture_output=True, text=True, timeout=300)
    return (np.load(os.path.join(d, "vy.npy")) if r.returncode == 0 else None), r.stderr


def valid_cases():
    """Valid models that were refused or computed wrongly (issue 33): name,
    model, input, the expected output by NumPy."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])

    def model(nodes, inits, out_shape):
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
        g = helper.make_graph(nodes, "g", [xi], [y], initializer=inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])

    def ints(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)

    # G3: x[:, 1:] as torch.onnx.export writes it (ends = INT64_MAX)
    yield "Slice with ends INT64_MAX (x[:, 1:])", model(
        [helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"], name="s")],
        [ints("st", [1]), ints("en", [INT64_MAX]), ints("ax", [1])], [3, 3]), x, x[:, 1:]
    yield "Slice with starts INT64_MAX, ends and step INT64_MIN (x[:, ::-2**62])", model(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="s")],
        [ints("st", [INT64_MAX]), ints("en", [-INT64_MAX - 1]), ints("ax", [1]), ints("sp", [-INT64_MAX - 1])],
        [3, 1]), x, x[:, ::-(1 << 62)]
    yield "Slice with step INT64_MAX", model(
        [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="s")],
        [ints("st", [1]), ints("en", [INT64_MAX]), ints("ax", [1]), ints("sp", [INT64_MAX])], [3, 1]), x, x[:, 1::1 << 62]
    # G21: Trilu's k exact in int64 (through double INT64_MAX became INT64_MIN: x kept)
    for upper, k, want in ((1, INT64_MAX, np.zeros_like(x)), (0, INT64_MAX, x), (1, -INT64_MAX - 1, x),
                           (0, -INT64_MAX - 1, np.zeros_like(x))):
        yield f"Trilu upper={upper} k={k}", model(
            [helper.make_node("Trilu", ["x", "k"], ["y"], name="t", upper=upper)], [ints("k", k)], [3, 4]), x, want
    # G21: integer shape arithmetic folded in int64: 2^53 + 1 - 2^53 is 1, not 0 (through double)
    yield "int64 arithmetic folded exactly (2^53 + 1 - 2^53 as a Slice start)", model(
        [helper.make_node("Sub", ["a", "b"], ["st"], name="sub"),
         helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"], name="s")],
        [ints("a", [(1 << 53) + 1]), ints("b", [1 << 53]), ints("en", [INT64_MAX]), ints("ax", [1])], [3, 3]), x, x[:, 1:]


def big_model_ok(axc, d):
    """G4: a model over 64 MiB with its weights inside (torch.onnx.export's
    default below 2 GB) is read; one over protobuf's 2 GB gets a clear error."""
    w = numpy_helper.from_array(np.ones(17 << 20, np.float32), "unused")   # 68 MiB, read and dropped
    path = os.path.join(d, "big.onnx")
    open(path, "wb").write(relu_graph(inits=[w]).SerializeToString())
    r, wrote = run(axc, d, path)
    os.remove(path)
    if r.returncode != 0 or not wrote:
        return False, f"a {17 << 22} byte model: exit {r.returncode}: {r.stderr[:300]}"
    with open(path, "wb") as f:   # sparse: no disk used
        f.truncate((1 << 31) + 1)
    r, wrote = run(axc, d, path)
    os.remove(path)
    ok = r.returncode == 2 and not wrote and "larger than 2048 MiB, the limit for an ONNX model" in r.stderr
    return ok, f"a 2 GiB + 1 byte model: exit {r.returncode}: {r.stderr[:300]}"


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
        for name, model, x, want in valid_cases():
            got, err = run_onnx(axc, sub, model, x)
            ok = got is not None and got.shape == want.shape and np.array_equal(got, want)
            print(f"{'PASS' if ok else 'FAIL'}: onnx valid model: {name}: as NumPy")
            if not ok:
                rc = 1
                print(f"  got {got}, expected {want}\n  " + err.strip()[:400])
        ok, why = big_model_ok(axc, sub)
        print(f"{'PASS' if ok else 'FAIL'}: onnx model over 64 MiB with its weights inside is read; over 2 GB a clear error")
        if not ok:
            rc = 1
            print("  " + why)
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
