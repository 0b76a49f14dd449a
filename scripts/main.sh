#!/usr/bin/env bash
# The main job: set up, start the embedded Postgres, ingest every default jurisdiction (ingest_job;
# --reports adds the answers and evaluation jobs), print a summary and where to look next.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
unset PYTHONDONTWRITEBYTECODE  # a module setup did not compile is compiled once (setup.sh)
.venv/bin/civicsetu db start
.venv/bin/civicsetu materialize "$@"
