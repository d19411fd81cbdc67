"""Classifiers trained elsewhere (kinds onnx, python, pretrained): each loads,
answers with p(hateful) in [0, 1], and bad input stops with one line naming
the model, the file and the rule. The ONNX model here is a tiny graph built
in the test (a keyword rule), the pretrained one a tiny random BERT: their
numbers are checks of the code, never results."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from models_helpers import tiny_bert

from hatecheck_pipeline.core.profile import Profile
from hatecheck_pipeline.models import classifiers, external
from hatecheck_pipeline.models.base import content_hash
from hatecheck_pipeline.models.classifiers import ClassifierError
from hatecheck_pipeline.models.kinds.onnx import ONNX_LOCALE
from hatecheck_pipeline.models.kinds.python import labels_to_p, split_ref
from hatecheck_pipeline.suites.registry import Suite

ONNX_SPEC = {
    "kind": "onnx",
    "input": "text",
    "output": "probs",
    "classes": ["neither", "hate"],
    "hateful": ["hate"],
    "suites": ["hatecheck"],
    "seed": 0,
}


def keyword_onnx(path: Path, input_name: str = "text", pattern: str = ".*hate.*") -> Path:
    """A tiny ONNX text classifier: lower-cased text matching ``pattern`` ->
    probabilities [0, 1], else [1, 0] (StringNormalizer with no locale, as
    skl2onnx writes it; RegexFullMatch, opset 20)."""
    import onnx
    import onnx.helper as h
    from onnx import TensorProto as T

    nodes = [
        h.make_node("StringNormalizer", [input_name], ["low"], case_change_action="LOWER"),
        h.make_node("RegexFullMatch", ["low"], ["hit"], pattern=pattern),
        h.make_node("Cast", ["hit"], ["p"], to=T.FLOAT),
        h.make_node("Unsqueeze", ["p", "axes"], ["p2"]),
        h.make_node("Sub", ["one", "p2"], ["q2"]),
        h.make_node("Concat", ["q2", "p2"], ["probs"], axis=1),
    ]
    graph = h.make_graph(
        nodes,
        "keyword",
        [h.make_tensor_value_info(input_name, T.STRING, [None])],
        [h.make_tensor_value_info("probs", T.FLOAT, [None, 2])],
        initializer=[h.make_tensor("axes", T.INT64, [1], [1]), h.make_tensor("one", T.FLOAT, [1], [1.0])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())
    return path


def test_an_onnx_classifier_answers_with_its_hateful_class(tmp_path):
    clf = classifiers.load("kw", {**ONNX_SPEC, "model": str(keyword_onnx(tmp_path / "kw.onnx"))})
    p = clf.p_hateful(["I HATE them", "lovely day", ""])
    assert p.tolist() == [1.0, 0.0, 0.0]
    ident = clf.identity()
    assert ident["content_sha256"] and ident["locale"] == ONNX_LOCALE


def test_zipmap_outputs_are_read_in_the_classes_order(tmp_path):
    clf = classifiers.load("kw", {**ONNX_SPEC, "model": str(keyword_onnx(tmp_path / "kw.onnx"))})
    rows = [{0: 0.2, 1: 0.8}, {0: 0.9, 1: 0.1}]  # skl2onnx's ZipMap with integer class labels
    assert clf._as_matrix(rows, 2).tolist() == [[0.2, 0.8], [0.9, 0.1]]
    named = [{"hate": 0.7, "neither": 0.3}]  # string class labels: matched by name
    assert clf._as_matrix(named, 1).tolist() == [[0.3, 0.7]]
    with pytest.raises(ClassifierError, match="has classes"):
        clf._as_matrix([{"x": 1.0, "y": 0.0}], 1)


def test_argmax_decision_takes_the_top_class(tmp_path):
    spec = {**ONNX_SPEC, "model": str(keyword_onnx(tmp_path / "kw.onnx"))}
    clf = classifiers.load("kw", spec)
    p, top = classifiers.decide(clf, ["hate it", "fine"], "argmax")
    assert p.tolist() == [1.0, 0.0] and top.tolist() == [True, False]
    assert classifiers.decide(clf, ["hate it"], "threshold")[1] is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"input": "sentence"}, r"its inputs are \{'text': 'tensor\(string\)'\}; params name one string input 'sentence'"),
        ({"output": "label"}, r"no output 'label' \(outputs: \['probs'\]\)"),
        ({"classes": ["a", "b", "c"], "hateful": ["a"]}, r"has shape \(1, 2\), expected \(1, 3\)"),
    ],
)
def test_an_onnx_file_that_does_not_match_its_params_is_one_clear_line(tmp_path, change, message):
    spec = {**ONNX_SPEC, "model": str(keyword_onnx(tmp_path / "kw.onnx")), **change}
    with pytest.raises(ClassifierError, match=message) as info:
        classifiers.load("kw", spec).p_hateful(["x"])
    assert "kw.onnx" in str(info.value) and "\n" not in str(info.value)


def test_a_file_that_is_not_onnx_is_named(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_text("not a model")
    with pytest.raises(ClassifierError, match="model.onnx: onnxruntime cannot load it"):
        classifiers.load("kw", {**ONNX_SPEC, "model": str(bad)})
    with pytest.raises(ClassifierError, match="no such ONNX file"):
        classifiers.load("kw", {**ONNX_SPEC, "model": str(tmp_path / "absent.onnx")})


# ------------------------------------------------------------------- python


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user's classifier module on the path: ``userclf``."""
    (tmp_path / "userclf.py").write_text(
        "def labels(texts):\n    return ['hateful' if 'hate' in t.lower() else 'non-hateful' for t in texts]\n"
        "def probs(texts):\n    return [0.9 if 'hate' in t else 0.1 for t in texts]\n"
        "def short(texts):\n    return [1]\n"
        "def nan(texts):\n    return [float('nan')] * len(texts)\n"
        "def words(texts):\n    return ['maybe'] * len(texts)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("userclf", None)


def test_a_python_function_returning_labels_or_probabilities(user_module):
    assert classifiers.load("u", {"kind": "python", "model": "userclf:labels"}).p_hateful(["I hate x", "ok"]).tolist() == [1.0, 0.0]
    clf = classifiers.load("u", {"kind": "python", "model": "userclf:probs"})
    assert clf.p_hateful(["hate", "ok"]).tolist() == [0.9, 0.1]
    ident = clf.identity()
    assert ident["module_file"].endswith("userclf.py") and len(ident["content_sha256"]) == 64
    assert external.local_source({"kind": "python", "model": "userclf:probs"}).endswith("userclf.py")


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("short", "returned 1 answers for 2 texts"),
        ("nan", r"answer 0 is nan: a probability must lie in \[0, 1\]"),
        ("words", "answer 0 is 'maybe': a label must be 'hateful' or 'non-hateful'"),
        ("absent", "userclf has no function 'absent'"),
    ],
)
def test_a_python_function_with_bad_answers_is_one_clear_line(user_module, function, message):
    with pytest.raises(ClassifierError, match=message):
        classifiers.load("u", {"kind": "python", "model": f"userclf:{function}"}).p_hateful(["a", "b"])


