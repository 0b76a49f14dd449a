"""The analyst report of a golden-set evaluation run: one self-contained HTML page, a CSV of the
per-question rows and a compact summary PNG (pure; no Dagster, no database).

:func:`render_report` writes three files into ``out_dir``:

* ``report.html`` -- one page with no external resource (inline CSS, plots as base64 PNGs, one
  small inline script; a Content-Security-Policy allows nothing else, so a stray external
  reference would not load and would be reported by :func:`check_renders`). Sections: headline
  metrics with thresholds and pass/fail; hit@5 by jurisdiction x query type; refusal correctness;
  metric means overall and per jurisdiction; latency; trend across runs; the ten worst questions;
  every question. Every text that comes from the data (questions, labels, answers, run ids,
  titles) goes through :func:`html.escape`.
* ``per_question.csv`` -- every field of every row (lists joined with ``"; "``).
* ``summary.png`` -- headline bars with threshold marks, and the hit@5 heatmap.

The ten worst questions are ordered by :func:`worst_key`: errors first, then refusal mistakes
(answered where a refusal was expected, then refused where an answer was expected), then citation
problems (citation validity below 1), then retrieval misses (reciprocal rank 0), then late hits
(lowest reciprocal rank first), then the rest. Ties go to the lower reciprocal rank, citation
validity, nDCG@10 and recall@5 (a missing value after any number), then the question id in
natural order ("q2" before "q10").

Output is deterministic: the same inputs (``generated_at`` included) give the same bytes, in any
row order (rows are sorted by question id). Figures use Matplotlib's object API on the Agg canvas
(no pyplot, no global state) and are saved as 256-colour PNGs without metadata, as in
:mod:`civicsetu_pipelines.graph.picture`. Each file is replaced atomically (the HTML last).

:func:`check_renders` opens the page in headless Chromium and reports script errors, console
errors and images that did not decode.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import html
import io
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure, SubFigure
from matplotlib.patches import Patch
from PIL import Image

from civicsetu_pipelines.base.files import write_atomic

HEADLINE = (
    "hit_at_5", "mrr", "ndcg_at_10", "recall_at_5", "citation_validity", "refusal_correctness",
)  # fmt: skip
QUERY_TYPES = (
    "fact_lookup",
    "cross_reference",
    "penalty_lookup",
    "temporal",
    "comparison",
    "out_of_scope",
)
QUESTION_METRICS = (
    "hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "recall_at_5", "recall_at_10",
    "reciprocal_rank", "ndcg_at_10", "citation_validity", "context_precision", "context_recall",
    "answer_similarity", "faithfulness", "response_relevancy",
)  # fmt: skip
ROW_FIELDS = (
    "question_id", "jurisdiction", "query_type", "query", "status", "refusal_reason",
    "expect_refusal", "refusal_correct", *QUESTION_METRICS, "latency_ms", "retrieved", "expected",
)  # fmt: skip
LIST_FIELDS = ("retrieved", "expected")
LABELS = {
    "hit_at_1": "hit@1", "hit_at_3": "hit@3", "hit_at_5": "hit@5", "hit_at_10": "hit@10",
    "recall_at_5": "recall@5", "recall_at_10": "recall@10", "reciprocal_rank": "MRR",
    "mrr": "MRR", "ndcg_at_10": "nDCG@10", "citation_validity": "citation validity",
    "context_precision": "context precision", "context_recall": "context recall",
    "answer_similarity": "answer similarity", "faithfulness": "faithfulness",
    "response_relevancy": "response relevancy", "refusal_correct": "refusal correctness",
    "refusal_correctness": "refusal correctness", "latency_p50_ms": "latency p50 (ms)",
    "latency_p95_ms": "latency p95 (ms)", "questions": "questions",
}  # fmt: skip
# The per-question field a headline mean is taken over (for its n and its threshold line).
HEADLINE_FIELD = {"mrr": "reciprocal_rank", "refusal_correctness": "refusal_correct"}
BAR_METRICS = (*QUESTION_METRICS[:9], "refusal_correct", *QUESTION_METRICS[9:])
SECTIONS = (
    ("headline", "Headline metrics"),
    ("hit5", "Hit@5 by jurisdiction and query type"),
    ("refusals", "Refusal correctness"),
    ("means", "Metric means by jurisdiction"),
    ("latency", "Latency"),
    ("trend", "Trend across runs"),
    ("worst", "Ten worst questions"),
    ("questions", "All questions"),
)
HTML_NAME, CSV_NAME, SUMMARY_NAME = "report.html", "per_question.csv", "summary.png"
WORST_COUNT = 10
MARKDOWN_WORST = 5
MAX_MARKDOWN_BYTES = 400_000
MAX_TREND_RUNS = 30
DPI = 100
THRESHOLD_SLACK = 1e-9  # a mean of 0.8999999999 from float sums passes a 0.9 threshold
NONE_TEXT = "—"
NO_JURISDICTION = "(none)"
OVERALL = "overall"
OVERALL_COLOUR = "#3b3b3b"
GROUP_COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
    "#aec7e8", "#ffbb78",
)  # fmt: skip
STATUS_COLOURS = {"answered": "#4c72b0", "refused": "#dd8452", "error": "#c44e52"}
PASS_COLOUR, FAIL_COLOUR, NEUTRAL_COLOUR = "#2e7d32", "#c62828", "#607d8b"

# The page's only script (its sha256 is allowed by the page's Content-Security-Policy). It
# collects script errors, console.error calls and images that did not decode into
# <pre id="render-errors">, and on load sets <body data-rendered="ok"> when there was none.
RENDER_CHECK_SCRIPT = """
(function () {
  "use strict";
  var problems = [];
  function flush() {
    var out = document.getElementById("render-errors");
    if (out) { out.textContent = problems.join("\\n"); }
  }
  window.onerror = function (message, source, line) {
    problems.push("script error: " + message + " (" + source + ":" + line + ")");
    flush();
  };
  var consoleError = console.error;
  console.error = function () {
    problems.push("console.error: " + Array.prototype.join.call(arguments, " "));
    flush();
    return consoleError.apply(console, arguments);
  };
  window.addEventListener("load", function () {
    var images = document.images;
    for (var i = 0; i < images.length; i++) {
      var img = images[i];
      if (!(img.complete && img.naturalWidth > 0)) {
        problems.push("broken image: " + (img.alt || img.id || "image " + (i + 1)));
      }
    }
    flush();
    document.body.dataset.rendered = problems.length ? "failed" : "ok";
  });
})();
"""

_STYLE = """
:root { --fg: #1d232a; --muted: #5f6b76; --line: #d9dee3; --bg-alt: #f5f7f9;
  --pass: #2e7d32; --fail: #c62828; --na: #607d8b; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff; line-height: 1.45;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Helvetica Neue",
  Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 0 24px 48px; }
