"""A fine-tuning recipe and the budget a profile sets on it: the label set,
the recipe's settings and grid, class weights, the profile's per-role
overrides (:func:`effective_recipe`), and the budget keys and note a model
card records.

Labels: 0 = non-hateful, 1 = hateful (the column ``label``), unless the
recipe names another label set (``labels``: a column and its classes, e.g.
HateXplain's 3 classes in ``label3``); binary models are unaffected by it.
Light on purpose (no numpy, torch or polars): the stage registry reads
:data:`BUDGET_KEYS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL

ID2LABEL = {0: NON_HATEFUL, 1: HATEFUL}
LABEL2ID = {v: k for k, v in ID2LABEL.items()}


@dataclass(frozen=True)
class LabelSet:
    """The classes a model predicts: the table ``column`` holding them, the
    class names in index order, and the class that counts as hateful
    (``dev_f1_hateful``; p(hateful) on the binary suites)."""

    column: str
    classes: tuple[str, ...]
    hateful: str
    # (column value, class) pairs when classes merge column values (HateXplain's
    # 2 classes: hatespeech and offensive -> toxic, normal -> non-toxic); () = the values are the classes
    merge: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_recipe(cls, section: Mapping[str, Any]) -> "LabelSet":
        """The recipe's ``labels`` ({column, classes, hateful, merge}); the
        binary set when the recipe names none."""
        spec = section.get("labels")
        if not spec:
            return BINARY
        merge = tuple(sorted((str(v), str(c)) for c, values in (spec.get("merge") or {}).items() for v in values))
        labels = cls(spec["column"], tuple(spec["classes"]), spec["hateful"], merge)
        if labels.hateful not in labels.classes or len(set(labels.classes)) != len(labels.classes) or len(labels.classes) < 2:
            raise ValueError(
                f"training.recipes.*.labels: classes {list(labels.classes)} must be distinct (at least 2) and hold hateful={labels.hateful!r}"
            )
        if merge and ({c for _, c in merge} != set(labels.classes) or len({v for v, _ in merge}) != len(merge)):
            raise ValueError(
                f"training.recipes.*.labels.merge: every class of {list(labels.classes)} needs its column values, each value in one class"
            )
        return labels

    def encode(self, value: str) -> int:
        """The class index of a ``column`` value (through ``merge`` when set)."""
        if self.merge:
            value = dict(self.merge)[value]
        return self.label2id[value]

    @property
    def id2label(self) -> dict[int, str]:
        return dict(enumerate(self.classes))

    @property
    def label2id(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}


BINARY = LabelSet("label", (ID2LABEL[0], ID2LABEL[1]), ID2LABEL[1])


@dataclass(frozen=True)
class Recipe:
    class_weights: str  # none | other_class_proportion
    lr: float
    weight_decay: float
    dropout: float
    batch_size: int
    epochs: int
    warmup_ratio: float = 0.0
    layer_lr_decay: float = 1.0  # lr of encoder layer i = lr x decay^(layers - i); 1 = one lr for all
    early_stopping: Mapping[str, Any] | None = None  # {metric, patience}
    keep_best: bool = False
    select_on: str = "dev_loss"
    grid_search: bool = False
    grid: Mapping[str, Sequence[Any]] | None = None  # {epochs: [...], lr: [...], batch_size: [...]} when grid_search
    pooling: str = "model"  # model: the architecture's own classifier head; mean: a head over the mean token state (models/pooled.py)

    @classmethod
    def from_params(cls, section: Mapping[str, Any], max_epochs: int | None = None) -> "Recipe":
        values = {k: section[k] for k in cls.__dataclass_fields__ if k in section}
        if values.get("grid_search"):
            grid = values.get("grid") or {}
            missing = [k for k in GRID_KEYS if not grid.get(k)]
            if missing:
                raise ValueError(f"training.recipes.*.grid_search: the grid needs non-empty lists for {missing}")
            values["grid"] = {k: list(grid[k]) for k in GRID_KEYS}
        else:
            values["grid"] = None
        if max_epochs is not None:
            values["epochs"] = min(values["epochs"], max_epochs)
        return cls(**values)

    def fingerprint(self) -> dict[str, Any]:
        """The recipe as a checkpoint fingerprint holds it: its fields, the
        default ``pooling`` left out (fingerprints written before the field
        existed still match).

        >>> r = Recipe("none", 1e-4, 0.0, 0.1, 16, 2)
        >>> "pooling" in r.fingerprint(), Recipe("none", 1e-4, 0.0, 0.1, 16, 2, pooling="mean").fingerprint()["pooling"]
        (False, 'mean')
        """
        values = asdict(self)
        if values["pooling"] == "model":
            del values["pooling"]
        return values

    def trials(self, max_epochs: int | None = None) -> list["Recipe"]:
        """The grid's configurations (epochs x lr x batch_size, in that
        nesting order), each a plain recipe; ``[self]`` without a search.
        The profile's epoch cap applies to every trial (duplicates merged)."""
        if not self.grid_search:
            return [self]
        from dataclasses import replace
        from itertools import product

        cap = max_epochs or max(self.grid["epochs"])
        out: list[Recipe] = []
        for e, lr, bs in product(self.grid["epochs"], self.grid["lr"], self.grid["batch_size"]):
            r = replace(self, epochs=min(int(e), cap), lr=float(lr), batch_size=int(bs), grid_search=False, grid=None)
            if r not in out:
                out.append(r)
        return out


