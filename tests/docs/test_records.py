"""The records the documentation's figures come from are well formed, and
the pages show what the renderers make of them.

- docs/runs/<name>/: a recorded run (``hatecheck-pipeline docs record``):
  its run.json and stage records have the fields the generated pages read,
  and docs/generated/ is what ``docs render --check`` makes of the record.
- benchmarks/records/: the benchmark records. Each file has a row in the
  folder's README naming the command that wrote it and the machine, its
  name carries the date it was made, a JSON record parses, and every
  benchmark script a row names exists or is retired (HISTORY.md names the
  last commit that holds it). benchmarks/README.md lists every script
  there. The model screens and the local
  LLM's whole-protocol run are rendered into generated pages
  (docs/generated/screens.md, local-llm-protocol.md) that docs/models.md
  and docs/local-llm.md include.
- benchmarks/intervals.json (``benchmarks/bench_intervals.py``): the
  generated page docs/generated/intervals.md, which docs/intervals.md
  includes.

Each generated page from a benchmark record names its record in its first
line and is what ``docs render`` makes of it.

How long the tests take, and which of them need what: docs/testing.md."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from hatecheck_pipeline.core.config import load_params
from hatecheck_pipeline.evaluation import published
from hatecheck_pipeline.docsite import benchmarks as docs_benchmarks, llm as docs_llm, pages as docs_pages, runs as docs_record

RECORDS = REPO / "benchmarks" / "records"
NOT_RECORDS = {"README.md", "HISTORY.md"}
RUNS = sorted(p for p in (REPO / "docs" / "runs").iterdir() if p.is_dir())


# -- the recorded runs (docs/runs/) ---------------------------------------------


def test_the_generated_pages_are_what_the_renderer_makes_of_the_record():
    """`hatecheck-pipeline docs render --check`, as a user runs it."""
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "hatecheck-pipeline"), "docs", "render", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    record = docs_pages.record_of(REPO / "docs/generated/results.md")
    assert record is not None and (REPO / record) in RUNS


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_a_recorded_run_has_what_the_pages_read(run):
    info = docs_record.load(run)
    assert info["name"] == run.name
    assert re.fullmatch(r"[0-9a-f]{40}", info["commit"]), info["commit"]
    assert info["profile"] in load_params(REPO / "params.yaml")["profiles"]
    started, finished = dt.datetime.fromisoformat(info["started"]), dt.datetime.fromisoformat(info["finished"])
    assert started <= finished
    assert {"cpu", "cores", "memory_gib", "os"} <= set(info["machine"])
    assert info.get("label") and info.get("command")
    stages = sorted((run / "logs" / "benchmarks").glob("*.json"))
    assert stages, f"{run}: no stage records"
    for path in stages:
        rec = json.loads(path.read_text("utf-8"))
        assert rec["stage"] == path.stem, path
        assert {"phase", "wall_s", "cpu_s", "max_rss_mb", "started", "finished"} <= set(rec), path
        assert rec["wall_s"] >= 0 and rec["cpu_s"] >= 0 and rec["max_rss_mb"] > 0, path
        assert started <= dt.datetime.fromisoformat(rec["started"]) <= dt.datetime.fromisoformat(rec["finished"]) <= finished, path


# -- the benchmark records (benchmarks/records/) -------------------------------


def _expand(name: str) -> list[str]:
    """``a_seed{7,1234}_b`` -> ``a_seed7_b``, ``a_seed1234_b``."""
    found = re.search(r"\{([^{}]+)\}", name)
    if not found:
        return [name]
    return [n for part in found.group(1).split(",") for n in _expand(name[: found.start()] + part + name[found.end() :])]


def readme_rows() -> dict[str, list[str]]:
    """Record file -> the README row's cells (file, script, machine, what)."""
    rows = {}
    for line in (RECORDS / "README.md").read_text("utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not line.startswith("| `") or len(cells) < 4:
            continue
        for name in _expand(cells[0].strip("`")):
            assert name not in rows, f"two README rows for {name}"
            rows[name] = cells
    return rows


def record_files() -> list[Path]:
    return sorted(p for p in RECORDS.iterdir() if p.is_file() and p.name not in NOT_RECORDS)


def test_every_record_has_a_readme_row_and_every_row_a_record():
    rows, files = readme_rows(), {p.name for p in record_files()}
    assert files, "no records"
    assert not files - set(rows), f"records without a row in benchmarks/records/README.md: {sorted(files - set(rows))}"
    assert not set(rows) - files, f"README rows naming no record: {sorted(set(rows) - files)}"


def test_each_row_names_the_command_and_the_machine():
    for name, (_, command, machine, what, *_) in readme_rows().items():
        assert command and machine and what, f"{name}: a README cell is empty"


def test_each_record_name_carries_the_date_it_was_made():
    for path in record_files():
        found = re.search(r"_(\d{4}-\d{2}-\d{2})\.[a-z]+$", path.name)
        assert found, f"{path.name}: no date in the name"
        dt.date.fromisoformat(found.group(1))


def retired_scripts() -> dict[str, str]:
    """Script name -> the last commit that holds it, from HISTORY.md's
    "Retired scripts" table."""
    text = (RECORDS / "HISTORY.md").read_text("utf-8").split("## Retired scripts\n", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([\w.]+\.py)` \| ([0-9a-f]{7,40}) \|", text, re.M))


def test_the_benchmark_scripts_the_rows_name_exist():
    named = {m for cells in readme_rows().values() for m in re.findall(r"benchmarks/[\w./-]+\.py", " ".join(cells[:2]))}
    assert named, "no row names a benchmark script"
    missing = sorted(s for s in named if not (REPO / s).is_file() and Path(s).name not in retired_scripts())
    assert not missing, f"scripts named in benchmarks/records/README.md that neither exist nor are retired in HISTORY.md: {missing}"


def test_a_retired_script_is_gone_and_its_commit_holds_it():
    """A retired script is no longer in benchmarks/, and the commit
    HISTORY.md names holds it (where git has that commit: a shallow clone
    may not)."""
    retired = retired_scripts()
    assert retired, "HISTORY.md retires no script: the table's pattern no longer matches"
    for name, commit in retired.items():
        assert not (REPO / "benchmarks" / name).exists(), f"{name} is retired in HISTORY.md but still in benchmarks/"
        known = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO, capture_output=True)
        if known.returncode != 0:
            continue
        held = subprocess.run(["git", "cat-file", "-e", f"{commit}:benchmarks/{name}"], cwd=REPO, capture_output=True)
        assert held.returncode == 0, f"{commit} holds no benchmarks/{name}"


def test_the_benchmarks_readme_lists_every_script_and_no_other():
    """benchmarks/README.md: one row per script in benchmarks/, each naming
    the target it guards."""
    rows = re.findall(r"^\| `([\w.]+\.py)` \| (.+?) \|", (REPO / "benchmarks" / "README.md").read_text("utf-8"), re.M)
    listed = [name for name, _ in rows]
    assert len(listed) == len(set(listed)), "a script listed twice"
    scripts = sorted(p.name for p in (REPO / "benchmarks").glob("*.py"))
    assert sorted(listed) == scripts, f"benchmarks/README.md lists {sorted(listed)}, benchmarks/ holds {scripts}"
    assert all(target.strip() for _, target in rows)
    assert not set(listed) & set(retired_scripts()), "a retired script is still listed"


def test_json_records_parse():
    for path in record_files():
        text = path.read_text("utf-8")
        assert text.strip(), f"{path.name} is empty"
        if path.suffix == ".json":
            assert isinstance(json.loads(text), dict), path.name
        elif path.suffix == ".jsonl":
            assert all(isinstance(json.loads(line), dict) for line in text.splitlines() if line.strip()), path.name
    for path in sorted((REPO / "benchmarks").glob("*.json")):
        json.loads(path.read_text("utf-8"))


# -- the records the pages render ------------------------------------------------


SCREENS = sorted(RECORDS.glob("screen_XTC_*.json"))


def screens() -> list[tuple[str, dict]]:
    return [(p.relative_to(REPO).as_posix(), json.loads(p.read_text("utf-8"))) for p in SCREENS]


def test_the_screens_compare_like_with_like():
    docs = [doc for _, doc in screens()]
    for doc in docs:
        assert {"base_model", "profile", "seed", "train_seconds", "heldout", "mhc", "mhc_mean", "mhc_mean_interval"} <= set(doc)
        assert len(doc["mhc"]) == 10 and {d["n"] for d in doc["mhc"].values()} == {doc["mhc_cases_per_language"]}
        assert doc["mhc_mean_interval"]["ci_low"] <= doc["mhc_mean"] <= doc["mhc_mean_interval"]["ci_high"]
    # one budget and draw size for all; every seed of a candidate is a seed of the baseline
    assert {doc["mhc_cases_per_language"] for doc in docs} == {1000}
    assert {doc["profile"] for doc in docs} == {"embedded", "embeddinggemma"}
    seeds = {doc["seed"] for doc in docs if doc["profile"] == "embeddinggemma"}
    assert seeds <= {doc["seed"] for doc in docs if doc["profile"] == "embedded"}


def generated(name: str, page: str, monkeypatch) -> str:
    """The committed generated page ``name`` (the table after its header),
    checked to be what the renderer makes of its record and to be included
    by docs/``page``."""
    monkeypatch.chdir(REPO)
    path = REPO / "docs/generated" / f"{name}.md"
    source = docs_pages.BENCHMARK_PAGES[name][0]
    assert docs_pages.record_of(path) == source
    text = path.read_text("utf-8")
    assert text == docs_pages.render_benchmarks()[name], f"{path} is stale: run `hatecheck-pipeline docs render`"
    assert f'--8<-- "generated/{name}.md"' in (REPO / "docs" / page).read_text("utf-8"), f"docs/{page} does not include it"
    return text.split("\n\n", 1)[1]


def test_the_models_page_shows_the_screen_table(monkeypatch):
    assert generated("screens", "models.md", monkeypatch) == docs_benchmarks.screen_table(screens()) + "\n"


def test_the_default_follows_the_adoption_rule():
    """EmbeddingGemma (each head screened) becomes the embedded profile's
    multilingual base only with an MHC gain above the interval's width over
    multilingual-e5-small at the same seeds (its bf16 screens: the records
    naming a training precision are the fp32 ones)."""
    docs = [doc for _, doc in screens()]
    xlmt = load_params(REPO / "params.yaml")["profiles"]["embedded"]["base_models"]["xlmt"]
    variants = {d.get("pooling", "model") for d in docs if d["profile"] == "embeddinggemma"}
    assert variants == {"model", "mean"}
    for pooling in sorted(variants):
        gemma = [d for d in docs if d["profile"] == "embeddinggemma" and d.get("pooling", "model") == pooling]
        e5 = [d for d in docs if d["profile"] == "embedded" and d["seed"] in {g["seed"] for g in gemma} and "precision" not in d]
        assert len(gemma) >= 3 and len(e5) == len(gemma), (pooling, len(gemma), len(e5))
        gain = sum(d["mhc_mean"] for d in gemma) / len(gemma) - sum(d["mhc_mean"] for d in e5) / len(e5)
        width = max(d["mhc_mean_interval"]["ci_high"] - d["mhc_mean_interval"]["ci_low"] for d in e5)
        assert xlmt != "pinned:embeddinggemma-300m" or gain > width, (pooling, gain, width)


WHOLE_PROTOCOL = RECORDS / "local_llm_whole_protocol_2026-11-26.json"


def test_the_whole_protocol_record_is_the_whole_protocol():
    doc = json.loads(WHOLE_PROTOCOL.read_text("utf-8"))
    assert doc["complete"] is True
    assert doc["max_prompts_per_setting"] is None and doc["example_sets"] is None  # no cap: all 10 example sets
    # zero-, one-, single-category few-shot: 120 prompts each; two mixed settings: 10 sets x 240 comments
    assert doc["prompts"] == 3 * 120 + 2 * 10 * 240
    pieces = doc["answer_store"]["all_pieces"]
    assert pieces["prompts"] == doc["prompts"] and pieces["seconds"] > 0 and 0 <= pieces["untimed"] <= pieces["prompts"]


def test_the_local_llm_page_shows_the_whole_protocol_table(monkeypatch):
    doc = json.loads(WHOLE_PROTOCOL.read_text("utf-8"))
    table = docs_llm.ethos_table(WHOLE_PROTOCOL.relative_to(REPO).as_posix(), doc, published.load())
    assert generated("local-llm-protocol", "local-llm.md", monkeypatch) == table + "\n"


def test_the_records_and_scripts_the_pages_name_exist():
    """A page points to records and benchmark scripts instead of quoting
    their figures: every record file (``name_YYYY-MM-DD.ext``) and every
    ``benchmarks/...py`` a page, params.yaml or the README names exists
    (a script, or is retired in HISTORY.md)."""
    pages = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md", REPO / "params.yaml"]
    missing, named = [], 0
    for page in pages:
        text = page.read_text("utf-8")
        named += len(re.findall(r"_\d{4}-\d{2}-\d{2}\.(?:txt|json|jsonl)\b", text))
        for name in set(re.findall(r"[\w.+-]+_\d{4}-\d{2}-\d{2}\.(?:txt|json|jsonl)\b", text)):
            if not (RECORDS / name).is_file():
                missing.append(f"{page.name}: {name}")
        for script in set(re.findall(r"\b(?:benchmarks/)?(?:bench|screen|probe)_\w+\.py\b", text)):
            if not (REPO / "benchmarks" / Path(script).name).is_file() and Path(script).name not in retired_scripts():
                missing.append(f"{page.name}: {script}")
    assert named > 20, "the pages name almost no records: the pattern no longer matches them"
    assert not missing, "named but not in the repository:\n" + "\n".join(sorted(missing))


INTERVALS = REPO / "benchmarks" / "intervals.json"


def test_the_intervals_page_is_what_the_renderer_makes_of_the_record(monkeypatch):
    """docs/generated/intervals.md names benchmarks/intervals.json, is what
    the renderer makes of it, docs/intervals.md includes it, and every row
    of the record is a row of its tables."""
    assert docs_pages.BENCHMARK_PAGES["intervals"][0] == INTERVALS.relative_to(REPO)
    page = generated("intervals", "intervals.md", monkeypatch)
    rows = json.loads(INTERVALS.read_text("utf-8"))["intervals"]
    assert page.count("\n| HateCheck |") + page.count("\n| MHC ") == len(rows)


def test_docs_render_check_catches_a_changed_intervals_record(tmp_path, monkeypatch):
    """A figure changed in benchmarks/intervals.json makes the committed page stale."""
    import shutil

    for rel in ("benchmarks/intervals.json", "docs/generated/intervals.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    monkeypatch.chdir(tmp_path)
    run = docs_pages.record_of(REPO / "docs/generated/results.md")
    shutil.copytree(REPO / run, tmp_path / run, dirs_exist_ok=True)
    docs_pages.write(run, Path("docs/generated"))
    assert docs_pages.stale(run, Path("docs/generated")) == []
    doc = json.loads(INTERVALS.read_text("utf-8"))
    doc["intervals"][0]["template_ci"][1] = 99.9
    Path("benchmarks/intervals.json").write_text(json.dumps(doc), "utf-8")
    assert "[40.6, 99.9]" in docs_pages.render_benchmarks()["intervals"]
    assert docs_pages.stale(run, Path("docs/generated")) == ["docs/generated/intervals.md"]
