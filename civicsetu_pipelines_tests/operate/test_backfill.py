"""A multi-partition backfill through the Dagster daemon completes (issue 7): `civicsetu backfill`
queues one run per jurisdiction and a real `dagster-daemon` launches them under the run queue."""

from __future__ import annotations

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

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR, REPO_ROOT
from civicsetu_pipelines.ingest.registry import DOCUMENTS_YAML
from civicsetu_pipelines.store.database import connect, ensure_database, with_database
from civicsetu_pipelines_tests.conftest import Processes

DOCUMENTS = (
    "gujarat_appellate_tribunal_rules_2016",
    "karnataka_agreement_for_sale_draft_rules_2017",
)
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def daemon_env(
    pg_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    packaged_models_dir: Path,
    processes: Processes,
) -> Iterator[dict[str, str]]:
    if not DEFAULT_MIRROR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {DEFAULT_MIRROR} (CI must have ../shared)")
        pytest.skip(f"corpus missing at {DEFAULT_MIRROR}")
    root = tmp_path_factory.mktemp("backfill")
    state = root / "state"
    state.mkdir(parents=True)
    entries = [e for e in yaml.safe_load(DOCUMENTS_YAML.read_text())["documents"]
               if e["key"] in DOCUMENTS]  # fmt: skip
    registry = root / "registry.yaml"
    registry.write_text(yaml.safe_dump({"schema_version": 1, "documents": entries}))
    ensure_database(pg_url, "backfill_test")
    env = {
        **os.environ,
        "CIVICSETU_STATE_DIR": str(state),
        "CIVICSETU_DATABASE_URL": with_database(pg_url, "backfill_test"),
        "CIVICSETU_REGISTRY": str(registry),
        "CIVICSETU_MIRROR_DIRS": str(DEFAULT_MIRROR),
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
        [str(BIN / "civicsetu"), "backfill", "-j", "GUJARAT", "-j", "KARNATAKA", "--timeout",
         "1200"],
        env=daemon_env, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "GUJARAT: ok" in result.stderr and "KARNATAKA: ok" in result.stderr
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
    assert out.strip() == "2 ['GUJARAT', 'KARNATAKA'] ['SUCCESS'] ['embedding']", out
    with connect(daemon_env["CIVICSETU_DATABASE_URL"]) as conn:
        rows: Any = conn.execute(
            "SELECT jurisdiction, count(*) FROM legal_chunks WHERE status = 'current' "
            "GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert [r[0] for r in rows] == ["GUJARAT", "KARNATAKA"] and all(r[1] > 5 for r in rows)
    print(f"backfill of 2 partitions through the daemon: {time.monotonic() - started:.0f}s")
