"""Stage ``train_<model>`` of the attention-supervised HateXplain model
(BERT-HateXplain): the ``hatexplain`` model's role, scheme, data and seed,
the recipe named in ``bias.hatexplain.supervised`` (with
``attention_supervision``), and the training posts' rationales from
``bias.hatexplain.supervised.train_rationales``. The pipeline declares it
only when that file is given (the public mirror has none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence


def train_supervised(
    model: str,
    data: Sequence[Path],
    rationales: Path,
    bases: Mapping[str, Path],
    model_dir: Path,
    card: Path,
    checkpoints: Path,
    training_log: Path,
    profile: str,
    profiles: Mapping[str, Any],
    spec: Mapping[str, Any],
    recipe: Mapping[str, Any],
    amp: bool,
    threads: int,
) -> str:
    """Fine-tune ``model`` with cross-entropy + lambda x attention loss."""
    from hatecheck_pipeline.core.config import active_profile
    from hatecheck_pipeline.models.base import role_ref
    from hatecheck_pipeline.models.train import run

    prof = active_profile(profile, profiles)
    log = run(
        model, role_ref(prof, spec["role"]), [Path(f) for f in data], recipe, prof, spec["seed"], Path(model_dir), Path(checkpoints),
        Path(training_log), Path(card), threads=threads, amp=amp, bases=bases, rationales_file=Path(rationales),
    )
    best = next(r for r in log["epochs"] if r["epoch"] == log["selected_epoch"])
    return f"{model} (attention-supervised): epoch {log['selected_epoch']} dev macro F1 {best['dev_macro_f1']:.3f} -> {model_dir}"
