"""One half build run under every instruction set, in one process (half suite, isa).

usage: isa_run.py DIR ISA...

DIR/model.so is one example's build (`axc -o DIR/model.c`, then cc -shared
with libaxrt.a, as `axc run` builds it), DIR/model.h its header, whose
signature comment names the model, its Float32 inputs and outputs in order.
Each input NAME is read from NAME.npy in the current directory.  The model runs once with the
instruction set the runtime chooses by itself (DIR/default.npy), then once
per ISA forced with axrt_set_isa (DIR/ISA.npy, its first output), so one
build serves what one `axc run` per AXRT_ISA value did.  The set the runtime
chose by itself (axrt_isa_name: avx512 on a CPU that has it) is not run a
second time: forcing it selects the same kernels, so its output is the
default one.  A set this CPU lacks
gives the default output too, as AXRT_ISA (which then runs the default set
after one line on stderr) did."""
import ctypes
import re
import sys

import numpy as np

SIG = re.compile(r"^\s*(input|output)\s+(\w+)\s+Float32\[([0-9, ]+)\]", re.M)


def main():
    d, isas = sys.argv[1], sys.argv[2:]
    text = open(f"{d}/model.h").read()
    name = re.search(r"^/\* model (\w+)$", text, re.M).group(1)
    sig = [(k, n, tuple(int(s) for s in dims.split(","))) for k, n, dims in SIG.findall(text)]
    ins = [np.ascontiguousarray(np.load(f"{n}.npy"), dtype=np.float32) for k, n, _ in sig if k == "input"]
    shapes = [shape for k, _, shape in sig if k == "output"]
    lib = ctypes.CDLL(f"{d}/model.so")
    fn = getattr(lib, f"{name}_forward")
    fn.restype = ctypes.c_int
    set_isa = lib.axrt_set_isa
    set_isa.restype, set_isa.argtypes = ctypes.c_int, [ctypes.c_char_p]
    isa_name = lib.axrt_isa_name
    isa_name.restype = ctypes.c_char_p
    chosen = None
    for isa in [None, *isas]:
        if isa is not None and (isa == chosen or set_isa(isa.encode()) != 0):
            # the set chosen by itself: the same kernels, the same run again; a set
            # this CPU lacks: AXRT_ISA ran the default one instead, and so does this
            np.save(f"{d}/{isa}.npy", np.load(f"{d}/default.npy"))
            continue
        outs = [np.zeros(s, dtype=np.float32) for s in shapes]
        if fn(*[a.ctypes.data_as(ctypes.c_void_p) for a in ins + outs], None) != 0:
            sys.exit(f"{name}_forward failed under {isa or 'the default instruction set'}")
        np.save(f"{d}/{isa or 'default'}.npy", outs[0])
        if isa is None:
            chosen = isa_name().decode()


if __name__ == "__main__":
    main()
