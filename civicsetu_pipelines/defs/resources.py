"""Typed Dagster resources. Configuration comes from ``dg.EnvVar`` with working defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
from pydantic import Field

from civicsetu_pipelines.config import (
    DEFAULT_MIRROR,
    ENV_DATABASE_URL,
    ENV_MIRROR_DIRS,
    ENV_STATE_DIR,
    REPO_ROOT,
    Settings,
    env_is_set,
)
from civicsetu_pipelines.database import apply_migrations, connect, resolve_database_url


class CorpusResource(dg.ConfigurableResource):
    """Where documents come from and where their verified bytes are kept."""

    state_dir: str = Field(default=str(REPO_ROOT / ".civicsetu"), description="State directory")
    mirror_dirs: str = Field(
        default=str(DEFAULT_MIRROR),
        description="Offline mirror directories (os.pathsep-separated), tried before downloads",
    )
    offline: bool = Field(default=False, description="Never touch the network")
    ocr: bool = Field(default=True, description="OCR pages without a text layer (Tesseract)")

    @property
    def pdf_cache(self) -> Path:
        return Path(self.state_dir) / "storage" / "pdfs"

    def mirrors(self) -> list[Path]:
        return [Path(p) for p in self.mirror_dirs.split(":") if p.strip()]


class PostgresResource(dg.ConfigurableResource):
    """The project's Postgres: the embedded server by default, or ``CIVICSETU_DATABASE_URL``."""

    database_url: str = Field(default="", description="External Postgres URL; empty = embedded")
    state_dir: str = Field(default=str(REPO_ROOT / ".civicsetu"), description="State directory")

    def url(self) -> str:
        settings = dataclasses.replace(
            Settings.from_env(),
            state_dir=Path(self.state_dir),
            database_url=self.database_url or None,
        )
        url = resolve_database_url(settings)
        apply_migrations(url)
        return url

    def connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        return connect(self.url())


def _env(name: str, default: str) -> str | dg.EnvVar:
    """``EnvVar(name)`` when the variable is set (shown as such in the UI), else the default."""
    return dg.EnvVar(name) if env_is_set(name) else default


def default_resources() -> dict[str, object]:
    settings = Settings.from_env()
    return {
        "corpus": CorpusResource(
            state_dir=_env(ENV_STATE_DIR, str(settings.state_dir)),
            mirror_dirs=_env(ENV_MIRROR_DIRS, ":".join(str(p) for p in settings.mirror_dirs)),
            offline=settings.offline,
        ),
        "postgres": PostgresResource(
            database_url=_env(ENV_DATABASE_URL, ""),
            state_dir=_env(ENV_STATE_DIR, str(settings.state_dir)),
        ),
    }
