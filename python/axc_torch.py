"""axc_torch — from a PyTorch model to axc in one step.

Installed by `make install` as PREFIX/share/axc/python/axc_torch.py (put that
folder on PYTHONPATH).  Needs NumPy; PyTorch only for the functions that take
a module.  No `safetensors` package: the format is written here by hand.

    save_safetensors(state_dict, path)   parameters for `axc --weights`
    load_safetensors(path)               {name: numpy array}
    check(module, "model.ax", {"x": x})  run the module and `axc run` on the
                                         same input; report the largest
                                         difference per output
    dump_reference(module, args, "ref")  every submodule's output (forward
                                         hooks) as ref/NNN_NAME.npy with
                                         ref/index.tsv, for `axc compare
                                         DIR ref` after `axc run --dump-dir DIR`

safetensors layout (docs/cli.md#files): u64 little-endian header length, a
JSON header {name: {"dtype", "shape", "data_offsets": [begin, end]}} padded
with spaces to a multiple of 8 bytes, then the raw little-endian data.
"""

import json
import os
import shutil
import struct
import subprocess
import tempfile

import numpy as np

__all__ = ["save_safetensors", "load_safetensors", "check", "compare_layers", "dump_reference",
           "CheckReport"]

_NUMPY_TO_ST = {
    np.dtype("float64"): "F64", np.dtype("float32"): "F32", np.dtype("float16"): "F16",
    np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("int16"): "I16",
    np.dtype("int8"): "I8", np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL",
}
_ST_TO_NUMPY = {v: k for k, v in _NUMPY_TO_ST.items()}


def _as_bytes(value):
    """(safetensors dtype, shape, little-endian bytes) of a tensor or array."""
    if hasattr(value, "detach"):   # a torch.Tensor, without importing torch
        t = value.detach().cpu().contiguous()
        if str(t.dtype) == "torch.bfloat16":
            import torch
            return "BF16", list(t.shape), t.view(torch.int16).numpy().astype("<i2").tobytes()
        value = t.numpy()
    a = np.ascontiguousarray(np.asarray(value))
    if a.dtype not in _NUMPY_TO_ST:
        raise TypeError("save_safetensors: dtype %s is not storable in safetensors" % a.dtype)
    return _NUMPY_TO_ST[a.dtype], list(a.shape), a.astype(a.dtype.newbyteorder("<")).tobytes()


