"""Prepare ``$DAGSTER_HOME`` so Dagster keeps runs, event logs and schedules in Postgres.

The repo's ``deploy/dagster.yaml`` reads two environment variables; :func:`prepare_dagster_home`
sets them (together with ``DAGSTER_HOME``) for this process and its children. This is the one place
outside :mod:`civicsetu_pipelines.base.settings` that touches ``os.environ``, and it only writes.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from civicsetu_pipelines.base import REPO_ROOT, Settings
from civicsetu_pipelines.store import (
    DAGSTER_DATABASE,
    dagster_storage_url,
    ensure_database,
    resolve_database_url,
)

log = logging.getLogger(__name__)

# Not at the repository root: `dg dev` runs from there and would warn of a dagster.yaml that
# DAGSTER_HOME overrides.
DAGSTER_YAML = REPO_ROOT / "deploy" / "dagster.yaml"
ENV_DAGSTER_HOME = "DAGSTER_HOME"
ENV_DAGSTER_PG_URL = "CIVICSETU_DAGSTER_PG_URL"
ENV_DAGSTER_ARTIFACTS = "CIVICSETU_DAGSTER_ARTIFACTS"


def dagster_artifacts_dir(settings: Settings) -> Path:
    """Where Dagster's local artifact storage lives (``<state>/dagster_home/artifacts``)."""
    return settings.dagster_home / "artifacts"


def prepare_dagster_home(settings: Settings | None = None) -> Path:
    """Make ``DagsterInstance.get()`` use Postgres; return ``DAGSTER_HOME``.

    Starts (or reuses) the embedded Postgres unless ``CIVICSETU_DATABASE_URL`` is set, creates the
    ``dagster`` database on that server if missing, sets ``DAGSTER_HOME``,
    ``CIVICSETU_DAGSTER_PG_URL`` and ``CIVICSETU_DAGSTER_ARTIFACTS`` in ``os.environ``, and copies
    the repo's ``deploy/dagster.yaml`` into ``DAGSTER_HOME`` when it differs. Safe to call
    repeatedly and from several processes.
    """
    settings = settings or Settings.from_env()
    url = resolve_database_url(settings)
    ensure_database(url, DAGSTER_DATABASE)

    home = settings.dagster_home
    artifacts = dagster_artifacts_dir(settings)
    home.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)

    target = home / "dagster.yaml"
    wanted = DAGSTER_YAML.read_bytes()
    if not target.is_file() or target.read_bytes() != wanted:
        tmp = target.with_name(f".dagster.yaml.{os.getpid()}.tmp")
        shutil.copyfile(DAGSTER_YAML, tmp)
        os.replace(tmp, target)  # atomic: a concurrent reader never sees half a file
        log.info("wrote %s", target)

    os.environ[ENV_DAGSTER_HOME] = str(home)
    os.environ[ENV_DAGSTER_PG_URL] = dagster_storage_url(url)
    os.environ[ENV_DAGSTER_ARTIFACTS] = str(artifacts)
    return home
