"""The report built from synthetic metrics, rendered in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from eval_synthetic import (
    ExpandedSuite,
    bias_summary_doc,
    expansion_reports,
    make_expanded_metrics,
    make_metrics,
)

from system_packages import fail_missing

from hatecheck_pipeline.evaluation import tables
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.suites.registry import HELDOUT, Suite

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@pytest.fixture
def built_report(workdir) -> Path:
    srcs = [
        make_metrics(workdir, "B-D", Suite("hatecheck", "hatecheck", "case_id"), 0.7, 1),
        make_metrics(workdir, "B-D", Suite("heldout_davidson2017", "davidson2017", "case_id", HELDOUT, split="test"), 0.9, 2),
    ]
    for i, lang in enumerate(["spanish", "hindi"]):
        srcs.append(make_metrics(workdir, "XTC", Suite(f"mhc_{lang}", "mhc", "mhc_case_id", language=lang), 0.85 - 0.4 * i, 3 + i))
    tables.run("hatecheck", srcs[:2], "tables_hatecheck")
    tables.run("mhc", srcs[2:], "tables_mhc")
    tables.run("shots", srcs[2:], "tables_shots", {"XTC": ["spanish"]})
    tables.run("contrast", [srcs[0], *srcs[2:]], "tables_contrast")
    expanded = [
        make_expanded_metrics(
            workdir,
            "B-D",
            ExpandedSuite("perturbed_hatecheck", "perturbed_hatecheck", "id"),
            Suite("hatecheck", "hatecheck", "case_id"),
            0.5,
            7,
        ),
        make_expanded_metrics(
            workdir,
            "XTC",
            ExpandedSuite("perturbed_mhc_hindi", "perturbed_mhc_hindi", "id"),
            Suite("mhc_hindi", "mhc", "mhc_case_id", language="hindi"),
            0.6,
            8,
        ),
    ]
    tables.run("expanded", [srcs[0], srcs[3], *expanded], "tables_expanded")
    expansion_files = expansion_reports(workdir)
    bias_summary_doc(workdir)
    (workdir / "cards").mkdir()
    (workdir / "cards/B-D.json").write_text('{"base_model": "all-MiniLM-L6-v2", "stand_in": true, "profile": "smoke"}')
    (workdir / "cards/XTC.json").write_text('{"profile": "smoke"}')  # a card missing fields
    (workdir / "val.json").write_text('{"success": true, "counts": {"kept": 60, "quarantined": 0}, "suites": []}')
    names = [t for g in tables.GROUPS.values() for t in g.tables]
    (workdir / "logs/benchmarks").mkdir(parents=True)
    (workdir / "logs/benchmarks/train_XTC.json").write_text(
        '{"stage": "train_XTC", "phase": "train", "wall_s": 231.4, "cpu_s": 450.2, "max_rss_mb": 3620.9,'
        ' "started": "2026-01-01T12:00:00+00:00", "finished": "2026-01-01T12:03:51+00:00"}'
    )
    return report.run(
        workdir / "reports/mhc_xtc.html",
        "Synthetic report",
        "smoke",
        {"B-D": {"train": ["davidson2017"], "suites": ["hatecheck"]}, "XTC": {"train": ["hateval2019_es"], "suites": ["mhc"]}},
        {"B-D": "cards/B-D.json", "XTC": "cards/XTC.json"},
        {"hatecheck": "val.json", "mhc": "missing.json"},
        {t: f"results/tables/{t}.csv" for t in names},
        "results/tables/training_languages.json",
        50,
        expansion_files=expansion_files,
        bias_summary_file="results/bias/summary.json",
        usage_dir="logs/benchmarks",
    )


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    if not Path(CHROMIUM).exists():
        fail_missing(["chromium"], "the report's browser test")
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=120)


def test_report_is_self_contained(built_report):
    html = built_report.read_text("utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the report must not load anything from the network"
    assert "<link" not in html and "<script" not in html
    assert html.count("data:image/png;base64,") >= 4
    # every data cell carries provenance: a cell id (lineage) or, for the run's time and memory, its record file
    cells = re.findall(r"<td[^>]*data-cell-id=\"([^\"]+)\"[^>]*>", html)
    tds = re.findall(r"<td(?![^>]*class=\"(?:rowhead|missing)\")[^>]*>", html)
    records = [t for t in tds if "class='record'" in t]
    assert records and all("data-record='logs/benchmarks/" in t for t in records)
    assert cells and len(cells) == len([t for t in tds if "data-cell-id" in t])
    assert 'data-cell-id="hatecheck_t2:B-D:total:accuracy"' in html
    assert "results/B-D/hatecheck/metrics.json (stage score_B-D_hatecheck)" in html
    assert 'class="below"' in html  # hindi at ~45% accuracy
    assert "named stand-in" in html and "not stated in the model card" in html and "not run" in html
    # functional tests are labelled and ordered as in the papers' Table 1, next to the published figures
    t1 = html[html.index('id="hatecheck-t1"') :]
    t1 = t1[: t1.index("</table>")]
    assert "F1 Expression of strong negative emotions (explicit) (derog_neg_emote_h)" in t1
    assert t1.index("F15 Non-hate expressed using negated hateful statement") < t1.index("F18 Neutral statements")
    assert 'data-cell-id="published:hatecheck_t1:B-D:derog_neg_emote_h:B-D"' in t1 and ">88.6</td>" in t1
    assert "B-D (paper)" in t1
    mhc_t1 = html[html.index('id="mhc-t1-XTC"') :]
    assert "F34 ZH: Pinyin spelling" not in mhc_t1[: mhc_t1.index("</table>")]  # only the suite's tests are rows
    assert 'data-cell-id="published:mhc_t1:XTC:derog_neg_emote_h:spanish"' in mhc_t1 and ">80.7</td>" in mhc_t1


def test_report_renders_in_chromium(built_report, tmp_path):
    url = built_report.resolve().as_uri()
    dom = chromium(["--dump-dom", url], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    for table_id in [
        "heat-hatecheck",
        "heat-mhc_spanish",
        "heat-mhc_hindi",
        "glance-mhc_hindi",
        "models",
        "hatecheck-t1",
        "hatecheck-t2",
        "hatecheck-t4",
        "mhc-t7",
        "mhc-t1-XTC",
        "mhc-t6",
        "shots-summary",
        "contrast-table",
        "validation",
        "expanded",
        "expanded-b-d-perturbed-hatecheck",
        "expanded-xtc-perturbed-mhc-hindi",
        "perturbation-coverage",
        "template-reproduction",
        "bias",
        "crows-pairs",
        "crows-pairs-bias-types",
        "hatexplain-table6",
        "target-bias-xtc",
        "fig-expanded-b-d",
        "fig-target-bias-xtc",
        "usage",
        "usage-phases",
        "usage-stages",
    ]:
        assert f'id="{table_id}"' in dom.stdout, table_id
    assert 'data-cell-id="mhc_t7:XTC:hindi:macro_f1"' in dom.stdout
    assert 'data-cell-id="heat:mhc_t1:XTC:hindi:derog_neg_emote_h:accuracy"' in dom.stdout
    assert 'data-cell-id="expanded_functionality:XTC:perturbed_mhc_hindi:hateful_cases:change"' in dom.stdout
    # bias columns: the 2-class model's under the paper's columns, each row's 3-class figure in its own labelled columns
    assert (
        'data-cell-id="bias:hatexplain:hatexplain:gmb_bpsn"' in dom.stdout
        and 'data-cell-id="bias:hatexplain:tfidf-lr-standin:gmb_bpsn_3class"' in dom.stdout
    )
    assert 'data-cell-id="bias:hatexplain:tfidf-lr-standin:gmb_bpsn"' not in dom.stdout
    assert "incomplete run" in dom.stdout and "stand-in for BERT-base" in dom.stdout and "baseline: TF-IDF" in dom.stdout
    assert "Synthetic report" in dom.stdout
    shot = tmp_path / "shot.png"
    res = chromium(["--screenshot=" + str(shot), "--window-size=1280,2400", url], tmp_path / "profile2")
    assert res.returncode == 0 and shot.stat().st_size > 10_000
