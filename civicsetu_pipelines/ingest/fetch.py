"""Fetch a registered document into the content-addressed PDF store.

Pure domain code (no Dagster). Sources are tried in order:

1. each offline mirror directory, looking for a file named ``spec.filename``;
2. unless ``offline``, each of ``spec.download_urls`` over HTTP(S) with httpx: per-request
   timeouts, retries with exponential backoff on connection errors, timeouts, 5xx and 429
   (``Retry-After`` honoured, capped), a streamed size cap, and conditional GET (the ETag and
   Last-Modified of the last good download of a URL are remembered in a small JSON sidecar in
   ``cache_dir``; a 304 reuses the cached file).

Every candidate must look like a PDF (``%PDF-`` in the first 1024 bytes; an HTML error page is
reported as such) and, when the spec pins a sha256, hash to exactly that pin. The result is
stored at ``cache_dir/<sha256>.pdf``. All writes go to a temp file in ``cache_dir`` and are
renamed into place, so readers never see partial files. If every source fails, ``FetchError``
lists each source and why it failed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from civicsetu_pipelines.base import DocumentError, sha256_file
from civicsetu_pipelines.ingest.registry import DocumentSpec

logger = logging.getLogger(__name__)

PDF_MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024
CHUNK_SIZE = 64 * 1024
DEFAULT_MAX_BYTES = 100 * 2**20
MAX_RETRY_AFTER_SECONDS = 60.0
USER_AGENT = "civicsetu-pipelines/0.1 (legal document ingestion)"
SIDECAR_SUFFIX = ".http.json"
_TEMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class FetchResult:
    """Where a document's bytes came from and where they are now."""

    key: str
    path: Path
    sha256: str
    bytes: int
    # "mirror:<dir>" | "download:<url>" | "cache:<url>" (HTTP 304 not modified) | "store" (a
    # document added with `civicsetu documents add`, kept only in the store)
    source: str
    etag: str | None = None
    last_modified: str | None = None


class FetchError(DocumentError):
    """No source produced a valid copy of the document. ``str()`` names the key and the causes."""

    template = "fetch failed for document {key!r}: {reason}"


