"""Instantiate HateCheck / Multilingual HateCheck case templates.

Placeholders of every source are normalised to one long table
(:data:`PH_SCHEMA`): ``placeholder`` (e.g. ``[male_IDENT_S]``),
``target_ident``, ``form`` (grammatical case column of the German/Polish
files, ``""`` where the source has none), ``slot`` (the row of that target
in its file: several slurs per target) and ``value``.

A template row gives the case template text (``case_templ``) and, for
gendered languages, ``gender_male``/``gender_female`` variants; German and
Polish templates name the ``case`` form their placeholders take.
"""

from __future__ import annotations

import csv
import itertools
import re
from pathlib import Path
from typing import Any, Iterable

import polars as pl
import yaml

from hatecheck_pipeline.expansion import SUITE_COLUMNS, resource

PLACEHOLDER = re.compile(r"\[[^\[\]]+\]")
PH_SCHEMA = {"placeholder": pl.Utf8, "target_ident": pl.Utf8, "form": pl.Utf8, "slot": pl.Int64, "value": pl.Utf8}
MISSING = {"", "-", None}


def _clean_ph(name: str) -> str:
    """``[IDENT_S_homoph].`` -> ``[IDENT_S_homoph]``."""
    m = PLACEHOLDER.search(name)
    return m.group(0) if m else name.strip()


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=PH_SCHEMA)


# ---------------------------------------------------------------- loaders


def hatecheck_placeholders(path: Path, mapping: dict | None = None) -> pl.DataFrame:
    """HateCheck's ``template_placeholders.csv`` (comma-separated values)."""
    mapping = mapping or yaml.safe_load(resource("hatecheck_placeholders.yaml").read_text("utf-8"))
    targets = mapping["targets"]
    slur_targets = [t for t in targets for _ in range(mapping["slurs_per_target"][t])]
    rows = []
    with open(path, encoding="utf-8", newline="") as fh:
        for rec in csv.DictReader(fh):
            name = _clean_ph(rec["Placeholder"])
            values = [v.strip() for v in rec["Values"].split(",")]
            owners = slur_targets if "SLUR" in name else targets
            if len(values) != len(owners):
                raise ValueError(f"{path}: {name} has {len(values)} values, expected {len(owners)}")
            seen: dict[str, int] = {}
            for owner, value in zip(owners, values):
                slot = seen[owner] = seen.get(owner, -1) + 1
                rows.append({"placeholder": name, "target_ident": owner, "form": "", "slot": slot, "value": value})
    return _frame(rows)


def mhc_placeholders(folder: Path) -> pl.DataFrame:
    """One MHC language: either ``IDENT.csv``/``SLR.csv`` (one column per
    placeholder) or one ``[PLACEHOLDER].csv`` per placeholder with one
    column per grammatical case (German, Polish)."""
    rows = []
    for path in sorted(Path(folder).glob("*.csv")):
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            records = list(reader)
            columns = [c for c in (reader.fieldnames or []) if c and c != "TARGET"]
        per_file = path.stem.startswith("[")
        seen: dict[str, int] = {}
        for rec in records:
            target = (rec.get("TARGET") or "").strip()
            if not target:
                continue
            slot = seen[target] = seen.get(target, -1) + 1
            for col in columns:
                value = rec.get(col)
                value = value.strip() if isinstance(value, str) else value
                if value in MISSING:
                    continue
                ph, form = (_clean_ph(path.stem), col.strip()) if per_file else (_clean_ph(col), "")
                rows.append({"placeholder": ph, "target_ident": target, "form": form, "slot": slot, "value": value})
    return _frame(rows)


def terms_placeholders(path: Path, language: str) -> pl.DataFrame:
    """A CSV of new identity terms/slurs (columns language, target_ident,
    placeholder, form, value[, slot]) for one language."""
    frame = pl.read_csv(path, infer_schema_length=0).filter(pl.col("language") == language)
    if "slot" not in frame.columns:
        frame = frame.with_columns(pl.lit("0").alias("slot"))
    return frame.select(
        pl.col("placeholder"),
        pl.col("target_ident"),
        pl.col("form").fill_null(""),
        pl.col("slot").cast(pl.Int64),
        pl.col("value"),
    )


def hatecheck_templates(all_cases: Path) -> pl.DataFrame:
    """The distinct templates behind HateCheck's published cases."""
    cases = pl.read_csv(all_cases, infer_schema_length=0)
    return (
        cases.group_by("templ_id", maintain_order=True)
        .agg(pl.col("functionality").first(), pl.col("case_templ").first(), pl.col("label_gold").first())
        .with_columns(
            pl.lit(None, pl.Utf8).alias("gender_male"), pl.lit(None, pl.Utf8).alias("gender_female"), pl.lit(None, pl.Utf8).alias("case")
        )
    )


