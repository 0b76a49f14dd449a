"""``civicsetu documents add | list | remove`` (issue 14): a state the code has never named,
added from a PDF, becomes a partition that ``materialize`` ingests end to end and ``ask``
answers from; bad input is refused with one line and nothing registered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.amending_documents import (
    AMENDMENT,
    AMENDMENT_TITLE,
    APRIL,
    GO,
    MISSING,
    ORDER_DATE,
    RULES_TITLE,
    dated_rules_pages,
    rules_pages,
)
from civicsetu_pipelines_tests.conftest import Processes
from civicsetu_pipelines_tests.gazette_site import listing
from civicsetu_pipelines_tests.pdfgen import (
    encrypted_pdf,
    scanned_pdf,
    write_bytes,
    write_pdf,
    zero_page_pdf_bytes,
)

CLI = str(Path(sys.executable).with_name("civicsetu"))
TITLE = "Bihar Real Estate (Regulation and Development) Rules, 2017"
BODY = ("The promoter shall maintain the accounts of the project and shall produce them "
        "before the Authority whenever it so directs, within the time it specifies.")  # fmt: skip
RULES = [
    (
        "Short title and commencement",
        "These rules may be called the Bihar Real Estate "
        "(Regulation and Development) Rules, 2017. They come into force on publication.",
    ),
    (
        "Definitions",
        "In these rules, unless the context otherwise requires, the Act means the "
        "Real Estate (Regulation and Development) Act, 2016.",
    ),
    (
        "Refund of amount on delay in possession",
        "Where the promoter fails to give possession "
        "of the apartment by the date specified in the agreement for sale, the promoter shall "
        "refund the amount received with interest at the State Bank of India highest marginal "
        "cost of lending rate plus two per cent within forty-five days, as required by section "
        "18 of the Act.",
    ),
    ("Accounts of the project", BODY),
]


BIHAR_ORDER_TITLE = "Bihar Real Estate (Removal of Difficulties) Order, 2019"
BIHAR_ORDER_KEY = "bihar_real_estate_removal_of_difficulties_order_2019"
BIHAR_ORDER = [
    "GOVERNMENT OF BIHAR",
    "URBAN DEVELOPMENT AND HOUSING DEPARTMENT",
    "ORDER",
    f"1. Short title.— This Order may be called the {BIHAR_ORDER_TITLE}.",
    "2. Registration.— Until the Authority is established, the Secretary shall receive the "
    "applications of promoters for the registration of their projects.",
]


def _rules_pages() -> list[list[str]]:
    rows = ["GOVERNMENT OF BIHAR", "URBAN DEVELOPMENT AND HOUSING DEPARTMENT", "NOTIFICATION",
            f"The Governor of Bihar makes the following rules, namely:- {BODY}"]  # fmt: skip
    for n, (title, text) in enumerate(RULES, 1):
        rows += [f"{n}. {title}.— {text}", f"(2) {BODY}"]
    return [rows]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture
def env(tmp_path: Path, store_db: str, processes: Processes) -> dict[str, str]:
    environment = dict(os.environ)
    environment["CIVICSETU_STATE_DIR"] = str(tmp_path / "state")
    environment["CIVICSETU_DATABASE_URL"] = store_db
    environment["CIVICSETU_OFFLINE"] = "1"
    return environment


def _cited(asked: subprocess.CompletedProcess[str]) -> set[str]:
    """The documents an ``ask --json`` cites (none when it refuses, or fails: nothing served)."""
    try:
        result = json.loads(asked.stdout)
    except json.JSONDecodeError:
        return set()
    return {c["document"] for c in result.get("citations") or []}


def test_a_new_state_from_a_pdf_to_an_answer_and_removed_again_with_no_code_change(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A state the code never named: two PDFs added, materialized once, asked. Then (issue 37)
    removing is as real as adding: `documents remove` retires the document's rows at once (the
    next materialization agrees), `ask` stops citing it, `history` still shows it with an end;
    the last document removed while the database is not reachable is retired by the next
    `materialize -j` of the jurisdiction, which has no partition any more."""
    pdf = write_pdf(tmp_path / "bihar_rules.pdf", _rules_pages())
    added = _run(["documents", "add", str(pdf), "-j", "IN-BR", "--kind", "rules", "--title",
                  TITLE, "--effective-from", "2017-05-01"], env)  # fmt: skip
    assert added.returncode == 0, added.stderr
    key = "bihar_real_estate_regulation_and_development_rules_2017"
    assert f"added {key!r}: rules of BIHAR" in added.stdout
    assert "new partition" in added.stdout and "has a text layer" in added.stdout
    order_pdf = write_pdf(tmp_path / "bihar_order.pdf", [BIHAR_ORDER])
    added = _run(["documents", "add", str(order_pdf), "-j", "Bihar", "--kind", "order",
                  "--title", BIHAR_ORDER_TITLE, "--effective-from", "2019-01-28"], env)  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = json.loads(_run(["documents", "list", "--json"], env).stdout)
    mine = {d["key"]: d for d in listed if d["origin"] == "added"}
    assert set(mine) == {key, BIHAR_ORDER_KEY} and mine[key]["jurisdiction"] == "BIHAR"
    assert any(d["origin"] == "shipped" for d in listed)
    stored = Path(env["CIVICSETU_STATE_DIR"]) / "storage" / "pdfs"
    assert len(list(stored.glob("*.pdf"))) == 2  # the content-addressed copies

    run = _run(["materialize", "-j", "bihar", "--no-reports"], env)
    assert run.returncode == 0, run.stdout + run.stderr
    # a new jurisdiction is a partition of the instance the UI shows, with no code reload
    # (Dagster dynamic partitions, added from the registry by the run)
    code = (
        "from civicsetu_pipelines.base import Settings; "
        "from civicsetu_pipelines.operate import open_instance, prepare_dagster_home; "
        "prepare_dagster_home(Settings.from_env()); "
        "print(open_instance().get_dynamic_partitions('jurisdiction'))"
    )
    keys = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True, timeout=300).stdout  # fmt: skip
    assert "BIHAR" in keys
    question = "When must the promoter refund the amount with interest for delay in possession?"
    asked = _run(["ask", question, "-j", "BIHAR", "--json"], env)
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    assert result["status"] == "answered", result
    cited = {(c["document"], c["label"]) for c in result["citations"]}
    assert (key, "Rule 3") in cited, cited

    # removed: its rows retired at once, in one transaction, and counted
    removed = _run(["documents", "remove", key], env)
    assert removed.returncode == 0, removed.stderr
    assert f"removed {key!r} (BIHAR) from the registry" in removed.stdout
    assert f"{key!r}: retired " in removed.stdout and "0 unit(s)" not in removed.stdout
    assert "the next `civicsetu materialize -j BIHAR` agrees" in removed.stdout

    def current(document: str) -> int:
        with connect(env["CIVICSETU_DATABASE_URL"]) as conn:
            row = conn.execute("SELECT count(*) FROM legal_chunks WHERE document_key = %s AND "
                               "status = 'current'", (document,)).fetchone()  # fmt: skip
        return int(row[0]) if row else 0

    assert current(key) == 0 and current(BIHAR_ORDER_KEY) > 0
    # the next materialization of the jurisdiction agrees: nothing of it comes back
    run = _run(["materialize", "-j", "BIHAR", "--no-reports"], env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert current(key) == 0 and current(BIHAR_ORDER_KEY) > 0
    with connect(env["CIVICSETU_DATABASE_URL"]) as conn:
        catalogued = {r[0] for r in conn.execute("SELECT key FROM documents").fetchall()}
    assert catalogued == {BIHAR_ORDER_KEY}
    asked = _run(["ask", question, "-j", "BIHAR", "--json"], env)
    assert asked.returncode == 0, asked.stderr  # answered from what remains, or refused
    assert key not in _cited(asked), asked.stdout
    # its history is kept, with an end
    history = json.loads(_run(["history", key, "Rule 3", "--json"], env).stdout)["versions"]
    assert history and all(v["valid_to"] and v["status"] == "superseded" for v in history)
    assert history[0]["valid_from"] == "2017-05-01"

    # the last document, removed while the database cannot be reached: `materialize -j` retires
    # its rows (the jurisdiction has no partition any more), instead of refusing
    down = {**env, "CIVICSETU_DATABASE_URL": f"postgresql://postgres@/postgres?host={tmp_path}"}
    removed = _run(["documents", "remove", BIHAR_ORDER_KEY], down)
    assert removed.returncode == 0, removed.stderr
    assert "the database is not running or cannot be reached" in removed.stdout
    assert "its rows will be retired by the next `civicsetu materialize -j BIHAR`" in (
        removed.stdout
    )
    assert current(BIHAR_ORDER_KEY) > 0
    run = _run(["materialize", "-j", "BIHAR", "--no-reports"], env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "BIHAR: no registered documents left: retired " in run.stdout
    with connect(env["CIVICSETU_DATABASE_URL"]) as conn:
        row = conn.execute("SELECT count(*) FROM legal_chunks WHERE jurisdiction = 'BIHAR' AND "
                           "status <> 'superseded'").fetchone()  # fmt: skip
    assert row == (0,)
    asked = _run(["ask", question, "-j", "BIHAR", "--json"], env)
    assert not {key, BIHAR_ORDER_KEY} & _cited(asked), asked.stdout
    assert asked.returncode == 0 or "nothing is materialized" in asked.stderr, asked.stderr
    shipped = _run(["documents", "remove", "rera_act_2016"], env)
    assert shipped.returncode == 2 and "shipped document" in shipped.stderr


def test_bad_input_is_refused_with_one_line_and_nothing_registered(
    env: dict[str, str], tmp_path: Path
) -> None:
    from civicsetu_pipelines.base.settings import DEFAULT_MIRROR

    good = write_pdf(tmp_path / "good.pdf", _rules_pages())
    text = tmp_path / "notes.pdf"
    text.write_text("these are not the rules\n")
    locked = encrypted_pdf(tmp_path / "locked.pdf", _rules_pages())
    empty = write_bytes(tmp_path / "empty.pdf", zero_page_pdf_bytes())
    base = ["--kind", "rules", "--title", TITLE]
    cases = {
        "not a PDF": [str(text), "-j", "BIHAR", *base],
        "encrypted": [str(locked), "-j", "BIHAR", *base],
        "has zero pages": [str(empty), "-j", "BIHAR", *base],
        "unknown jurisdiction 'ATLANTIS'": [str(good), "-j", "ATLANTIS", *base],
        "unknown kind 'memo'": [str(good), "-j", "BIHAR", "--kind", "memo", "--title", TITLE],
        "already registered; choose another": [
            str(good),
            "-j",
            "BIHAR",
            *base,
            "--key",
            "rera_act_2016",
        ],  # fmt: skip
        "page 9 is outside the document": [str(good), "-j", "BIHAR", *base, "--pages", "1-9"],
        "no such file": [str(tmp_path / "missing.pdf"), "-j", "BIHAR", *base],
    }
    if (DEFAULT_MIRROR / "rera_act_2016.pdf").is_file():
        cases["already registered as 'rera_act_2016'"] = [
            str(DEFAULT_MIRROR / "rera_act_2016.pdf"), "-j", "CENTRAL", "--kind", "act",
            "--title", "The Act again"]  # fmt: skip
    state = Path(env["CIVICSETU_STATE_DIR"])
    for expected, args in cases.items():
        result = _run(["documents", "add", *args], env)
        assert result.returncode == 2, (expected, result.stdout, result.stderr)
        message = " ".join(result.stderr.split())
        assert expected in message, (expected, message)
        assert "Traceback" not in result.stderr
        assert not (state / "registry").exists() and not (state / "storage").exists(), expected

    scan = scanned_pdf(tmp_path / "scan.pdf", _rules_pages())
    accepted = _run(["documents", "add", str(scan), "-j", "Bihar", "--kind", "rules",
                     "--title", "Bihar Scanned Rules, 2018", "--effective-from", "2018-01-01",
                     "--language", "hin"], env)  # fmt: skip
    assert accepted.returncode == 0, accepted.stderr
    assert "no text layer: its pages will be OCR'd in 'hin'" in accepted.stdout
    assert "Tesseract and its language data are installed" in accepted.stdout  # setup: hin


def test_a_real_gazette_of_a_state_the_code_never_named_goes_end_to_end(
    env: dict[str, str], corpus_dir: Path
) -> None:
    """The Bihar General Regulations, 2021 as gazetted (../shared/corpus): a bilingual issue
    whose Hindi pages are in a legacy font (Latin gibberish in the text layer), then 32 English
    regulations. Added with `documents add` and nothing else, materialized, asked: the 32
    regulations in sequence, the Hindi pages read again from their images and set aside as
    another language (none of their gibberish served), and an answer quoting a Bihar regulation
    verbatim."""
    pdf = corpus_dir / "bihar_general_regulations_2021.pdf"
    added = _run(["documents", "add", str(pdf), "-j", "Bihar", "--kind", "regulations", "--title",
                  "Bihar Real Estate Regulatory Authority (General) Regulations, 2021",
                  "--effective-from", "2021-08-05"], env)  # fmt: skip
    assert added.returncode == 0, added.stderr
    key = next(d["key"] for d in json.loads(_run(["documents", "list", "--json"], env).stdout)
               if d["origin"] == "added")  # fmt: skip
    run = _run(["materialize", "-j", "BIHAR", "--no-reports", "--json"], env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (outcome,) = json.loads(run.stdout)
    assert outcome["status"] == "ok", outcome
    units = json.loads(_run(["sections", "--document", key, "--json"], env).stdout)["units"]
    numbered = [u["label"] for u in units if u["label"].startswith("Regulation ")]
    assert numbered == [f"Regulation {n}" for n in range(1, 33)]
    stats = {d["document"]: d for d in json.loads(_run(["stats", "--json"], env).stdout)[
        "documents"]}  # fmt: skip
    assert stats[key]["ingest_status"] == "ok" and stats[key]["ocr_pages"] >= 5
    asked = _run(["ask", "How must a promoter apply to register a real estate project in Bihar?",
                  "-j", "BIHAR", "--json"], env)  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    assert answer["status"] == "answered", answer
    cited = [c for c in answer["citations"] if c["document"] == key]
    assert cited and all(c["label"].startswith("Regulation ") for c in cited)
    served = " ".join(c["quote"] for c in answer["citations"])
    for gibberish in ("vxLr", "fnukad", "ekeyks"):  # legacy-font Hindi read as Latin
        assert gibberish not in served
    # the new state is in the states' table too: each matter read from its regulations, a value
    # with its verbatim quote or "not found", never a guess
    compared = _run(["compare", "-m", "list"], env)
    matters = [line.split(":")[0] for line in compared.stdout.splitlines() if ":" in line]
    assert "interest_rate" in matters
    every = _run(["compare", "-m", "all", "-j", "BIHAR", "--json"], env)
    assert every.returncode == 0, every.stderr
    provisions = json.loads(every.stdout)
    assert sorted(p["matter"] for p in provisions) == sorted(matters)  # one row each
    for provision in provisions:
        assert provision["jurisdiction"] == "BIHAR"
        assert provision["status"] in {"found", "act", "not_found"}
        assert (provision["quote"] is not None) == (provision["status"] != "not_found")
    one = _run(["compare", "-m", "interest_rate", "-j", "BIHAR", "--json"], env)
    assert json.loads(one.stdout) == [p for p in provisions if p["matter"] == "interest_rate"]


def test_an_amendment_added_with_documents_add_changes_what_ask_cites_from_its_date(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A state's rules and, later, the notification amending them, each added with `documents
    add` (the notification names the rules it amends in its own words: no --amends) and
    materialized: from the notification's date the amended text is served and cited "as
    substituted by ...", before it the original; `history`, `sections --as-of` and the graph
    say so; the instruction naming a rule the rules lack is reported, and changes nothing."""
    rules_pdf = write_pdf(tmp_path / "mizoram_rules.pdf", rules_pages())
    notice_pdf = write_pdf(tmp_path / "mizoram_amendment.pdf", [[*AMENDMENT, MISSING]])
    for pdf, kind, title, day in (
        (rules_pdf, "rules", RULES_TITLE, "2018-05-01"),
        (notice_pdf, "notification", AMENDMENT_TITLE, "2024-03-15"),
    ):
        added = _run(["documents", "add", str(pdf), "-j", "Mizoram", "--kind", kind, "--title",
                      title, "--effective-from", day], env)  # fmt: skip
        assert added.returncode == 0, added.stderr
    rules = "mizoram_real_estate_regulation_and_development_rules_2018"
    notice = "mizoram_real_estate_regulation_and_development_amendment_rules_2024"
    run = _run(["materialize", "-j", "MIZORAM", "--no-reports", "--json"], env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Rule 40(2)" in run.stdout + run.stderr  # the instruction it could not apply

    def ask(question: str, *extra: str) -> dict[str, Any]:
        asked = _run(["ask", question, "-j", "MIZORAM", "--json", *extra], env)
        assert asked.returncode == 0, asked.stderr
        result = json.loads(asked.stdout)
        assert result["status"] == "answered", result
        return result

    refund = "Within how many days must the promoter pay a refund to the allottee?"
    before = ask(refund, "--as-of", "2024-03-31")
    (old,) = [c for c in before["citations"] if c["label"] == "Rule 7"]  # type: ignore[union-attr]
    assert "forty-five days" in old["quote"] and old["document"] == rules
    assert old["in_force_until"] == "2024-04-01" and "amended" not in old
    after = ask(refund)
    (new,) = [c for c in after["citations"] if c["label"] == "Rule 7"]  # type: ignore[union-attr]
    # the words only the amendment made are printed nowhere whole: its instruction is cited
    assert "thirty days" in new["quote"] and "shall be substituted" in new["quote"]
    assert new["document"] == notice and new["page"] == 1
    assert new["amended"]["note"] == f"as amended by {AMENDMENT_TITLE}, from 2024-04-01"
    assert f"Rule 7 ({RULES_TITLE}, as amended by {AMENDMENT_TITLE}" in str(after["answer"])
    # every citation, before and after, checked as the evaluation checks them: verbatim in its
    # unit (or the instruction that made it) and on the cited page of the cited document
    from civicsetu_pipelines.evaluate.scoring import _verified
    from civicsetu_pipelines.store.database import connect

    with connect(env["CIVICSETU_DATABASE_URL"]) as conn:
        assert _verified(conn, after["citations"]) == len(after["citations"])  # type: ignore[arg-type]
    rate = ask("What is the rate of interest payable by the promoter?")
    quoted = " ".join(str(c["quote"]) for c in rate["citations"])  # type: ignore[union-attr]
    assert "plus three per cent" in quoted and "plus two per cent" not in quoted

    history = json.loads(_run(["history", rules, "Rule 7", "--json"], env).stdout)["versions"]
    assert [(v["valid_from"], v["valid_to"]) for v in history] == [
        ("2018-05-01", "2024-04-01"), ("2024-04-01", None)]  # fmt: skip
    assert history[1]["source"].startswith(f"substitute_words by {notice}")
    # a sub-rule printed inside its rule's chunk: the versions of the rule that holds it
    inside = json.loads(_run(["history", rules, "Rule 8(2)", "--json"], env).stdout)["versions"]
    assert [(v["label"], v["valid_from"]) for v in inside] == [
        ("Rule 8", "2018-05-01"), ("Rule 8", "2024-04-01")]  # fmt: skip
    assert "plus three per cent" in inside[1]["text"]
    # what the run changed, recorded (issue 37): Rule 7 and Rule 8 as the notice made them (the
    # jurisdiction's first load: nothing was served before, so added, with their instrument),
    # each with the sha256 of the text served
    import hashlib

    listed = _run(["changes", "-j", "MIZORAM", "--json"], env)
    assert listed.returncode == 0, listed.stderr
    made = {c["unit_label"]: c for c in json.loads(listed.stdout)["changes"]
            if c["document_key"] == rules and c["instrument"] == notice}  # fmt: skip
    assert {"Rule 7", "Rule 8"} <= set(made) and made["Rule 7"]["kind"] == "added"
    assert made["Rule 7"]["new_sha256"] == hashlib.sha256(history[1]["text"].encode()).hexdigest()
    then = json.loads(_run(["sections", "-d", rules, "--as-of", "2020-01-01", "--json"],
                           env).stdout)["units"]  # fmt: skip
    now = json.loads(_run(["sections", "-d", rules, "--as-of", "2025-01-01", "--json"],
                          env).stdout)["units"]  # fmt: skip
    assert [u["label"] for u in then] == ["Preamble", *(f"Rule {n}" for n in range(1, 9))]
    assert [u["label"] for u in now] == ["Preamble", "Rule 1", "Rule 2", "Rule 3", "Rule 4",
                                         "Rule 4A", "Rule 6", "Rule 7", "Rule 8"]  # fmt: skip
    assert {u["label"]: u["amended_by"] for u in now}["Rule 8"] == notice

    exported = _run(["graph", "export", "--out", str(tmp_path / "graph"), "-j", "MIZORAM"], env)
    assert exported.returncode == 0, exported.stderr
    edges = "".join(p.read_text() for p in (tmp_path / "graph").rglob("*.csv"))
    assert "AMENDED_BY" in edges


def test_a_watched_listing_page_registers_amends_and_retires_a_state_with_no_flags(
    env: dict[str, str], tmp_path: Path, site: tuple[Path, str]
) -> None:
    """Issue 37 as a user meets it, through the CLI and a real HTTP server: a listing page links
    a state's rules; `sources add` and `watch --once` register (read from the PDF's own words,
    no flag given) and materialize them. A government order amending one of those rules, linked
    on the page later, is picked up by the next tick and applied from its date; `changes --json`
    names the rule it changed and the order. The rules cannot be removed while the order that
    amends them stays; both removed together while the database is down, the next `watch
    --once` retires them: no current row of the state is left and `ask` no longer cites them."""
    root, base = site
    online = {k: v for k, v in env.items() if k != "CIVICSETU_OFFLINE"}
    write_pdf(root / "rules.pdf", dated_rules_pages())
    write_pdf(root / "go-21.pdf", [GO])
    listing(root, "rules.pdf")
    added = _run(["sources", "add", "-j", "Mizoram", f"{base}/index.html"], online)
    assert added.returncode == 0, added.stderr
    watch = ["watch", "--once", "--json", "--delay", "0", "--timeout", "10"]

    def tick() -> dict[str, Any]:
        ticked = _run(watch, online)
        assert ticked.returncode == 0, ticked.stdout[-2000:] + ticked.stderr[-2000:]
        return dict(json.loads(ticked.stdout))

    first = tick()
    rules = "mizoram_real_estate_regulation_and_development_rules_2018"
    assert [r["key"] for r in first["registered"]] == [rules]
    assert [(m["jurisdiction"], m["status"]) for m in first["materialized"]] == [("MIZORAM", "ok")]
    fee = "What fee per square meter must the promoter pay for registration?"

    def quoted(*extra: str) -> str:
        asked = _run(["ask", fee, "-j", "MIZORAM", "--json", *extra], online)
        assert asked.returncode == 0, asked.stderr
        result = json.loads(asked.stdout)
        assert result["status"] == "answered", result
        return " ".join(str(c["quote"]) for c in result["citations"] if c["label"] == "Rule 3")

    assert "fee of ten rupees" in quoted()

    listing(root, "rules.pdf", "go-21.pdf")
    second = tick()
    (order,) = second["registered"]
    assert second["changed"] == ["MIZORAM"] and second["materialized"][0]["status"] == "ok"
    docs = {d["key"]: d for d in json.loads(_run(["documents", "list", "--json"], online).stdout)}
    assert docs[order["key"]]["kind"] == "order"
    assert docs[order["key"]]["effective_date"] == ORDER_DATE.isoformat()
    assert "twenty" in quoted() and "twenty" not in quoted("--as-of", "2019-01-01")
    listed = _run(["changes", "-j", "MIZORAM", "--json"], online)
    assert listed.returncode == 0, listed.stderr
    (changed,) = [c for c in json.loads(listed.stdout)["changes"] if c["kind"] == "changed"]
    assert (changed["document_key"], changed["unit_label"], changed["instrument"]) == (
        rules, "Rule 3", order["key"])  # fmt: skip
    assert changed["old_sha256"] != changed["new_sha256"]
    assert changed["detail"]["date"] == ORDER_DATE.isoformat()

    alone = _run(["documents", "remove", rules], online)
    assert alone.returncode == 2 and f"{order['key']!r} amends {rules!r}" in alone.stderr
    assert "nothing removed" in alone.stderr and "Traceback" not in alone.stderr
    down = {**online, "CIVICSETU_DATABASE_URL": f"postgresql://postgres@/postgres?host={tmp_path}"}
    removed = _run(["documents", "remove", rules, order["key"]], down)
    assert removed.returncode == 0, removed.stderr
    assert "its rows will be retired by the next `civicsetu materialize -j MIZORAM`" in (
        removed.stdout
    )
    third = tick()
    assert third["registered"] == [] and third["unretired"] == {"MIZORAM": sorted(
        [rules, order["key"]])}  # fmt: skip
    with connect(env["CIVICSETU_DATABASE_URL"]) as conn:
        row = conn.execute("SELECT count(*) FROM legal_chunks WHERE jurisdiction = 'MIZORAM' AND "
                           "status <> 'superseded'").fetchone()  # fmt: skip
    assert row == (0,)
    asked = _run(["ask", fee, "-j", "MIZORAM", "--json"], online)
    assert not {rules, order["key"]} & _cited(asked), asked.stdout
    assert tick()["unretired"] == {}  # retired once: the next tick has nothing to do


# -- add reads the kind, title, date and what it amends from the document (in process) --------

ORDER_TITLE = "Mizoram Real Estate (Removal of Difficulties) Order, 2019"
ORDER = [
    "GOVERNMENT OF MIZORAM",
    "URBAN DEVELOPMENT AND POVERTY ALLEVIATION DEPARTMENT",
    "ORDER",
    "Aizawl, the 28th January, 2019",
    "No. B.13015/2/2017-UDPA.\u2014 In exercise of the powers conferred by section 91 of the Real "
    "Estate (Regulation and Development) Act, 2016, the Government of Mizoram hereby makes the "
    "following Order to remove the difficulties, namely:\u2014",
    f"1. (1) This Order may be called the {ORDER_TITLE}.",
    "(2) It shall come into force on the date of its publication in the Official Gazette.",
    "2. Until the Authority is established, the Secretary shall receive the applications of "
    "promoters for registration.",
]
ORDER_KEY = "mizoram_real_estate_removal_of_difficulties_order_2019"


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[CliRunner, Path]:
    """``civicsetu`` in this process, on a state directory of its own (never the user's)."""
    state = tmp_path / "state"
    monkeypatch.setenv("CIVICSETU_STATE_DIR", str(state))
    monkeypatch.setenv("CIVICSETU_OFFLINE", "1")
    monkeypatch.delenv("CIVICSETU_REGISTRY", raising=False)
    return CliRunner(), state


def _add(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    from civicsetu_pipelines.cli import app

    result = runner.invoke(app, ["documents", "add", *args])
    return result.exit_code, result.stdout, result.stderr


def _entries(state: Path) -> list[dict[str, object]]:
    path = state / "registry" / "documents.yaml"
    return yaml.safe_load(path.read_text())["documents"] if path.is_file() else []


def test_dry_run_prints_what_was_read_and_why_and_writes_nothing(
    cli: tuple[CliRunner, Path], tmp_path: Path
) -> None:
    runner, state = cli
    pdf = write_pdf(tmp_path / "order.pdf", [ORDER])
    code, out, err = _add(runner, str(pdf), "-j", "Mizoram", "--dry-run")
    assert code == 0, out + err
    lines = [*out.splitlines(), ""]
    shown = {line.split(":")[0].strip(): (line, lines[i + 1]) for i, line in enumerate(lines)
             if line.startswith("  ") and not line.startswith("   ")}  # fmt: skip
    # every field: its value and confidence, then the page and the words it was read from
    assert "order  [high]" in shown["kind"][0] and "ORDER, 2019" in shown["kind"][1]
    assert f"{ORDER_TITLE}  [high]" in shown["title"][0]
    assert f'page 1: "{ORDER_TITLE}' not in shown["title"][1]  # the words, not the value
    assert "page 1:" in shown["title"][1] and "This Order may be called" in shown["title"][1]
    assert "2019-01-28  [high]" in shown["date"][0]
    assert 'page 1: "Aizawl, the 28th January, 2019"' in shown["date"][1]
    assert "not found: it names no date it comes into force on" in out
    assert f"would add {ORDER_KEY!r}: order of MIZORAM, effective from 2019-01-28" in out
    assert "nothing written (--dry-run)" in out
    assert not (state / "registry").exists() and not (state / "storage" / "pdfs").exists()

    # a dry run that would be refused says what it read, then why, and writes nothing either
    code, out, err = _add(runner, str(pdf), "-j", "Mizoram", "--key", "rera_act_2016",
                          "--dry-run")  # fmt: skip
    assert code == 2 and ORDER_TITLE in out and "already registered" in err
    assert not (state / "registry").exists()


def test_add_reads_kind_title_date_and_amends_and_asks_for_what_it_cannot_read(
    cli: tuple[CliRunner, Path], tmp_path: Path
) -> None:
    runner, state = cli
    order = write_pdf(tmp_path / "order.pdf", [ORDER])
    code, out, err = _add(runner, str(order), "-j", "Mizoram")
    assert code == 0, out + err
    assert f"added {ORDER_KEY!r}: order of MIZORAM, effective from 2019-01-28" in out
    assert f"title read from the document: {ORDER_TITLE} (page 1:" in out
    (entry,) = _entries(state)
    assert (entry["key"], entry["doc_type"], entry["title"], entry["effective_date"]) == (
        ORDER_KEY, "order", ORDER_TITLE, "2019-01-28")  # fmt: skip
    assert "amends" not in entry  # it names no registered document it amends

    # what cannot be read is asked for, one line naming the flag; nothing is written
    words = "The promoter shall keep the accounts of the project, as the rules require."
    memo = write_pdf(tmp_path / "memo.pdf", [["NOTIFICATION", words]])
    code, out, err = _add(runner, str(memo), "-j", "Mizoram")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "the title and the date could not be read" in err
    assert "pass --title TITLE and --effective-from YYYY-MM-DD" in err
    code, out, err = _add(runner, str(memo), "-j", "Mizoram", "--title", "A Memo, 2020",
                          "--effective-from", "2020-01-01")  # fmt: skip
    assert code == 0, err  # the kind read (a notification), the rest given
    assert [e["doc_type"] for e in _entries(state)] == ["order", "notification"]

    # an amendment names what it amends and when, in its own words: no --amends, no dates
    rules = write_pdf(tmp_path / "rules.pdf", rules_pages())
    code, out, err = _add(runner, str(rules), "-j", "Mizoram", "--kind", "rules", "--title",
                          RULES_TITLE, "--effective-from", "2018-05-01")  # fmt: skip
    assert code == 0, err
    notice = write_pdf(tmp_path / "amendment.pdf", [AMENDMENT])
    code, out, err = _add(runner, str(notice), "-j", "Mizoram")
    assert code == 0, out + err
    amendment = _entries(state)[-1]
    rules_key = "mizoram_real_estate_regulation_and_development_rules_2018"
    assert amendment["title"] == AMENDMENT_TITLE
    assert amendment["effective_date"] == APRIL.isoformat()
    assert amendment["amends"] == [rules_key]
    assert f"amends read from the document: {rules_key}" in out


def test_add_starts_the_shared_checks_validator_and_db_stop_stops_it(
    cli: tuple[CliRunner, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``documents add`` starts the validator `materialize` will ask (so that its library
    imports while the user turns to it); ``db stop`` stops it. A dry run starts none."""
    from civicsetu_pipelines.base import process_alive
    from civicsetu_pipelines.cli import app

    runner, state = cli
    monkeypatch.setenv("CIVICSETU_VALIDATOR_IDLE_S", "60")
    pdf = write_pdf(tmp_path / "order.pdf", [ORDER])
    code, out, err = _add(runner, str(pdf), "-j", "Mizoram", "--dry-run")
    assert code == 0, out + err
    assert not list((state / "run").glob("validator-*.pid"))
    code, out, err = _add(runner, str(pdf), "-j", "Mizoram")
    assert code == 0, out + err
    deadline = time.monotonic() + 30  # started, not waited for: it writes its pid file itself
    while not list((state / "run").glob("validator-*.pid")) and time.monotonic() < deadline:
        time.sleep(0.05)
    (pid_file,) = (state / "run").glob("validator-*.pid")
    pid = int(pid_file.read_text())
    assert process_alive(pid)
    stopped = runner.invoke(app, ["db", "stop"])
    assert f"stopped the checks' validator (pid {pid})" in stopped.stdout + stopped.stderr
    assert not process_alive(pid) and not pid_file.exists()
