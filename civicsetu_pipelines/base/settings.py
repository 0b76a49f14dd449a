"""The one place that reads the environment.

Every setting has a default that works on a fresh machine. The Dagster resources read the same
variables through ``dg.EnvVar``; the CLI and tests read them here. No other module touches
``os.environ`` for configuration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# The package (its Python sources, SQL-free data and templates) and the repository around it.
PACKAGE_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = PACKAGE_DIR.parent
# Data shipped with the package: the registry, curated derivations, the golden questions.
DATA_DIR = PACKAGE_DIR / "data"

ENV_STATE_DIR = "CIVICSETU_STATE_DIR"
ENV_DATABASE_URL = "CIVICSETU_DATABASE_URL"
ENV_MIRROR_DIRS = "CIVICSETU_MIRROR_DIRS"
ENV_ENABLE_SEED_STATES = "CIVICSETU_ENABLE_SEED_STATES"
ENV_OFFLINE = "CIVICSETU_OFFLINE"
ENV_REGISTRY = "CIVICSETU_REGISTRY"
# The embedding model: a packaged one (data/models.yaml: all-MiniLM-L6-v2, the default, or
# all-mpnet-base-v2), a model hub name or a local directory. Its dimension defaults to the
# packaged model's (384 for any other model); a packaged model's must not be set otherwise.
ENV_EMBED_MODEL = "CIVICSETU_EMBED_MODEL"
ENV_EMBED_DIMENSION = "CIVICSETU_EMBED_DIMENSION"
ENV_EMBED_DOCUMENT_PREFIX = "CIVICSETU_EMBED_DOCUMENT_PREFIX"
ENV_EMBED_QUERY_PREFIX = "CIVICSETU_EMBED_QUERY_PREFIX"
ENV_EMBED_BATCH_SIZE = "CIVICSETU_EMBED_BATCH_SIZE"
ENV_EMBED_DEVICE = "CIVICSETU_EMBED_DEVICE"
# onnx (the default: onnxruntime, the model exported once to ONNX) or torch (sentence-transformers).
ENV_EMBED_RUNTIME = "CIVICSETU_EMBED_RUNTIME"
# Automation: the cron of the weekly re-ingestion schedules (Asia/Kolkata).
ENV_REINGEST_CRON = "CIVICSETU_REINGEST_CRON"
# Evaluation: the golden file the evaluation job scores (default: the packaged data/golden.jsonl;
# a smaller stratified file for a quick run, a user's own questions).
ENV_GOLDEN = "CIVICSETU_GOLDEN"
# Answers: retrieval and the optional OpenAI-compatible generation endpoint.
ENV_EF_SEARCH = "CIVICSETU_EF_SEARCH"
# Diversity of the answer's units: what the cap counts (provision, legislation or document; see
# answer.ranking.DIVERSITY_RULES) and how many units of one it keeps.
ENV_DIVERSITY = "CIVICSETU_DIVERSITY"
ENV_DIVERSITY_CAP = "CIVICSETU_DIVERSITY_CAP"
ENV_DIVERSITY_NAMED_STATE = "CIVICSETU_DIVERSITY_NAMED_STATE"  # the rule when a state is named
ENV_CROSS_ENCODER = "CIVICSETU_CROSS_ENCODER"
ENV_LLM_BASE_URL = "CIVICSETU_LLM_BASE_URL"
ENV_LLM_MODEL = "CIVICSETU_LLM_MODEL"
ENV_LLM_API_KEY = "CIVICSETU_LLM_API_KEY"
# Neo4j (the driver's usual names): the neo4j_graph asset is enabled when NEO4J_URI is set.
ENV_NEO4J_URI = "NEO4J_URI"
ENV_NEO4J_USER = "NEO4J_USER"
ENV_NEO4J_USERNAME = "NEO4J_USERNAME"  # the other usual name, read when NEO4J_USER is unset
ENV_NEO4J_PASSWORD = "NEO4J_PASSWORD"
ENV_NEO4J_DATABASE = "NEO4J_DATABASE"
# Celery: the broker (and result backend) of `--executor celery`; unset, the embedded Redis that
# `civicsetu workers start` runs under the state directory.
ENV_CELERY_BROKER_URL = "CIVICSETU_CELERY_BROKER_URL"
# Caches that several state directories may share (the test suite shares one of each per run):
# parsed pages by fingerprint (default <state>/storage/parse_cache) and the extracted models with
# their ONNX exports (default <state>/models).
ENV_PARSE_CACHE = "CIVICSETU_PARSE_CACHE"
ENV_MODELS_DIR = "CIVICSETU_MODELS_DIR"
# The learned ranker the answers use: the file the learned_ranker asset promotes (default
# <state>/storage/ranker/promoted.json; absent until a ranker wins on dev); "none" serves the
# hand-set ranking whatever was promoted.
ENV_RANKER = "CIVICSETU_RANKER"
# The OCR budget of one document's parse: at most this many pages OCR'd, this many seconds of
# OCR in all, this many seconds for one page (the Tesseract calls are killed past it), and a page
# rendered for OCR at no more than this many pixels (a huge page is read at a lower resolution,
# flagged ``ocr_downscaled``). A page a budget leaves unread is flagged ``needs_ocr`` and
# ``ocr_skipped_budget``, never silently empty.
ENV_OCR_MAX_PAGES = "CIVICSETU_OCR_MAX_PAGES"
ENV_OCR_MAX_SECONDS = "CIVICSETU_OCR_MAX_SECONDS"
ENV_OCR_PAGE_TIMEOUT = "CIVICSETU_OCR_PAGE_TIMEOUT"
ENV_OCR_MAX_PIXELS = "CIVICSETU_OCR_MAX_PIXELS"
ENV_OCR_PAGES_AT_ONCE = "CIVICSETU_OCR_PAGES_AT_ONCE"
DEFAULT_OCR_MAX_PAGES = 500  # the corpus's longest scan is 44 pages
DEFAULT_OCR_MAX_SECONDS = 3600.0
DEFAULT_OCR_PAGE_TIMEOUT = 120.0  # a corpus page takes 2-12 s (both layouts)
DEFAULT_OCR_MAX_PIXELS = 25_000_000  # A4 at 400 dpi is 15.5 million, the corpus's pages < 9
DEFAULT_OCR_PAGES_AT_ONCE = 2  # a scan's pages read by this many Tesseract processes at once

# The checks' validator (Great Expectations, ~4 s to import): seconds a validator shared by the
# commands of one state directory waits for its next command before it exits; 0: every
# `civicsetu materialize` starts its own and stops it when it ends.
ENV_VALIDATOR_IDLE_S = "CIVICSETU_VALIDATOR_IDLE_S"
DEFAULT_VALIDATOR_IDLE_S = 600.0

DEFAULT_MIRROR = REPO_ROOT.parent / "shared" / "corpus" / "pdfs"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    """Process-wide settings, resolved from the environment with defaults."""

    state_dir: Path
    database_url: str | None
    mirror_dirs: tuple[Path, ...]
    enable_seed_states: bool
    offline: bool
    registry_paths: tuple[Path, ...] = ()  # empty: the packaged documents.yaml
    parse_cache_override: Path | None = None  # CIVICSETU_PARSE_CACHE; None: under the state dir
    models_override: Path | None = None  # CIVICSETU_MODELS_DIR; None: under the state dir
    ocr_max_pages: int = DEFAULT_OCR_MAX_PAGES  # CIVICSETU_OCR_MAX_PAGES
    ocr_max_seconds: float = DEFAULT_OCR_MAX_SECONDS  # CIVICSETU_OCR_MAX_SECONDS
    ocr_page_timeout: float = DEFAULT_OCR_PAGE_TIMEOUT  # CIVICSETU_OCR_PAGE_TIMEOUT
    ocr_max_pixels: int = DEFAULT_OCR_MAX_PIXELS  # CIVICSETU_OCR_MAX_PIXELS
    ocr_pages_at_once: int = DEFAULT_OCR_PAGES_AT_ONCE  # CIVICSETU_OCR_PAGES_AT_ONCE
    validator_idle_s: float = DEFAULT_VALIDATOR_IDLE_S  # CIVICSETU_VALIDATOR_IDLE_S

    @classmethod
    def from_env(cls) -> Settings:
        state = Path(os.environ.get(ENV_STATE_DIR) or (REPO_ROOT / ".civicsetu")).resolve()
        mirrors_raw = os.environ.get(ENV_MIRROR_DIRS)
        if mirrors_raw is None:
            mirrors: tuple[Path, ...] = (DEFAULT_MIRROR,) if DEFAULT_MIRROR.is_dir() else ()
        else:
            mirrors = tuple(Path(p).resolve() for p in mirrors_raw.split(os.pathsep) if p.strip())
        return cls(
            state_dir=state,
            database_url=os.environ.get(ENV_DATABASE_URL) or None,
            mirror_dirs=mirrors,
            enable_seed_states=_truthy(os.environ.get(ENV_ENABLE_SEED_STATES)),
            offline=_truthy(os.environ.get(ENV_OFFLINE)),
            registry_paths=tuple(
                Path(p).resolve()
                for p in (os.environ.get(ENV_REGISTRY) or "").split(os.pathsep)
                if p.strip()
            ),
            parse_cache_override=_path_or_none(os.environ.get(ENV_PARSE_CACHE)),
            models_override=_path_or_none(os.environ.get(ENV_MODELS_DIR)),
            ocr_max_pages=int(_number(ENV_OCR_MAX_PAGES, DEFAULT_OCR_MAX_PAGES)),
            ocr_max_seconds=_number(ENV_OCR_MAX_SECONDS, DEFAULT_OCR_MAX_SECONDS),
            ocr_page_timeout=_number(ENV_OCR_PAGE_TIMEOUT, DEFAULT_OCR_PAGE_TIMEOUT),
            ocr_max_pixels=int(_number(ENV_OCR_MAX_PIXELS, DEFAULT_OCR_MAX_PIXELS)),
            ocr_pages_at_once=max(
                1, int(_number(ENV_OCR_PAGES_AT_ONCE, DEFAULT_OCR_PAGES_AT_ONCE))
            ),  # fmt: skip
            validator_idle_s=_number(ENV_VALIDATOR_IDLE_S, DEFAULT_VALIDATOR_IDLE_S, zero=True),
        )

    @property
    def run_dir(self) -> Path:
        """The state's running services: pid files, sockets and their logs."""
        return run_dir(self.state_dir)

    @property
    def parse_cache(self) -> Path:
        """Parsed pages by fingerprint: ``CIVICSETU_PARSE_CACHE``, else under the state dir."""
        return self.parse_cache_override or parse_cache_dir(self.state_dir)

    @property
    def models_dir(self) -> Path:
        """Extracted models and their ONNX exports: ``CIVICSETU_MODELS_DIR``, else
        ``<state>/models``."""
        return self.models_override or models_dir(self.state_dir)

    @property
    def ranker_dir(self) -> Path:
        """The learned ranker's files: every trained version and the promoted one."""
        return self.storage_dir / "ranker"

    @property
    def memo_dir(self) -> Path:
        """Answers kept between evaluations (``evaluate.ScopedMemo``), one file per use."""
        return self.storage_dir / "memo"

    @property
    def ranker_path(self) -> Path | None:
        """The learned ranker answers are served with: ``CIVICSETU_RANKER`` ("none": the
        hand-set ranking), else the promoted file (served only when it exists)."""
        chosen = os.environ.get(ENV_RANKER)
        if chosen and chosen.strip().lower() == "none":
            return None
        return Path(chosen) if chosen else self.ranker_dir / "promoted.json"

    @property
    def golden_path(self) -> Path:
        """The golden file the evaluation job scores: ``CIVICSETU_GOLDEN``, else the packaged
        ``data/golden.jsonl``."""
        chosen = os.environ.get(ENV_GOLDEN)
        return Path(chosen).resolve() if chosen and chosen.strip() else DATA_DIR / "golden.jsonl"

    @property
    def dagster_home(self) -> Path:
        return self.state_dir / "dagster_home"

    @property
    def storage_dir(self) -> Path:
        """Where the Parquet IO manager and the content-addressed PDF store live."""
        return self.state_dir / "storage"


