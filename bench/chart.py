"""The ratio chart of `make bench` as plain SVG (no plotting library): for
each thread count at which axc ran one panel, for each row a group of bars, one per peer,
height log2(peer time / axc time) from the 1x line (above: axc faster).
Bars of a wrong result are drawn grey; ratios beyond the axis
are clipped and labelled with their value.

  ratio_chart(medians, checks, titles, peers, row_info) -> SVG text
      medians: threads -> row -> system -> ns; checks: threads -> row ->
      system -> (status, detail)
"""
import math

COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]
LOG_MIN, LOG_MAX = -3, 4  # 1/8x .. 16x
BAR, GAP, LEFT, PANEL_H, TOP = 9, 14, 60, 230, 40


def _y(ratio, top):
    v = min(max(math.log2(ratio), LOG_MIN), LOG_MAX)
    return top + (LOG_MAX - v) / (LOG_MAX - LOG_MIN) * PANEL_H


def _panel(out, threads, medians, checks, peers, top, width):
    out.append(f'<text x="{LEFT}" y="{top - 12}" font-size="13" font-weight="bold">'
               f'{threads} thread{"s" if threads > 1 else ""}: peer time / axc time (log scale; above 1: axc faster)</text>')
    for k in range(LOG_MIN, LOG_MAX + 1):
        y = _y(2.0 ** k, top)
        label = f"{2 ** k}x" if k >= 0 else f"1/{2 ** -k}x"
        out.append(f'<line x1="{LEFT}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{"#000" if k == 0 else "#ddd"}" stroke-width="{1.5 if k == 0 else 1}"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{label}</text>')
    x = LEFT + GAP
    for row, t in medians.items():
        start = x
        for i, peer in enumerate(peers):
            if "axc" in t and peer in t:
                ratio = t[peer] / t["axc"]
                y0, y1 = _y(1.0, top), _y(ratio, top)
                ok = checks[row][peer][0] == "ok"
                colour = COLOURS[i % len(COLOURS)] if ok else "#aaa"
                out.append(f'<rect x="{x}" y="{min(y0, y1):.1f}" width="{BAR - 1}" height="{abs(y1 - y0):.1f}" '
                           f'fill="{colour}"><title>{row} {peer}: {ratio:.2f}{"" if ok else " (wrong result)"}</title></rect>')
                if not 2.0 ** LOG_MIN <= ratio <= 2.0 ** LOG_MAX:
                    out.append(f'<text x="{x + BAR / 2}" y="{y1 - 3 if ratio > 1 else y1 + 11:.1f}" font-size="8" '
                               f'text-anchor="middle">{ratio:.0f}</text>')
            x += BAR
        out.append(f'<text x="{(start + x) / 2:.1f}" y="{top + PANEL_H + 14}" font-size="11" '
                   f'text-anchor="middle">{row}</text>')
        x += GAP


def ratio_chart(medians, checks, titles, peers, row_info):
    nrows = max((len(m) for m in medians.values()), default=1)
    width = LEFT + GAP + nrows * (len(peers) * BAR + GAP) + 10
    width = max(width, 560)
    medians = {n: m for n, m in medians.items() if any("axc" in t for t in m.values())}
    height = TOP + max(len(medians), 1) * (PANEL_H + 60) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" viewBox="0 0 {width} {height}">',
           f'<rect width="{width}" height="{height}" fill="#fff"/>']
    lx = LEFT
    for i, title in enumerate(titles):
        out.append(f'<rect x="{lx}" y="8" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>')
        out.append(f'<text x="{lx + 14}" y="17" font-size="11">{title}</text>')
        lx += 14 + 7 * len(title) + 14
    top = TOP + 20
    for threads, per_row in medians.items():
        _panel(out, threads, per_row, checks[threads], peers, top, width)
        top += PANEL_H + 60
    out.append("</svg>")
    return "\n".join(out) + "\n"
