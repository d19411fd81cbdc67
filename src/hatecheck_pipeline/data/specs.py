"""The dataset registry: one :class:`DatasetSpec` per dataset (its raw
source, its builder, the raw files it reads) in ``DATASETS``, looked up by
:func:`spec`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from hatecheck_pipeline.core.paths import raw as raw_path
from hatecheck_pipeline.data.annotated import ethos, hatexplain
from hatecheck_pipeline.data.case_suites import crows_pairs, hatecheck, mhc, winobias, winobias_file_names
from hatecheck_pipeline.data.corpora import davidson2017, fortuna2019, founta2018, haspeede2020, hateval2019_es
from hatecheck_pipeline.data.harmonise import Harmonised


@dataclass(frozen=True)
class DatasetSpec:
    """Everything about one dataset: its raw source, its builder, the raw
    files the builder reads (given the dataset's params) and whether it is
    a functional test suite."""

    name: str
    source: str  # raw source (ingest stage) it reads
    build: Callable[[Mapping[str, Any]], Harmonised]
    files: Callable[[Mapping[str, Any]], list[str]]  # params -> raw file names within the source
    suite: bool = False

    def raw_files(self, params: Mapping[str, Any]) -> list[str]:
        return [raw_path(self.source, f) for f in self.files(params)]


def _fixed(*names: str) -> Callable[[Mapping[str, Any]], list[str]]:
    return lambda params: list(names)


DATASETS: dict[str, DatasetSpec] = {
    s.name: s
    for s in [
        DatasetSpec("davidson2017", "davidson2017", davidson2017, _fixed("labeled_data.csv")),
        DatasetSpec("founta2018", "founta2018", founta2018,
                    _fixed("fou18_en_train_20065.csv", "fou18_en_dev_500.csv", "fou18_en_test_2000.csv", "hatespeech_labels.csv")),
        DatasetSpec("hateval2019_es", "hateval2019", hateval2019_es, _fixed("bas19_es.csv")),
        DatasetSpec("haspeede2020", "haspeede2020", haspeede2020, _fixed("san20_it.csv")),
        DatasetSpec("fortuna2019", "fortuna2019", fortuna2019, _fixed("portuguese_hate_speech_binary_classification.csv")),
        DatasetSpec("hatexplain", "hatexplain", hatexplain,
                    _fixed("hatexplain_test.jsonl", "hatexplain_val.jsonl", "hatexplain_train_labels.csv", "post_id_divisions.json")),
        DatasetSpec("hatecheck", "hatecheck", hatecheck, _fixed("test_suite_cases.csv", "test_suite_annotations.csv"), suite=True),
        DatasetSpec("mhc", "mhc", mhc, lambda p: [f"cases/hatecheck_cases_final_{lang}.csv" for lang in p["languages"]], suite=True),
        DatasetSpec("crows_pairs", "crows_pairs", crows_pairs, _fixed("crows_pairs_anonymized.csv")),
        DatasetSpec("winobias", "winobias", winobias, lambda params: winobias_file_names()),
        DatasetSpec("ethos", "ethos", ethos, _fixed("Ethos_Dataset_Binary.csv", "Ethos_Dataset_Multi_Label.csv")),
    ]
}  # fmt: skip


def spec(dataset: str) -> DatasetSpec:
    if dataset not in DATASETS:
        raise KeyError(f"unknown dataset {dataset!r} (known: {', '.join(DATASETS)})")
    return DATASETS[dataset]
