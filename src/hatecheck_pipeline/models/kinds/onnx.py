"""Kind ``onnx``: an ONNX text classifier run by onnxruntime on the CPU:
``input`` (a string tensor of texts), ``output`` (a [n, classes] float
tensor or a sequence of {class: probability} maps, as skl2onnx's ZipMap
writes), ``classes`` (the classes in the output's order) and ``hateful``.
``model`` is an ``.onnx`` file or ``pinned:<entry>`` of
resources/classifiers.yaml (fetched by the register stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from hatecheck_pipeline.core.files import sha256sum
from hatecheck_pipeline.models.kinds.base import ClassifierError, Kind, LoadOptions, guess_hateful, register

# onnxruntime's StringNormalizer defaults to en_US.UTF-8, which minimal
# Linux images lack; C.UTF-8 is always there (glibc >= 2.35).
ONNX_LOCALE = "C.UTF-8"


def locale_fixed(model_bytes: bytes) -> bytes:
    """The ONNX model with every StringNormalizer that names no locale set
    to :data:`ONNX_LOCALE` (the graph is otherwise unchanged)."""
    import onnx

    proto = onnx.load_from_string(model_bytes)
    changed = False
    for node in proto.graph.node:
        if node.op_type == "StringNormalizer" and not any(a.name == "locale" for a in node.attribute):
            node.attribute.append(onnx.helper.make_attribute("locale", ONNX_LOCALE))
            changed = True
    return proto.SerializeToString() if changed else model_bytes


class OnnxClassifier:
    def __init__(self, model: str, path: Path, spec: Mapping[str, Any], threads: int = 1, batch_size: int = 1024):
        import onnxruntime as ort

        self.model, self.path = model, Path(path)
        if not self.path.is_file():
            raise ClassifierError(f"model {model}: {self.path}: no such ONNX file")
        self.classes = [str(c) for c in spec["classes"]]
        self.hateful = [self.classes.index(str(h)) for h in spec["hateful"]]
        self.input, self.output = spec["input"], spec["output"]
        self.batch_size = batch_size
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(locale_fixed(self.path.read_bytes()), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ClassifierError(f"model {model}: {self.path}: onnxruntime cannot load it ({' '.join(str(exc).split())[:300]})") from exc
        inputs = {i.name: i.type for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if list(inputs) != [self.input] or inputs[self.input] != "tensor(string)":
            raise ClassifierError(f"model {model}: {self.path}: its inputs are {inputs}; params name one string input {self.input!r}")
        if self.output not in outputs:
            raise ClassifierError(f"model {model}: {self.path}: no output {self.output!r} (outputs: {outputs})")

    def identity(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "content_sha256": sha256sum(self.path),
            "runtime": f"onnxruntime {_ort_version()}",
            "locale": ONNX_LOCALE,
        }

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """[n, classes] probabilities in the order of ``classes``."""
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = np.array(list(texts[start : start + self.batch_size]), dtype=object)
            (raw,) = self.session.run([self.output], {self.input: batch})
            parts.append(self._as_matrix(raw, len(batch)))
        return np.concatenate(parts) if parts else np.zeros((0, len(self.classes)))

    def _as_matrix(self, raw: Any, n: int) -> np.ndarray:
        if isinstance(raw, list):  # a sequence of {class: probability} maps (ZipMap)
            keys = sorted(raw[0]) if raw else []
            if raw and all(isinstance(k, str) for k in keys):
                order = [str(c) for c in self.classes]
            else:
                order = list(range(len(self.classes)))
            missing = [k for k in order if raw and k not in raw[0]]
            if missing:
                raise ClassifierError(
                    f"model {self.model}: {self.path}: output {self.output!r} has classes {keys}, params name {self.classes}"
                )
            matrix = np.array([[row[k] for k in order] for row in raw], dtype=np.float64)
        else:
            matrix = np.asarray(raw, dtype=np.float64)
        if matrix.shape != (n, len(self.classes)):
            raise ClassifierError(
                f"model {self.model}: {self.path}: output {self.output!r} has shape {matrix.shape}, "
                f"expected ({n}, {len(self.classes)}) for the classes {self.classes}"
            )
        return matrix

    def p_hateful(self, texts: Sequence[str], language: str | None = None) -> np.ndarray:
        p = self.probabilities(texts)[:, self.hateful].sum(axis=1)
        if p.size and not np.isfinite(p).all():
            raise ClassifierError(f"model {self.model}: {self.path}: output {self.output!r} holds NaN or infinite probabilities")
        return p

    precision = "fp32 (onnxruntime, CPU)"


def _ort_version() -> str:
    import onnxruntime as ort

    return ort.__version__


@register
class Onnx(Kind):
    name = "onnx"
    order = 20
    mem_mb = 1500
    has_classes = True

    def detects(self, ref: str) -> bool:
        return ref.endswith(".onnx") or Path(ref).is_file()

    def spec_for(self, ref: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """The file's one string input and its probabilities output (a name
        with ``prob``, else the last output) read from the file;
        ``classes`` must be given, ``hateful`` is guessed from them."""
        import onnxruntime as ort

        path = Path(ref)
        if not path.is_file():
            raise ClassifierError(f"{ref}: no such ONNX file")
        try:
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        except Exception as exc:
            if "locale" not in str(exc):
                raise ClassifierError(f"{ref}: onnxruntime cannot load it ({' '.join(str(exc).split())[:200]})") from exc
            session = ort.InferenceSession(locale_fixed(path.read_bytes()), providers=["CPUExecutionProvider"])
        inputs = [i.name for i in session.get_inputs() if i.type == "tensor(string)"]
        outputs = [o.name for o in session.get_outputs()]
        probs = [o for o in outputs if "prob" in o.lower()] or outputs[-1:]
        input_name, classes, hateful = options.get("input_name"), options.get("classes"), options.get("hateful")
        if input_name is None and len(inputs) != 1:
            raise ClassifierError(f"{ref}: its string inputs are {inputs}: name the texts' input with --input")
        if not classes:
            raise ClassifierError(f"{ref}: name the output's classes in order with --classes (e.g. --classes non-hateful,hateful)")
        spec = {
            "model": str(path.resolve()),
            "input": input_name or inputs[0],
            "output": options.get("output") or probs[0],
            "classes": list(classes),
            "hateful": list(hateful or guess_hateful(classes)),
        }
        if not spec["hateful"]:
            raise ClassifierError(f"{ref}: none of its classes {list(classes)} is named hateful: give --hateful")
        return spec

    def source(self, spec: Mapping[str, Any]) -> str | None:
        ref = str(spec.get("model", ""))
        return ref if Path(ref).exists() else None

    def load(self, model: str, spec: Mapping[str, Any], options: LoadOptions) -> OnnxClassifier:
        return OnnxClassifier(model, options.path or Path(spec["model"]), spec, options.threads, int(spec.get("batch_size") or 1024))
