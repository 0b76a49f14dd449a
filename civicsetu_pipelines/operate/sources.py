"""Sources as data: gazette listing pages and drop folders watched for new PDFs (issue 37).

Pure domain code (no Dagster): ``civicsetu sources add | list | remove`` keep the sources in
``<state>/registry/sources.yaml`` (beside the user registry of ``civicsetu documents add``);
:func:`watch_once` is one tick of the watcher, what ``civicsetu watch --once`` runs and what the
sensor runs on its interval:

* a **listing** source (an HTTP(S) page) is fetched with a conditional GET (its ETag and
  Last-Modified remembered), under a timeout and a size cap; its PDF links are the ``<a href>``
  whose path ends ``.pdf`` or that say ``type="application/pdf"`` (sure: anything else they
  serve is a failure) and the others whose address mentions ``pdf`` (a ``download?file=``:
  tried, and passed over quietly when they serve no PDF), resolved against the page;
* a **folder** source is a local directory a person or a script drops PDFs into; a file is new
  while its name and sha256 have not been seen;
* each new link is downloaded (timeout, size cap, the ``%PDF-`` signature, sha256) into the
  content-addressed PDF store, with a politeness delay between two requests to one host;
* a PDF whose sha256 is already registered (or pending) is skipped: the same notification under
  two addresses is one document;
* the others are identified from their own words by
  :func:`~civicsetu_pipelines.ingest.add_document` (kind, title, date, what they amend or
  repeal) and registered as data; one it cannot identify, or reads a field of with low
  confidence only, goes to the pending list (``<state>/registry/pending.json``) with the
  reason, for ``civicsetu documents accept KEY [--kind ...]`` (no network: the PDF is in the
  store).

Every failure (an HTTP error, a timeout, an HTML page served as a PDF, an oversized file) is
named in the tick's result and registers nothing; one bad link never stops the others. A link
that failed is tried again on the next ticks, :data:`MAX_ATTEMPTS` times in all. A link that
disappears from a listing removes nothing. What each source has seen (links, sha256s, its
validators) is kept in ``<state>/registry/sources_state.json``; every file here is written
atomically, and a tick holds a lock on the registry directory.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, urldefrag, urljoin, urlsplit

import httpx
import yaml

from civicsetu_pipelines.base import (
    Settings,
    UnknownJurisdictionError,
    directory_lock,
    jurisdiction_code,
    pdf_cache_dir,
    write_atomic,
)
from civicsetu_pipelines.ingest import Added, AddError, add_document, load_registry
from civicsetu_pipelines.operate.gazette_watch import FileInFluxError, file_sha256, http_client

SCHEMA_VERSION = 1
PDF_MAGIC = b"%PDF-"
MAGIC_WINDOW = 1024
MAX_ATTEMPTS = 3  # a link that fails this many ticks running is given up (named once more)
_CHUNK = 64 * 1024

# The outcomes of one link in a tick
REGISTERED = "registered"
PENDING = "pending"
SKIPPED = "skipped"
FAILED = "failed"


class SourceError(ValueError):
    """A source that cannot be added, found or removed, or a pending document not found; the
    message is one line."""


@dataclass(frozen=True)
class WatchLimits:
    """How politely and how far a tick reaches: ``timeout`` seconds for each request to
    connect and between two reads, ``max_listing_bytes`` and ``max_pdf_bytes`` caps on what is
    read, ``delay`` seconds at least between two requests to one host, at most
    ``max_downloads`` PDFs downloaded a tick (the rest wait for the next), and
    ``max_download_seconds`` for one download whole."""

    timeout: float = 30.0
    max_listing_bytes: int = 5 * 2**20
    max_pdf_bytes: int = 100 * 2**20
    delay: float = 1.0
    max_downloads: int = 50
    max_download_seconds: float = 300.0


SEVERAL = "*"  # a source that serves several jurisdictions (a ministry's or a portal's page)


@dataclass(frozen=True)
class Source:
    """A listing page (``url``) or a drop folder (``folder``) of one jurisdiction, or of
    several (``jurisdiction`` :data:`SEVERAL`: each PDF's is read from its own words)."""

    id: str
    jurisdiction: str
    url: str | None = None
    folder: str | None = None
    added: str = ""

    @property
    def kind(self) -> str:
        return "listing" if self.url else "folder"

    @property
    def location(self) -> str:
        return self.url or self.folder or ""

    def entry(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v}


@dataclass(frozen=True)
class Pending:
    """A PDF found by a source that could not be registered with confidence: ``key`` (the
    first 12 hex digits of its sha256) for ``documents accept``, where it came from, why."""

    key: str
    source: str
    source_url: str
    jurisdiction: str
    sha256: str
    file: str
    reason: str
    found_at: str
    read: dict[str, str] = field(default_factory=dict)  # what was read: kind, title, date


@dataclass(frozen=True)
class LinkOutcome:
    """What became of one link (or dropped file) in a tick."""

    source: str
    url: str
    outcome: str  # registered | pending | skipped | failed
    reason: str
    jurisdiction: str
    key: str | None = None  # the registered document's key, or the pending key
    sha256: str | None = None


@dataclass(frozen=True)
class SourceCheck:
    """How one source was read in a tick: ``status`` ok, not_modified (HTTP 304), failed or
    offline; its PDF links (or files) and how many were new."""

    source: str
    jurisdiction: str
    location: str
    status: str
    links: int = 0
    new: int = 0
    error: str | None = None


@dataclass
class WatchTick:
    """What one tick found, registered, set pending, skipped and failed, and the jurisdictions
    whose registry changed (to materialize)."""

    sources: list[SourceCheck] = field(default_factory=list)
    outcomes: list[LinkOutcome] = field(default_factory=list)
    seconds: float = 0.0

    def of(self, outcome: str) -> list[LinkOutcome]:
        return [o for o in self.outcomes if o.outcome == outcome]

    @property
    def registered(self) -> list[LinkOutcome]:
        return self.of(REGISTERED)

    @property
    def pending(self) -> list[LinkOutcome]:
        return self.of(PENDING)

    @property
    def skipped(self) -> list[LinkOutcome]:
        return self.of(SKIPPED)

    @property
    def failed(self) -> list[LinkOutcome]:
        return self.of(FAILED)

    @property
    def changed(self) -> list[str]:
        return sorted({o.jurisdiction for o in self.registered})

    def to_dict(self) -> dict[str, Any]:
        return {
            "changed": self.changed,
            "registered": [asdict(o) for o in self.registered],
            "pending": [asdict(o) for o in self.pending],
            "skipped": [asdict(o) for o in self.skipped],
            "failed": [asdict(o) for o in self.failed],
            "sources": [asdict(s) for s in self.sources],
            "seconds": round(self.seconds, 2),
        }


# ------------------------------------------------------------------------------ files


def registry_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "registry"


def sources_path(state_dir: Path) -> Path:
    """``<state>/registry/sources.yaml``: the watched sources."""
    return registry_dir(state_dir) / "sources.yaml"


def sources_state_path(state_dir: Path) -> Path:
    """``<state>/registry/sources_state.json``: what each source has seen."""
    return registry_dir(state_dir) / "sources_state.json"


def pending_path(state_dir: Path) -> Path:
    """``<state>/registry/pending.json``: PDFs found but not registered."""
    return registry_dir(state_dir) / "pending.json"


def load_sources(state_dir: Path) -> list[Source]:
    path = sources_path(state_dir)
    if not path.is_file():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise SourceError(f"{path}: expected schema_version {SCHEMA_VERSION} and sources")
    try:
        return [Source(**entry) for entry in data.get("sources") or []]
    except TypeError as exc:
        raise SourceError(f"{path}: a source of another shape: {exc}") from None


def _write_sources(state_dir: Path, sources: Sequence[Source]) -> None:
    header = ("# Sources watched by `civicsetu watch` (listing pages and drop folders); edit "
              "with `civicsetu sources add | remove`.\n")  # fmt: skip
    body = yaml.safe_dump({"schema_version": SCHEMA_VERSION,
                           "sources": [s.entry() for s in sources]},
                          sort_keys=False, allow_unicode=True)  # fmt: skip
    write_atomic(sources_path(state_dir), (header + body).encode("utf-8"))


def _read_json(path: Path, default: Any) -> Any:
    if not path.is_file():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SourceError(f"{path}: not JSON ({exc}); remove it to start over") from None


def _write_json(path: Path, data: Any) -> None:
    write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def _load_state(state_dir: Path) -> dict[str, dict[str, Any]]:
    data = _read_json(sources_state_path(state_dir), {})
    sources = data.get("sources") if isinstance(data, dict) else None
    return sources if isinstance(sources, dict) else {}


def _save_state(state_dir: Path, sources: dict[str, dict[str, Any]]) -> None:
    _write_json(sources_state_path(state_dir), {"v": SCHEMA_VERSION, "sources": sources})


def load_pending(state_dir: Path) -> list[Pending]:
    return [Pending(**e) for e in _read_json(pending_path(state_dir), [])]


def _save_pending(state_dir: Path, pending: Sequence[Pending]) -> None:
    _write_json(pending_path(state_dir), [asdict(p) for p in pending])


# ------------------------------------------------------------------------------ sources


def _is_url(text: str) -> bool:
    return urlsplit(text).scheme in ("http", "https")


def add_source(location: str, *, jurisdiction: str | None, state_dir: Path) -> Source:
    """Add a listing page (an http(s) URL) or a drop folder (an existing directory) of
    ``jurisdiction``, or of several when it is None (each PDF's jurisdiction is then read from
    its own words); :class:`SourceError` for an unknown jurisdiction, a location that is
    neither, or one already watched."""
    try:
        code = jurisdiction_code(jurisdiction) if jurisdiction is not None else SEVERAL
    except UnknownJurisdictionError as exc:
        raise SourceError(str(exc)) from None
    if _is_url(location):
        if not urlsplit(location).netloc or any(ch.isspace() for ch in location):
            raise SourceError(f"{location!r} is not an absolute http(s) URL")
        url, folder = location, None
    else:
        path = Path(location.removeprefix("file://")).expanduser().resolve()
        if not path.is_dir():
            raise SourceError(f"{location}: neither an http(s) URL nor an existing folder")
        url, folder = None, str(path)
    where = url or folder or ""
    sources = load_sources(state_dir)
    for source in sources:
        if source.location == where:
            raise SourceError(f"{where} is already watched as source {source.id!r} "
                              f"({source.jurisdiction})")  # fmt: skip
    prefix = "several" if code == SEVERAL else code.lower()
    source_id = f"{prefix}_{hashlib.sha256(where.encode()).hexdigest()[:8]}"
    source = Source(source_id, code, url=url, folder=folder, added=dt.date.today().isoformat())
    with directory_lock(registry_dir(state_dir)):
        _write_sources(state_dir, [*sources, source])
    return source


def find_source(id_or_location: str, state_dir: Path) -> Source:
    sources = load_sources(state_dir)
    wanted = {id_or_location, id_or_location.rstrip("/")}
    if not _is_url(id_or_location):  # a folder, named as it was added or otherwise
        wanted.add(str(Path(id_or_location.removeprefix("file://")).expanduser().resolve()))
    for source in sources:
        if source.id in wanted or source.location in wanted or \
                source.location.rstrip("/") in wanted:  # fmt: skip
            return source
    known = ", ".join(s.id for s in sources) or "none"
    raise SourceError(f"no source {id_or_location!r} (sources: {known})")


def remove_source(id_or_location: str, *, state_dir: Path) -> Source:
    """Stop watching a source (its id, URL or folder) and forget what it had seen; the documents
    it registered stay registered."""
    source = find_source(id_or_location, state_dir)
    with directory_lock(registry_dir(state_dir)):
        _write_sources(state_dir, [s for s in load_sources(state_dir) if s.id != source.id])
        state = _load_state(state_dir)
        if state.pop(source.id, None) is not None:
            _save_state(state_dir, state)
    return source


def source_summaries(state_dir: Path) -> list[dict[str, Any]]:
    """Each source with what it has seen: for ``civicsetu sources list``."""
    state = _load_state(state_dir)
    rows = []
    for source in load_sources(state_dir):
        seen = state.get(source.id, {})
        outcomes = [v.get("outcome") for v in (seen.get("seen") or {}).values()]
        rows.append({**source.entry(), "kind": source.kind, "location": source.location,
                     "checked_at": seen.get("checked_at"), "seen": len(outcomes),
                     "registered": outcomes.count(REGISTERED),
                     "failing": len(seen.get("failures") or {})})  # fmt: skip
    return rows


# ------------------------------------------------------------------------------ one tick


class _Failed(Exception):
    """One link or listing failed; the message says why. ``quiet``: a link only guessed at (no
    ``.pdf``) that serves no PDF, passed over rather than failed."""

    def __init__(self, message: str, *, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


class _Pacer:
    """At least ``delay`` seconds between two requests to one host."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.last: dict[str, float] = {}

    def wait(self, url: str) -> None:
        host = urlsplit(url).netloc.lower()
        if host in self.last:
            remaining = self.last[host] + self.delay - time.monotonic()
            if remaining > 0:
                time.sleep(remaining)
        self.last[host] = time.monotonic()


class _Links(HTMLParser):
    """The ``<a href>`` (and ``<area href>``) of a page with their ``type``, and its
    ``<base href>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k.lower(): (v or "") for k, v in attrs}
        if tag == "base" and values.get("href") and self.base is None:
            self.base = values["href"].strip()
        elif tag in ("a", "area") and values.get("href"):
            self.links.append((values["href"].strip(), values.get("type", "").lower()))


def pdf_links(html: str, page_url: str) -> list[tuple[str, bool]]:
    """The PDF links of a listing page, absolute, in page order, each once: ``(url, sure)``;
    ``sure`` when the path ends ``.pdf`` or the link says ``type="application/pdf"``, not when
    only its address mentions ``pdf`` (tried: it may serve one)."""
    parser = _Links()
    with contextlib.suppress(Exception):  # a broken page gives the links read before the break
        parser.feed(html)
        parser.close()
    base = urljoin(page_url, parser.base) if parser.base else page_url
    found: dict[str, bool] = {}
    for href, kind in parser.links:
        url = _clean_url(urljoin(base, href))
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            continue
        sure = parts.path.lower().endswith(".pdf") or kind == "application/pdf"
        if sure or "pdf" in url.lower():
            found[url] = found.get(url, False) or sure
    return list(found.items())


def _clean_url(url: str) -> str:
    """Without its fragment, spaces and other unsafe characters percent-encoded (the registry
    takes no whitespace in a URL)."""
    return quote(urldefrag(url)[0].strip(), safe=":/?#[]@!$&'()*+,;=%~")


def watch_once(
    settings: Settings,
    *,
    jurisdictions: Iterable[str] | None = None,
    client: httpx.Client | None = None,
    limits: WatchLimits | None = None,
    progress: Callable[[str], None] | None = None,
) -> WatchTick:
    """One tick over the sources (those of ``jurisdictions`` only, when given): what each found,
    registered, set pending, skipped and failed, and the jurisdictions whose registry changed.
    It materializes nothing: the caller runs the jurisdictions in ``tick.changed``.

    ``settings.state_dir`` must be the state directory of ``CIVICSETU_STATE_DIR`` (the registry
    a document is registered in is read from there). Under ``settings.offline``, listing pages
    are not fetched (named ``offline``); folders are still read."""
    if Settings.from_env().state_dir != Path(settings.state_dir).resolve():
        raise SourceError(f"watch_once: settings.state_dir {settings.state_dir} is not the "
                          f"state directory of CIVICSETU_STATE_DIR "
                          f"({Settings.from_env().state_dir})")  # fmt: skip
    started = time.monotonic()
    limits = limits or WatchLimits()
    try:
        wanted = {jurisdiction_code(j) for j in jurisdictions} if jurisdictions else None
    except UnknownJurisdictionError as exc:
        raise SourceError(str(exc)) from None
    state_dir = Path(settings.state_dir)
    tick = WatchTick()
    own_client = client is None
    http = client if client is not None else http_client()
    try:
        with directory_lock(registry_dir(state_dir)):
            run = _Tick(settings, state_dir, http, limits, tick, progress)
            for source in load_sources(state_dir):
                if wanted is None or source.jurisdiction in wanted:  # several: unfiltered only
                    run.source(source)
    finally:
        if own_client:
            http.close()
    tick.seconds = time.monotonic() - started
    return tick


class _Tick:
    """The work of one tick; the state is saved after each source."""

    def __init__(
        self,
        settings: Settings,
        state_dir: Path,
        http: httpx.Client,
        limits: WatchLimits,
        tick: WatchTick,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.settings = settings
        self.state_dir = state_dir
        self.http = http
        self.limits = limits
        self.tick = tick
        self.progress = progress or (lambda _line: None)
        self.pacer = _Pacer(limits.delay)
        self.state = _load_state(state_dir)
        self.store = pdf_cache_dir(state_dir)
        self.downloads = 0

    # -- sources

    def source(self, source: Source) -> None:
        memory = self.state.setdefault(source.id, {})
        memory.setdefault("seen", {})
        memory.setdefault("failures", {})
        try:
            if source.url:
                self._listing(source, memory)
            else:
                self._folder(source, memory)
        finally:
            memory["checked_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            _save_state(self.state_dir, self.state)

    def _check(self, source: Source, status: str, **fields: Any) -> None:
        self.tick.sources.append(SourceCheck(source.id, source.jurisdiction, source.location,
                                             status, **fields))  # fmt: skip

    def _listing(self, source: Source, memory: dict[str, Any]) -> None:
        assert source.url is not None
        if self.settings.offline:
            self._check(source, "offline", error="CIVICSETU_OFFLINE is set: not fetched")
            return
        self.progress(f"{source.id}: reading {source.url}")
        try:
            links = self._read_listing(source.url, memory)
        except _Failed as exc:
            self._check(source, "failed", error=str(exc))
            return
        status = "ok" if links is not None else "not_modified"
        known = [(u, bool(s)) for u, s in memory.get("links", [])]
        if links is not None:
            memory["links"] = [[u, s] for u, s in links]
        else:
            links = known
        new = [(u, s) for u, s in links if u not in memory["seen"]]
        self._check(source, status, links=len(links), new=len(new))
        for url, sure in new:
            self._link(source, memory, url, sure)

    def _read_listing(self, url: str, memory: dict[str, Any]) -> list[tuple[str, bool]] | None:
        """The PDF links of the page; None when it is unchanged (HTTP 304)."""
        headers = {}
        if memory.get("etag"):
            headers["If-None-Match"] = memory["etag"]
        if memory.get("last_modified"):
            headers["If-Modified-Since"] = memory["last_modified"]
        self.pacer.wait(url)
        try:
            with self.http.stream("GET", url, headers=headers, follow_redirects=True,
                                  timeout=self.limits.timeout) as response:  # fmt: skip
                if response.status_code == 304:
                    return None
                if response.status_code != 200:
                    raise _Failed(f"listing {url}: {_status(response)}")
                body = _read_capped(response, self.limits.max_listing_bytes, "listing",
                                    self.limits.max_download_seconds)  # fmt: skip
                final = str(response.url)
                kind = response.headers.get("Content-Type", "")
                memory["etag"] = response.headers.get("ETag")
                memory["last_modified"] = response.headers.get("Last-Modified")
        except httpx.HTTPError as exc:
            raise _Failed(f"listing {url}: {_http_error(exc, self.limits.timeout)}") from None
        if "pdf" in kind.lower() or body[:MAGIC_WINDOW].lstrip().startswith(PDF_MAGIC):
            return [(final, True)]  # the "listing" is one PDF
        return pdf_links(body.decode(response.encoding or "utf-8", errors="replace"), final)

    def _folder(self, source: Source, memory: dict[str, Any]) -> None:
        folder = Path(source.folder or "")
        if not folder.is_dir():
            self._check(source, "failed", error=f"{folder}: no such folder")
            return
        files = sorted(p for p in folder.iterdir()
                       if p.suffix.lower() == ".pdf" and not p.name.startswith(".")
                       and p.is_file())  # fmt: skip
        fresh: list[tuple[Path, str | None]] = []
        for path in files:
            try:
                sha = file_sha256(path)
            except FileInFluxError:
                sha = None  # being written: named, and looked at again next tick
            except OSError as exc:
                self._outcome(source, str(path), FAILED, f"cannot be read: {exc}")
                continue
            if sha is None or f"{path.name}@{sha}" not in memory["seen"]:
                fresh.append((path, sha))
        self._check(source, "ok", links=len(files), new=len(fresh))
        for path, sha in fresh:
            if sha is None:
                self._outcome(source, str(path), SKIPPED, "still being written: next tick")
                continue
            seen_as = f"{path.name}@{sha}"
            size = path.stat().st_size
            if size > self.limits.max_pdf_bytes:
                reason = (f"{size} bytes, over the cap of {self.limits.max_pdf_bytes} bytes "
                          "for a PDF")  # fmt: skip
            else:
                with path.open("rb") as handle:
                    reason = _not_a_pdf(handle.read(MAGIC_WINDOW), None)
            if reason:
                self._outcome(source, str(path), FAILED, reason, sha=sha)
                memory["seen"][seen_as] = _seen(FAILED, sha)
                continue
            stored = self.store / f"{sha}.pdf"
            if not stored.is_file():
                write_atomic(stored, path.read_bytes())
            outcome = self._identify(source, str(path), stored, sha, path.as_uri())
            memory["seen"][seen_as] = _seen(outcome, sha)

    # -- links

    def _link(self, source: Source, memory: dict[str, Any], url: str, sure: bool) -> None:
        if self.downloads >= self.limits.max_downloads:
            self._outcome(source, url, SKIPPED, f"deferred to the next tick (at most "
                          f"{self.limits.max_downloads} downloads a tick)")  # fmt: skip
            return
        self.downloads += 1
        self.progress(f"{source.id}: downloading {url}")
        try:
            stored, sha = self._download(url, sure)
        except _Failed as exc:
            if exc.quiet:
                self._outcome(source, url, SKIPPED, str(exc))
                memory["seen"][url] = _seen(SKIPPED, None)
                return
            failures = memory["failures"]
            count = int(failures.get(url, {}).get("count", 0)) + 1
            reason = str(exc)
            if count >= MAX_ATTEMPTS:
                failures.pop(url, None)
                memory["seen"][url] = _seen(FAILED, None)
                reason += f" (failed {count} times: given up; `sources remove` and `add` retry)"
            else:
                failures[url] = {"count": count, "reason": str(exc)}
            self._outcome(source, url, FAILED, reason)
            return
        memory["failures"].pop(url, None)
        memory["seen"][url] = _seen(self._identify(source, url, stored, sha, url), sha)

    def _download(self, url: str, sure: bool) -> tuple[Path, str]:
        """The PDF at ``url`` in the store, and its sha256."""
        cap = self.limits.max_pdf_bytes
        self.pacer.wait(url)
        self.store.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=self.store)
        tmp = Path(name)
        try:
            with os.fdopen(fd, "wb") as out, self.http.stream(
                "GET", url, follow_redirects=True, timeout=self.limits.timeout
            ) as response:  # fmt: skip
                if response.status_code != 200:
                    raise _Failed(_status(response), quiet=not sure)
                kind = response.headers.get("Content-Type")
                length = response.headers.get("Content-Length", "")
                if length.isdigit() and int(length) > cap:
                    raise _Failed(f"{length} bytes (Content-Length), over the cap of {cap} "
                                  "bytes for a PDF")  # fmt: skip
                digest = hashlib.sha256()
                head = b""
                size = 0
                deadline = time.monotonic() + self.limits.max_download_seconds
                for chunk in response.iter_bytes(_CHUNK):
                    if len(head) < MAGIC_WINDOW:
                        head += chunk[: MAGIC_WINDOW - len(head)]
                        if len(head) >= MAGIC_WINDOW and (why := _not_a_pdf(head, kind)):
                            raise _Failed(why, quiet=not sure)
                    size += len(chunk)
                    if size > cap:
                        raise _Failed(f"over the cap of {cap} bytes for a PDF (stopped reading "
                                      f"at {size} bytes)")  # fmt: skip
                    if time.monotonic() > deadline:
                        seconds = self.limits.max_download_seconds
                        raise _Failed(f"still downloading after {seconds:g} s: given up")
                    digest.update(chunk)
                    out.write(chunk)
                if why := _not_a_pdf(head, kind):
                    raise _Failed(why, quiet=not sure)
            sha = digest.hexdigest()
            stored = self.store / f"{sha}.pdf"
            if stored.is_file():
                tmp.unlink()
            else:
                os.chmod(tmp, 0o644)
                os.replace(tmp, stored)
            return stored, sha
        except httpx.HTTPError as exc:
            raise _Failed(_http_error(exc, self.limits.timeout)) from None
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def _identify(self, source: Source, where: str, stored: Path, sha: str, cite: str) -> str:
        """Register the PDF in the store, or set it pending, or skip it as a document already
        registered or pending; the outcome."""
        registered = {s.sha256: s.key for s in load_registry().documents() if s.sha256}
        if sha in registered:
            return self._outcome(source, where, SKIPPED, f"the same content (sha256 "
                                 f"{sha[:12]}…) is registered as {registered[sha]!r}",
                                 key=registered[sha], sha=sha)  # fmt: skip
        pending = {p.sha256: p.key for p in load_pending(self.state_dir)}
        if sha in pending:
            return self._outcome(source, where, SKIPPED, f"the same content (sha256 "
                                 f"{sha[:12]}…) is pending as {pending[sha]!r}",
                                 key=pending[sha], sha=sha)  # fmt: skip
        self.progress(f"{source.id}: identifying {where}")
        given = None if source.jurisdiction == SEVERAL else source.jurisdiction
        try:
            added = self._add(stored, given, cite, dry_run=True)
            doubts = _doubts(added)
            if doubts:
                return self._pend(source, where, stored, sha, cite, doubts, added)
            added = self._add(stored, given, cite, dry_run=False)
        except AddError as exc:
            return self._pend(source, where, stored, sha, cite, _without(str(exc), stored),
                              exc)  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - one document's trouble never stops the tick
            return self._outcome(source, where, FAILED, f"{type(exc).__name__}: {exc}", sha=sha)
        what = (f"{added.spec.doc_type} {added.spec.title!r}, effective from "
                f"{added.spec.effective_date.isoformat()}")  # fmt: skip
        if given is None:
            what += f", of {added.spec.jurisdiction} ({_read_as(added.detection)})"
        return self._outcome(source, where, REGISTERED, what, key=added.spec.key, sha=sha,
                             jurisdiction=str(added.spec.jurisdiction))  # fmt: skip

    def _add(self, stored: Path, jurisdiction: str | None, cite: str, *, dry_run: bool) -> Added:
        return add_document(stored, jurisdiction=jurisdiction, source_url=cite,
                            state_dir=self.state_dir, dry_run=dry_run)  # fmt: skip

    def _pend(
        self, source: Source, where: str, stored: Path, sha: str, cite: str, reason: str,
        read: Added | AddError,
    ) -> str:  # fmt: skip
        detection = read.detection
        shown = {} if detection is None else {
            f.name: _shown(f.value) for f in (detection.kind, detection.title,
                                              detection.effective_from) if f.found}  # fmt: skip
        issuer = detection.jurisdiction if detection is not None else None
        jurisdiction = source.jurisdiction
        if issuer is not None and issuer.found:  # read (with low confidence): a person confirms
            shown["jurisdiction"] = jurisdiction = str(issuer.value)
        entry = Pending(sha[:12], source.id, cite, jurisdiction, sha, str(stored), reason,
                        dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), shown)  # fmt: skip
        _save_pending(self.state_dir, [*load_pending(self.state_dir), entry])
        return self._outcome(source, where, PENDING, reason, key=entry.key, sha=sha,
                             jurisdiction=jurisdiction)  # fmt: skip

    def _outcome(
        self, source: Source, where: str, outcome: str, reason: str, *, key: str | None = None,
        sha: str | None = None, jurisdiction: str | None = None,
    ) -> str:  # fmt: skip
        code = jurisdiction or source.jurisdiction
        self.tick.outcomes.append(LinkOutcome(source.id, where, outcome, reason, code, key, sha))
        return outcome


def _seen(outcome: str, sha: str | None) -> dict[str, Any]:
    return {"outcome": outcome, "sha256": sha,
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}  # fmt: skip


def _read_as(detection: Any) -> str:
    """Where a source serving several read a document's jurisdiction."""
    issuer = getattr(detection, "jurisdiction", None)
    return f"read from {issuer.why()}" if issuer is not None else "given"


def _doubts(added: Added) -> str:
    """Why a document read whole is not registered without a person: a field it took from the
    document's words with low confidence only."""
    detection = added.detection
    if detection is None:
        return ""
    issuer = (detection.jurisdiction,) if detection.jurisdiction is not None else ()
    fields = (*issuer, detection.kind, detection.title, detection.effective_from,
              detection.amends, detection.repeals)  # fmt: skip
    low = [f"the {f.name} {_shown(f.value)!r} ({f.why()})" for f in fields
           if f.found and f.confidence == "low"]  # fmt: skip
    return ("read with low confidence only: " + "; ".join(low)) if low else ""


def _shown(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value)
    return value.isoformat() if isinstance(value, dt.date) else str(value)


def _without(message: str, stored: Path) -> str:
    """``add_document``'s message without the store's path it starts with."""
    return message.removeprefix(f"{stored.resolve()}: ").removeprefix(f"{stored}: ")


def _status(response: httpx.Response) -> str:
    return f"HTTP {response.status_code} {response.reason_phrase}".strip()


def _http_error(exc: httpx.HTTPError, timeout: float) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__}, timeout {timeout:g} s)"
    return f"{type(exc).__name__}: {exc}"


