"""The TFLite front end (frontend/tflite_*.c, docs/tflite.md) against LiteRT.

The fixtures in models/ (written by models_gen.py, which says how) are three
float32 graphs and their int8 twins: an MCU-style one (conv + ReLU,
depthwise conv + ReLU6, 1x1 conv, average and max pool, reshape, fully
connected, softmax), the same ending in its logits, and one of pad, add (broadcast constant) + ReLU, mul,
ReLU6, concatenation, mean, fully connected + ReLU, ReLU and logistic, with
twelve inputs each (the int8 ones on their QUANTIZE's grid) and LiteRT's outputs for them by its reference kernels;
the pad/add/mul one again with its inputs off the int8 grid (i8_misc_offgrid);
and sixteen single-operator int8 models (i8_op_*: ADD and MUL of a constant int8
tensor, also as the first operand, MUL of a rank-0 one, MEAN, AVERAGE_POOL_2D,
and LOGISTIC, TANH and SOFTMAX at three input scales each over every input
integer, each straight after the input's QUANTIZE), and five whose input's
QUANTIZE reaches the output through data movement alone (i8_move_*: RESHAPE,
MAX_POOL_2D, PAD, nothing, and a RESHAPE whose int8 tensor is the output),
their inputs off the int8 grid, past both ends of its range and on its ties.
Each input runs through `axc run` (generated C; the int8 kernels for the
int8 twins): float32 outputs must equal LiteRT's within 1e-5 relative;
int8 outputs, turned back into integers with the scale and zero point of
the tensor the model's DEQUANTIZE reads (or that is its output), all equal to LiteRT's (the line
says how many are equal and the largest difference).  When the test venv exists
(AXC_TFLITE_VENV, default build/tests/tflite-venv, made by
`make fetch-test-models`), LiteRT also runs live on every fixture and must
give the stored outputs.  Then the refusals: a truncated file (the
Verifier), a tensor naming a buffer past the model's, an unsupported
operator and a file without the "TFL3" identifier give a located error,
exit 1 and no output file; and 100 corrupted copies of a model (bytes
flipped, cut short) never crash axc."""
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MDIR = os.path.join(HERE, "models")
ROOT = os.path.dirname(os.path.dirname(HERE))


def axc():
    return os.environ.get("AXC") or os.path.join(ROOT, "build", "bin", "axc")


def venv_python():
    d = os.environ.get("AXC_TFLITE_VENV") or os.path.join(ROOT, "build", "tests", "tflite-venv")
    p = os.path.join(d, "bin", "python")
    return p if os.path.exists(p) else None


def fixtures():
    return sorted(f[:-len(".tflite")] for f in os.listdir(MDIR) if f.endswith(".tflite") and not f.startswith("bad_"))


def run_axc(path, x, tmp):
    xin, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xin, x)
    r = subprocess.run([axc(), "run", path, "--input", "x=" + xin, "--output", out], capture_output=True, text=True)
    return (np.load(out), None) if r.returncode == 0 else (None, r.stderr.strip()[-400:])


def check_model(name, tmp):
    """(ok, detail) for fixture name: axc's outputs against LiteRT's stored ones."""
    path = os.path.join(MDIR, name + ".tflite")
    xs = np.load(os.path.join(MDIR, name + ".in.npy"))
    ref = np.load(os.path.join(MDIR, name + ".ref.npz"))
    ys = []
    for x in xs:
        y, err = run_axc(path, x, tmp)
        if err:
            return False, err
        ys.append(y)
    y, r = np.stack(ys).reshape(ref["y"].shape), ref["y"]
    if not name.startswith("i8_"):
        rel = float(np.abs(y - r).max() / max(float(np.abs(r).max()), 1e-30))
        return rel <= 1e-5, "%d float32 outputs, max relative difference %.2g (limit 1e-5)" % (r.size, rel)
    scale, zp = float(ref["y_scale"]), int(ref["y_zp"])
    qa = np.round(y.astype(np.float64) / scale).astype(np.int64) + zp
    # LiteRT's output: the float of its DEQUANTIZE, or the int8 tensor itself
    qr = r.astype(np.int64) if r.dtype == np.int8 else np.round(r.astype(np.float64) / scale).astype(np.int64) + zp
    diff = int(np.abs(qa - qr).max())
    equal = int((qa == qr).sum())
    # a model imported from .tflite computes as TFLite's reference kernels: every integer equal
    return equal == qr.size, "%d of %d int8 outputs equal to LiteRT's reference kernels (max %d LSB apart)" % (
        equal, qr.size, diff)


