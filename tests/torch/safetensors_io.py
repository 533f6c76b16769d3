"""Hand-written safetensors reader and writer (the safetensors package is not
installed here).  Format: an 8-byte little-endian header length, a JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}} padded with spaces to
a multiple of 8, then the raw little-endian tensor bytes; offsets are relative
to the end of the header.  Written independently of axc so the suite checks
axc's files against the format, not against itself."""

import json
import struct

import numpy as np
import torch

DTYPES = {
    "F32": np.dtype("<f4"),
    "F64": np.dtype("<f8"),
    "F16": np.dtype("<f2"),
    "I8": np.dtype("i1"),
    "I32": np.dtype("<i4"),
    "I64": np.dtype("<i8"),
}
CODE_OF = {str(v): k for k, v in DTYPES.items()}


def _code(array):
    """safetensors dtype code of a NumPy array."""
    return CODE_OF[str(array.dtype.newbyteorder("<"))]


def write(path, tensors):
    """Writes {name: torch.Tensor | np.ndarray} to path, in the given order."""
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().contiguous().numpy()
        array = np.ascontiguousarray(value)
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        data = array.tobytes()
        header[name] = {"dtype": _code(array), "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def _bf16_to_f32(raw):
    """BF16 is the high half of an F32, so widen the bits."""
    halves = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return halves.view(np.float32)


def read(path):
    """Reads a safetensors file into {name: np.ndarray} (BF16 widened to F32).
    Raises ValueError on a malformed file."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", blob[:8])
    if 8 + length > len(blob):
        raise ValueError(f"{path}: header length {length} exceeds the file")
    header = json.loads(blob[8:8 + length].decode())
    data = blob[8 + length:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: {name}: data_offsets out of range")
        raw = data[begin:end]
        if info["dtype"] == "BF16":
            flat = _bf16_to_f32(raw)
        elif info["dtype"] in DTYPES:
            flat = np.frombuffer(raw, dtype=DTYPES[info["dtype"]])
        else:
            raise ValueError(f"{path}: {name}: unknown dtype {info['dtype']}")
        shape = tuple(info["shape"])
        if flat.size != int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{path}: {name}: {flat.size} elements for shape {shape}")
        tensors[name] = flat.reshape(shape).copy()
    return tensors
