"""A picture of one jurisdiction's legal graph, as a PNG (pure; no Dagster).

Only ``REFERENCES`` and ``DERIVED_FROM`` edges are drawn (``HAS_PART`` and ``EXTERNAL_REFERENCE``
are counted, not drawn). Nodes are units (chunk ids) labelled by their unit labels. When the
graph has Act sections and units of other documents, it is drawn in two columns: the rules,
forms etc. on the left, grouped by document (one colour per document), and the Act sections they
cite on the right (grey squares); references inside a column are arcs bulging into the gap.
Otherwise (e.g. the Act on its own) it is one column with arcs: an arc diagram. Each column is in
natural order ("Rule 2" before "Rule 10"), so a unit is easy to find.

Rendering uses Matplotlib's object API on the Agg canvas (no pyplot and no global state, so it
is safe in threads) and Pillow for a 256-colour PNG without metadata. The file is written
atomically and is deterministic: the same edges, in any order, give the same bytes.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch

from civicsetu_pipelines.base import figure_png, write_atomic
from civicsetu_pipelines.ingest import split_paragraph, split_part

EDGE_TYPES = ("DERIVED_FROM", "REFERENCES", "HAS_PART", "EXTERNAL_REFERENCE", "AMENDED_BY",
              "REPEALED_BY")  # fmt: skip
DRAWN_TYPES = ("REFERENCES", "DERIVED_FROM")  # drawn in this order: derivations on top
MAX_MARKDOWN_BYTES = 400_000
DPI = 100

# Colours: documents from a qualitative palette without the edge and Act colours.
DOCUMENT_COLOURS = (
    "#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#e377c2", "#8c564b", "#bcbd22", "#ff7f0e",
    "#aec7e8", "#98df8a",
)  # fmt: skip
ACT_COLOUR = "#5a5a5a"
EDGE_STYLE: dict[str, dict[str, Any]] = {
    "DERIVED_FROM": {"color": "#d62728", "linewidth": 1.6, "linestyle": "-", "alpha": 0.9},
    "REFERENCES": {"color": "#4c72b0", "linewidth": 0.6, "linestyle": (0, (4, 2)), "alpha": 0.45},
}
LEGEND_EDGES = (
    ("DERIVED_FROM", "rule → the Act section it implements"),
    ("REFERENCES", "unit → the unit it cites"),
)
_ABBREVIATIONS = {
    "section": "S", "rule": "R", "form": "F", "annexure": "Anx", "schedule": "Sch",
    "preamble": "Pre", "regulation": "Reg", "chapter": "Ch", "article": "Art", "appendix": "App",
    "clause": "Cl", "part": "Pt", "order": "O",
}  # fmt: skip
_KIND_ORDER = {"preamble": 0, "section": 1, "rule": 1, "regulation": 1, "article": 1, "form": 2,
               "annexure": 3, "appendix": 3, "schedule": 4}  # fmt: skip
_COMPACT_ABOVE = 40  # nodes; above this, labels are abbreviated ("Rule 9" -> "R9")


@dataclass(frozen=True)
class PictureSummary:
    """What :func:`render_network` drew and where."""

    path: Path
    nodes: int
    edges_drawn: int  # distinct (type, source, target) among REFERENCES and DERIVED_FROM
    counts_by_type: dict[str, int] = field(default_factory=dict)  # every input edge, by type
    bytes: int = 0
    title: str = ""

    def markdown(self, max_bytes: int = MAX_MARKDOWN_BYTES) -> str:
        """The PNG as an inline Markdown image (a data URI), or a plain line naming the file when
        it is larger than ``max_bytes`` (or gone)."""
        alt = " ".join(re.sub(r"[\[\]]", " ", self.title).split()) or "legal graph"
        try:
            data = self.path.read_bytes()
        except OSError:
            return f"{alt}: picture not available ({self.path} is missing)"
        if len(data) > max_bytes:
            return (
                f"{alt}: picture of {len(data):,} bytes is over the {max_bytes:,}-byte inline "
                f"limit; see {self.path}"
            )
        return f"![{alt}](data:image/png;base64,{base64.b64encode(data).decode('ascii')})"


@dataclass(frozen=True)
class _Node:
    node_id: str
    label: str
    document: str
    is_act: bool


def compact_label(label: str) -> str:
    """``"Section 13(2)"`` -> ``"S13(2)"``, ``"Rule 9"`` -> ``"R9"``, ``"Form A (part 2)"`` ->
    ``"FA.2"``, ``"Annexure (part 4)"`` -> ``"Anx.4"``, a form's paragraph ``"Annexure A para
    12"`` -> ``"AnxA¶12"``; unknown kinds are cut to 12 characters."""
    base, part = split_part(label.strip())
    form, paragraph = split_paragraph(base)
    text = (form if paragraph is None else f"{form}¶{paragraph}") + (
        "" if part is None else f".{part}"
    )
    match = re.match(r"([A-Za-z]+)(.*)", text, flags=re.DOTALL)
    head, rest = (match.group(1), match.group(2)) if match else (text, "")
    short = _ABBREVIATIONS.get(head.lower())
    if short is None:  # cut to 12 characters, a paragraph's number kept
        tail = text[text.index("¶") :] if "¶" in text else ""
        base = text[: len(text) - len(tail)]
        return text if len(text) <= 12 else base[: max(1, 11 - len(tail))] + "…" + tail
    return short + rest.replace(" ", "")


