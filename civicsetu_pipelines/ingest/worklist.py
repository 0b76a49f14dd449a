"""Documents as the unit of incremental work (issue 46): which of a jurisdiction's documents a
run processes, and which it leaves as they are served.

A document is processed when its fingerprint (:func:`document_fingerprint`: the PDF's sha256,
its registry entry and the run's context, see :func:`work_context`) differs from the one it was
served with: it is new, its PDF or registry entry changed, the code or an output setting
changed, or it failed or was set aside before (such a document has no served fingerprint).
Amendments tie documents together: an instrument's targets are dated by every instrument that
amends them, in the order of their dates, so a processed document brings its *amendment family*
with it (:func:`amendment_closure`). Everything else is left as it was: its rows, edges, catalog
row and Akoma Ntoso files stay as the last run that processed it wrote them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Why a document is processed (WorkPlan.reasons), in the words the run's log and metadata use.
NEW = "new"
CHANGED = "changed"
NOT_SERVED = "not served before (failed or set aside)"
EVERY = "every document (forced)"
FETCH_FAILED = "its fetch failed"
# Documents others' references resolve into (an order's "rule N", a rule's "section N"): when
# one of them is processed, the jurisdiction's graph and Akoma Ntoso files are made again whole.
CITED_KINDS = frozenset({"act", "rules", "regulations"})


def work_context(code: str, settings: Mapping[str, str], act: str | None) -> str:
    """What every document of a run is processed under: the code hash, the settings that change
    the output and the fingerprint the Act is served with (references and derivations resolve
    into it; ``None`` in the Act's own jurisdiction or before it is served)."""
    payload = {"code": code, "settings": dict(sorted(settings.items())), "act": act}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def document_fingerprint(spec: Mapping[str, Any], sha256: str, context: str) -> str:
    """The fingerprint of one document's inputs: its registry entry (as JSON), the sha256 of its
    PDF and the run's :func:`work_context`."""
    payload = {"spec": spec, "sha256": sha256, "context": context}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class ServedDocument:
    """A document as the store serves it: the fingerprint it was processed under and the
    documents it amends or repeals."""

    fingerprint: str
    targets: tuple[str, ...] = ()


@dataclass
class WorkPlan:
    """One run's documents: those it processes (with why) and those it leaves as they are."""

    process: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # served before, no longer registered
    reasons: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for the run's log: how many processed, left, removed."""
        return (f"{len(self.process)} to process, {len(self.keep)} left as they were, "
                f"{len(self.removed)} removed")  # fmt: skip


def plan_work(
    registered: Sequence[str],
    fingerprints: Mapping[str, str | None],
    served: Mapping[str, ServedDocument],
    *,
    every: bool = False,
) -> WorkPlan:
    """The plan of one run over the ``registered`` documents (in registry order).

    ``fingerprints`` holds each document's fingerprint now (``None`` when its fetch failed: it
    is processed, so its failure is recorded and named); ``served`` what the store was served
    with. ``every`` processes every document (``materialize --force``). The amendment family of
    what is processed is added by :func:`amendment_closure` over ``served``'s targets."""
    plan = WorkPlan()
    for key in registered:
        now = fingerprints.get(key)
        before = served.get(key)
        if every:
            plan.reasons[key] = EVERY
        elif now is None:
            plan.reasons[key] = FETCH_FAILED
        elif before is None:
            plan.reasons[key] = NEW
        elif before.fingerprint != now:
            plan.reasons[key] = CHANGED
        else:
            plan.keep.append(key)
            continue
        plan.process.append(key)
    known = set(registered)
    plan.removed = sorted(k for k in served if k not in known)
    family = amendment_closure(
        plan.process, {k: s.targets for k, s in served.items()}, also=plan.removed
    )
    for key, why in family.items():
        if key in known and key not in plan.reasons:
            plan.reasons[key] = why
    pulled = set(family) & known
    plan.process = [k for k in registered if k in plan.reasons]
    plan.keep = [k for k in plan.keep if k not in pulled]
    return plan


def amendment_closure(
    start: Iterable[str],
    targets: Mapping[str, Sequence[str]],
    *,
    also: Iterable[str] = (),
) -> dict[str, str]:
    """The documents that must be processed with ``start`` because amendments tie them to it
    (each with why), ``start`` itself not included.

    ``targets`` maps an instrument to the documents it amends or repeals. A processed target
    brings every instrument that amends it (its points in time are made again from all of them,
    in date order); a processed instrument brings its targets, and so on to a fixed point.
    ``also`` are documents that are gone (removed) but whose targets must be dated again without
    them."""
    members = set(start)
    found: dict[str, str] = {}
    amended_by: dict[str, set[str]] = {}
    for inst, names in targets.items():
        for target in names:
            amended_by.setdefault(target, set()).add(inst)
    todo = [*members, *also]
    while todo:
        key = todo.pop()
        pulled = [(t, f"amended by {key}") for t in targets.get(key, ())]
        pulled += [(i, f"amends {key}") for i in sorted(amended_by.get(key, ()))]
        for other, why in pulled:
            if other not in members and other not in found:
                found[other] = why
                todo.append(other)
    return found
