"""Figures of the generated documentation pages: SVG drawn as text from a
record's figures, inlined into the Markdown (the site's generated folder is
included into pages, not copied, so an image file beside it would not be
served). Written by hand rather than by matplotlib so that the same record
gives the same bytes on every machine and library version (``docs render
--check`` compares them)."""

from __future__ import annotations

import math
from html import escape
from typing import Any, Sequence

S1_COLOUR, S2_COLOUR = "#c0504d", "#4f81bd"  # the report's colours (report/figures.py: confidence_distributions)


def nice_step(top: float, ticks: int = 4) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving about
    ``ticks`` ticks from 0 to ``top``.

    >>> nice_step(37.0), nice_step(4.2), nice_step(0.0)
    (10.0, 2.0, 1.0)
    """
    if top <= 0:
        return 1.0
    raw = top / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)


def _n(x: float) -> str:
    """A coordinate with one decimal and no trailing zero.

    >>> _n(3.0), _n(2.25), _n(-0.04)
    ('3', '2.2', '0')
    """
    text = f"{x:.1f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def confidence_svg(models: Sequence[tuple[str, dict[str, Any]]], title: str) -> str:
    """The CrowS-Pairs paper's Figure 2 from each model's binned confidence
    (``audits.crows.confidence_summary``: ``bin_edges``, per side ``counts``
    and ``median``), as the report draws it: one mirrored histogram per
    model, above 0 the pairs where the more stereotyping sentence (S1) is
    scored higher, below 0 those where S2 is, each side's bins scaled to the
    model's fullest bin, the medians as black lines.

    >>> conf = {"bin_edges": [0, 5, 10], "more_preferred": {"counts": [2, 1], "median": 4.0},
    ...         "less_preferred": {"counts": [1, 0], "median": 2.5}}
    >>> svg = confidence_svg([("m", conf)], "t")
    >>> svg.startswith("<svg") and "<title>t</title>" in svg
    True
    >>> svg.count("<rect") - 2  # the bins with pairs (the legend's two squares aside)
    3
    """
    width_per, left, top_pad, bottom_pad, half_h = 170, 70, 30, 60, 150
    width = max(560, left + width_per * max(1, len(models)) + 20)  # at least the legend's width
    height = top_pad + 2 * half_h + bottom_pad
    zero = top_pad + half_h
    top = max((float(c["bin_edges"][-1]) for _, c in models), default=1.0) or 1.0
    scale = half_h / top
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" font-family="sans-serif" font-size="11" shape-rendering="crispEdges"><title>{escape(title)}</title>'
    ]
    step = nice_step(top)
    k = 0
    while k * step <= top + 1e-9:
        for sign in (1,) if k == 0 else (1, -1):
            y = zero - sign * k * step * scale
            out.append(f'<line x1="{left - 4}" y1="{_n(y)}" x2="{left}" y2="{_n(y)}" stroke="black"/>')
            out.append(f'<text x="{left - 6}" y="{_n(y + 4)}" text-anchor="end">{_n(sign * k * step)}</text>')
        k += 1
    out.append(f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{top_pad + 2 * half_h}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{zero}" x2="{width - 10}" y2="{zero}" stroke="grey"/>')
    out.append(
        f'<text transform="rotate(-90)" x="{-zero}" y="14" text-anchor="middle">confidence x 100 (S1 preferred &gt; 0 &gt; S2 preferred)</text>'
    )
    for i, (name, conf) in enumerate(models):
        centre = left + width_per * i + width_per / 2
        edges = [float(e) for e in conf["bin_edges"]]
        more, less = conf["more_preferred"], conf["less_preferred"]
        fullest = max([*more["counts"], *less["counts"], 1])
        for side, sign, colour in ((more, 1, S1_COLOUR), (less, -1, S2_COLOUR)):
            for low, high, count in zip(edges, edges[1:], side["counts"]):
                if not count:
                    continue
                half = 0.4 * width_per * count / fullest
                y = zero - high * scale if sign == 1 else zero + low * scale
                out.append(
                    f'<rect x="{_n(centre - half)}" y="{_n(y)}" width="{_n(2 * half)}" height="{_n((high - low) * scale)}" '
                    f'fill="{colour}" fill-opacity="0.75"/>'
                )
            if side.get("median") is not None:
                y = zero - sign * float(side["median"]) * scale
                out.append(
                    f'<line x1="{_n(centre - 0.42 * width_per)}" y1="{_n(y)}" x2="{_n(centre + 0.42 * width_per)}" y2="{_n(y)}" stroke="black"/>'
                )
        out.append(f'<text x="{_n(centre)}" y="{top_pad + 2 * half_h + 16}" text-anchor="middle">{escape(name)}</text>')
    legend_y = height - 18
    for j, (colour, label) in enumerate(
        ((S1_COLOUR, "S1 (more stereotyping) scored higher"), (S2_COLOUR, "S2 (less stereotyping) scored higher"))
    ):
        x = left + 250 * j
        out.append(f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" fill="{colour}" fill-opacity="0.75"/>')
        out.append(f'<text x="{x + 14}" y="{legend_y}">{escape(label)}</text>')
    out.append("</svg>")
    return "".join(out)
