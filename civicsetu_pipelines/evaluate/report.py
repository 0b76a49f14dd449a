"""The analyst report of a golden-set evaluation run: one self-contained HTML page, a CSV of the
per-question rows and a compact summary PNG (pure; no Dagster, no database).

:func:`render_report` writes three files into ``out_dir``:

* ``report.html`` -- one page with no external resource (inline CSS, plots as base64 PNGs, one
  small inline script; a Content-Security-Policy allows nothing else, so a stray external
  reference would not load and would be reported by
  :func:`civicsetu_pipelines.evaluate.render_check.check_renders`). Sections: headline metrics
  with thresholds and pass/fail; the dev and test halves; the questions whose governing provision
  the diversity cap moved out of the top 5 (each row's ``governing_placement``), with their count
  and share; hit@5 by jurisdiction x query type; refusal correctness; metric
  means overall and per jurisdiction; latency; trend across runs; the ten worst questions; every
  question. The page is the Jinja2 template ``templates/report.html.j2`` (macros in
  ``templates/macros.html.j2``, the CSS in ``templates/report.css``, the script in
  ``templates/render_check.js``) filled with the values computed here. Autoescaping is on and
  every ``{{ value }}`` is escaped as :func:`html.escape` does, so every text that comes from the
  data (questions, labels, answers, run ids, titles) is escaped.
* ``per_question.csv`` -- every field of every row (lists joined with ``"; "``, a mapping such
  as ``governing_placement`` as one JSON object).
* ``summary.png`` -- headline bars with threshold marks, and the hit@5 heatmap.

The ten worst questions are ordered by :func:`worst_key`: errors first, then refusal mistakes
(answered where a refusal was expected, then refused where an answer was expected), then citation
problems (citation validity below 1), then retrieval misses (reciprocal rank 0), then late hits
(lowest reciprocal rank first), then the rest. Ties go to the lower reciprocal rank, citation
validity, nDCG@10 and recall@5 (a missing value after any number), then the question id in
natural order ("q2" before "q10").

Output is deterministic: the same inputs (``generated_at`` included) give the same bytes, in any
row order (rows are sorted by question id). The figures come from
:mod:`civicsetu_pipelines.evaluate.plots`, the data model from
:mod:`civicsetu_pipelines.evaluate.report_data`. Each file is replaced atomically (the HTML last).
"""

from __future__ import annotations

import base64
import csv
import functools
import hashlib
import html
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

from civicsetu_pipelines.base import write_atomic
from civicsetu_pipelines.evaluate import plots
from civicsetu_pipelines.evaluate.render_check import RENDER_CHECK_SCRIPT
from civicsetu_pipelines.evaluate.report_data import (
    BAR_METRICS,
    HEADLINE,
    HEADLINE_FIELD,
    LIST_FIELDS,
    NONE_TEXT,
    QUESTION_METRICS,
    ROW_FIELDS,
    Question,
    fmt as _fmt,
    groups,
    jurisdictions,
    label,
    mean,
    natural_key,
    passes,
    percentile,
    query_types,
    scored_types,
    to_labels,
    to_number,
    to_question,
    trend_runs,
    with_interval,
)
from civicsetu_pipelines.evaluate.report_sections import (
    changes_section,
    ranking_section,
    splits_section,
    states_section,
)

__all__ = [
    "CSV_NAME",
    "HEADLINE",
    "HTML_NAME",
    "QUESTION_METRICS",
    "ROW_FIELDS",
    "SECTIONS",
    "SUMMARY_NAME",
    "ReportFiles",
    "markdown_image",
    "natural_key",
    "problem",
    "render_report",
    "worst_key",
]