def pdf_cache_dir(state_dir: Path | str) -> Path:
    """Verified PDFs by sha256."""
    return Path(state_dir) / "storage" / "pdfs"


def run_dir(state_dir: Path | str) -> Path:
    """The state's running services (Postgres's lock, Redis, the workers, the shared checks'
    validator): their pid files, sockets and logs."""
    return Path(state_dir) / "run"


def reports_dir(state_dir: Path | str) -> Path:
    """Where the pipeline writes files for people to read (graph pictures, exports, reports)."""
    return Path(state_dir) / "reports"


def parse_cache_dir(state_dir: Path | str, override: Path | str | None = None) -> Path:
    """Parsed pages by fingerprint (PDF sha256, page ranges, language, parser code, Tesseract):
    ``override`` when given (``CIVICSETU_PARSE_CACHE``), else under the state dir."""
    return Path(override) if override else Path(state_dir) / "storage" / "parse_cache"


def models_dir(state_dir: Path | str, override: Path | str | None = None) -> Path:
    """Extracted models and their ONNX exports: ``override`` when given
    (``CIVICSETU_MODELS_DIR``), else ``<state>/models``."""
    return Path(override) if override else Path(state_dir) / "models"


def _number(name: str, default: float, *, zero: bool = False) -> float:
    """A positive number (or 0, with ``zero``) from the environment, ``default`` when unset or
    empty; a value that is not one is a ``ValueError`` naming the variable."""
    raw = (os.environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if not (value > 0 or (zero and value == 0)):
        raise ValueError(f"{name}={raw!r} must be {'0 or more' if zero else 'greater than 0'}")
    return value


def _path_or_none(value: str | None) -> Path | None:
    return Path(value).resolve() if value and value.strip() else None


def env_is_set(name: str) -> bool:
    """Whether an environment variable is set to a non-empty value."""
    return bool(os.environ.get(name))


def env_value(name: str, default: str) -> str:
    """An environment variable's value, or ``default`` when unset or empty."""
    return os.environ.get(name) or default


def answer_env() -> dict[str, str]:
    """The answer settings that are set: ef_search, diversity, diversity_cap,
    diversity_named_state, cross_encoder, llm_base_url, llm_model, llm_api_key."""
    names = {"ef_search": ENV_EF_SEARCH, "diversity": ENV_DIVERSITY,
             "diversity_cap": ENV_DIVERSITY_CAP, "diversity_named_state": ENV_DIVERSITY_NAMED_STATE,
             "cross_encoder": ENV_CROSS_ENCODER,
             "llm_base_url": ENV_LLM_BASE_URL, "llm_model": ENV_LLM_MODEL,
             "llm_api_key": ENV_LLM_API_KEY}  # fmt: skip
    return {key: os.environ[name] for key, name in names.items() if os.environ.get(name)}


def neo4j_configured() -> bool:
    """Whether a Neo4j server is configured (``NEO4J_URI`` set)."""
    return env_is_set(ENV_NEO4J_URI)


def model_hub_offline() -> None:
    """Never let model libraries reach for a model hub (a missing model retries for ~55 s)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def output_settings() -> dict[str, str]:
    """The settings that change what a materialization produces (for freshness fingerprints)."""
    names = (
        ENV_EMBED_MODEL, ENV_EMBED_DIMENSION, ENV_EMBED_DOCUMENT_PREFIX, ENV_EMBED_QUERY_PREFIX,
        ENV_ENABLE_SEED_STATES, ENV_REGISTRY, ENV_MIRROR_DIRS, ENV_OFFLINE,
    )  # fmt: skip
    return {name: os.environ.get(name, "") for name in names}
