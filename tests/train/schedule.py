"""Suite `train`: `axc train`'s learning-rate schedules, warm-up and gradient
clipping (docs/training.md#schedules-and-clipping) against PyTorch.

Oracle: a Float64 PyTorch loop over the same batches in the same order for
several epochs, with torch.optim.lr_scheduler's StepLR, CosineAnnealingLR and
OneCycleLR stepped once per batch (Lion, not in torch.optim: run.py's
formula with the lr and beta1 of an Adam that the schedulers drive), warm-up as LinearLR(1/N, 1, N-1) chained
before the schedule (ChainedScheduler), and torch.nn.utils.clip_grad_norm_ /
clip_grad_value_ before each optimizer step (a norm's bound chosen within
the run's norms, so that some steps clip and some do not).  Every trained parameter must
match within 1e-6 relative (max abs difference over the tensor's max abs
value), and the learning rate axc prints for each step must equal the one
the PyTorch optimizer used within 1e-9 relative.  A clipping case must
actually clip at some step.  Bad options must fail with their message and
write no weights."""
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import run as base  # noqa: E402  (tests/train/run.py: model, twin, data, axc_train)

BATCHES, EPOCHS = 6, 3
TOTAL = BATCHES * EPOCHS

# (name, optimizer, its torch.optim arguments, axc flags,
#  schedule: (kind, arguments) or None, warm-up steps, clipping: (kind, bound) or None)
CASES = [
    ("sgd momentum clip-norm", "sgd", {"lr": 0.1, "momentum": 0.9}, ["--lr", "0.1", "--momentum", "0.9"],
     None, 0, ("norm", 1.4)),
    ("adam clip-value", "adam", {"lr": 0.01}, ["--lr", "0.01"], None, 0, ("value", 0.05)),
    ("sgd step", "sgd", {"lr": 0.1}, ["--lr", "0.1"], ("step", {"step_size": 4, "gamma": 0.5}), 0, None),
    ("sgd step default gamma", "sgd", {"lr": 0.1, "momentum": 0.5}, ["--lr", "0.1", "--momentum", "0.5"],
     ("step", {"step_size": 5}), 0, None),
    ("adam cosine", "adam", {"lr": 0.01}, ["--lr", "0.01"], ("cosine", {}), 0, None),
    ("sgd cosine t-max past the trough", "sgd", {"lr": 0.1, "momentum": 0.9},
     ["--lr", "0.1", "--momentum", "0.9"], ("cosine", {"T_max": 7}), 0, None),
    ("sgd onecycle (momentum cycled)", "sgd", {"lr": 0.2}, ["--lr", "0.2"], ("onecycle", {}), 0, None),
    ("adam onecycle (beta1 cycled)", "adam", {"lr": 0.02}, ["--lr", "0.02"], ("onecycle", {}), 0, None),
    ("adamw onecycle clip-norm", "adamw", {"lr": 0.02, "weight_decay": 0.1},
     ["--lr", "0.02", "--weight-decay", "0.1"], ("onecycle", {}), 0, ("norm", 0.2)),
    ("lion cosine warm-up clip-norm", "lion", {"lr": 1e-3, "weight_decay": 0.1},
     ["--lr", "1e-3", "--weight-decay", "0.1"], ("cosine", {}), 3, ("norm", 1.5)),
    ("lion onecycle (beta1 cycled)", "lion", {"lr": 2e-3}, ["--lr", "2e-3"], ("onecycle", {}), 0, None),
    ("adam warm-up", "adam", {"lr": 0.01}, ["--lr", "0.01"], None, 5, None),
    ("sgd step warm-up", "sgd", {"lr": 0.1, "momentum": 0.9}, ["--lr", "0.1", "--momentum", "0.9"],
     ("step", {"step_size": 3, "gamma": 0.7}), 4, None),
    ("adamw cosine warm-up clip-value", "adamw", {"lr": 0.01}, ["--lr", "0.01"], ("cosine", {}), 6,
     ("value", 0.02)),
]


def axc_flags(sched, warmup, clip):
    flags = []
    if sched:
        kind, args = sched
        flags.append(f"--lr-schedule={kind}")
        if "step_size" in args:
            flags += ["--step-size", str(args["step_size"])]
        if "gamma" in args:
            flags += ["--gamma", str(args["gamma"])]
        if "T_max" in args:
            flags += ["--t-max", str(args["T_max"])]
    if warmup:
        flags.append(f"--warmup-steps={warmup}")
    if clip:
        flags.append(f"--clip-grad-{clip[0]}={clip[1]}")
    return flags


