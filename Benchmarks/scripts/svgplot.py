"""A small dependency-free SVG line plot: panels of series against a logarithmic x axis."""

import math
from html import escape as _esc


def _ticks(lo, hi, count=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    start = math.floor(lo / step) * step
    ticks = []
    value = start
    while value <= hi + step * 0.001:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _linear_scale(ys, height, y0):
    y_hi = max(ys) * 1.15 if ys else 1
    ticks = _ticks(0, y_hi)
    y_hi = max(ticks[-1], y_hi)
    return ticks, (lambda y: y0 + height - (y / y_hi) * height), ""


def _log_scale(ys, height, y0):
    ys = [y for y in ys if y > 0]
    lo = math.floor(math.log10(min(ys))) if ys else -1
    hi = math.ceil(math.log10(max(ys))) if ys else 1
    if hi == lo:
        hi += 1
    ticks = [10 ** e for e in range(lo, hi + 1)]
    return ticks, (lambda y: y0 + height - (math.log10(max(y, 10 ** lo)) - lo) / (hi - lo) * height), " (log scale)"


def _point(p):
    """(x, y, lo, hi) from (x, y) or (x, y, lo, hi)."""
    return (p[0], p[1], p[2], p[3]) if len(p) == 4 else (p[0], p[1], None, None)


def panel(x0, y0, width, height, title, ylabel, series, xs_all, log_y=False, targets=()):
    """series: list of (label, colour, dash, [(x, y) or (x, y, lo, hi)]): lo–hi drawn as a bar (the spread of
    the runs). targets: list of (label, y) drawn as grey dashed lines. Each panel lists its own series below it.
    Returns SVG elements."""
    out = []
    xs = sorted(set(xs_all))
    lx_lo, lx_hi = math.log10(min(xs)) - 0.15, math.log10(max(xs)) + 0.15
    ys = [v for _, _, _, pts in series for p in pts for v in _point(p)[1:] if v is not None]
    ys += [y for _, y in targets]
    yticks, py, scale_note = (_log_scale if log_y else _linear_scale)(ys, height, y0)

    def px(x):
        return x0 + (math.log10(x) - lx_lo) / (lx_hi - lx_lo) * width

    out.append(f'<rect x="{x0}" y="{y0}" width="{width}" height="{height}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{x0 + width / 2}" y="{y0 - 12}" text-anchor="middle" font-size="14" font-weight="bold">{_esc(title)}</text>')
    out.append(f'<text x="{x0 - 48}" y="{y0 + height / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 48} {y0 + height / 2})">{_esc(ylabel + scale_note)}</text>')
    for t in yticks:
        y = py(t)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + width}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{t:g}</text>')
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{y0 + height + 16}" text-anchor="middle" font-size="11">{x:,}</text>')
    out.append(f'<text x="{x0 + width / 2}" y="{y0 + height + 34}" text-anchor="middle" font-size="12">trips followed (log scale)</text>')
    for label, y in targets:
        out.append(f'<line x1="{x0}" y1="{py(y):.1f}" x2="{x0 + width}" y2="{py(y):.1f}" stroke="#555" '
                   f'stroke-width="1.5" stroke-dasharray="2,4"/>')
        out.append(f'<text x="{x0 + width - 4}" y="{py(y) - 4:.1f}" text-anchor="end" font-size="11" fill="#333">{_esc(label)}</text>')
    for label, colour, dash, pts in series:
        pts = sorted(_point(p) for p in pts if p[1] is not None and (p[1] > 0 or not log_y))
        if not pts:
            continue
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y, _, _) in enumerate(pts))
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>')
        for x, y, lo, hi in pts:
            if lo is not None and hi is not None and (lo > 0 or not log_y):
                out.append(f'<line x1="{px(x):.1f}" y1="{py(lo):.1f}" x2="{px(x):.1f}" y2="{py(hi):.1f}" '
                           f'stroke="{colour}" stroke-width="6" stroke-opacity="0.35"/>')
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
    ly = y0 + height + 56
    for label, colour, dash, _ in series:
        out.append(f'<line x1="{x0}" y1="{ly}" x2="{x0 + 30}" y2="{ly}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{x0 + 36}" y="{ly + 4}" font-size="12">{_esc(label)}</text>')
        ly += 18
    return out


