"""The evaluation report: a self-contained HTML page, a CSV and a summary PNG (real rendering,
no mocks), and the headless-Chromium check that the page renders."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import random
import re
import shutil
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from civicsetu_pipelines.evaluate.plots import png_size, risk_coverage, risk_coverage_png
from civicsetu_pipelines.evaluate.render_check import (
    RENDER_CHECK_SCRIPT,
    ChromiumNotFoundError,
    check_renders,
)
from civicsetu_pipelines.evaluate.report import (
    HEADLINE,
    ROW_FIELDS,
    SECTIONS,
    ReportFiles,
    markdown_image,
    problem,
    render_report,
    worst_key,
)
from civicsetu_pipelines.evaluate.report_data import Question, to_question

GENERATED_AT = datetime(2025, 11, 20, 9, 30, tzinfo=UTC)
THRESHOLDS = {"hit_at_5": 0.9, "mrr": 0.75, "citation_validity": 1.0, "refusal_correctness": 0.9}
JURISDICTIONS = ("CENTRAL", "GUJARAT", "MAHARASHTRA", "KARNATAKA")
ANSWERED_TYPES = ("fact_lookup", "cross_reference", "penalty_lookup", "temporal", "comparison")
SCRIPT_QUERY = "Does Section 3 apply? <script>alert(1)</script> \"quoted\" & 'single'"
HINDI_QUERY = "रेरा अधिनियम की धारा 18 के तहत ब्याज कब देय है?"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# The ten worst questions of the synthetic set, in the documented order: error; answered where a
# refusal was expected; refused where an answer was expected; citation validity 0.5 then 0.8;
# no expected unit retrieved (RR 0, tied on every metric: by id); RR 0.25, 1/3, 0.5. The other
# 30 questions have RR 1 and valid citations, or are correct refusals.
EXPECTED_WORST = [
    "q-err", "q-missed-refusal", "q-false-refusal", "q-cite-50", "q-cite-80", "q-miss-1",
    "q-miss-2", "q-rank-4", "q-rank-3", "q-rank-2",
]  # fmt: skip


def _row(
    qid: str,
    jurisdiction: str | None,
    query_type: str,
    query: str,
    *,
    status: str = "answered",
    expect_refusal: bool = False,
    rank: int | None = 1,  # rank of the first expected unit; None: none retrieved
    citation_validity: float | None = 1.0,
    latency_ms: float = 800.0,
    refusal_reason: str | None = None,
) -> dict[str, Any]:
    """One per-question row as civicsetu_pipelines.evaluate.scoring.evaluate makes it."""
    j = jurisdiction or "CENTRAL"
    expected = [] if expect_refusal else [f"{j}:Section {len(qid) + 2}", f"{j}:Rule {len(qid)}"]
    filler = [f"{j}:Rule {n}" for n in range(30, 40)]
    retrieved = filler[:9]
    if expected and rank is not None:
        retrieved.insert(rank - 1, expected[0])
    refused = status != "answered"
    row: dict[str, Any] = {
        "question_id": qid,
        "jurisdiction": jurisdiction,
        "query_type": query_type,
        "query": query,
        "status": status,
        "refusal_reason": refusal_reason,
        "expect_refusal": expect_refusal,
        "refusal_correct": expect_refusal == refused and status != "error",
        "latency_ms": latency_ms,
        "retrieved": [] if refused else retrieved,
        "expected": expected,
        "faithfulness": None,
        "response_relevancy": None,
    }
    if expect_refusal:
        for metric in ("hit_at_1", "hit_at_3", "hit_at_5", "hit_at_10", "recall_at_5",
                       "recall_at_10", "reciprocal_rank", "ndcg_at_10"):  # fmt: skip
            row[metric] = None
        row.update(context_precision=None, context_recall=None, answer_similarity=None)
        row["citation_validity"] = citation_validity if status == "answered" else None
        return row
    found = rank if (rank is not None and not refused) else None
    for k in (1, 3, 5, 10):
        row[f"hit_at_{k}"] = 1.0 if found is not None and found <= k else 0.0
    row["recall_at_5"] = 0.5 if found is not None and found <= 5 else 0.0
    row["recall_at_10"] = 0.5 if found is not None else 0.0
    row["reciprocal_rank"] = 1.0 / found if found is not None else 0.0
    row["ndcg_at_10"] = round(0.6 / found, 4) if found is not None else 0.0
    row["citation_validity"] = None if refused else citation_validity
    seed = sum(map(ord, qid))
    row["context_precision"] = None if refused else round(0.4 + (seed % 60) / 100, 3)
    row["context_recall"] = None if refused else round(0.5 + (seed % 50) / 100, 3)
    row["answer_similarity"] = None if refused else round(0.55 + (seed % 45) / 100, 3)
    return row


def make_rows() -> list[dict[str, Any]]:
    """40 questions over 4 jurisdictions (and a few without one) and every query type."""
    rows = [
        _row("q-err", "GUJARAT", "temporal", "What did Rule 4 say before the 2019 amendment?",
             status="error", rank=None, citation_validity=None, latency_ms=15.0),
        _row("q-missed-refusal", None, "out_of_scope", "Can I get a GST refund on my flat?",
             expect_refusal=True, citation_validity=1.0, latency_ms=1900.0),
        _row("q-false-refusal", "MAHARASHTRA", "penalty_lookup",
             "What is the penalty for not registering a project in Maharashtra?",
             status="refused", refusal_reason="low_confidence", rank=None, latency_ms=420.0),
        _row("q-cite-50", "KARNATAKA", "cross_reference", SCRIPT_QUERY, citation_validity=0.5),
        _row("q-cite-80", "CENTRAL", "comparison", HINDI_QUERY, citation_validity=0.8, rank=2),
        _row("q-miss-1", "GUJARAT", "fact_lookup", "Which form is used to apply for registration?",
             rank=None),
        _row("q-miss-2", "MAHARASHTRA", "fact_lookup", "Define ‘carpet area’ under § 2(k).",
             rank=None),
        _row("q-rank-4", "KARNATAKA", "temporal", "When must the promoter deposit 70%?", rank=4),
        _row("q-rank-3", "CENTRAL", "penalty_lookup", "Penalty under Section 61?", rank=3),
        _row("q-rank-2", "GUJARAT", "cross_reference", "Which rule implements Section 4?", rank=2),
    ]  # fmt: skip
    rng = random.Random(7)
    for i in range(1, 31):
        jurisdiction = JURISDICTIONS[i % len(JURISDICTIONS)]
        if i % 6 == 0:  # a correct refusal
            rows.append(_row(f"q{i}", None if i % 12 == 0 else jurisdiction, "out_of_scope",
                             f"Out-of-scope question number {i} about income tax?",
                             status="refused", expect_refusal=True, refusal_reason="out_of_scope",
                             latency_ms=150.0 + rng.random() * 200))  # fmt: skip
            continue
        query_type = ANSWERED_TYPES[i % len(ANSWERED_TYPES)]
        latency = 500.0 + rng.random() * 1500 + (4000.0 if i % 13 == 0 else 0.0)
        rows.append(_row(f"q{i}", jurisdiction, query_type,
                         f"What does {jurisdiction.title()} say about topic {i}?",
                         latency_ms=round(latency, 1)))  # fmt: skip
    assert len(rows) == 40
    return rows


def make_headline(rows: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    def mean(metric: str) -> float | None:
        values = [float(r[metric]) for r in rows if r.get(metric) is not None]
        return round(sum(values) / len(values), 4) if values else None

    out = {m: mean(m) for m in ("hit_at_5", "ndcg_at_10", "recall_at_5", "citation_validity",
                                "hit_at_1", "context_precision", "faithfulness")}  # fmt: skip
    out["mrr"] = mean("reciprocal_rank")
    out["refusal_correctness"] = mean("refusal_correct")
    out["latency_p50_ms"] = 812.3
    out["questions"] = float(len(rows))
    return out


def make_history(runs: int = 3) -> list[dict[str, Any]]:
    start = datetime(2025, 11, 1, 8, 0, tzinfo=UTC)
    out = []
    for i in range(runs):
        metrics = {"hit_at_5": 0.7 + 0.05 * i, "mrr": 0.6 + 0.04 * i, "ndcg_at_10": 0.55 + 0.03 * i,
                   "recall_at_5": 0.4 + 0.02 * i, "citation_validity": 0.9 + 0.03 * i,
                   "refusal_correctness": 0.8 + 0.05 * i if i else None}  # fmt: skip
        out.append({"run_id": f"run{i:02d}-abcdef", "started_at": start + timedelta(days=4 * i),
                    "source": "asset", "metrics": metrics})  # fmt: skip
    return out


def render(out_dir: Path, *, rows: Sequence[Mapping[str, Any]] | None = None,
           history: Sequence[Mapping[str, Any]] | None = None) -> ReportFiles:  # fmt: skip
    rows = make_rows() if rows is None else rows
    return render_report(
        out_dir,
        rows=rows,
        headline=make_headline(rows),
        history=make_history() if history is None else history,
        title="CivicSetu golden-set evaluation",
        generated_at=GENERATED_AT,
        thresholds=THRESHOLDS,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    return render(tmp_path_factory.mktemp("report"))


# ---------------------------------------------------------------------------------------------
# HTML structure


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


class _Structure(HTMLParser):
    """Checks that non-void elements nest and close, ids are unique, and collects images."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.ids: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.headings: list[str] = []
        self.scripts = 0
        self._heading: list[str] | None = None
        self.doctype: str | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if "id" in values:
            self.ids.append(str(values["id"]))
        if tag == "img":
            self.images.append(values)
        if tag == "script":
            self.scripts += 1
        if tag in {"h1", "h2", "h3"}:
            self._heading = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.problems.append(f"self-closing <{tag}/>")

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.problems.append(f"end tag of void </{tag}>")
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag in {"h1", "h2", "h3"} and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)


