"""Files: written for people to read (pictures, reports, exports), all or nothing; hashed;
and the project's versioned YAML data files read."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

# libyaml's loader when PyYAML was built with it (10x faster: the data files are read on every
# question), else the pure-Python one; both safe.
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically: a temporary file in the same directory (created if
    missing), fsync, rename. A reader never sees half a file; a failure leaves the old one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), 0o644)  # mkstemp's 0600 would hide it from others
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_data_yaml(path: Path, key: str, schema_version: int = 1) -> Any:
    """The ``key`` entry of a versioned YAML data file (``schema_version`` and ``key`` at top
    level); ``ValueError`` naming the file when it cannot be read or has another shape."""
    try:
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=SafeLoader)  # noqa: S506
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read {key}: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_version") != schema_version:
        raise ValueError(f"{path}: expected schema_version {schema_version} and {key!r}")
    return data.get(key)


_Model = TypeVar("_Model", bound=BaseModel)


def read_data_entries(path: Path, key: str, model: type[_Model], noun: str) -> list[_Model]:
    """The ``key`` list of a versioned YAML data file, each entry validated as ``model``;
    ``ValueError`` naming the file and the entry (``"<path>: <noun> #3: ..."``)."""
    out = []
    for index, entry in enumerate(read_data_yaml(path, key) or [], start=1):
        try:
            out.append(model.model_validate(entry))
        except ValidationError as exc:
            raise ValueError(f"{path}: {noun} #{index}: {exc}") from None
    return out


@contextlib.contextmanager
def directory_lock(path: Path) -> Iterator[None]:
    """Exclusive across threads and processes while the block runs: an ``flock`` on the
    directory ``path`` itself (created if missing), so no lock file is left in it."""
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


@functools.cache
def code_hash() -> str:
    """sha256 over the package's Python sources, SQL migrations and registry data: what a
    materialization's fingerprint and an answer kept between evaluations are valid for."""
    from civicsetu_pipelines.base.settings import PACKAGE_DIR, REPO_ROOT

    digest = hashlib.sha256()
    files = sorted(
        [
            *PACKAGE_DIR.rglob("*.py"),
            *PACKAGE_DIR.rglob("*.yaml"),
            *(REPO_ROOT / "sql").glob("*.sql"),
        ]
    )
    for path in files:
        digest.update(str(path.relative_to(REPO_ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
