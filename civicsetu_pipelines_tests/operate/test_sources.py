"""Sources as data (issue 37): listing pages and drop folders watched for new gazettes.

Against a real HTTP server on a local port (``http.server`` in a thread, serving a temporary
directory with an ``index.html`` listing page): each tick of :func:`watch_once` registers what
is new, once; the same PDF under two addresses is one document; a 404, a timeout, an HTML page
served as a PDF and an oversized file are each named and register nothing; a folder picks up a
dropped PDF once; a PDF that cannot be identified waits in the pending list until `documents
accept` registers it. Logic tier: generated PDFs, no database (nothing is materialized)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from civicsetu_pipelines.base import Settings
from civicsetu_pipelines.operate import (
    SEVERAL,
    SourceError,
    WatchLimits,
    accept_pending,
    add_source,
    load_pending,
    watch_once,
)
from civicsetu_pipelines.operate.sources import pdf_links
from civicsetu_pipelines_tests.gazette_site import listing
from civicsetu_pipelines_tests.pdfgen import write_pdf

# A loaded CI machine can keep a local server from answering for a second: only the test of a
# timeout waits less than the slow handler's SLOW_SECONDS (gazette_site.py).
LIMITS = WatchLimits(timeout=15.0, delay=0.0, max_pdf_bytes=1_000_000)
IMPATIENT = dataclasses.replace(LIMITS, timeout=2.0)


def order(title: str, date: str) -> list[list[str]]:
    """One page of a Mizoram order, identified from its own words with high confidence."""
    return [[
        "GOVERNMENT OF MIZORAM",
        "URBAN DEVELOPMENT AND POVERTY ALLEVIATION DEPARTMENT",
        "ORDER",
        f"Aizawl, the {date}",
        "No. B.13015/2/2017-UDPA.\u2014 In exercise of the powers conferred by section 91 of the "
        "Real Estate (Regulation and Development) Act, 2016, the Government of Mizoram hereby "
        "makes the following Order to remove the difficulties, namely:\u2014",
        f"1. (1) This Order may be called the {title}.",
        "(2) It shall come into force on the date of its publication in the Official Gazette.",
        "2. Until the Authority is established, the Secretary shall receive the applications of "
        "promoters for registration.",
    ]]  # fmt: skip


FIRST = "Mizoram Real Estate (Removal of Difficulties) Order, 2019"
FIRST_KEY = "mizoram_real_estate_removal_of_difficulties_order_2019"
SECOND = "Mizoram Real Estate (Removal of Difficulties) (Second) Order, 2019"
SECOND_KEY = "mizoram_real_estate_removal_of_difficulties_second_order_2019"
MEMO = [["NOTIFICATION", "The promoter shall keep the accounts of the project, as the rules "
         "require."]]  # fmt: skip


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state directory of the test's own (never the user's), online."""
    path = tmp_path / "state"
    monkeypatch.setenv("CIVICSETU_STATE_DIR", str(path))
    monkeypatch.delenv("CIVICSETU_OFFLINE", raising=False)
    monkeypatch.delenv("CIVICSETU_REGISTRY", raising=False)
    return path


def tick(limits: WatchLimits = LIMITS, **kwargs: Any) -> Any:
    return watch_once(Settings.from_env(), limits=limits, **kwargs)


def registered(state: Path) -> list[dict[str, Any]]:
    path = state / "registry" / "documents.yaml"
    return yaml.safe_load(path.read_text())["documents"] if path.is_file() else []


