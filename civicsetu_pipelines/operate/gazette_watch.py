"""Notice when a gazette PDF or its registry entry changes (pure domain code: no Dagster).

A *snapshot* is a flat ``{entry: fingerprint}`` mapping over everything that decides what a
jurisdiction's ingestion produces:

* ``pdf:<key>`` -- sha256 of the file the offline mirror/drop directories hold for the document
  (its registry ``filename``, looked up in the directories in order, the first hit wins: the same
  rule as :func:`civicsetu_pipelines.ingest.fetch.fetch_document`). No entry when no directory
  has it.
* ``spec:<key>`` -- ``<JURISDICTION>:<sha256 of the document's registry entry>``, so an edit to
  one document marks only that document, and a removed document still names its jurisdiction.
* ``registry:<path>`` -- sha256 of each registry file's bytes (bookkeeping: an edit that changes
  no document, such as a comment, marks nothing).
* ``remote:<key>@<url id>`` -- only when online checks are enabled: the ETag / Last-Modified a
  HEAD request returns for each download URL.

:func:`changed_partitions` compares two snapshots and maps every changed, new or removed document
to its jurisdiction(s). Files are hashed in 1 MiB blocks and the digest is cached by path and
``(size, mtime_ns, inode, ctime_ns)``, so a polling caller re-hashes only files that changed.

The snapshot is persisted between polls as a compact JSON *cursor* (:class:`WatchState`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.ingest import (
    DOCUMENTS_YAML,
    SEED_DOCUMENTS_YAML,
    USER_AGENT,
    DocumentSpec,
    Registry,
)

PDF_PREFIX = "pdf:"
SPEC_PREFIX = "spec:"
REGISTRY_PREFIX = "registry:"
REMOTE_PREFIX = "remote:"
CURSOR_VERSION = 1
HEAD_TIMEOUT_SECONDS = 5.0

_HASH_BLOCK = 1 << 20
_STABLE_ATTEMPTS = 3

# path -> (stat signature, sha256). One entry per path, so the cache is bounded by the number of
# files ever watched; guarded by a lock because a code server may evaluate ticks in threads.
_HASH_CACHE: dict[str, tuple[tuple[int, int, int, int], str]] = {}
_HASH_LOCK = threading.Lock()


class FileInFluxError(OSError):
    """A file kept changing while it was hashed (probably still being copied in)."""


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def file_sha256(path: Path | str) -> str:
    """sha256 of a file, cached by path and (size, mtime_ns, inode, ctime_ns).

    Raises ``OSError`` when the file cannot be read, and :class:`FileInFluxError` when it changes
    while being hashed (a copy in progress): the caller should look again later.
    """
    name = os.fspath(path)
    for _ in range(_STABLE_ATTEMPTS):
        before = _signature(os.stat(name))
        with _HASH_LOCK:
            cached = _HASH_CACHE.get(name)
        if cached is not None and cached[0] == before:
            return cached[1]
        with open(name, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        after = _signature(os.stat(name))
        if after == before:
            with _HASH_LOCK:
                _HASH_CACHE[name] = (after, digest)
            return digest
    raise FileInFluxError(f"{name} kept changing while it was read (still being written?)")


def clear_hash_cache() -> None:
    """Forget every cached file digest."""
    with _HASH_LOCK:
        _HASH_CACHE.clear()


def spec_fingerprint(spec: DocumentSpec) -> str:
    """``<JURISDICTION>:<sha256>`` of the document's validated registry entry."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return f"{spec.jurisdiction}:{hashlib.sha256(canonical.encode()).hexdigest()}"


def find_in_mirrors(filename: str, mirror_dirs: Sequence[Path]) -> Path | None:
    """The first ``mirror_dir/filename`` that is a file (the order fetch uses), else None."""
    for directory in mirror_dirs:
        candidate = Path(directory) / filename
        if candidate.is_file():
            return candidate
    return None


def registry_files_for(settings: Settings) -> tuple[Path, ...]:
    """The registry files ``load_registry()`` reads under ``settings`` (seed file included when
    seed states are enabled)."""
    files = list(settings.registry_paths or (DOCUMENTS_YAML,))
    if settings.enable_seed_states:
        files.append(SEED_DOCUMENTS_YAML)
    return tuple(files)


def snapshot(
    registry: Registry, mirror_dirs: Sequence[Path], registry_files: Sequence[Path]
) -> dict[str, str]:
    """Fingerprints of the mirrored PDFs, the registry entries and the registry files.

    Raises ``OSError`` (including :class:`FileInFluxError`) when a file cannot be read.
    """
    entries: dict[str, str] = {}
    for spec in registry.specs:
        entries[SPEC_PREFIX + spec.key] = spec_fingerprint(spec)
        if spec.filename:
            found = find_in_mirrors(spec.filename, mirror_dirs)
            if found is not None:
                entries[PDF_PREFIX + spec.key] = file_sha256(found)
    for path in registry_files:
        entries[REGISTRY_PREFIX + str(path)] = file_sha256(path)
    return entries


# ------------------------------------------------------------------------------ online checks


def remote_fingerprint(
    url: str, client: httpx.Client, *, timeout: float = HEAD_TIMEOUT_SECONDS
) -> str | None:
    """``ETag`` / ``Last-Modified`` of a HEAD request to ``url``; None when the request fails,
    the answer is not 2xx, or the server sends neither header. Never raises for HTTP trouble."""
    try:
        response = client.head(url, timeout=timeout, follow_redirects=True)
    except (httpx.HTTPError, httpx.InvalidURL):
        return None
    if not response.is_success:
        return None
    etag = response.headers.get("ETag")
    last_modified = response.headers.get("Last-Modified")
    if not etag and not last_modified:
        return None
    return f"etag={etag or ''};last-modified={last_modified or ''}"