def _read_capped(response: httpx.Response, cap: int, what: str, seconds: float) -> bytes:
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > cap:
        raise _Failed(f"{what} of {length} bytes (Content-Length), over the cap of {cap} bytes")
    body = bytearray()
    deadline = time.monotonic() + seconds
    for chunk in response.iter_bytes(_CHUNK):
        body += chunk
        if len(body) > cap:
            raise _Failed(f"{what} over the cap of {cap} bytes (stopped reading)")
        if time.monotonic() > deadline:
            raise _Failed(f"{what} still downloading after {seconds:g} s: given up")
    return bytes(body)


def _not_a_pdf(head: bytes, content_type: str | None) -> str:
    """Why the first bytes of a file are not a PDF's ("" when they are)."""
    window = head[:MAGIC_WINDOW]
    if PDF_MAGIC in window:
        return ""
    sniff = window.lstrip().lower()
    shown = " ".join(window[:60].decode("utf-8", errors="replace").split())
    if (content_type and "html" in content_type.lower()) or sniff.startswith(
        (b"<!doctype html", b"<html", b"<head", b"<body")
    ):  # fmt: skip
        return (f"an HTML page, not a PDF (Content-Type: {content_type or 'unknown'}; starts "
                f"with {shown!r})")  # fmt: skip
    return (f"not a PDF: no '%PDF-' signature in the first {MAGIC_WINDOW} bytes"
            + (f" (starts with {shown!r})" if window else " (empty)"))  # fmt: skip


