"""Figures of the report: matplotlib (Agg) plots inlined as base64 PNG."""

from __future__ import annotations

import base64
import io
from html import escape
from typing import Any

import polars as pl


def png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def grouped_bars(cells: pl.DataFrame, x: str, hue: str, title: str, ylabel: str, below_mark: float | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    xs = list(dict.fromkeys(cells[x].to_list()))
    hues = list(dict.fromkeys(cells[hue].to_list()))
    width = 0.8 / max(len(hues), 1)
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(xs) * max(1, len(hues) / 2)), 3.6))
    for k, h in enumerate(hues):
        part = {r[x]: r["value"] for r in cells.filter(pl.col(hue) == h).iter_rows(named=True)}
        vals = [part.get(v) if part.get(v) is not None else np.nan for v in xs]
        ax.bar(np.arange(len(xs)) + k * width - 0.4 + width / 2, vals, width, label=str(h))
    if below_mark is not None:
        ax.axhline(below_mark, color="grey", ls="--", lw=0.8)
    ax.set_xticks(range(len(xs)), xs, rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, ncols=min(len(hues), 4))
    return png(fig)


def figure(src: str, caption: str, fig_id: str) -> str:
    return f'<figure id="{escape(fig_id)}"><img alt="{escape(caption)}" src="{src}"><figcaption class="note">{escape(caption)}</figcaption></figure>'


def expanded_bars(cells: pl.DataFrame, title: str) -> str:
    """Original vs expanded accuracy per functionality, one panel per expanded suite."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    suites = list(dict.fromkeys(cells["suite"].to_list()))
    ncols = 1 if len(suites) == 1 else 2
    nrows = -(-len(suites) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7 * ncols, 3.2 * nrows), squeeze=False)
    for ax, suite in zip(axes.flat, suites):
        part = cells.filter(pl.col("suite") == suite)
        funcs = list(dict.fromkeys(part["row"].to_list()))
        for k, (col, colour) in enumerate((("original", "#7f8fa6"), ("expanded", "#e1a33b"))):
            vals = {r["row"]: r["value"] for r in part.filter(pl.col("column") == col).iter_rows(named=True)}
            ys = [vals[f] if vals.get(f) is not None else np.nan for f in funcs]
            ax.bar(np.arange(len(funcs)) + (k - 0.5) * 0.4, ys, 0.4, label=col, color=colour)
        ax.set_xticks(range(len(funcs)), funcs, rotation=60, ha="right", fontsize=6)
        ax.set_ylim(0, 100)
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"{suite} vs {part['setting'][0]}", fontsize=9)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(suites) :]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    return png(fig)


def auc_heatmaps(rows: list[dict[str, Any]], title: str) -> str:
    """Subgroup / BPSN / BNSP AUC per community (rows) and suite (columns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    suites = list(dict.fromkeys(r["suite"] for r in rows))
    comms = sorted({r["community"] for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(3 + 3 * max(2, 0.55 * len(suites)), 1.5 + 0.3 * len(comms)), squeeze=False)
    for ax, (key, name) in zip(axes[0], (("subgroup_auc", "Subgroup AUC"), ("bpsn_auc", "BPSN AUC"), ("bnsp_auc", "BNSP AUC"))):
        grid = np.full((len(comms), len(suites)), np.nan)
        for r in rows:
            if r.get(key) is not None:
                grid[comms.index(r["community"]), suites.index(r["suite"])] = r[key]
        im = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(suites)), suites, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(comms)), comms, fontsize=7)
        ax.set_title(name, fontsize=9)
    fig.colorbar(im, ax=list(axes[0]), label="AUC")
    fig.suptitle(title, y=1.06)
    return png(fig)


def confidence_distributions(models: list[tuple[str, dict[str, Any]]], title: str) -> str:
    """The CrowS-Pairs paper's Figure 2 from each model's binned confidence
    (``audits.crows.confidence_summary``): one mirrored histogram per model,
    above 0 the pairs where the more-stereotyping sentence (S1) scores
    higher, below 0 those where S2 does (each side's bins scaled to the
    model's fullest bin), the medians marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(max(4.5, 1.8 * len(models) + 1.5), 4.2))
    for k, (name, conf) in enumerate(models):
        edges = np.asarray(conf["bin_edges"], dtype=float)
        centres = (edges[:-1] + edges[1:]) / 2
        more = np.asarray(conf["more_preferred"]["counts"], dtype=float)
        less = np.asarray(conf["less_preferred"]["counts"], dtype=float)
        top = max(more.max(initial=0), less.max(initial=0), 1.0)
        for counts, sign, colour in ((more, 1, "#c0504d"), (less, -1, "#4f81bd")):
            half = 0.4 * counts / top
            ax.fill_betweenx(sign * centres, k - half, k + half, step="mid", color=colour, alpha=0.75, lw=0)
        for side, sign in (("more_preferred", 1), ("less_preferred", -1)):
            med = conf[side]["median"]
            if med is not None:
                ax.plot([k - 0.42, k + 0.42], [sign * med, sign * med], color="black", lw=1)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(models)), [m for m, _ in models], rotation=15, ha="right", fontsize=8)
    ax.set_ylabel("confidence x 100 (S1 preferred > 0 > S2 preferred)", fontsize=8)
    ax.set_title(title, fontsize=9)
    from matplotlib.patches import Patch

    ax.legend(
        handles=[
            Patch(color="#c0504d", label="S1 (more stereotyping) scored higher"),
            Patch(color="#4f81bd", label="S2 (less stereotyping) scored higher"),
        ],
        fontsize=7,
        loc="upper right",
    )
    return png(fig)