header { border-bottom: 3px solid #1d3557; padding: 20px 0 12px; margin-bottom: 8px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 20px 0 8px; }
.meta { color: var(--muted); margin: 0; }
nav { font-size: 14px; margin: 10px 0 0; }
nav a { margin-right: 14px; color: #1d3557; }
p.note, figcaption { color: var(--muted); font-size: 13px; }
figure { margin: 8px 0 16px; }
figure img { max-width: 100%; height: auto; display: block; border: 1px solid var(--line); }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 14px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left;
  vertical-align: top; }
th { background: var(--bg-alt); font-weight: 600; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.metrics { font-size: 12.5px; }
tbody tr:nth-child(even) { background: #fafbfc; }
.verdict { display: inline-block; margin: 10px 0 4px; padding: 8px 14px; border-radius: 6px;
  font-weight: 600; color: #fff; }
.verdict.pass { background: var(--pass); } .verdict.fail { background: var(--fail); }
.verdict.na { background: var(--na); }
.badge { display: inline-block; min-width: 44px; text-align: center; padding: 1px 8px;
  border-radius: 10px; font-size: 12px; font-weight: 700; color: #fff; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.badge.na { background: var(--na); }
.up { color: var(--pass); } .down { color: var(--fail); }
td.good { background: #e3f4e4; } td.fair { background: #fff4d6; } td.poor { background: #fbe1e1; }
.tag { display: inline-block; padding: 0 6px; margin: 1px 2px 1px 0; border-radius: 4px;
  border: 1px solid var(--line); font-size: 12.5px; white-space: nowrap; }
.tag.found { background: #d7f0d9; border-color: #7cc383; }
.tag.missing { background: #fbe1e1; border-color: #e39a9a; }
.tag.hit { background: #d7f0d9; border-color: #7cc383; font-weight: 600; }
.rank { color: var(--muted); font-size: 11px; margin-right: 2px; }
.why { font-weight: 600; }
.query { min-width: 200px; max-width: 420px; }
.small { font-size: 12.5px; color: var(--muted); }
details > summary { cursor: pointer; color: #1d3557; }
.scroll { overflow-x: auto; }
#render-errors { color: var(--fail); white-space: pre-wrap; }
#render-errors:empty { display: none; }
"""


# ---------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`render_report` wrote."""

    html: Path
    csv: Path
    summary_png: Path
    markdown: str  # headline table and the five worst questions (Dagster metadata)
    summary_markdown_image: str  # summary_png as an inline Markdown image, or a text line


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


@dataclass(frozen=True)
class _Question:
    qid: str
    jurisdiction: str  # NO_JURISDICTION when None
    query_type: str
    query: str
    status: str
    refusal_reason: str | None
    expect_refusal: bool
    refusal_correct: bool | None
    metrics: dict[str, float | None]  # QUESTION_METRICS and refusal_correct (1.0 / 0.0)
    latency_ms: float | None
    retrieved: tuple[str, ...]
    expected: tuple[str, ...]
    answer: str | None
    raw: Mapping[str, Any]


def _num(value: Any) -> float | None:
    """A metric as a float; ``None`` for a missing or non-finite value (None, NaN, "")."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _flag(value: Any) -> bool | None:
    if value is None or isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in {"true", "t", "1", "yes"}:
            return True
        if text in {"false", "f", "0", "no"}:
            return False
        return None
    return bool(value)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, float) and math.isnan(value):
        return None
    return str(value)


def _labels(value: Any) -> tuple[str, ...]:
    if value is None or isinstance(value, float) and math.isnan(value):
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(";") if part.strip())
    return tuple(str(v) for v in value)


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key in which runs of digits compare as numbers: "q2" < "q10"."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text))


def _question(row: Mapping[str, Any]) -> _Question:
    metrics = {m: _num(row.get(m)) for m in QUESTION_METRICS}
    refusal_correct = _flag(row.get("refusal_correct"))
    metrics["refusal_correct"] = None if refusal_correct is None else float(refusal_correct)
    return _Question(
        qid=_text(row.get("question_id")) or "?",
        jurisdiction=_text(row.get("jurisdiction")) or NO_JURISDICTION,
        query_type=_text(row.get("query_type")) or "?",
        query=_text(row.get("query")) or "",
        status=_text(row.get("status")) or "?",
        refusal_reason=_text(row.get("refusal_reason")),
        expect_refusal=bool(_flag(row.get("expect_refusal"))),
        refusal_correct=refusal_correct,
        metrics=metrics,
        latency_ms=_num(row.get("latency_ms")),
        retrieved=_labels(row.get("retrieved")),
        expected=_labels(row.get("expected")),
        answer=_text(row.get("answer")),
        raw=row,
    )


def _jurisdiction_key(name: str) -> tuple[int, str]:
    """CENTRAL (the Act) first, then states alphabetically, questions without one last."""
    return (0 if name == "CENTRAL" else 2 if name == NO_JURISDICTION else 1, name)


def _query_types(questions: Sequence[_Question]) -> list[str]:
    present = {q.query_type for q in questions}
    return [t for t in QUERY_TYPES if t in present] + sorted(present - set(QUERY_TYPES))


def _jurisdictions(questions: Sequence[_Question]) -> list[str]:
    return sorted({q.jurisdiction for q in questions}, key=_jurisdiction_key)


def _mean(values: Sequence[float | None]) -> tuple[float | None, int]:
    present = [v for v in values if v is not None]
    return (sum(present) / len(present) if present else None), len(present)


def _fmt(value: float | None, digits: int = 2) -> str:
    return NONE_TEXT if value is None else f"{value:.{digits}f}"


def _label(metric: str) -> str:
    return LABELS.get(metric, metric.replace("_", " "))


def _passes(value: float | None, threshold: float) -> bool:
    return value is not None and value >= threshold - THRESHOLD_SLACK


# ---------------------------------------------------------------------------------------------
# The worst questions


def problem(row: Mapping[str, Any] | _Question) -> tuple[int, str]:
    """``(tier, reason)``: what is most wrong with a question; lower tiers are worse.

    0 error, 1 answered where a refusal was expected, 2 refused where an answer was expected
    (3 any other refusal mistake), 4 citation validity below 1, 5 no expected unit retrieved
    (reciprocal rank 0), 6 first expected unit below rank 1, 7 nothing wrong."""
    q = row if isinstance(row, _Question) else _question(row)
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


def worst_key(row: Mapping[str, Any] | _Question) -> tuple[Any, ...]:
    """Sort key of the worst questions (worst first); see the module docstring."""
    q = row if isinstance(row, _Question) else _question(row)
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
# Figures


def _plain(text: str) -> str:
    """Data text for a Matplotlib label: ``$`` escaped, so it is never read as mathtext."""
    return text.replace("$", r"\$")


def _png(fig: Figure) -> bytes:
    """The figure as a 256-colour PNG without metadata (the bytes depend only on the picture)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = Image.fromarray(np.asarray(canvas.buffer_rgba())).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    fig.clear()
    return out.getvalue()


def _png_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def _message(fig: Figure, text: str) -> None:
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=13, color="#777777")


def _grid(
    questions: Sequence[_Question], metric: str, columns: Sequence[str], rows: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means of ``metric`` per (jurisdiction, query type), the number of scored questions and
    the number of questions in each cell."""
    values = np.full((len(rows), len(columns)), np.nan)
    scored = np.zeros((len(rows), len(columns)), dtype=int)
    total = np.zeros((len(rows), len(columns)), dtype=int)
    for i, jurisdiction in enumerate(rows):
        for j, query_type in enumerate(columns):
            cell = [
                q for q in questions if (q.jurisdiction, q.query_type) == (jurisdiction, query_type)
            ]
            mean, n = _mean([q.metrics[metric] for q in cell])
            values[i, j] = np.nan if mean is None else mean
            scored[i, j], total[i, j] = n, len(cell)
    return values, scored, total


def _scored_types(questions: Sequence[_Question], metric: str) -> list[str]:
    return [
        t
        for t in _query_types(questions)
        if any(q.metrics[metric] is not None for q in questions if q.query_type == t)
    ]


def _draw_heatmap(
    fig: Figure | SubFigure,
    ax: Axes,
    questions: Sequence[_Question],
    metric: str,
    columns: Sequence[str],
    title: str,
    *,
    font: float = 9.0,
) -> None:
    rows = _jurisdictions([q for q in questions if q.query_type in columns])
    ax.set_title(title, fontsize=font + 1, loc="left")
    if not rows or not columns:
        ax.set_axis_off()
        ax.text(
            0.5,
            0.5,
            f"no questions with {_label(metric)}",
            ha="center",
            va="center",
            fontsize=12,
            color="#777777",
            transform=ax.transAxes,
        )
        return
    values, scored, total = _grid(questions, metric, columns, rows)
    cmap = colormaps["RdYlGn"].with_extremes(bad="#eeeeee")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(columns)):
            if total[i, j] == 0:
                ax.text(
                    j, i, NONE_TEXT, ha="center", va="center", fontsize=font + 2, color="#8a8a8a"
                )
                continue
            if scored[i, j] == 0:
                text, colour = f"n/a\n0 of {total[i, j]} scored", "#6f6f6f"
            else:
                n = f"n={scored[i, j]}" + (f"/{total[i, j]}" if scored[i, j] != total[i, j] else "")
                text = f"{values[i, j]:.2f}\n{n}"
                r, g, b, _ = cmap(float(values[i, j]))
                colour = "#111111" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "#ffffff"
            ax.text(
                j, i, text, ha="center", va="center", fontsize=font, color=colour, linespacing=1.25
            )
    ax.set_xticks(range(len(columns)), [_plain(c.replace("_", " ")) for c in columns],
                  fontsize=font)  # fmt: skip
    ax.set_yticks(range(len(rows)), [_plain(r) for r in rows], fontsize=font)
    ax.tick_params(length=0)
    ax.set_xticks(np.arange(-0.5, len(columns), 1.0), minor=True)
    ax.set_yticks(np.arange(-0.5, len(rows), 1.0), minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    bar.ax.tick_params(labelsize=font - 1)


def _heatmap_png(
    questions: Sequence[_Question], metric: str, columns: Sequence[str], title: str
) -> bytes:
    n_rows = max(len(_jurisdictions([q for q in questions if q.query_type in columns])), 1)
    width = min(max(2.6 + 1.05 * len(columns), 5.0), 12.0)
    fig = Figure(figsize=(width, 1.0 + 0.5 * n_rows), dpi=DPI, layout="constrained")
    _draw_heatmap(fig, fig.add_subplot(), questions, metric, columns, title)
    return _png(fig)


def _groups(questions: Sequence[_Question]) -> list[tuple[str, list[_Question]]]:
    out = [(OVERALL, list(questions))]
    for name in _jurisdictions(questions):
        out.append((name, [q for q in questions if q.jurisdiction == name]))
    return out


def _group_colours(names: Sequence[str]) -> dict[str, str]:
    others = [n for n in names if n != OVERALL]
    colours = {n: GROUP_COLOURS[i % len(GROUP_COLOURS)] for i, n in enumerate(others)}
    return {OVERALL: OVERALL_COLOUR, **colours}


def _threshold_for(metric: str, thresholds: Mapping[str, float]) -> float | None:
    for key, value in thresholds.items():
        if key == metric or HEADLINE_FIELD.get(key) == metric:
            return float(value)
    return None


def _bars_png(questions: Sequence[_Question], thresholds: Mapping[str, float]) -> bytes:
    groups = _groups(questions)
    names = [name for name, _ in groups]
    colours = _group_colours(names)
    ncols = 5
    nrows = math.ceil(len(BAR_METRICS) / ncols)
    fig = Figure(figsize=(12.0, 0.6 + 2.0 * nrows), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for index, metric in enumerate(BAR_METRICS):
        ax = axes[index // ncols][index % ncols]
        threshold = _threshold_for(metric, thresholds)
        suffix = "" if threshold is None else f" (≥ {threshold:g})"
        ax.set_title(_label(metric) + suffix, fontsize=9, loc="left")
        ax.set_ylim(0.0, 1.18)
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_xticks([])
        ax.set_yticks([0.0, 0.5, 1.0])
        ax.tick_params(labelsize=8)
        ax.grid(axis="y", color="#e6e6e6", linewidth=0.8)
        ax.set_axisbelow(True)
        for spine in ("top", "right"):
            ax.spines[spine].set_visible(False)
        means = [_mean([q.metrics[metric] for q in members]) for _, members in groups]
        if all(m is None for m, _ in means):
            ax.text(
                0.5,
                0.5,
                "not computed",
                ha="center",
                va="center",
                fontsize=10,
                color="#888888",
                transform=ax.transAxes,
            )
            continue
        for x, (name, (mean, _n)) in enumerate(zip(names, means, strict=True)):
            if mean is None:
                ax.text(x, 0.03, "n/a", ha="center", va="bottom", fontsize=7, color="#888888")
                continue
            ax.bar(x, mean, width=0.75, color=colours[name])
            ax.text(x, mean + 0.02, f"{mean:.2f}", ha="center", va="bottom", fontsize=6.5,
                    bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none",
                          "alpha": 0.75})  # fmt: skip
        if threshold is not None:
            ax.axhline(threshold, color="#222222", linestyle=(0, (4, 2)), linewidth=1.0)
    for index in range(len(BAR_METRICS), nrows * ncols):
        axes[index // ncols][index % ncols].set_axis_off()
    handles = [Patch(color=colours[name], label=_plain(name)) for name in names]
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncol=min(len(names), 8),
        fontsize=9,
        frameon=False,
    )
    return _png(fig)


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _latency_png(questions: Sequence[_Question]) -> bytes:
    fig = Figure(figsize=(11.0, 3.6), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    latencies = [q.latency_ms for q in questions if q.latency_ms is not None]
    if not latencies:
        ax.set_axis_off()
        _message(fig, "no latencies recorded")
        return _png(fig)
    edges = np.histogram_bin_edges(np.asarray(latencies), bins=min(30, max(5, len(latencies))))
    if edges[0] == edges[-1]:
        edges = np.array([edges[0] - 0.5, edges[0] + 0.5])
    statuses = [
        s for s in ("answered", "refused", "error") if any(q.status == s for q in questions)
    ]
    others = sorted({q.status for q in questions} - set(statuses))
    series, labels, colours = [], [], []
    for status in statuses + others:
        values = [
            q.latency_ms for q in questions if q.status == status and q.latency_ms is not None
        ]
        series.append(values)
        labels.append(f"{status} ({len(values)})")
        colours.append(STATUS_COLOURS.get(status, "#999999"))
    ax.hist(
        series,
        bins=[float(x) for x in edges],
        stacked=True,
        color=colours,
        label=labels,
        edgecolor="white",
        linewidth=0.5,
    )
    p50, p95 = _percentile(latencies, 50), _percentile(latencies, 95)
    top = ax.get_ylim()[1]
    ax.set_ylim(0, top * 1.18)
    for value, name, style in ((p50, "p50", "-"), (p95, "p95", "--")):
        ax.axvline(value, color="#222222", linestyle=style, linewidth=1.2)
        ax.text(value, top * 1.12, f" {name} {value:,.0f} ms", ha="left", va="top", fontsize=9)
    ax.set_xlabel("latency (ms)", fontsize=9)
    ax.set_ylabel("questions", fontsize=9)
    ax.tick_params(labelsize=8)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    ax.legend(fontsize=8, frameon=False, loc="upper right")
    return _png(fig)


@dataclass(frozen=True)
class _Run:
    label: str
    metrics: dict[str, float | None]
    current: bool


def _when(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return _text(value) or "?"


def _runs(
    history: Sequence[Mapping[str, Any]],
    headline: Mapping[str, float | None],
    run_id: str | None,
) -> tuple[list[_Run], Mapping[str, Any] | None]:
    """The runs of the trend (oldest first, the last one this run) and the run before this one.

    This run is the history entry with ``run_id`` or, without one, the last entry when its
    headline metrics equal ``headline``; when it is not in the history it is appended."""

    def same(metrics: Mapping[str, Any]) -> bool:
        return all(_num(metrics.get(k)) == _num(headline.get(k)) for k in HEADLINE)

    entries = list(history)
    current = None
    for index, entry in enumerate(entries):
        if run_id is not None and _text(entry.get("run_id")) == run_id:
            current = index
    if current is None and run_id is None and entries and same(entries[-1].get("metrics") or {}):
        current = len(entries) - 1
    if current is not None:
        entries = entries[: current + 1]
    previous = entries[current - 1] if current is not None and current > 0 else None
    if current is None:
        previous = entries[-1] if entries else None
    runs = [
        _Run(
            f"{_when(e.get('started_at'))}\n{(_text(e.get('run_id')) or '?')[:8]}",
            {k: _num((e.get("metrics") or {}).get(k)) for k in HEADLINE},
            index == current,
        )
        for index, e in enumerate(entries)
    ]
    if current is None:
        runs.append(_Run("this run", {k: _num(headline.get(k)) for k in HEADLINE}, True))
    return runs[-MAX_TREND_RUNS:], previous


def _trend_png(runs: Sequence[_Run], thresholds: Mapping[str, float]) -> bytes:
    fig = Figure(figsize=(12.0, 5.6), dpi=DPI, layout="constrained")
    axes = fig.subplots(2, 3, squeeze=False, sharex=True)
    xs = np.arange(len(runs))
    step = max(1, math.ceil(len(runs) / 10))
    ticks = [i for i in range(len(runs)) if (len(runs) - 1 - i) % step == 0]
    for index, metric in enumerate(HEADLINE):
        ax = axes[index // 3][index % 3]
        ys = np.array([np.nan if r.metrics[metric] is None else r.metrics[metric] for r in runs])
        ax.plot(xs, ys, color="#1d3557", linewidth=1.6, marker="o", markersize=4.5)
        for i, run in enumerate(runs):
            if run.current and not np.isnan(ys[i]):
                ax.plot([i], [ys[i]], marker="o", markersize=9, color="#e63946", zorder=5)
                ax.annotate(
                    f"{ys[i]:.2f}",
                    (i, ys[i]),
                    xytext=(0, 8),
                    textcoords="offset points",
                    ha="center",
                    fontsize=8,
                    color="#e63946",
                )
        threshold = thresholds.get(metric)
        if threshold is not None:
            ax.axhline(float(threshold), color="#555555", linestyle=(0, (4, 2)), linewidth=1.0)
        ax.set_title(_label(metric), fontsize=10, loc="left")
        ax.set_ylim(-0.02, 1.1)
        ax.set_xlim(-0.5, max(len(runs) - 0.5, 0.5))
        ax.set_xticks(
            ticks,
            [_plain(runs[i].label) for i in ticks],
            fontsize=7,
            rotation=30 if len(ticks) > 4 else 0,
            ha="right" if len(ticks) > 4 else "center",
        )
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", color="#e6e6e6", linewidth=0.8)
        for spine in ("top", "right"):
            ax.spines[spine].set_visible(False)
        if all(np.isnan(ys)):
            ax.text(
                0.5,
                0.5,
                "not computed",
                ha="center",
                va="center",
                fontsize=10,
                color="#888888",
                transform=ax.transAxes,
            )
    return _png(fig)


def _summary_png(
    questions: Sequence[_Question],
    headline: Mapping[str, float | None],
    thresholds: Mapping[str, float],
    title: str,
) -> bytes:
    fig = Figure(figsize=(12.0, 4.4), dpi=DPI, layout="constrained")
    grid = fig.add_gridspec(1, 2, width_ratios=(1.0, 1.35))
    left, right = fig.add_subfigure(grid[0]), fig.add_subfigure(grid[1])
    ax = left.add_subplot()
    metrics = list(HEADLINE)
    ys = np.arange(len(metrics))[::-1]
    for y, metric in zip(ys, metrics, strict=True):
        value = _num(headline.get(metric))
        threshold = thresholds.get(metric)
        if value is None:
            ax.text(0.01, y, "not computed", va="center", fontsize=9, color="#888888")
        else:
            colour = (
                NEUTRAL_COLOUR
                if threshold is None
                else PASS_COLOUR
                if _passes(value, threshold)
                else FAIL_COLOUR
            )
            ax.barh(y, min(max(value, 0.0), 1.0), height=0.62, color=colour)
            verdict = "" if threshold is None else " pass" if colour == PASS_COLOUR else " FAIL"
            ax.text(1.04, y, f"{value:.3f}{verdict}", va="center", fontsize=9, color=colour)
        if threshold is not None:
            ax.plot([threshold, threshold], [y - 0.42, y + 0.42], color="#111111", linewidth=2.0)
    ax.set_yticks(ys, [_label(m) for m in metrics], fontsize=9)
    ax.set_xlim(0.0, 1.32)
    ax.set_xticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    ax.set_title("headline means (black tick: threshold)", fontsize=10, loc="left")
    columns = _scored_types(questions, "hit_at_5")
    _draw_heatmap(
        right,
        right.add_subplot(),
        questions,
        "hit_at_5",
        columns,
        "hit@5 by jurisdiction × query type",
        font=8.0,
    )
    fig.suptitle(_plain(f"{title} — {len(questions)} questions"), fontsize=11)
    return _png(fig)


# ---------------------------------------------------------------------------------------------
# HTML


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _img(data: bytes, alt: str) -> str:
    width, height = _png_size(data)
    uri = base64.b64encode(data).decode("ascii")
    return (
        f'<img src="data:image/png;base64,{uri}" alt="{_e(alt)}" width="{width}" height="{height}">'
    )


def _figure(data: bytes, alt: str, caption: str) -> str:
    return f"<figure>{_img(data, alt)}<figcaption>{caption}</figcaption></figure>"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _cell(value: float | None, digits: int = 2) -> str:
    if value is None:
        return f'<td class="num">{NONE_TEXT}</td>'
    grade = "good" if value >= 0.8 else "fair" if value >= 0.5 else "poor"
    return f'<td class="num {grade}">{value:.{digits}f}</td>'


def _badge(kind: str, text: str) -> str:
    return f'<span class="badge {kind}">{_e(text)}</span>'


def _headline_html(
    questions: Sequence[_Question],
    headline: Mapping[str, float | None],
    thresholds: Mapping[str, float],
    previous: Mapping[str, Any] | None,
) -> str:
    keys = list(HEADLINE) + [k for k in thresholds if k not in HEADLINE]
    failed, missing = [], []
    body = []
    before = (previous or {}).get("metrics") or {}
    for key in keys:
        value = _num(headline.get(key))
        source = HEADLINE_FIELD.get(key, key)
        n = sum(1 for q in questions if q.metrics.get(source) is not None)
        threshold = thresholds.get(key)
        if threshold is None:
            status = _badge("na", "no threshold")
        elif value is None:
            status = _badge("na", "MISSING")
            missing.append(_label(key))
        elif _passes(value, threshold):
            status = _badge("pass", "PASS")
        else:
            status = _badge("fail", "FAIL")
            failed.append(_label(key))
        prior = _num(before.get(key))
        if prior is None or value is None:
            change = NONE_TEXT
        else:
            delta = value - prior
            arrow, kind = (
                ("▲", "up") if delta > 5e-4 else ("▼", "down") if delta < -5e-4 else ("", "")
            )
            change = f'<span class="{kind}">{arrow} {delta:+.3f}</span>' if kind else "±0.000"
        body.append(
            f'<tr><td>{_e(_label(key))}</td><td class="num">{_fmt(value, 3)}</td>'
            f'<td class="num">{n}</td>'
            f'<td class="num">{"" if threshold is None else "≥ " + _e(f"{threshold:g}")}</td>'
            f'<td>{status}</td><td class="num">{_fmt(prior, 3)}</td>'
            f'<td class="num">{change}</td></tr>'
        )
    if not thresholds:
        verdict = '<div class="verdict na">No thresholds set</div>'
    elif failed or missing:
        parts = []
        if failed:
            parts.append(f"below threshold: {', '.join(failed)}")
        if missing:
            parts.append(f"not computed: {', '.join(missing)}")
        bad = len(failed) + len(missing)
        verdict = (
            f'<div class="verdict fail">FAIL — {bad} of {len(thresholds)} thresholds not '
            f"met ({_e('; '.join(parts))})</div>"
        )
    else:
        verdict = f'<div class="verdict pass">PASS — all {len(thresholds)} thresholds met</div>'
    table = (
        '<table><thead><tr><th>Metric</th><th class="num">Value</th><th class="num">n</th>'
        '<th class="num">Threshold</th><th>Status</th><th class="num">Previous run</th>'
        f'<th class="num">Change</th></tr></thead><tbody>{"".join(body)}</tbody></table>'
    )
    other = [k for k in headline if k not in keys]
    extra = ""
    if other:
        cells = "".join(
            f'<tr><td>{_e(_label(k))}</td><td class="num">'
            f"{_fmt(_num(headline.get(k)), 0 if k == 'questions' else 3)}</td></tr>"
            for k in other
        )
        extra = (
            f"<details><summary>Other means ({len(other)})</summary><table><thead><tr>"
            f'<th>Metric</th><th class="num">Value</th></tr></thead><tbody>{cells}'
            "</tbody></table></details>"
        )
    note = (
        '<p class="note">n: questions the metric is computed on (retrieval metrics: '
        "questions with expected units; citation validity: answers with citations; refusal "
        "correctness: all). A value passes when it is at least its threshold.</p>"
    )
    return verdict + table + note + extra


def _refusal_table(questions: Sequence[_Question]) -> str:
    body = []
    for query_type in [*_query_types(questions), None]:
        members = [q for q in questions if query_type is None or q.query_type == query_type]
        if not members:
            continue
        correct = [q.metrics["refusal_correct"] for q in members]
        mean, _ = _mean(correct)
        missed = sum(1 for q in members if problem(q)[0] == 1)
        false_refusals = sum(1 for q in members if problem(q)[0] == 2)
        name = "all" if query_type is None else query_type.replace("_", " ")
        tag = "th" if query_type is None else "td"
        body.append(
            f'<tr><{tag}>{_e(name)}</{tag}><td class="num">{len(members)}</td>'
            f'<td class="num">{sum(q.expect_refusal for q in members)}</td>'
            f'<td class="num">{sum(q.status == "refused" for q in members)}</td>'
            f'{_cell(mean)}<td class="num">{missed}</td><td class="num">{false_refusals}</td>'
            f'<td class="num">{sum(q.status == "error" for q in members)}</td></tr>'
        )
    return (
        '<table><thead><tr><th>Query type</th><th class="num">Questions</th>'
        '<th class="num">Expect refusal</th><th class="num">Refused</th>'
        '<th class="num">Refusal correctness</th><th class="num">Answered, should refuse</th>'
        '<th class="num">Refused, should answer</th><th class="num">Errors</th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _means_table(questions: Sequence[_Question]) -> str:
    groups = _groups(questions)
    head = "".join(f'<th class="num">{_e(name)} (n={len(m)})</th>' for name, m in groups)
    body = []
    for metric in BAR_METRICS:
        cells = []
        for _, members in groups:
            mean, n = _mean([q.metrics[metric] for q in members])
            cells.append(
                _cell(mean).replace("</td>", f' <span class="small">({n})</span></td>')
                if mean is not None
                else _cell(None)
            )
        body.append(f"<tr><td>{_e(_label(metric))}</td>{''.join(cells)}</tr>")
    return (
        f'<div class="scroll"><table><thead><tr><th>Metric</th>{head}</tr></thead><tbody>'
        f"{''.join(body)}</tbody></table></div>"
    )


def _tags_expected(q: _Question) -> str:
    if not q.expected:
        return '<span class="small">none (a refusal is expected)</span>' if q.expect_refusal else ""
    found = set(q.retrieved)
    out = []
    for label in q.expected:
        if label in found:
            rank = q.retrieved.index(label) + 1
            out.append(
                f'<span class="tag found" title="retrieved at rank {rank}">✓ '
                f'{_e(label)} <span class="rank">#{rank}</span></span>'
            )
        else:
            out.append(f'<span class="tag missing" title="not retrieved">✗ {_e(label)}</span>')
    return " ".join(out)


def _tags_retrieved(q: _Question, shown: int = 5, limit: int = 10) -> str:
    """The top ``shown`` retrieved units, ranks up to ``limit`` folded; expected ones bold."""
    if not q.retrieved:
        return '<span class="small">nothing retrieved</span>'
    expected = set(q.expected)
    tags = []
    for rank, label in enumerate(q.retrieved[:limit], start=1):
        kind = "tag hit" if label in expected else "tag"
        tags.append(f'<span class="{kind}"><span class="rank">{rank}</span>{_e(label)}</span>')
    out = " ".join(tags[:shown])
    if len(tags) > shown:
        hits = sum(1 for label in q.retrieved[shown:limit] if label in expected)
        note = f", {hits} expected" if hits else ""
        out += (f'<details><summary class="small">ranks {shown + 1}–{len(tags)}{note}</summary>'
                f"{' '.join(tags[shown:])}</details>")  # fmt: skip
    if len(q.retrieved) > limit:
        out += f' <span class="small">+{len(q.retrieved) - limit} beyond rank {limit}</span>'
    return out


def _status_text(q: _Question) -> str:
    text = _e(q.status)
    if q.refusal_reason:
        text += f' <span class="small">({_e(q.refusal_reason)})</span>'
    if q.expect_refusal:
        text += '<br><span class="small">refusal expected</span>'
    return text


def _metrics_text(q: _Question) -> str:
    parts = []
    for metric in ("reciprocal_rank", "hit_at_5", "ndcg_at_10", "recall_at_5", "citation_validity"):
        value = q.metrics[metric]
        if value is not None:
            name = {"reciprocal_rank": "RR", "citation_validity": "cit. validity"}.get(
                metric, _label(metric)
            )
            parts.append(f"{_e(name)} {value:.2f}")
    if q.latency_ms is not None:
        parts.append(f"{q.latency_ms:,.0f} ms")
    return "<br>".join(parts) or NONE_TEXT


def _worst_html(worst: Sequence[_Question]) -> str:
    if not worst:
        return '<p class="note">No questions.</p>'
    body = []
    for index, q in enumerate(worst, start=1):
        _, why = problem(q)
        answer = ""
        if q.answer:
            answer = (
                f'<details><summary class="small">answer</summary><div class="small">'
                f"{_e(q.answer)}</div></details>"
            )
        body.append(
            f'<tr data-question-id="{_e(q.qid)}"><td class="num">{index}</td><td>{_e(q.qid)}<br>'
            f'<span class="small">{_e(q.jurisdiction)} · {_e(q.query_type)}</span></td>'
            f'<td class="why">{_e(why)}</td><td class="query">{_e(q.query)}{answer}</td>'
            f"<td>{_status_text(q)}</td><td>{_tags_expected(q)}</td><td>{_tags_retrieved(q)}</td>"
            f'<td class="num metrics">{_metrics_text(q)}</td></tr>'
        )
    return (
        '<div class="scroll"><table id="worst-table"><thead><tr><th class="num">#</th><th>Question'
        "</th><th>Problem</th><th>Query</th><th>Status</th><th>Expected (✓ retrieved, #rank)</th>"
        '<th>Retrieved (rank; expected in green)</th><th class="num">Metrics</th></tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


_FULL_COLUMNS = ("hit_at_5", "reciprocal_rank", "ndcg_at_10", "recall_at_5", "citation_validity")


def _questions_html(questions: Sequence[_Question]) -> str:
    head = "".join(
        f'<th class="num">{_e("RR" if m == "reciprocal_rank" else _label(m))}</th>'
        for m in _FULL_COLUMNS
    )
    body = []
    for q in questions:
        refusal = NONE_TEXT if q.refusal_correct is None else "✓" if q.refusal_correct else "✗"
        refusal_cell = (
            '<td class="num poor">✗</td>'
            if q.refusal_correct is False
            else f'<td class="num">{refusal}</td>'
        )
        latency = NONE_TEXT if q.latency_ms is None else f"{q.latency_ms:,.0f}"
        body.append(
            f"<tr><td>{_e(q.qid)}</td><td>{_e(q.jurisdiction)}</td><td>{_e(q.query_type)}</td>"
            f'<td class="query">{_e(q.query)}</td><td>{_status_text(q)}</td>'
            f"{''.join(_cell(q.metrics[m]) for m in _FULL_COLUMNS)}{refusal_cell}"
            f'<td class="num">{latency}</td></tr>'
        )
    return (
        '<div class="scroll"><table id="questions-table"><thead><tr><th>Question</th>'
        "<th>Jurisdiction</th><th>Type</th><th>Query</th><th>Status</th>"
        f'{head}<th class="num">Refusal correct</th><th class="num">Latency (ms)</th></tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(RENDER_CHECK_SCRIPT.encode("utf-8")).digest())
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest.decode('ascii')}'; base-uri 'none'; form-action 'none'"
    )


def _page(
    *,
    title: str,
    generated_at: datetime,
    questions: Sequence[_Question],
    headline: Mapping[str, float | None],
    thresholds: Mapping[str, float],
    history_runs: Sequence[_Run],
    previous: Mapping[str, Any] | None,
    images: Mapping[str, bytes],
) -> str:
    heading = dict(SECTIONS)
    statuses = {s: sum(q.status == s for q in questions) for s in ("answered", "refused", "error")}
    jurisdictions = _jurisdictions(questions)
    when = generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    nav = "".join(f'<a href="#{key}">{_e(name)}</a>' for key, name in SECTIONS)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{_csp()}">',  # no " < > &
        f"<title>{_e(title)}</title>",
        f"<style>{_STYLE}</style>",
        f"<script>{RENDER_CHECK_SCRIPT}</script>",
        "</head>",
        "<body>",
        '<pre id="render-errors"></pre>',
        "<main>",
        "<header>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta">Generated {_e(when)} · <strong>{len(questions)}</strong> questions '
        f"({statuses['answered']} answered, {statuses['refused']} refused, "
        f"{_count(statuses['error'], 'error')}; {sum(q.expect_refusal for q in questions)} "
        f"expect a refusal) · {_count(len(jurisdictions), 'jurisdiction')}: "
        f"{_e(', '.join(jurisdictions))}</p>",
        f"<nav>{nav}</nav>",
        "</header>",
        f'<section id="headline"><h2>{heading["headline"]}</h2>',
        _headline_html(questions, headline, thresholds, previous),
        "</section>",
        f'<section id="hit5"><h2>{heading["hit5"]}</h2>',
        _figure(
            images["hit5"],
            "heatmap of hit@5 by jurisdiction and query type",
            "Mean hit@5 per cell (n: questions scored; n=a/b: a of b questions in the cell "
            "have a hit@5). “—”: no question. Questions that expect a refusal have no hit@5; "
            "query types with only such questions are in the next section.",
        ),
        "</section>",
        f'<section id="refusals"><h2>{heading["refusals"]}</h2>',
        _figure(
            images["refusals"],
            "heatmap of refusal correctness by jurisdiction and query type",
            "Share of questions whose refusal (or answer) was the right call, per cell.",
        ),
        _refusal_table(questions),
        "</section>",
        f'<section id="means"><h2>{heading["means"]}</h2>',
        _figure(
            images["means"],
            "bars of each metric's mean, overall and per jurisdiction",
            "Means over the questions each metric applies to; dashed line: threshold. "
            "“not computed”: no question has the metric.",
        ),
        "<h3>The same means as numbers (questions scored in brackets)</h3>",
        _means_table(questions),
        "</section>",
        f'<section id="latency"><h2>{heading["latency"]}</h2>',
        _latency_section(questions, images["latency"]),
        "</section>",
        f'<section id="trend"><h2>{heading["trend"]}</h2>',
        _trend_section(history_runs, images.get("trend")),
        "</section>",
        f'<section id="worst"><h2>{heading["worst"]}</h2>',
        '<p class="note">Order: errors; answered where a refusal was expected; refused where an '
        "answer was expected; citation validity below 1 (lowest first); no expected unit "
        "retrieved (RR 0); first expected unit below rank 1 (lowest RR first); the rest. Ties: "
        "lower RR, citation validity, nDCG@10, recall@5, then question id.</p>",
        _worst_html(sorted(questions, key=worst_key)[:WORST_COUNT]),
        "</section>",
        f'<section id="questions"><h2>{heading["questions"]}</h2>',
        f'<p class="note">Every question, by id. All fields (retrieved and expected units too) '
        f'are in <a href="{CSV_NAME}">{CSV_NAME}</a> next to this page. Cell colours: ≥ 0.8 '
        "green, ≥ 0.5 amber, below red.</p>",
        _questions_html(questions),
        "</section>",
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _latency_section(questions: Sequence[_Question], image: bytes) -> str:
    latencies = [q.latency_ms for q in questions if q.latency_ms is not None]
    if latencies:
        stats = (
            f"p50 {_percentile(latencies, 50):,.0f} ms · p95 {_percentile(latencies, 95):,.0f}"
            f" ms · max {max(latencies):,.0f} ms over {len(latencies)} questions"
        )
    else:
        stats = "no latencies recorded"
    return _figure(
        image,
        "histogram of latencies in milliseconds with p50 and p95 marked",
        _e(f"End-to-end latency per question, stacked by status: {stats}."),
    )


def _trend_section(runs: Sequence[_Run], image: bytes | None) -> str:
    if image is None:
        return (
            '<p class="note" id="first-run">First run: there are no past runs to compare '
            "with yet.</p>"
        )
    return _figure(
        image,
        "trend of the headline metrics across runs",
        _e(
            f"Headline metrics over the last {len(runs)} runs (oldest left); the red "
            "point is this run; dashed line: threshold."
        ),
    )


# ---------------------------------------------------------------------------------------------
# CSV and Markdown


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_value(name: str, value: Any) -> str:
    if value is None or isinstance(value, float) and math.isnan(value):
        return ""
    if name in LIST_FIELDS or isinstance(value, list | tuple):
        value = "; ".join(_labels(value))
    elif isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    elif isinstance(value, int | float | np.integer | np.floating):
        return repr(float(value)) if isinstance(value, float | np.floating) else str(int(value))
    elif isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    # A spreadsheet would run text starting like a formula: quote it (OWASP CSV injection).
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv_bytes(questions: Sequence[_Question]) -> bytes:
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
    questions: Sequence[_Question],
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
        value = _num(headline.get(key))
        threshold = thresholds.get(key)
        if threshold is None:
            status = ""
        elif value is None:
            status = "missing"
        else:
            status = "pass" if _passes(value, threshold) else "**FAIL**"
        shown = "" if threshold is None else f"≥ {threshold:g}"
        lines.append(f"| {_md(_label(key))} | {_fmt(value, 3)} | {shown} | {status} |")
    worst = sorted(questions, key=worst_key)[:MARKDOWN_WORST]
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
) -> ReportFiles:
    """Write ``report.html``, ``per_question.csv`` and ``summary.png`` into ``out_dir``.

    ``rows``: one mapping per golden question (fields of :data:`ROW_FIELDS`, metrics ``None``
    where they do not apply; further fields, e.g. ``answer`` or ``run_id``, go to the CSV and an
    ``answer`` is shown with the worst questions). ``headline``: the means (``None`` where not
    computed). ``history``: runs oldest first (``run_id``, ``started_at``, ``metrics``). It may
    or may not hold this run: this run is the entry with ``run_id`` or, without ``run_id``, a
    last entry whose headline metrics equal ``headline``; otherwise it is appended to the trend
    as "this run". With no history the trend says "first run". ``thresholds``: minimum values
    (e.g. ``{"hit_at_5": 0.9}``) shown as pass/fail and as lines on the plots.
    """
    out_dir = Path(out_dir)
    thresholds = {k: float(v) for k, v in (thresholds or {}).items()}
    questions = sorted((_question(r) for r in rows), key=lambda q: natural_key(q.qid))
    runs, previous = _runs(history, headline, run_id)
    images = {
        "hit5": _heatmap_png(
            questions,
            "hit_at_5",
            _scored_types(questions, "hit_at_5"),
            "hit@5 by jurisdiction × query type",
        ),
        "refusals": _heatmap_png(
            questions,
            "refusal_correct",
            _query_types(questions),
            "refusal correctness by jurisdiction × query type",
        ),
        "means": _bars_png(questions, thresholds),
        "latency": _latency_png(questions),
    }
    if history:
        images["trend"] = _trend_png(runs, thresholds)
    page = _page(
        title=title,
        generated_at=generated_at,
        questions=questions,
        headline=headline,
        thresholds=thresholds,
        history_runs=runs,
        previous=previous,
        images=images,
    )
    summary = _summary_png(questions, headline, thresholds, title)
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
    write_atomic(paths.csv, _csv_bytes(questions))
    write_atomic(paths.html, page.encode("utf-8"))
    return ReportFiles(
        html=paths.html,
        csv=paths.csv,
        summary_png=paths.summary_png,
        markdown=paths.markdown,
        summary_markdown_image=markdown_image(paths.summary_png, "evaluation summary"),
    )


# ---------------------------------------------------------------------------------------------
# Checking the page in Chromium


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