def _structure(text: str) -> _Structure:
    parser = _Structure()
    parser.feed(text)
    parser.close()
    return parser


def test_files_exist_and_html_is_well_formed(report: ReportFiles) -> None:
    for path in (report.html, report.csv, report.summary_png):
        assert path.is_file() and path.stat().st_size > 0, path
    assert report.html.name == "report.html" and report.csv.name == "per_question.csv"
    text = report.html.read_text(encoding="utf-8")
    assert text.startswith('<!DOCTYPE html>\n<html lang="en">')
    assert '<meta charset="utf-8">' in text and "<title>" in text
    parsed = _structure(text)
    assert parsed.doctype == "DOCTYPE html"
    assert parsed.problems == []
    assert parsed.stack == []
    assert len(parsed.ids) == len(set(parsed.ids)), "duplicate ids"
    assert not list(report.html.parent.glob(".*.tmp")), "temporary files left behind"


def test_html_is_self_contained(report: ReportFiles) -> None:
    text = report.html.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:|//|ftp:)""", text, re.I)
    assert not re.search(r"url\(|@import|<link\b|<iframe\b|<object\b|<embed\b", text, re.I)
    parsed = _structure(text)
    assert parsed.scripts == 1, "one inline script only"
    assert "<script src" not in text
    # every href is an in-page anchor or the CSV next to the page
    hrefs = re.findall(r'href="([^"]*)"', text)
    assert hrefs and all(h.startswith("#") or h == "per_question.csv" for h in hrefs), hrefs
    # six figures (hit@5, refusals, means, confidence, latency, trend), each a decodable PNG
    assert len(parsed.images) == 6
    for image in parsed.images:
        src = str(image["src"])
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert data.startswith(PNG_SIGNATURE)
        with Image.open(io.BytesIO(data)) as picture:
            assert picture.size == (int(str(image["width"])), int(str(image["height"])))
        assert image["alt"]
    # the Content-Security-Policy allows nothing external
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert policy and "default-src 'none'" in policy.group(1) and "img-src data:" in policy.group(1)


