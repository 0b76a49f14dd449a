"""The ``civicsetu`` command end to end: materialize through the Dagster instance on Postgres,
then ``stats --json`` and ``sections --json`` read what was stored."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from civicsetu_pipelines.base.settings import DEFAULT_MIRROR, ENV_GOLDEN
from civicsetu_pipelines_tests.conftest import Processes

CLI = str(Path(sys.executable).with_name("civicsetu"))


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def cli_env(
    pg_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    processes: Processes,
    golden_subset: Path,
) -> dict[str, str]:
    """``materialize --reports`` runs the answers and evaluation jobs after the partition: they
    score four questions of the session's golden subset (``CIVICSETU_GOLDEN``: two of each half,
    of the Act, the store holding CENTRAL alone); the evaluation job itself is proved on the
    whole corpus by ``evaluate/test_evaluation.py``, the command here."""
    if not DEFAULT_MIRROR.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {DEFAULT_MIRROR} (CI must have ../shared)")
        pytest.skip(f"corpus missing at {DEFAULT_MIRROR}")
    env = dict(os.environ)
    env["CIVICSETU_STATE_DIR"] = str(tmp_path_factory.mktemp("cli_state"))
    env["CIVICSETU_DATABASE_URL"] = pg_url
    from civicsetu_pipelines.evaluate.scoring import load_golden, write_golden

    central = [q for q in load_golden(golden_subset) if q.jurisdiction == "CENTRAL"]
    chosen = [q for half in ("dev", "test") for q in [q for q in central if q.split == half][:2]]
    assert len(chosen) == 4, "the golden subset holds two CENTRAL questions of each half"
    golden = tmp_path_factory.mktemp("cli_golden") / "golden.jsonl"
    write_golden(golden, chosen)
    env[ENV_GOLDEN] = str(golden)
    return env


@pytest.fixture(scope="module")
def materialized(cli_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = _run(["materialize", "--jurisdiction", "CENTRAL", "--reports"], cli_env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_materialize_prints_summary_and_records_runs(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str]
) -> None:
    assert "CENTRAL" in materialized.stdout
    assert "Ingestion summary" in materialized.stdout
    assert "civicsetu dev" in materialized.stderr
    # The run is in the Dagster instance (Postgres storage), so the UI shows it.
    code = (
        "import dagster as dg\n"
        "from civicsetu_pipelines.operate.instance import prepare_dagster_home\n"
        "prepare_dagster_home()\n"
        "with dg.DagsterInstance.get() as i:\n"
        "    runs = i.get_runs()\n"
        "    ingest = [r for r in runs if r.job_name == 'ingest_job']\n"
        "    asked = [r for r in runs if r.job_name == 'answers_job']\n"
        "    tag = ingest[0].tags.get('dagster/partition')\n"
        "    print(type(i.run_storage).__name__, len(ingest), tag, len(asked))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    storage, count, partition, asked = out.stdout.split()
    assert storage == "PostgresRunStorage"
    assert int(count) >= 1
    assert partition == "CENTRAL"
    assert int(asked) >= 1  # the sample questions were answered after the partitions
    assert "answers_job: ok" in materialized.stderr


def test_stats_json(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str]
) -> None:
    result = _run(["stats", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    docs = {d["document"]: d for d in json.loads(result.stdout)["documents"]}
    act = docs["rera_act_2016"]
    assert act["jurisdiction"] == "CENTRAL"
    assert act["pages"] == 37
    assert act["ocr_pages"] == 0
    assert act["sections"] == 92
    assert act["chunks"] > 92
    assert act["coverage"] >= 0.99
    assert docs["rera_faq_2017"]["ingest_status"] == "ok"


def test_sections_json(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str]
) -> None:
    result = _run(["sections", "--document", "rera_act_2016", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    units = json.loads(result.stdout)["units"]
    sections = [u for u in units if u["label"].startswith("Section ")]
    assert [u["label"] for u in sections] == [f"Section {n}" for n in range(1, 93)]
    by_label = {u["label"]: u for u in sections}
    assert by_label["Section 18"]["title"] == "Return of amount and compensation"
    assert by_label["Section 1"]["page_start"] == 1
    assert all(isinstance(u["page_start"], int) for u in units)


def test_sections_unknown_document(cli_env: dict[str, str]) -> None:
    result = _run(["sections", "--document", "no_such_doc", "--json"], cli_env)
    assert result.returncode == 2
    assert "no_such_doc" in result.stderr


def test_second_materialize_is_up_to_date_and_force_reruns(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str]
) -> None:
    again = _run(["materialize", "--jurisdiction", "CENTRAL"], cli_env)
    assert again.returncode == 0, again.stderr
    assert "CENTRAL: up to date" in again.stderr
    forced = _run(["materialize", "--jurisdiction", "CENTRAL", "--force"], cli_env)
    assert forced.returncode == 0, forced.stderr
    assert "CENTRAL: ok" in forced.stderr
    assert "up to date" not in forced.stderr
    # by default the partition only, neither the sample answers nor the golden scores; the run's
    # steps said as they start (stderr is not a terminal here: one line each)
    assert "answers_job" not in forced.stderr and "evaluation_job" not in forced.stderr
    assert "civicsetu eval" in forced.stderr
    assert re.search(r"ingest_job CENTRAL: step \d+/\d+ \w+", forced.stderr), forced.stderr
    assert "answers_job: ok" in materialized.stderr and "evaluation_job: ok" in materialized.stderr


def test_stats_json_reports_the_store(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str]
) -> None:
    result = _run(["stats", "--json"], cli_env)
    assert result.returncode == 0, result.stderr
    store = {s["jurisdiction"]: s for s in json.loads(result.stdout)["store"]}
    central = store["CENTRAL"]
    docs = json.loads(result.stdout)["documents"]
    chunks = sum(d["chunks"] for d in docs if d["jurisdiction"] == "CENTRAL")
    assert central["current_rows"] == chunks
    assert central["embedded_rows"] == chunks
    assert central["superseded_rows"] == 0
    assert central["dimension"] == 384
    assert central["model_id"].startswith("sentence-transformers/all-MiniLM-L6-v2")


def test_graph_stats_and_neighbours(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str]
) -> None:
    stats = _run(["graph", "stats", "--json"], cli_env)
    assert stats.returncode == 0, stats.stderr
    edges = {
        (e["jurisdiction"], e["edge_type"]): e["edges"] for e in json.loads(stats.stdout)["edges"]
    }
    assert edges[("CENTRAL", "HAS_PART")] > 92
    assert edges[("CENTRAL", "REFERENCES")] > 100
    report = json.loads(stats.stdout)
    (central,) = [j for j in report["jurisdictions"] if j["jurisdiction"] == "CENTRAL"]
    assert central["internal_references"] > 200  # the Act's and the FAQ's
    assert central["unresolved_rate"] <= 0.05
    act = {d["document_key"]: d for d in report["documents"]}["rera_act_2016"]
    assert act["internal_references"] >= 90 and act["unresolved_rate"] <= 0.05
    assert len(act["missing_targets"]) <= act["unresolved"]
    near = _run(
        ["graph", "neighbours", "Section 18", "-j", "CENTRAL", "-d", "rera_act_2016", "--json"],
        cli_env,
    )
    assert near.returncode == 0, near.stderr
    rows = json.loads(near.stdout)["edges"]
    assert rows and all(r["edge_type"] in {"REFERENCES", "DERIVED_FROM"} for r in rows)
    missing = _run(["graph", "neighbours", "Section 999", "-j", "CENTRAL"], cli_env)
    assert missing.returncode == 2 and "not found" in missing.stderr


def test_graph_export_writes_a_neo4j_admin_import(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str], tmp_path: Path
) -> None:
    import csv

    target = tmp_path / "import"
    result = _run(["graph", "export", "--out", str(target), "-j", "CENTRAL"], cli_env)
    assert result.returncode == 0, result.stderr
    assert "import.sh" in result.stderr
    with (target / "units.csv").open(newline="") as handle:
        units = list(csv.DictReader(handle))
    assert any(u["label"] == "Section 18" for u in units)
    # each unit's Akoma Ntoso address, as its citations show it (issue 39)
    assert all(u["uri"].startswith("/akn/in") and "/!main~" in u["uri"] for u in units)
    assert any(u["uri"].endswith("/!main~sec_18") for u in units)
    with (target / "edges_unit_unit.csv").open(newline="") as handle:
        edges = list(csv.DictReader(handle))
    ids = {u["chunk_id:ID(Unit)"] for u in units}
    assert edges and all(e[":START_ID(Unit)"] in ids and e[":END_ID(Unit)"] in ids for e in edges)
    assert "neo4j-admin database import full" in (target / "import.sh").read_text()


def test_expected_failures_print_one_line_not_a_traceback(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**cli_env, "CIVICSETU_REGISTRY": str(tmp_path / "missing.yaml")}
    result = _run(["materialize", "-j", "CENTRAL"], env)
    assert result.returncode == 1
    assert "RegistryError" in result.stderr and "missing.yaml" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_the_entry_point_catches_a_failure_only_of_a_loaded_module() -> None:
    """`civicsetu --help` and `ask` do not import the registry, the broker or the migrations
    to catch their errors (the entry point looks each up among the loaded modules: an error of
    a module never imported was never raised); once loaded, each is caught."""
    code = (
        "import sys\n"
        "from civicsetu_pipelines.cli import expected_failures\n"
        "before = sorted(c.__name__ for c in expected_failures())\n"
        "import civicsetu_pipelines.ingest.registry, civicsetu_pipelines.operate.broker\n"
        "import civicsetu_pipelines.store.database\n"
        "after = sorted(c.__name__ for c in expected_failures())\n"
        "print(before, after, 'civicsetu_pipelines.ingest.registry' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    before, after = done.stdout.rsplit(" ", 1)[0].split("] [")
    assert "RegistryError" not in before and "BrokerError" not in before
    assert all(name in after for name in ("RegistryError", "DocumentError", "BrokerError",
                                          "MigrationChecksumError", "StoreNotReady",
                                          "OperationalError"))  # fmt: skip


def test_a_question_before_anything_is_materialized_is_one_clear_line(
    cli_env: dict[str, str], pg_url: str
) -> None:
    """A database never migrated, then migrated but empty: `ask` and `eval` say what to run,
    exit 1, and load no model for nothing."""
    from civicsetu_pipelines.store.database import apply_migrations, ensure_database, with_database

    ensure_database(pg_url, "never_materialized")
    url = with_database(pg_url, "never_materialized")
    env = {**cli_env, "CIVICSETU_DATABASE_URL": url}
    for migrated in (False, True):
        if migrated:
            apply_migrations(url)
        for args in (["ask", "What does Section 18 say?"], ["eval"]):
            result = _run(args, env)
            said = " ".join((result.stdout + result.stderr).split())  # as the terminal wraps
            assert result.returncode == 1, said
            assert "StoreNotReady" in said and "civicsetu materialize" in said, said
            assert "Traceback" not in said and "ONNX" not in said, said


# Libraries a question never needs: each costs a cold process seconds or tens of MiB.
HEAVY_MODULES = (
    "torch", "transformers", "sentence_transformers", "sklearn", "pandas", "matplotlib",
    "dagster", "great_expectations", "pyarrow", "scipy", "ragas", "langchain", "pymupdf",
)  # fmt: skip
_REPORT_MODULES = (
    "import atexit, json, sys\n"
    "def _report():\n"
    "    roots = sorted({m.split('.')[0] for m, mod in sys.modules.items() if mod})\n"
    "    sys.stderr.write('\\nMODULES ' + json.dumps(roots) + '\\n')\n"
    "atexit.register(_report)\n"
    "sys.argv = ['civicsetu'] + sys.argv[1:]\n"
    "from civicsetu_pipelines.cli import main\n"
    "main()\n"
)


def _loaded_modules(args: list[str], env: dict[str, str]) -> tuple[set[str], str]:
    """Run the command in a fresh interpreter; the top-level modules it loaded (a None entry, a
    module kept from loading, is none), and stdout."""
    result = subprocess.run(
        [sys.executable, "-c", _REPORT_MODULES, *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    line = [x for x in result.stderr.splitlines() if x.startswith("MODULES ")][-1]
    return set(json.loads(line.removeprefix("MODULES "))), result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "My builder has delayed possession by two years. Can I get my money back?"],
        ["ask", "What does Section 18 say?", "--json"],
        ["--help"],
        ["db", "status"],
        ["stats", "--json"],
        ["sections", "--document", "rera_act_2016", "--json"],
        ["resolve", "/akn/in/act/2016/16/~sec_18__subsec_1"],
    ],
    ids=["ask", "ask-json", "help", "db-status", "stats", "sections", "resolve"],
)
def test_light_commands_import_no_heavy_library(
    materialized: subprocess.CompletedProcess[str], cli_env: dict[str, str], args: list[str]
) -> None:
    """The question path embeds with onnxruntime: no torch, transformers, sentence-transformers,
    scikit-learn, pandas, matplotlib or dagster in the process (nor for the other light
    commands)."""
    loaded, stdout = _loaded_modules(args, cli_env)
    assert not loaded & set(HEAVY_MODULES), sorted(loaded & set(HEAVY_MODULES))
    if args[0] == "ask":
        assert "onnxruntime" in loaded and "tokenizers" in loaded
        assert "Section 18" in stdout  # answered from the store, not refused
        if "--json" not in args:  # each citation's Akoma Ntoso address under it
            assert "/akn/in/act/2016/16/eng@" in stdout
    if args[0] == "resolve":  # 18(1) is printed in the unit sec_18: its text, verbatim, cited
        assert "printed within sec_18" in stdout and "18. (1) If the promoter fails" in stdout
        assert "/akn/in/act/2016/16/eng@2017-05-01/!main~sec_18" in stdout
