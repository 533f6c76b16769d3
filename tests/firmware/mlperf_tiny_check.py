"""mlperf_tiny_check.py: the MLPerf Tiny checks' Python side in two starts
(tests/firmware/mlperf_tiny.sh; each start imports the twins, so PyTorch).

  inputs DIR MODEL...
      writes DIR/MODEL.x.npy: examples/firmware/main.c's input_value(i, 0)
      pattern in the twin's input shape, batch 1
  compare DIR MODEL:DTYPE...
      for each: the image's outputs (DIR/DTYPE/MODEL/fw.out) against `axc
      run` on the host (DIR/MODEL.DTYPE.y.npy): int8 float for float,
      float32 within 1e-4 of the largest output; and its instruction count
      (DIR/DTYPE/MODEL/insns.txt) at least half the twin's MACs.  Prints one
      PASS or FAIL line each (the suite's wording); exit 1 if one failed."""
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.environ.get("AXC_ROOT", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "examples", "mlperf_tiny"))
import twins  # noqa: E402


def write_inputs(d, models):
    for m in models:
        shape = (1,) + twins.TWINS[m].input_shape
        i = np.arange(int(np.prod(shape)), dtype=np.int64)
        np.save(f"{d}/{m}.x.npy", ((((37 * i) % 101) - 50).astype(np.float32) / np.float32(64)).reshape(shape))


def verdict(d, m, dt):
    """(True, figures) or (False, why)."""
    values = [x.group(1) for x in (re.match(r'^out0\[\d+\] (\S+)$', line) for line in open(f"{d}/{dt}/{m}/fw.out"))
              if x]
    device = np.array(values, dtype=np.float32)
    host = np.load(f"{d}/{m}.{dt}.y.npy").astype(np.float32).ravel()
    if device.shape != host.shape:
        return False, f"device printed {device.size} outputs, host has {host.size}"
    diff = float(np.max(np.abs(device - host)))
    if dt == "int8" and diff != 0:
        return False, f"{int(np.sum(device != host))} of {host.size} outputs differ (max {diff:.3g})"
    if diff > 1e-4 * float(np.max(np.abs(host))):
        return False, f"max |device - host| {diff:.3g}, max |host| {float(np.max(np.abs(host))):.3g}"
    insns = int(open(f"{d}/{dt}/{m}/insns.txt").read().split()[1])
    macs = twins.macs(twins.TWINS[m]())
    if not insns >= macs / 2:
        return False, f"{insns} instructions per inference for {macs} MACs: the count misses work"
    return True, (f"{host.size} outputs, max |device - host| {diff:.3g}; "
                  f"{insns} instructions, {insns / macs:.1f} per MAC")


def compare(d, cases):
    failed = 0
    for case in cases:
        m, dt = case.split(":")
        title = f"mlperf tiny {m} {dt}: Cortex-M4 outputs equal axc run's on the host"
        try:
            ok, why = verdict(d, m, dt)
        except (OSError, ValueError, IndexError) as e:
            ok, why = False, str(e)
        if ok:
            print(f"PASS: firmware {title} ({why})")
        else:
            failed += 1
            print(f"FAIL: firmware {title}\n  {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "inputs":
        write_inputs(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3:]))
