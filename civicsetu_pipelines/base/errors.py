"""The one error type for "this document failed": it always names the document."""

from __future__ import annotations

from typing import Any


class DocumentError(Exception):
    """A failure of one document. ``key`` names it, ``reason`` says why; ``str()`` has both."""

    template = "{key}: {reason}"

    def __init__(self, key: str, message: str) -> None:
        super().__init__(self.template.format(key=key, reason=message))
        self.key = key
        self.reason = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.key, self.reason))