def test_every_section_is_there(report: ReportFiles) -> None:
    text = report.html.read_text(encoding="utf-8")
    headings = _structure(text).headings
    assert headings[0] == "CivicSetu golden-set evaluation"
    for key, title in SECTIONS:
        if key in {"ranking", "states", "changes"}:  # only with their data (the tests below)
            continue
        assert title in headings, title
        assert f'<section id="{key}">' in text
    assert "40</strong> questions" in text
    assert "Generated 2025-11-20 09:30:00 UTC" in text
    for jurisdiction in (*JURISDICTIONS, "(none)"):
        assert jurisdiction in text
    # headline table: thresholds and pass/fail badges (hit@5 here is far below 0.9)
    headline = text.split('<section id="headline">')[1].split("</section>")[0]
    assert "≥ 0.9" in headline and "≥ 0.75" in headline and "≥ 1" in headline
    assert '<span class="badge fail">FAIL</span>' in headline
    assert "thresholds not met" in headline
    assert "latency p50 (ms)" in headline  # a headline mean beyond HEADLINE
    # the trend holds the 3 past runs and this run
    assert "over the last 4 runs" in text
    assert 'id="first-run"' not in text


def test_text_from_the_data_is_escaped(report: ReportFiles) -> None:
    text = report.html.read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in text
    assert "alert(1)</script>" not in text
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; &#x27;single&#x27;" in text
    )
    assert HINDI_QUERY in text
    assert "Define ‘carpet area’ under § 2(k)." in text
    assert "<script>alert(1)" not in report.markdown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report.markdown


