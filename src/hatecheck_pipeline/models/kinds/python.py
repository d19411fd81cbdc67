"""Kind ``python``: ``module:function`` taking a list of texts and
returning, per text, a label (``hateful``/``non-hateful``, 1/0,
True/False) or a probability of hateful in [0, 1]. A function that raises
stops with one line naming the function, the exception and the file:line
where it was raised (:class:`~hatecheck_pipeline.models.user_code.UserCodeError`,
its traceback kept in the stage's log)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from hatecheck_pipeline.core.files import sha256sum
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL
from hatecheck_pipeline.models.kinds.base import ClassifierError, Kind, LoadOptions, register
from hatecheck_pipeline.models.user_code import user_code_error


def split_ref(ref: str) -> tuple[str, str]:
    module, sep, function = ref.partition(":")
    if not sep or not module or not function:
        raise ClassifierError(f"{ref!r}: a python classifier is named module:function (e.g. mypkg.clf:predict)")
    return module, function


def module_file(ref: str) -> Path | None:
    """The source file of ``module:function``'s module, found without
    importing it (None: not found, or not a file)."""
    module, _ = split_ref(ref)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and Path(spec.origin).is_file() else None


def labels_to_p(model: str, answers: Any, n: int) -> np.ndarray:
    """A function's answers as p(hateful): labels become 1.0 / 0.0,
    probabilities are kept; one clear line on anything else."""
    try:
        values = list(answers)
    except TypeError as exc:
        raise ClassifierError(
            f"model {model}: the function returned {type(answers).__name__}, not a list of labels or probabilities"
        ) from exc
    if len(values) != n:
        raise ClassifierError(f"model {model}: the function returned {len(values)} answers for {n} texts")
    out = np.empty(n, dtype=np.float64)
    for i, v in enumerate(values):
        if hasattr(v, "item"):  # numpy / torch scalars
            v = v.item()
        if isinstance(v, str):
            label = v.strip().lower()
            if label not in (HATEFUL, NON_HATEFUL):
                raise ClassifierError(
                    f"model {model}: answer {i} is {v!r}: a label must be 'hateful' or 'non-hateful' (or 1/0, or a probability)"
                )
            out[i] = 1.0 if label == HATEFUL else 0.0
        elif isinstance(v, (bool, int, float)):
            f = float(v)
            if math.isnan(f) or not 0.0 <= f <= 1.0:
                raise ClassifierError(f"model {model}: answer {i} is {v!r}: a probability must lie in [0, 1] (and not be NaN)")
            out[i] = f
        else:
            raise ClassifierError(f"model {model}: answer {i} is a {type(v).__name__} ({v!r}): not a label or a probability")
    return out


class PythonClassifier:
    def __init__(self, model: str, ref: str):
        self.model, self.ref = model, ref
        module, function = split_ref(ref)
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            raise ClassifierError(f"model {model}: cannot import {module!r} ({exc})") from exc
        except Exception as exc:  # the module's own code failed while importing: one line, the traceback kept
            raise user_code_error(f"model {model}: importing {module}", exc) from exc
        fn = getattr(mod, function, None)
        if not callable(fn):
            raise ClassifierError(f"model {model}: {module} has no function {function!r}")
        self.fn: Callable[[list[str]], Any] = fn
        self.file = Path(mod.__file__) if getattr(mod, "__file__", None) else None

    def identity(self) -> dict[str, Any]:
        top = self.ref.split(":")[0].split(".")[0]
        dists = importlib.metadata.packages_distributions().get(top, [])
        version = importlib.metadata.version(dists[0]) if dists else None
        return {
            "ref": self.ref,
            "module_file": str(self.file) if self.file else None,
            "content_sha256": sha256sum(self.file) if self.file else None,
            "package": dists[0] if dists else None,
            "package_version": version,
        }

    def p_hateful(self, texts: Sequence[str], language: str | None = None) -> np.ndarray:
        try:
            answers = self.fn(list(texts))
        except Exception as exc:  # the user's function raised: one line naming it and where (the traceback kept)
            raise user_code_error(f"model {self.model}: {self.ref}", exc) from exc
        return labels_to_p(self.model, answers, len(texts))

    precision = "as the function computes"


@register
class Python(Kind):
    name = "python"
    order = 30
    mem_mb = 2000

    def detects(self, ref: str) -> bool:
        return ":" in ref and not Path(ref).exists()

    def source(self, spec: Mapping[str, Any]) -> str | None:
        found = module_file(str(spec.get("model", "")))
        return str(found) if found is not None else None

    def load(self, model: str, spec: Mapping[str, Any], options: LoadOptions) -> PythonClassifier:
        return PythonClassifier(model, spec["model"])
