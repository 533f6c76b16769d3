"""Suite `onnx`: the ONNX front end (frontend/onnx_*.c).

  conformance.py  the official ONNX backend tests, classified, with a ratchet
  hostile.py      malformed and hostile models: a clear error, no output file
  mapping.py      ONNX ops onto the IR's own (ConvTranspose, Resize, InstanceNorm, Clip),
                  against PyTorch/NumPy; the Mod and Split checks
  models.py       torchvision models and a TransformerEncoder exported by
                  torch.onnx.export, compiled to C and compared with PyTorch
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import conformance  # noqa: E402

rc = conformance.main()
for mod in ("hostile", "mapping", "models"):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), mod + ".py")
    if os.path.isfile(path):
        rc |= __import__(mod).main()
sys.exit(rc)