def test_pdf_links_are_resolved_against_the_page_and_its_base() -> None:
    html = """<a href="a.pdf#page=2">A</a> <a href="/g/B.PDF">B</a> <a href="a.pdf">again</a>
    <a href="view?id=7" type="application/pdf">typed</a> <a href="get?file=notice-pdf">maybe</a>
    <a href="about.html">about</a> <a href="mailto:x@y.in">mail</a>
    <a href="my file.pdf">space</a>"""
    assert pdf_links(html, "http://h.in/list/index.html") == [
        ("http://h.in/list/a.pdf", True), ("http://h.in/g/B.PDF", True),
        ("http://h.in/list/view?id=7", True), ("http://h.in/list/get?file=notice-pdf", False),
        ("http://h.in/list/my%20file.pdf", True),
    ]  # fmt: skip
    based = '<base href="http://cdn.h.in/files/"><a href="c.pdf">C</a>'
    assert pdf_links(based, "http://h.in/") == [("http://cdn.h.in/files/c.pdf", True)]


def test_a_link_added_between_two_ticks_is_one_new_registration_and_two_urls_one_document(
    site: tuple[Path, str], state: Path, tmp_path: Path
) -> None:
    root, base = site
    write_pdf(root / "first.pdf", order(FIRST, "28th January, 2019"))
    (root / "copies").mkdir()
    shutil.copy(root / "first.pdf", root / "copies" / "first-again.pdf")
    listing(root, "first.pdf", "copies/first-again.pdf")
    source = add_source(f"{base}/index.html", jurisdiction="Mizoram", state_dir=state)

    first = tick()
    assert [(o.key, o.url) for o in first.registered] == [(FIRST_KEY, f"{base}/first.pdf")], (
        first.sources, first.outcomes)  # fmt: skip
    (again,) = first.skipped  # the same notification under a second address: one document
    assert again.url == f"{base}/copies/first-again.pdf" and again.key == FIRST_KEY
    assert "registered as" in again.reason
    assert first.changed == ["MIZORAM"] and not first.failed and not first.pending
    (entry,) = registered(state)
    assert entry["source_url"] == f"{base}/first.pdf" and entry["doc_type"] == "order"
    assert (state / "storage" / "pdfs" / f"{entry['sha256']}.pdf").is_file()

    unchanged = tick()  # a conditional GET: the page is not read again
    assert [s.status for s in unchanged.sources] == ["not_modified"]
    assert not unchanged.outcomes and unchanged.changed == []

    write_pdf(root / "second.pdf", order(SECOND, "4th March, 2019"))
    listing(root, "first.pdf", "copies/first-again.pdf", "second.pdf")
    second = tick(jurisdictions=["MIZORAM"])
    assert [(o.key, o.outcome) for o in second.outcomes] == [(SECOND_KEY, "registered")]
    assert second.sources[0].new == 1 and second.changed == ["MIZORAM"]

    listing(root, "second.pdf")  # a link that disappears removes nothing
    gone = tick()
    assert gone.sources[0].status == "ok" and not gone.outcomes
    assert [e["key"] for e in registered(state)] == [FIRST_KEY, SECOND_KEY]
    assert tick(jurisdictions=["BIHAR"]).sources == []  # another jurisdiction's sources only
    memory = json.loads((state / "registry" / "sources_state.json").read_text())
    assert set(memory["sources"][source.id]["seen"]) == {
        f"{base}/first.pdf", f"{base}/copies/first-again.pdf", f"{base}/second.pdf"}  # fmt: skip