def test_csv_has_every_question_and_field(report: ReportFiles) -> None:
    rows = make_rows()
    with report.csv.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames or [])
        table = list(reader)
    assert header[: len(ROW_FIELDS)] == list(ROW_FIELDS)
    assert set(header) == set(ROW_FIELDS)
    assert len(table) == len(rows) == 40
    by_id = {r["question_id"]: r for r in table}
    assert set(by_id) == {r["question_id"] for r in rows}
    cited = by_id["q-cite-50"]
    assert cited["query"] == SCRIPT_QUERY
    assert cited["jurisdiction"] == "KARNATAKA" and cited["citation_validity"] == "0.5"
    assert cited["expected"] == "KARNATAKA:Section 11; KARNATAKA:Rule 9"
    assert cited["retrieved"].split("; ")[0] == "KARNATAKA:Section 11"
    assert by_id["q-cite-80"]["query"] == HINDI_QUERY
    refusal = by_id["q-missed-refusal"]
    assert refusal["jurisdiction"] == "" and refusal["hit_at_5"] == ""
    assert refusal["expect_refusal"] == "true" and refusal["refusal_correct"] == "false"
    assert by_id["q-false-refusal"]["refusal_reason"] == "low_confidence"


def test_csv_neutralizes_spreadsheet_formulas(tmp_path: Path) -> None:
    rows = make_rows()[:3]
    rows[0]["query"] = '=HYPERLINK("http://x","click")'
    files = render(tmp_path, rows=rows)
    with files.csv.open(encoding="utf-8", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert table[0]["query"] == '\'=HYPERLINK("http://x","click")'


def _worst_ids(text: str) -> list[str]:
    table = text.split('<table id="worst-table">')[1].split("</table>")[0]
    return re.findall(r'<tr data-question-id="([^"]+)">', table)


def test_ten_worst_in_documented_order(report: ReportFiles) -> None:
    text = report.html.read_text(encoding="utf-8")
    assert _worst_ids(text) == EXPECTED_WORST
    rows = {r["question_id"]: r for r in make_rows()}
    tiers = [problem(rows[qid])[0] for qid in EXPECTED_WORST]
    assert tiers == sorted(tiers) and tiers[:3] == [0, 1, 2]
    assert sorted(rows.values(), key=worst_key)[10]["reciprocal_rank"] == 1.0
    worst = text.split('<table id="worst-table">')[1].split("</table>")[0]
    assert "answered, but a refusal was expected" in worst
    assert "refused (low_confidence), but an answer was expected" in worst
    assert "citation validity 0.50" in worst and "first expected unit at rank 4" in worst
    # expected units that were retrieved are highlighted with their rank
    assert '<span class="tag found" title="retrieved at rank 2">✓ CENTRAL:Section 11' in worst
    assert '<span class="tag missing" title="not retrieved">✗ GUJARAT:Section 10' in worst
    # the Markdown summary has the headline table and the five worst
    assert "| hit@5 |" in report.markdown and "**FAIL**" in report.markdown
    listed = re.findall(r"^\d+\. `([^`]+)`", report.markdown, re.M)
    assert listed == EXPECTED_WORST[:5]


def test_summary_png_and_markdown_image(report: ReportFiles, tmp_path: Path) -> None:
    data = report.summary_png.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    with Image.open(report.summary_png) as image:
        image.verify()
    assert report.summary_markdown_image == (
        f"![evaluation summary](data:image/png;base64,{base64.b64encode(data).decode('ascii')})"
    )
    line = markdown_image(report.summary_png, "summary", max_bytes=100)
    assert not line.startswith("![") and "inline limit" in line
    assert "missing" in markdown_image(tmp_path / "nope.png")


def test_output_is_deterministic(tmp_path: Path) -> None:
    first = render(tmp_path / "a")
    shuffled = make_rows()
    random.Random(3).shuffle(shuffled)
    second = render(tmp_path / "b", rows=shuffled)
    for a, b in ((first.html, second.html), (first.csv, second.csv),
                 (first.summary_png, second.summary_png)):  # fmt: skip
        assert a.read_bytes() == b.read_bytes(), a.name
    assert first.markdown == second.markdown
    again = render(tmp_path / "a")  # replaces the files in place
    assert again.html.read_bytes() == first.html.read_bytes()


def test_empty_and_single_run_history(tmp_path: Path) -> None:
    empty = render(tmp_path / "empty", history=[]).html.read_text(encoding="utf-8")
    assert 'id="first-run"' in empty and "First run" in empty
    assert len(_structure(empty).images) == 5  # no trend picture
    assert "Previous run" in empty and _structure(empty).problems == []
    single = render(tmp_path / "single", history=make_history(1)).html.read_text(encoding="utf-8")
    assert 'id="first-run"' not in single and "over the last 2 runs" in single
    assert len(_structure(single).images) == 6


def test_history_that_already_holds_this_run(tmp_path: Path) -> None:
    rows = make_rows()
    headline = make_headline(rows)
    history = [*make_history(2), {"run_id": "latest", "started_at": GENERATED_AT,
                                  "metrics": dict(headline)}]  # fmt: skip
    files = render_report(tmp_path, rows=rows, headline=headline, history=history, title="t",
                          generated_at=GENERATED_AT, thresholds=THRESHOLDS)  # fmt: skip
    text = files.html.read_text(encoding="utf-8")
    assert "over the last 3 runs" in text  # not 4: this run is not counted twice
    # "Previous run" is the run before it: hit@5 0.750 there
    row = re.search(r"<tr><td>hit@5</td>.*?</tr>", text)
    assert row and ">0.750<" in row.group(0)


def test_the_learned_ranking_beside_the_hand_set_one(tmp_path: Path, report: ReportFiles) -> None:
    rows = make_rows()
    ranking = {"promoted": False, "reason": "dev governing MRR 0.700 does not beat 0.772",
               "rows": [{"variant": "hand-set (current)", "dev_governing_mrr": 0.772,
                         "test_governing_mrr": 0.75},
                        {"variant": "points-c1", "held_back_mrr": 0.79,
                         "dev_governing_mrr": 0.7}],
               "by_type": {"penalty_lookup": {"hand-set dev": 0.9, "hand-set test": 0.8,
                                              "learned dev": 0.95, "learned test": 0.7}},
               "worst": {"learned": [{"id": "q-17", "type": "temporal", "query": "When <now>?",
                                      "status": "refused", "refusal_correct": False,
                                      "governing_rr": None}]}}  # fmt: skip
    files = render_report(tmp_path, rows=rows, headline=make_headline(rows), history=[],
                          title="t", generated_at=GENERATED_AT, thresholds=THRESHOLDS,
                          ranking=ranking)  # fmt: skip
    text = files.html.read_text(encoding="utf-8")
    assert 'id="ranking"' in text and "Not promoted" in text and "does not beat 0.772" in text
    table = text[text.index('id="ranking"') :]
    assert "<th>dev governing mrr</th>" in table and "<td>points-c1</td>" in table
    assert ">0.772<" in table and "<td>—</td>" in table  # a variant without a test score
    assert "<td>penalty_lookup</td>" in table and ">0.950<" in table and ">learned test<" in table
    assert "worst dev questions, learned ranking" in table
    assert "q-17: When &lt;now&gt;?" in table  # escaped
    # without a learned ranker the section and its link are not there
    assert 'id="ranking"' not in report.html.read_text(encoding="utf-8")
    assert 'href="#ranking"' not in report.html.read_text(encoding="utf-8")


def test_the_states_side_by_side_each_value_linked_to_its_quote(
    tmp_path: Path, report: ReportFiles
) -> None:
    rows = make_rows()
    states = {
        "provisions": [
            {"jurisdiction": "GUJARAT", "matter": "Rate of interest", "label": "Rule 16",
             "value": "contractual rate, as mutually agreed", "page": 7,
             "quote": "the rate of interest shall be the contractual rate of interest"},
            {"jurisdiction": "CHANDIGARH", "matter": "Rate of interest", "label": "Rule 15",
             "value": "SBI MCLR + 2%", "page": 49, "quote": "Lending Rate plus two per cent",
             "uri": "/akn/in-ch/act/rules/2016/chandigarh-general-rules-2016/eng@2016-10-31/"
                    "!main~rule_15"},
            {"jurisdiction": "KARNATAKA", "matter": "Rate of interest", "label": None,
             "value": None, "page": None, "quote": None},
        ],
        "flags": ["GUJARAT Rule 16 leaves the rate to the contract <a pointer>"],
        "flag_keys": [{"jurisdiction": "GUJARAT", "matter": "Rate of interest"}],
    }  # fmt: skip
    files = render_report(tmp_path, rows=rows, headline=make_headline(rows), history=[],
                          title="t", generated_at=GENERATED_AT, thresholds=THRESHOLDS,
                          states=states)  # fmt: skip
    text = files.html.read_text(encoding="utf-8")
    section = text[text.index('id="states"') :]
    assert "<th>CHANDIGARH</th><th>GUJARAT</th><th>KARNATAKA</th>" in section
    link = re.search(r'<a href="#(quote-\d+)">SBI MCLR \+ 2%</a>', section)
    assert link and f'id="{link.group(1)}"' in section  # the value links to its quote
    assert "Lending Rate plus two per cent" in section and "not found" in section
    assert (
        "<code>/akn/in-ch/act/rules/2016/chandigarh-general-rules-2016/eng@2016-10-31/"
        "!main~rule_15</code>" in section
    )  # the quote's unit at its Akoma Ntoso address
    assert "contract &lt;a pointer&gt;" in section  # escaped
    assert 'id="states"' not in report.html.read_text(encoding="utf-8")


def test_what_changed_lists_the_recent_changes_newest_first_marking_the_unexplained(
    tmp_path: Path, report: ReportFiles
) -> None:
    rows = make_rows()
    when = datetime(2026, 2, 9, 10, 30, tzinfo=UTC)
    changes = [  # as read_changes returns them, newest first
        {"recorded_at": when, "jurisdiction": "MIZORAM", "kind": "changed",
         "document_key": "mizoram_rules_2018", "unit_label": "Rule 7", "old_sha256": "a" * 64,
         "new_sha256": "b" * 64, "instrument": "mizoram_amendment_2024",
         "detail": {"instruction": 'for the words "forty-five days" <substituted>'}},
        {"recorded_at": when, "jurisdiction": "MIZORAM", "kind": "changed",
         "document_key": "mizoram_rules_2018", "unit_label": "Rule 3", "old_sha256": "c" * 64,
         "new_sha256": "d" * 64, "instrument": None, "detail": {}},
        {"recorded_at": when - timedelta(days=1), "jurisdiction": "MIZORAM",
         "kind": "provision", "document_key": "mizoram_rules_2018", "unit_label": "Rule 7",
         "old_sha256": None, "new_sha256": None, "instrument": None,
         "detail": {"matter": "refund_days", "old_value": "45 days", "new_value": "30 days"}},
    ]  # fmt: skip
    files = render_report(tmp_path, rows=rows, headline=make_headline(rows), history=[],
                          title="t", generated_at=GENERATED_AT, thresholds=THRESHOLDS,
                          changes=changes)  # fmt: skip
    text = files.html.read_text(encoding="utf-8")
    assert 'href="#changes"' in text
    section = text[text.index('<section id="changes">') :].split("</section>")[0]
    assert section.index("Rule 7") < section.index("Rule 3") < section.index("refund_days")
    assert "aaaaaaaaaaaa → bbbbbbbbbbbb" in section and "mizoram_amendment_2024" in section
    assert "&lt;substituted&gt;" in section  # escaped
    assert "<strong>1 unit changed text with" in section and "to explain it</strong>" in section
    assert section.count("⚠") == 2  # the count's mark and Rule 3's (not Rule 7's)
    assert "refund_days: 45 days → 30 days" in section and "2026-02-09 10:30" in section
    # no changes given: no section; an empty list: the section says none was recorded
    assert 'id="changes"' not in report.html.read_text(encoding="utf-8")
    empty = render_report(tmp_path / "empty", rows=rows, headline=make_headline(rows),
                          history=[], title="t", generated_at=GENERATED_AT, changes=[])  # fmt: skip
    assert "No change recorded yet." in empty.html.read_text(encoding="utf-8")


def test_the_questions_diversity_moved_the_governing_provision_out_of(
    tmp_path: Path, report: ReportFiles
) -> None:
    rows = make_rows()
    moved = {"unit": "GUJARAT:Rule 9", "label": "Rule 9(2)", "score": 1.234,
             "candidate_rank": 2, "final_rank": None, "lower_scored_above": 7,
             "gave_way": None, "displaced": True}  # fmt: skip
    kept = {
        **moved,
        "final_rank": 4,
        "lower_scored_above": 2,
        "displaced": False,
        "gave_way": "gave way to GUJARAT Rule 3 (rules): at most 3 units of one document",
    }
    for row in rows:
        row["governing_hit_at_5"] = None if row["expect_refusal"] else 0.0
    rows[5]["governing_placement"], rows[6]["governing_placement"] = moved, kept
    files = render_report(tmp_path, rows=rows, headline=make_headline(rows), history=[],
                          title="t", generated_at=GENERATED_AT, thresholds=THRESHOLDS)  # fmt: skip
    text = files.html.read_text(encoding="utf-8")
    section = text[text.index('<section id="diversity">') :].split("</section>")[0]
    scored = sum(not r["expect_refusal"] for r in rows)
    assert f"<strong>1</strong> of {scored}" in section
    assert f'data-question-id="{rows[5]["question_id"]}"' in section
    assert f'data-question-id="{rows[6]["question_id"]}"' not in section  # still in the top 5
    assert "<td>GUJARAT:Rule 9</td>" in section and ">1.234<" in section and ">7<" in section
    assert f"`{rows[5]['question_id']}`" in files.markdown  # listed in the summary too
    with files.csv.open(encoding="utf-8", newline="") as handle:
        placed = {r["question_id"]: r["governing_placement"] for r in csv.DictReader(handle)}
    assert json.loads(placed[rows[6]["question_id"]]) == kept  # one JSON object per row
    # rows recorded without placements: the section says so, nothing is counted
    assert "recorded no placement" in report.html.read_text(encoding="utf-8")


def test_the_test_half_is_shown_as_aggregates_never_question_by_question(
    tmp_path: Path,
) -> None:
    """Issue 47: a reader who sees the test half's questions tunes on them. Its questions are in
    no list, table, CSV row or Markdown line; the halves' figures count them."""
    rows = [{**r, "split": ("dev", "test")[i % 2]} for i, r in enumerate(make_rows())]
    test = [r for r in rows if r["split"] == "test"]
    files = render_report(tmp_path, rows=rows, headline=make_headline(rows), history=[],
                          title="t", generated_at=GENERATED_AT, thresholds=THRESHOLDS)  # fmt: skip
    text = files.html.read_text(encoding="utf-8")
    with files.csv.open(encoding="utf-8") as handle:
        listed = {row["question_id"] for row in csv.DictReader(handle)}
    assert listed == {r["question_id"] for r in rows if r["split"] == "dev"}
    for r in test:
        assert f'data-question-id="{r["question_id"]}"' not in text
        assert f">{r['question_id']}<" not in text and f"`{r['question_id']}`" not in files.markdown
    assert f"but the {len(test)} of the test half" in text
    halves = text[text.index('id="splits"') : text.index('id="diversity"')]
    assert f"test (n={len(test)})" in halves  # the test half's size, an aggregate
    assert "worst questions" in files.markdown  # of the dev half


def test_no_questions_and_no_thresholds(tmp_path: Path) -> None:
    files = render_report(tmp_path, rows=[], headline={}, history=[], title="Empty <run> $x^{$",
                          generated_at=GENERATED_AT)  # fmt: skip
    text = files.html.read_text(encoding="utf-8")
    assert "Empty &lt;run&gt; $x^{$" in text and "No thresholds set" in text
    assert _structure(text).problems == []
    with files.csv.open(encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [list(ROW_FIELDS)]
    assert files.markdown.count(" | — |") == len(HEADLINE)  # every headline mean: not computed
    assert "worst questions" not in files.markdown


# ---------------------------------------------------------------------------------------------
# Chromium


def _chromium() -> str:
    """The Chromium binary; a missing one fails the test on CI and skips it elsewhere."""
    path = shutil.which("chromium")
    if path is None:
        message = "chromium is not installed (Debian: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {message}: the report's render check must run on CI")
        pytest.skip(f"{message}; the render check runs where it is")
    return path


def test_report_renders_in_chromium(report: ReportFiles) -> None:
    result = check_renders(report.html, chromium=_chromium())
    assert result.errors == []
    assert result.ok
    assert result.dom_bytes > report.html.stat().st_size // 2


def test_render_check_can_fail(tmp_path: Path) -> None:
    chromium = _chromium()
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>broken</title>'
        f'<script>{RENDER_CHECK_SCRIPT}</script></head><body><pre id="render-errors"></pre>'
        '<img alt="broken-picture" src="data:image/png;base64,AAAA">'
        '<script>throw new Error("deliberate failure");</script></body></html>\n',
        encoding="utf-8",
    )
    result = check_renders(page, chromium=chromium)
    assert not result.ok
    assert any("broken image: broken-picture" in e for e in result.errors), result.errors
    assert any("deliberate failure" in e for e in result.errors), result.errors


