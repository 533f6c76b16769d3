"""remat_report.py AXC SVG PLOTTED MODEL.ax... [--train] — docs/performance.md's memory/compute
trade-off table (`make mem-report`): per model the planned arena with no --ram, at the
smallest budget whose extra compute stays <= 30 %, and at the smallest budget
axc fits at all, each with the extra FLOPs `--mem-report` names (recomputed
values, pass_remat, plus halo rows, pass_tile).  The curve
is walked as the compiler answers: each budget is 64 bytes under the arena
the last one reached, until axc refuses (exit 1).  SVG: peak memory against
extra compute for the model named PLOTTED.  With --train, a second table: the
training steps (`axc --train`, docs/training.md) of TRAINING's models,
walked alike, with sqrt(n) checkpointing's arena and extra FLOPs beside
(`sqrt(n) checkpointing, for comparison` of --mem-report).  Plain python3, no
libraries."""
import os
import re
import subprocess
import sys
import tempfile

TILED = re.compile(r"^tiled .*, \+(\d+) FLOPs \(\+([0-9.]+)%\)", re.M)
REMAT = re.compile(r"^rematerialised \S+: arena (\d+) -> (\d+) bytes, (\d+) values recomputed, "
                   r"\+(\d+) FLOPs \(\+([0-9.]+)%\)", re.M)