def test_a_source_serving_several_registers_each_pdf_in_the_jurisdiction_it_names(
    site: tuple[Path, str], state: Path
) -> None:
    """A ministry's or a portal's page lists several states' gazettes: each PDF is registered in
    the jurisdiction its own heading names ("GOVERNMENT OF MIZORAM"), and a new jurisdiction
    is among the tick's changed ones; one naming no issuer waits pending, and is accepted only
    with the jurisdiction a person gives."""
    root, base = site
    write_pdf(root / "mizoram.pdf", order(FIRST, "28th January, 2019"))
    bihar = [[line.replace("MIZORAM", "BIHAR").replace("Mizoram", "Bihar") for line in page]
             for page in order(FIRST, "4th March, 2019")]  # fmt: skip
    write_pdf(root / "bihar.pdf", bihar)
    write_pdf(root / "memo.pdf", MEMO)
    listing(root, "mizoram.pdf", "bihar.pdf", "memo.pdf")
    source = add_source(f"{base}/index.html", jurisdiction=None, state_dir=state)
    assert source.id.startswith("several_") and source.jurisdiction == SEVERAL

    ticked = tick()
    assert {(o.url.rsplit("/", 1)[1], o.jurisdiction) for o in ticked.registered} == {
        ("mizoram.pdf", "MIZORAM"), ("bihar.pdf", "BIHAR")}  # fmt: skip
    assert ticked.changed == ["BIHAR", "MIZORAM"]
    assert {e["key"]: e["jurisdiction"] for e in registered(state)} == {
        FIRST_KEY: "MIZORAM", FIRST_KEY.replace("mizoram", "bihar"): "BIHAR"}  # fmt: skip
    assert "of BIHAR (read from page 1: \"GOVERNMENT OF BIHAR\")" in next(
        o.reason for o in ticked.registered if o.jurisdiction == "BIHAR")  # fmt: skip
    (waiting,) = ticked.pending
    assert "the jurisdiction could not be read" in waiting.reason and "pass -j J" in waiting.reason
    with pytest.raises(SourceError, match="its source serves several: pass -j J"):
        accept_pending(waiting.key, state_dir=state, title="A Memo on Accounts, 2020",
                       effective_from=dt.date(2020, 1, 1))  # fmt: skip
    added = accept_pending(waiting.key, state_dir=state, title="A Memo on Accounts, 2020",
                           effective_from=dt.date(2020, 1, 1), jurisdiction="Goa")  # fmt: skip
    assert added.spec.jurisdiction == "GOA" and load_pending(state) == []


def test_each_bad_link_is_named_and_registers_nothing_and_stops_nothing(
    site: tuple[Path, str], state: Path
) -> None:
    root, base = site
    (root / "error.pdf").write_text("<!DOCTYPE html><html><body>Session expired</body></html>")
    (root / "huge.pdf").write_bytes(b"%PDF-1.7\n" + b"0" * (LIMITS.max_pdf_bytes + 1))
    write_pdf(root / "slow.pdf", order(SECOND, "4th March, 2019"))
    write_pdf(root / "good.pdf", order(FIRST, "28th January, 2019"))
    (root / "notice-pdf.html").write_text("<html><body>a page about a PDF</body></html>")
    listing(root, "missing.pdf", "slow.pdf", "error.pdf", "huge.pdf", "notice-pdf.html",
            "good.pdf")  # fmt: skip
    add_source(f"{base}/", jurisdiction="MIZORAM", state_dir=state)

    result = tick(IMPATIENT)
    failed = {o.url.rsplit("/", 1)[1]: o.reason for o in result.failed}
    assert set(failed) == {"missing.pdf", "slow.pdf", "error.pdf", "huge.pdf"}, failed
    assert "HTTP 404" in failed["missing.pdf"]
    assert "timed out" in failed["slow.pdf"]
    assert "an HTML page, not a PDF" in failed["error.pdf"]
    assert "over the cap of 1000000 bytes" in failed["huge.pdf"]
    (quiet,) = result.skipped  # only guessed at (no .pdf): passed over, not a failure
    assert quiet.url.endswith("notice-pdf.html") and "HTML page" in quiet.reason
    assert [o.key for o in result.registered] == [FIRST_KEY]  # the bad ones stopped nothing
    assert [e["key"] for e in registered(state)] == [FIRST_KEY]
    assert not [p for p in (state / "storage" / "pdfs").iterdir() if p.name.startswith(".")]

    again = tick(
        IMPATIENT
    )  # a failed link is tried again (a server may recover), the rest are seen
    assert {o.url.rsplit("/", 1)[1] for o in again.failed} == set(failed)
    assert not again.registered and not again.skipped
    assert [e["key"] for e in registered(state)] == [FIRST_KEY]