def remote_entry(key: str, url: str) -> str:
    return f"{REMOTE_PREFIX}{key}@{hashlib.sha256(url.encode()).hexdigest()[:16]}"


def remote_snapshot(
    registry: Registry,
    client: httpx.Client,
    previous: Mapping[str, str] | None = None,
    *,
    budget_seconds: float = 30.0,
    timeout: float = HEAD_TIMEOUT_SECONDS,
) -> dict[str, str]:
    """``remote:<key>@<url id>`` -> fingerprint for every download URL of the registry.

    A URL that does not answer (or is not reached within ``budget_seconds``) keeps its
    ``previous`` fingerprint, so a flaky server never looks like a changed document.
    """
    previous = previous or {}
    deadline = time.monotonic() + budget_seconds
    entries: dict[str, str] = {}
    for spec in registry.specs:
        for url in spec.download_urls:
            name = remote_entry(spec.key, url)
            fingerprint = None
            if time.monotonic() < deadline:
                fingerprint = remote_fingerprint(url, client, timeout=timeout)
            if fingerprint is None:
                if name in previous:
                    entries[name] = previous[name]
            else:
                entries[name] = hashlib.sha256(fingerprint.encode()).hexdigest()
    return entries


def http_client() -> httpx.Client:
    """The client for online checks (the fetcher's User-Agent; close it after use)."""
    return httpx.Client(headers={"User-Agent": USER_AGENT})


# ------------------------------------------------------------------------------ comparison


def document_key(entry: str) -> str | None:
    """The document an entry belongs to; None for ``registry:`` entries."""
    for prefix in (PDF_PREFIX, SPEC_PREFIX):
        if entry.startswith(prefix):
            return entry[len(prefix) :]
    if entry.startswith(REMOTE_PREFIX):
        return entry[len(REMOTE_PREFIX) :].split("@", 1)[0]
    return None


def changed_entries(previous: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Entries whose fingerprint differs, appeared or disappeared, sorted."""
    return sorted(k for k in previous.keys() | current.keys() if previous.get(k) != current.get(k))


def _spec_jurisdiction(value: str | None) -> str | None:
    return value.split(":", 1)[0] if value and ":" in value else None


def changed_partitions(
    previous: Mapping[str, str], current: Mapping[str, str], registry: Registry
) -> dict[str, list[str]]:
    """Jurisdiction -> sorted keys of its changed, new or removed documents.

    A document's jurisdiction comes from ``registry`` and from its ``spec:`` entries in both
    snapshots, so a removed document still marks its old jurisdiction, and a document moved to
    another jurisdiction marks both.
    """
    in_registry = {spec.key: spec.jurisdiction for spec in registry.specs}
    out: dict[str, set[str]] = {}
    for entry in changed_entries(previous, current):
        key = document_key(entry)
        if key is None:
            continue
        spec_entry = SPEC_PREFIX + key
        jurisdictions = {
            in_registry.get(key),
            _spec_jurisdiction(previous.get(spec_entry)),
            _spec_jurisdiction(current.get(spec_entry)),
        } - {None}
        for jurisdiction in jurisdictions:
            assert jurisdiction is not None
            out.setdefault(jurisdiction, set()).add(key)
    return {jurisdiction: sorted(out[jurisdiction]) for jurisdiction in sorted(out)}


def change_digest(
    previous: Mapping[str, str], current: Mapping[str, str], documents: Sequence[str], seq: int
) -> str:
    """sha256 over ``seq`` and the sorted (entry, old, new) fingerprints of ``documents``.

    The same change evaluated again from the same cursor gives the same digest (a retried tick
    is deduplicated by its run key); ``seq`` makes a later, identical change (A -> B, back to A,
    then A -> B again) a new digest, so it is not mistaken for the first one.
    """
    wanted = set(documents)
    changes = [
        (entry, previous.get(entry, ""), current.get(entry, ""))
        for entry in changed_entries(previous, current)
        if document_key(entry) in wanted
    ]
    payload = json.dumps({"seq": seq, "changes": changes}, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


# ------------------------------------------------------------------------------ cursor


class CursorError(ValueError):
    """A cursor string that is not a snapshot this module wrote."""


@dataclass(frozen=True)
class WatchState:
    """What the watcher remembers between polls.

    ``seq`` counts the polls that saw a change; ``remote_checked_at`` is when the online checks
    last ran (Unix time; 0 = never).
    """

    snapshot: dict[str, str] = field(default_factory=dict)
    seq: int = 0
    remote_checked_at: float = 0.0

    def dumps(self) -> str:
        """Compact JSON (sorted keys, no spaces)."""
        data = {
            "v": CURSOR_VERSION,
            "seq": self.seq,
            "remote_at": self.remote_checked_at,
            "snapshot": self.snapshot,
        }
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str | None) -> WatchState | None:
        """None for an empty cursor (never polled); :class:`CursorError` for a foreign one."""
        if not text or not text.strip():
            return None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise CursorError(f"cursor is not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("v") != CURSOR_VERSION:
            raise CursorError(f"cursor is not a version-{CURSOR_VERSION} gazette watch state")
        snap = data.get("snapshot")
        seq = data.get("seq", 0)
        remote_at = data.get("remote_at", 0.0)
        if (
            not isinstance(snap, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in snap.items())
            or not isinstance(seq, int)
            or not isinstance(remote_at, int | float)
        ):
            raise CursorError("cursor has a malformed snapshot")
        return cls(snapshot=snap, seq=seq, remote_checked_at=float(remote_at))