TRAIN_PEAK = re.compile(r"^training peak with remat: (\d+) bytes", re.M)
SQRT_N = re.compile(r"^sqrt\(n\) checkpointing, for comparison: arena (\d+) bytes, \+(\d+) FLOPs \(\+([0-9.]+)%\)", re.M)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the training steps charted: example, batch (its input's dim 0), loss, optimizer flags
TRAINING = [("mlp", 32, "cross_entropy", ["--optimizer=adam", "--lr=0.001"]),
            ("lenet5", 32, "cross_entropy", ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"]),
            ("gpt_block", 8, "mse", ["--optimizer=adamw", "--lr=0.0003"]),
            ("resmlp50", 16, "mse", ["--optimizer=sgd", "--lr=0.0001", "--momentum=0.9"])]


def plan_peak(axc, model):
    out = subprocess.run([axc, model, "--emit=mem"], check=True, capture_output=True, text=True).stdout
    return int(re.search(r"^  peak\s+(\d+)", out, re.M).group(1))


def curve(axc, model):
    """[(arena, extra FLOPs, extra %)], starting with the plan without remat."""
    points = [(plan_peak(axc, model), 0, 0.0)]
    while points[-1][0] > 64:
        budget = points[-1][0] - 64
        r = subprocess.run([axc, model, f"--ram={budget}", "--mem-report"], capture_output=True, text=True)
        if r.returncode == 1:
            break
        if r.returncode != 0:
            sys.exit(f"remat_report: {model} --ram={budget}: exit {r.returncode}\n{r.stderr}")
        m, t = REMAT.search(r.stdout), TILED.search(r.stdout)
        peak = int(re.search(r"^  peak\s+(\d+)", r.stdout, re.M).group(1))
        extra = (int(m.group(4)) if m else 0) + (int(t.group(1)) if t else 0)
        # the model's FLOPs: from remat's percentage, else from the tiling's
        base = int(m.group(4)) / float(m.group(5)) * 100 if m and float(m.group(5)) > 0 else \
            int(t.group(1)) / float(t.group(2)) * 100 if t and float(t.group(2)) > 0 else 0
        points.append((peak, extra, 100.0 * extra / base if base else 0.0))
    return points


def train_step(axc, model, flags, budget):
    """(arena, extra FLOPs, extra %, sqrt(n) point) of the step at budget (0: none), None if refused."""
    r = subprocess.run([axc, "--train", model, "--seed=1", *flags, "--emit=mem", "--mem-report",
                        *([f"--ram={budget}"] if budget else [])], capture_output=True, text=True)
    if r.returncode == 1 and budget:
        return None
    if r.returncode != 0:
        sys.exit(f"remat_report: --train {model} --ram={budget}: exit {r.returncode}\n{r.stderr}")
    m, q = REMAT.search(r.stdout), SQRT_N.search(r.stdout)
    return (int(TRAIN_PEAK.search(r.stdout).group(1)), int(m.group(4)) if m else 0, float(m.group(5)) if m else 0.0,
            (int(q.group(1)), int(q.group(2)), float(q.group(3))))


def train_table(axc, tmp):
    print(f"\n{'training step':<44} {'no remat':>9} {'<=30% budget':>13} {'extra':>6} {'smallest':>9} "
          f"{'extra':>6} {'sqrt(n)':>9} {'extra':>6}")
    for name, batch, loss, flags in TRAINING:
        src = open(f"{ROOT}/examples/{name}.ax").read()
        model = f"{tmp}/{name}.ax"
        with open(model, "w") as f:
            f.write(re.sub(r"(x::Float32\[)\d+", rf"\g<1>{batch}", src, count=1))
        opts = [f"--loss={loss}", *flags]
        pts = [train_step(axc, model, opts, 0)]
        while True:
            p = train_step(axc, model, opts, pts[-1][0] - 64)
            if p is None:
                break
            pts.append(p)
        cheap = min((p for p in pts if p[2] <= 30.0), key=lambda p: p[0])
        low = min(pts, key=lambda p: p[0])
        sq = pts[0][3]
        label = f"{name} b{batch} {loss} {flags[0].split('=')[1]}"
        print(f"{label:<44} {pts[0][0]:>9} {cheap[0]:>13} {cheap[2]:>5.1f}% {low[0]:>9} {low[2]:>5.1f}% "
              f"{sq[0]:>9} {sq[2]:>5.1f}%")


def svg(name, points):
    w, h, left, top, pw, ph = 520, 300, 70, 30, 420, 220
    xmax = max(p[2] for p in points) or 1.0
    ymax = max(p[0] for p in points)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 20}" font-family="sans-serif">',
           f'<text x="{left}" y="18" font-size="13" font-weight="bold">{name}: arena vs extra compute '
           f'(--ram sweep)</text>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#000"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#000"/>',
           f'<text x="{left + pw / 2}" y="{top + ph + 32}" font-size="11" text-anchor="middle">'
           f'extra FLOPs (%)</text>',
           f'<text x="14" y="{top + ph / 2}" font-size="11" transform="rotate(-90 14 {top + ph / 2})" '
           f'text-anchor="middle">arena bytes</text>']
    for k in range(5):
        x = left + pw * k / 4
        y = top + ph - ph * k / 4
        out.append(f'<text x="{x:.1f}" y="{top + ph + 14}" font-size="10" text-anchor="middle">'
                   f'{xmax * k / 4:.1f}</text>')
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{ymax * k // 4}</text>')
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
    coords = [(left + pw * p[2] / xmax, top + ph - ph * p[0] / ymax) for p in points]
    out.append('<polyline fill="none" stroke="#4c72b0" stroke-width="2" points="' +
               " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>')
    for (x, y), p in zip(coords, points):
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="#4c72b0"><title>{p[0]} bytes, '
                   f'+{p[2]:.1f}% FLOPs</title></circle>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    train = "--train" in sys.argv
    args = [a for a in sys.argv if a != "--train"]
    axc, svg_path, plotted, models = args[1], args[2], args[3], args[4:]
    head = f"{'model':<14} {'no remat':>10} {'<=30% budget':>13} {'extra':>7} {'smallest':>10} {'extra':>7}"
    print(head)
    first = None
    for model in models:
        name = re.sub(r"\.ax$", "", model.rsplit("/", 1)[-1])
        pts = curve(axc, model)
        first = (name, pts) if name == plotted else first
        cheap = min((p for p in pts if p[2] <= 30.0), key=lambda p: p[0])
        low = min(pts, key=lambda p: p[0])
        print(f"{name:<14} {pts[0][0]:>10} {cheap[0]:>13} {cheap[2]:>6.1f}% {low[0]:>10} {low[2]:>6.1f}%")
    if not first:
        sys.exit(f"remat_report: {plotted} is none of the models")
    with open(svg_path, "w") as f:
        f.write(svg(*first))
    if train:
        with tempfile.TemporaryDirectory() as tmp:
            train_table(axc, tmp)


main()
