"""Float against int8 on held-out inputs, each build compiled once (quant suite, accuracy).

usage: held_out.py DIR COUNT

DIR/f.so and DIR/q.so are the float and int8 builds of one model (`axc -o`,
then cc -shared with libaxrt.a, as `axc run` builds them); DIR/f.h is the
float build's header, whose signature comment names the model and gives
the output's shape.
Every held-out input DIR/x{k}.npy (k < COUNT) runs through both builds'
NAME_forward(x, out, NULL), so calibration runs once per model, not once
per input as one `axc run --quantize=int8` per input did.  Prints top-1
agreement and relative error; exits 1 when the worst relative error reaches
50 % (random-weight deep nets are a harsh case)."""
import ctypes
import re
import sys

import numpy as np


def signature(header):
    """The model's name and its one output's shape, from the header's comment."""
    text = open(header).read()
    name = re.search(r"^/\* model (\w+)$", text, re.M)
    outs = re.findall(r"^\s*output \S+ Float32\[([0-9, ]+)\]", text, re.M)
    if name is None or len(outs) != 1:
        sys.exit(f"{header}: expected a model name and one Float32 output in the signature")
    return name.group(1), tuple(int(d) for d in outs[0].split(","))


def run(lib, name, x, shape):
    fn = getattr(lib, f"{name}_forward")
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    y = np.zeros(shape, dtype=np.float32)
    if fn(x.ctypes.data, y.ctypes.data, None) != 0:
        sys.exit(f"{name}_forward failed")
    return y


def main():
    d, count = sys.argv[1], int(sys.argv[2])
    name, shape = signature(f"{d}/f.h")
    float_lib, int8_lib = ctypes.CDLL(f"{d}/f.so"), ctypes.CDLL(f"{d}/q.so")
    agree, errs = 0, []
    for k in range(count):
        x = np.ascontiguousarray(np.load(f"{d}/x{k}.npy"), dtype=np.float32)
        f = run(float_lib, name, x, shape).astype(np.float64).ravel()
        q = run(int8_lib, name, x, shape).astype(np.float64).ravel()
        agree += int(f.argmax() == q.argmax())
        errs.append(np.linalg.norm(q - f) / max(np.linalg.norm(f), 1e-30))
    print(f"top-1 agreement {agree}/{count}, relative error mean {100 * np.mean(errs):.1f} %, "
          f"worst {100 * max(errs):.1f} %")
    sys.exit(0 if max(errs) < 0.5 else 1)


if __name__ == "__main__":
    main()
