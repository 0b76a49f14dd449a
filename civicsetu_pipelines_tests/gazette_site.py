"""A gazette listing site for the tests of watched sources (issue 37): a temporary directory
served over HTTP on a local port (``http.server`` in a thread), its ``index.html`` the listing
page; ``/slow...`` answers late."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

SLOW_SECONDS = 6.0  # the slow handler answers after this (a test's timeout is shorter)


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - the base's name
        if self.path.startswith("/slow"):
            time.sleep(SLOW_SECONDS)
        super().do_GET()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A directory served over HTTP on a local port, and its base URL."""
    root = tmp_path / "site"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


_STAMPS = itertools.count(1)


def listing(root: Path, *hrefs: str) -> None:
    """Write the listing page, its Last-Modified moved on (the server answers a conditional
    GET to the second: a page rewritten within one second would look unchanged)."""
    page = root / "index.html"
    links = "\n".join(f'<li><a href="{h}">{h}</a></li>' for h in hrefs)
    page.write_text(f"<html><body><h1>Gazette</h1><ul>{links}</ul></body></html>")
    stamp = time.time() + 10 * next(_STAMPS)
    os.utime(page, (stamp, stamp))