def _natural_key(label: str) -> tuple[Any, ...]:
    head = label.split(" ", 1)[0].lower()
    tokens = re.findall(r"\d+|[A-Za-z]+", label)
    parts = tuple((0, int(t), "") if t.isdigit() else (1, 0, t.lower()) for t in tokens[1:])
    return (_KIND_ORDER.get(head, 5), head, parts, label)


def _count_types(edges: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = Counter(str(e.get("edge_type")) for e in edges)
    order = [t for t in EDGE_TYPES if t in counts] + sorted(set(counts) - set(EDGE_TYPES))
    return {t: counts[t] for t in order}


def _text(value: Any) -> str | None:
    """A field as text; ``None`` for a missing value (``None``, NaN from a DataFrame, "")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value) or None


def _graph(
    edges: Sequence[Mapping[str, Any]], act_document: str | None
) -> tuple[dict[str, _Node], list[tuple[str, str, str]]]:
    """Nodes by id and the distinct drawn edges ``(type, source, target)``, sorted."""
    drawn = [
        e
        for e in edges
        if e.get("edge_type") in DRAWN_TYPES
        and _text(e.get("source_id")) is not None
        and _text(e.get("target_id")) is not None
        and _text(e.get("source_id")) != _text(e.get("target_id"))
    ]
    if act_document is None:  # documents only ever cited by other documents
        sources = {_text(e.get("source_document")) for e in edges}
        targets = {_text(e.get("target_document")) for e in drawn}
        act_documents = {t for t in targets - sources if t is not None}
    else:
        act_documents = {act_document}
    labels: dict[str, set[str]] = {}
    documents: dict[str, set[str]] = {}
    triples: set[tuple[str, str, str]] = set()
    for e in drawn:
        source, target = str(_text(e["source_id"])), str(_text(e["target_id"]))
        triples.add((str(e["edge_type"]), source, target))
        for node, label, doc in (
            (source, e.get("source_label"), e.get("source_document")),
            (target, e.get("target_label"), e.get("target_document")),
        ):
            labels.setdefault(node, set()).add(_text(label) or node)
            documents.setdefault(node, set()).add(_text(doc) or "?")
    nodes = {}
    for node in sorted(labels):
        label = min(labels[node], key=lambda s: (len(s), s))  # the same in any edge order
        document = min(documents[node])
        nodes[node] = _Node(node, label, document, document in act_documents)
    return nodes, sorted(triples)


def _title_text(title: str, counts: Mapping[str, int], nodes: int, drawn: int) -> str:
    by_type = " · ".join(f"{kind} {n:,}" for kind, n in counts.items()) or "no edges"
    return f"{title}\n{by_type}\ndrawn: {nodes:,} units, {drawn:,} reference/derivation edges"


@dataclass
class _Layout:
    positions: dict[str, tuple[float, float]]  # x in {0, 1}, y in [0, 1] top-down
    headings: list[tuple[float, float, str]]  # (x, y, document) above each document's group
    columns: int
    tallest: int  # slots in the tallest column


def _columns(nodes: Mapping[str, _Node]) -> _Layout:
    """Two columns when there are both Act sections (x = 1) and other units (x = 0); otherwise
    one (x = 0). A column is grouped by document, each group in natural order ("Rule 2" before
    "Rule 10") and, when the column holds several documents, headed by the document's key."""
    order = sorted(nodes.values(), key=lambda n: (n.document, _natural_key(n.label), n.node_id))
    left = [n for n in order if not n.is_act]
    right = [n for n in order if n.is_act]
    layout = _Layout({}, [], 2 if left and right else 1, 0)
    for x, column in enumerate([left, right] if left and right else [order]):
        several = len({n.document for n in column}) > 1
        slots: list[_Node | str] = []
        for i, node in enumerate(column):
            if several and (i == 0 or node.document != column[i - 1].document):
                slots.append(node.document)
            slots.append(node)
        step = 1.0 / max(len(slots) - 1, 1)
        offset = 0.5 if len(slots) == 1 else 0.0
        for i, slot in enumerate(slots):
            y = 1.0 - (offset + i * step)
            if isinstance(slot, str):
                layout.headings.append((float(x), y, slot))
            else:
                layout.positions[slot.node_id] = (float(x), y)
        layout.tallest = max(layout.tallest, len(slots))
    return layout


def _arc(y0: float, y1: float, *, reach: float, aspect: float, bulge_right: bool) -> float:
    """The ``arc3`` curvature of an edge inside a column (from y0 to y1, x fixed).

    The arc's widest point is ``reach(span)`` x-units from the column, ``aspect`` is inches per
    x-unit over inches per y-unit. A quadratic Bezier's peak is half its control point's
    distance, which arc3 puts at ``rad * chord``."""
    span = abs(y1 - y0)
    rad = min(2.0 * reach * aspect / span, 1.5)
    # arc3 puts the control point at the midpoint + rad * (dy, -dx): for a vertical chord going
    # down (dy < 0) a positive rad bulges to the left.
    going_down = y1 < y0
    return -rad if bulge_right == going_down else rad


def _document_colours(nodes: Mapping[str, _Node]) -> dict[str, str]:
    docs = sorted({n.document for n in nodes.values() if not n.is_act})
    return {doc: DOCUMENT_COLOURS[i % len(DOCUMENT_COLOURS)] for i, doc in enumerate(docs)}


def _draw(
    ax: Axes,
    nodes: Mapping[str, _Node],
    triples: Sequence[tuple[str, str, str]],
    layout: _Layout,
    *,
    font: float,
    marker: float,
    aspect: float,
) -> list[Any]:
    """Draw edges, nodes, labels and group headings; return the legend handles."""
    colours = _document_colours(nodes)
    positions, two_columns = layout.positions, layout.columns == 2
    shrink = math.sqrt(marker) * 0.5 + 0.5  # points: arrows stop at the marker's edge
    for kind in DRAWN_TYPES:
        for edge_type, source, target in triples:
            if edge_type != kind:
                continue
            (x0, y0), (x1, y1) = positions[source], positions[target]
            rad = 0.0
            if x0 == x1:  # within a column: arcs bulge towards the gap (labels are outside)
                span = abs(y1 - y0)
                reach = 0.04 + (0.16 * span if two_columns else 0.6 * span)
                rad = _arc(y0, y1, reach=reach, aspect=aspect, bulge_right=x0 == 0.0)
            ax.add_patch(
                FancyArrowPatch(
                    (x0, y0),
                    (x1, y1),
                    arrowstyle="-|>",
                    mutation_scale=5.0 if kind == "REFERENCES" else 7.0,
                    connectionstyle=f"arc3,rad={rad:.4f}",
                    shrinkA=shrink,
                    shrinkB=shrink,
                    zorder=2 if kind == "REFERENCES" else 3,
                    **EDGE_STYLE[kind],
                )
            )
    ordered = sorted(nodes.values(), key=lambda n: n.node_id)
    groups: dict[tuple[bool, str], list[_Node]] = {}
    for node in ordered:
        groups.setdefault((node.is_act, node.document), []).append(node)
    handles: list[Any] = []
    for (is_act, document), members in sorted(groups.items()):
        xs = [positions[n.node_id][0] for n in members]
        ys = [positions[n.node_id][1] for n in members]
        colour = ACT_COLOUR if is_act else colours[document]
        shape = "s" if is_act else "o"
        ax.scatter(xs, ys, s=marker, c=colour, marker=shape, edgecolors="white",
                   linewidths=0.4, zorder=4)  # fmt: skip
        name = f"{document} (Act)" if is_act else document
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker=shape,
                markersize=6,
                color=colour,
                label=f"{name}: {len(members)}",
            )  # fmt: skip
        )
    compact = len(nodes) > _COMPACT_ABOVE
    # Labels face away from the other column (the only column: to the left, arcs to the right).
    for node in ordered:
        x, y = positions[node.node_id]
        right = two_columns and x == 1.0
        ax.annotate(
            compact_label(node.label) if compact else node.label,
            (x, y),
            xytext=(4.0 if right else -4.0, 0.0),
            textcoords="offset points",
            fontsize=font,
            ha="left" if right else "right",
            va="center",
            zorder=5,
            bbox={
                "boxstyle": "square,pad=0.05",
                "facecolor": "white",
                "edgecolor": "none",
                "alpha": 0.8,
            },  # fmt: skip
        )
    for x, y, document in layout.headings:
        right = two_columns and x == 1.0
        ax.annotate(
            document,
            (x, y),
            xytext=(4.0 if right else -4.0, 0.0),
            textcoords="offset points",
            fontsize=font,
            fontweight="bold",
            color=colours.get(document, ACT_COLOUR),
            ha="left" if right else "right",
            va="center",
            zorder=5,
        )
    for kind, meaning in LEGEND_EDGES:
        n = sum(1 for t in triples if t[0] == kind)
        style = dict(EDGE_STYLE[kind], alpha=1.0)
        handles.append(Line2D([], [], label=f"{kind} ({meaning}): {n} drawn", **style))
    return handles