def save_safetensors(state_dict, path):
    """Writes state_dict (name -> torch.Tensor or NumPy array, e.g.
    module.state_dict()) as a safetensors file that `axc --weights` reads.
    Entries that are not tensors are skipped.  The file is written to a
    temporary beside path and renamed, so a failure leaves no partial file."""
    header, blobs, offset = {}, [], 0
    for name, value in state_dict.items():
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            continue
        dtype, shape, data = _as_bytes(value)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = "%s.tmp%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for b in blobs:
                f.write(b)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_safetensors(path):
    """{name: NumPy array} of a safetensors file (BF16 comes back as float32)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    base, out = 8 + n, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[base + begin:base + end]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
            a = bits.view(np.float32)
        else:
            a = np.frombuffer(raw, _ST_TO_NUMPY[info["dtype"]].newbyteorder("<"))
        out[name] = a.reshape(info["shape"]).copy()
    return out


class CheckReport:
    """What check() found: per output (name, max |axc - torch|, max |torch|),
    the worst relative difference, and whether it is within rtol."""

    def __init__(self, rows, rtol, layers=None):
        self.rows, self.rtol, self.layers = rows, rtol, layers
        self.max_abs = max((r[1] for r in rows), default=0.0)
        self.max_rel = max((r[1] / r[2] if r[2] > 0 else r[1] for r in rows), default=0.0)
        self.ok = self.max_rel <= rtol

    def __str__(self):
        lines = ["output %s: max |axc - torch| = %.3g (max |torch| = %.3g)" % r for r in self.rows]
        verdict = "agree" if self.ok else "DISAGREE"
        lines.append("axc and PyTorch %s: largest relative difference %.3g (rtol %g)"
                     % (verdict, self.max_rel, self.rtol))
        if self.layers:
            lines.append(self.layers)
        return "\n".join(lines)


def _run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return p.returncode, p.stdout, p.stderr


def check(module, ax_file, inputs, weights=None, torch_inputs=None, output_names=None,
          axc="axc", axc_args=(), rtol=1e-4, layers=True):
    """Runs `module` (PyTorch, eval mode, no grad) and `axc run ax_file` on the
    same inputs and compares every output.

    inputs: {axc input name: array or tensor}, in the model's input order.
    weights: a safetensors file; default: module.state_dict() saved to a
      temporary one (so the names of the .ax file must be PyTorch's).
    torch_inputs: what to pass to module instead of inputs' values, e.g.
      [x.permute(0, 3, 1, 2)] for an NHWC axc model with an NCHW twin.
      Channels-first results of the module (of shape [N, C, ...] where axc
      has [N, ..., C]) are compared channels-last, as axc lays them out.
    output_names: the axc outputs in the module's output order (default:
      the keys of a dict the module returns, else axc's own output order,
      the order of the model's `return`).
    axc_args: more options for `axc run` (e.g. ["--model", "m"]).
    layers: when they disagree, compare layer by layer if this axc can dump
      every layer's output (`axc run --dump-dir`, see compare_layers).
    Returns a CheckReport (print it; .ok, .max_abs, .max_rel); raises
    RuntimeError with axc's message when `axc run` fails."""
    import torch
    work = tempfile.mkdtemp(prefix="axc-check-")
    try:
        cmd, arrays = _run_check(module, ax_file, inputs, weights, axc, axc_args, work)
        was_training = module.training
        module.eval()
        with torch.no_grad():
            args = torch_inputs if torch_inputs is not None else [torch.as_tensor(a) for a in arrays.values()]
            ref = module(*args)
        module.train(was_training)
        names, refs, got = _paired_outputs(ref, output_names, cmd, os.path.join(work, "out"))
        rows = []
        for n, g, r in zip(names, got, refs):
            r = _as_laid_out(r.detach().cpu().double().numpy(), g.shape)
            if g.shape != r.shape:
                raise RuntimeError("output %s: axc shape %s, torch shape %s" % (n, g.shape, r.shape))
            rows.append((n, float(np.max(np.abs(g - r))) if g.size else 0.0,
                         float(np.max(np.abs(r))) if r.size else 0.0))
        report = CheckReport(rows, rtol)
        if not report.ok and layers:
            report.layers = _layer_report(module, cmd, work, args, rtol)
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_check(module, ax_file, inputs, weights, axc, axc_args, work):
    """check's `axc run` into work/out: the command (without --output-dir)
    and the input arrays by name; the module's weights saved to work when
    weights is None."""
    if weights is None:
        weights = os.path.join(work, "weights.safetensors")
        save_safetensors(module.state_dict(), weights)
    cmd = [axc, "run", ax_file, "--weights", weights]
    arrays = {}
    for name, value in inputs.items():
        a = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        arrays[name] = a
        np.save(os.path.join(work, name + ".npy"), a)
        cmd += ["--input", "%s=%s" % (name, os.path.join(work, name + ".npy"))]
    cmd += list(axc_args)
    rc, _, err = _run(cmd + ["--output-dir", os.path.join(work, "out")])
    if rc != 0:
        raise RuntimeError("axc run failed (exit %d):\n%s" % (rc, err))
    return cmd, arrays


def _paired_outputs(ref, output_names, cmd, out_dir):
    """The module's results ref paired with axc's outputs in out_dir: by
    name when ref is a dict, else by position in axc's output order.
    Returns (names, refs, got arrays)."""
    if isinstance(ref, dict):   # paired by name
        names = list(output_names or ref.keys())
        refs = [ref[n] for n in names]
    else:                       # paired by position, in axc's output order
        files = sorted(f[:-4] for f in os.listdir(out_dir))
        names = list(output_names or (files if len(files) == 1 else _output_order(cmd)))
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
    got = []
    for n in names:
        path = os.path.join(out_dir, n + ".npy")
        if not os.path.exists(path):
            raise RuntimeError("axc has no output '%s' (it has %s)"
                               % (n, sorted(f[:-4] for f in os.listdir(out_dir))))
        got.append(np.load(path))
    if len(refs) != len(got):
        raise RuntimeError("the module returns %d outputs, axc %d (%s)" % (len(refs), len(got), names))
    return names, refs, got


def _output_order(cmd):
    """axc's output names in the model's order: the "NAME: Dtype[shape]"
    lines `axc run` prints without --output-dir."""
    rc, out, err = _run(cmd)
    if rc != 0:
        raise RuntimeError("axc run failed (exit %d):\n%s" % (rc, err))
    return [line.split(":", 1)[0] for line in out.splitlines()
            if line and not line[0].isspace() and ": " in line and line.rstrip().endswith("]")]


def _channels_last(value):
    """value [N, C, d1, ...] as [N, d1, ..., C]."""
    return np.ascontiguousarray(np.moveaxis(value, 1, -1))


def _as_laid_out(ref, shape, channels_first=False):
    """PyTorch's ref in axc's layout: channels-last when it is channels-first
    (known, or because only moving its channels gives axc's shape)."""
    if ref.ndim >= 3 and len(shape) == ref.ndim and ref.shape != tuple(shape) or channels_first:
        moved = _channels_last(ref) if ref.ndim >= 3 else ref
        if moved.shape == tuple(shape):
            return moved
    return ref


def _layer_report(module, cmd, work, args, rtol):
    """Layer by layer through `axc run --dump-dir` (at -O0: each layer as
    written; an activation fused into a layer is compared with the PyTorch
    activation module after it, see compare_layers); says why not when this
    axc cannot dump."""
    dump = os.path.join(work, "layers")
    rc, _, err = _run(cmd + ["-O0", "--dump-dir", dump])
    if rc != 0:
        last = (err.strip().splitlines() or ["exit status %d" % rc])[-1]
        return "(no layer-by-layer comparison: this axc cannot dump layers: %s)" % last
    first = compare_layers(module, args, dump, rtol)
    return ("first layer that differs: %s (max |diff| %.3g)" % first) if first else \
        "every dumped layer agrees; the difference is after the last one"


def _dumped_layers(dump_dir):
    """{layer name: (.npy path, fused activation or None, .npy path before
    it or None)} from DIR/index.tsv (index, layer, file, op) that `axc run
    --dump-dir DIR` writes.  A layer's output is its last entry
    (Dense(...; activation=relu) at -O0 is a dense and a relu, both named
    after the layer); its fused activation is the op after the last '+'
    ("dense+relu"), or the op of that last entry when earlier ones share its
    name (then the one before it holds the output before the activation)."""
    found = {}
    with open(os.path.join(dump_dir, "index.tsv")) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if line.startswith("#") or len(parts) < 3:
                continue
            op, path = (parts[3] if len(parts) > 3 else ""), os.path.join(dump_dir, parts[2])
            if "+" in op:
                found[parts[1]] = (path, op.rsplit("+", 1)[1], None)
            elif parts[1] in found and op:
                found[parts[1]] = (path, op, found[parts[1]][0])
            else:
                found[parts[1]] = (path, None, None)
    return found


_ACTIVATIONS = {"relu": lambda v: np.maximum(v, 0), "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
                "tanh": np.tanh}


def _same_op(a, b):
    """"relu" names nn.ReLU, "leaky_relu" nn.LeakyReLU."""
    return a.replace("_", "").lower() == b.replace("_", "").lower()


_CHANNELS_FIRST_KINDS = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                         "ConvTranspose3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
                         "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "MaxPool1d", "MaxPool2d",
                         "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
                         "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool2d", "Upsample",
                         "GroupNorm", "PixelShuffle")