def test_render_check_catches_an_external_reference(report: ReportFiles, tmp_path: Path) -> None:
    """The page's Content-Security-Policy blocks anything external, and the check says so."""
    chromium = _chromium()
    text = report.html.read_text(encoding="utf-8")
    page = tmp_path / "external.html"
    remote = '<img alt="remote" src="https://example.invalid/x.png">'
    page.write_text(text.replace("<main>", "<main>" + remote, 1), encoding="utf-8")
    result = check_renders(page, chromium=chromium)
    assert not result.ok
    assert any("broken image: remote" in e for e in result.errors), result.errors


def test_render_check_names_a_missing_binary(report: ReportFiles) -> None:
    with pytest.raises(ChromiumNotFoundError, match="no-such-chromium-binary"):
        check_renders(report.html, chromium="no-such-chromium-binary")


def test_render_check_times_out(report: ReportFiles) -> None:
    result = check_renders(report.html, chromium=_chromium(), timeout_s=0.05)
    assert not result.ok and "did not finish within 0.05 s" in result.errors[0]


def test_the_trend_draws_each_runs_interval_as_a_band() -> None:
    """A history entry carrying its intervals gives its run a band in the trend (the noise
    around the line); one without draws the line alone."""
    from civicsetu_pipelines.evaluate import plots
    from civicsetu_pipelines.evaluate.report_data import trend_runs

    history = make_history(3)
    banded = [{**entry, "intervals": {"mrr_ci95": [0.5, 0.8]}} for entry in history]
    runs, _ = trend_runs(banded, {}, history[-1]["run_id"])
    assert all(r.intervals == {"mrr_ci95": [0.5, 0.8]} for r in runs)
    plain, _ = trend_runs(history, {}, history[-1]["run_id"])
    assert all(r.intervals == {} for r in plain)
    with_bands, without = plots.trend_png(runs, {}), plots.trend_png(plain, {})
    assert with_bands.startswith(b"\x89PNG") and with_bands != without


def test_the_risk_coverage_curve_takes_answers_from_the_most_confident_down() -> None:
    def question(qid: str, p: float | None, hit: float, status: str = "answered") -> Question:
        return to_question({"question_id": qid, "status": status, "governing_hit_at_3": hit,
                            "confidence_probability": p, "split": "dev"})  # fmt: skip

    questions = [question("a", 0.9, 1.0), question("b", 0.8, 0.0), question("c", 0.7, 1.0),
                 question("d", None, 0.0, status="refused")]  # fmt: skip
    assert risk_coverage(questions) == [(0.25, 1.0), (0.5, 0.5), (0.75, 2 / 3)]
    assert png_size(risk_coverage_png(questions))[0] > 0
