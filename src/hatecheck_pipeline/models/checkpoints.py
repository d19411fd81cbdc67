"""Training checkpoints as safetensors and JSON, no pickles: model weights,
optimizer tensors and RNG state as safetensors, scalars (optimizer
hyper-parameters, scheduler, loop state) as JSON, each written under a
temporary name and renamed into place, so a killed run leaves either a
complete checkpoint or none."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import torch


def save_optimizer(opt: torch.optim.Optimizer, directory: Path) -> None:
    from safetensors.torch import save_file

    sd = opt.state_dict()
    tensors, scalars = {}, {}
    for idx, state in sd["state"].items():
        for key, value in state.items():
            if torch.is_tensor(value):
                tensors[f"{idx}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{idx}.{key}"] = value
    save_file(tensors, str(directory / "optimizer.safetensors"))
    (directory / "optimizer.json").write_text(json.dumps({"param_groups": sd["param_groups"], "scalars": scalars}), "utf-8")


def load_optimizer(opt: torch.optim.Optimizer, directory: Path, device: torch.device) -> None:
    from safetensors.torch import load_file

    meta = json.loads((directory / "optimizer.json").read_text("utf-8"))
    state: dict[int, dict] = {}
    for name, tensor in load_file(str(directory / "optimizer.safetensors")).items():
        idx, key = name.split(".", 1)
        state.setdefault(int(idx), {})[key] = tensor if key == "step" else tensor.to(device)
    for name, value in meta["scalars"].items():
        idx, key = name.split(".", 1)
        state.setdefault(int(idx), {})[key] = value
    opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})


def rng_tensors() -> dict[str, torch.Tensor]:
    out = {"torch_cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            out[f"torch_cuda_{i}"] = s
    return out


def restore_rng(directory: Path) -> None:
    from safetensors.torch import load_file

    rng = load_file(str(directory / "rng.safetensors"))
    torch.set_rng_state(rng["torch_cpu"])
    cuda = [rng[k] for k in sorted(k for k in rng if k.startswith("torch_cuda_"))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


def save_checkpoint(ckpt_dir: Path, epoch: int, model, opt, sched, scaler, loop_state: dict) -> Path:
    """Write ``epoch-N`` atomically (temp dir + rename); keep only the last."""
    from safetensors.torch import save_file, save_model

    ckpt_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"epoch-{epoch}.tmp-", dir=ckpt_dir))
    save_model(model, str(tmp / "model.safetensors"))
    save_optimizer(opt, tmp)
    save_file(rng_tensors(), str(tmp / "rng.safetensors"))
    extra = {"scheduler": sched.state_dict(), "scaler": scaler.state_dict() if scaler is not None and scaler.is_enabled() else None}
    (tmp / "state.json").write_text(json.dumps({**loop_state, **extra}, indent=1, default=float), "utf-8")
    final = ckpt_dir / f"epoch-{epoch}"
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    for old in ckpt_dir.glob("epoch-*"):
        if old != final and old.name != "best":
            shutil.rmtree(old, ignore_errors=True)
    return final


def last_checkpoint(ckpt_dir: Path) -> Path | None:
    done = [p for p in ckpt_dir.glob("epoch-*") if p.is_dir() and ".tmp" not in p.name and (p / "state.json").exists()]
    return max(done, key=lambda p: int(p.name.split("-")[1]), default=None)


def save_best(ckpt_dir: Path, model) -> None:
    from safetensors.torch import save_model

    tmp = Path(tempfile.mkdtemp(prefix="best.tmp-", dir=ckpt_dir))
    save_model(model, str(tmp / "model.safetensors"))
    if (ckpt_dir / "best").exists():
        shutil.rmtree(ckpt_dir / "best")
    os.replace(tmp, ckpt_dir / "best")


def save_dir_atomic(out_dir: Path, write: Callable[[Path], None]) -> None:
    """Write a directory under a temporary name, then rename it into place
    (a half-written one left by a killed run is removed first)."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    for leftover in out_dir.parent.glob(out_dir.name + ".tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=out_dir.name + ".tmp-", dir=out_dir.parent))
    try:
        write(tmp)
        os.chmod(tmp, 0o755)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def clear_checkpoints(ckpt_dir: Path) -> None:
    """Empty ``ckpt_dir`` (the folder stays) once the model it resumes is
    written with its log and card: its checkpoints only serve a killed run,
    and the last epoch's optimiser state alone is twice the model's size."""
    if not ckpt_dir.is_dir():
        return
    for child in ckpt_dir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