def _layer_outputs(module, torch_args):
    """Runs module once without gradients and returns (name, module type,
    output tensor on the CPU, layout) for every named submodule whose output
    is a tensor, in execution order (forward hooks).  layout: "channels-first"
    for image tensors (the output of a convolution, pooling or norm module of
    rank >= 3, or of a module that keeps the shape of such a tensor, e.g.
    nn.ReLU after nn.Conv2d), "flatten-cf" for nn.Flatten of one (whose
    output is then given flattened channels-last, as axc's Flatten of an
    NHWC tensor), else ""."""
    import torch
    seen, channels_first = [], set()

    def hook(name):
        def record(mod, inp, out):
            if not torch.is_tensor(out):
                return
            kind = type(mod).__name__
            src = inp[0] if inp and torch.is_tensor(inp[0]) else None
            from_cf = src is not None and src.data_ptr() in channels_first and src.dim() >= 3
            layout = ""
            if out.dim() >= 3 and (kind in _CHANNELS_FIRST_KINDS or out.data_ptr() in channels_first or
                                   (from_cf and out.shape == src.shape)):
                layout = "channels-first"
                channels_first.add(out.data_ptr())
            value = out.detach().cpu()
            if kind == "Flatten" and from_cf:
                layout = "flatten-cf"
                value = src.detach().cpu().movedim(1, -1).reshape(out.shape)
            seen.append((name, kind, value, layout))
        return record

    handles = [m.register_forward_hook(hook(n)) for n, m in module.named_modules() if n]
    try:
        with torch.no_grad():
            module(*torch_args)
    finally:
        for h in handles:
            h.remove()
    return seen