SECTIONS = (
    ("headline", "Headline metrics"),
    ("splits", "Dev and test halves"),
    ("diversity", "Governing provision moved by diversity"),
    ("ranking", "Hand-set and learned ranking"),
    ("states", "Where the states depart"),
    ("changes", "What changed"),
    ("hit5", "Hit@5 by jurisdiction and query type"),
    ("refusals", "Refusal correctness"),
    ("means", "Metric means by jurisdiction"),
    ("confidence", "Confidence: risk and coverage"),
    ("latency", "Latency"),
    ("trend", "Trend across runs"),
    ("worst", "Ten worst questions"),
    ("questions", "All questions"),
)
HTML_NAME, CSV_NAME, SUMMARY_NAME = "report.html", "per_question.csv", "summary.png"
PAGE_TEMPLATE = "report.html.j2"
WORST_COUNT = 10
MARKDOWN_WORST = 5
MAX_MARKDOWN_BYTES = 400_000
# The metrics of a question in the worst-questions table, and the columns of the all-questions
# table (names shortened where the table is narrow).
_WORST_METRICS = ("reciprocal_rank", "hit_at_5", "ndcg_at_10", "recall_at_5", "citation_validity")
_SHORT = {"reciprocal_rank": "RR", "citation_validity": "cit. validity"}
_FULL_COLUMNS = ("hit_at_5", "reciprocal_rank", "ndcg_at_10", "recall_at_5", "citation_validity")


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`render_report` wrote."""

    html: Path
    csv: Path
    summary_png: Path
    markdown: str  # headline table and the five worst questions (Dagster metadata)
    summary_markdown_image: str  # summary_png as an inline Markdown image, or a text line


# ---------------------------------------------------------------------------------------------
# The worst questions


def problem(row: Mapping[str, Any] | Question) -> tuple[int, str]:
    """``(tier, reason)``: what is most wrong with a question; lower tiers are worse.

    0 error, 1 answered where a refusal was expected, 2 refused where an answer was expected
    (3 any other refusal mistake), 4 citation validity below 1, 5 no expected unit retrieved
    (reciprocal rank 0), 6 first expected unit below rank 1, 7 nothing wrong."""
    q = row if isinstance(row, Question) else to_question(row)
    rr, validity = q.metrics["reciprocal_rank"], q.metrics["citation_validity"]
    if q.status == "error":
        return 0, "error"
    if q.refusal_correct is False:
        if q.expect_refusal and q.status == "answered":
            return 1, "answered, but a refusal was expected"
        if not q.expect_refusal and q.status == "refused":
            reason = f" ({q.refusal_reason})" if q.refusal_reason else ""
            return 2, f"refused{reason}, but an answer was expected"
        return 3, "refusal mistake"
    if validity is not None and validity < 1.0:
        return 4, f"citation validity {validity:.2f}"
    if rr is not None and rr <= 0.0:
        return 5, "no expected unit retrieved"
    if rr is not None and rr < 1.0:
        return 6, f"first expected unit at rank {round(1.0 / rr)}"
    return 7, "no problem found"


def shown_questions(questions: Sequence[Question]) -> list[Question]:
    """The questions a report shows one by one: all but the test half's, which is reported as
    aggregates only (:func:`~civicsetu_pipelines.evaluate.scoring.in_test_half`)."""
    from civicsetu_pipelines.evaluate.scoring import in_test_half

    return [q for q in questions if not in_test_half(q.raw)]


def worst_key(row: Mapping[str, Any] | Question) -> tuple[Any, ...]:
    """Sort key of the worst questions (worst first); see the module docstring."""
    q = row if isinstance(row, Question) else to_question(row)
    tier, _ = problem(q)

    def low(metric: str) -> float:
        value = q.metrics[metric]
        return 2.0 if value is None else value  # missing after any number

    primary = low("citation_validity") if tier == 4 else low("reciprocal_rank")
    return (
        tier,
        primary,
        low("reciprocal_rank"),
        low("citation_validity"),
        low("ndcg_at_10"),
        low("recall_at_5"),
        natural_key(q.qid),
    )


# ---------------------------------------------------------------------------------------------
# The values the page template shows (computed here; the markup is in templates/)


@dataclass(frozen=True)
class _Picture:
    """A PNG as a data: URI, with its size in pixels."""

    uri: str
    width: int
    height: int


@dataclass(frozen=True)
class _Cell:
    """A number in a table cell: its text, its grade (good, fair, poor; the cell's colour) and
    the number of questions it is taken over (shown in brackets), where there is one."""

    text: str
    grade: str | None = None
    n: int | None = None


@dataclass(frozen=True)
class _HeadlineRow:
    label: str
    value: str
    n: int
    threshold: str  # "≥ 0.9", or "" without a threshold
    status: str  # badge kind: pass, fail, na
    status_text: str
    previous: str
    change: str  # "▲ +0.050", "±0.000" or "—"
    change_kind: str | None  # up, down


@dataclass(frozen=True)
class _Verdict:
    kind: str  # pass, fail, na (no thresholds)
    total: int = 0
    bad: int = 0
    detail: str = ""


@dataclass(frozen=True)
class _Headline:
    verdict: _Verdict
    rows: list[_HeadlineRow]
    other: list[tuple[str, str]]  # further headline means: (label, value)


@dataclass(frozen=True)
class _RefusalRow:
    name: str
    total: bool  # the "all" row (a header cell)
    questions: int
    expect_refusal: int
    refused: int
    correctness: _Cell
    missed: int
    false_refusals: int
    errors: int


@dataclass(frozen=True)
class _Tag:
    label: str
    rank: int | None  # rank retrieved at; None: not retrieved
    hit: bool = False  # an expected unit (retrieved tags)


@dataclass(frozen=True)
class _Retrieved:
    shown: list[_Tag]
    folded: list[_Tag]  # ranks after the shown ones, up to the limit
    folded_hits: int  # expected units among them
    beyond: int  # retrieved units past the limit
    limit: int


@dataclass(frozen=True)
class _WorstRow:
    index: int
    q: Question
    why: str
    expected: list[_Tag]
    retrieved: _Retrieved
    metrics: list[str]


@dataclass(frozen=True)
class _QuestionRow:
    q: Question
    cells: list[_Cell]
    refusal: _Cell
    latency: str


def _picture(data: bytes) -> _Picture:
    width, height = plots.png_size(data)
    uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return _Picture(uri, width, height)


def _cell(value: float | None, digits: int = 2, n: int | None = None) -> _Cell:
    if value is None:
        return _Cell(NONE_TEXT)
    grade = "good" if value >= 0.8 else "fair" if value >= 0.5 else "poor"
    return _Cell(f"{value:.{digits}f}", grade, n)


def _headline(
    questions: Sequence[Question],
    headline: Mapping[str, float | None],
    thresholds: Mapping[str, float],
    previous: Mapping[str, Any] | None,
    previous_rows: Sequence[Mapping[str, Any]] | None = None,
) -> _Headline:
    """The headline table: each figure with its 95% interval, and its change from the previous
    run marked (▲/▼) only when a paired test on the questions both runs scored puts it
    outside the noise (p < 0.05); a change inside the noise reads "≈ +0.012"."""
    from civicsetu_pipelines.evaluate.scoring import intervals, paired_changes

    rows_now = [q.raw for q in questions]
    ci = intervals(rows_now)
    moved = paired_changes(previous_rows, rows_now) if previous_rows else {}
    keys = list(HEADLINE) + [k for k in thresholds if k not in HEADLINE]
    failed, missing = [], []
    rows = []
    before = (previous or {}).get("metrics") or {}
    for key in keys:
        value = to_number(headline.get(key))
        source = HEADLINE_FIELD.get(key, key)
        n = sum(1 for q in questions if q.metrics.get(source) is not None)
        threshold = thresholds.get(key)
        if threshold is None:
            status, status_text = "na", "no threshold"
        elif value is None:
            status, status_text = "na", "MISSING"
            missing.append(label(key))
        elif passes(value, threshold):
            status, status_text = "pass", "PASS"
        else:
            status, status_text = "fail", "FAIL"
            failed.append(label(key))
        prior = to_number(before.get(key))
        change_kind = None
        if prior is None or value is None:
            change = NONE_TEXT
        else:
            delta = value - prior
            test = moved.get(key)
            noise = test is not None and not test.significant
            arrow, kind = (
                ("▲", "up") if delta > 5e-4 else ("▼", "down") if delta < -5e-4 else ("", "")
            )
            if kind and noise and test is not None:  # inside the noise: no arrow
                change, change_kind = f"≈ {delta:+.3f} (p = {test.p_value:.2f})", None
            else:
                change, change_kind = (f"{arrow} {delta:+.3f}", kind) if kind else ("±0.000", None)
        rows.append(
            _HeadlineRow(
                label=label(key),
                value=with_interval(value, ci.get(f"{key}_ci95")),
                n=n,
                threshold="" if threshold is None else f"≥ {threshold:g}",
                status=status,
                status_text=status_text,
                previous=_fmt(prior, 3),
                change=change,
                change_kind=change_kind,
            )
        )
    if not thresholds:
        verdict = _Verdict("na")
    elif failed or missing:
        parts = []
        if failed:
            parts.append(f"below threshold: {', '.join(failed)}")
        if missing:
            parts.append(f"not computed: {', '.join(missing)}")
        verdict = _Verdict("fail", len(thresholds), len(failed) + len(missing), "; ".join(parts))
    else:
        verdict = _Verdict("pass", len(thresholds))
    counts = {"questions", "diversity_displaced"}
    other = [
        (label(k), _fmt(to_number(headline.get(k)), 0 if k in counts else 3))
        for k in headline
        if k not in keys
    ]
    return _Headline(verdict, rows, other)


def _refusal_rows(questions: Sequence[Question]) -> list[_RefusalRow]:
    rows = []
    for query_type in [*query_types(questions), None]:
        members = [q for q in questions if query_type is None or q.query_type == query_type]
        if not members:
            continue
        correctness, _ = mean([q.metrics["refusal_correct"] for q in members])
        rows.append(
            _RefusalRow(
                name="all" if query_type is None else query_type.replace("_", " "),
                total=query_type is None,
                questions=len(members),
                expect_refusal=sum(q.expect_refusal for q in members),
                refused=sum(q.status == "refused" for q in members),
                correctness=_cell(correctness),
                missed=sum(1 for q in members if problem(q)[0] == 1),
                false_refusals=sum(1 for q in members if problem(q)[0] == 2),
                errors=sum(q.status == "error" for q in members),
            )
        )
    return rows


def _means(
    questions: Sequence[Question],
) -> tuple[list[tuple[str, int]], list[tuple[str, list[_Cell]]]]:
    """The head of the means table (group, questions) and its rows (metric, cells)."""
    members_of = groups(questions)
    rows = []
    for metric in BAR_METRICS:
        cells = []
        for _, members in members_of:
            value, n = mean([q.metrics[metric] for q in members])
            cells.append(_cell(value, n=n))
        rows.append((label(metric), cells))
    return [(name, len(members)) for name, members in members_of], rows


def _expected_tags(q: Question) -> list[_Tag]:
    found = set(q.retrieved)
    return [
        _Tag(unit, q.retrieved.index(unit) + 1 if unit in found else None) for unit in q.expected
    ]


def _retrieved_tags(q: Question, shown: int = 5, limit: int = 10) -> _Retrieved:
    """The top ``shown`` retrieved units, ranks up to ``limit`` folded; expected ones marked."""
    expected = set(q.expected)
    tags = [
        _Tag(unit, rank, unit in expected) for rank, unit in enumerate(q.retrieved[:limit], start=1)
    ]
    return _Retrieved(
        shown=tags[:shown],
        folded=tags[shown:],
        folded_hits=sum(1 for tag in tags[shown:] if tag.hit),
        beyond=max(len(q.retrieved) - limit, 0),
        limit=limit,
    )


def _metric_lines(q: Question) -> list[str]:
    lines = [
        f"{_SHORT.get(metric, label(metric))} {q.metrics[metric]:.2f}"
        for metric in _WORST_METRICS
        if q.metrics[metric] is not None
    ]
    if q.latency_ms is not None:
        lines.append(f"{q.latency_ms:,.0f} ms")
    return lines or [NONE_TEXT]


def _worst_rows(worst: Sequence[Question]) -> list[_WorstRow]:
    return [
        _WorstRow(
            index=index,
            q=q,
            why=problem(q)[1],
            expected=_expected_tags(q),
            retrieved=_retrieved_tags(q),
            metrics=_metric_lines(q),
        )
        for index, q in enumerate(worst, start=1)
    ]


def _question_rows(questions: Sequence[Question]) -> list[_QuestionRow]:
    rows = []
    for q in questions:
        if q.refusal_correct is None:
            refusal = _Cell(NONE_TEXT)
        else:
            refusal = _Cell("✓") if q.refusal_correct else _Cell("✗", "poor")
        rows.append(
            _QuestionRow(
                q=q,
                cells=[_cell(q.metrics[m]) for m in _FULL_COLUMNS],
                refusal=refusal,
                latency=NONE_TEXT if q.latency_ms is None else f"{q.latency_ms:,.0f}",
            )
        )
    return rows


def _diversity(questions: Sequence[Question]) -> dict[str, Any]:
    """The questions whose governing provision the diversity cap moved out of the top 5 (in
    the candidates' top 5 by score, not in the final list's), from each row's
    ``governing_placement`` (:func:`~civicsetu_pipelines.evaluate.scoring.diversity_displaced`);
    ``measured`` False for rows recorded without it."""
    from civicsetu_pipelines.evaluate.scoring import diversity_displaced

    rows = [{**q.raw, "governing_placement": _placement(q.raw.get("governing_placement"))}
            for q in questions]  # fmt: skip
    summary = diversity_displaced(rows)
    moved = set(summary["questions"])
    listed = []
    for q in questions:
        if q.qid not in moved:
            continue
        place = _placement(q.raw.get("governing_placement")) or {}
        final = place.get("final_rank")
        listed.append({
            "q": q, "split": str(q.raw.get("split") or NONE_TEXT),
            "unit": str(place.get("unit") or NONE_TEXT),
            "score": _fmt(to_number(place.get("score")), 3),
            "before": str(place.get("candidate_rank") or NONE_TEXT),
            "after": "not in the list" if final is None else str(final),
            "lower": str(place.get("lower_scored_above", NONE_TEXT)),
            "gave_way": str(place.get("gave_way") or NONE_TEXT),
        })  # fmt: skip
    share = summary["share"]
    return {
        "measured": summary["count"] is not None,
        "k": summary["k"],
        "count": len(moved),
        "scored": summary["scored"],
        "share": _fmt(share, 3) if share is not None else NONE_TEXT,
        "rows": listed,
    }


def _placement(value: Any) -> dict[str, Any] | None:
    """A row's ``governing_placement``: a mapping, or its JSON text (a CSV's), else None."""
    if isinstance(value, str) and value.strip():
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return dict(value) if isinstance(value, Mapping) else None


def _latency_stats(questions: Sequence[Question]) -> dict[str, str] | None:
    latencies = [q.latency_ms for q in questions if q.latency_ms is not None]
    if not latencies:
        return None
    return {
        "p50": f"{percentile(latencies, 50):,.0f}",
        "p95": f"{percentile(latencies, 95):,.0f}",
        "max": f"{max(latencies):,.0f}",
        "n": str(len(latencies)),
    }


# ---------------------------------------------------------------------------------------------
# The page


def _escape(value: Any) -> Markup:
    """How the templates print a value (Jinja's ``finalize``, ahead of autoescaping): markup the
    templates made (macros, call blocks) as it is; anything else as :func:`html.escape` writes
    it (``&quot;`` and ``&#x27;`` where MarkupSafe would write ``&#34;`` and ``&#39;``, so the
    page keeps its bytes). ``None`` is a mistake in the template: it raises."""
    if hasattr(value, "__html__"):
        return Markup(value)
    if value is None:
        raise TypeError("the report template printed None")
    return Markup(html.escape(str(value), quote=True))


@functools.cache
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("civicsetu_pipelines.evaluate", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_escape,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )


def _script_sha256() -> str:
    """The script's hash, as the Content-Security-Policy allows it (``'sha256-...'``)."""
    return base64.b64encode(hashlib.sha256(RENDER_CHECK_SCRIPT.encode("utf-8")).digest()).decode(
        "ascii"
    )


def _page(
    *,
    title: str,
    generated_at: datetime,
    questions: Sequence[Question],
    headline: Mapping[str, float | None],
    thresholds: Mapping[str, float],
    runs: int,
    previous: Mapping[str, Any] | None,
    images: Mapping[str, bytes],
    ranking: Mapping[str, Any] | None = None,
    states: Mapping[str, Any] | None = None,
    changes: Mapping[str, Any] | None = None,
    previous_rows: Sequence[Mapping[str, Any]] | None = None,
    identity: Mapping[str, Any] | None = None,
) -> str:
    means_head, means_rows = _means(questions)
    shown = shown_questions(questions)
    template = _templates().get_template(PAGE_TEMPLATE)
    return template.render(
        title=title,
        script_sha256=_script_sha256(),
        generated=generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip(),
        sections=[
            (key, name)
            for key, name in SECTIONS
            if (key != "ranking" or ranking)
            and (key != "states" or states)
            and (key != "changes" or changes is not None)
        ],  # fmt: skip
        heading=dict(SECTIONS),
        counts={
            "questions": len(questions),
            "answered": sum(q.status == "answered" for q in questions),
            "refused": sum(q.status == "refused" for q in questions),
            "errors": sum(q.status == "error" for q in questions),
            "expect_refusal": sum(q.expect_refusal for q in questions),
        },
        jurisdictions=jurisdictions(questions),
        pictures={key: _picture(data) for key, data in images.items()},
        headline=_headline(questions, headline, thresholds, previous, previous_rows),
        identity=identity,
        splits=splits_section(questions, thresholds),
        diversity=_diversity(shown),
        refusals=_refusal_rows(questions),
        means_head=means_head,
        means_rows=means_rows,
        latency=_latency_stats(questions),
        runs=runs,
        worst=_worst_rows(sorted(shown, key=worst_key)[:WORST_COUNT]),
        full_columns=["RR" if m == "reciprocal_rank" else label(m) for m in _FULL_COLUMNS],
        questions=_question_rows(shown),
        csv_name=CSV_NAME,
        hidden=len(questions) - len(shown),
        ranking=ranking,
        states=states,
        changes=changes,
    )


# ---------------------------------------------------------------------------------------------
# CSV and Markdown


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_value(name: str, value: Any) -> str:
    if value is None or isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, Mapping):  # governing_placement: one JSON object
        value = json.dumps(value, sort_keys=True, ensure_ascii=False)
    elif name in LIST_FIELDS or isinstance(value, list | tuple):
        value = "; ".join(to_labels(value))
    elif isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    elif isinstance(value, int | float | np.integer | np.floating):
        return repr(float(value)) if isinstance(value, float | np.floating) else str(int(value))
    elif isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    # A spreadsheet would run text starting like a formula: quote it (OWASP CSV injection).
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv_bytes(questions: Sequence[Question]) -> bytes:
    extra = sorted({k for q in questions for k in q.raw if k not in ROW_FIELDS})
    columns = [*ROW_FIELDS, *extra]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for q in questions:
        writer.writerow([_csv_value(c, q.raw.get(c)) for c in columns])
    return out.getvalue().encode("utf-8")