def scheduler(optimizer, sched, warmup):
    """PyTorch's schedulers for the case; stepped once per batch."""
    parts = []
    if warmup:
        parts.append(torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / warmup, end_factor=1.0,
                                                       total_iters=warmup - 1))
    if sched:
        kind, args = sched
        if kind == "step":
            parts.append(torch.optim.lr_scheduler.StepLR(optimizer, **args))
        elif kind == "cosine":
            parts.append(torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.get("T_max", TOTAL)))
        else:
            parts.append(torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=optimizer.defaults["lr"],
                                                             total_steps=TOTAL))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else torch.optim.lr_scheduler.ChainedScheduler(parts)


def torch_train(twin, loss, opt, targs, sched, warmup, clip, x, t):
    """The twin trained as axc does; returns the lr of each step and how many steps clipped."""
    params = list(twin.parameters())
    if opt == "lion":   # not in torch.optim: its formula (run.py), lr and beta1 held by an unstepped Adam
        optimizer = torch.optim.Adam(params, lr=targs["lr"], betas=(0.9, 0.99))
        moments = [torch.zeros_like(p) for p in params]
    else:
        cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[opt]
        optimizer = cls(params, **targs)
    sch = scheduler(optimizer, sched, warmup)
    lrs, clipped = [], 0
    B = base.BATCH
    for _ in range(EPOCHS):
        for b in range(BATCHES):
            xb, tb = torch.from_numpy(x[b * B:(b + 1) * B]), torch.from_numpy(t[b * B:(b + 1) * B])
            twin.zero_grad()
            base.loss_fn(loss, twin(xb), tb).backward()
            clipped += base.clip_grads(params, clip)
            group = optimizer.param_groups[0]
            lrs.append(group["lr"])
            if opt == "lion":
                with torch.no_grad():
                    for p, m in zip(params, moments):
                        base.lion_step(p, p.grad, m, group["lr"], group["betas"][0], 0.99,
                                       targs.get("weight_decay", 0.0))
            else:
                optimizer.step()
            if sch:
                sch.step()
    return lrs, clipped


def printed_lrs(stdout):
    return [float(v) for v in re.findall(r"\blr ([-+0-9.eE]+)", stdout)]


def oracle(d, rng):
    torch.set_default_dtype(torch.float64)
    for i, (name, opt, targs, flags, sched, warmup, clip) in enumerate(CASES):
        loss, act = [("mse", "tanh"), ("cross_entropy", "relu"), ("bce_with_logits", "gelu")][i % 3]
        name = f"schedule {name} ({loss})"
        twin = base.Twin(act)
        init = {k: v.detach().clone() for k, v in twin.state_dict().items()}
        x, t = base.make_data(rng, loss, BATCHES, np.float64)
        extra = axc_flags(sched, warmup, clip)
        r, got = base.axc_train(d, base.model_src(act, "Float64"), init, loss, opt,
                                flags + extra + ["--epochs", str(EPOCHS)], x, t)
        if r.returncode != 0:
            base.report(name, False, r.stderr)
            continue
        lrs, clipped = torch_train(twin, loss, opt, targs, sched, warmup, clip, x, t)
        errs = {k: base.rel_err(got[k], v.detach().numpy()) for k, v in twin.state_dict().items()}
        moved = max(base.rel_err(got[k], init[k].numpy()) for k in init)
        base.report(name, max(errs.values()) <= 1e-6 and moved > 1e-4,
                    f"relative errors {errs}, moved {moved:.3g}")
        if sched or warmup:
            axc_lrs = printed_lrs(r.stdout)
            ok = len(axc_lrs) == TOTAL and base.rel_err(axc_lrs, lrs) <= 1e-9
            base.report(name + " per-step lr", ok, f"axc {axc_lrs}\ntorch {lrs}")
        if clip:
            # the norm's bound lies within the run's norms: coef < 1 and coef >= 1 both occur
            ok = 0 < clipped and (clipped < TOTAL or clip[0] == "value")
            base.report(name + " clips", ok, f"{clipped} of {TOTAL} steps clipped: the bound does not test clipping")
    torch.set_default_dtype(torch.float32)


