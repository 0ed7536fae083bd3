"""Drawing a relation state as a PNG (matplotlib Agg; no pyplot, no global backend change).

Kept apart from `personas.graph` (the state, its updates and queries): it works on the networkx graph and the
texts `RelationGraph.draw_png` hands it, so the state model never loads matplotlib.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

import networkx as nx

from personas.taxonomy import SCALE_MAX, SCALE_MIN


def draw_relation_png(graph: nx.DiGraph, path: Path, heading: str, headlines: Sequence[tuple[str, str]]) -> Path:
    """Left, the graph: node colour = distress (intensity), edge colour = tension, edge width = warmth; edges
    are curved so A -> B and B -> A both show, and each carries a numbered badge on its own curve, near its
    source. Right, the legend those numbers point into: one row per edge (from -> to, warmth, tension,
    attitude), then each member's emotion and the `headlines` (label, text)."""

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, Rectangle
    from matplotlib.patheffects import withStroke

    from personas.common.files import atomic_write_bytes

    names = list(graph.nodes)
    pos = _layout(names)
    node_cmap, edge_cmap = _cmap("YlOrRd"), _cmap("coolwarm")
    norm = Normalize(vmin=SCALE_MIN, vmax=SCALE_MAX)
    # most tense first: the table reads as a ranking, and the numbers on the drawing follow it
    edges = sorted(graph.edges(data=True), key=lambda e: (-e[2]["tension"], e[0], e[1]))

    height = 7.4 if len(names) > 2 else 5.2  # inches: a couple needs less room than a family
    fig = Figure(figsize=(12.5, height), dpi=110)
    inch = 1 / height  # vertical spacing of the text column, in figure fractions
    FigureCanvasAgg(fig)
    fig.suptitle(heading, fontsize=12, y=1 - 0.12 * inch)
    ax = fig.add_axes((0.01, 1.2 * inch, 0.50, 1 - 3.1 * inch))
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_axis_off()
    ys_all = [y for _, y in pos.values()]
    ax.update_datalim([(-1.35, min(ys_all) - 0.35), (1.35, max(ys_all) + 0.35)])
    ax.margins(0)
    ax.autoscale_view()

    node_size = 3000.0  # points^2
    radius_pt = math.sqrt(node_size / math.pi) + 3
    rad = 0.2
    for number, (a, b, d) in enumerate(edges, start=1):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        colour = edge_cmap(norm(d["tension"]))
        ax.add_patch(
            FancyArrowPatch(
                (x1, y1),
                (x2, y2),
                connectionstyle=f"arc3,rad={rad}",
                arrowstyle="-|>",
                mutation_scale=18,
                linewidth=0.8 + 0.55 * d["warmth"],
                color=colour,
                shrinkA=radius_pt,
                shrinkB=radius_pt,
                zorder=1,
            )
        )
        # the badge sits on the arc3 curve (a quadratic Bezier) 30% of the way from the source, so the two
        # directions of a pair and the crossing diagonals each keep their number on their own line
        cx, cy = (x1 + x2) / 2 + rad * (y2 - y1), (y1 + y2) / 2 - rad * (x2 - x1)
        t = 0.3
        bx = (1 - t) ** 2 * x1 + 2 * t * (1 - t) * cx + t**2 * x2
        by = (1 - t) ** 2 * y1 + 2 * t * (1 - t) * cy + t**2 * y2
        ax.text(
            bx,
            by,
            str(number),
            fontsize=8.5,
            fontweight="bold",
            ha="center",
            va="center",
            zorder=3,
            bbox={"boxstyle": "circle,pad=0.25", "fc": "white", "ec": colour, "lw": 1.5},
        )
    xs, ys = zip(*(pos[n] for n in names), strict=True)
    intensities = [graph.nodes[n]["intensity"] for n in names]
    ax.scatter(xs, ys, s=node_size, c=intensities, cmap=node_cmap, norm=norm, edgecolors="#333333", zorder=2)
    for n, (x, y) in zip(names, zip(xs, ys, strict=True), strict=True):
        ax.text(
            x,
            y,
            f"{n}\n{graph.nodes[n]['intensity']:g}/10",
            fontsize=10.5,
            fontweight="bold",
            ha="center",
            va="center",
            zorder=4,
            linespacing=1.3,
            path_effects=[withStroke(linewidth=3, foreground="white")],
        )

    # right: the edge table the badges point into, then who feels what and the headline queries
    left, top = 0.535, 1 - 0.95 * inch
    row_h = min(0.31 * inch, 0.50 / max(1, len(edges) + 1))
    fig.text(left, top, "#", fontsize=9, fontweight="bold", va="top")
    fig.text(left + 0.03, top, "from → to", fontsize=9, fontweight="bold", va="top")
    fig.text(left + 0.17, top, "warmth", fontsize=9, fontweight="bold", va="top")
    fig.text(left + 0.225, top, "tension", fontsize=9, fontweight="bold", va="top")
    fig.text(left + 0.285, top, "attitude", fontsize=9, fontweight="bold", va="top")
    for number, (a, b, d) in enumerate(edges, start=1):
        y = top - row_h * number
        colour = edge_cmap(norm(d["tension"]))
        fig.patches.append(
            Rectangle((left - 0.012, y - 0.13 * inch), 0.008, 0.15 * inch, transform=fig.transFigure, color=colour)
        )
        fig.text(left, y, str(number), fontsize=9, fontweight="bold", va="top")
        fig.text(left + 0.03, y, _shorten(f"{a} → {b}", 24), fontsize=9, va="top")
        fig.text(left + 0.19, y, f"{d['warmth']:g}", fontsize=9, va="top", ha="right")
        fig.text(left + 0.25, y, f"{d['tension']:g}", fontsize=9, va="top", ha="right")
        fig.text(left + 0.285, y, _shorten(d.get("attitude") or "", 31), fontsize=8.5, va="top", color="#333")
    y = top - row_h * (len(edges) + 1) - 0.18 * inch
    fig.text(left, y, "who feels what", fontsize=9, fontweight="bold", va="top")
    for n in names:
        y -= 0.25 * inch
        node = graph.nodes[n]
        fig.text(left, y, f"{n}: {_shorten(node['emotion'], 60)} ({node['intensity']:g}/10)", fontsize=9, va="top")
    y -= 0.37 * inch
    for label, text in headlines:
        fig.text(left, y, f"{label}: {_shorten(text, 80)}", fontsize=9, va="top")
        y -= 0.25 * inch

    for rect, cmap, label in (
        ((0.04, 0.55 * inch, 0.20, 0.16 * inch), node_cmap, "distress (emotion intensity 0-10)"),
        ((0.285, 0.55 * inch, 0.20, 0.16 * inch), edge_cmap, "tension 0-10 (edge width = warmth)"),
    ):
        cbar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=fig.add_axes(rect), orientation="horizontal")
        cbar.set_label(label, fontsize=9)
        cbar.ax.tick_params(labelsize=8)

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    atomic_write_bytes(path, buf.getvalue())
    return path


def _layout(names: list[str]) -> dict[str, tuple[float, float]]:
    """Members on a circle, first at the top-left going clockwise; two members sit side by side."""
    n = len(names)
    if n == 2:
        return {names[0]: (-0.9, 0.0), names[1]: (0.9, 0.0)}
    start = math.pi / 2 + (math.pi / n if n % 2 == 0 else 0)
    return {
        name: (math.cos(start - 2 * math.pi * i / n), math.sin(start - 2 * math.pi * i / n))
        for i, name in enumerate(names)
    }


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _cmap(name: str):
    from matplotlib import colormaps

    return colormaps[name]
