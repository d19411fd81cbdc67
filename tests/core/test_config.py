import pytest
import yaml
from conftest import REPO

from hatecheck_pipeline.core import config, yamlio


def test_params_file_validates(params):
    assert params["profile"] in params["profiles"]


def test_schema_error_names_file_and_key(tmp_path):
    doc = yaml.safe_load((REPO / "params.yaml").read_text())
    doc["datasets"]["davidson2017"]["seed"] = "not-a-number"
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(config.ConfigError) as err:
        config.load_params(bad, schema=REPO / config.SCHEMA_FILE)
    assert "datasets.davidson2017.seed" in str(err.value)
    assert str(bad) in str(err.value)


def test_a_profile_lacking_a_key_is_named_with_the_key(tmp_path):
    """Every profile sets every key (stages declare profiles.${profile}.<key>
    and DVC stops on a key the active profile lacks): a profile without one
    fails at load, naming the profile and the key."""
    doc = yaml.safe_load((REPO / "params.yaml").read_text())
    doc["profiles"]["mine"] = {k: v for k, v in doc["profiles"]["smoke"].items() if k != "max_train_per_dataset"}
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(config.ConfigError, match=r"profiles\.mine: 'max_train_per_dataset' is a required property"):
        config.load_params(bad, schema=REPO / config.SCHEMA_FILE)


def test_overrides_are_applied_then_validated():
    p = config.load_params(REPO / "params.yaml", ["datasets.davidson2017.seed=7"])
    assert p["datasets"]["davidson2017"]["seed"] == 7
    with pytest.raises(config.ConfigError):
        config.load_params(REPO / "params.yaml", ["datasets.founta2018.source=tweets"])


def test_flat_diff_finds_snakemake_config_overrides():
    base = yaml.safe_load((REPO / "params.yaml").read_text())
    changed = yaml.safe_load((REPO / "params.yaml").read_text())
    changed["profile"] = "smoke"
    assert config.flat_diff(base, changed) == {"profile": "smoke"}


def test_profile_named_names_the_allowed_profiles(params):
    smoke = config.profile_named(params, "smoke")
    assert smoke.name == "smoke" and dict(smoke) == params["profiles"]["smoke"]
    assert config.profile({**params, "profile": "smoke"}) == smoke
    assert smoke.get("no such key") is None and "no such key" not in smoke  # the whole profile: an ordinary mapping
    with pytest.raises(config.ConfigError, match="nonexistent.*embedded"):
        config.profile_named(params, "nonexistent")


def test_names_that_refer_to_other_sections_are_checked():
    with pytest.raises(config.ConfigError) as err:
        config.load_params(REPO / "params.yaml", ["profile=nope", "models.B-D.suites=[mhc_klingon]", "models.XTC.recipe=fast"])
    msg = str(err.value)
    assert "profile: 'nope' is not a profile (profiles: paper, embedded, smoke)" in msg or "profile: 'nope' is not a profile" in msg
    assert "models.B-D.suites: 'mhc_klingon' is not a suite" in msg
    assert "models.XTC.recipe: 'fast' is not a recipe" in msg


def test_hatexplain_variant_models_name_a_model_and_a_recipe():
    with pytest.raises(config.ConfigError) as err:
        config.load_params(
            REPO / "params.yaml",
            [
                "bias.hatexplain.supervised.from_model=nope",
                "bias.hatexplain.two_class=[{model: B-D, from_model: hatexplain, recipe: fast}]",
            ],
        )
    msg = str(err.value)
    assert "bias.hatexplain.supervised.from_model: 'nope' is not a fine-tuned model" in msg
    assert "bias.hatexplain.two_class[0].recipe: 'fast' is not a recipe" in msg and "two_class[0].model: 'B-D' is already a model" in msg


def test_a_params_key_from_another_file_is_parsed_once_and_reread_when_the_file_changes(tmp_path, monkeypatch):
    from hatecheck_pipeline.core import stage

    parses = []
    monkeypatch.setattr(stage, "read_yaml", lambda path: parses.append(path) or yamlio.read_yaml(path))
    stage._read_yaml_at.cache_clear()
    resource = tmp_path / "sources.yaml"
    resource.write_text("a: {sha256: [1, 2]}\nb: {sha256: [3]}\n")
    key = f"{resource}:a.sha256"
    first = stage.resolve_param({}, key)
    first.append(99)  # a caller's change stays its own
    assert stage.resolve_param({}, key) == [1, 2]
    assert stage.resolve_param({}, f"{resource}:b.sha256") == [3]
    assert len(parses) == 1
    resource.write_text("a: {sha256: [1, 2, 4]}\n")  # another size: another key
    assert stage.resolve_param({}, key) == [1, 2, 4]
    assert len(parses) == 2


