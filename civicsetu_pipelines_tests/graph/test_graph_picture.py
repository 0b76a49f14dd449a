"""The PNG picture of a jurisdiction's legal graph (real rendering, no mocks)."""

from __future__ import annotations

import base64
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image

from civicsetu_pipelines.graph.edges import Edge, build_edges
from civicsetu_pipelines.graph.picture import (
    MAX_MARKDOWN_BYTES,
    PictureSummary,
    compact_label,
    render_network,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _edge(kind: str, src: tuple[str, str, str], dst: tuple[str, str, str] | None,
          external: str = "") -> dict[str, Any]:  # fmt: skip
    """An edge as ``dataclasses.asdict(Edge)``; ``src``/``dst`` are (document, id, label)."""
    if dst is None:
        edge = Edge(kind, *src, None, None, external, src[1], 0, 3, external)
    else:
        edge = Edge(kind, *src, *dst, src[1], 0, 3, "phrase")
    return dataclasses.asdict(edge)


RULES, ACT = "mh_rules_2017", "rera_act_2016"
R3, R9, FA = (RULES, "r3", "Rule 3"), (RULES, "r9", "Rule 9"), (RULES, "fa", "Form A")
S3, S4, S13_2 = (ACT, "s3", "Section 3"), (ACT, "s4", "Section 4"), (ACT, "s13-2", "Section 13(2)")
DOC = (RULES, RULES, RULES)
EDGES = [
    _edge("HAS_PART", DOC, R3),
    _edge("HAS_PART", DOC, R9),
    _edge("HAS_PART", DOC, FA),
    _edge("DERIVED_FROM", R3, S3),
    _edge("DERIVED_FROM", R9, S13_2),
    _edge("REFERENCES", R3, S4),
    _edge("REFERENCES", R9, S13_2),
    _edge("REFERENCES", R9, S13_2),  # cited twice: one line
    _edge("REFERENCES", R9, FA),
    _edge("REFERENCES", FA, R9),  # "[See rule 9]"
    _edge("EXTERNAL_REFERENCE", R3, None, "Indian Penal Code"),
]


def _png(path: Path) -> bytes:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    with Image.open(path) as image:
        image.verify()
    return data


def _size(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        return image.size


def test_renders_a_png_with_counts_of_every_edge_type(tmp_path: Path) -> None:
    out = tmp_path / "pictures" / "MH.png"  # the directory does not exist yet
    summary = render_network(EDGES, title="MAHARASHTRA", out_path=out)
    data = _png(out)
    width, height = _size(out)
    assert 500 <= width <= 4000 and 400 <= height <= 7000
    assert summary.path == out and summary.bytes == len(data)
    assert summary.counts_by_type == {
        "DERIVED_FROM": 2, "REFERENCES": 5, "HAS_PART": 3, "EXTERNAL_REFERENCE": 1,
    }  # fmt: skip
    # HAS_PART and EXTERNAL_REFERENCE are not drawn; a repeated citation is drawn once.
    assert summary.nodes == 6  # r3, r9, fa, s3, s4, s13-2 (not the document node)
    assert summary.edges_drawn == 2 + 4
    assert [p.name for p in out.parent.iterdir()] == ["MH.png"]  # no temporary file left


def test_same_edges_give_the_same_bytes(tmp_path: Path) -> None:
    first = render_network(EDGES, title="MH", out_path=tmp_path / "a.png")
    again = render_network(EDGES, title="MH", out_path=tmp_path / "b.png")
    shuffled = render_network(EDGES[::-1], title="MH", out_path=tmp_path / "c.png")
    explicit = render_network(EDGES, title="MH", out_path=tmp_path / "d.png", act_document=ACT)
    data = _png(first.path)
    assert data == again.path.read_bytes() == shuffled.path.read_bytes()
    # The Act is inferred as the document only ever cited by others.
    assert explicit.path.read_bytes() == data
    assert b"tEXt" not in data and b"tIME" not in data  # no software version, no timestamp


def test_dataframe_records_with_nan_render_like_dicts(tmp_path: Path) -> None:
    records = pd.DataFrame(EDGES).to_dict("records")  # target_id None -> NaN
    assert any(isinstance(r["target_id"], float) for r in records)
    from_frame = render_network(records, title="MH", out_path=tmp_path / "frame.png")
    plain = render_network(EDGES, title="MH", out_path=tmp_path / "plain.png")
    assert from_frame.path.read_bytes() == plain.path.read_bytes()
    assert from_frame.counts_by_type == plain.counts_by_type


def test_renders_in_threads_like_in_series(tmp_path: Path) -> None:
    expected = render_network(EDGES, title="MH", out_path=tmp_path / "serial.png")
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = list(
            pool.map(
                lambda i: render_network(EDGES, title="MH", out_path=tmp_path / f"t{i}.png"),
                range(4),
            )
        )
    assert {s.path.read_bytes() for s in done} == {expected.path.read_bytes()}


@pytest.mark.parametrize(
    "edges",
    [[], [e for e in EDGES if e["edge_type"] in {"HAS_PART", "EXTERNAL_REFERENCE"}]],
    ids=["no-edges", "no-reference-edges"],
)
def test_nothing_to_draw_is_still_a_png(tmp_path: Path, edges: list[dict[str, Any]]) -> None:
    out = tmp_path / "empty.png"
    out.write_bytes(b"an older picture")  # replaced
    summary = render_network(edges, title="EMPTY", out_path=out)
    _png(out)
    assert summary.nodes == summary.edges_drawn == 0
    assert summary.counts_by_type == ({} if not edges else {"HAS_PART": 3, "EXTERNAL_REFERENCE": 1})
    assert summary.markdown().startswith("![EMPTY](data:image/png;base64,")


def test_act_on_its_own_is_drawn_in_one_column(tmp_path: Path) -> None:
    act = [
        _edge("HAS_PART", (ACT, ACT, ACT), S4),
        _edge("REFERENCES", S4, S3),
        _edge("REFERENCES", S13_2, S4),
        _edge("EXTERNAL_REFERENCE", S4, None, "Indian Penal Code"),
    ]
    summary = render_network(act, title="CENTRAL", out_path=tmp_path / "c.png", act_document=ACT)
    _png(summary.path)
    assert (summary.nodes, summary.edges_drawn) == (3, 2)


def test_markdown_embeds_the_png_or_names_the_file(tmp_path: Path) -> None:
    summary = render_network(EDGES, title="MH [rules]", out_path=tmp_path / "mh.png")
    line = summary.markdown()
    prefix = "![MH rules](data:image/png;base64,"
    assert line.startswith(prefix) and line.endswith(")")
    assert base64.b64decode(line[len(prefix) : -1]) == summary.path.read_bytes()
    small = summary.markdown(max_bytes=summary.bytes - 1)
    assert "data:" not in small and str(summary.path) in small and "\n" not in small
    gone = PictureSummary(tmp_path / "missing.png", 0, 0, {}, 0, "X")
    assert "missing" in gone.markdown() and "data:" not in gone.markdown()


@pytest.mark.parametrize(
    ("label", "short"),
    [
        ("Section 13(2)", "S13(2)"),
        ("Rule 9", "R9"),
        ("Rule 3(3)-(4)", "R3(3)-(4)"),
        ("Form A (part 2)", "FA.2"),
        ("Annexure (part 4)", "Anx.4"),
        ("Annexure A para 12", "AnxA¶12"),
        ("Agreement For Sale para 7 (part 2)", "Agreeme…¶7.2"),
        ("Preamble", "Pre"),
        ("Some unusual long label", "Some unusua…"),
    ],
)
def test_compact_labels(label: str, short: str) -> None:
    assert compact_label(label) == short


@pytest.mark.corpus
def test_picture_of_a_real_jurisdiction(corpus_dir: Path, tmp_path: Path) -> None:
    """Gujarat's general rules against the RERA Act, parsed from the shared corpus (~2 s)."""
    from civicsetu_pipelines.graph.references import UnitIndex
    from civicsetu_pipelines.ingest.documents import chunk_rows, page_records, parse_rows
    from civicsetu_pipelines.ingest.registry import load_registry

    registry = load_registry(include_seed=False)
    chunks: dict[str, list[dict[str, Any]]] = {}
    for key in (ACT, "gujarat_general_rules_2017"):
        spec = registry.get(key)
        pages = page_records(parse_rows(spec, corpus_dir / str(spec.filename)))
        chunks[key] = chunk_rows(spec, pages)[0]
    indexes = {
        key: UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in rows)
        for key, rows in chunks.items()
    }
    build = build_edges(
        chunks["gujarat_general_rules_2017"],
        doc_types={ACT: "act", "gujarat_general_rules_2017": "rules"},
        act_key=ACT,
        indexes=indexes,
    )
    edges = [dataclasses.asdict(e) for e in build.edges]
    summary = render_network(edges, title="GUJARAT", out_path=tmp_path / "gj.png")
    _png(summary.path)
    assert summary.counts_by_type["DERIVED_FROM"] >= 5
    assert sum(summary.counts_by_type.values()) == len(edges)
    assert summary.nodes >= 40 and summary.edges_drawn >= 50
    assert summary.bytes < MAX_MARKDOWN_BYTES  # small enough to show inline in Dagster
    assert summary.markdown().startswith("![GUJARAT](data:image/png;base64,")