BAD = [
    (["--lr-schedule=linear"], "--lr-schedule expects constant, step, cosine or onecycle, not 'linear'"),
    (["--lr-schedule=step"], "--lr-schedule=step needs --step-size=N"),
    (["--lr-schedule=step", "--step-size=0"], "--step-size expects a step count from 1 to 1000000000, not '0'"),
    (["--lr-schedule=step", "--step-size", "-2"], "--step-size expects a step count"),
    (["--lr-schedule=step", "--step-size=2", "--gamma=0"], "--gamma expects a positive number, not '0'"),
    (["--lr-schedule=step", "--step-size=2", "--gamma=-0.5"], "--gamma expects a positive number"),
    (["--lr-schedule=cosine", "--t-max=abc"], "--t-max expects a step count"),
    (["--warmup-steps=0"], "--warmup-steps expects a step count"),
    (["--clip-grad-norm=0"], "--clip-grad-norm expects a positive number, not '0'"),
    (["--clip-grad-value=-1"], "--clip-grad-value expects a positive number, not '-1'"),
    (["--clip-grad-norm=nan"], "--clip-grad-norm expects a positive number"),
    (["--lr-schedule=cosine", "--gamma=0.5"], "--gamma applies to --lr-schedule=step only"),
    (["--step-size=3"], "--step-size applies to --lr-schedule=step only"),
    (["--lr-schedule=step", "--step-size=3", "--t-max=4"], "--t-max applies to --lr-schedule=cosine only"),
    (["--lr-schedule=onecycle", "--warmup-steps=3"], "--warmup-steps does not combine with --lr-schedule=onecycle"),
    (["--clip-grad-norm=1", "--clip-grad-value=1"], "--clip-grad-norm and --clip-grad-value exclude each other"),
]


def bad_options(d, rng):
    x, t = base.make_data(rng, "mse", BATCHES, np.float64)
    np.save(f"{d}/x.npy", x)
    np.save(f"{d}/t.npy", t)
    with open(f"{d}/m.ax", "w") as f:
        f.write(base.model_src("tanh", "Float64"))
    out = f"{d}/bad.safetensors"
    common = ["--input", f"x={d}/x.npy", "--target", f"{d}/t.npy", "--loss=mse", "--seed", "1"]
    for flags, want in BAD:
        r = subprocess.run([base.AXC, "train", f"{d}/m.ax", *common, *flags, "--save-weights", out],
                           capture_output=True, text=True)
        ok = r.returncode not in (0,) and r.returncode < 128 and want in r.stderr and not os.path.exists(out)
        base.report(f"schedule bad option {' '.join(flags)}", ok,
                    f"rc {r.returncode}, stderr {r.stderr!r}, wanted {want!r}")
    # the loop's options belong to axc train, not the generated step (which clips:
    # clip.py) nor axc run
    for mode, flag in ((["--train", "--loss=mse", "-o", f"{d}/step.c"], "--lr-schedule=cosine"),
                       (["--train", "--loss=mse", "-o", f"{d}/step.c"], "--warmup-steps=2"),
                       (["run", "--interp"], "--warmup-steps=2")):
        cmd = [base.AXC, mode[0], f"{d}/m.ax", *mode[1:], flag] if mode[0] == "run" else \
              [base.AXC, f"{d}/m.ax", *mode, flag]
        r = subprocess.run(cmd, capture_output=True, text=True)
        want = f"option '{flag.split('=')[0]}' is only valid with 'axc train'"
        ok = r.returncode not in (0,) and r.returncode < 128 and want in r.stderr and \
            not os.path.exists(f"{d}/step.c")
        base.report(f"schedule {flag} refused by axc {mode[0]}", ok, f"rc {r.returncode}, stderr {r.stderr!r}")


def main():
    if not os.path.exists(base.AXC):
        print(f"SKIP: schedule ({base.AXC} not built)")
        return
    # the Adam that holds Lion's lr is never stepped; PyTorch warns about that order
    warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
    rng = np.random.default_rng(36)
    torch.manual_seed(36)
    with tempfile.TemporaryDirectory() as d:
        oracle(d, rng)
        bad_options(d, rng)


if __name__ == "__main__":
    main()
