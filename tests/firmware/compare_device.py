"""compare_device.py QEMU_OUT HOST_NPY SCALE — the values the firmware printed
(`NAME[i] VALUE` lines, main.c) against the host's output: the relative error
of each element, over |host| (SCALE=element) or over the largest |host|
(SCALE=max), must stay within 1e-5; exit 1 with the worst otherwise."""
import re
import sys

import numpy as np

values = [float(m.group(1)) for m in
          (re.match(r'^\S+\[\d+\] (\S+)$', line) for line in open(sys.argv[1])) if m]
host = np.load(sys.argv[2]).astype(np.float64).ravel()
device = np.array(values)
if device.shape != host.shape:
    sys.exit(f"device printed {device.size} values, host has {host.size}")
scale = np.maximum(np.abs(host), 1e-30) if sys.argv[3] == "element" else max(np.abs(host).max(), 1e-30)
err = np.abs(device - host) / scale
if err.max() > 1e-5:
    sys.exit(f"max relative error {err.max():.3g} at {err.argmax()}: {device[err.argmax()]} vs {host[err.argmax()]}")
