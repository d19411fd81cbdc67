"""The fault matrix: one broken input per case (raw files, suites,
configuration, predictions files), each with its exact expected outcome:
either a one-line error naming the file (or key), the row and the rule, or
rows quarantined with their reason while raw = kept + quarantined.

Each case prints what came out (``tests/reliability/conftest.py``); the
crash and concurrency cases are in ``test_crash_safety.py``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

import polars as pl
import pytest
from broken_raw import HEADER, SPLIT, davidson_rows
from conftest import REPO
from eval_synthetic import hatecheck_like, predictions
from fault_matrix import outcome  # noqa: F401  (fixture)
from pipeline_utils import BIN, env

from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.core import config
from hatecheck_pipeline.core.files import InputError
from hatecheck_pipeline.data import prepare, sources, validate
from hatecheck_pipeline.data.harmonise import MAX_TEXT_CHARS
from hatecheck_pipeline.evaluation import scoring
from hatecheck_pipeline.suites.registry import Suite

CASES: dict[str, Callable] = {}


def case(name: str):
    def register(fn):
        CASES[name] = fn
        return fn

    return register


# --------------------------------------------------------------------------
# What an outcome must look like


def refused(exc_type, fn, *must: str) -> str:
    """``fn`` raises ``exc_type`` with a one-line message holding every ``must``."""
    with pytest.raises(exc_type) as err:
        fn()
    message = str(err.value)
    assert "\n" not in message, f"not one line: {message!r}"
    for part in must:
        assert part in message, f"{part!r} not in {message!r}"
    return f"error: {message}"


def prepared(workdir: Path, dataset: str = "davidson2017", settings=SPLIT, files=None) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """Run the prepare stage; check raw = kept + quarantined on disk."""
    from hatecheck_pipeline.data.specs import spec

    raw = [Path(p) for p in (files or spec(dataset).raw_files(settings))]
    prepare.prepare(dataset, settings, raw, workdir / "t.parquet", workdir / "q.parquet", workdir / "c.json")
    kept, quarantine = pl.read_parquet(workdir / "t.parquet"), pl.read_parquet(workdir / "q.parquet")
    counts = json.loads((workdir / "c.json").read_text())
    assert counts["raw_rows"] == counts["kept"] + counts["quarantined"] == kept.height + quarantine.height
    return kept, quarantine, counts


def quarantined(workdir: Path, expected: dict[int, str], raw_rows: int, **kw) -> str:
    """Exactly the rows ``expected`` ({row: reason or reason prefix}) are quarantined."""
    kept, quarantine, counts = prepared(workdir, **kw)
    got = dict(zip(quarantine["row"].to_list(), quarantine["reason"].to_list()))
    assert set(got) == set(expected), got
    for row, reason in expected.items():
        assert got[row] == reason or got[row].startswith(reason), (row, got[row])
    assert counts["raw_rows"] == raw_rows
    shown = "; ".join(f"row {r}: {got[r][:90]}" for r in sorted(got))
    return f"raw {counts['raw_rows']} = kept {counts['kept']} + quarantined {counts['quarantined']} ({shown})"


def davidson(write_raw, content: str | bytes) -> Path:
    return write_raw("davidson2017", "labeled_data.csv", content)


# --------------------------------------------------------------------------
# Raw files


@case("raw: hash mismatch in the mirror")
def _(workdir, write_raw):
    mirror = workdir / "mirror"
    (mirror / "davidson2017").mkdir(parents=True)
    (mirror / "davidson2017/labeled_data.csv").write_text(HEADER + davidson_rows(3))
    item = sources.RawFile("davidson2017", "labeled_data.csv", "https://example.invalid/x.csv", "0" * 64)
    dest = workdir / "data/raw/davidson2017/labeled_data.csv"
    out = refused(
        sources.HashMismatchError,
        lambda: sources.fetch(item, dest, mirror),
        "davidson2017/labeled_data.csv",
        "sha256 mismatch",
        "expected " + "0" * 64,
    )
    assert not dest.exists() and not list(dest.parent.glob("*.part"))  # nothing half-copied left behind
    return out


@case("raw: file missing from the mirror")
def _(workdir, write_raw):
    item = sources.RawFile("davidson2017", "labeled_data.csv", "https://example.invalid/x.csv", "0" * 64)
    return refused(
        sources.MissingRawFile,
        lambda: sources.fetch(item, workdir / "d.csv", workdir / "empty_mirror"),
        "davidson2017/labeled_data.csv",
        "not found in mirror",
    )


@case("raw: truncated mid-record")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(5) + "5,3,0,0")
    return quarantined(workdir, {6: "malformed_row: expected 7 fields, found 4"}, raw_rows=6)


@case("raw: empty file (0 bytes)")
def _(workdir, write_raw):
    path = davidson(write_raw, "")
    return refused(InputError, lambda: prepared(workdir), str(path.relative_to(workdir)), "file is empty")


@case("raw: header only, no data rows")
def _(workdir, write_raw):
    path = davidson(write_raw, HEADER)
    return refused(InputError, lambda: prepared(workdir), str(path.relative_to(workdir)), "no data rows")


@case("raw: wrong delimiter (semicolons)")
def _(workdir, write_raw):
    path = davidson(write_raw, (HEADER + davidson_rows(3)).replace(",", ";"))
    return refused(
        InputError,
        lambda: prepared(workdir),
        str(path.relative_to(workdir)),
        "row 0 (header)",
        "missing required column(s) ['class', 'tweet']",
        "wrong delimiter?",
    )


@case("raw: required column missing")
def _(workdir, write_raw):
    path = davidson(write_raw, ",count,tweet\n0,3,hi\n")
    return refused(InputError, lambda: prepared(workdir), str(path.relative_to(workdir)), "row 0 (header)", "['class']")


@case("raw: column renamed (tweet -> text)")
def _(workdir, write_raw):
    path = davidson(write_raw, HEADER.replace("tweet", "text") + davidson_rows(3))
    return refused(InputError, lambda: prepared(workdir), str(path.relative_to(workdir)), "['tweet']", "'text'")


@case("raw: UTF-8 byte order mark")
def _(workdir, write_raw):
    davidson(write_raw, ("\ufeff" + HEADER + davidson_rows(5)).encode("utf-8"))
    out = quarantined(workdir, {}, raw_rows=5)
    kept, _, _ = prepared(workdir)
    assert sorted(kept["id"].to_list()) == ["0", "1", "2", "3", "4"]  # the BOM is not part of the first column
    return out


@case("raw: CRLF line endings")
def _(workdir, write_raw):
    davidson(write_raw, (HEADER + davidson_rows(5)).replace("\n", "\r\n"))
    out = quarantined(workdir, {}, raw_rows=5)
    kept, _, _ = prepared(workdir)
    assert not any("\r" in t for t in kept["text"].to_list())
    return out


@case("raw: Latin-1 bytes")
def _(workdir, write_raw):
    davidson(write_raw, (HEADER + davidson_rows(3)).encode() + "3,3,0,0,3,2,caf\xe9 cr\xe8me\n".encode("latin-1"))
    return quarantined(workdir, {4: "bad_encoding: bytes that are not valid UTF-8"}, raw_rows=4)


@case("raw: NUL bytes in a text")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(3) + "3,3,0,0,3,2,null\x00byte\x00s\n")
    return quarantined(workdir, {4: "nul_character: text holds 2 NUL character(s)"}, raw_rows=4)


@case("raw: newlines inside a quoted field")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(2) + '2,3,0,0,3,2,"line one\nline two\n\nline four"\n' + "3,3,0,0,3,7,bad label\n")
    out = quarantined(workdir, {4: "unknown_label: 7"}, raw_rows=4)  # row numbers count records, not lines
    kept, _, _ = prepared(workdir)
    assert "line one\nline two\n\nline four" in kept["text"].to_list()
    return out


@case("raw: unterminated quote")
def _(workdir, write_raw):
    path = davidson(write_raw, HEADER + davidson_rows(2) + '2,3,0,0,3,2,"never closed\n' + "3,3,0,0,3,2,x\n4,3,0,0,3,2,y\n")
    return refused(
        InputError, lambda: prepared(workdir), str(path.relative_to(workdir)), "row 3 (line 4)", "unterminated quote", "remaining 3 line(s)"
    )


@case("raw: a literal quote in the last, unquoted field (not an unterminated quote)")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(3) + "3,3,0,0,3,2,I am 5'10\" tall")
    out = quarantined(workdir, {}, raw_rows=4)
    kept, _, _ = prepared(workdir)
    assert "I am 5'10\" tall" in kept["text"].to_list()
    return out


@case("raw: 1 MB text")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(3) + "3,3,0,0,3,2," + "a" * 1_000_000 + "\n")
    return quarantined(workdir, {4: f"text_too_long: 1000000 characters (limit {MAX_TEXT_CHARS})"}, raw_rows=4)


@case("raw: whitespace-only text (tab, NBSP, ideographic space)")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(3) + '3,3,0,0,3,2,"\t \u00a0\u3000 "\n')
    return quarantined(workdir, {4: "empty_text"}, raw_rows=4)


@case("raw: unknown label")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(3) + "3,3,0,0,3,hate?,a label nobody knows\n")
    return quarantined(workdir, {4: "unknown_label: hate?"}, raw_rows=4)


@case("raw: NaN and empty labels")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(3) + "3,3,0,0,3,NaN,not a number\n4,3,0,0,3,,no label at all\n")
    return quarantined(workdir, {4: "unknown_label: NaN", 5: "unknown_label: <missing>"}, raw_rows=5)


@case("raw: duplicate id with different labels")
def _(workdir, write_raw):
    davidson(write_raw, HEADER + davidson_rows(4) + "1,3,0,0,3,0,same id other text\n" + "2,3,0,0,3,2,same id same label\n")
    return quarantined(
        workdir,
        {
            2: "conflicting_labels: id 1 has labels 0 | 2 (rows 2, 5)",
            5: "conflicting_labels: id 1 has labels 0 | 2 (rows 2, 5)",
            6: "duplicate_id: first seen at row 3",
        },
        raw_rows=6,
    )


@case("raw: one text in train and test (Founta's own splits)")
def _(workdir, write_raw):
    header = "text,label\n"
    write_raw("founta2018", "fou18_en_test_2000.csv", header + "shared text,1\ntest only,0\n")
    write_raw("founta2018", "fou18_en_dev_500.csv", header + "dev only,0\n")
    write_raw("founta2018", "fou18_en_train_20065.csv", header + "train only,1\nshared text,1\n")
    files = [workdir / "data/raw/founta2018" / n for n in ("fou18_en_train_20065.csv", "fou18_en_dev_500.csv", "fou18_en_test_2000.csv")]
    out = quarantined(
        workdir,
        {2: "duplicate_text: first seen at row 1 of data/raw/founta2018/fou18_en_test_2000.csv"},
        raw_rows=5,
        dataset="founta2018",
        settings={"source": "text_subsample"},
        files=files,
    )
    kept, _, _ = prepared(workdir, dataset="founta2018", settings={"source": "text_subsample"}, files=files)
    assert kept.filter(pl.col("text") == "shared text")["split"].to_list() == ["test"]
    return out


def hatecheck_suite(functionalities: list[str], per_functionality: int = 2) -> pl.DataFrame:
    """A processed HateCheck-like table, ``per_functionality`` cases each."""
    rows = [
        (f"{f}-{i}", f"case {f} {i}", "hateful" if f.endswith("_h") else "non-hateful", f)
        for f in functionalities
        for i in range(per_functionality)
    ]
    return pl.DataFrame(rows, schema=["id", "text", "label", "functionality"], orient="row").with_columns(
        label_original=pl.col("label"), language=pl.lit("english"), dataset=pl.lit("hatecheck"), split=pl.lit("test")
    )


def published_functionalities() -> list:
    from hatecheck_pipeline.core.yamlio import read_yaml

    return read_yaml(REPO / "src/hatecheck_pipeline/resources/functionalities.yaml")["hatecheck"]


def run_validate(workdir: Path, table: pl.DataFrame, suite_count: int) -> Callable[[], str]:
    table.write_parquet(workdir / "t.parquet")
    (workdir / "c.json").write_text(json.dumps({"raw_rows": table.height, "kept": table.height, "quarantined": 0}))
    return lambda: validate.validate(
        "hatecheck",
        workdir / "t.parquet",
        workdir / "c.json",
        workdir / "r.json",
        workdir / "r.md",
        tolerance=0.01,
        suite_counts=suite_count,
        functionalities=published_functionalities(),
    )


@case("suite: a functionality missing")
def _(workdir, write_raw):
    codes = [f[0] for f in published_functionalities()]
    table = hatecheck_suite([c for c in codes if c != "slur_reclaimed_nh"])
    return refused(
        validate.ValidationFailed,
        run_validate(workdir, table, table.height),
        "t.parquet",
        "[hatecheck]",
        "expect_column_distinct_values_to_equal_set (column 'functionality') failed: missing ['slur_reclaimed_nh']",
    )


@case("suite: wrong case count")
def _(workdir, write_raw):
    codes = [f[0] for f in published_functionalities()]
    table = hatecheck_suite(codes)
    out = refused(
        validate.ValidationFailed,
        run_validate(workdir, table, 3728),
        "t.parquet",
        "expect_table_row_count_to_equal {'value': 3728} failed: observed 58",
    )
    assert json.loads((workdir / "r.json").read_text())["success"] is False  # the report is written all the same
    return out


# --------------------------------------------------------------------------
# Configuration (the same checks serve the CLI, Snakemake and DVC's
# `hatecheck-pipeline run`, through core.config)


def bad_config(overrides: list[str], *must: str) -> str:
    return refused(config.ConfigError, lambda: config.load_params(REPO / "params.yaml", overrides), "invalid parameters", *must)


CONFIG_CASES = {
    "config: unknown nested key": (
        ["models.B-D.sedd=7"],
        "models.B-D.sedd: unknown key (allowed here: kind, recipe, role, scheme, seed, suites, train)",
    ),
    "config: unknown key in a profile": (["profiles.smoke.max_epoch=1"], "profiles.smoke.max_epoch: unknown key"),
    "config: a recipe key a profile may not set per role": (
        ["profiles.embedded.recipe_by_role.xlmt.epochs=3"],
        "profiles.embedded.recipe_by_role.xlmt.epochs: unknown key (allowed here: batch_size, class_weights, dropout, layer_lr_decay, lr, pooling, warmup_ratio, weight_decay)",
    ),
    "config: wrong type": (["datasets.davidson2017.seed=abc"], "datasets.davidson2017.seed: 'abc' is not of type 'integer'"),
    "config: out-of-range value": (["evaluation.ci_level=1.5"], "evaluation.ci_level: 1.5 is greater than or equal to the maximum of 1"),
    "config: negative split fraction": (
        ["datasets.hateval2019_es.split.dev=-0.1"],
        "datasets.hateval2019_es.split.dev: -0.1 is less than the minimum of 0",
    ),
    "config: split fractions not summing to 1": (
        ["datasets.davidson2017.split.train=0.7"],
        "datasets.davidson2017.split: the fractions must sum to 1 (train 0.7 + dev 0.1 + test 0.1 = 0.9)",
    ),
    "config: zero batch size": (["training.recipes.mhc.batch_size=0"], "training.recipes.mhc.batch_size: 0 is less than the minimum of 1"),
    "config: unknown profile": (
        ["profile=nonexistent"],
        "profile: 'nonexistent' is not a profile (profiles: paper, embedded, embeddinggemma, smoke)",
    ),
    "config: unknown model role": (
        ["models.B-D.role=gpt"],
        "models.B-D.role: 'gpt' has no base model in profiles paper, embedded, embeddinggemma, smoke (roles: bert, xlmt)",
    ),
    "config: unknown scheme": (
        ["models.XTC.scheme=bpe"],
        "models.XTC.scheme: 'bpe' is not a scheme (preprocessing.schemes: bert, hatexplain, xlmt)",
    ),
    "config: unknown suite": (["models.B-D.suites=[hatecheck, mhc_klingon]"], "models.B-D.suites: 'mhc_klingon' is not a suite"),
    "config: unknown dataset": (["models.B-D.train=[davidson2071]"], "models.B-D.train.0: 'davidson2071' is not one of"),
    "config: override without a value": (["profile"], "override 'profile' is not of the form key=value"),
}


def _config_case(overrides, must):
    def run(workdir, write_raw):
        if "=" not in overrides[0]:
            return refused(config.ConfigError, lambda: config.load_params(REPO / "params.yaml", overrides), must)
        return bad_config(overrides, must)

    return run


for _name, (_overrides, _must) in CONFIG_CASES.items():
    CASES[_name] = _config_case(_overrides, _must)


def snakemake_dry(*config_args: str) -> subprocess.CompletedProcess:
    """``snakemake -n`` in the repository with ``--config`` values (nothing runs)."""
    return subprocess.run(
        [str(BIN / "snakemake"), "-n", "--cores", "1", "--config", *config_args],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def snakemake_refuses(*config_args: str, must: str) -> str:
    proc = snakemake_dry(*config_args)
    assert proc.returncode == 1, proc.stderr[-2000:]
    info = ("Config file params.yaml is extended", "Using workflow specific profile profiles/default")  # Snakemake's own info lines
    errors = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith(info)]
    assert errors == [errors[0]] and errors[0].startswith("error: invalid parameters"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and must in errors[0], errors
    return f"snakemake: {errors[0]}"


@case("config: snakemake --config profile=nonexistent")
def _(workdir, write_raw):
    return snakemake_refuses(
        "profile=nonexistent", must="profile: 'nonexistent' is not a profile (profiles: paper, embedded, embeddinggemma, smoke)"
    )


@case("config: snakemake --config with an unknown key")
def _(workdir, write_raw):
    return snakemake_refuses("nosuchkey=1", must="nosuchkey: unknown key (allowed here: bias, datasets")


@case("config: snakemake nested override, invalid")
def _(workdir, write_raw):
    return snakemake_refuses(
        'set=["datasets.davidson2017.seed=7", "profiles.smoke.max_epochs=0"]',
        must="profiles.smoke.max_epochs: 0 is less than the minimum of 1",
    )


# --------------------------------------------------------------------------
# Predictions files (`score`)

SUITE = Suite("hatecheck", "hatecheck", "case_id")


def scored(workdir: Path, write: Callable[[Path], Path], *must: str, **kw) -> str:
    table = workdir / "data/interim/hatecheck/table.parquet"
    table.parent.mkdir(parents=True, exist_ok=True)
    hatecheck_like().write_parquet(table)
    path = write(workdir)
    return refused(scoring.ScoringError, lambda: scoring.run(SUITE, path, workdir / "m.json", boot=Bootstrap(10), **kw), *must)


def _csv(name: str, content: str | Callable[[pl.DataFrame], pl.DataFrame]):
    def write(workdir: Path) -> Path:
        path = workdir / name
        if isinstance(content, str):
            path.write_text(content)
        else:
            content(predictions(hatecheck_like(), 0.8)).write_csv(path)
        return path

    return write


@case("predictions: empty file (0 bytes)")
def _(workdir, write_raw):
    return scored(workdir, _csv("p.csv", ""), "p.csv", "empty")


@case("predictions: header only")
def _(workdir, write_raw):
    return scored(workdir, _csv("p.csv", "case_id,pred\n"), "60 of 60 suite case(s) have no prediction")


@case("predictions: wrong file type")
def _(workdir, write_raw):
    return scored(workdir, _csv("p.txt", "case_id,pred\n"), "p.txt", "use a .csv, .tsv or .parquet file")


@case("predictions: no id column")
def _(workdir, write_raw):
    return scored(workdir, _csv("p.csv", lambda p: p.rename({"case_id": "ident"})), "p.csv", "no id column ('case_id' or 'id')")


@case("predictions: NaN probabilities")
def _(workdir, write_raw):
    bad = lambda p: p.with_columns(pl.when(pl.int_range(pl.len()) < 3).then(None).otherwise(pl.col("p_hateful")).alias("p_hateful"))  # noqa: E731
    return scored(
        workdir,
        _csv("p.csv", bad),
        "p.csv: column 'p_hateful': 3 prediction(s) are not probabilities in [0, 1] (--threshold 0.5 given) at row(s) 1, 2, 3",
        pred_column="p_hateful",
        threshold=0.5,
    )


@case("predictions: duplicate ids")
def _(workdir, write_raw):
    return scored(workdir, _csv("p.csv", lambda p: pl.concat([p, p.head(2)])), "2 duplicate id(s)")


@case("predictions: probabilities without a threshold")
def _(workdir, write_raw):
    return scored(
        workdir,
        _csv("p.csv", lambda p: p),
        "p.csv: column 'p_hateful'",
        "(probabilities need --threshold) at row(s) 1, 2, 3, 4, 5 ...",
        pred_column="p_hateful",
    )


@case("predictions: the CLI prints one line, no traceback")
def _(workdir, write_raw):
    for name in ("params.yaml", config.SCHEMA_FILE):
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text((REPO / name).read_text())
    table = workdir / "data/interim/hatecheck/table.parquet"
    table.parent.mkdir(parents=True, exist_ok=True)
    hatecheck_like().write_parquet(table)
    pl.DataFrame({"case_id": ["1", "2"], "pred": ["hateful", "maybe"]}).write_csv(workdir / "p.csv")
    proc = subprocess.run(
        [str(BIN / "hatecheck-pipeline"), "score", "--suite", "hatecheck", "--predictions", "p.csv", "--out", "m.json"],
        cwd=workdir,
        env=env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: p.csv: column 'pred': 1 prediction(s)"), proc.stderr[-2000:]
    assert "at row(s) 2: 'maybe'" in lines[0]
    return lines[0]


@pytest.mark.parametrize("name", list(CASES))
def test_fault(name, workdir, write_raw, outcome):
    seen = CASES[name](workdir, write_raw)
    assert seen, "a case says what came out"
    outcome(seen)


def test_the_matrix_has_enough_cases():
    assert len(CASES) >= 25
