"""Suite `train`: gradient clipping in the generated C training step
(`axc --train --clip-grad-norm=X` / `--clip-grad-value=X`, docs/training.md#schedules-and-clipping).

For the small MLP of run.py under SGD with momentum, plain SGD, Adam and AdamW: the
step is generated from fixed initial weights with a clipping option, built with the
host's cc (-std=c99 -Wall -Wextra -Wpedantic -Werror, step.py's harness
step_main.c printing the state after every step) and run for 20 steps; PyTorch
Float32 trains the twin on the same batches with torch.nn.utils.clip_grad_norm_ /
clip_grad_value_ before each optimizer step (run.py's torch_train).  Every
parameter after every step must match within 1e-4 relative (max abs difference
over the tensor's max abs value).  The test could pass without clipping only if
the bound changed nothing, so each bound lies within the run's gradients: some
steps clip (and, for a norm, some do not), and PyTorch without clipping ends at
least 1e-2 relative away from the generated step.  The SGD-momentum norm case also
runs on a Cortex-M4F under QEMU (step.py's firmware check; SKIP without
arm-none-eabi-gcc and qemu-system-arm).  Finally the refused combinations
(`--grad-exchange` with either option: a located error; both options; a zero
bound) exit 2 with their message and write nothing."""
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import run as tr  # noqa: E402  (the twin, data, optimizers and PyTorch loop)
import step  # noqa: E402  (the generated step's harness: generate, build, run, firmware)

report = tr.report
TOL = 1e-4
# (loss, activation, optimizer, its torch.optim arguments, axc flags, clipping);
# the bounds lie within the run's gradient norms / element sizes (seed 17)
CASES = [
    ("cross_entropy", "relu", "sgd", {"lr": 0.05, "momentum": 0.9}, ["--lr", "0.05", "--momentum", "0.9"],
     ("norm", 1.0)),
    ("mse", "tanh", "adam", {"lr": 0.01}, ["--lr", "0.01"], ("norm", 2.0)),
    ("bce_with_logits", "gelu", "sgd", {"lr": 0.05}, ["--lr", "0.05"], ("value", 0.05)),
    ("mse", "relu", "adamw", {"lr": 0.01, "weight_decay": 0.1}, ["--lr", "0.01", "--weight-decay", "0.1"],
     ("value", 0.5)),
]


def run_step(d, label, src, init, loss, opt, flags, x, t):
    """The generated step built and run on the host: parse()'s values, or None."""
    r = step.generate(d, src, init, loss, opt, flags)
    if r.returncode:
        report(f"{label}: axc --train", False, r.stderr)
        return None
    step.write_data(d, x, t, tr.BATCH * tr.OUT, every_step=True)
    r = step.host_build(d)
    if r.returncode:
        report(f"{label}: cc -std=c99 -Wall -Wextra -Wpedantic -Werror", False, r.stderr[-3000:])
        return None
    res, (got, _, ok) = step.run_host(d)
    if res.returncode or not ok:
        report(f"{label}: host run", False, res.stdout[-2000:] + res.stderr[-2000:])
        return None
    return got


def torch_states(act, init, loss, opt, targs, x, t, clip):
    """PyTorch's state after each step ("<tensor>@<step>") and the number of steps that clipped."""
    twin = tr.Twin(act)
    twin.load_state_dict(init)
    states = {}

    def keep(s):
        states.update({f"{k}@{s}": v.detach().numpy().copy() for k, v in twin.state_dict().items()})

    clipped = tr.torch_train(twin, loss, opt, targs, x, t, tr.STEPS, clip, keep)
    return states, clipped


def one_case(d, rng, fw, loss, act, opt, targs, flags, clip):
    option = f"--clip-grad-{clip[0]}={clip[1]}"
    label = f"train step clip mlp {loss} {act} {opt} {' '.join(flags)} {option}"
    init = {k: v.detach().clone() for k, v in tr.Twin(act).state_dict().items()}
    x, t = tr.make_data(rng, loss, tr.STEPS, np.float32)
    got = run_step(d, label, tr.model_src(act, "Float32"), init, loss, opt, flags + [option], x, t)
    if got is None:
        return
    ref, clipped = torch_states(act, init, loss, opt, targs, x, t, clip)
    errs = {k: tr.rel_err(got[k], v.reshape(-1)) for k, v in ref.items() if k in got}
    worst = max(errs, key=errs.get) if errs else None
    report(f"{label}: generated C vs PyTorch after each of {tr.STEPS} steps (rel <= {TOL:g})",
           len(errs) == len(ref) and errs[worst] <= TOL,
           f"missing {sorted(set(ref) - set(got))[:4]}, worst {worst} {errs.get(worst)}")
    last = tr.STEPS - 1
    plain, _ = torch_states(act, init, loss, opt, targs, x, t, None)
    apart = max(tr.rel_err(got[f"{k}@{last}"], plain[f"{k}@{last}"].reshape(-1)) for k in init)
    report(f"{label}: the bound clips ({clipped} of {tr.STEPS} steps; unclipped PyTorch {apart:.3g} apart)",
           0 < clipped and (clipped < tr.STEPS or clip[0] == "value") and apart >= 1e-2,
           "the bound does not test clipping")
    if fw and clip[0] == "norm" and opt == "sgd":
        step.firmware(d, label, got, fw)


REFUSED = [
    # the split step cannot clip the exchanged gradients: a located error
    (["--clip-grad-norm=1", "--grad-exchange"],
     "m.ax:1:31: error: --clip-grad-norm does not combine with --grad-exchange (model 'm')"),
    (["--clip-grad-value=0.5", "--grad-exchange"],
     "m.ax:1:31: error: --clip-grad-value does not combine with --grad-exchange (model 'm')"),
    (["--clip-grad-norm=1", "--clip-grad-value=0.5"], "--clip-grad-norm and --clip-grad-value exclude each other"),
    (["--clip-grad-value=0"], "--clip-grad-value expects a positive number, not '0'"),
]


def refused(d):
    """The combinations axc --train refuses: exit 2, the message, no file written."""
    init = {k: v.detach().clone() for k, v in tr.Twin("relu").state_dict().items()}
    for flags, want in REFUSED:
        out = f"{d}/m.c"
        if os.path.exists(out):
            os.remove(out)
        r = step.generate(d, tr.model_src("relu", "Float32"), init, "mse", "sgd", flags)
        report(f"train step clip {' '.join(flags)} refused", r.returncode == 2 and want in r.stderr and
               not os.path.exists(out), f"rc {r.returncode}, stderr {r.stderr!r}, wanted {want!r}")


def main():
    if not os.path.exists(tr.AXC):
        print(f"SKIP: train step clip ({tr.AXC} not built)")
        return
    rng = np.random.default_rng(17)
    torch.manual_seed(17)
    tr.BATCH = 4
    with tempfile.TemporaryDirectory() as d:
        fw = step.firmware_runtime(d, "train step clip")
        for case in CASES:
            one_case(d, rng, fw, *case)
        refused(d)


if __name__ == "__main__":
    main()
