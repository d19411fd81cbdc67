"""Classifiers trained elsewhere in the registry: no training stage, a
classifier_<model> stage (the pinned file fetched, the card written), one
predict stage per suite group reading the suites' texts as published, the
same score stages as every model, a page; and the configuration errors a
user meets, one line each."""

from __future__ import annotations

import copy

import pytest

from hatecheck_pipeline.core import paths
from hatecheck_pipeline.core.config import ConfigError, apply_and_validate
from hatecheck_pipeline.pipeline.registry import build_stages
from conftest import REPO


def with_model(params, name, spec):
    return apply_and_validate(params, {f"models.{name}": spec}, REPO / "workflow/schemas/params.schema.yaml", "test")


def test_hatesonar_is_a_classifier_of_the_default_profile_with_no_training(params):
    stages = {s.name: s for s in build_stages(params)}
    assert "train_hatesonar" not in stages
    reg = stages["classifier_hatesonar"]
    assert reg.outputs["fetched"].path == paths.classifier_file("hatesonar", "model.onnx")
    assert reg.outputs["card"].path == paths.model_card("hatesonar")
    hc = stages["predict_hatesonar_hatecheck"]
    # the texts as published: the validated table, no preprocessing scheme
    assert hc.inputs["tables"] == {"hatecheck": paths.interim_table("hatecheck")}
    assert hc.inputs["model_file"] == paths.classifier_file("hatesonar", "model.onnx")
    assert hc.inputs["card"] == paths.model_card("hatesonar")
    langs = params["datasets"]["mhc"]["languages"]
    assert set(stages["predict_hatesonar_mhc"].inputs["tables"]) == {f"mhc_{lang}" for lang in langs}
    for lang in langs:
        assert f"score_hatesonar_mhc_{lang}" in stages
    # its Davidson held-out set is its training data: that score stage reads trained_on, the others do not
    assert stages["score_hatesonar_heldout_davidson2017"].params["trained_on"] == "models.hatesonar.trained_on"
    assert "trained_on" not in stages["score_hatesonar_hatecheck"].params
    page = stages["model_page_hatesonar"]
    assert page.outputs["page"].path == paths.model_page("hatesonar")
    assert paths.metrics("hatesonar", "mhc_german") in page.data_deps
    # the report shows it: its card and its metrics reach the report's inputs
    assert paths.model_card("hatesonar") in stages["report"].data_deps


def test_a_python_classifier_depends_on_its_module_file(params, tmp_path, monkeypatch):
    (tmp_path / "mykw.py").write_text("def predict(texts):\n    return [0] * len(texts)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    p = with_model(params, "kw", {"kind": "python", "model": "mykw:predict", "suites": ["hatecheck"], "seed": 1})
    stages = {s.name: s for s in build_stages(p)}
    assert stages["classifier_kw"].inputs["source"] == str(tmp_path / "mykw.py")
    assert stages["predict_kw_hatecheck"].inputs["model_file"] == str(tmp_path / "mykw.py")
    assert "fetched" not in stages["classifier_kw"].outputs


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "python", "model": "m:f", "suites": ["hatechek"], "seed": 0}, r"models.x.suites: 'hatechek' is not a suite"),
        (
            {
                "kind": "onnx",
                "model": "a.onnx",
                "input": "t",
                "output": "p",
                "classes": ["a", "b"],
                "hateful": ["c"],
                "suites": ["hatecheck"],
                "seed": 0,
            },
            r"models.x.hateful: \['c'\] not among its classes",
        ),
        ({"kind": "python", "model": "m:f", "decision": "argmax", "suites": ["hatecheck"], "seed": 0}, r"models.x.decision: argmax needs"),
        ({"kind": "python", "model": "m:f", "suites": ["hatecheck"], "seed": 0, "trained_on": ["ethos"]}, r"models.x"),
        ({"kind": "onnx", "model": "a.onnx", "suites": ["hatecheck"], "seed": 0}, r"models.x"),
    ],
)
def test_a_classifier_entry_that_does_not_fit_is_one_line(params, spec, message):
    with pytest.raises(ConfigError, match=message) as info:
        with_model(copy.deepcopy(params), "x", spec)
    assert "\n" not in str(info.value)