def _md(text: str, limit: int = 100) -> str:
    """Data text for a Markdown table or list item: one line, cut to ``limit`` characters, the
    inline Markdown punctuation backslash-escaped, then HTML-escaped (``<`` ``>`` ``&``)."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return html.escape(re.sub(r"([\\`*_\[\]|~])", r"\\\1", flat), quote=False)


def _markdown(
    title: str,
    when: str,
    questions: Sequence[Question],
    headline: Mapping[str, float | None],
    thresholds: Mapping[str, float],
) -> str:
    lines = [
        f"**{_md(title)}**: {len(questions)} questions, generated {_md(when)}",
        "",
        "| metric | value | threshold | status |",
        "| --- | ---: | ---: | --- |",
    ]
    for key in list(HEADLINE) + [k for k in thresholds if k not in HEADLINE]:
        value = to_number(headline.get(key))
        threshold = thresholds.get(key)
        if threshold is None:
            status = ""
        elif value is None:
            status = "missing"
        else:
            status = "pass" if passes(value, threshold) else "**FAIL**"
        shown = "" if threshold is None else f"≥ {threshold:g}"
        lines.append(f"| {_md(label(key))} | {_fmt(value, 3)} | {shown} | {status} |")
    listed = shown_questions(questions)
    diversity = _diversity(listed)
    if diversity["measured"]:
        ids = ", ".join(f"`{row['q'].qid.replace('`', chr(39))}`" for row in diversity["rows"])
        lines += ["", f"**Governing provision moved out of the top {diversity['k']} by "
                  f"diversity**: {diversity['count']} of {diversity['scored']} questions "
                  f"(share {diversity['share']}){': ' + ids if ids else ''}"]  # fmt: skip
    worst = sorted(listed, key=worst_key)[:MARKDOWN_WORST]
    if worst:
        lines += ["", f"**{len(worst)} worst questions**", ""]
        for index, q in enumerate(worst, start=1):
            lines.append(
                f"{index}. `{q.qid.replace('`', chr(39))}` ({_md(q.jurisdiction)}, "
                f"{_md(q.query_type)}): {_md(problem(q)[1])}: {_md(q.query, 80)}"
            )
    return "\n".join(lines) + "\n"


def markdown_image(path: Path, alt: str = "summary", max_bytes: int = MAX_MARKDOWN_BYTES) -> str:
    """A PNG as an inline Markdown image (data URI), or a text line when it is larger than
    ``max_bytes`` (or missing)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return f"{alt}: picture not available ({path} is missing)"
    if len(data) > max_bytes:
        return (
            f"{alt}: picture of {len(data):,} bytes is over the {max_bytes:,}-byte inline "
            f"limit; see {path}"
        )
    return f"![{alt}](data:image/png;base64,{base64.b64encode(data).decode('ascii')})"


