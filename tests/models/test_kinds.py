"""The registry of classifier kinds: the schema and the registry name the
same kinds, every kind's module is imported by the package (so its code is
in the stages' fingerprints), detection asks the kinds in their order, and
a kind added in one module (here: a constant classifier, defined and
registered in the test) runs through ``evaluate``'s detection, loading,
the stage registry and the register and predict stages with nothing else
changed but the schema."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl
import pytest
import yaml

from hatecheck_pipeline.core import codedeps, paths
from hatecheck_pipeline.core.config import ConfigError, Profile, apply_and_validate
from hatecheck_pipeline.models import classifiers, external, kinds
from hatecheck_pipeline.models.classifier_spec import classifier_spec
from hatecheck_pipeline.models.kinds import base
from hatecheck_pipeline.suites.registry import Suite
from conftest import REPO

SCHEMA = REPO / "workflow/schemas/params.schema.yaml"


def schema_kinds(schema: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """The classifier kinds the schema names: the entry's enum, the enum that
    routes a models entry to it, and the kinds its argmax rule refuses."""
    entry = schema["$defs"]["classifier"]
    routed = schema["properties"]["models"]["additionalProperties"]["else"]["if"]["properties"]["kind"]["enum"]
    no_argmax = [
        rule["if"]["properties"]["kind"]["enum"] for rule in entry["allOf"] if "decision" in (rule.get("then", {}).get("properties") or {})
    ]
    assert len(no_argmax) == 1
    return entry["properties"]["kind"]["enum"], routed, no_argmax[0]


def test_the_schema_names_the_registered_kinds():
    entry, routed, no_argmax = schema_kinds(yaml.safe_load(SCHEMA.read_text("utf-8")))
    assert sorted(entry) == sorted(routed) == sorted(kinds.names())
    assert sorted(no_argmax) == sorted(k for k in kinds.names() if not kinds.get(k).has_classes)


def test_every_kind_module_is_imported_by_the_package():
    """A kind's module is named in models/kinds/__init__.py, not discovered:
    the stages' code fingerprints follow the static imports."""
    folder = Path(base.__file__).parent
    modules = {f"hatecheck_pipeline.models.kinds.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"}
    assert modules <= codedeps.direct_imports("hatecheck_pipeline.models.kinds")


@pytest.mark.parametrize(
    ("ref", "kind"),
    [("https://api.example/v1:analyze", "http"), ("model.onnx", "onnx"), ("pkg.mod:predict", "python"), ("org/model", "pretrained")],
)
def test_detection_asks_the_kinds_in_their_order(ref, kind):
    assert kinds.detect(ref).name == kind


def test_an_unknown_kind_is_one_line():
    with pytest.raises(classifiers.ClassifierError, match=r"model m: kind 'tflite' is not a classifier kind \(kinds: http, onnx"):
        classifiers.load("m", {"kind": "tflite", "model": "x"})


