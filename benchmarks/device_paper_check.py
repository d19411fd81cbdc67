"""The `paper` profile's device check, for a machine with one GPU and
nothing outside reachable (no hub): everything is built on the machine.

1. ``dag``: the tiny-`paper` DAG (tests/paper_tiny.py: the paper profile
   with tiny RANDOM models of its architectures and tokenizer families and
   small caps) built by Snakemake on this machine's GPU, up to the targets
   given (default: the report). Records the wall time, and from the model
   cards each fine-tuned model's device and precision, the grid's trials,
   the early stop and the selected checkpoint.
2. ``step``: real-size training steps of a BERT-base-sized RANDOM model
   (bert-base-uncased's configuration: 12 layers, hidden 768, 30,522
   pieces, 110M parameters) at the paper's batch sizes (HateCheck grid: 16
   and 32) and max length 128, AdamW as the recipe, under the pipeline's
   autocast (models/runtime.autocast_ctx, training.amp) and with pinned
   host batches copied non-blocking: samples per second and peak GPU
   memory. Step time does not depend on the weights' values; no quality
   figure comes from this script.

What each part needs on the machine: ``step`` only torch and transformers
(the device image has them: ``--only step`` runs there as it is); ``dag``
the project's own dependencies as well (Snakemake, DVC, polars and the rest
of pyproject.toml), which the image lacks: they travel as wheels
(/work/.library/device/README.md), within the carry limit together with
the mirror, or in an earlier call on the same warm machine.

Everything goes to ``<out>/device_paper_check.json`` (and the Snakemake log
beside it). ``--cpu``: the same on the CPU (a dry run of the script itself:
fewer steps, batch sizes kept), for checking it where no GPU is lent.

    # here, once: the mirror as a tarball (85 MB of raw files, 11 MB gzipped;
    # .device/ is git-ignored, so the device run carries it)
    mkdir -p .device && tar -C ../shared -czf .device/mirror.tar.gz datasets
    # on the device machine ($OUT: the folder that comes back), carry [".device", ".venv" or as set up there]
    python benchmarks/device_paper_check.py --out "$OUT" --mirror .device/mirror.tar.gz
    # here, without a GPU
    python benchmarks/device_paper_check.py --cpu --out /tmp/dpc --mirror ../shared/datasets --targets models/B-D/model_card.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPORT = "reports/mhc_xtc.html"


def environment(cpu: bool) -> dict:
    import torch
    import transformers

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cuda_available": torch.cuda.is_available(),
        "cpu_mode": cpu,
        "cpu_count": os.cpu_count(),
    }
    if torch.cuda.is_available():
        free, total = torch.cuda.mem_get_info()
        env.update(
            device=torch.cuda.get_device_name(0),
            bf16=torch.cuda.is_bf16_supported(),
            gpu_memory_total_gib=round(total / 2**30, 1),
            gpu_memory_free_gib=round(free / 2**30, 1),
        )
    return env


def mirror_dir(mirror: str, work: Path) -> Path:
    """The raw-data mirror: a folder, or a tarball unpacked under ``work``."""
    p = Path(mirror)
    if p.is_dir():
        return p.resolve()
    dest = work / "mirror"
    if not dest.exists():
        with tarfile.open(p) as tar:
            tar.extractall(dest, filter="data")
    inner = [d for d in dest.iterdir() if d.is_dir()]
    return inner[0] if len(inner) == 1 and not (dest / "SHA256SUMS").exists() else dest


def copy_project(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-c"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split("\n")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def cards(project: Path) -> dict:
    out = {}
    for card in sorted(project.glob("models/*/model_card.json")):
        c = json.loads(card.read_text("utf-8"))
        t = c.get("training", c)
        out[card.parent.name] = {
            k: t.get(k) for k in ("device", "precision", "selected_epoch", "stopped_early", "trials", "selected_trial") if k in t
        } or {"keys": sorted(c)}
        if isinstance(out[card.parent.name].get("trials"), list):
            out[card.parent.name]["trials"] = len(out[card.parent.name]["trials"])
    return out


def dag(out: Path, work: Path, mirror: Path, targets: list[str], cores: int, timeout: int) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    import paper_tiny

    t0 = time.perf_counter()
    models = paper_tiny.build_models(work / "tiny-models")
    build_s = time.perf_counter() - t0
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    copy_project(project)
    paper_tiny.write_params(project, models)
    bindir = Path(sys.executable).parent
    env = {
        **os.environ,
        "HATECHECK_PIPELINE_MIRROR": str(mirror),
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(project / "src"),
        "DVC_NO_ANALYTICS": "1",
    }
    subprocess.run([str(bindir / "hatecheck-pipeline"), "dag", "write"], cwd=project, env=env, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    t0 = time.perf_counter()
    with open(out / "snakemake.log", "w") as log:
        try:
            rc = subprocess.run(
                [str(bindir / "snakemake"), *targets, "--cores", str(cores)],
                cwd=project,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return {
        "targets": targets,
        "rc": rc,
        "wall_s": round(time.perf_counter() - t0, 1),
        "tiny_models_build_s": round(build_s, 1),
        "jobs_done": open(out / "snakemake.log").read().count("Finished job"),
        "model_cards": cards(project),
        "note": "tiny RANDOM models (tests/paper_tiny.py): a check of the code paths, never results",
    }


def step(cpu: bool, batch_sizes: list[int], steps: int, max_length: int = 128, amp: bool = True, warmup: int = 2) -> list[dict]:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    sys.path.insert(0, str(REPO / "src"))
    from hatecheck_pipeline.models.runtime import autocast_ctx, pick_device, precision

    device = torch.device("cpu") if cpu else pick_device()
    results = []
    for bs in batch_sizes:
        torch.manual_seed(0)
        net = BertForSequenceClassification(BertConfig(num_labels=2)).to(device).train()  # bert-base-uncased's sizes, random
        opt = torch.optim.AdamW(net.parameters(), lr=5e-5, weight_decay=0.01)
        ids = (
            torch.randint(1000, 30000, (bs, max_length)).pin_memory()
            if device.type == "cuda"
            else torch.randint(1000, 30000, (bs, max_length))
        )
        labels = torch.randint(0, 2, (bs,))
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        times = []
        for i in range(steps + warmup):  # warm-up steps first (allocator, kernels)
            t0 = time.perf_counter()
            x, y = ids.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            with autocast_ctx(device, amp):
                loss = net(input_ids=x, attention_mask=torch.ones_like(x), labels=y).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if device.type == "cuda":
                torch.cuda.synchronize()
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        med = sorted(times)[len(times) // 2]
        results.append(
            {
                "model": "BERT-base configuration, random weights",
                "params_m": round(sum(p.numel() for p in net.parameters()) / 1e6, 1),
                "device": str(device),
                "precision": precision(device, amp),
                "batch_size": bs,
                "max_length": max_length,
                "steps_timed": len(times),
                "step_s_median": round(med, 4),
                "samples_per_s": round(bs / med, 1),
                "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.type == "cuda" else None,
            }
        )
        del net, opt
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "device_paper_check"))
    ap.add_argument("--work", default=None, help="scratch folder (default: <out>/../device_paper_work)")
    ap.add_argument("--mirror", default=os.environ.get("HATECHECK_PIPELINE_MIRROR"), help="raw-data mirror: a folder or a tarball")
    ap.add_argument("--targets", nargs="*", default=[REPORT])
    ap.add_argument("--cores", type=int, default=min(os.cpu_count() or 2, 16))
    ap.add_argument("--dag-timeout", type=int, default=420)
    ap.add_argument("--steps", type=int, default=None, help="timed steps per batch size (default: 20 on a GPU, 1 with --cpu)")
    ap.add_argument("--batch-sizes", type=int, nargs="*", default=[16, 32])
    ap.add_argument("--max-length", type=int, default=128, help="tokens per row of the training step (paper: 128)")
    ap.add_argument("--only", choices=["dag", "step"], default=None)
    ap.add_argument("--cpu", action="store_true", help="dry mode: no GPU needed (fewer steps, same sizes)")
    args = ap.parse_args(argv)
    import torch

    if not args.cpu and not torch.cuda.is_available():
        print("no CUDA device: run with --cpu for the dry mode", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work or out.parent / "device_paper_work")
    work.mkdir(parents=True, exist_ok=True)
    record = {
        "script": "benchmarks/device_paper_check.py",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": environment(args.cpu),
    }
    path = out / "device_paper_check.json"

    def save():
        path.write_text(json.dumps(record, indent=1) + "\n", "utf-8")

    save()
    if args.only in (None, "step"):
        record["step"] = step(
            args.cpu, args.batch_sizes, args.steps or (1 if args.cpu else 20), args.max_length, warmup=0 if args.cpu else 2
        )
        save()
    if args.only in (None, "dag"):
        if not args.mirror:
            record["dag"] = {"skipped": "no --mirror (HATECHECK_PIPELINE_MIRROR)"}
        else:
            record["dag"] = dag(out, work, mirror_dir(args.mirror, work), args.targets, args.cores, args.dag_timeout)
        save()
    print(json.dumps(record, indent=1))
    return 0 if record.get("dag", {}).get("rc", 0) in (0, None) else 1


if __name__ == "__main__":
    sys.exit(main())
