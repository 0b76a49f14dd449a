"""The report's sections built from stored data beside the questions: the dev and test halves
with their intervals, what each state's rules fix, the hand-set and learned ranking, and what
changed. Pure domain code; :mod:`~civicsetu_pipelines.evaluate.report` renders them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from civicsetu_pipelines.evaluate.report_data import Question, fmt as _fmt, label, with_interval
from civicsetu_pipelines.store import change_detail, change_hashes, unexplained


def changes_section(changes: Sequence[Mapping[str, Any]] | None) -> dict[str, Any] | None:
    """The recent recorded changes for the page (newest first, as given), each in a few words;
    a unit whose text changed with no instrument to explain it is marked."""
    if changes is None:
        return None
    silent = {id(c) for c in unexplained(list(changes))}
    rows = []
    for c in changes:
        when = c.get("recorded_at")
        rows.append({
            "recorded": when.strftime("%Y-%m-%d %H:%M") if isinstance(when, datetime) else
            str(when or ""),
            "jurisdiction": c.get("jurisdiction") or "", "kind": c.get("kind") or "",
            "document": c.get("document_key") or "", "unit": c.get("unit_label") or "",
            "hashes": change_hashes(c), "instrument": c.get("instrument") or "",
            "detail": change_detail(c), "unexplained": id(c) in silent,
        })  # fmt: skip
    return {"rows": rows, "unexplained": len(silent)}


def states_section(states: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The state × matter matrix for the page, each found value linked to its quote."""
    if not states or not states.get("provisions"):
        return None
    rows = list(states["provisions"])
    jurisdictions = sorted({r["jurisdiction"] for r in rows})
    matters = list(dict.fromkeys(r["matter"] for r in rows))
    flagged = {(f.get("jurisdiction"), f.get("matter")) for f in states.get("flag_keys") or []}
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    quotes = []
    for index, r in enumerate(rows):
        if r.get("value"):
            anchor = f"quote-{index}"
            cells[(r["matter"], r["jurisdiction"])] = {
                "value": r["value"], "anchor": anchor,
                "flagged": (r["jurisdiction"], r["matter"]) in flagged}  # fmt: skip
            quotes.append({**r, "anchor": anchor})
    return {
        "jurisdictions": jurisdictions,
        "rows": [
            (m, [cells.get((m, j), {"anchor": None}) for j in jurisdictions]) for m in matters
        ],
        "quotes": quotes,
        "flags": list(states.get("flags") or []),
    }


def ranking_section(ranking: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The learned ranker's table for the page: one row per variant, its columns in order."""
    if not ranking or not ranking.get("rows"):
        return None
    columns: list[str] = []
    for row in ranking["rows"]:
        columns += [c for c in row if c not in columns]
    rows = [[_fmt(r.get(c), 3) if isinstance(r.get(c), float) else str(r.get(c, "—"))
             for c in columns] for r in ranking["rows"]]  # fmt: skip
    by_type = ranking.get("by_type") or {}
    type_columns = sorted({c for cells in by_type.values() for c in cells})
    return {
        "promoted": bool(ranking.get("promoted")),
        "reason": str(ranking.get("reason", "")),
        "columns": [c.replace("_", " ") for c in columns],
        "rows": rows,
        "type_columns": type_columns,
        "by_type": [
            (kind, [_fmt(cells.get(c), 3) for c in type_columns]) for kind, cells in by_type.items()
        ],  # fmt: skip
        "worst": [
            (
                name,
                [
                    {
                        "id": q["id"],
                        "query": q["query"],
                        "type": q["type"],
                        "status": q["status"],
                        "rr": _fmt(q.get("governing_rr"), 3),
                        "refusal": "yes" if q["refusal_correct"] else "no",
                    }
                    for q in qs
                ],
            )
            for name, qs in (ranking.get("worst") or {}).items()
        ],  # fmt: skip
    }


SPLIT_METRICS = (
    "governing_hit_at_1", "governing_hit_at_5", "governing_mrr", "plain_governing_hit_at_3",
    "plain_answered", "selective_precision", "confident_coverage", "hit_at_5", "mrr",
    "citation_validity", "refusal_correctness",
    "diversity_displaced_share", "latency_p95_ms",
)  # fmt: skip
SPLIT_KIND_METRICS = ("governing_hit_at_5", "governing_mrr", "refusal_correctness")


def splits_section(
    questions: Sequence[Question], thresholds: Mapping[str, float]
) -> dict[str, Any]:
    """The dev and test halves side by side (targets are held on test), overall and per query
    type; empty when the golden file is not split."""
    from civicsetu_pipelines.evaluate.scoring import by_kind_and_split, by_split, intervals

    rows = [q.raw for q in questions]
    if not any(r.get("split") for r in rows):
        return {}
    halves = by_split(rows)
    names = [h for h in halves if h != "all"]
    ci = {
        h: intervals([r for r in rows if h == "all" or r.get("split") == h])
        for h in (*names, "all")
    }  # fmt: skip (each half's 95% intervals)
    overall = [
        (label(metric), [with_interval(halves[h].get(metric), ci[h].get(f"{metric}_ci95"))
                         for h in (*names, "all")],
         _fmt(thresholds.get(metric), 2) if metric in thresholds else "")
        for metric in SPLIT_METRICS
    ]  # fmt: skip
    kinds = [
        (kind, [_fmt(groups.get(h, {}).get(m), 2) for h in names for m in SPLIT_KIND_METRICS],
         [int(groups.get(h, {}).get("questions") or 0) for h in names])
        for kind, groups in by_kind_and_split(rows).items()
    ]  # fmt: skip
    return {
        "names": names,
        "counts": [int(halves[h].get("questions") or 0) for h in (*names, "all")],
        "overall": overall,
        "kind_metrics": [label(m) for m in SPLIT_KIND_METRICS],
        "kinds": kinds,
    }