def test_labels_to_p_reads_numpy_scalars_and_booleans():
    assert labels_to_p("m", np.array([1, 0]), 2).tolist() == [1.0, 0.0]
    assert labels_to_p("m", [True, False], 2).tolist() == [1.0, 0.0]
    with pytest.raises(ClassifierError, match="not a list"):
        labels_to_p("m", 3, 1)
    with pytest.raises(ClassifierError, match="module:function"):
        split_ref("no_function_here")


# ------------------------------------------------------------------- pretrained


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory):
    """A tiny random BERT sequence classifier with named labels (no results: a check of the code)."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    base = tiny_bert(tmp_path_factory.mktemp("base"))
    config = BertConfig.from_pretrained(base, num_labels=2, id2label={0: "NOT_HATE", 1: "HATE"}, label2id={"NOT_HATE": 0, "HATE": 1})
    out = tmp_path_factory.mktemp("clf") / "model"
    BertForSequenceClassification(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(base).save_pretrained(out)
    return out


def test_a_pretrained_directory_is_read_with_its_label_names(tiny_classifier, cpu_only):
    spec = {"kind": "pretrained", "model": str(tiny_classifier), "hateful": ["HATE"], "max_length": 32, "batch_size": 4}
    clf = classifiers.load("tiny", spec)
    texts = ["the cat sat", "a dog ran far away", "x", "more words here now"]
    probs = clf.probabilities(texts)
    p = clf.p_hateful(texts)
    assert p.shape == (4,) and np.allclose(p, probs[:, 1]) and np.allclose(probs.sum(axis=1), 1, atol=1e-5)
    assert clf.identity()["content_sha256"] == content_hash(tiny_classifier)
    by_index = classifiers.load("tiny", {**spec, "hateful": [1]})
    assert np.allclose(by_index.p_hateful(texts), p)


def test_a_pretrained_model_with_labels_that_do_not_map_or_no_model_is_one_line(tiny_classifier, tmp_path, cpu_only):
    with pytest.raises(ClassifierError, match=r"hateful class 'hateful' is not one of its labels \{0: 'NOT_HATE', 1: 'HATE'\}"):
        classifiers.load("tiny", {"kind": "pretrained", "model": str(tiny_classifier), "hateful": ["hateful"]})
    (tmp_path / "notes.txt").write_text("no model here")
    with pytest.raises(ClassifierError, match="not a model directory"):
        classifiers.load("tiny", {"kind": "pretrained", "model": str(tmp_path), "hateful": ["HATE"]})


# ------------------------------------------------------------------- the stage functions


def test_register_and_predict_write_a_card_and_predictions_in_every_model_s_layout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    onnx_file = keyword_onnx(tmp_path / "kw.onnx")
    spec = {**ONNX_SPEC, "model": str(onnx_file), "trained_on": ["davidson2017"], "decision": "argmax"}
    card = tmp_path / "models/kw/model_card.json"
    summary = external.register("kw", spec, card, Profile("smoke", {}), source=onnx_file)
    assert "answers the probe texts" in summary
    doc = json.loads(card.read_text())
    assert doc["classifier"] and doc["kind"] == "onnx" and doc["trained_on"] == ["davidson2017"]
    assert doc["identity"]["content_sha256"] == doc["base_model"]["content_sha256"]
    table = tmp_path / "table.parquet"
    pl.DataFrame(
        {"case_id": [3, 1, 2], "text": ["I hate you", "hello", "HATE"], "label": ["hateful", "non-hateful", "hateful"]}
    ).write_parquet(table)
    suite = Suite("hatecheck", "hatecheck", "case_id")
    out = tmp_path / "results/kw/hatecheck/predictions.parquet"
    external.predict(
        "kw",
        spec,
        [suite],
        {"hatecheck": table},
        [out],
        card,
        threshold=0.5,
        threads=1,
        profile=Profile("smoke", {"max_cases_per_suite": None}),
        seed=0,
        model_file=onnx_file,
    )
    preds = pl.read_parquet(out)
    assert preds["id"].to_list() == ["1", "2", "3"]  # sorted by id, as every predict stage writes them
    assert preds["pred"].to_list() == ["non-hateful", "hateful", "hateful"]
    meta = pl.read_parquet_metadata(out)
    assert doc["identity"]["content_sha256"] in meta["classifier_identity"]


def test_the_evaluate_benchmark_compares_the_same_answers(tiny_classifier, cpu_only):
    """benchmarks/bench_evaluate.py on the tiny random classifier: both ways
    give the same p(hateful), and both rates are measured."""
    from pipeline_utils import load_benchmark

    bench = load_benchmark("bench_evaluate")
    texts = ["the cat sat", "a dog ran far away", "x", "more words here now and then"] * 5
    out = bench.measure(tiny_classifier, texts, batch_size=4, max_length=32, repeats=1, hateful=["HATE"])
    assert out["cases"] == 20 and out["max_abs_diff"] < 1e-5
    assert out["kind_cases_per_s"] > 0 and out["pipeline_cases_per_s"] > 0


def test_a_pretrained_model_follows_the_predict_stages_precision_rule(tiny_classifier, cpu_only):
    spec = {"kind": "pretrained", "model": str(tiny_classifier), "hateful": ["HATE"], "max_length": 32, "batch_size": 4}
    texts = ["the cat sat", "a dog ran far away"]
    fp32 = classifiers.load("tiny", spec)
    bf16 = classifiers.load("tiny", spec, cpu_bf16=True)
    assert fp32.precision == "fp32" and bf16.precision == "bf16 autocast (CPU)"
    assert np.allclose(fp32.p_hateful(texts), bf16.p_hateful(texts), atol=0.05)


def test_evaluate_reads_what_it_can_from_the_model_and_names_what_it_cannot(tmp_path, tiny_classifier):
    from hatecheck_pipeline.models.classifier_spec import classifier_spec

    onnx_file = keyword_onnx(tmp_path / "kw.onnx")
    spec = classifier_spec(str(onnx_file), classes=["neither", "hateful"], suites=["hatecheck"])
    assert spec | {"model": None} == {
        "kind": "onnx",
        "model": None,
        "input": "text",
        "output": "probs",
        "classes": ["neither", "hateful"],
        "hateful": ["hateful"],
        "suites": ["hatecheck"],
        "seed": 42,
    }
    with pytest.raises(ClassifierError, match="--classes"):
        classifier_spec(str(onnx_file), suites=["hatecheck"])
    with pytest.raises(ClassifierError, match="give --hateful"):
        classifier_spec(str(onnx_file), classes=["a", "b"], suites=["hatecheck"])
    assert classifier_spec(str(tiny_classifier), suites=["mhc"])["hateful"] == ["HATE"]
    assert classifier_spec(str(tiny_classifier), hateful=["1"], suites=["mhc"])["hateful"] == [1]
    assert classifier_spec("pkg.mod:fn", suites=["mhc"])["kind"] == "python"
    api = classifier_spec("https://api.example/v1:analyze", key_env="K", suites=["mhc"])
    assert api["kind"] == "http" and api["format"] == "perspective" and api["key_env"] == "K"
