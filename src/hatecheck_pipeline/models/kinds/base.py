"""What every classifier trained elsewhere is (:class:`Classifier`), what
every kind of them says about itself (:class:`Kind`) and the registry of
kinds (:func:`register`, :func:`get`, :func:`detect`).

A *classifier* is what the register and predict stages call: its
:meth:`~Classifier.identity` (what the model card and lineage name),
:meth:`~Classifier.p_hateful` and the :attr:`~Classifier.precision` it
runs in; one with classes (:class:`ClassProbabilities`) also gives
:meth:`~ClassProbabilities.probabilities` and the indices of its
``hateful`` classes, which ``decision: argmax`` needs.

A *kind* (``models.<name>.kind``) is one way of loading a classifier: it
answers whether a reference given to ``evaluate`` looks like one of its
own (:meth:`Kind.detects`, then :meth:`Kind.spec_for` fills in the
``models`` entry), the file or folder its stages read (:meth:`Kind.source`,
a dependency), the memory its stages reserve and whether they use the
profile's GPU, and how it is loaded (:meth:`Kind.load`). A kind is a
subclass of :class:`Kind` decorated with :func:`register`; the stages,
``evaluate`` and the lineage ask the registry, never the kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Protocol, Sequence, TypeVar, runtime_checkable

from hatecheck_pipeline.core.errors import PipelineError

if TYPE_CHECKING:
    import numpy as np


class ClassifierError(PipelineError, ValueError):
    """A classifier that cannot be loaded or whose answers cannot be read."""


@runtime_checkable
class Classifier(Protocol):
    """A loaded classifier, as the register and predict stages use it."""

    model: str  # the name of its models entry (every error names it)
    precision: str  # what it computes in, as each predictions file's metadata records it

    def identity(self) -> dict[str, Any]:
        """What the model card and the lineage name: a content hash, a hub
        id and its commit, a module's file hash and package version, a
        scoring API's URL and snapshot."""
        ...

    def p_hateful(self, texts: Sequence[str], language: str | None = None) -> np.ndarray:
        """p(hateful) per text, in their order (NaN for a text it left
        unanswered); ``language``: the texts' ISO 639-1 code (None: not
        known), for a classifier that is told it."""
        ...


@runtime_checkable
class ClassProbabilities(Classifier, Protocol):
    """A classifier with classes: ``decision: argmax`` labels a text hateful
    when one of its ``hateful`` classes is the top class."""

    hateful: list[int]  # indices of the hateful classes among the probabilities' columns

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """[n, classes] probabilities."""
        ...


@dataclass(frozen=True)
class LoadOptions:
    """How a stage loads a classifier: ``path`` is the file or folder it
    reads (a fetched pinned file or the local :meth:`Kind.source`; None:
    the spec's ``model``); ``threads`` its CPU threads; ``cpu_bf16`` and
    ``amp`` the fine-tuned models' precision rule (models/bf16.py), for a
    kind that follows it (:attr:`Kind.autocast`)."""

    path: Path | None = None
    threads: int = 1
    cpu_bf16: bool | str = False
    amp: bool = True