def mhc_templates(path: Path) -> pl.DataFrame:
    t = pl.read_csv(path, infer_schema_length=0)
    t = t.with_columns(pl.col("trans_manual").alias("case_templ"))
    for col in ("gender_male", "gender_female", "case", "label_gold"):
        if col not in t.columns:
            t = t.with_columns(pl.lit(None, pl.Utf8).alias(col))
    return t.select("templ_id", "functionality", "case_templ", "label_gold", "gender_male", "gender_female", "case")


# ---------------------------------------------------------- instantiation


def label_of(functionality: str, label_gold: str | None = None) -> str:
    if label_gold in ("hateful", "non-hateful"):
        return label_gold
    return "hateful" if functionality.endswith("_h") else "non-hateful"


def _index(ph: pl.DataFrame) -> dict[tuple[str, str], dict[str, dict[int, str]]]:
    """(placeholder, target) -> form -> slot -> value."""
    out: dict[tuple[str, str], dict[str, dict[int, str]]] = {}
    for r in ph.iter_rows(named=True):
        out.setdefault((r["placeholder"], r["target_ident"]), {}).setdefault(r["form"], {})[r["slot"]] = r["value"]
    return out


def _family(name: str) -> str:
    return "slur" if ("SLR" in name or "SLUR" in name) else "ident"


def _values(index, name: str, target: str, form: str | None) -> dict[int, str]:
    forms = index.get((name, target))
    if not forms:
        return {}
    if form and form in forms:
        return forms[form]
    if "" in forms:
        return forms[""]
    return forms[next(iter(forms))]  # first case column (e.g. Nom)


def fill(text: str, values: dict[str, str], capitalise: bool = True, english: bool = False) -> str:
    """Replace placeholders; capitalise a sentence-initial placeholder value
    (not for scripts/romanisations written in lower case, e.g. Hindi,
    Mandarin pinyin); English ``a`` -> ``an`` before a vowel-initial value."""
    out = text
    for name, value in values.items():
        if english:
            out = re.sub(r"\b([Aa]) " + re.escape(name), lambda m: m.group(1) + ("n " if value[:1].lower() in "aeiou" else " ") + name, out)
        out = out.replace(name, value)
    if capitalise and text.startswith("[") and out[:1].isalpha():
        out = out[0].upper() + out[1:]
    return out


def _fills(text: str, target: str, index, form: str | None) -> list[dict[str, str]]:
    """Every filling of ``text``'s placeholders for one target: placeholders
    of one family (identity terms, slurs) share the slot (same row), across
    families all combinations."""
    names = list(dict.fromkeys(PLACEHOLDER.findall(text)))
    by_family: dict[str, list[str]] = {}
    for n in names:
        by_family.setdefault(_family(n), []).append(n)
    options = []
    for fam_names in by_family.values():
        per = [_values(index, n, target, form) for n in fam_names]
        slots = sorted(set.intersection(*(set(p) for p in per))) if per else []
        options.append([{n: p[s] for n, p in zip(fam_names, per)} for s in slots])
    return [dict(itertools.chain.from_iterable(d.items() for d in combo)) for combo in itertools.product(*options)]


def instantiate(
    templates: pl.DataFrame,
    placeholders: pl.DataFrame,
    language: str,
    dataset: str,
    targets: Iterable[str] | None = None,
    capitalise: bool = True,
) -> pl.DataFrame:
    """All cases of ``templates`` filled with ``placeholders``.

    A gendered template (``gender_male``/``gender_female``) takes, per
    target and slot, the male form where the male placeholders exist and
    the female form otherwise. ``targets`` restricts the groups (None: all
    groups in ``placeholders``); templates without placeholders give one
    case with no target, unless ``targets`` is given (extension runs).
    """
    index = _index(placeholders)
    all_targets = list(dict.fromkeys(placeholders["target_ident"].to_list()))
    wanted = list(targets) if targets is not None else all_targets
    rows: list[dict[str, Any]] = []
    for t in templates.iter_rows(named=True):
        base = {
            "language": language,
            "dataset": dataset,
            "split": "test",
            "functionality": t["functionality"],
            "templ_id": str(t["templ_id"]),
            "label": label_of(t["functionality"], t.get("label_gold")),
            "source_id": None,
            "generator": "template",
        }
        variants = [v for v in (t.get("gender_male"), t.get("gender_female")) if v]
        texts = variants or ([t["case_templ"]] if t.get("case_templ") else [])
        if not texts:
            continue
        if not PLACEHOLDER.search(texts[0]):
            if targets is None:
                rows.append({**base, "text": texts[0], "target_ident": None, "case_templ": texts[0]})
            continue
        for target in wanted:
            for text in texts:  # male variant first, female where the male forms are missing
                fills = _fills(text, target, index, t.get("case"))
                for values in fills:
                    rows.append(
                        {**base, "text": fill(text, values, capitalise, language == "english"), "target_ident": target, "case_templ": text}
                    )
                if fills:
                    break
    frame = pl.DataFrame(rows, schema={c: pl.Utf8 for c in SUITE_COLUMNS if c != "id"})
    frame = frame.with_columns((pl.lit(f"{dataset}-{language}-") + pl.int_range(pl.len()).cast(pl.Utf8)).alias("id"))
    return frame.select(SUITE_COLUMNS)