def compare_layers(module, torch_args, dump_dir, rtol=1e-4):
    """Compares each submodule's output (forward hooks) with the layer of the
    same name (the submodule's state_dict prefix) that `axc run --dump-dir
    DIR` wrote.  Channels-first image tensors are compared channels-last, as
    axc lays them out; a layer with a fused activation (op "dense+relu", or
    a relu node of its own at -O0) is compared with the activation module
    that runs right after the namesake submodule (nn.ReLU after nn.Linear);
    without one (torch.relu in forward) with the layer's output before the
    activation (-O0), or the activation applied to the submodule's output.  Returns (name, max |diff|) of the first layer, in
    PyTorch's execution order, that differs beyond rtol, or None."""
    seen = _layer_outputs(module, torch_args)
    dumped = _dumped_layers(dump_dir)
    for i, (name, _kind, out, layout) in enumerate(seen):
        if name not in dumped:
            continue
        path, act, before = dumped[name]
        apply = None
        if act and i + 1 < len(seen) and _same_op(seen[i + 1][1], act):
            out, layout = seen[i + 1][2], seen[i + 1][3]   # nn.ReLU after nn.Linear
        elif act and before:
            path = before            # torch.relu in forward: compared before it
        elif act:
            apply = _ACTIVATIONS.get(act.replace("_", "").lower())
        if not os.path.exists(path):
            continue
        got = np.load(path)
        ref = out.double().numpy()
        if apply:
            ref = apply(ref)
        if layout != "flatten-cf":
            ref = _as_laid_out(ref, got.shape, layout == "channels-first")
        if got.shape != ref.shape:   # not the same tensor after all
            continue
        diff = float(np.max(np.abs(got - ref))) if ref.size else 0.0
        if diff > rtol * max(float(np.max(np.abs(ref))) if ref.size else 0.0, 1e-30):
            return name, diff
    return None


def dump_reference(module, torch_args, ref_dir, nhwc=False):
    """Runs module on torch_args with a forward hook on every named submodule
    and writes each tensor output as REF_DIR/NNN_NAME.npy (float32) plus
    REF_DIR/index.tsv in execution order, the format `axc run --dump-dir`
    writes and `axc compare DIR REF_DIR` reads: layers match by name (the
    submodule's state_dict prefix, e.g. "layer1.0.conv1"); a fifth column
    gives the layout of image tensors ("channels-first", which axc compare
    moves channels-last, or "channels-last").  nhwc=True stores image
    tensors (see _layer_outputs; any 4-D one) channels-last, as axc's
    convolutions produce them.  nn.Flatten of an image tensor is stored as
    axc's Flatten of the channels-last tensor either way.  Returns the
    number of layers written."""
    os.makedirs(ref_dir, exist_ok=True)
    rows = []
    for name, kind, out, layout in _layer_outputs(module, torch_args):
        value = out.float().numpy()
        if nhwc and value.ndim >= 3 and (layout == "channels-first" or value.ndim == 4):
            value, layout = _channels_last(value), "channels-last"
        elif layout == "flatten-cf":
            layout = ""
        safe = "".join(ch if ch.isalnum() or ch in ".-_" else "_" for ch in name)
        file = "%03d_%s.npy" % (len(rows), safe)
        np.save(os.path.join(ref_dir, file), np.ascontiguousarray(value))
        rows.append("%d\t%s\t%s\t%s\t%s\n" % (len(rows), name, file, kind, layout or "-"))
    with open(os.path.join(ref_dir, "index.tsv"), "w") as f:
        f.write("# index\tlayer\tfile\top\tlayout (axc_torch.dump_reference; axc compare reads it)\n")
        f.writelines(rows)
    return len(rows)
