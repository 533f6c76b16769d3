"""Suite `onnx`: the ONNX front end (frontend/onnx_*.c).

  conformance.py  the official ONNX backend tests, classified, with a ratchet
  hostile.py      malformed and hostile models: a clear error, no output file
  mapping.py      ONNX ops onto the IR's own (ConvTranspose, Resize, InstanceNorm, Clip),
                  against PyTorch/NumPy; the Mod and Split checks
  opset21.py      what opsets 18-21 changed in mapped ops (Reduce* axes input, Split
                  num_outputs, Pad axes/wrap, Resize axes/policy/antialias) and their
                  new mapped ops (Mish, Gelu, GroupNormalization); the refusals
  names.py        hostile names and NaN/infinite constants: the generated C compiles (-Werror)
  models.py       torchvision models and a TransformerEncoder exported by
                  torch.onnx.export, compiled to C and compared with PyTorch
  quantised.py    quantised models (QDQ, QOperator) against ONNX Runtime's integers
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import conformance  # noqa: E402

rc = conformance.main()
for mod in ("hostile", "mapping", "opset21", "models", "names", "quantised"):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), mod + ".py")
    if os.path.isfile(path):
        rc |= __import__(mod).main()
sys.exit(rc)
