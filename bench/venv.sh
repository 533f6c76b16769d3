#!/bin/sh
# Creates the bench-local virtual environment DIR with the ONNX-fed peers of
# `make bench` from PyPI: ONNX Runtime, OpenVINO, jax (XLA on CPU) and onnx
# (to read the exported graphs for jax).  The peers are optional: when
# anything fails here the bench reports them n/a, so this never fails.
# A venv of its own, not --system-site-packages: these wheels need a newer
# NumPy than Debian's, which Debian's PyTorch (run by the system python, the
# PyTorch peer and the exporter) must keep.  Does nothing when DIR already
# holds exactly these pins.
set -u
dir=${1:?usage: venv.sh DIR}
python=${PYTHON:-/usr/bin/python3}
pins="onnxruntime==1.32.0 openvino==2026.4.1 jax[cpu]==0.10.2 onnx==1.23.2"

if [ -f "$dir/.pins" ] && [ "$(cat "$dir/.pins")" = "$pins" ]; then
    exit 0
fi
echo "bench: installing the ONNX-fed peers into $dir: $pins"
if "$python" -m venv "$dir" && "$dir/bin/python" -m pip install -q --disable-pip-version-check $pins; then
    echo "$pins" >"$dir/.pins"
else
    echo "bench: could not install the ONNX-fed peers; they will be reported n/a" >&2
fi
exit 0
