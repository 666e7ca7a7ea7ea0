"""A small dependency-free SVG line plot: panels of series against a logarithmic x axis."""

import math


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


def panel(x0, y0, width, height, title, ylabel, series, xs_all, log_y=False):
    """series: list of (label, colour, dash, [(x, y)]). Returns SVG elements."""
    out = []
    xs = sorted(set(xs_all))
    lx_lo, lx_hi = math.log10(min(xs)) - 0.15, math.log10(max(xs)) + 0.15
    ys = [y for _, _, _, pts in series for _, y in pts if y is not None]
    yticks, py, scale_note = (_log_scale if log_y else _linear_scale)(ys, height, y0)

    def px(x):
        return x0 + (math.log10(x) - lx_lo) / (lx_hi - lx_lo) * width

    out.append(f'<rect x="{x0}" y="{y0}" width="{width}" height="{height}" fill="none" stroke="#999"/>')
    out.append(f'<text x="{x0 + width / 2}" y="{y0 - 12}" text-anchor="middle" font-size="14" font-weight="bold">{title}</text>')
    out.append(f'<text x="{x0 - 48}" y="{y0 + height / 2}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 48} {y0 + height / 2})">{ylabel}{scale_note}</text>')
    for t in yticks:
        y = py(t)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + width}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{t:g}</text>')
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{y0 + height + 16}" text-anchor="middle" font-size="11">{x:,}</text>')
    out.append(f'<text x="{x0 + width / 2}" y="{y0 + height + 34}" text-anchor="middle" font-size="12">trips followed (log scale)</text>')
    for label, colour, dash, pts in series:
        pts = sorted((x, y) for x, y in pts if y is not None and (y > 0 or not log_y))
        if not pts:
            continue
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(pts))
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
    return out


def render(path, panels, legend):
    """panels: list of (title, ylabel, series); legend: list of (label, colour, dash)."""
    width, height = 460, 300
    margin_left, gap = 70, 90
    total_width = margin_left + len(panels) * (width + gap)
    total_height = height + 140
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width}" height="{total_height}" '
             f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>']
    xs_all = [x for spec in panels for _, _, _, pts in spec[2] for x, _ in pts]
    for index, spec in enumerate(panels):
        title, ylabel, series = spec[:3]
        log_y = len(spec) > 3 and spec[3]
        parts += panel(margin_left + index * (width + gap), 40, width, height, title, ylabel, series, xs_all, log_y)
    ly = height + 100
    lx = margin_left
    for label, colour, dash in legend:
        parts.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 30}" y2="{ly}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/>')
        parts.append(f'<text x="{lx + 36}" y="{ly + 4}" font-size="12">{label}</text>')
        lx += 60 + 7 * len(label)
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")