# ------------------------------------------------------------------------------ pending


def find_pending(key: str, state_dir: Path) -> Pending:
    """The pending document ``key`` (or a unique prefix of 6 characters or more)."""
    pending = load_pending(state_dir)
    found = [p for p in pending if p.key == key] or (
        [p for p in pending if p.sha256.startswith(key)] if len(key) >= 6 else [])  # fmt: skip
    if len(found) != 1:
        known = ", ".join(p.key for p in pending) or "none"
        raise SourceError(f"{key!r} names {len(found)} pending documents" if found else
                          f"no pending document {key!r} (pending: {known})")  # fmt: skip
    return found[0]


def accept_pending(
    key: str,
    *,
    state_dir: Path,
    kind: str | None = None,
    title: str | None = None,
    effective_from: dt.date | None = None,
    document_key: str | None = None,
    amends: Sequence[str] = (),
    repeals: Sequence[str] = (),
    pages: str | None = None,
    status: str = "in_force",
    jurisdiction: str | None = None,
) -> Added:
    """Register the pending document ``key`` (from the store: no network) with what a person
    gives (``jurisdiction`` overrides the one its source serves, or the one read from a
    source serving several); :class:`~civicsetu_pipelines.ingest.AddError` when it still cannot
    be (it stays pending)."""
    entry = find_pending(key, state_dir)
    chosen = jurisdiction or (None if entry.jurisdiction == SEVERAL else entry.jurisdiction)
    if chosen is None:
        raise SourceError(f"pending {entry.key!r}: its jurisdiction could not be read and its "
                          "source serves several: pass -j J")  # fmt: skip
    stored = Path(entry.file)
    if not stored.is_file():
        raise SourceError(f"pending {entry.key!r}: its PDF {stored} is gone from the store: "
                          f"`documents reject {entry.key}`, then `sources remove` and `add` "
                          "its source to find it again")  # fmt: skip
    with directory_lock(registry_dir(state_dir)):
        added = add_document(stored, jurisdiction=chosen, kind=kind, title=title,
                             key=document_key, effective_from=effective_from, status=status,
                             pages=pages, source_url=entry.source_url, amends=amends,
                             repeals=repeals, state_dir=state_dir)  # fmt: skip
        _save_pending(state_dir, [p for p in load_pending(state_dir) if p.key != entry.key])
    return added


def reject_pending(key: str, *, state_dir: Path) -> Pending:
    """Drop a pending document: it is not registered, and its source does not offer it again
    (the link stays seen)."""
    entry = find_pending(key, state_dir)
    with directory_lock(registry_dir(state_dir)):
        _save_pending(state_dir, [p for p in load_pending(state_dir) if p.key != entry.key])
    return entry
