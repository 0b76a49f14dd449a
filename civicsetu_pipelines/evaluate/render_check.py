"""Checking in headless Chromium that a page renders (pure; no Dagster).

* :data:`RENDER_CHECK_SCRIPT` -- the script a checked page carries (the report's only script,
  kept in ``templates/render_check.js``): it collects script errors, ``console.error`` calls and
  images that did not decode into ``<pre id="render-errors">`` and, on load, sets
  ``<body data-rendered="ok">`` when there was none.
* :func:`check_renders` -- opens a page in headless Chromium and reports what that script found,
  with the console errors in Chromium's log, as a :class:`RenderCheck`.
* :func:`dump_dom` -- one headless-Chromium ``--dump-dom`` run with a throwaway profile and a
  timeout (also used by the Dagster UI tests).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

# The exact text of the page's script: the report's Content-Security-Policy allows it by its
# sha256, so a page must carry it unchanged.
RENDER_CHECK_SCRIPT = (
    resources.files("civicsetu_pipelines.evaluate") / "templates" / "render_check.js"
).read_text(encoding="utf-8")


@dataclass(frozen=True)
class RenderCheck:
    """What :func:`check_renders` found: ``ok`` when the page loaded, every image decoded and
    nothing was reported; ``errors`` otherwise say what went wrong."""

    ok: bool
    errors: list[str] = field(default_factory=list)
    dom_bytes: int = 0
    seconds: float = 0.0


class ChromiumNotFoundError(FileNotFoundError):
    """The Chromium binary that :func:`check_renders` was asked to run is not installed."""

    def __init__(self, binary: str) -> None:
        super().__init__(
            f"Chromium binary {binary!r} was not found on PATH: install it (Debian: "
            f"'apt-get install chromium') or pass chromium= the path of a Chromium binary"
        )
        self.binary = binary


class _DomReader(HTMLParser):
    """The ``data-rendered`` attribute of <body> and the text of <pre id="render-errors">."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rendered: str | None = None
        self.errors_text: list[str] = []
        self.has_errors_element = False
        self._depth = 0  # >0 while inside <pre id="render-errors">

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "body":
            self.rendered = values.get("data-rendered")
        if self._depth:
            self._depth += 1
        elif values.get("id") == "render-errors":
            self.has_errors_element = True
            self._depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.errors_text.append(data)


_CONSOLE = re.compile(
    r':(?P<level>[A-Z]+):CONSOLE[^\]]*\]\s*"(?P<message>.*)", source: (?P<source>.*)$'
)
_CONSOLE_PROBLEMS = ("Uncaught", "Refused to", "Failed to load resource", "Not allowed to load")


def _console_errors(stderr: str) -> list[str]:
    """Console errors in Chromium's log: lines of level ERROR, or uncaught exceptions, blocked
    or failed loads (headless Chromium logs console messages at INFO whatever their level)."""
    out = []
    for line in stderr.splitlines():
        match = _CONSOLE.search(line)
        if match is None:
            continue
        message = match.group("message")
        if match.group("level") == "ERROR" or message.startswith(_CONSOLE_PROBLEMS):
            out.append(f"console: {message} ({match.group('source')})")
    return out


def dump_dom(
    binary: str, url: str, extra_args: Sequence[str], timeout_s: float
) -> tuple[int, bytes, bytes] | None:
    """Run headless Chromium on ``url`` with a throwaway profile and ``--dump-dom``: its exit
    status, stdout (the DOM) and stderr; None when it did not finish within ``timeout_s`` (its
    process group is killed)."""
    with tempfile.TemporaryDirectory(
        prefix="civicsetu-chromium-", ignore_cleanup_errors=True
    ) as profile:
        command = [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            *extra_args,
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ]
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=10)
            return None
    return process.returncode, stdout, stderr


def check_renders(html: Path, chromium: str = "chromium", timeout_s: float = 60) -> RenderCheck:
    """Load ``html`` in headless Chromium and report whether it rendered cleanly.

    Runs ``chromium --headless=new ... --dump-dom file://...`` with a throwaway profile, then
    reads the dumped DOM (``<body data-rendered="ok">`` set by :data:`RENDER_CHECK_SCRIPT`, an
    empty ``<pre id="render-errors">``) and the console errors in Chromium's log. ``ok`` is true
    only when all of that is clean. Raises :class:`ChromiumNotFoundError` (naming the binary)
    when Chromium is not installed and :class:`FileNotFoundError` when ``html`` is missing."""
    binary = shutil.which(chromium)
    if binary is None:
        raise ChromiumNotFoundError(chromium)
    page = Path(html).resolve()
    if not page.is_file():
        raise FileNotFoundError(f"{page}: no such HTML file to check")
    started = time.monotonic()
    dumped = dump_dom(
        binary,
        page.as_uri(),
        ["--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0"],
        timeout_s,
    )
    if dumped is None:
        return RenderCheck(
            False,
            [f"{binary} did not finish within {timeout_s:g} s"],
            0,
            time.monotonic() - started,
        )
    returncode, stdout, stderr = dumped
    seconds = time.monotonic() - started
    dom = stdout.decode("utf-8", errors="replace")
    log = stderr.decode("utf-8", errors="replace")
    errors: list[str] = []
    if returncode != 0:
        tail = " | ".join(log.strip().splitlines()[-3:])
        errors.append(f"{binary} exited with status {returncode}: {tail}")
    reader = _DomReader()
    reader.feed(dom)
    reader.close()
    if not dom.strip():
        errors.append(f"{binary} dumped no DOM for {page}")
    elif not reader.has_errors_element:
        errors.append('the page has no <pre id="render-errors"> (not a report page?)')
    errors += [f"page: {line}" for line in "".join(reader.errors_text).splitlines() if line.strip()]
    errors += _console_errors(log)
    if dom.strip() and reader.rendered != "ok":
        errors.append(
            f"the page did not report rendered=ok (body data-rendered={reader.rendered!r})"
        )
    return RenderCheck(ok=not errors, errors=errors, dom_bytes=len(stdout), seconds=seconds)
