"""The results page of the generated documentation: the models that ran
(their cards), held-out macro F1, HateCheck accuracy per gold label,
Multilingual HateCheck macro F1 per language and the recorded per-test
comparisons of two models, each cell naming its file in the recorded run
and the paper's figure beside ours."""

from __future__ import annotations

import re
from pathlib import Path
from statistics import mean
from typing import Any, Mapping

from hatecheck_pipeline.evaluation import published as P
from hatecheck_pipeline.docsite import runs
from hatecheck_pipeline.report.cells import NA
from hatecheck_pipeline.docsite.formatting import (
    MHC_ORDER,
    figure_of,
    md_table,
    num,
    paper_figure,
    path_cell,
    page,
    read_json,
    with_ci,
)


def _metrics(record: Path) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """(model, suite) -> (record-relative path, metrics document)."""
    out = {}
    for path in sorted(p for p in record.glob("results/*/*/metrics.json") if p.parent.parent.name != "diffs"):
        rel = path.relative_to(record).as_posix()
        out[(path.parent.parent.name, path.parent.name)] = (rel, read_json(path))
    return out


def _cards(record: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    return {p.parent.name: (p.relative_to(record).as_posix(), read_json(p)) for p in sorted(record.glob("models/*/model_card.json"))}


def models_table(record: Path) -> str:
    rows = []
    for model, (rel, card) in _cards(record).items():
        base = card.get("base_model") or {}
        minutes = card.get("train_seconds")
        kind = (
            f"classifier trained elsewhere ({card.get('kind')})"
            if card.get("classifier")
            else "stand-in"
            if base.get("stand_in")
            else "paper model"
        )
        rows.append(
            [
                model,
                str(base.get("description") or base.get("ref") or "–"),
                kind,
                str(card.get("budget_note") or "–"),
                "–" if minutes is None else f"{minutes / 60:.1f} min ({card.get('device', '?')})",
                path_cell(rel),
            ]
        )
    if not rows:
        return "No model cards in this record."
    return md_table(["model", "base model that ran", "paper model or stand-in", "training budget", "training time", "source"], rows)


def heldout_table(metrics: Mapping[tuple[str, str], tuple[str, dict]], published: Mapping[str, Any]) -> str:
    rows = []
    for (model, suite), (rel, doc) in metrics.items():
        if not suite.startswith("heldout_"):
            continue
        dataset = str(doc.get("dataset") or suite.removeprefix("heldout_"))
        paper, source = paper_figure(("hatecheck_heldout", "mhc_t6"), model, dataset, "macro_f1", published)
        seen = " (its training data: not held out)" if doc.get("seen_in_training") else ""
        rows.append(
            [
                model,
                dataset + seen,
                f"{doc['overall']['n']:,}",
                with_ci(figure_of(doc, "overall", None, "macro_f1")),
                num(figure_of(doc, "overall", None, "f1_hateful").get("value")),
                num(paper),
                source or "–",
                path_cell(rel),
            ]
        )
    if not rows:
        return "No held-out test set was scored in this record."
    return md_table(["model", "test set", "n", "macro F1 [95% CI]", "F1 hateful", "paper", "paper's source", "source"], rows)


def hatecheck_table(metrics: Mapping[tuple[str, str], tuple[str, dict]], published: Mapping[str, Any]) -> str:
    rows = []
    for (model, suite), (rel, doc) in metrics.items():
        if suite != "hatecheck":
            continue
        cells = []
        for label in ("hateful", "non-hateful", "total"):
            fig = figure_of(doc, "overall", None, "accuracy") if label == "total" else figure_of(doc, "by_label", label, "accuracy")
            paper, _ = paper_figure(("hatecheck_t2",), model, label, "accuracy", published)
            cells.append(num(fig.get("value")) + ("" if paper is None else f" ({num(paper)})"))
        rows.append([model, f"{doc['overall']['n']:,}", *cells, path_cell(rel)])
    if not rows:
        return "No model was scored on HateCheck in this record."
    source = (published.get("hatecheck_t2") or {}).get("source", "")
    return (
        md_table(["model", "cases", "hateful", "non-hateful", "total", "source"], rows)
        + f"\n\nAccuracy in percent; the paper's figure in brackets ({source})."
    )


def mhc_table(metrics: Mapping[tuple[str, str], tuple[str, dict]], published: Mapping[str, Any]) -> str:
    by_model: dict[str, dict[str, tuple[str, dict]]] = {}
    for (model, suite), (rel, doc) in metrics.items():
        if doc.get("dataset") == "mhc" and doc.get("language"):
            by_model.setdefault(model, {})[str(doc["language"])] = (rel, doc)
    if not by_model:
        return "No model was scored on Multilingual HateCheck in this record."
    languages = [lang for lang in MHC_ORDER if any(lang in langs for langs in by_model.values())]
    languages += sorted({lang for langs in by_model.values() for lang in langs} - set(languages))
    rows = []
    for model, langs in by_model.items():
        cells, ours, papers = [], [], []
        for lang in languages:
            if lang not in langs:
                cells.append("–")
                continue
            fig = figure_of(langs[lang][1], "overall", None, "macro_f1")
            value = fig.get("value")
            paper, _ = paper_figure(("mhc_t7",), model, lang, "macro_f1", published)
            ours.append(value)
            papers.append(paper)
            cells.append((NA if value is None and fig.get("undefined") else num(value)) + ("" if paper is None else f" ({num(paper)})"))
        defined = [v for v in ours if v is not None]  # an undefined language is left out of the mean, not counted as 0
        mean_ours = round(mean(defined), 1) if defined else None
        mean_paper = None if not papers or None in papers else round(mean(papers), 1)
        ns = [langs[lang][1]["overall"]["n"] for lang in langs]
        n = f"{min(ns):,}" if min(ns) == max(ns) else f"{min(ns):,}-{max(ns):,}"
        pattern = re.sub(r"/mhc_[^/]+/", "/mhc_<language>/", next(iter(langs.values()))[0])
        over = "" if len(defined) == len(ours) else f", over the {len(defined)} of {len(ours)} languages defined"
        rows.append([model, n, *cells, num(mean_ours) + ("" if mean_paper is None else f" ({num(mean_paper)})") + over, path_cell(pattern)])
    source = (published.get("mhc_t7") or {}).get("source", "")
    return (
        md_table(["model", "cases per language", *languages, "mean", "source"], rows)
        + f"\n\nMacro F1 in percent; the paper's figure in brackets ({source}). The mean is over the languages shown."
    )


def diff_dataset(doc: Mapping[str, Any], metrics: Mapping[tuple[str, str], tuple[str, dict]]) -> str:
    """The dataset of a comparison's suite (whose functional tests label its
    rows): as the comparison records it, else as model A's score record of
    the suite does (a comparison recorded before it named its dataset);
    neither: ``""`` (the HateCheck numbering, then MHC's, as for an
    expanded suite: :func:`~hatecheck_pipeline.evaluation.published.functionalities`)."""
    scored = metrics.get((doc["a"]["model"], doc["suite"]))
    return str(doc.get("dataset") or (scored[1].get("dataset") if scored else None) or "")


def diff_tables(record: Path, metrics: Mapping[tuple[str, str], tuple[str, dict]]) -> str:
    """Each recorded comparison of two models per functional test
    (``results/diffs/<a>_vs_<b>/<suite>.json``); empty when there is none.
    ``metrics``: the record's score documents (:func:`_metrics`)."""
    parts = []
    for path in sorted(record.glob("results/diffs/*/*.json")):
        doc = read_json(path)
        a, b, suite = doc["a"]["model"], doc["b"]["model"], doc["suite"]
        dataset = diff_dataset(doc, metrics)
        tests = doc.get("by_functionality", {})
        tested = "p_holm" in next(iter(tests.values()), {})  # written by the paired sign-flip test
        rows = [
            [
                P.functionality_label(code, dataset, short=True),
                f"{t['n']:,}",
                num(t["accuracy_a"]),
                num(t["accuracy_b"]),
                f"{t['difference']:+.1f} [{num(t['ci_low'])}, {num(t['ci_high'])}]",
                *([f"{t['p_value']:.4g}", f"{t['p_holm']:.4g}"] if tested else []),
                ("worse" if t.get("worse") else "flagged") if t["flagged"] else "",
            ]
            for code, t in sorted(tests.items(), key=lambda kv: P.functionality_order(kv[0], dataset))
        ]
        flagged = doc.get("flagged") or []
        method = (
            f"paired sign-flip test at the {doc['bootstrap']['resampling_unit']}s"
            + (" and fillers" if doc["bootstrap"].get("fillers") else "")
            + f", {doc['bootstrap']['samples']:,} sign draws"
            if tested
            else f"paired {doc['bootstrap']['resampling_unit']}-level bootstrap, {doc['bootstrap']['samples']:,} resamples, "
            "recorded before the paired sign-flip test replaced it"
        )
        parts.append(
            f"#### {b} minus {a} on {suite}\n\n{len(flagged)} of {len(tests)} functional tests flagged "
            f"({doc['correction']} correction, {method}); from {path_cell(path.relative_to(record).as_posix())}.\n\n"
            + md_table(["functional test", "n", f"{a} (A)", f"{b} (B)", "B − A [95% CI]", *(["p", "p (Holm)"] if tested else []), ""], rows)
        )
    return "\n\n".join(parts)


def results_page(record: Path, published: Mapping[str, Any] | None = None) -> str:
    record = Path(record)
    published = P.load() if published is None else published
    info = runs.load(record)
    metrics = _metrics(record)
    diffs = diff_tables(record, metrics)
    return page(
        info,
        record,
        [
            "### Models that ran\n\nFrom each model's card.\n\n" + models_table(record),
            "### Held-out test sets\n\nMacro F1 on each model's own test set(s), hateful vs non-hateful, in percent, with the "
            "bootstrap 95% interval; the paper's figure is for the paper's model trained on the full data.\n\n"
            + heldout_table(metrics, published),
            "### HateCheck: accuracy per gold label (HateCheck Table 2)\n\n" + hatecheck_table(metrics, published),
            "### Multilingual HateCheck: macro F1 per language (MHC Table 7)\n\n" + mhc_table(metrics, published),
            *(
                [
                    "### What changed between models, per functional test\n\nAccuracy of B minus accuracy of A, in percentage "
                    "points, with the paired interval; flagged where Holm's correction over the tests still excludes zero "
                    "([method](your-classifier.md#what-changed-between-two-models-diff)).\n\n" + diffs
                ]
                if diffs
                else []
            ),
        ],
    )