GRID_KEYS = ("epochs", "lr", "batch_size")


def trial_name(r: "Recipe") -> str:
    return f"e{r.epochs}-lr{r.lr:g}-b{r.batch_size}"


def class_weights(labels: Sequence[int], rule: str, n_classes: int = 2) -> list[float]:
    """Cross-entropy weights per class (index 0, 1; ``none``: any number of
    classes).

    ``other_class_proportion`` (HateCheck paper): the weight of a class is
    the relative proportion of the other class, so 1:9 hateful:non-hateful
    gives hateful x 9 relative to non-hateful.

    >>> class_weights([0] * 9 + [1], "other_class_proportion")
    [0.1, 0.9]
    >>> class_weights([0, 1, 1], "none")
    [1.0, 1.0]
    """
    if rule == "none":
        return [1.0] * n_classes
    if rule != "other_class_proportion":
        raise ValueError(f"unknown class weight rule {rule!r}")
    if n_classes != 2:
        raise ValueError(f"class weight rule {rule!r} is defined for 2 classes, not {n_classes}")
    labels = list(labels)
    share1 = sum(1 for y in labels if y == 1) / len(labels)
    return [round(share1, 12), round(1.0 - share1, 12)]


def effective_recipe(recipe: Mapping[str, Any], profile: Mapping[str, Any], role: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The recipe a model of ``role`` trains with under ``profile`` (the
    active profile's settings), and what the profile changed in it: the
    profile's ``recipe_by_role`` settings for the role on top of the model's
    recipe, and the recipe's grid search switched off where the profile
    sets ``grid_search: false`` (a budget that cannot afford the HateCheck
    paper's 18 fine-tuning runs). A profile that sets neither trains the
    recipe as written (the ``paper`` profile: the papers' recipes).

    >>> hc = {"lr": 5e-5, "grid_search": True, "grid": {"epochs": [2]}}
    >>> effective_recipe(hc, {"grid_search": False, "recipe_by_role": {"bert": {"lr": 1e-4}}}, "bert")
    ({'lr': 0.0001, 'grid_search': False, 'grid': {'epochs': [2]}}, {'lr': 0.0001, 'grid_search': False})
    >>> effective_recipe(hc, {}, "bert") == (hc, {})
    True
    """
    override = dict((profile.get("recipe_by_role") or {}).get(role) or {})
    if recipe.get("grid_search") and profile.get("grid_search") is False:
        override["grid_search"] = False
    return {**recipe, **override}, override


def per_dataset_cap(max_train: int | None, n_datasets: int, max_per_dataset: int | None = None) -> int | None:
    """Train examples drawn from each of a model's ``n_datasets`` datasets
    when the model may see ``max_train`` in total (an even share, at least 2)
    and each dataset may give ``max_per_dataset`` (the smaller cap wins; None
    = no cap of that kind).

    >>> per_dataset_cap(3000, 1), per_dataset_cap(3000, 3), per_dataset_cap(None, 3)
    (3000, 1000, None)
    >>> per_dataset_cap(None, 3, 1500), per_dataset_cap(3000, 3, 1500), per_dataset_cap(3000, 1, 1500)
    (1500, 1000, 1500)
    """
    caps = [c for c in (None if max_train is None else max(2, max_train // max(1, n_datasets)), max_per_dataset) if c is not None]
    return min(caps) if caps else None


# The profile settings a training stage reads and its model card records
# (``budget``); pipeline/models.py declares them as the train stages' params.
BUDGET_KEYS = (
    "max_train_per_model",
    "max_train_per_dataset",
    "max_epochs",
    "max_length",
    "freeze_embeddings",
    "freeze_lower_layers",
    "length_bucketing",
    "cpu_bf16",
    "recipe_by_role",
    "grid_search",
)


def budget(profile: Mapping[str, Any]) -> dict[str, Any]:
    """The profile's budget settings, as the model card records them."""
    return {k: profile.get(k) for k in BUDGET_KEYS}


def budget_note(profile: Mapping[str, Any], n_datasets: int, bf16_cpu: bool, recipe_override: Mapping[str, Any] | None) -> str:
    """The model card's plain-words account of what the profile's budget
    changed in the papers' recipe (``bf16_cpu``: training ran under bf16
    autocast on a CPU; ``recipe_override``: what :func:`effective_recipe`
    changed).

    >>> print(budget_note({"max_train_per_model": 3000, "max_epochs": 2}, 3, False, {"grid_search": False}))
    training data subsampled to at most 1000 train examples per dataset (3000 over its 3 datasets, stratified); epochs capped at 2; the recipe's grid search skipped (profile grid_search: false): the recipe's own configuration trained once
    >>> print(budget_note({}, 1, False, None))
    full training data; the recipe's epochs
    """
    freeze = bool(profile.get("freeze_embeddings", False))
    lower = float(profile.get("freeze_lower_layers") or 0.0)
    return (
        (
            f"training data subsampled to at most {cap} train examples"
            + (f" per dataset ({cap * n_datasets} over its {n_datasets} datasets, stratified)" if n_datasets > 1 else " (stratified)")
            if (cap := per_dataset_cap(profile.get("max_train_per_model"), n_datasets, profile.get("max_train_per_dataset")))
            else "full training data"
        )
        + (f"; epochs capped at {profile['max_epochs']}" if profile.get("max_epochs") else "; the recipe's epochs")
        + ("; word embeddings frozen" if freeze else "")
        + (f"; embedding block and the lowest {lower:g} of the encoder layers frozen" if lower else "")
        + ("; length-bucketed batches" if profile.get("length_bucketing", False) else "")
        + ("; bf16 mixed precision on CPU (autocast; fp32 weights, optimiser and prediction)" if bf16_cpu else "")
        + (
            "; the recipe's grid search skipped (profile grid_search: false): the recipe's own configuration trained once"
            if (recipe_override or {}).get("grid_search") is False
            else ""
        )
        + (
            "; the profile's recipe for this role: "
            + ", ".join(
                f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in sorted(recipe_override.items()) if k != "grid_search"
            )
            if any(k != "grid_search" for k in (recipe_override or {}))
            else ""
        )
    )