LIVE = r'''
import sys, numpy as np
from ai_edge_litert import interpreter as lite
bad = []
for name in sys.argv[2:]:
    xs = np.load("%s/%s.in.npy" % (sys.argv[1], name))
    ref = np.load("%s/%s.ref.npz" % (sys.argv[1], name))["y"]
    it = lite.Interpreter(model_path="%s/%s.tflite" % (sys.argv[1], name),
                          experimental_op_resolver_type=lite.OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for k, x in enumerate(xs):
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        if not np.array_equal(it.get_tensor(it.get_output_details()[0]["index"]), ref[k]):
            bad.append("%s input %d" % (name, k))
print("differ: " + ", ".join(bad) if bad else "same")
'''


def check_live(names):
    py = venv_python()
    if not py:
        print("SKIP: tflite litert live (no test venv: make fetch-test-models)")
        return 0
    r = subprocess.run([py, "-c", LIVE, MDIR] + names, capture_output=True, text=True)
    if r.returncode or r.stdout.strip() != "same":
        print("FAIL: tflite litert live\n  " + (r.stdout + r.stderr).strip()[-600:].replace("\n", "\n  "))
        return 1
    print("PASS: tflite litert live (LiteRT's reference kernels give the stored outputs of %d models)" % len(names))
    return 0


def refusals(tmp):
    """(name, path, words the error must hold)."""
    junk = os.path.join(tmp, "junk.tflite")
    with open(junk, "wb") as f:
        f.write(b"\x10\x00\x00\x00ONNXnot a flatbuffer")
    return [("verifier", os.path.join(MDIR, "bad_truncated.tflite"), ["fails verification"]),
            ("bad buffer index", os.path.join(MDIR, "bad_bad_buffer.tflite"),
             ["operator 0 (FULLY_CONNECTED)", "names buffer 9"]),
            ("unsupported operator", os.path.join(MDIR, "bad_unsupported_floor.tflite"), ["0 (FLOOR)", "unsupported"]),
            ("identifier", junk, ["TFL3"])]


def check_refusals(tmp):
    failed = 0
    for name, path, words in refusals(tmp):
        out = os.path.join(tmp, "refused.c")
        r = subprocess.run([axc(), path, "-o", out], capture_output=True, text=True)
        ok = r.returncode == 1 and all(w in r.stderr for w in words) and os.path.basename(path) in r.stderr \
            and not os.path.exists(out)
        print(("PASS: tflite refuses %s" if ok else "FAIL: tflite refuses %s") % name)
        if not ok:
            print("  rc=%d: %s" % (r.returncode, r.stderr.strip()[-400:]))
            failed += 1
    return failed


def check_identifier(tmp):
    """A TFLite file of another extension is recognised by its "TFL3" identifier."""
    path = os.path.join(tmp, "model.bin")
    with open(os.path.join(MDIR, "f32_misc.tflite"), "rb") as f, open(path, "wb") as g:
        g.write(f.read())
    r = subprocess.run([axc(), path, "-o", os.path.join(tmp, "bin.c")], capture_output=True, text=True)
    ok = r.returncode == 0 and os.path.exists(os.path.join(tmp, "bin.c"))
    print("PASS: tflite detected by its identifier" if ok else
          "FAIL: tflite detected by its identifier\n  rc=%d %s" % (r.returncode, r.stderr.strip()[-300:]))
    return 0 if ok else 1


def check_corrupted(tmp):
    """Corrupted copies of a model: an error (exit 1) or a model, never a crash."""
    data = open(os.path.join(MDIR, "i8_misc.tflite"), "rb").read()
    rnd = random.Random(35)
    path = os.path.join(tmp, "corrupt.tflite")
    for k in range(100):
        b = bytearray(data)
        if k % 4 == 0:
            b = b[:rnd.randrange(8, len(b))]
        for _ in range(rnd.randrange(1, 6)):
            b[rnd.randrange(8, len(b))] = rnd.randrange(256)
        with open(path, "wb") as f:
            f.write(b)
        r = subprocess.run([axc(), path, "-o", os.path.join(tmp, "c.c")], capture_output=True, text=True)
        if r.returncode not in (0, 1) or "internal" in r.stderr:
            print("FAIL: tflite corrupted models\n  copy %d: rc=%d %s" % (k, r.returncode, r.stderr.strip()[-300:]))
            return 1
    print("PASS: tflite corrupted models (100 copies, no crash)")
    return 0


def main():
    with tempfile.TemporaryDirectory() as tmp:
        probe = subprocess.run([axc(), os.path.join(MDIR, "f32_misc.tflite"), "-o", os.path.join(tmp, "p.c")],
                               capture_output=True, text=True)
        if "without the TFLite front end" in probe.stderr:
            print("SKIP: tflite (axc built without flatbuffers: sh scripts/deps.sh)")
            return 0
        failed = 0
        names = fixtures()
        for name in names:
            ok, detail = check_model(name, tmp)
            print(("PASS: tflite %s (%s)" if ok else "FAIL: tflite %s\n  %s") % (name, detail))
            failed += not ok
        failed += check_live(names)
        failed += check_refusals(tmp)
        failed += check_identifier(tmp)
        failed += check_corrupted(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