def _figure(
    edges: Sequence[Mapping[str, Any]], title: str, act_document: str | None
) -> tuple[Figure, int, int, dict[str, int]]:
    counts = _count_types(edges)
    nodes, triples = _graph(edges, act_document)
    if not triples:
        fig = Figure(figsize=(7.0, 3.0), dpi=DPI)
        fig.suptitle(_title_text(title, counts, 0, 0), fontsize=9)
        fig.text(0.5, 0.4, "no reference edges", ha="center", va="center", fontsize=14,
                 color="#777777")  # fmt: skip
        return fig, 0, 0, counts
    layout = _columns(nodes)
    n_columns, tallest = layout.columns, layout.tallest
    dense = tallest > 60
    font, marker = (6.0, 16.0) if dense else (7.5, 30.0)
    plot_height = min(max(4.5, 0.15 * tallest), 60.0)  # inches
    n_handles = len({(n.is_act, n.document) for n in nodes.values()}) + 2
    ncol = min(n_handles, 2)
    header = 0.75 + 0.2 * math.ceil(n_handles / ncol)  # title and legend, inches
    height = plot_height + header + 0.2
    width = 10.0 if n_columns == 2 else 6.5
    fig = Figure(figsize=(width, height), dpi=DPI)
    ax = fig.add_axes((0.02, 0.1 / height, 0.96, plot_height / height))
    ax.set_axis_off()
    xlim = (-0.6, 1.6) if n_columns == 2 else (-0.8, 1.2)
    ylim = (-0.01, 1.01)
    ax.set_xlim(xlim)
    ax.set_ylim(ylim)
    aspect = (0.96 * width / (xlim[1] - xlim[0])) / (plot_height / (ylim[1] - ylim[0]))
    handles = _draw(ax, nodes, triples, layout, font=font, marker=marker, aspect=aspect)
    fig.suptitle(_title_text(title, counts, len(nodes), len(triples)), fontsize=9,
                 y=1.0 - 0.08 / height, va="top")  # fmt: skip
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1.0 - 0.7 / height),
               ncol=ncol, fontsize=7, frameon=False, handlelength=3.0)  # fmt: skip
    return fig, len(nodes), len(triples), counts


def render_network(
    edges: Sequence[Mapping[str, Any]],
    *,
    title: str,
    out_path: Path,
    act_document: str | None = None,
) -> PictureSummary:
    """Draw the ``REFERENCES`` and ``DERIVED_FROM`` edges of one jurisdiction to ``out_path``.

    ``edges`` are mappings with the fields of :class:`civicsetu_pipelines.graph.edges.Edge` (e.g.
    ``dataclasses.asdict(edge)``). Nodes of ``act_document`` are drawn as the cited Act sections;
    when it is ``None``, the documents that are only ever targets of other documents are.
    With no drawable edge the PNG says "no reference edges". The file is replaced atomically.
    """
    out_path = Path(out_path)
    fig, n_nodes, n_drawn, counts = _figure(edges, title, act_document)
    try:
        data = figure_png(fig)
    finally:
        fig.clear()
    write_atomic(out_path, data)
    return PictureSummary(
        path=out_path,
        nodes=n_nodes,
        edges_drawn=n_drawn,
        counts_by_type=counts,
        bytes=len(data),
        title=title,
    )