# ---------------------------------------------------------------------------------------------
# Writing


def render_report(
    out_dir: Path,
    *,
    rows: Sequence[Mapping[str, Any]],
    headline: Mapping[str, float | None],
    history: Sequence[Mapping[str, Any]],
    title: str,
    generated_at: datetime,
    thresholds: Mapping[str, float] | None = None,
    run_id: str | None = None,
    ranking: Mapping[str, Any] | None = None,
    states: Mapping[str, Any] | None = None,
    changes: Sequence[Mapping[str, Any]] | None = None,
    previous_rows: Sequence[Mapping[str, Any]] | None = None,
    identity: Mapping[str, Any] | None = None,
) -> ReportFiles:
    """Write ``report.html``, ``per_question.csv`` and ``summary.png`` into ``out_dir``.

    ``rows``: one mapping per golden question (fields of :data:`ROW_FIELDS`, metrics ``None``
    where they do not apply; further fields, e.g. ``answer`` or ``run_id``, go to the CSV and an
    ``answer`` is shown with the worst questions). ``headline``: the means (``None`` where not
    computed). ``history``: runs oldest first (``run_id``, ``started_at``, ``metrics``). It may
    or may not hold this run: this run is the entry with ``run_id`` or, without ``run_id``, a
    last entry whose headline metrics equal ``headline``; otherwise it is appended to the trend
    as "this run". With no history the trend says "first run". ``ranking``: the learned
    ranker's verdict and variants (``promoted``, ``reason``, ``rows`` of mappings), shown beside
    the hand-set ranking when given. ``states``: what each jurisdiction's rules fix per matter
    (``provisions``: mappings of jurisdiction, matter name, value, quote, label, page;
    ``flags``: messages), as a matrix linking each value to its quote. ``changes``: recent
    recorded changes, newest first (rows of ``store_changes``: ``read_changes``), shown as
    "What changed" when given. ``previous_rows``: the previous run's per-question rows, so a
    change is marked only outside the noise (a paired test); ``identity``: what this run was
    measured on (the evaluation's identity), shown under the headline. ``thresholds``: minimum
    values
    (e.g. ``{"hit_at_5": 0.9}``) shown as pass/fail and as lines on the plots.
    """
    out_dir = Path(out_dir)
    thresholds = {k: float(v) for k, v in (thresholds or {}).items()}
    questions = sorted((to_question(r) for r in rows), key=lambda q: natural_key(q.qid))
    runs, previous = trend_runs(history, headline, run_id)
    images = {
        "hit5": plots.heatmap_png(
            questions,
            "hit_at_5",
            scored_types(questions, "hit_at_5"),
            "hit@5 by jurisdiction × query type",
        ),
        "refusals": plots.heatmap_png(
            questions,
            "refusal_correct",
            query_types(questions),
            "refusal correctness by jurisdiction × query type",
        ),
        "means": plots.bars_png(questions, thresholds),
        "latency": plots.latency_png(questions),
        "confidence": plots.risk_coverage_png(questions),
    }
    if history:
        images["trend"] = plots.trend_png(runs, thresholds)
    page = _page(
        title=title,
        generated_at=generated_at,
        questions=questions,
        headline=headline,
        thresholds=thresholds,
        runs=len(runs),
        previous=previous,
        previous_rows=previous_rows,
        identity=identity,
        images=images,
        ranking=ranking_section(ranking),
        states=states_section(states),
        changes=changes_section(changes),
    )
    summary = plots.summary_png(questions, headline, thresholds, title)
    paths = ReportFiles(
        html=out_dir / HTML_NAME,
        csv=out_dir / CSV_NAME,
        summary_png=out_dir / SUMMARY_NAME,
        markdown=_markdown(
            title,
            generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip(),
            questions,
            headline,
            thresholds,
        ),
        summary_markdown_image="",
    )
    write_atomic(paths.summary_png, summary)
    write_atomic(paths.csv, _csv_bytes(shown_questions(questions)))
    write_atomic(paths.html, page.encode("utf-8"))
    return ReportFiles(
        html=paths.html,
        csv=paths.csv,
        summary_png=paths.summary_png,
        markdown=paths.markdown,
        summary_markdown_image=markdown_image(paths.summary_png, "evaluation summary"),
    )
