"""The Celery broker: any URL given by ``CIVICSETU_CELERY_BROKER_URL``, or the project's own
Redis server (Debian's ``redis-server``) on loopback under the state directory.

The embedded Redis is started by ``civicsetu workers start`` and stopped with the workers. It
listens on 127.0.0.1 only, on a port chosen when it starts, keeps nothing on disk (a broker's
queue is rebuilt by the next run) and records its URL in ``<state>/run/redis.json`` so that
``civicsetu materialize --executor celery`` in another shell finds it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from civicsetu_pipelines.base import (
    ENV_CELERY_BROKER_URL,
    Settings,
    env_value,
    process_alive,
    run_dir,
    write_atomic,
)

START_TIMEOUT_S = 15.0


class BrokerError(RuntimeError):
    """The broker cannot be started or reached; the message names its URL."""


def redact(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def reachable(url: str, timeout: float = 2.0) -> bool:
    """Whether a TCP connection to the broker's host and port opens (a Redis or AMQP URL)."""
    parts = urlsplit(url)
    default_port = {"redis": 6379, "rediss": 6380, "amqp": 5672, "pyamqp": 5672}.get(
        parts.scheme, 6379
    )
    try:
        with socket.create_connection((parts.hostname or "localhost", parts.port or default_port),
                                      timeout=timeout):  # fmt: skip
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class EmbeddedRedis:
    """The project's Redis for one state directory (``<state>/redis``, URL in
    ``<state>/run/redis.json``)."""

    state_dir: Path

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbeddedRedis:
        return cls(settings.state_dir)

    @property
    def data_dir(self) -> Path:
        return self.state_dir / "redis"

    @property
    def record(self) -> Path:
        return run_dir(self.state_dir) / "redis.json"

    def url(self) -> str | None:
        """The URL of the running server, or None when none runs for this state directory."""
        try:
            info = json.loads(self.record.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if not process_alive(int(info["pid"])) or not reachable(info["url"], timeout=0.5):
            return None
        return str(info["url"])

    def command(self, port: int) -> list[str]:
        binary = shutil.which("redis-server")
        if binary is None:
            raise BrokerError(
                "redis-server is not installed (Debian: apt-get install redis-server; "
                "scripts/setup.sh installs it), and CIVICSETU_CELERY_BROKER_URL is not set"
            )
        return [
            binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(self.data_dir),
            "--save", "", "--appendonly", "no", "--protected-mode", "yes",
            "--logfile", str(self.data_dir / "redis.log"), "--daemonize", "no",
        ]  # fmt: skip

    def start(self) -> tuple[subprocess.Popen[bytes], str]:
        """Start the server in a session of its own; returns the process and its URL once it
        accepts connections. The caller stops it (``services.stop_session``)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.record.parent.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        url = f"redis://127.0.0.1:{port}/0"
        process = subprocess.Popen(
            self.command(port), start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not reachable(url, timeout=0.2):
            if process.poll() is not None or time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                log = self.data_dir / "redis.log"
                tail = log.read_text(errors="replace")[-400:] if log.is_file() else ""
                raise BrokerError(f"redis-server did not start on {url}: {tail.strip()}")
            time.sleep(0.05)
        write_atomic(self.record, json.dumps({"pid": process.pid, "url": url}).encode())
        return process, url

    def forget(self) -> None:
        """Remove the record of a stopped server."""
        self.record.unlink(missing_ok=True)


def broker_url(settings: Settings | None = None) -> str:
    """The broker to use: ``CIVICSETU_CELERY_BROKER_URL``, else the embedded Redis of the state
    directory if it runs. Raises :class:`BrokerError` when there is none."""
    explicit = env_value(ENV_CELERY_BROKER_URL, "")
    if explicit:
        return explicit
    settings = settings or Settings.from_env()
    running = EmbeddedRedis.from_settings(settings).url()
    if running is None:
        raise BrokerError(
            "no Celery broker: start workers with `civicsetu workers start` (which starts the "
            f"embedded Redis of {settings.state_dir}) or set {ENV_CELERY_BROKER_URL}"
        )
    return running


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
