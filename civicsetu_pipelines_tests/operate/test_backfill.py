"""A multi-partition backfill through the Dagster daemon completes (issue 7): `civicsetu backfill`
queues one run per jurisdiction and a real `dagster-daemon` launches them under the run queue.

The daemon path is what is proved, not the corpus: two jurisdictions of no default document
and no golden question (so no golden scoring either) each hold one small generated rules PDF
(a registry of its own, ``CIVICSETU_REGISTRY``, and an offline mirror,
``CIVICSETU_MIRROR_DIRS``), so the runs are short."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from civicsetu_pipelines.base.settings import REPO_ROOT
from civicsetu_pipelines.store.database import connect, ensure_database, with_database
from civicsetu_pipelines_tests.conftest import Processes
from civicsetu_pipelines_tests.pdfgen import Para, write_pdf

JURISDICTIONS = ("GOA", "KERALA")
RULES = 9  # numbered rules per jurisdiction, three to a page
BODY = (
    "The promoter shall upload the details of the project on the website of the Authority and "
    "keep them updated for the whole duration of the project."
)
BIN = Path(sys.executable).parent


def _rules_pages(state: str) -> list[list[Any]]:
    """A state's generated rules: a bold title, then numbered rules, three to a page."""
    title = Para(f"THE {state} REAL ESTATE TEST RULES, 2020", bold=True)
    rules = [Para(f"{n}. {state.title()} rule {n}.- {BODY}", space_before=6)
             for n in range(1, RULES + 1)]  # fmt: skip
    return [[title, *rules[:3]], rules[3:6], rules[6:]]


def _entry(state: str, pdf: Path) -> dict[str, Any]:
    return {
        "key": f"{state.lower()}_backfill_test_rules_2020",
        "title": f"The {state.title()} Real Estate Test Rules, 2020",
        "jurisdiction": state,
        "doc_type": "rules",
        "effective_date": "2020-01-31",
        "source_url": f"https://example.gov.in/{pdf.name}",
        "filename": pdf.name,
        "sha256": hashlib.sha256(pdf.read_bytes()).hexdigest(),
        "language": "eng",
        "status": "in_force",
    }


@pytest.fixture(scope="module")
def daemon_env(
    pg_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    packaged_models_dir: Path,
    processes: Processes,
) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("backfill")
    state = root / "state"
    state.mkdir(parents=True)
    mirror = root / "mirror"
    mirror.mkdir()
    entries = [_entry(j, write_pdf(mirror / f"{j.lower()}_rules.pdf", _rules_pages(j)))
               for j in JURISDICTIONS]  # fmt: skip
    registry = root / "registry.yaml"
    registry.write_text(yaml.safe_dump({"schema_version": 1, "documents": entries}))
    ensure_database(pg_url, "backfill_test")
    env = {
        **os.environ,
        "CIVICSETU_STATE_DIR": str(state),
        "CIVICSETU_DATABASE_URL": with_database(pg_url, "backfill_test"),
        "CIVICSETU_REGISTRY": str(registry),
        "CIVICSETU_MIRROR_DIRS": str(mirror),
        "CIVICSETU_OFFLINE": "1",
        "CIVICSETU_ENABLE_SEED_STATES": "0",
    }
    code = (
        "import os; from civicsetu_pipelines.operate.instance import prepare_dagster_home; "
        "prepare_dagster_home(); print(os.environ['DAGSTER_HOME']); "
        "print(os.environ['CIVICSETU_DAGSTER_PG_URL']); "
        "print(os.environ['CIVICSETU_DAGSTER_ARTIFACTS'])"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    env.update(DAGSTER_HOME=out[0], CIVICSETU_DAGSTER_PG_URL=out[1],
               CIVICSETU_DAGSTER_ARTIFACTS=out[2])  # fmt: skip
    log = (root / "daemon.log").open("w")
    workspace = REPO_ROOT / "workspace.yaml"
    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-w", str(workspace)],
        env=env, cwd=out[0], stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        yield env
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(daemon.pid, signal.SIGKILL)
        log.close()


def test_a_two_jurisdiction_backfill_completes_through_the_daemon(
    daemon_env: dict[str, str],
) -> None:
    started = time.monotonic()
    result = subprocess.run(
        [str(BIN / "civicsetu"), "backfill", "-j", "GOA", "-j", "KERALA", "--timeout",
         "1200"],
        env=daemon_env, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "GOA: ok" in result.stderr and "KERALA: ok" in result.stderr
    assert "No Dagster daemon is running" not in result.stderr
    code = (
        "import dagster as dg\n"
        "with dg.DagsterInstance.get() as i:\n"
        "    runs = [r for r in i.get_runs() if 'dagster/backfill' in r.tags]\n"
        "    print(len(runs), sorted(r.tags['dagster/partition'] for r in runs),"
        " sorted({r.status.value for r in runs}), sorted({r.tags.get('civicsetu/workload', '')"
        " for r in runs}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=daemon_env, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert out.strip() == "2 ['GOA', 'KERALA'] ['SUCCESS'] ['embedding']", out
    with connect(daemon_env["CIVICSETU_DATABASE_URL"]) as conn:
        rows: Any = conn.execute(
            "SELECT jurisdiction, count(*) FROM legal_chunks WHERE status = 'current' "
            "GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert [r[0] for r in rows] == ["GOA", "KERALA"] and all(r[1] > 5 for r in rows)
    print(f"backfill of 2 partitions through the daemon: {time.monotonic() - started:.0f}s")
