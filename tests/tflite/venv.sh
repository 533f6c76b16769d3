#!/bin/sh
# Creates the test-local virtual environment DIR for the TFLite tests:
# LiteRT's interpreter (ai-edge-litert: tests/tflite/run.py runs its
# reference kernels live on the fixtures) and flatbuffers' Python runtime
# (tests/tflite/models_gen.py writes the fixtures with the schema's
# bindings).  Exits non-zero when they cannot be installed (PyPI
# unreachable): the live check then SKIPs.  Does nothing when DIR already
# holds exactly these pins.
set -u
dir=${1:?usage: venv.sh DIR}
python=${PYTHON:-/usr/bin/python3}
pins="ai-edge-litert==2.3.0 flatbuffers==25.12.19 numpy==2.4.6"

if [ -f "$dir/.pins" ] && [ "$(cat "$dir/.pins")" = "$pins" ]; then
    exit 0
fi
echo "tflite: installing $pins into $dir"
if { [ -x "$dir/bin/python" ] || "$python" -m venv "$dir"; } &&
   "$dir/bin/python" -m pip install -q --disable-pip-version-check --timeout 30 --retries 1 $pins; then
    echo "$pins" >"$dir/.pins"
    exit 0
fi
echo "tflite: could not install $pins" >&2
exit 1