def test_dvc_s_rewrites_params_yaml_into_a_file_it_reads_back(tmp_path):
    """`dvc exp run -S key=value` and `dvc params modify` rewrite params.yaml
    through ruamel's round trip, which drops the quotes of a flow collection's
    scalar: ``{model: "pkg:x"}`` came back as ``{model: pkg:x}``, a file DVC
    itself then refused ("YAML file structure is corrupted"). The rewritten
    file loads, with the one value changed and every other value as it was."""
    from dvc.utils.serialize import modify_yaml
    from dvc.utils.serialize._yaml import parse_yaml

    path = tmp_path / "params.yaml"
    path.write_text((REPO / "params.yaml").read_text())
    with modify_yaml(path) as doc:
        doc["datasets"]["davidson2017"]["seed"] = 7
    expected = yaml.safe_load((REPO / "params.yaml").read_text())
    expected["datasets"]["davidson2017"]["seed"] = 7
    assert parse_yaml(path.read_text(), str(path)) == expected
    assert "# HateCheck paper" in path.read_text()  # the comments kept, as DVC keeps them


def test_a_float_dvc_writes_into_params_yaml_stays_a_float_for_both_runners(tmp_path):
    """`dvc exp run -S training.recipes.hatecheck.lr=3e-5` writes ``lr: 3e-05``
    (YAML 1.2), which PyYAML, and so Snakemake's configfile, reads as the
    string '3e-05': the parameters load with it as the float, and Snakemake's
    parse of the file is put right the same way (workflow/rules/common.smk)."""
    from dvc.utils.serialize import modify_yaml

    path = tmp_path / "params.yaml"
    path.write_text((REPO / "params.yaml").read_text())
    with modify_yaml(path) as doc:
        doc["training"]["recipes"]["hatecheck"]["lr"] = 3e-5
    assert "lr: 3e-05" in path.read_text()
    assert yaml.safe_load(path.read_text())["training"]["recipes"]["hatecheck"]["lr"] == "3e-05"  # YAML 1.1
    params = config.load_params(path, schema=REPO / config.SCHEMA_FILE)
    assert params["training"]["recipes"]["hatecheck"]["lr"] == 3e-5
    snakemake_view = yaml.safe_load(path.read_text())
    fixed = yamlio.with_yaml12_floats(snakemake_view, yamlio.read_yaml(path))
    assert fixed == yamlio.read_yaml(path)
    config.apply_and_validate(fixed, [], REPO / config.SCHEMA_FILE, "params.yaml")


def test_a_parameters_file_that_is_not_yaml_is_one_line_naming_where(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("profile: embedded\nmodels:\n  B-D: {role: bert\n  B-F: x\n", "utf-8")
    with pytest.raises(config.ConfigError) as err:
        config.load_params(bad)
    message = str(err.value)
    assert message.startswith(f"{bad}: line ") and "not valid YAML" in message and "\n" not in message


def test_validated_parameters_are_kept_for_the_next_process_and_never_a_failure(tmp_path, monkeypatch):
    """A process whose parameters an earlier one validated reads the answer
    back (no schema check: it is not called); another tree, another override
    or another schema is a new key; a tree that fails is never kept."""
    from hatecheck_pipeline.core import params_cache

    monkeypatch.setenv(params_cache.CACHE_ENV, str(tmp_path / "cache"))
    first = config.load_params(REPO / "params.yaml", ["datasets.davidson2017.seed=7"])
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    calls = []
    monkeypatch.setattr(config, "validate", lambda *a: calls.append(a))
    again = config.load_params(REPO / "params.yaml", ["datasets.davidson2017.seed=7"])
    assert again == first and again is not first and calls == []  # read back, not validated again
    config.load_params(REPO / "params.yaml", ["datasets.davidson2017.seed=8"])
    assert len(calls) == 1 and len(list((tmp_path / "cache").glob("*.json"))) == 2
    monkeypatch.undo()

    monkeypatch.setenv(params_cache.CACHE_ENV, str(tmp_path / "cache"))
    for _ in range(2):  # the failure is found again, with its message
        with pytest.raises(config.ConfigError, match="source"):
            config.load_params(REPO / "params.yaml", ["datasets.founta2018.source=tweets"])
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2
    schema = tmp_path / "schema.yaml"
    schema.write_text((REPO / config.SCHEMA_FILE).read_text() + "\n# another schema\n")
    config.load_params(REPO / "params.yaml", ["datasets.davidson2017.seed=7"], schema=schema)
    assert len(list((tmp_path / "cache").glob("*.json"))) == 3


def test_only_a_tree_json_gives_back_unchanged_is_kept(tmp_path, monkeypatch):
    from hatecheck_pipeline.core import params_cache

    monkeypatch.setenv(params_cache.CACHE_ENV, str(tmp_path / "cache"))
    schema = REPO / config.SCHEMA_FILE
    assert params_cache.validated({"a": 1}, [], schema, lambda: {"a": (1, 2)}) == {"a": (1, 2)}  # a tuple comes back a list
    assert params_cache.validated({"a": 1}, [], schema, lambda: {1: "x"}) == {1: "x"}  # a key comes back a string
    assert not list((tmp_path / "cache").glob("*.json"))
    assert params_cache.key({"when": __import__("datetime").date(2026, 1, 1)}, [], schema) is None  # not JSON: no key
    for i in range(params_cache.MAX_ENTRIES + 3):
        params_cache.validated({"i": i}, [], schema, lambda i=i: {"i": i})
    assert len(list((tmp_path / "cache").glob("*.json"))) == params_cache.MAX_ENTRIES