def test_a_folder_source_picks_up_a_dropped_pdf_once(state: Path, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    add_source(str(drop), jurisdiction="Mizoram", state_dir=state)
    assert not tick().outcomes

    write_pdf(drop / "order.pdf", order(FIRST, "28th January, 2019"))
    (drop / "notes.txt").write_text("not a PDF: not looked at")
    dropped = tick()
    assert [(o.key, o.outcome) for o in dropped.outcomes] == [(FIRST_KEY, "registered")]
    (entry,) = registered(state)
    assert entry["source_url"] == (drop / "order.pdf").as_uri()
    assert not tick().outcomes  # seen: not again

    shutil.copy(drop / "order.pdf", drop / "order-copy.pdf")  # the same bytes, another name
    (copy,) = tick().outcomes
    assert copy.outcome == "skipped" and copy.key == FIRST_KEY
    assert len(registered(state)) == 1

    # dated only by the Gazette's masthead: read, but with low confidence, so a person decides
    (page,) = order(SECOND, "4th March, 2019")
    page[3] = "MIZORAM GAZETTE, MONDAY, 4th March, 2019"
    write_pdf(drop / "masthead.pdf", [page])
    (doubt,) = tick().pending
    assert "read with low confidence only: the date '2019-03-04'" in doubt.reason
    assert "the Gazette's date of issue" in doubt.reason and len(registered(state)) == 1
    added = accept_pending(doubt.key, state_dir=state, effective_from=dt.date(2019, 3, 1))
    assert (added.spec.key, added.spec.effective_date) == (SECOND_KEY, dt.date(2019, 3, 1))
    assert added.spec.source_url == (drop / "masthead.pdf").as_uri()
    assert not tick().outcomes and load_pending(state) == []


def test_an_unidentified_pdf_waits_pending_until_accepted_without_the_network(
    site: tuple[Path, str], state: Path
) -> None:
    root, base = site
    write_pdf(root / "memo.pdf", MEMO)
    listing(root, "memo.pdf")
    add_source(f"{base}/index.html", jurisdiction="Mizoram", state_dir=state)

    result = tick()
    (waiting,) = result.pending
    assert "the title and the date could not be read" in waiting.reason
    assert "pass --title TITLE and --effective-from YYYY-MM-DD" in waiting.reason
    assert not result.registered and result.changed == [] and registered(state) == []
    (pending,) = load_pending(state)
    assert (pending.key, pending.source_url) == (waiting.key, f"{base}/memo.pdf")
    assert not tick().outcomes  # not pended twice

    (root / "memo.pdf").unlink()  # accept needs no network: the PDF is in the store
    added = accept_pending(pending.key, state_dir=state, title="A Memo on Accounts, 2020",
                           effective_from=dt.date(2020, 1, 1))  # fmt: skip
    assert added.spec.doc_type == "notification"  # read; the rest given
    (entry,) = registered(state)
    assert entry["key"] == "a_memo_on_accounts_2020" and entry["source_url"] == f"{base}/memo.pdf"
    assert load_pending(state) == []


def test_the_cli_adds_lists_watches_accepts_and_removes(
    site: tuple[Path, str], state: Path
) -> None:
    from civicsetu_pipelines.cli import app

    root, base = site
    write_pdf(root / "first.pdf", order(FIRST, "28th January, 2019"))
    write_pdf(root / "memo.pdf", MEMO)
    listing(root, "first.pdf", "memo.pdf", "missing.pdf")
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.stdout, result.stderr

    code, out, err = run("sources", "add", "-j", "Mizoram", f"{base}/index.html")
    assert code == 0 and "added source 'mizoram_" in out, out + err
    code, _, err = run("sources", "add", "-j", "Mizoram", f"{base}/index.html")
    assert code == 2 and "already watched" in err
    code, out, _ = run("sources", "list", "--json")
    (listed,) = json.loads(out)
    assert (listed["kind"], listed["jurisdiction"], listed["checked_at"]) == (
        "listing", "MIZORAM", None)  # fmt: skip

    code, out, err = run("watch", "--once", "--no-materialize", "--json", "--timeout", "2",
                         "--delay", "0")  # fmt: skip
    assert code == 1, out + err  # a link failed: said in the exit code, named in the result
    result = json.loads(out)
    assert [r["key"] for r in result["registered"]] == [FIRST_KEY]
    assert result["changed"] == ["MIZORAM"] and "materialized" not in result
    assert [f["url"] for f in result["failed"]] == [f"{base}/missing.pdf"]
    (pending,) = result["pending"]

    code, out, _ = run("documents", "pending", "--json")
    assert [(p["key"], p["source_url"]) for p in json.loads(out)] == [
        (pending["key"], f"{base}/memo.pdf")]  # fmt: skip
    code, out, err = run("documents", "accept", pending["key"], "--title",
                         "A Memo on Accounts, 2020", "--effective-from", "2020-01-01")  # fmt: skip
    assert code == 0 and "added 'a_memo_on_accounts_2020'" in out, out + err
    assert json.loads(run("documents", "pending", "--json")[1]) == []

    code, out, err = run("sources", "remove", listed["id"])
    assert code == 0 and "stay registered" in out, out + err
    assert json.loads(run("sources", "list", "--json")[1]) == []
    assert [e["key"] for e in registered(state)] == [FIRST_KEY, "a_memo_on_accounts_2020"]


def test_offline_reads_folders_but_fetches_no_listing(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_source("https://gazette.example.in/list", jurisdiction="Mizoram", state_dir=state)
    monkeypatch.setenv("CIVICSETU_OFFLINE", "1")
    never = httpx.Client(transport=httpx.MockTransport(lambda request: pytest.fail("fetched")))
    (check,) = tick(client=never).sources
    assert check.status == "offline"


def test_the_sensor_runs_the_sources_tick_and_asks_for_the_new_partition(
    site: tuple[Path, str], state: Path
) -> None:
    """What `civicsetu dev`'s sensor does on its interval, driven through a Dagster instance:
    after the baseline, a tick reads the watched listing, registers the order and, in the same
    tick, adds MIZORAM as a partition (no code reload) and requests its run; the next tick,
    with nothing new on the page, requests nothing."""
    import dagster as dg

    from civicsetu_pipelines.defs.jobs import build_ingest_job
    from civicsetu_pipelines.defs.sensors import build_gazette_sensor
    from civicsetu_pipelines.ingest import DOCUMENTS_YAML

    root, base = site
    write_pdf(root / "order.pdf", order(FIRST, "28th January, 2019"))
    listing(root, "order.pdf")
    add_source(f"{base}/index.html", jurisdiction="Mizoram", state_dir=state)
    sensor = build_gazette_sensor(build_ingest_job(neo4j_enabled=False), mirror_dirs=[],
                                  registry_files=[DOCUMENTS_YAML], state_dir=state,
                                  watch_limits=LIMITS)  # fmt: skip
    with dg.instance_for_test() as instance:
        baseline = sensor(dg.build_sensor_context(instance=instance))
        assert isinstance(baseline, dg.SensorResult) and baseline.cursor
        assert registered(state) == []  # the first tick records the baseline, reads no source
        ticked = sensor(dg.build_sensor_context(cursor=baseline.cursor, instance=instance))
        assert isinstance(ticked, dg.SensorResult)
        assert [e["key"] for e in registered(state)] == [FIRST_KEY]
        assert [r.partition_key for r in ticked.run_requests or []] == ["MIZORAM"]
        (added,) = ticked.dynamic_partitions_requests or []
        assert list(added.partition_keys) == ["MIZORAM"]
        quiet = sensor(dg.build_sensor_context(cursor=ticked.cursor, instance=instance))
        assert not getattr(quiet, "run_requests", None)  # nothing new on the page
