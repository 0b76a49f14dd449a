#!/usr/bin/env bash
# The main job: set up, start the embedded Postgres, ingest every default jurisdiction (ingest_job;
# --reports adds the answers and evaluation jobs), print a summary and where to look next.
set -euo pipefail
cd "$(dirname "$0")/.."
# ranx's kernels only when the reports run too (--reports): ingestion never scores
case " $* " in *" --reports "*) bash scripts/setup.sh --kernels ;; *) bash scripts/setup.sh ;; esac
export HF_HUB_OFFLINE=1
.venv/bin/civicsetu db start
.venv/bin/civicsetu materialize "$@"
