"""The figures of the evaluation report, each as PNG bytes (pure; no Dagster, no HTML).

* :func:`heatmap_png` -- the mean of a metric per jurisdiction x query type (hit@5, refusal
  correctness), with the number of scored questions in each cell;
* :func:`bars_png` -- the mean of every per-question metric, overall and per jurisdiction, with
  threshold lines;
* :func:`latency_png` -- a histogram of the latencies stacked by status, p50 and p95 marked;
* :func:`trend_png` -- the headline metrics across runs, this run in red;
* :func:`summary_png` -- the headline bars with threshold ticks beside the hit@5 heatmap.

Figures use Matplotlib's object API on the Agg canvas (no pyplot, no global state) and are saved
as 256-colour PNGs without metadata, as in :mod:`civicsetu_pipelines.graph.picture`: the bytes
depend only on the picture. This is the only module of the report that imports Matplotlib.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.patches import Patch
from PIL import Image

from civicsetu_pipelines.base import figure_png
from civicsetu_pipelines.evaluate.report_data import (
    BAR_METRICS,
    HEADLINE,
    HEADLINE_FIELD,
    NONE_TEXT,
    OVERALL,
    Question,
    Run,
    groups,
    jurisdictions,
    label,
    mean,
    passes,
    percentile,
    scored_types,
    to_number,
)

DPI = 100
OVERALL_COLOUR = "#3b3b3b"
GROUP_COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
    "#aec7e8", "#ffbb78",
)  # fmt: skip
STATUS_COLOURS = {"answered": "#4c72b0", "refused": "#dd8452", "error": "#c44e52"}
PASS_COLOUR, FAIL_COLOUR, NEUTRAL_COLOUR = "#2e7d32", "#c62828", "#607d8b"


def _plain(text: str) -> str:
    """Data text for a Matplotlib label: ``$`` escaped, so it is never read as mathtext."""
    return text.replace("$", r"\$")


def _png(fig: Figure) -> bytes:
    """The figure's PNG (:func:`~civicsetu_pipelines.base.figure_png`), then the figure cleared."""
    data = figure_png(fig)
    fig.clear()
    return data


def _not_computed(ax: Axes) -> None:
    """Say in the panel that its metric was not computed."""
    ax.text(0.5, 0.5, "not computed", ha="center", va="center", fontsize=10, color="#888888",
            transform=ax.transAxes)  # fmt: skip


def png_size(data: bytes) -> tuple[int, int]:
    """The width and height in pixels of a PNG."""
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def _message(fig: Figure, text: str) -> None:
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=13, color="#777777")