def bar_panel(x0, y0, width, height, title, ylabel, groups, targets=()):
    """groups: list of (group label, [(bar label, colour, value, lo, hi)]): bars side by side per group, lo–hi
    drawn as a whisker. Returns SVG elements."""
    out = []
    values = [v for _, bars in groups for _, _, value, lo, hi in bars for v in (value, hi) if v is not None]
    values += [y for _, y in targets]
    yticks, py, _ = _linear_scale(values or [1], height, y0)
    out.append(f'<rect x="{x0}" y="{y0}" width="{width}" height="{height}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{x0 + width / 2}" y="{y0 - 12}" text-anchor="middle" font-size="14" font-weight="bold">{_esc(title)}</text>')
    out.append(f'<text x="{x0 - 48}" y="{y0 + height / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 48} {y0 + height / 2})">{_esc(ylabel)}</text>')
    for t in yticks:
        out.append(f'<line x1="{x0}" y1="{py(t):.1f}" x2="{x0 + width}" y2="{py(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{py(t) + 4:.1f}" text-anchor="end" font-size="11">{t:g}</text>')
    slot = width / max(1, len(groups))
    for index, (group, bars) in enumerate(groups):
        bar_width = slot * 0.7 / max(1, len(bars))
        start = x0 + index * slot + slot * 0.15
        for b, (label, colour, value, lo, hi) in enumerate(bars):
            if value is None:
                continue
            bx = start + b * bar_width
            out.append(f'<rect x="{bx:.1f}" y="{py(value):.1f}" width="{bar_width * 0.9:.1f}" '
                       f'height="{y0 + height - py(value):.1f}" fill="{colour}" fill-opacity="0.8"/>')
            out.append(f'<text x="{bx + bar_width * 0.45:.1f}" y="{py(value) - 4:.1f}" text-anchor="middle" font-size="10">{value:.3g}</text>')
            if lo is not None and hi is not None:
                cx = bx + bar_width * 0.45
                out.append(f'<line x1="{cx:.1f}" y1="{py(lo):.1f}" x2="{cx:.1f}" y2="{py(hi):.1f}" stroke="black" stroke-width="1.5"/>')
        out.append(f'<text x="{x0 + index * slot + slot / 2:.1f}" y="{y0 + height + 16}" text-anchor="middle" font-size="11">{_esc(group)}</text>')
    for label, y in targets:
        out.append(f'<line x1="{x0}" y1="{py(y):.1f}" x2="{x0 + width}" y2="{py(y):.1f}" stroke="#555" stroke-width="1.5" stroke-dasharray="2,4"/>')
        out.append(f'<text x="{x0 + width - 4}" y="{py(y) - 4:.1f}" text-anchor="end" font-size="11" fill="#333">{_esc(label)}</text>')
    legend = []
    for _, bars in groups:
        for label, colour, *_ in bars:
            if (label, colour) not in legend:
                legend.append((label, colour))
    ly = y0 + height + 56
    for label, colour in legend:
        out.append(f'<rect x="{x0}" y="{ly - 6}" width="30" height="10" fill="{colour}" fill-opacity="0.8"/>')
        out.append(f'<text x="{x0 + 36}" y="{ly + 4}" font-size="12">{_esc(label)}</text>')
        ly += 18
    return out


def render(path, panels, columns=2):
    """panels: list of dicts: kind "line" (title, ylabel, series, log_y, targets) or "bar" (title, ylabel,
    groups, targets), laid out `columns` to a row; each panel has its own legend."""
    width, height = 460, 300
    margin_left, gap, row_height = 70, 90, height + 170
    rows = (len(panels) + columns - 1) // columns
    total_width = margin_left + columns * (width + gap)
    total_height = rows * row_height + 20
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width}" height="{total_height}" '
             f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>']
    xs_all = [p[0] for spec in panels if spec["kind"] == "line" for _, _, _, pts in spec["series"] for p in pts]
    for index, spec in enumerate(panels):
        x0 = margin_left + (index % columns) * (width + gap)
        y0 = 40 + (index // columns) * row_height
        if spec["kind"] == "line":
            parts += panel(x0, y0, width, height, spec["title"], spec["ylabel"], spec["series"], xs_all,
                           spec.get("log_y", False), spec.get("targets", ()))
        else:
            parts += bar_panel(x0, y0, width, height, spec["title"], spec["ylabel"], spec["groups"],
                               spec.get("targets", ()))
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")
