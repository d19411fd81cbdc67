"""The stylesheet of the report's HTML pages, inlined in each: the report
(:mod:`.html`) and the per-model pages (:mod:`.model_page`). It is kept
out of :mod:`.html` so that a model page stage's code dependencies are its
page and this sheet, not the whole report (and the LLM code the report's
prompted-LLM section imports)."""

from __future__ import annotations

from hatecheck_pipeline.report.glance import GLANCE_CSS

CSS = (
    """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{background:#f3f3f3}
td.rowhead,th.rowhead{text-align:left}
td.below{background:#f8d7da;color:#842029;font-weight:600}
td.published{background:#eef3fb;font-style:italic}
td.missing{color:#999}
td.incomplete{background:#fff3cd}
td.seen{background:#eee;color:#666;font-style:italic}
td.undefined{color:#666;font-style:italic}
td.too-few{color:#888;text-decoration:underline dotted}
.ok{color:#0a6b2d;font-weight:600}.fail{color:#b00020;font-weight:600}
.note{color:#555;font-size:.9em}figure{margin:1em 0}figure img{max-width:100%}
nav a{margin-right:1em}a.docs{font-size:.6em;font-weight:normal;margin-left:.6em}
"""
    + GLANCE_CSS
)
