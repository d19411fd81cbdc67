"""The report's "What changed between models" section: per configured
comparison (``evaluation.diffs``), accuracy per functional test of model A,
of model B, the difference B - A with its paired template-level interval and
the Holm-corrected interval, flagged rows marked (evaluation/diff.py)."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.cells import cell_id
from hatecheck_pipeline.report.cells import fmt, html_table, json_td

NOTE = ("<p class='note'>Difference = accuracy of B minus accuracy of A (percentage points) on the cases both predicted. "
        "Intervals: paired percentile bootstrap (one draw of templates scores both models). A functional test is "
        "<b>flagged</b> only where the difference holds after Holm's correction for the number of functional tests "
        "compared: its interval at the Holm level (the smallest p-value at 1 − α/m, the next at 1 − α/(m−1), ...) "
        "excludes zero. Also on the command line: <code>hatecheck-pipeline diff A B --suite SUITE</code>, or "
        "<code>--rev REV</code> for one model against a git revision or DVC experiment.</p>")


def one(key: str, entry: Mapping[str, Any]) -> str:
    doc, file, stage = entry.get("doc"), entry.get("file", ""), entry.get("stage", "")
    if doc is None:
        return f"<p class='fail'>{escape(file)} not found: the stage {escape(stage)} has not run.</p>"
    a, b, suite = doc["a"]["model"], doc["b"]["model"], doc["suite"]
    dataset = "mhc" if suite.startswith("mhc_") else "hatecheck"
    rows = []
    tests = doc.get("by_functionality", {})
    for code in sorted(tests, key=lambda c: P.functionality_order(c, dataset)):
        t = tests[code]
        ids = {k: cell_id("diff", a, b, suite, code, k) for k in ("a", "b", "difference")}
        cls = "below" if t["flagged"] else ""
        rows.append(
            f"<tr><td class='rowhead'>{escape(P.functionality_label(code, dataset))}</td><td>{t['n']}</td>"
            + json_td(t["accuracy_a"], ids["a"], file, stage) + json_td(t["accuracy_b"], ids["b"], file, stage)
            + json_td(t["difference"], ids["difference"], file, stage, cls=cls,
                      note=f" [paired 95% CI {fmt(t['ci_low'])}–{fmt(t['ci_high'])}; Holm {fmt(t['holm_ci_low'])}–{fmt(t['holm_ci_high'])}]")
            + f"<td>{fmt(t['ci_low'])}–{fmt(t['ci_high'])}</td><td>{fmt(t['holm_ci_low'])}–{fmt(t['holm_ci_high'])}</td>"
            f"<td class='{'fail' if t['flagged'] else ''}'>{'flagged' if t['flagged'] else ''}</td></tr>"
        )
    flagged = doc.get("flagged") or []
    head = (f"<h3>{escape(b)} minus {escape(a)} on {escape(suite)}</h3>"
            f"<p>{len(flagged)} of {len(tests)} functional tests flagged"
            + (": " + escape(", ".join(P.functionality_label(c, dataset, short=True) for c in flagged)) if flagged else "") + ".</p>")
    return head + html_table(f"diff-{a}-{b}-{suite}", ["functional test", "n", f"{a} (A)", f"{b} (B)", "B − A", "95% CI",
                                                     "Holm-corrected CI", ""], rows)


def diff_section(diffs: Mapping[str, Mapping[str, Any]]) -> str:
    """``diffs``: stage name -> {doc, file, stage}."""
    return NOTE + "".join(one(k, v) for k, v in diffs.items())
