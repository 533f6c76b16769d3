"""The port-debugging helpers tell the truth (interface.md §10): each case
is a real PyTorch module and its axc port, once correct and once with a
planted bug, checked through python/axc_torch.py (check, compare_layers,
dump_reference) and `axc compare`.
  conv-layout   a conv net (NHWC in axc, NCHW in PyTorch, square tensors
                where both layouts fit): the correct port agrees output by
                output and layer by layer; a wrong weight in layer 2 is
                blamed on layer 2, not an earlier one
  fused-act     Dense(...; activation=relu) in axc against nn.Linear +
                nn.ReLU modules (and against torch.relu in forward): the
                correct port agrees (axc compare and compare_layers, at -O0
                and fused); a wrong weight in fc2 is named at fc2
  outputs       two outputs whose names sort against their order (z, a):
                paired by name, the correct port agrees; a module that
                returns them swapped is caught
Prints PASS/FAIL/SKIP lines; exit 1 when one failed.  Environment: AXC,
AXC_ROOT."""

import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as missing:
    print("SKIP: torch:debug (%s)" % missing)
    sys.exit(0)

ROOT = os.environ.get("AXC_ROOT", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
AXC = os.environ.get("AXC", os.path.join(ROOT, "build", "bin", "axc"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import axc_torch  # noqa: E402

failures = []


def verdict(name, ok, detail=""):
    print(("PASS: torch:debug:%s" if ok else "FAIL: torch:debug:%s") % name)
    if not ok:
        failures.append(name)
        for line in str(detail).splitlines()[:20]:
            print("  " + line)


def attempt(name, fn):
    """Runs one case; an exception is that case's FAIL."""
    try:
        fn()
    except Exception as e:  # a helper that raises is a helper that failed
        verdict(name, False, "%s: %s" % (type(e).__name__, e))


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def run_axc(*args):
    p = subprocess.run([AXC] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    return p.returncode, p.stdout + p.stderr


CONV_AX = """@axiom convnet(x::Float32[1, 6, 6, 3]) begin
    Conv((3, 3), 3 => 6, pad=1)
    relu
    Conv((3, 3), 6 => 6, pad=1)
    relu
    Conv((3, 3), 6 => 4, pad=1)
end
"""


def conv_net(tmp):
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(6, 6, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(6, 4, 3, padding=1))
    x = torch.randn(1, 3, 6, 6)
    return net, write(os.path.join(tmp, "conv.ax"), CONV_AX), x, x.permute(0, 2, 3, 1).contiguous()


def conv_agrees(tmp):
    net, ax, x, x_nhwc = conv_net(tmp)
    good = axc_torch.check(net, ax, {"x": x_nhwc}, torch_inputs=[x], axc=AXC)
    verdict("conv-layout: correct port agrees", good.ok, good)


def conv_agrees_by_layer(tmp):
    net, ax, x, x_nhwc = conv_net(tmp)
    dump = os.path.join(tmp, "conv-dump")
    rc, out = run_axc("run", ax, "-O0", "--weights", save(net.state_dict(), tmp, "conv.safetensors"),
                      "--input", "x=" + npy(x_nhwc, tmp, "x_nhwc.npy"), "--dump-dir", dump)
    first = axc_torch.compare_layers(net, [x], dump) if rc == 0 else ("axc run", out)
    verdict("conv-layout: correct port agrees layer by layer (compare_layers)", first is None, first)
    ref = os.path.join(tmp, "conv-ref")
    axc_torch.dump_reference(net, [x], ref)
    rc, out = run_axc("compare", dump, ref)
    verdict("conv-layout: correct port agrees layer by layer (axc compare)", rc == 0, out)


def conv_blames(tmp):
    net, ax, x, x_nhwc = conv_net(tmp)
    sd = {k: v.clone() for k, v in net.state_dict().items()}
    sd["2.weight"] *= 1.5
    bad = axc_torch.check(net, ax, {"x": x_nhwc}, torch_inputs=[x], axc=AXC,
                          weights=save(sd, tmp, "conv-bad.safetensors"))
    verdict("conv-layout: wrong weight in layer 2 is blamed on layer 2",
            not bad.ok and "first layer that differs: 2 " in str(bad), bad)


FUSED_AX = """@axiom fused(x::Float32[3, 5]) begin
    fc1 = Dense(5 => 7, activation=relu)
    fc2 = Dense(7 => 4)
end
"""


class LinearReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act1, self.fc2 = torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 4)

    def forward(self, x):
        return self.fc2(self.act1(self.fc1(x)))


class LinearFunctionalReLU(LinearReLU):
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def fused_activation(tmp, functional=False):
    torch.manual_seed(2)
    net = LinearFunctionalReLU() if functional else LinearReLU()
    tag = "fused-act%s" % (" (torch.relu)" if functional else "")
    ax = write(os.path.join(tmp, "fused.ax"), FUSED_AX)
    x = torch.randn(3, 5)
    ref = os.path.join(tmp, "fused-ref" + ("-f" if functional else ""))
    axc_torch.dump_reference(net, [x], ref)
    sd = {k: v.clone() for k, v in net.state_dict().items()}
    sd["fc2.weight"] *= 1.5
    weights = {"correct": save(net.state_dict(), tmp, "fused.safetensors"),
               "wrong": save(sd, tmp, "fused-bad.safetensors")}
    xs = npy(x, tmp, "fused-x.npy")
    for opt in ("-O0", "-O2"):
        for which, w in weights.items():
            dump = os.path.join(tmp, "fused-%s%s%s" % (which, opt, "-f" if functional else ""))
            rc, out = run_axc("run", ax, opt, "--weights", w, "--input", "x=" + xs, "--dump-dir", dump)
            if rc == 0:
                rc, out = run_axc("compare", dump, ref)
            if which == "correct":
                verdict("%s: axc compare %s: correct port agrees" % (tag, opt), rc == 0, out)
                first = axc_torch.compare_layers(net, [x], dump)
                verdict("%s: compare_layers %s: correct port agrees" % (tag, opt), first is None, first)
            else:
                verdict("%s: axc compare %s: wrong fc2 named at fc2" % (tag, opt),
                        rc == 1 and "first difference at layer 'fc2'" in out, out)
    bad = axc_torch.check(net, ax, {"x": x}, axc=AXC, weights=weights["wrong"])
    verdict("%s: check blames fc2" % tag, not bad.ok and "first layer that differs: fc2 " in str(bad), bad)


TWO_AX = """@axiom function two(x::Float32[2, 4])
    zeta = Dense(4 => 3)
    alpha = Dense(4 => 3)
    z = zeta(x)
    a = alpha(x)
    return z, a
end
"""


class TwoHeads(torch.nn.Module):
    def __init__(self, swapped=False):
        super().__init__()
        self.zeta, self.alpha, self.swapped = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3), swapped

    def forward(self, x):
        z, a = self.zeta(x), self.alpha(x)
        return (a, z) if self.swapped else (z, a)


class TwoHeadsDict(TwoHeads):
    def forward(self, x):
        return {"a": self.alpha(x), "z": self.zeta(x)}


def two_outputs(tmp):
    torch.manual_seed(3)
    ax = write(os.path.join(tmp, "two.ax"), TWO_AX)
    x = torch.randn(2, 4)
    good = TwoHeads()
    r = axc_torch.check(good, ax, {"x": x}, axc=AXC)
    verdict("outputs: paired in the model's order (z, a), correct port agrees", r.ok, r)
    as_dict = TwoHeadsDict()
    as_dict.load_state_dict(good.state_dict())
    attempt("outputs: dict", lambda: verdict("outputs: a dict is paired by name",
                                             axc_torch.check(as_dict, ax, {"x": x}, axc=AXC).ok))
    two_swapped(tmp, good, ax, x)


def two_swapped(tmp, good, ax, x):
    swapped = TwoHeads(swapped=True)
    swapped.load_state_dict(good.state_dict())
    r = axc_torch.check(swapped, ax, {"x": x}, axc=AXC)
    verdict("outputs: swapped outputs are caught", not r.ok, r)


def save(state_dict, tmp, name):
    path = os.path.join(tmp, name)
    axc_torch.save_safetensors(state_dict, path)
    return path


def npy(t, tmp, name):
    path = os.path.join(tmp, name)
    np.save(path, t.numpy())
    return path


def main():
    if not os.access(AXC, os.X_OK):
        print("SKIP: torch:debug (no axc at %s)" % AXC)
        return 0
    with tempfile.TemporaryDirectory(prefix="axc-debug-") as tmp:
        attempt("conv-layout: agrees", lambda: conv_agrees(tmp))
        attempt("conv-layout: agrees by layer", lambda: conv_agrees_by_layer(tmp))
        attempt("conv-layout: blames", lambda: conv_blames(tmp))
        attempt("fused-act", lambda: fused_activation(tmp))
        attempt("fused-act (torch.relu)", lambda: fused_activation(tmp, functional=True))
        attempt("outputs", lambda: two_outputs(tmp))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
