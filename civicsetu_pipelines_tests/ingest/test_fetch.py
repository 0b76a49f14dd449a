"""fetch_document against a real local HTTP server and real files (no mocks of our code)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import pickle
import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest

from civicsetu_pipelines.base.settings import REPO_ROOT
from civicsetu_pipelines.ingest.fetch import (
    SIDECAR_SUFFIX,
    FetchError,
    FetchResult,
    fetch_document,
    sidecar_path,
)
from civicsetu_pipelines.ingest.registry import DocumentSpec, load_registry
from civicsetu_pipelines_tests.ingest.test_registry import running_in_ci

CAP = 64 * 1024  # max_bytes used for the oversize tests
LAST_MODIFIED = "Wed, 01 Nov 2017 00:41:26 GMT"
HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>404 - File or directory not found.</title></head>"
    b"<body><h2>The resource you are looking for might have been removed.</h2></body></html>\n"
)


def _make_pdf(text: str) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), text)
    data: bytes = doc.tobytes()
    doc.close()
    return data


@pytest.fixture(scope="module")
def pdf_bytes() -> bytes:
    return _make_pdf("1. Short title and commencement.- These rules may be called the Test Rules.")


@dataclass
class ServerState:
    pdf: bytes
    hits: Counter[str] = field(default_factory=Counter)
    headers: dict[str, list[dict[str, str]]] = field(default_factory=lambda: defaultdict(list))

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.pdf).hexdigest()[:16] + '"'


class _Handler(BaseHTTPRequestHandler):
    state: ServerState  # set on a per-server subclass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(
        self, status: int, body: bytes = b"", ctype: str = "application/pdf", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        state = self.state
        path = self.path
        state.hits[path] += 1
        state.headers[path].append({k.lower(): v for k, v in self.headers.items()})
        hit = state.hits[path]

        if path == "/doc.pdf":  # ETag + conditional GET
            if self.headers.get("If-None-Match") == state.etag:
                self.send_response(304)
                self.send_header("ETag", state.etag)
                self.end_headers()
                return
            self._send(200, state.pdf, ETag=state.etag, Last_Modified=LAST_MODIFIED)
        elif path == "/lm.pdf":  # Last-Modified only
            if self.headers.get("If-Modified-Since") == LAST_MODIFIED:
                self.send_response(304)
                self.end_headers()
                return
            self._send(200, state.pdf, Last_Modified=LAST_MODIFIED)
        elif path == "/error-page.pdf":  # an HTML error page served with status 200 at a .pdf URL
            self._send(200, HTML_PAGE, ctype="text/html; charset=utf-8")
        elif path == "/garbage.pdf":
            self._send(200, b"\x00\x01binary junk" * 200, ctype="application/octet-stream")
        elif path == "/flaky.pdf":  # 500, then 200
            if hit == 1:
                self._send(500, b"oops", ctype="text/plain")
            else:
                self._send(200, state.pdf)
        elif path == "/always-500.pdf":
            self._send(500, b"oops", ctype="text/plain")
        elif path == "/rate-limited.pdf":  # 429 with Retry-After, then 200
            if hit == 1:
                self._send(429, b"slow down", ctype="text/plain", Retry_After="0")
            else:
                self._send(200, state.pdf)
        elif path == "/big.pdf":  # honest Content-Length over the cap
            self._send(200, b"%PDF-1.7\n" + b"0" * (CAP * 2))
        elif path == "/big-stream.pdf":  # no Content-Length: body ends at connection close
            self.send_response(200)
            self.send_header("Content-Type", "application/pdf")
            self.end_headers()
            try:
                self.wfile.write(b"%PDF-1.7\n")
                for _ in range(8):
                    self.wfile.write(b"0" * (CAP // 2))
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/slow.pdf":
            time.sleep(1.0)
            self._send(200, state.pdf)
        elif path == "/redirect.pdf":
            self.send_response(302)
            self.send_header("Location", "/doc.pdf")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(404, b"not found", ctype="text/plain")


@dataclass
class Server:
    base: str
    state: ServerState

    def url(self, path: str) -> str:
        return f"{self.base}{path}"


@pytest.fixture
def server(pdf_bytes: bytes) -> Iterator[Server]:
    state = ServerState(pdf=pdf_bytes)
    handler = type("Handler", (_Handler,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    host, port = httpd.server_address[:2]
    try:
        yield Server(base=f"http://{host!s}:{port}", state=state)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _spec(urls: list[str], *, sha256: str | None = None, filename: str | None = "doc.pdf"):
    return DocumentSpec.model_validate(
        {
            "key": "test_rules_2016",
            "title": "Test Rules, 2016",
            "jurisdiction": "GUJARAT",
            "doc_type": "rules",
            "effective_date": "2016-10-29",
            "source_url": "https://example.gov.in/test.pdf",
            "download_urls": urls,
            "filename": filename,
            "sha256": sha256,
            "page_ranges": None,
            "language": "eng",
            "status": "in_force",
        }
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _leftovers(cache_dir: Path) -> list[str]:
    """Temp files left behind (writes must be atomic)."""
    return sorted(p.name for p in cache_dir.glob(".tmp-*"))


def _fetch(spec: DocumentSpec, cache_dir: Path, **kwargs: Any) -> FetchResult:
    kwargs.setdefault("mirror_dirs", [])
    kwargs.setdefault("backoff", 0.0)
    return fetch_document(spec, cache_dir=cache_dir, **kwargs)


# ----------------------------------------------------------------------------- downloads


def test_download_stores_a_content_addressed_copy(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    url = server.url("/doc.pdf")
    result = _fetch(_spec([url], sha256=_sha(pdf_bytes)), cache)

    assert result.key == "test_rules_2016"
    assert result.source == f"download:{url}"
    assert result.sha256 == _sha(pdf_bytes)
    assert result.path == cache / f"{_sha(pdf_bytes)}.pdf"
    assert result.path.read_bytes() == pdf_bytes
    assert result.bytes == len(pdf_bytes)
    assert result.etag == server.state.etag
    assert result.last_modified == LAST_MODIFIED
    sidecar = json.loads(sidecar_path(cache, url).read_text(encoding="utf-8"))
    assert sidecar["etag"] == server.state.etag and sidecar["sha256"] == result.sha256
    assert _leftovers(cache) == []
    with pymupdf.open(result.path) as doc:  # the stored file is a real, readable PDF
        assert "Short title" in doc[0].get_text()


def test_unpinned_document_is_downloaded_and_hashed(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    result = _fetch(_spec([server.url("/doc.pdf")], sha256=None), cache)
    assert result.sha256 == _sha(pdf_bytes)


def test_conditional_get_with_etag_reuses_the_cached_file(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    url = server.url("/doc.pdf")
    spec = _spec([url], sha256=_sha(pdf_bytes))
    first = _fetch(spec, cache)
    second = _fetch(spec, cache)

    assert first.source == f"download:{url}"
    assert second.source == f"cache:{url}"
    assert second.path == first.path and second.sha256 == first.sha256
    assert second.etag == server.state.etag
    assert second.bytes == len(pdf_bytes)
    sent = server.state.headers["/doc.pdf"]
    assert "if-none-match" not in sent[0]
    assert sent[1]["if-none-match"] == server.state.etag
    assert sent[1]["if-modified-since"] == LAST_MODIFIED


def test_conditional_get_with_last_modified_only(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    url = server.url("/lm.pdf")
    spec = _spec([url], sha256=_sha(pdf_bytes))
    assert _fetch(spec, cache).etag is None
    second = _fetch(spec, cache)
    assert second.source == f"cache:{url}"
    assert second.last_modified == LAST_MODIFIED
    assert server.state.headers["/lm.pdf"][1]["if-modified-since"] == LAST_MODIFIED


def test_missing_cached_file_means_unconditional_get(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    url = server.url("/doc.pdf")
    spec = _spec([url], sha256=_sha(pdf_bytes))
    first = _fetch(spec, cache)
    first.path.unlink()
    second = _fetch(spec, cache)
    assert second.source == f"download:{url}"
    assert second.path.read_bytes() == pdf_bytes
    assert "if-none-match" not in server.state.headers["/doc.pdf"][1]


def test_corrupt_cached_file_behind_a_304_is_downloaded_again(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    url = server.url("/doc.pdf")
    spec = _spec([url], sha256=_sha(pdf_bytes))
    first = _fetch(spec, cache)
    first.path.write_bytes(b"%PDF-1.7 truncated")
    second = _fetch(spec, cache)
    assert second.source == f"download:{url}"
    assert second.path.read_bytes() == pdf_bytes
    assert server.state.hits["/doc.pdf"] == 3  # first GET, the 304, the fresh GET


def test_redirects_are_followed(server: Server, cache: Path, pdf_bytes: bytes) -> None:
    url = server.url("/redirect.pdf")
    result = _fetch(_spec([url], sha256=_sha(pdf_bytes)), cache)
    assert result.source == f"download:{url}"
    assert server.state.hits["/doc.pdf"] == 1


def test_html_page_at_a_pdf_url_is_rejected(server: Server, cache: Path) -> None:
    url = server.url("/error-page.pdf")
    with pytest.raises(FetchError) as info:
        _fetch(_spec([url]), cache)
    message = str(info.value)
    assert "'test_rules_2016'" in message
    assert "HTML page, not a PDF" in message and "text/html" in message
    assert info.value.key == "test_rules_2016"
    assert list(cache.glob("*.pdf")) == [] and _leftovers(cache) == []
    assert not sidecar_path(cache, url).exists()


def test_non_pdf_bytes_are_rejected(server: Server, cache: Path) -> None:
    with pytest.raises(FetchError, match="not a PDF: no '%PDF-' signature"):
        _fetch(_spec([server.url("/garbage.pdf")]), cache)


def test_500_then_200_is_retried(server: Server, cache: Path, pdf_bytes: bytes) -> None:
    url = server.url("/flaky.pdf")
    result = _fetch(_spec([url], sha256=_sha(pdf_bytes)), cache, retries=3, backoff=0.01)
    assert result.source == f"download:{url}"
    assert server.state.hits["/flaky.pdf"] == 2


def test_429_honours_retry_after_then_succeeds(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    result = _fetch(_spec([server.url("/rate-limited.pdf")]), cache, retries=1)
    assert result.sha256 == _sha(pdf_bytes)
    assert server.state.hits["/rate-limited.pdf"] == 2


def test_persistent_500_gives_up_after_the_retries(server: Server, cache: Path) -> None:
    url = server.url("/always-500.pdf")
    started = time.monotonic()
    with pytest.raises(FetchError) as info:
        _fetch(_spec([url]), cache, retries=2, backoff=0.05)
    elapsed = time.monotonic() - started
    assert server.state.hits["/always-500.pdf"] == 3  # 1 try + 2 retries
    assert elapsed >= 0.05 + 0.1  # exponential backoff: 0.05s, then 0.1s
    assert f"download:{url}: HTTP 500 Internal Server Error (after 3 attempts)" in str(info.value)


def test_404_is_not_retried(server: Server, cache: Path) -> None:
    with pytest.raises(FetchError, match="HTTP 404 Not Found"):
        _fetch(_spec([server.url("/missing.pdf")]), cache, retries=3)
    assert server.state.hits["/missing.pdf"] == 1


def test_body_over_the_cap_is_rejected_by_content_length(server: Server, cache: Path) -> None:
    with pytest.raises(FetchError) as info:
        _fetch(_spec([server.url("/big.pdf")]), cache, max_bytes=CAP)
    assert f"exceeds the size cap of {CAP} bytes (Content-Length: {CAP * 2 + 9})" in str(info.value)
    assert server.state.hits["/big.pdf"] == 1  # not retried
    assert list(cache.iterdir()) == []


def test_streamed_body_over_the_cap_is_cut_off(server: Server, cache: Path) -> None:
    with pytest.raises(FetchError) as info:
        _fetch(_spec([server.url("/big-stream.pdf")]), cache, max_bytes=CAP)
    assert f"exceeds the size cap of {CAP} bytes (stopped after reading" in str(info.value)
    assert list(cache.iterdir()) == []  # the partial temp file was removed


def test_sha_mismatch_names_both_hashes(server: Server, cache: Path, pdf_bytes: bytes) -> None:
    wrong = "0" * 64
    with pytest.raises(FetchError) as info:
        _fetch(_spec([server.url("/doc.pdf")], sha256=wrong), cache)
    message = str(info.value)
    assert f"expected {wrong}" in message and f"got {_sha(pdf_bytes)}" in message
    assert list(cache.glob("*.pdf")) == [] and _leftovers(cache) == []


def test_read_timeout_is_retried_then_reported(server: Server, cache: Path) -> None:
    with pytest.raises(FetchError, match="ReadTimeout.*after 2 attempts"):
        _fetch(_spec([server.url("/slow.pdf")]), cache, timeout=0.2, retries=1)
    assert server.state.hits["/slow.pdf"] == 2


def test_connection_refused_is_retried_then_reported(cache: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/doc.pdf"  # nothing listens here any more
    with pytest.raises(FetchError, match=r"ConnectError.*\(after 2 attempts\)"):
        _fetch(_spec([url]), cache, retries=1)


def test_next_url_is_tried_after_a_failure(server: Server, cache: Path, pdf_bytes: bytes) -> None:
    good = server.url("/doc.pdf")
    result = _fetch(_spec([server.url("/missing.pdf"), good], sha256=_sha(pdf_bytes)), cache)
    assert result.source == f"download:{good}"


def test_a_given_client_is_used_and_left_open(
    server: Server, cache: Path, pdf_bytes: bytes
) -> None:
    with httpx.Client(headers={"User-Agent": "test-agent/1"}) as client:
        result = _fetch(_spec([server.url("/doc.pdf")]), cache, client=client)
        assert not client.is_closed
    assert result.sha256 == _sha(pdf_bytes)
    assert server.state.headers["/doc.pdf"][0]["user-agent"] == "test-agent/1"


# ----------------------------------------------------------------------------- mirrors / offline


def test_mirror_dirs_are_searched_in_order_before_the_network(
    server: Server, tmp_path: Path, cache: Path, pdf_bytes: bytes
) -> None:
    empty, mirror = tmp_path / "empty", tmp_path / "mirror"
    empty.mkdir()
    mirror.mkdir()
    (mirror / "doc.pdf").write_bytes(pdf_bytes)
    spec = _spec([server.url("/doc.pdf")], sha256=_sha(pdf_bytes))

    result = _fetch(spec, cache, mirror_dirs=[tmp_path / "absent", empty, mirror])

    assert result.source == f"mirror:{mirror}"
    assert result.path == cache / f"{_sha(pdf_bytes)}.pdf"
    assert result.path.read_bytes() == pdf_bytes
    assert (result.etag, result.last_modified) == (None, None)
    assert sum(server.state.hits.values()) == 0  # the network was not touched
    assert (mirror / "doc.pdf").exists()  # the mirror is only read
    assert _leftovers(cache) == []


def test_mirror_works_offline(tmp_path: Path, cache: Path, pdf_bytes: bytes) -> None:
    (tmp_path / "doc.pdf").write_bytes(pdf_bytes)
    spec = _spec(["http://127.0.0.1:9/never.pdf"], sha256=_sha(pdf_bytes))
    result = _fetch(spec, cache, mirror_dirs=[tmp_path], offline=True)
    assert result.source == f"mirror:{tmp_path}"


def test_bad_mirror_copy_falls_back_to_download(
    server: Server, tmp_path: Path, cache: Path, pdf_bytes: bytes
) -> None:
    (tmp_path / "doc.pdf").write_bytes(_make_pdf("a different edition"))
    url = server.url("/doc.pdf")
    result = _fetch(_spec([url], sha256=_sha(pdf_bytes)), cache, mirror_dirs=[tmp_path])
    assert result.source == f"download:{url}"
    assert list(cache.glob("*.pdf")) == [result.path]  # the wrong edition was not stored


def test_offline_skips_the_network_and_says_so(server: Server, tmp_path: Path, cache: Path) -> None:
    url = server.url("/doc.pdf")
    with pytest.raises(FetchError) as info:
        _fetch(_spec([url]), cache, mirror_dirs=[tmp_path], offline=True)
    message = str(info.value)
    assert "'test_rules_2016'" in message
    assert "offline mode: network access is disabled" in message
    assert f"mirror:{tmp_path}: doc.pdf not found" in message
    assert f"download:{url}: skipped (offline)" in message
    assert sum(server.state.hits.values()) == 0


def test_every_failed_source_is_listed(
    server: Server, tmp_path: Path, cache: Path, pdf_bytes: bytes
) -> None:
    empty, bad = tmp_path / "empty", tmp_path / "bad"
    empty.mkdir()
    bad.mkdir()
    (bad / "doc.pdf").write_bytes(HTML_PAGE)
    missing, html = server.url("/missing.pdf"), server.url("/error-page.pdf")
    spec = _spec([missing, html], sha256=_sha(pdf_bytes))

    with pytest.raises(FetchError) as info:
        _fetch(spec, cache, mirror_dirs=[empty, bad, tmp_path / "absent"])

    message = str(info.value)
    assert message.startswith("fetch failed for document 'test_rules_2016': all 5 source(s) failed")
    lines = message.splitlines()[1:]
    assert len(lines) == 5
    assert lines[0] == f"  - mirror:{empty}: doc.pdf not found"
    assert lines[1].startswith(f"  - mirror:{bad}: got an HTML page, not a PDF (Content-Type: ")
    assert "'<!DOCTYPE html> <html><head><title>404" in lines[1]
    assert lines[2] == f"  - mirror:{tmp_path / 'absent'}: mirror directory does not exist"
    assert lines[3] == f"  - download:{missing}: HTTP 404 Not Found"
    assert lines[4].startswith(
        f"  - download:{html}: got an HTML page, not a PDF (Content-Type: text/html; charset=utf-8"
    )
    assert list(cache.iterdir()) == []


def test_no_sources_at_all(cache: Path) -> None:
    spec = _spec([], filename="doc.pdf")
    with pytest.raises(FetchError, match="no sources"):
        _fetch(spec, cache, mirror_dirs=[])


def test_fetch_error_pickles_with_its_key() -> None:
    error = pickle.loads(pickle.dumps(FetchError("k", "boom")))
    assert (error.key, error.reason, str(error)) == (
        "k",
        "boom",
        "fetch failed for document 'k': boom",
    )


def test_sidecar_files_live_in_the_cache_dir(server: Server, cache: Path) -> None:
    _fetch(_spec([server.url("/doc.pdf")]), cache)
    assert [p.name.endswith(SIDECAR_SUFFIX) for p in cache.iterdir() if p.suffix == ".json"] == [
        True
    ]


@pytest.mark.corpus
def test_every_default_document_fetches_offline_from_the_corpus_mirror(tmp_path: Path) -> None:
    mirror = REPO_ROOT.parent / "shared" / "corpus" / "pdfs"
    if not mirror.is_dir():
        if running_in_ci():
            pytest.fail(f"CI is set but the corpus mirror {mirror} is missing")
        pytest.skip(f"corpus mirror {mirror} not found (expected ../shared/corpus/pdfs)")
    for spec in load_registry(include_seed=False).documents():
        result = fetch_document(spec, mirror_dirs=[mirror], cache_dir=tmp_path, offline=True)
        assert result.source == f"mirror:{mirror}", spec.key
        assert result.sha256 == spec.sha256
        assert result.path == tmp_path / f"{spec.sha256}.pdf"


def test_a_stored_copy_is_read_to_check_its_pin_only_until_verified_then_when_touched(
    pdf_bytes: bytes, tmp_path: Path
) -> None:
    """A document of the PDF store (`documents add`) is checked against its pin on every run:
    read the first time, then trusted while its size, mtime and inode are unchanged (a state of
    10,000 documents read ~1 GB a run); a copy changed in place is read again and refused."""
    from civicsetu_pipelines.ingest.fetch import VERIFIED_FILE, save_verified

    sha = hashlib.sha256(pdf_bytes).hexdigest()
    store = tmp_path / "pdfs"
    store.mkdir()
    stored = store / f"{sha}.pdf"
    stored.write_bytes(pdf_bytes)
    spec = _spec([], sha256=sha, filename=stored.name)
    first = fetch_document(spec, mirror_dirs=[], cache_dir=store, offline=True)
    assert (first.source, first.sha256) == ("store", sha)
    save_verified()
    memo = json.loads((store / VERIFIED_FILE).read_text())
    assert memo[stored.name][0] == len(pdf_bytes)
    assert fetch_document(spec, mirror_dirs=[], cache_dir=store, offline=True).source == "store"
    # the same size, other bytes, written in place: its stat changed, so it is read and refused
    time.sleep(0.01)
    stored.write_bytes(pdf_bytes[:-8] + b"%%EOF\n\n\n")
    with pytest.raises(FetchError, match="no longer hashes to its pin"):
        fetch_document(spec, mirror_dirs=[], cache_dir=store, offline=True)