class _SourceFailed(Exception):
    """One source failed. ``retryable`` marks transient HTTP/network failures."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


# ------------------------------------------------------------------------------------ helpers


def _preview(data: bytes, limit: int = 60) -> str:
    text = data[:limit].decode("utf-8", errors="replace")
    return " ".join(text.split())


def _not_a_pdf_reason(head: bytes, content_type: str | None) -> str | None:
    """None if ``head`` (the first bytes) is a PDF, else why not."""
    window = head[:MAGIC_WINDOW]
    if PDF_MAGIC in window:
        return None
    sniff = window.lstrip().lower()
    looks_html = (
        (content_type is not None and "html" in content_type.lower())
        or sniff.startswith((b"<!doctype html", b"<html", b"<head", b"<body"))
        or b"<html" in sniff
    )
    shown = f"starts with {_preview(window)!r}" if window else "empty body"
    if looks_html:
        return (
            f"got an HTML page, not a PDF (Content-Type: {content_type or 'unknown'}; {shown}); "
            "probably an error or landing page"
        )
    return f"not a PDF: no '%PDF-' signature in the first {MAGIC_WINDOW} bytes ({shown})"


def _file_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        yield from iter(lambda: fh.read(CHUNK_SIZE), b"")


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@dataclass
class _Staged:
    """A fully written, validated temp file in the cache dir, not yet renamed into place."""

    tmp: Path
    sha256: str
    size: int


def _stage(
    chunks: Iterable[bytes],
    cache_dir: Path,
    *,
    content_type: str | None = None,
    max_bytes: int | None = None,
) -> _Staged:
    """Stream ``chunks`` to a temp file, hashing, capping the size and checking the PDF magic.

    The temp file is removed if anything fails.
    """
    fd, name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".part", dir=cache_dir)
    tmp = Path(name)
    digest = hashlib.sha256()
    size = 0
    head = bytearray()
    checked = False
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                if not chunk:
                    continue
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise _SourceFailed(
                        f"body exceeds the size cap of {max_bytes} bytes "
                        f"(stopped after reading {size} bytes)"
                    )
                if not checked:
                    head.extend(chunk[: MAGIC_WINDOW - len(head)])
                    if len(head) >= MAGIC_WINDOW:
                        reason = _not_a_pdf_reason(bytes(head), content_type)
                        if reason:
                            raise _SourceFailed(reason)
                        checked = True
                digest.update(chunk)
                out.write(chunk)
            if not checked:
                reason = _not_a_pdf_reason(bytes(head), content_type)
                if reason:
                    raise _SourceFailed(reason)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        _remove_quietly(tmp)
        raise
    return _Staged(tmp=tmp, sha256=digest.hexdigest(), size=size)


def _check_pin(spec: DocumentSpec, staged: _Staged) -> None:
    if spec.sha256 is not None and staged.sha256 != spec.sha256:
        _remove_quietly(staged.tmp)
        raise _SourceFailed(
            f"sha256 mismatch: expected {spec.sha256} (registry pin), got {staged.sha256} "
            f"({staged.size} bytes)"
        )


def _install(staged: _Staged, cache_dir: Path) -> Path:
    final = cache_dir / f"{staged.sha256}.pdf"
    try:
        os.chmod(staged.tmp, 0o644)
        os.replace(staged.tmp, final)
    except OSError as exc:
        _remove_quietly(staged.tmp)
        raise _SourceFailed(f"cannot store {final}: {exc}") from exc
    return final


def _atomic_write_text(path: Path, text: str) -> None:
    fd, name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".part", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise


def sidecar_path(cache_dir: Path | str, url: str) -> Path:
    """The JSON file remembering validators (ETag, Last-Modified) for ``url``."""
    return (
        Path(cache_dir) / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()[:32]}{SIDECAR_SUFFIX}"
    )


def _read_sidecar(path: Path, url: str) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("url") != url
        or not isinstance(data.get("sha256"), str)
    ):
        return None
    return data


def _write_sidecar(path: Path, **fields: Any) -> None:
    fields["updated_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    _atomic_write_text(path, json.dumps(fields, indent=2, sort_keys=True) + "\n")


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())


def _status_text(response: httpx.Response) -> str:
    phrase = response.reason_phrase
    return f"HTTP {response.status_code}{' ' + phrase if phrase else ''}"


# ------------------------------------------------------------------------------------ sources


def _from_mirror(spec: DocumentSpec, mirror_dir: Path, cache_dir: Path) -> FetchResult:
    assert spec.filename is not None
    if not mirror_dir.is_dir():
        raise _SourceFailed("mirror directory does not exist")
    candidate = mirror_dir / spec.filename
    if not candidate.is_file():
        raise _SourceFailed(f"{spec.filename} not found")
    try:
        staged = _stage(_file_chunks(candidate), cache_dir)
    except OSError as exc:
        raise _SourceFailed(f"cannot read {candidate}: {exc}") from exc
    _check_pin(spec, staged)
    path = _install(staged, cache_dir)
    return FetchResult(
        key=spec.key,
        path=path,
        sha256=staged.sha256,
        bytes=staged.size,
        source=f"mirror:{mirror_dir}",
    )


class _CacheInvalid(Exception):
    """Internal: a 304 pointed at a cached file that is missing or corrupt."""


class _Downloader:
    def __init__(
        self,
        spec: DocumentSpec,
        client: httpx.Client,
        cache_dir: Path,
        *,
        max_bytes: int,
        timeout: float,
        retries: int,
        backoff: float,
    ) -> None:
        self.spec = spec
        self.client = client
        self.cache_dir = cache_dir
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    def fetch(self, url: str) -> FetchResult:
        attempts = self.retries + 1
        use_validators = True
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._attempt(url, use_validators=use_validators)
            except _CacheInvalid:
                # The cached copy behind a 304 is gone or corrupt: start over unconditionally,
                # without spending a retry.
                use_validators = False
                attempt -= 1
                continue
            except _SourceFailed as exc:
                if not exc.retryable or attempt >= attempts:
                    suffix = f" (after {attempt} attempts)" if exc.retryable and attempt > 1 else ""
                    raise _SourceFailed(f"{exc}{suffix}") from exc
                delay = self.backoff * (2 ** (attempt - 1))
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, MAX_RETRY_AFTER_SECONDS))
                logger.warning(
                    "%s: %s: %s; retry %d/%d in %.2fs",
                    self.spec.key,
                    url,
                    exc,
                    attempt,
                    self.retries,
                    delay,
                )
                if delay > 0:
                    time.sleep(delay)

    def _cached(self, url: str) -> tuple[Path, dict[str, Any]] | None:
        meta = _read_sidecar(sidecar_path(self.cache_dir, url), url)
        if meta is None:
            return None
        if self.spec.sha256 is not None and meta["sha256"] != self.spec.sha256:
            return None  # the pin changed; a 304 would hand back the wrong bytes
        path = self.cache_dir / f"{meta['sha256']}.pdf"
        return (path, meta) if path.is_file() else None

    def _attempt(self, url: str, *, use_validators: bool) -> FetchResult:
        cached = self._cached(url) if use_validators else None
        headers: dict[str, str] = {}
        if cached is not None:
            meta = cached[1]
            if meta.get("etag"):
                headers["If-None-Match"] = str(meta["etag"])
            if meta.get("last_modified"):
                headers["If-Modified-Since"] = str(meta["last_modified"])
            if not headers:
                cached = None
        try:
            with self.client.stream(
                "GET", url, headers=headers, timeout=self.timeout, follow_redirects=True
            ) as response:
                return self._handle(url, response, cached)
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise _SourceFailed(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise _SourceFailed(f"{type(exc).__name__}: {exc}") from exc

    def _handle(
        self,
        url: str,
        response: httpx.Response,
        cached: tuple[Path, dict[str, Any]] | None,
    ) -> FetchResult:
        status = response.status_code
        if status == 304:
            if cached is None:
                raise _SourceFailed("HTTP 304 Not Modified for an unconditional request")
            return self._not_modified(url, response, cached)
        if status == 429 or status >= 500:
            raise _SourceFailed(
                _status_text(response),
                retryable=True,
                retry_after=_retry_after_seconds(response.headers.get("Retry-After")),
            )
        if status != 200:
            raise _SourceFailed(_status_text(response))
        declared = response.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise _SourceFailed(
                f"body exceeds the size cap of {self.max_bytes} bytes (Content-Length: {declared})"
            )
        staged = _stage(
            response.iter_bytes(CHUNK_SIZE),
            self.cache_dir,
            content_type=response.headers.get("Content-Type"),
            max_bytes=self.max_bytes,
        )
        _check_pin(self.spec, staged)
        path = _install(staged, self.cache_dir)
        etag = response.headers.get("ETag")
        last_modified = response.headers.get("Last-Modified")
        _write_sidecar(
            sidecar_path(self.cache_dir, url),
            url=url,
            key=self.spec.key,
            sha256=staged.sha256,
            bytes=staged.size,
            etag=etag,
            last_modified=last_modified,
        )
        return FetchResult(
            key=self.spec.key,
            path=path,
            sha256=staged.sha256,
            bytes=staged.size,
            source=f"download:{url}",
            etag=etag,
            last_modified=last_modified,
        )

    def _not_modified(
        self, url: str, response: httpx.Response, cached: tuple[Path, dict[str, Any]]
    ) -> FetchResult:
        path, meta = cached
        try:
            actual = sha256_file(path)
        except OSError:
            raise _CacheInvalid() from None
        if actual != meta["sha256"]:
            logger.warning("%s: cached %s is corrupt; downloading again", self.spec.key, path)
            _remove_quietly(path)
            raise _CacheInvalid()
        etag = response.headers.get("ETag") or meta.get("etag")
        last_modified = response.headers.get("Last-Modified") or meta.get("last_modified")
        size = path.stat().st_size
        _write_sidecar(
            sidecar_path(self.cache_dir, url),
            url=url,
            key=self.spec.key,
            sha256=actual,
            bytes=size,
            etag=etag,
            last_modified=last_modified,
        )
        return FetchResult(
            key=self.spec.key,
            path=path,
            sha256=actual,
            bytes=size,
            source=f"cache:{url}",
            etag=etag,
            last_modified=last_modified,
        )


# ----------------------------------------------------------------------- the store, verified

# The PDF store's files verified to hash to their name, each with the (size, mtime, inode) it
# had then (``<store>/.verified.json``): a file not touched since is not read again. A run reads
# every document's PDF to check its pin; a state of 10,000 documents is ~1 GB a run (issue 46).
# A file changed in any way a stat shows (written, replaced, truncated) is hashed again, as git
# trusts its index.
VERIFIED_FILE = ".verified.json"
_verified: dict[Path, dict[str, list[int]]] = {}
_unsaved: set[Path] = set()


def _stat_key(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _verified_memo(store: Path) -> dict[str, list[int]]:
    if store not in _verified:
        try:
            loaded = json.loads((store / VERIFIED_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = {}
        _verified[store] = loaded if isinstance(loaded, dict) else {}
    return _verified[store]


def stored_copy_is_pinned(path: Path, sha256: str) -> bool:
    """Whether the store's ``path`` hashes to ``sha256``: read unless it was verified before
    and its size, mtime and inode are what they were then."""
    memo = _verified_memo(path.parent)
    key = _stat_key(path)
    if memo.get(path.name) == key:
        return True
    if sha256_file(path) != sha256:
        memo.pop(path.name, None)
        return False
    memo[path.name] = key
    _unsaved.add(path.parent)
    return True


def save_verified() -> None:
    """Write what this process verified to each store's :data:`VERIFIED_FILE` (merged with
    what another process wrote meanwhile; a store that cannot be written to is hashed again
    next time)."""
    for store in sorted(_unsaved):
        memo = _verified[store]
        try:
            on_disk = json.loads((store / VERIFIED_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            on_disk = {}
        merged = {**(on_disk if isinstance(on_disk, dict) else {}), **memo}
        with contextlib.suppress(OSError):
            tmp = store / f".{VERIFIED_FILE}.{os.getpid()}.tmp"
            tmp.write_text(json.dumps(merged), encoding="utf-8")
            os.replace(tmp, store / VERIFIED_FILE)
    _unsaved.clear()


# ------------------------------------------------------------------------------------ public


def fetch_document(
    spec: DocumentSpec,
    *,
    mirror_dirs: Sequence[Path | str],
    cache_dir: Path | str,
    client: httpx.Client | None = None,
    offline: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = 30,
    retries: int = 3,
    backoff: float = 0.5,
) -> FetchResult:
    """Get a verified copy of ``spec``'s PDF at ``cache_dir/<sha256>.pdf``.

    Tries the mirror dirs in order, then (unless ``offline``) each download URL. ``retries`` is
    the number of extra attempts per URL for transient failures, waiting ``backoff * 2**n``
    seconds between them. A passed-in ``client`` is used as is and not closed.

    Raises ``FetchError`` naming the document and every source's failure.
    """
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be > 0, got {max_bytes}")
    cache = Path(cache_dir)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(spec.key, f"cannot create cache dir {cache}: {exc}") from exc
    failures: list[str] = []

    stored = cache / f"{spec.sha256}.pdf" if spec.sha256 else None
    if stored is not None and spec.filename == stored.name and stored.is_file():
        # A document added with `civicsetu documents add` lives only in the store.
        if stored_copy_is_pinned(stored, str(spec.sha256)):
            size = stored.stat().st_size
            return FetchResult(key=spec.key, path=stored, sha256=str(spec.sha256), bytes=size,
                               source="store")  # fmt: skip
        failures.append(f"store:{stored}: the stored copy no longer hashes to its pin")

    mirrors = [Path(d) for d in mirror_dirs]
    if mirrors and not spec.filename:
        failures.append("mirrors: the registry gives no filename to look for")
    elif spec.filename:
        for mirror in mirrors:
            try:
                result = _from_mirror(spec, mirror, cache)
            except _SourceFailed as exc:
                failures.append(f"mirror:{mirror}: {exc}")
                continue
            logger.info("%s: from %s (%d bytes)", spec.key, result.source, result.bytes)
            return result

    if offline:
        lines = [*failures, *([] if mirrors else ["no mirror dirs configured"])]
        lines += [f"download:{url}: skipped (offline)" for url in spec.download_urls]
        wanted = f" of {spec.filename}" if spec.filename else ""
        raise FetchError(
            spec.key,
            "offline mode: network access is disabled (download URLs not tried) and no mirror "
            f"dir has a valid copy{wanted}" + _bullet_list(lines),
        )

    if spec.download_urls:
        owns_client = client is None
        http = client or httpx.Client(headers={"User-Agent": USER_AGENT})
        try:
            downloader = _Downloader(
                spec,
                http,
                cache,
                max_bytes=max_bytes,
                timeout=timeout,
                retries=retries,
                backoff=backoff,
            )
            for url in spec.download_urls:
                try:
                    result = downloader.fetch(url)
                except _SourceFailed as exc:
                    failures.append(f"download:{url}: {exc}")
                    continue
                logger.info("%s: from %s (%d bytes)", spec.key, result.source, result.bytes)
                return result
        finally:
            if owns_client:
                http.close()

    if not failures and not mirrors:
        raise FetchError(spec.key, "no sources: no mirror dirs given and no download_urls")
    count = len(failures)
    if not mirrors:
        failures.insert(0, "(no mirror dirs configured)")
    raise FetchError(spec.key, f"all {count} source(s) failed" + _bullet_list(failures))


def _bullet_list(items: Sequence[str]) -> str:
    return "".join(f"\n  - {item}" for item in items)
