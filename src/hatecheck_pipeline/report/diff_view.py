"""The report's "What changed between models" section: per configured
comparison (``evaluation.diffs``), accuracy per functional test of model A,
of model B, the difference B - A with the paired test's interval, p-value
and Holm-adjusted p-value, flagged rows marked, and under each test flagged
worse a few of the cases that went from right to wrong
(evaluation/diff.py, evaluation/paired.py)."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.evaluation.cells import cell_id
from hatecheck_pipeline.report.cells import ci_name, fmt, html_table, json_td


def doc_level(doc: Mapping[str, Any] | None) -> float | None:
    """The level a comparison's document records (``bootstrap.level``: its
    interval's, and 1 - the flags' alpha); None when it records none.

    >>> doc_level({"bootstrap": {"level": 0.9}}), doc_level({"bootstrap": {}}), doc_level(None)
    (0.9, None, None)
    """
    return ((doc or {}).get("bootstrap") or {}).get("level")


def alpha_text(found: set[float]) -> str:
    """The flags' alpha (1 - level) when the comparisons share one level,
    else how it is set.

    >>> alpha_text({0.95}), alpha_text({0.9}), alpha_text(set())
    ('0.05', '0.1', '1 − level')
    """
    return f"{round(1 - next(iter(found)), 6):g}" if len(found) == 1 else "1 − level"


def note(found: set[float]) -> str:
    """The section's note, at the level the comparisons' documents record
    (``found``: their levels; when they differ or none is recorded, each
    table's header gives its own)."""
    alpha = alpha_text(found)
    ci = ci_name(next(iter(found)), "interval") if len(found) == 1 else "interval (at each comparison's level)"
    return (
        "<p class='note'>Difference = accuracy of B minus accuracy of A (percentage points, from the counts) on the cases "
        "both predicted. Test: paired sign-flip test at the resampling units (each template's cases flip together; on "
        f"HateCheck and MHC the fillers crossed with the templates, target groups and slurs, flip too); the {ci} "
        f"is the differences the same test does not reject, so it excludes zero exactly when p ≤ {alpha}. A functional test "
        "is <b>flagged</b> when its Holm-adjusted p-value (Holm's step-down over the functional tests compared, on the "
        f"p-values shown) is at most {alpha}; <b>worse</b> when flagged with B below A. Also on the command line: "
        "<code>hatecheck-pipeline diff A B --suite SUITE</code> (<code>--check</code> exits 1 when a test is worse), or "
        "<code>--rev REV</code> for one model against a git revision or DVC experiment.</p>"
    )


SHOWN_CASES = 3  # cases that went from right to wrong, shown under each test flagged worse


def one(key: str, entry: Mapping[str, Any]) -> str:
    doc, file, stage = entry.get("doc"), entry.get("file", ""), entry.get("stage", "")
    if doc is None:
        return f"<p class='fail'>{escape(file)} not found: the stage {escape(stage)} has not run.</p>"
    a, b, suite = doc["a"]["model"], doc["b"]["model"], doc["suite"]
    ci = ci_name(doc_level(doc))  # its interval's level, as the diff stage recorded it
    dataset = doc["dataset"]  # the suite's, as the diff stage resolved it
    rows = []
    tests = doc.get("by_functionality", {})
    for code in sorted(tests, key=lambda c: P.functionality_order(c, dataset)):
        t = tests[code]
        ids = {k: cell_id("diff", a, b, suite, code, k) for k in ("a", "b", "difference")}
        cls = "below" if t["flagged"] else ""
        verdict = "worse" if t.get("worse") else "flagged" if t["flagged"] else ""
        rows.append(
            f"<tr><td class='rowhead'>{escape(P.functionality_label(code, dataset))}</td><td>{t['n']}</td>"
            + json_td(t["accuracy_a"], ids["a"], file, stage)
            + json_td(t["accuracy_b"], ids["b"], file, stage)
            + json_td(
                t["difference"],
                ids["difference"],
                file,
                stage,
                cls=cls,
                note=f" [{ci} {fmt(t['ci_low'])}–{fmt(t['ci_high'])}; p = {t['p_value']:.4g}, Holm {t.get('p_holm', 1):.4g}]",
            )
            + f"<td>{fmt(t['ci_low'])}–{fmt(t['ci_high'])}</td><td>{t['p_value']:.4g}</td><td>{t.get('p_holm', 1):.4g}</td>"
            f"<td class='{'fail' if t['flagged'] else ''}'>{verdict}</td></tr>"
        )
        if t.get("worse") and t.get("went_wrong"):
            shown = "".join(
                f"<li>{escape(str(c.get('text', c['id'])))} <span class='note'>(gold {escape(c['gold'])}; "
                f"id {escape(str(c['id']))})</span></li>"
                for c in t["went_wrong"][:SHOWN_CASES]
            )
            rows.append(
                f"<tr><td></td><td colspan='7'>Right for {escape(a)}, wrong for {escape(b)} "
                f"({t['n_went_wrong']} cases; all in the comparison's JSON):<ul>{shown}</ul></td></tr>"
            )
    flagged = doc.get("flagged") or []
    head = (
        f"<h3>{escape(b)} minus {escape(a)} on {escape(suite)}</h3>"
        f"<p>{len(flagged)} of {len(tests)} functional tests flagged"
        + (": " + escape(", ".join(P.functionality_label(c, dataset, short=True) for c in flagged)) if flagged else "")
        + ".</p>"
    )
    return head + html_table(
        f"diff-{a}-{b}-{suite}", ["functional test", "n", f"{a} (A)", f"{b} (B)", "B − A", ci, "p", "p (Holm)", ""], rows
    )


def diff_section(diffs: Mapping[str, Mapping[str, Any]]) -> str:
    """``diffs``: stage name -> {doc, file, stage}."""
    found = {level for e in diffs.values() if (level := doc_level(e.get("doc"))) is not None}
    return note(found) + "".join(one(k, v) for k, v in diffs.items())