def test_a_classifier_with_no_classes_takes_no_argmax(tmp_path, monkeypatch):
    (tmp_path / "kwclf.py").write_text("def predict(texts):\n    return [0.25] * len(texts)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    clf = classifiers.load("kw", {"kind": "python", "model": "kwclf:predict"})
    assert isinstance(clf, kinds.Classifier) and not isinstance(clf, kinds.ClassProbabilities)
    assert classifiers.decide(clf, ["a"], "threshold")[0].tolist() == [0.25]
    with pytest.raises(classifiers.ClassifierError, match="model kw: decision argmax needs class probabilities"):
        classifiers.decide(clf, ["a"], "argmax")


# ------------------------------------------------------------------- a kind added in one module


class ConstantClassifier:
    """The same p(hateful) for every text."""

    precision = "float64 (a constant)"

    def __init__(self, model: str, value: float):
        self.model, self.value = model, value

    def identity(self) -> dict[str, Any]:
        return {"ref": f"constant:{self.value}"}

    def p_hateful(self, texts: Sequence[str], language: str | None = None) -> np.ndarray:
        return np.full(len(texts), self.value)


@pytest.fixture
def constant_kind(monkeypatch):
    """A kind ``constant`` (``model: constant:<p>``) registered for one test."""
    monkeypatch.setattr(base, "KINDS", dict(base.KINDS))

    @kinds.register
    class Constant(kinds.Kind):
        name = "constant"
        order = 5  # before python, which would take constant:<p> as module:function
        mem_mb = 500

        def detects(self, ref: str) -> bool:
            return ref.startswith("constant:")

        def load(self, model: str, spec: Mapping[str, Any], options: kinds.LoadOptions) -> ConstantClassifier:
            return ConstantClassifier(model, float(str(spec["model"]).split(":", 1)[1]))

    return Constant


def with_kind_in_schema(tmp_path: Path, name: str) -> Path:
    """The parameters' schema with the kind added where a kind is named."""
    text = SCHEMA.read_text("utf-8").replace("enum: [pretrained, onnx, python, http]", f"enum: [pretrained, onnx, python, http, {name}]")
    text = text.replace("kind: {enum: [python, http]}", f"kind: {{enum: [python, http, {name}]}}")
    out = tmp_path / "params.schema.yaml"
    out.write_text(text, "utf-8")
    assert schema_kinds(yaml.safe_load(text))[0][-1] == name
    return out


def test_a_new_kind_runs_through_detection_loading_the_stages_and_prediction(constant_kind, params, tmp_path, monkeypatch):
    from hatecheck_pipeline.pipeline.registry import build_stages

    assert "constant" in kinds.names() and kinds.detect("constant:0.75").name == "constant"
    spec = classifier_spec("constant:0.75", suites=["hatecheck"], seed=1)
    assert spec == {"kind": "constant", "model": "constant:0.75", "suites": ["hatecheck"], "seed": 1}
    clf = classifiers.load("c", spec)
    assert isinstance(clf, kinds.Classifier)
    assert classifiers.decide(clf, ["a", "b"], "threshold")[0].tolist() == [0.75, 0.75]

    # the schema names it: the models entry validates, its stages follow what the kind says
    with pytest.raises(ConfigError, match="models.c.kind"):
        apply_and_validate(copy.deepcopy(params), {"models.c": spec}, SCHEMA, "test")
    schema = with_kind_in_schema(tmp_path, "constant")
    full = apply_and_validate(copy.deepcopy(params), {"models.c": spec}, schema, "test")
    with pytest.raises(ConfigError, match="models.c.decision: argmax needs class probabilities"):
        apply_and_validate(copy.deepcopy(params), {"models.c": {**spec, "decision": "argmax"}}, schema, "test")
    stages = {s.name: s for s in build_stages(full)}
    register, predict = stages["classifier_c"], stages["predict_c_hatecheck"]
    assert register.mem_mb == predict.mem_mb == 500 and predict.gpu == 0
    assert "amp" not in predict.params and not register.inputs and "model_file" not in predict.inputs
    assert "score_c_hatecheck" in stages and "model_page_c" in stages

    # the register and predict stages' functions
    monkeypatch.chdir(tmp_path)
    card = tmp_path / paths.model_card("c")
    assert "answers the probe texts with p(hateful) 0.750, 0.750" in external.register("c", spec, card, Profile("smoke", {}))
    doc = json.loads(card.read_text())
    assert doc["kind"] == "constant" and doc["identity"] == {"ref": "constant:0.75"}
    table = tmp_path / "table.parquet"
    pl.DataFrame({"case_id": [2, 1], "text": ["I hate you", "hello"], "label": ["hateful", "non-hateful"]}).write_parquet(table)
    out = tmp_path / "predictions.parquet"
    external.predict(
        "c",
        spec,
        [Suite("hatecheck", "hatecheck", "case_id")],
        {"hatecheck": table},
        [out],
        card,
        threshold=0.5,
        threads=1,
        profile=Profile("smoke", {"max_cases_per_suite": None}),
        seed=1,
    )
    preds = pl.read_parquet(out)
    assert preds["id"].to_list() == ["1", "2"] and preds["pred"].to_list() == ["hateful", "hateful"]
    assert pl.read_parquet_metadata(out)["classifier_identity"] == "ref=constant:0.75"


def test_a_kind_names_itself_once(constant_kind):
    with pytest.raises(ValueError, match="'constant' is registered twice"):

        @kinds.register
        class Other(kinds.Kind):
            name = "constant"
