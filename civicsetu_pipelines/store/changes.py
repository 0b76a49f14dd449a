"""What changed, recorded (issue 37): each run's changes, in ``store_changes``.

Pure domain code over psycopg (no Dagster); the one home of ``sql/0016_store_changes.sql``'s
table: every statement that writes or reads it is here, and every one is parameterized.

A load of a jurisdiction (:func:`~civicsetu_pipelines.store.load_partition`) and a retirement
(:func:`~civicsetu_pipelines.store.retire_documents`) take a :func:`snapshot` of the
jurisdiction's current units before and after, in their own transaction, and record the
difference (:func:`unit_changes`) there: a failed load records nothing. A unit is

* ``added``: current after, not before (and no new point in time of a unit that was);
* ``changed``: its text (or label) differs, with the sha256 of its text before and after and the
  amending instrument that made the new point in time (``amendment.by``), if one did; a unit
  whose text changed with no instrument to explain it (a re-printed gazette with other words)
  is what :func:`unexplained` lists;
* ``ended``: current before and neither current nor succeeded after (retired, superseded, ended
  by an amending or repealing instrument: the instrument its flags name).

Provision values that moved (``provision``, recorded by the provisions table) and golden
questions whose governing citations changed (``citation``, by the evaluation) are recorded here
too (:func:`record_changes`), and all are read by :func:`read_changes` (``civicsetu changes``,
the report's "What changed").
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

CHANGE_KINDS = ("added", "changed", "ended", "provision", "citation")
UNIT_KINDS = ("added", "changed", "ended")
_INSTRUMENT_FLAGS = ("ended_by:", "repealed_by:")


@dataclass(frozen=True)
class Unit:
    """A current unit in a :func:`snapshot`: what a change is read from."""

    chunk_id: str
    document_key: str
    label: str
    text_sha256: str
    amendment: dict[str, Any] | None = None


@dataclass(frozen=True)
class Change:
    """One recorded change (a row of ``store_changes`` but its run, id and time)."""

    kind: str
    jurisdiction: str
    document_key: str | None = None
    unit_label: str | None = None
    chunk_id: str | None = None
    old_sha256: str | None = None
    new_sha256: str | None = None
    instrument: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


_SNAPSHOT = (
    "SELECT chunk_id::text, document_key, label, "
    "encode(sha256(convert_to(text, 'UTF8')), 'hex'), amendment FROM legal_chunks "
    "WHERE jurisdiction = %s AND status = 'current' "
    "AND (%s::text[] IS NULL OR document_key = ANY(%s))"
)


def snapshot(
    cur: psycopg.Cursor[Any], jurisdiction: str, documents: Sequence[str] | None = None
) -> dict[str, Unit]:
    """The current units of ``jurisdiction`` (of its ``documents`` only, when given: a load's,
    issue 46) by chunk id, each with the sha256 of its text."""
    keys = None if documents is None else list(documents)
    cur.execute(_SNAPSHOT, (jurisdiction, keys, keys))
    return {
        str(cid): Unit(str(cid), str(doc), str(label), str(sha), _as_dict(amendment))
        for cid, doc, label, sha, amendment in cur.fetchall()
    }


def _as_dict(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str) and value:
        value = json.loads(value)
    return dict(value) if isinstance(value, Mapping) and value else None


def _by(amendment: Mapping[str, Any] | None) -> str | None:
    return str(amendment["by"]) if amendment and amendment.get("by") else None


def unit_changes(
    jurisdiction: str,
    before: Mapping[str, Unit],
    after: Mapping[str, Unit],
    ended_by: Mapping[str, str] | None = None,
) -> list[Change]:
    """The units added, changed and ended between two :func:`snapshot`s of ``jurisdiction``.

    A unit is matched to its earlier self by chunk id, or, for a new point in time an amendment
    made (its own chunk id), by the chunk it succeeds (``amendment.previous``). ``ended_by``:
    the instrument that ended a unit, by chunk id (read from its flags by
    :func:`record_unit_changes`)."""
    ended_by = ended_by or {}
    out: list[Change] = []
    succeeded: set[str] = set()
    for cid, new in sorted(after.items(), key=lambda item: (item[1].document_key, item[1].label)):
        old = before.get(cid)
        previous = str((new.amendment or {}).get("previous") or "")
        if old is None and previous in before and previous not in after:
            old = before[previous]
            succeeded.add(previous)
        by = _by(new.amendment)
        if old is None:
            out.append(Change("added", jurisdiction, new.document_key, new.label, cid, None,
                              new.text_sha256, by))  # fmt: skip
            continue
        if old.text_sha256 == new.text_sha256 and old.label == new.label:
            continue
        # the instrument explains the change only when it is new to this unit: the same
        # amendment over other words (a re-printed base text) explains nothing
        instrument = by if by and new.amendment != old.amendment else None
        detail: dict[str, Any] = {}
        if old.label != new.label:
            detail["old_label"] = old.label
        if old.chunk_id != cid:
            detail["previous_chunk_id"] = old.chunk_id
        if instrument:
            detail.update({k: new.amendment[k] for k in ("kind", "instruction", "page", "date")
                           if new.amendment and new.amendment.get(k) is not None})  # fmt: skip
        out.append(Change("changed", jurisdiction, new.document_key, new.label, cid,
                          old.text_sha256, new.text_sha256, instrument, detail))  # fmt: skip
    gone = [u for cid, u in before.items() if cid not in after and cid not in succeeded]
    for old in sorted(gone, key=lambda u: (u.document_key, u.label)):
        out.append(Change("ended", jurisdiction, old.document_key, old.label, old.chunk_id,
                          old.text_sha256, None, ended_by.get(old.chunk_id)))  # fmt: skip
    return out


def _ended_by(cur: psycopg.Cursor[Any], chunk_ids: Sequence[str]) -> dict[str, str]:
    """The instrument each chunk's latest row names as what ended it (its ``ended_by:`` or
    ``repealed_by:`` flag), by chunk id."""
    if not chunk_ids:
        return {}
    cur.execute(
        "SELECT DISTINCT ON (chunk_id) chunk_id::text, flags FROM legal_chunks "
        "WHERE chunk_id = ANY(%s::uuid[]) ORDER BY chunk_id, row_id DESC",
        (list(chunk_ids),),
    )
    out: dict[str, str] = {}
    for cid, flags in cur.fetchall():
        listed = json.loads(flags) if isinstance(flags, str) else list(flags or [])
        for flag in listed:
            for prefix in _INSTRUMENT_FLAGS:
                if isinstance(flag, str) and flag.startswith(prefix):
                    out[str(cid)] = flag[len(prefix) :]
    return out


def record_unit_changes(
    cur: psycopg.Cursor[Any],
    jurisdiction: str,
    before: Mapping[str, Unit],
    run_id: str,
    documents: Sequence[str] | None = None,
) -> list[Change]:
    """Record, in the caller's transaction, what changed in ``jurisdiction``'s current units
    (of its ``documents``, as ``before`` was taken) since the snapshot ``before``; returns the
    changes."""
    after = snapshot(cur, jurisdiction, documents)
    ended_by = _ended_by(cur, [cid for cid in before if cid not in after])
    changes = unit_changes(jurisdiction, before, after, ended_by)
    record_changes(cur, run_id, changes)
    return changes


_COLUMNS = ("kind", "jurisdiction", "document_key", "unit_label", "chunk_id", "old_sha256",
            "new_sha256", "instrument", "detail")  # fmt: skip


def record_changes(
    cur: psycopg.Cursor[Any],
    run_id: str,
    changes: Sequence[Change],
    recorded_at: dt.datetime | None = None,
) -> int:
    """Insert ``changes`` as run ``run_id``'s (in the caller's transaction)."""
    if not changes:
        return 0
    when = recorded_at or dt.datetime.now(dt.UTC)
    cur.executemany(
        f"INSERT INTO store_changes (run_id, recorded_at, {', '.join(_COLUMNS)}) "
        f"VALUES (%s, %s, {', '.join(['%s'] * len(_COLUMNS))})",
        [(run_id, when, *(Jsonb(getattr(c, name)) if name == "detail" else getattr(c, name)
                          for name in _COLUMNS)) for c in changes],
    )  # fmt: skip
    return len(changes)


def read_changes(
    conn: psycopg.Connection[Any],
    *,
    jurisdictions: Sequence[str] = (),
    since: dt.date | dt.datetime | None = None,
    kinds: Sequence[str] = (),
    run_id: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Recorded changes, newest first: of ``jurisdictions`` (all when empty), recorded on or
    after ``since``, of ``kinds`` (all when empty), of one run, at most ``limit``."""
    if isinstance(since, dt.date) and not isinstance(since, dt.datetime):
        since = dt.datetime.combine(since, dt.time(), tzinfo=dt.UTC)
    with conn.cursor() as cur:
        cur.execute(
            f"SELECT change_id, run_id, recorded_at, {', '.join(_COLUMNS)} FROM store_changes "
            "WHERE (cardinality(%s::text[]) = 0 OR jurisdiction = ANY(%s)) "
            "AND (%s::timestamptz IS NULL OR recorded_at >= %s) "
            "AND (cardinality(%s::text[]) = 0 OR kind = ANY(%s)) "
            "AND (%s::text IS NULL OR run_id = %s) "
            "ORDER BY recorded_at DESC, change_id DESC LIMIT %s",
            (list(jurisdictions), list(jurisdictions), since, since, list(kinds), list(kinds),
             run_id, run_id, limit),
        )  # fmt: skip
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def unexplained(changes: Sequence[Change | Mapping[str, Any]]) -> list[Change | Mapping[str, Any]]:
    """The changes of served text no instrument explains: a unit whose text hash changed with no
    amending instrument recorded (a re-printed gazette with other words)."""

    def get(c: Change | Mapping[str, Any], name: str) -> Any:
        return c.get(name) if isinstance(c, Mapping) else getattr(c, name)

    return [c for c in changes if get(c, "kind") == "changed" and not get(c, "instrument")
            and get(c, "old_sha256") != get(c, "new_sha256")]  # fmt: skip


def change_hashes(row: Mapping[str, Any]) -> str:
    """A recorded change's text sha256 before → after, shortened ("" for none)."""
    old, new = row.get("old_sha256"), row.get("new_sha256")
    if not old and not new:
        return ""
    return f"{str(old or '—')[:12]} → {str(new or '—')[:12]}"


def change_detail(row: Mapping[str, Any]) -> str:
    """A recorded change's detail in a few words: a provision's old and new value, a question's
    id and words, a unit's old label, an amendment's instruction."""
    detail = row.get("detail") or {}
    if row.get("kind") == "provision":
        return f"{detail.get('matter')}: {detail.get('old_value')} → {detail.get('new_value')}"
    if row.get("kind") == "citation":
        return f"{detail.get('question_id')}: {detail.get('query') or ''}"[:160]
    if detail.get("old_label"):
        return f"was {detail['old_label']}"
    return str(detail.get("instruction") or "")[:160]