class Kind:
    """One kind of classifier. A subclass sets :attr:`name` and the
    attributes below, overrides :meth:`load` (and whichever other methods
    differ from the defaults) and is decorated with :func:`register`."""

    name: ClassVar[str]  # the value of models.<name>.kind
    order: ClassVar[int] = 50  # detection: kinds are asked in this order (lowest first) whether a reference is theirs
    mem_mb: ClassVar[int] = 3000  # memory its register and predict stages reserve (Snakemake resources)
    gpu: ClassVar[bool] = False  # whether its predict stages run on the profile's GPU
    autocast: ClassVar[bool] = False  # whether it follows the fine-tuned models' precision rule (training.amp, predict_cpu_bf16)
    has_classes: ClassVar[bool] = False  # whether its classifiers give class probabilities (decision: argmax)
    dated_answers: ClassVar[bool] = False  # whether its predictions files record when their answers were obtained

    def detects(self, ref: str) -> bool:
        """Whether ``ref`` (``evaluate``'s MODEL) looks like a classifier of
        this kind (asked in :attr:`order`; the first that says yes takes it)."""
        return False

    def spec_for(self, ref: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """The kind's keys of a ``models`` entry for ``ref`` (``kind``
        excepted): what can be read from the model itself filled in, what
        cannot named as the option to give (one line).
        ``options``: ``evaluate``'s options (hateful, classes, input_name,
        output, revision, api_format, key_env; None: not given)."""
        return {"model": ref}

    def source(self, spec: Mapping[str, Any]) -> str | None:
        """The file or folder on disk the classifier is read from (a
        dependency of its stages, so that a changed model re-runs them);
        None when there is none (a hub id, a URL)."""
        return None

    def load(self, model: str, spec: Mapping[str, Any], options: LoadOptions) -> Classifier:
        """The classifier ``spec`` describes, ready to answer."""
        raise NotImplementedError

    def as_registered(self, spec: Mapping[str, Any], identity: Mapping[str, Any]) -> dict[str, Any]:
        """The spec the predict stages load, as the register stage resolved
        it (its card's ``identity``)."""
        return dict(spec)

    def card_fields(self, clf: Classifier) -> dict[str, Any]:
        """Keys the register stage adds to the model card."""
        return {}

    def register_note(self, clf: Classifier) -> str:
        """What the register stage's summary line adds (``; ...``)."""
        return ""

    def file_metadata(self, clf: Classifier) -> dict[str, str]:
        """Metadata the predict stage adds to each predictions file, after
        the classifier answered that file's texts."""
        return {}


# Label names a model may give its hateful class (``evaluate``'s guess).
HATEFUL_NAMES = ("hateful", "hate", "hatespeech", "hate_speech", "hate speech", "toxic")


def guess_hateful(labels: Sequence[str]) -> list[str]:
    """The labels of a model that name a hateful class (``evaluate``'s
    guess when ``--hateful`` is not given).

    >>> guess_hateful(["NOT_HATE", "HATE"]), guess_hateful(["normal", "offensive", "hatespeech"]), guess_hateful(["LABEL_0", "LABEL_1"])
    (['HATE'], ['hatespeech'], [])
    """
    return [label for label in labels if label.strip().lower() in HATEFUL_NAMES]


KINDS: dict[str, Kind] = {}
K = TypeVar("K", bound=type[Kind])


def register(cls: K) -> K:
    """Class decorator: the kind ``cls`` in the registry under its
    :attr:`~Kind.name` (one instance; a second kind of the same name is an
    error)."""
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__}: a classifier kind names itself (name = '...')")
    if name in KINDS and type(KINDS[name]) is not cls:
        raise ValueError(f"classifier kind {name!r} is registered twice ({type(KINDS[name]).__name__}, {cls.__name__})")
    KINDS[name] = cls()
    return cls


def names() -> list[str]:
    """The registered kinds, in detection order."""
    return [k.name for k in sorted(KINDS.values(), key=lambda k: (k.order, k.name))]


def get(name: Any, model: str | None = None) -> Kind:
    """The kind named ``name`` (one line naming the model when there is none)."""
    kind = KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        where = f"model {model}: " if model else ""
        raise ClassifierError(f"{where}kind {name!r} is not a classifier kind (kinds: {', '.join(names())})")
    return kind


def of(spec: Mapping[str, Any], model: str | None = None) -> Kind:
    """The kind of a ``models`` entry."""
    return get(spec.get("kind"), model)


def detect(ref: str) -> Kind:
    """The first kind, in detection order, that takes ``ref``."""
    for name in names():
        if KINDS[name].detects(ref):
            return KINDS[name]
    raise ClassifierError(f"{ref}: not a classifier reference of any kind ({', '.join(names())})")
