#!/usr/bin/env bash
# The whole test suite, fastest proof first. Idempotent.
#
#   bash scripts/test.sh          # lint, types (beside the logic tier), import contracts,
#                                 # `dg check defs`, the logic tier,
#                                 # then the corpus, process and model tiers on both cores
#   bash scripts/test.sh --fast   # lint and the logic tier only (a few minutes)
#   bash scripts/test.sh -k ask   # any other arguments go to both pytest runs
#
# Tiers come from the fixtures a test uses (civicsetu_pipelines_tests/conftest.py): `corpus`
# (the materialized default corpus), `process` (services and `civicsetu` processes), `model`
# (torch, mpnet); the logic tier is everything else (generated PDFs, single documents, units,
# parsers, ranking, composition, checks). Both pytest runs share one models directory (the model
# extracted and exported once) and the parse cache (scanned pages OCR'd once, kept between runs
# under ~/.cache/civicsetu/test-parse-cache); at the end, a scanned document OCR'd twice fails.
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
args=()
for arg in "$@"; do
  case "$arg" in
    --fast) fast=1 ;;
    *) args+=("$arg") ;;
  esac
done
started=$SECONDS
bash scripts/setup.sh --extra mpnet  # the embedding tests load all-mpnet-base-v2 too
export HF_HUB_OFFLINE=1
unset PYTHONDONTWRITEBYTECODE  # a module setup did not compile is compiled once (setup.sh)
stamp() { echo "[test] $1 (at $((SECONDS - started)) s)"; }
stamp "ruff"
.venv/bin/ruff check civicsetu_pipelines civicsetu_pipelines_tests bench
.venv/bin/ruff format --check civicsetu_pipelines civicsetu_pipelines_tests bench

# One models directory and one run start for both pytest runs below (conftest.py reads them).
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/civicsetu-test-run-XXXXXX")
mypy_pid=""
prewarm_pid=""
trap '[ -n "$mypy_pid" ] && { kill "$mypy_pid" 2>/dev/null || true; }; [ -n "$prewarm_pid" ] && { kill "$prewarm_pid" 2>/dev/null || true; }; rm -rf "$run_dir"' EXIT
export CIVICSETU_TEST_RUN_DIR=$run_dir CIVICSETU_MODELS_DIR=$run_dir/models
CIVICSETU_TEST_RUN_STARTED=$(date +%s.%N)
export CIVICSETU_TEST_RUN_STARTED

# A tier with nothing selected (say, by -k) is not a failure: pytest's exit code 5.
run_pytest() {
  local rc=0
  .venv/bin/pytest civicsetu_pipelines_tests -p no:cacheprovider "$@" || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 5 ] || exit "$rc"
}
logic="not corpus and not process and not model"
if [ "$fast" = 1 ]; then
  stamp "pytest: the logic tier (-m '$logic', 2 workers)"
  run_pytest -m "$logic" -n 2 --durations=15 ${args[@]+"${args[@]}"}
  stamp "done"
  exit 0
fi
# mypy (a minute from a fresh clone, one core) runs beside the import contracts, `dg check` and
# the logic tier; its verdict is read before the slow tiers start.
stamp "mypy (in the background until the logic tier ends)"
.venv/bin/mypy civicsetu_pipelines > "$run_dir/mypy.log" 2>&1 &
mypy_pid=$!
# The shared corpus parsed (its scanned pages OCR'd: minutes of one core from a cold cache) into
# the tests' parse cache beside the lint and the logic tier, niced: the slow tiers then read it
# (civicsetu_pipelines_tests/prewarm.py: why niced). A parse a test reaches first is waited
# for, not redone. Niced behind two busy workers a page waits for the cores:
# its wall time is not Tesseract's, so the page timeout (120 s by default) is lifted here. (A CI
# run on a slow day had 4 of the UP Rules' 44 pages time out; the parse, incomplete, was not
# cached and the corpus tier OCR'd all 44 pages again.)
stamp "parsing the corpus into the tests' parse cache (in the background, niced)"
CIVICSETU_OCR_PAGE_TIMEOUT=1800 nice -n 10 .venv/bin/python -m civicsetu_pipelines_tests.prewarm \
  > "$run_dir/prewarm.log" 2>&1 &
prewarm_pid=$!
stamp "import contracts (.importlinter: stages in pipeline order, dagster only in defs/ and operate/)"
.venv/bin/lint-imports --no-cache
stamp "dg check defs"
# The definitions load as Dagster's own tooling loads them ([tool.dg] in pyproject.toml), against
# a throwaway instance (the real one lives on the project's Postgres).
dg_home=$(mktemp -d)
touch "$dg_home/dagster.yaml"
DAGSTER_HOME=$dg_home VIRTUAL_ENV=$PWD/.venv .venv/bin/dg check defs
rm -rf "$dg_home"
stamp "pytest: the logic tier (-m '$logic', 2 workers)"
run_pytest -m "$logic" -n 2 --durations=15 ${args[@]+"${args[@]}"}
stamp "mypy's verdict"
mypy_rc=0
wait "$mypy_pid" || mypy_rc=$?
mypy_pid=""
cat "$run_dir/mypy.log"
[ "$mypy_rc" = 0 ] || { echo "[test] mypy failed (exit $mypy_rc)" >&2; exit "$mypy_rc"; }
prewarm_said=0
if kill -0 "$prewarm_pid" 2>/dev/null; then
  stamp "the corpus's parse goes on beside the slow tiers (a test that needs a parse waits for it)"
else
  cat "$run_dir/prewarm.log"
  prewarm_said=1
fi
stamp "pytest: the corpus, process and model tiers (2 workers, grouped)"
# --dist loadgroup: the tests on the materialized corpus run on one worker (it is materialized
# once), the process tests on the other; the rest is shared as they come.
run_pytest -m "not ($logic)" -n 2 --dist loadgroup --durations=25 ${args[@]+"${args[@]}"}
if [ "$prewarm_said" = 0 ]; then  # when each scan was ready, counted from the parse's start
  wait "$prewarm_pid" 2>/dev/null || true
  cat "$run_dir/prewarm.log"
fi
prewarm_pid=""
stamp "done"
