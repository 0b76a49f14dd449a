"""The answer path's stages, as data, and a question followed through them call by call.

:data:`STAGES` names the module of each stage (and the modules that serve only it); :data:`SHARED`
the leaf modules every stage reads. :func:`follow` runs a callable under ``sys.setprofile`` and
returns the modules of the answer package it entered, in order: a module entry is a call from
one of its modules into another; data accessors are not entries (properties, dunder methods and
constructors of the values passed along, e.g. ``Candidate.chunk_id``), nor are the shared
modules; consecutive entries into one module count once. :func:`returns` counts the entries into
a module already left. ``bench/bench_answer_path.py`` prints them; a test keeps each question to
one pass.
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable, Sequence
from typing import Any

PACKAGE = "civicsetu_pipelines.answer."
# stage -> its modules (the first is the stage's own; the others serve it alone)
STAGES: dict[str, tuple[str, ...]] = {
    "understand": ("questions", "places", "legal_references"),
    "retrieve": ("retrieval",),
    "rank": ("ranking",),
    "decide": ("verdict", "other_laws", "confidence"),
    "compose": ("compose", "citations", "llm"),
}
SHARED = frozenset({"candidates", "vocabulary", "timing"})


def follow(call: Callable[[], Any]) -> list[str]:
    """The modules of the answer package ``call()`` enters, in order (see the module
    docstring)."""
    entries: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "")
        if not (callee.startswith(PACKAGE) and caller.startswith(PACKAGE)) or callee == caller:
            return
        module = callee.removeprefix(PACKAGE)
        if module in SHARED or frame.f_code.co_name.startswith("__") or _is_accessor(frame):
            return
        if not entries or entries[-1] != module:
            entries.append(module)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(previous)
    return entries


def _is_accessor(frame: Any) -> bool:
    """A property getter (a property of its first argument's class)."""
    code = frame.f_code
    if not code.co_varnames or code.co_varnames[0] != "self":
        return False
    return isinstance(getattr(type(frame.f_locals.get("self")), code.co_name, None), property)


def returns(entries: Sequence[str]) -> dict[str, int]:
    """Per module, how many times ``entries`` come back to it after leaving it."""
    return {m: n - 1 for m, n in collections.Counter(entries).items() if n > 1}


def stage_order(entries: Sequence[str]) -> list[str]:
    """The stages ``entries`` pass through, in order (consecutive ones once)."""
    by_module = {m: stage for stage, modules in STAGES.items() for m in modules}
    out: list[str] = []
    for module in entries:
        stage = by_module.get(module, module)
        if not out or out[-1] != stage:
            out.append(stage)
    return out