# ------------------------------------------------------------ comparison


def normalise(text: pl.Expr) -> pl.Expr:
    return text.str.strip_chars().str.replace_all(r"\s+", " ")


KEY = ["templ_id", "text_norm", "label", "functionality", "target"]


def compare(published: pl.DataFrame, generated: pl.DataFrame) -> tuple[dict[str, Any], pl.DataFrame]:
    """Share of published template cases reproduced (same text, label,
    functionality, target within the same template), as a multiset match.

    ``published`` columns: templ_id, text, label, functionality,
    target_ident, id. Returns the summary and the differences (published
    cases not reproduced, each with the generated texts of its template and
    target for diagnosis; generated cases matching no published case).
    """

    def keyed(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(
            normalise(pl.col("text")).alias("text_norm"),
            pl.col("target_ident").fill_null("").alias("target"),
            pl.col("templ_id").cast(pl.Utf8),
        ).with_columns(pl.int_range(pl.len()).over(KEY).alias("dup"))

    pub, gen = keyed(published), keyed(generated)
    matched = pub.join(gen.select(*KEY, "dup"), on=[*KEY, "dup"], how="semi")
    missing = pub.join(gen.select(*KEY, "dup"), on=[*KEY, "dup"], how="anti")
    extra = gen.join(pub.select(*KEY, "dup"), on=[*KEY, "dup"], how="anti")
    hint = gen.group_by("templ_id", "target").agg(pl.col("text").str.join(" || ").alias("generated_text"))
    missing = missing.join(hint, on=["templ_id", "target"], how="left")
    diffs = pl.concat(
        [
            missing.select(
                pl.lit("not_reproduced").alias("kind"),
                "templ_id",
                "functionality",
                "label",
                pl.col("target_ident"),
                pl.col("id").alias("published_id"),
                pl.col("text").alias("published_text"),
                "generated_text",
            ),
            extra.select(
                pl.lit("not_published").alias("kind"),
                "templ_id",
                "functionality",
                "label",
                pl.col("target_ident"),
                pl.lit(None, pl.Utf8).alias("published_id"),
                pl.lit(None, pl.Utf8).alias("published_text"),
                pl.col("text").alias("generated_text"),
            ),
        ],
        how="vertical_relaxed",
    )
    n = pub.height
    summary = {
        "published_template_cases": n,
        "reproduced": matched.height,
        "share_reproduced": round(matched.height / n, 6) if n else None,
        "generated": gen.height,
        "generated_not_published": extra.height,
    }
    return summary, diffs


# ------------------------------------------------------------ stage runs


def _published_hatecheck(all_cases: Path) -> pl.DataFrame:
    return pl.read_csv(all_cases, infer_schema_length=0).select(
        pl.col("case_id").alias("id"),
        pl.col("test_case").alias("text"),
        pl.col("label_gold").alias("label"),
        "functionality",
        "target_ident",
        "templ_id",
    )


def _published_mhc(cases: Path) -> pl.DataFrame:
    return pl.read_csv(cases, infer_schema_length=0).select(
        pl.col("mhc_case_id").alias("id"),
        pl.col("test_case").alias("text"),
        pl.col("label_gold").alias("label"),
        "functionality",
        "target_ident",
        "templ_id",
    )


def sources(hatecheck_dir: Path, mhc_dir: Path, languages: list[str]) -> dict[str, dict[str, Any]]:
    """language -> loaders of its templates, placeholders and published cases."""
    out: dict[str, dict[str, Any]] = {
        "english": {
            "dataset": "hatecheck",
            "templates": lambda: hatecheck_templates(hatecheck_dir / "all_cases.csv"),
            "placeholders": lambda: hatecheck_placeholders(hatecheck_dir / "template_placeholders.csv"),
            "published": lambda: _published_hatecheck(hatecheck_dir / "all_cases.csv"),
        }
    }
    for lang in languages:
        out[lang] = {
            "dataset": "mhc",
            "templates": lambda lang=lang: mhc_templates(mhc_dir / "templates" / f"hatecheck_templates_{lang}.csv"),
            "placeholders": lambda lang=lang: mhc_placeholders(mhc_dir / "placeholders" / lang),
            "published": lambda lang=lang: _published_mhc(mhc_dir / "cases" / f"hatecheck_cases_final_{lang}.csv"),
        }
    return out


def run_regenerate(
    hatecheck_dir: Path, mhc_dir: Path, languages: list[str], lowercase_languages: list[str], out_table: Path, out_json: Path, out_csv: Path
) -> dict[str, Any]:
    """Regenerate every published suite from its templates and measure the
    share of published template cases reproduced, per language."""
    from hatecheck_pipeline.core.files import write_csv, write_json, write_parquet

    tables, diffs, report = [], [], {}
    for lang, src in sources(hatecheck_dir, mhc_dir, languages).items():
        gen = instantiate(src["templates"](), src["placeholders"](), lang, src["dataset"], capitalise=lang not in lowercase_languages)
        summary, diff = compare(src["published"](), gen)
        report[lang] = summary
        tables.append(gen)
        diffs.append(diff.with_columns(pl.lit(lang).alias("language")))
    total = sum(s["published_template_cases"] for s in report.values())
    hit = sum(s["reproduced"] for s in report.values())
    result = {
        "per_language": report,
        "overall": {"published_template_cases": total, "reproduced": hit, "share_reproduced": round(hit / total, 6) if total else None},
    }
    write_parquet(pl.concat(tables), out_table)
    write_csv(pl.concat(diffs, how="vertical_relaxed").select("language", pl.exclude("language")), out_csv)
    write_json(result, out_json)
    return result


def run_extend(
    terms_files: list[Path], hatecheck_dir: Path, mhc_dir: Path, languages: list[str], lowercase_languages: list[str], out_table: Path
) -> pl.DataFrame:
    """New cases for the groups/slurs of ``terms_files`` (CSV: language,
    target_ident, placeholder, form, value[, slot]) on the published
    templates of their language."""
    from hatecheck_pipeline.core.files import write_parquet

    srcs = sources(hatecheck_dir, mhc_dir, languages)
    frames = []
    for path in terms_files:
        langs = pl.read_csv(path, infer_schema_length=0)["language"].unique().sort().to_list()
        for lang in langs:
            if lang not in srcs:
                raise ValueError(f"{path}: language {lang!r} has no templates (known: {sorted(srcs)})")
            ph = terms_placeholders(path, lang)
            targets = ph["target_ident"].unique(maintain_order=True).to_list()
            frames.append(
                instantiate(
                    srcs[lang]["templates"](),
                    ph,
                    lang,
                    f"{srcs[lang]['dataset']}_extended",
                    targets=targets,
                    capitalise=lang not in lowercase_languages,
                )
            )
    frame = pl.concat(frames) if frames else pl.DataFrame(schema={c: pl.Utf8 for c in SUITE_COLUMNS})
    frame = frame.with_columns((pl.lit("ext-") + pl.int_range(pl.len()).cast(pl.Utf8)).alias("id"))
    write_parquet(frame, out_table)
    return frame


def raw_dirs(raw_files: list[Path]) -> tuple[Path, Path]:
    """HateCheck's and MHC's ingested folders, from the declared raw files."""
    hatecheck_dir = next(f.parent for f in raw_files if f.name == "all_cases.csv")
    mhc_dir = next(f.parent.parent for f in raw_files if f.parent.name == "cases")
    return hatecheck_dir, mhc_dir


def expand_templates(
    raw_files: list[Path], languages: list[str], lowercase_languages: list[str], table: Path, differences: Path, reproduction: Path
) -> str:
    """Stage: regenerate HateCheck and MHC from their templates and
    placeholders; the share of published cases reproduced per language."""
    hatecheck_dir, mhc_dir = raw_dirs(raw_files)
    res = run_regenerate(hatecheck_dir, mhc_dir, languages, lowercase_languages, table, reproduction, differences)
    return "; ".join(
        f"{lang}: reproduced {s['reproduced']}/{s['published_template_cases']} ({s['share_reproduced']:.2%})"
        for lang, s in res["per_language"].items()
    )


def expand_extend(terms: list[Path], raw_files: list[Path], languages: list[str], lowercase_languages: list[str], out: Path) -> str:
    """Stage: new cases for the identity terms / slurs of the ``terms`` CSVs."""
    hatecheck_dir, mhc_dir = raw_dirs(raw_files)
    frame = run_extend(terms, hatecheck_dir, mhc_dir, languages, lowercase_languages, out)
    return f"extended: {frame.height} new cases"
