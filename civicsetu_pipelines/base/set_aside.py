"""A document is the unit of failure: an exception while one document is handled, in any
per-document step (parse, structure, amendments, embedding, graph, provisions), sets that
document aside, named with the step, the exception's type, its message and the page where known,
and the step goes on with the other documents. A bug in the pipeline then shows as a named,
set-aside document, never as a failed jurisdiction.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from civicsetu_pipelines.base.errors import DocumentError

T = TypeVar("T")
log = logging.getLogger(__name__)

# The per-document steps, in pipeline order (the ``stage`` of a SetAside).
STAGES = ("parse", "structure", "amendments", "checks", "embedding", "graph", "provisions",
          "akn")  # fmt: skip


@dataclass(frozen=True)
class SetAside:
    """One document set aside by one step, and why."""

    document_key: str
    stage: str
    error_type: str
    message: str
    page: int | None = None
    where: str | None = None  # the innermost frame of the pipeline's own code: "module:line"

    def reason(self) -> str:
        """One line: "structure: ValueError: zip() argument 2 is longer ... (page 2)"."""
        page = f" (page {self.page})" if self.page is not None else ""
        where = f" [at {self.where}]" if self.where else ""
        return f"{self.stage}: {self.error_type}: {self.message}{page}{where}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def set_aside_for(stage: str, key: str, exc: BaseException, page: int | None = None) -> SetAside:
    """The SetAside of ``key`` for ``exc`` raised in ``stage``. A DocumentError's message is
    its reason (the key is not repeated); the page is ``page``, else the exception's own."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
    message = exc.reason if isinstance(exc, DocumentError) else str(exc)
    found = page if page is not None else getattr(exc, "page", None)
    return SetAside(
        document_key=key,
        stage=stage,
        error_type=type(exc).__name__,
        message=" ".join(message.split())[:500] or "(no message)",
        page=int(found) if isinstance(found, int) else None,
        where=_where(exc),
    )


def _where(exc: BaseException) -> str | None:
    """The innermost frame of the project's own code that the exception passed through."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "civicsetu_pipelines" in f.filename]  # fmt: skip
    if not frames:
        return None
    frame = frames[-1]
    module = frame.filename.rsplit("civicsetu_pipelines", 1)[-1].strip("/").removesuffix(".py")
    return f"{module}:{frame.lineno}"


def contained(
    stage: str, key: str, step: Callable[[], T], *, page: int | None = None
) -> tuple[T | None, SetAside | None]:
    """Run one document's ``step``: its result, or None and the SetAside naming why it failed.

    Catches ``Exception`` only: an interrupt or a stop still stops the run."""
    try:
        return step(), None
    except Exception as exc:  # noqa: BLE001 - the document is the unit of failure
        aside = set_aside_for(stage, key, exc, page)
        log.warning("%s set aside: %s", key, aside.reason(), exc_info=exc)
        return None, aside


def by_document(items: Iterable[SetAside]) -> dict[str, list[str]]:
    """Reasons by document key, in the order they were found."""
    out: dict[str, list[str]] = {}
    for item in items:
        out.setdefault(item.document_key, []).append(item.reason())
    return out
