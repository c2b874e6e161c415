"""Draws bench/fusion.py's results (its --json file) as an SVG bar chart, with no plotting library: per case,
each side's time as a fraction of the copy-bandwidth floor, back to back (solid) and call + wait (light).

    python3 bench/fusion_plot.py bench/fusion_h100.json bench/fusion_h100.svg

bench/fusion_corpus.py's JSON has the same form (its cases named case/dtype/mode).
"""

import json
import sys

SIDES = ["numax (fusion)", "numax (XLA)", "jax.jit", "torch.compile", "torch eager"]
COLORS = ["#1f77b4", "#6baed6", "#2ca02c", "#d62728", "#ff9896"]
BAR, GAP, HEIGHT, LEFT, TOP = 14, 26, 220, 50, 40


def svg(data):
    results = data["results"]
    group = len(SIDES) * BAR + GAP
    width = LEFT + group * len(results) + 180
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT + TOP + 70}" '
             'font-family="sans-serif" font-size="11">',
             f'<text x="{LEFT}" y="20" font-size="13">numax fusion benchmark on {data["device"]}: fraction of the '
             'copy-bandwidth floor (each side: back to back, then call + wait, lighter)</text>']
    for level in (0, 0.25, 0.5, 0.75, 1.0):
        y = TOP + HEIGHT * (1 - level)
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + group * len(results)}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 8}" y="{y + 4}" text-anchor="end">{level:.0%}</text>')
    for index, result in enumerate(results):
        x0 = LEFT + index * group + GAP / 2
        for position, (side, color) in enumerate(zip(SIDES, COLORS)):
            x = x0 + position * BAR
            measures = (("back_to_back_us", "floor_back_to_back_us", 1), ("times_us", "floor_us", 0.35))
            for half, (key, floor_key, opacity) in enumerate(measures):
                fraction = min(1.2, result[floor_key] / result[key][side]) if side in result[key] else 0
                height = HEIGHT * fraction
                parts.append(f'<rect x="{x + half * BAR / 2}" y="{TOP + HEIGHT - height}" width="{BAR / 2 - 1}" '
                             f'height="{height}" fill="{color}" fill-opacity="{opacity}"/>')
        label_x, label_y = x0 + len(SIDES) * BAR / 2, TOP + HEIGHT + 18
        turn = f' transform="rotate(-25 {label_x} {label_y})"' if len(result["case"]) > 6 else ""  # long names
        parts.append(f'<text x="{label_x}" y="{label_y}" text-anchor="middle"{turn}>({result["case"]})</text>')
    for position, (side, color) in enumerate(zip(SIDES, COLORS)):
        y = TOP + 10 + position * 18
        parts.append(f'<rect x="{width - 170}" y="{y - 10}" width="12" height="12" fill="{color}"/>')
        parts.append(f'<text x="{width - 152}" y="{y}">{side}</text>')
    titles = "; ".join(f"({r['case']}) {r['title']}" for r in results)
    parts.append(f'<text x="{LEFT}" y="{TOP + HEIGHT + 45}" font-size="9">{titles[:220]}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


if __name__ == "__main__":
    with open(sys.argv[1]) as file:
        drawing = svg(json.load(file))
    with open(sys.argv[2], "w") as file:
        file.write(drawing + "\n")
