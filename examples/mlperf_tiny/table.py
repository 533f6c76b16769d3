"""Prints the MLPerf Tiny table (docs/firmware.md#mlperf-tiny) from what the
Makefile's `table` target left in the current directory: for each model M
and precision P, P/M/size.log (examples/firmware `make size`), P/M/fw.out
(the QEMU run: its check against the host) and P/M/insns.txt (insn_count.so).

  flash   code (model + runtime + the libm/libgcc/libc code they pull in)
          + weights + descriptors: the model's .text and .rodata
  arena   the model's static arena (.bss of model and runtime)
  stack   the stack the model's run used, measured (painted, high-water mark)
  insns   instructions executed by QEMU for one inference, and per
          multiply-accumulate (MACs of convolutions and dense layers, from
          the PyTorch twin: twins.macs)

Usage: python3 table.py MODEL ..."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twins  # noqa: E402

FIELDS = {"code": r"^code \(model \+ runtime \.text\)\s+(\d+)", "libs": r"^code from libm / libgcc\+libc\s+(\d+) / (\d+)",
          "weights": r"^flash: weights\s+(\d+)", "const": r"^flash: descriptors, names\s+(\d+)",
          "arena": r"^RAM: static arena \(\.bss\)\s+(\d+)", "stack": r"^RAM: stack, measured\s+(\d+)"}


def figures(prefix):
    text = open(prefix + "/size.log").read()
    found = {}
    for key, pattern in FIELDS.items():
        m = re.search(pattern, text, re.M)
        if not m:
            sys.exit(f"table.py: {prefix}/size.log has no '{key}' figure")
        found[key] = sum(int(g) for g in m.groups())
    found["flash"] = found["code"] + found["libs"] + found["weights"] + found["const"]
    found["insns"] = int(open(prefix + "/insns.txt").read().split()[1])
    check = re.search(r"^expected: max \|device - host\| (\S+)", open(prefix + "/fw.out").read(), re.M)
    found["check"] = check.group(1) if check else "?"
    return found


def main():
    print("| model | dtype | flash (text+rodata) | of which weights | code | arena | stack | "
          "MACs | instructions / inference | per MAC | max abs device - host |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model in sys.argv[1:]:
        macs = twins.macs(twins.TWINS[model]())
        for dtype in ("float32", "int8"):
            f = figures(f"{dtype}/{model}")
            print(f"| {model} | {dtype} | {f['flash']:,} | {f['weights']:,} | {f['code'] + f['libs']:,} | "
                  f"{f['arena']:,} | {f['stack']:,} | {macs:,} | {f['insns']:,} | {f['insns'] / macs:.1f} | "
                  f"{f['check']} |")


if __name__ == "__main__":
    main()