def _grid(
    questions: Sequence[Question], metric: str, columns: Sequence[str], rows: Sequence[str]
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
            value, n = mean([q.metrics[metric] for q in cell])
            values[i, j] = np.nan if value is None else value
            scored[i, j], total[i, j] = n, len(cell)
    return values, scored, total


def _draw_heatmap(
    fig: Figure | SubFigure,
    ax: Axes,
    questions: Sequence[Question],
    metric: str,
    columns: Sequence[str],
    title: str,
    *,
    font: float = 9.0,
) -> None:
    rows = jurisdictions([q for q in questions if q.query_type in columns])
    ax.set_title(title, fontsize=font + 1, loc="left")
    if not rows or not columns:
        ax.set_axis_off()
        ax.text(
            0.5,
            0.5,
            f"no questions with {label(metric)}",
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


def heatmap_png(
    questions: Sequence[Question], metric: str, columns: Sequence[str], title: str
) -> bytes:
    """The mean of ``metric`` per jurisdiction (rows) x query type (``columns``), each cell
    with its number of scored questions; "—" where a cell has no question."""
    n_rows = max(len(jurisdictions([q for q in questions if q.query_type in columns])), 1)
    width = min(max(2.6 + 1.05 * len(columns), 5.0), 12.0)
    fig = Figure(figsize=(width, 1.0 + 0.5 * n_rows), dpi=DPI, layout="constrained")
    _draw_heatmap(fig, fig.add_subplot(), questions, metric, columns, title)
    return _png(fig)


def _group_colours(names: Sequence[str]) -> dict[str, str]:
    others = [n for n in names if n != OVERALL]
    colours = {n: GROUP_COLOURS[i % len(GROUP_COLOURS)] for i, n in enumerate(others)}
    return {OVERALL: OVERALL_COLOUR, **colours}


def _threshold_for(metric: str, thresholds: Mapping[str, float]) -> float | None:
    for key, value in thresholds.items():
        if key == metric or HEADLINE_FIELD.get(key) == metric:
            return float(value)
    return None


def bars_png(questions: Sequence[Question], thresholds: Mapping[str, float]) -> bytes:
    """One small bar chart per metric of :data:`BAR_METRICS`: its mean overall and per
    jurisdiction, a dashed line at its threshold."""
    members_of = groups(questions)
    names = [name for name, _ in members_of]
    colours = _group_colours(names)
    ncols = 5
    nrows = math.ceil(len(BAR_METRICS) / ncols)
    fig = Figure(figsize=(12.0, 0.6 + 2.0 * nrows), dpi=DPI, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for index, metric in enumerate(BAR_METRICS):
        ax = axes[index // ncols][index % ncols]
        threshold = _threshold_for(metric, thresholds)
        suffix = "" if threshold is None else f" (≥ {threshold:g})"
        ax.set_title(label(metric) + suffix, fontsize=9, loc="left")
        ax.set_ylim(0.0, 1.18)
        ax.set_xlim(-0.6, len(members_of) - 0.4)
        ax.set_xticks([])
        ax.set_yticks([0.0, 0.5, 1.0])
        ax.tick_params(labelsize=8)
        ax.grid(axis="y", color="#e6e6e6", linewidth=0.8)
        ax.set_axisbelow(True)
        for spine in ("top", "right"):
            ax.spines[spine].set_visible(False)
        means = [mean([q.metrics[metric] for q in members]) for _, members in members_of]
        if all(m is None for m, _ in means):
            _not_computed(ax)
            continue
        for x, (name, (value, _n)) in enumerate(zip(names, means, strict=True)):
            if value is None:
                ax.text(x, 0.03, "n/a", ha="center", va="bottom", fontsize=7, color="#888888")
                continue
            ax.bar(x, value, width=0.75, color=colours[name])
            ax.text(x, value + 0.02, f"{value:.2f}", ha="center", va="bottom", fontsize=6.5,
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


def _finish(
    fig: Figure, ax: Axes, xlabel: str, ylabel: str, legend: Literal["upper right", "lower left"]
) -> bytes:
    """Axis labels, small ticks, no top or right spine, the legend where ``legend`` says."""
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=9)
    ax.tick_params(labelsize=8)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    ax.legend(fontsize=8, frameon=False, loc=legend)
    return _png(fig)


def latency_png(questions: Sequence[Question]) -> bytes:
    """A histogram of the latencies, stacked by status, with p50 and p95 marked."""
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
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    top = ax.get_ylim()[1]
    ax.set_ylim(0, top * 1.18)
    for value, name, style in ((p50, "p50", "-"), (p95, "p95", "--")):
        ax.axvline(value, color="#222222", linestyle=style, linewidth=1.2)
        ax.text(value, top * 1.12, f" {name} {value:,.0f} ms", ha="left", va="top", fontsize=9)
    return _finish(fig, ax, "latency (ms)", "questions", "upper right")


RISK_COVERAGE_TARGETS = (0.95, 0.80)  # issue 47: right this often, answering this many


def risk_coverage(questions: Sequence[Question]) -> list[tuple[float, float]]:
    """(share answered confidently, share of those right) as the confidence threshold falls:
    over the questions with a governing provision, answers taken by their confidence
    probability, highest first; a refused question is never covered. Right: a governing
    provision in the top 3."""
    scored = [q for q in questions if q.raw.get("governing_hit_at_3") is not None]
    answered = [q for q in scored if q.status == "answered"
                and q.raw.get("confidence_probability") is not None]  # fmt: skip
    answered.sort(key=lambda q: (-float(q.raw["confidence_probability"]), q.qid))
    points, right = [], 0.0
    for n, q in enumerate(answered, start=1):
        right += float(q.raw["governing_hit_at_3"])
        points.append((n / len(scored), right / n))
    return points


def risk_coverage_png(questions: Sequence[Question]) -> bytes:
    """The risk-coverage curve of each half (and all): the share of confident answers that are
    right against the share of questions answered, the targets dashed."""
    fig = Figure(figsize=(7.0, 4.0), dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    halves = [h for h in ("dev", "test") if any(q.raw.get("split") == h for q in questions)]
    curves = {h: risk_coverage([q for q in questions if q.raw.get("split") == h]) for h in halves}
    curves["all"] = risk_coverage(questions)
    if not curves["all"]:
        ax.set_axis_off()
        _message(fig, "no confidence recorded")
        return _png(fig)
    for name, points in curves.items():
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, label=f"{name} ({len(points)} answered)", linewidth=1.4)
    precision, coverage = RISK_COVERAGE_TARGETS
    ax.axhline(precision, color="#222222", linestyle="--", linewidth=1)
    ax.axvline(coverage, color="#222222", linestyle=":", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(0.5, 1.01)
    return _finish(fig, ax, "share of questions answered with at least this confidence",
                   "share of those right (governing in top 3)", "lower left")  # fmt: skip


def trend_png(runs: Sequence[Run], thresholds: Mapping[str, float]) -> bytes:
    """One line per headline metric across ``runs`` (oldest left), each run's 95% interval as a
    band around it where known, this run as a red point and the threshold dashed."""
    fig = Figure(figsize=(12.0, 5.6), dpi=DPI, layout="constrained")
    axes = fig.subplots(2, 3, squeeze=False, sharex=True)
    xs = np.arange(len(runs))
    step = max(1, math.ceil(len(runs) / 10))
    ticks = [i for i in range(len(runs)) if (len(runs) - 1 - i) % step == 0]
    for index, metric in enumerate(HEADLINE):
        ax = axes[index // 3][index % 3]
        ys = np.array([np.nan if r.metrics[metric] is None else r.metrics[metric] for r in runs])
        bands = [r.intervals.get(f"{metric}_ci95") for r in runs]
        if any(bands):  # each run's 95% interval over its questions: the noise around the line
            low = np.array([b[0] if b else np.nan for b in bands], dtype=float)
            high = np.array([b[1] if b else np.nan for b in bands], dtype=float)
            ax.fill_between(xs, low, high, color="#a8dadc", alpha=0.45, linewidth=0)
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
        ax.set_title(label(metric), fontsize=10, loc="left")
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
            _not_computed(ax)
    return _png(fig)


def summary_png(
    questions: Sequence[Question],
    headline: Mapping[str, float | None],
    thresholds: Mapping[str, float],
    title: str,
) -> bytes:
    """The compact summary: headline means as bars (green pass, red fail, black tick at the
    threshold) beside the hit@5 heatmap, titled with ``title`` and the number of questions."""
    fig = Figure(figsize=(12.0, 4.4), dpi=DPI, layout="constrained")
    grid = fig.add_gridspec(1, 2, width_ratios=(1.0, 1.35))
    left, right = fig.add_subfigure(grid[0]), fig.add_subfigure(grid[1])
    ax = left.add_subplot()
    metrics = list(HEADLINE)
    ys = np.arange(len(metrics))[::-1]
    for y, metric in zip(ys, metrics, strict=True):
        value = to_number(headline.get(metric))
        threshold = thresholds.get(metric)
        if value is None:
            ax.text(0.01, y, "not computed", va="center", fontsize=9, color="#888888")
        else:
            colour = (
                NEUTRAL_COLOUR
                if threshold is None
                else PASS_COLOUR
                if passes(value, threshold)
                else FAIL_COLOUR
            )
            ax.barh(y, min(max(value, 0.0), 1.0), height=0.62, color=colour)
            verdict = "" if threshold is None else " pass" if colour == PASS_COLOUR else " FAIL"
            ax.text(1.04, y, f"{value:.3f}{verdict}", va="center", fontsize=9, color=colour)
        if threshold is not None:
            ax.plot([threshold, threshold], [y - 0.42, y + 0.42], color="#111111", linewidth=2.0)
    ax.set_yticks(ys, [label(m) for m in metrics], fontsize=9)
    ax.set_xlim(0.0, 1.32)
    ax.set_xticks([0.0, 0.25, 0.5, 0.75, 1.0])
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(axis="x", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    ax.set_title("headline means (black tick: threshold)", fontsize=10, loc="left")
    columns = scored_types(questions, "hit_at_5")
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
