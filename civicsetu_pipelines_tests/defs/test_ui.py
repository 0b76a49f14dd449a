"""The Dagster UI: the real webserver, on loopback, over the project's Postgres instance.

One ``dagster-webserver`` is started for this module on a fresh database and a temporary state
directory (nothing materialized: the definitions must load without data). Through its GraphQL API
the code location, every asset, asset check, job, schedule and sensor must load without errors and
match ``build_definitions()`` exactly, and every asset must read as documentation (description,
group, kind, owner). Headless Chromium then loads the asset catalog and the asset graph pages and
must find the asset names in the rendered DOM.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from civicsetu_pipelines.base.settings import (
    ENV_DATABASE_URL,
    ENV_ENABLE_SEED_STATES,
    ENV_MIRROR_DIRS,
    ENV_OFFLINE,
    ENV_STATE_DIR,
    REPO_ROOT,
    Settings,
)
from civicsetu_pipelines.evaluate.render_check import dump_dom
from civicsetu_pipelines.operate.instance import (
    ENV_DAGSTER_ARTIFACTS,
    ENV_DAGSTER_HOME,
    ENV_DAGSTER_PG_URL,
    prepare_dagster_home,
)
from civicsetu_pipelines_tests.conftest import Processes

LOCATION = "civicsetu_pipelines"  # workspace.yaml's location_name
GROUPS = ("raw", "core", "out", "evaluation")
STARTUP_TIMEOUT_S = 120.0
CHROMIUM_TIMEOUT_S = 60.0
# Asset names the brief requires to be visible in the UI (a subset of the real definitions).
SHOWN_ASSETS = (
    "raw_pdfs",
    "parsed_pages",
    "section_chunks",
    "legal_chunks",
    "graph_edges",
    "eval_report",
)


@dataclass(frozen=True)
class Webserver:
    base_url: str
    env: dict[str, str]  # the project's variables given to the webserver (and to the expectations)
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n".join(text.splitlines()[-lines:])

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """``data`` of a GraphQL query; fails the test on a transport or GraphQL error."""
        response = httpx.post(
            f"{self.base_url}/graphql",
            json={"query": query, "variables": variables or {}},
            timeout=60,
        )
        assert response.status_code == 200, f"/graphql HTTP {response.status_code}: {response.text}"
        body = response.json()
        assert not body.get("errors"), f"GraphQL errors: {body['errors']}"
        return body["data"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the webserver's process group (it and its code server), SIGKILL if it lingers."""
    for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


LOCATION_STATUS = """
query {
  locationStatusesOrError {
    __typename
    ... on WorkspaceLocationStatusEntries { entries { name loadStatus } }
    ... on PythonError { message }
  }
}
"""


def _wait_until_loaded(server: Webserver, process: subprocess.Popen[bytes]) -> None:
    """Poll ``/server_info``, then the location status until nothing is LOADING."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    last = "no answer yet"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"dagster-webserver exited with status {process.returncode} before it was up; "
                f"log tail:\n{server.log_tail()}"
            )
        try:
            info = httpx.get(f"{server.base_url}/server_info", timeout=5)
            if info.status_code == 200:
                status = server.graphql(LOCATION_STATUS)["locationStatusesOrError"]
                entries = status.get("entries") or []
                if entries and all(e["loadStatus"] != "LOADING" for e in entries):
                    return
                last = f"location status {status}"
            else:
                last = f"/server_info HTTP {info.status_code}"
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    pytest.fail(
        f"dagster-webserver not ready within {STARTUP_TIMEOUT_S:g} s ({last}); "
        f"log tail:\n{server.log_tail()}"
    )


@pytest.fixture(scope="module")
def webserver(
    pg_url: str, tmp_path_factory: pytest.TempPathFactory, processes: Processes
) -> Iterator[Webserver]:
    """``dagster-webserver`` on 127.0.0.1, a free port, a fresh database and state dir."""
    from psycopg import sql

    from civicsetu_pipelines.store.database import connect, ensure_database, with_database

    root = tmp_path_factory.mktemp("ui")
    state = root / "state"
    mirror = root / "mirror"  # empty: nothing to ingest, the definitions must load regardless
    mirror.mkdir()
    name = f"ui_{uuid.uuid4().hex[:12]}"
    ensure_database(pg_url, name)
    env = {
        ENV_STATE_DIR: str(state),
        ENV_DATABASE_URL: with_database(pg_url, name),
        ENV_MIRROR_DIRS: str(mirror),
        ENV_OFFLINE: "1",
        ENV_ENABLE_SEED_STATES: "0",
    }
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        # prepare_dagster_home writes these three into os.environ; setting them here first makes
        # the context restore (or remove) them on exit.
        for key in (ENV_DAGSTER_HOME, ENV_DAGSTER_PG_URL, ENV_DAGSTER_ARTIFACTS):
            patch.setenv(key, "")
        home = prepare_dagster_home(Settings.from_env())
        for key in (ENV_DAGSTER_HOME, ENV_DAGSTER_PG_URL, ENV_DAGSTER_ARTIFACTS):
            env[key] = os.environ[key]
    assert env[ENV_DAGSTER_HOME] == str(home)

    port = _free_port()
    server = Webserver(f"http://127.0.0.1:{port}", env, root / "webserver.log")
    binary = REPO_ROOT / ".venv" / "bin" / "dagster-webserver"
    command = [str(binary), "-h", "127.0.0.1", "-p", str(port),
               "-w", str(REPO_ROOT / "workspace.yaml")]  # fmt: skip
    with server.log.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=home,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, with the code server it spawns
        )
    try:
        _wait_until_loaded(server, process)
        yield server
    finally:
        _stop(process)
        with connect(pg_url, autocommit=True) as conn:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(drop.format(sql.Identifier(name)))


@dataclass(frozen=True)
class Expected:
    assets: set[str]
    checks: set[tuple[str, str]]
    jobs: set[str]
    schedules: set[str]
    sensors: set[str]
    groups: dict[str, set[str]]  # group name -> asset names


@pytest.fixture(scope="module")
def expected(webserver: Webserver) -> Expected:
    """The real definitions, built in this process with the webserver's environment.

    From the repository definition, so the names Dagster adds itself (the implicit
    ``__ASSET_JOB``, ``default_automation_condition_sensor``) are counted on both sides.
    """
    with pytest.MonkeyPatch.context() as patch:
        for key, value in webserver.env.items():
            patch.setenv(key, value)
        from civicsetu_pipelines.defs import build_definitions

        repo = build_definitions().get_repository_def()
    graph = repo.asset_graph
    groups: dict[str, set[str]] = {}
    for asset_key in graph.get_all_asset_keys():
        group = graph.get(asset_key).group_name
        groups.setdefault(group, set()).add(asset_key.to_user_string())
    return Expected(
        assets={k.to_user_string() for k in graph.get_all_asset_keys()},
        checks={(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys},
        jobs=set(repo.job_names),
        schedules={s.name for s in repo.schedule_defs},
        sensors={s.name for s in repo.sensor_defs},
        groups=groups,
    )


# -- GraphQL ---------------------------------------------------------------------------------------

# Field names checked against dagster-graphql 1.13.27's schema (``__type`` on the live server).
WORKSPACE = """
query {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { name }
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message stack }
  }
}
"""

REPOSITORIES = """
query {
  repositoriesOrError {
    __typename
    ... on RepositoryConnection {
      nodes {
        name
        location { name }
        assetNodes {
          assetKey { path }
          groupName
          description
          kinds
          owners {
            __typename
            ... on TeamAssetOwner { team }
            ... on UserAssetOwner { email }
          }
          assetChecksOrError {
            __typename
            ... on AssetChecks { checks { name } }
            ... on AssetCheckNeedsMigrationError { message }
            ... on AssetCheckNeedsUserCodeUpgrade { message }
            ... on AssetCheckNeedsAgentUpgradeError { message }
          }
        }
        jobs { name }
        schedules { name }
        sensors { name }
      }
    }
    ... on PythonError { message stack }
  }
}
"""


def _repository(server: Webserver) -> dict[str, Any]:
    result = server.graphql(REPOSITORIES)["repositoriesOrError"]
    assert result["__typename"] == "RepositoryConnection", result
    nodes = [n for n in result["nodes"] if n["location"]["name"] == LOCATION]
    assert len(nodes) == 1, f"expected one repository in {LOCATION}: {result['nodes']}"
    return nodes[0]


def test_code_location_loads(webserver: Webserver) -> None:
    workspace = webserver.graphql(WORKSPACE)["workspaceOrError"]
    assert workspace["__typename"] == "Workspace", workspace
    entries = {e["name"]: e for e in workspace["locationEntries"]}
    assert set(entries) == {LOCATION}
    entry = entries[LOCATION]
    assert entry["loadStatus"] == "LOADED"
    location = entry["locationOrLoadError"]
    assert location["__typename"] == "RepositoryLocation", location
    statuses = webserver.graphql(LOCATION_STATUS)["locationStatusesOrError"]
    assert statuses["__typename"] == "WorkspaceLocationStatusEntries", statuses
    assert statuses["entries"] == [{"name": LOCATION, "loadStatus": "LOADED"}]


def test_graphql_lists_exactly_the_definitions(webserver: Webserver, expected: Expected) -> None:
    repo = _repository(webserver)
    nodes = repo["assetNodes"]
    assets = ["/".join(n["assetKey"]["path"]) for n in nodes]
    assert len(assets) == len(set(assets)), f"duplicate asset nodes: {sorted(assets)}"
    assert set(assets) == expected.assets
    checks: set[tuple[str, str]] = set()
    for node in nodes:
        result = node["assetChecksOrError"]
        assert result["__typename"] == "AssetChecks", (node["assetKey"], result)
        checks |= {("/".join(node["assetKey"]["path"]), c["name"]) for c in result["checks"]}
    assert checks == expected.checks
    assert {j["name"] for j in repo["jobs"]} == expected.jobs
    assert {s["name"] for s in repo["schedules"]} == expected.schedules
    assert {s["name"] for s in repo["sensors"]} == expected.sensors
    # What the product promises, so that an empty expectation cannot pass the equalities above.
    assert set(SHOWN_ASSETS) <= expected.assets
    assert {"ingest_job", "answers_job", "evaluation_job"} <= expected.jobs
    assert any(name.startswith("reingest_") for name in expected.schedules)
    assert "gazette_change_sensor" in expected.sensors


def test_every_asset_reads_as_documentation(webserver: Webserver) -> None:
    """Description, a known group, at least one kind and an owner on every asset node."""
    problems: list[str] = []
    for node in _repository(webserver)["assetNodes"]:
        name = "/".join(node["assetKey"]["path"])
        if not (node["description"] or "").strip():
            problems.append(f"{name}: no description")
        if node["groupName"] not in GROUPS:
            problems.append(f"{name}: group {node['groupName']!r} not in {GROUPS}")
        if not node["kinds"]:
            problems.append(f"{name}: no kinds")
        owners = [o.get("team") or o.get("email") for o in node["owners"]]
        if not any(owners):
            problems.append(f"{name}: no owner ({node['owners']})")
    listing = "\n".join(problems)
    assert not problems, f"assets that do not document themselves in the UI:\n{listing}"


def test_every_job_schedule_and_sensor_resolves(webserver: Webserver, expected: Expected) -> None:
    """Each job, schedule and sensor fetched on its own resolves (no *NotFound or PythonError)."""
    repository = {
        "repositoryName": _repository(webserver)["name"],
        "repositoryLocationName": LOCATION,
    }
    parts: list[str] = []
    variables: dict[str, Any] = {}
    declared: list[str] = []
    items = [("pipelineOrError", "params", "PipelineSelector", "Pipeline", "pipelineName", n)
             for n in sorted(expected.jobs)]  # fmt: skip
    items += [("scheduleOrError", "scheduleSelector", "ScheduleSelector", "Schedule",
               "scheduleName", n) for n in sorted(expected.schedules)]  # fmt: skip
    items += [("sensorOrError", "sensorSelector", "SensorSelector", "Sensor", "sensorName", n)
              for n in sorted(expected.sensors)]  # fmt: skip
    wanted: dict[str, tuple[str, str]] = {}
    for i, (field, arg, input_type, typename, key, name) in enumerate(items):
        alias = f"item{i}"
        declared.append(f"${alias}: {input_type}!")
        variables[alias] = {**repository, key: name}
        parts.append(
            f"{alias}: {field}({arg}: ${alias}) {{ __typename ... on {typename} {{ name }} "
            "... on PythonError { message } }"
        )
        wanted[alias] = (typename, name)
    data = webserver.graphql(f"query({', '.join(declared)}) {{ {' '.join(parts)} }}", variables)
    failed = {
        wanted[alias][1]: value
        for alias, value in data.items()
        if value["__typename"] != wanted[alias][0] or value.get("name") != wanted[alias][1]
    }
    assert not failed, f"definitions that did not resolve: {failed}"


# -- Headless Chromium -----------------------------------------------------------------------------


def _chromium() -> str:
    """The Chromium binary; a missing one fails the test on CI and skips it elsewhere."""
    path = shutil.which("chromium")
    if path is None:
        message = "chromium is not installed (Debian: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and {message}: the UI must be checked in a browser on CI")
        pytest.skip(message)
    return path


class _TextReader(HTMLParser):
    """The visible text nodes of a DOM (not scripts or styles), stripped."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: set[str] = set()
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.texts.add(data.strip())


def _dump_dom(url: str) -> set[str]:
    """Load ``url`` in headless Chromium; the text nodes of the rendered DOM.

    A tall window so the virtualized asset list renders every row; a virtual time budget so the
    page's GraphQL queries finish before the DOM is dumped.
    """
    binary = _chromium()
    extra = ["--window-size=1600,4000", "--virtual-time-budget=20000"]
    dumped = dump_dom(binary, url, extra, CHROMIUM_TIMEOUT_S)
    if dumped is None:
        pytest.fail(f"chromium did not dump {url} within {CHROMIUM_TIMEOUT_S:g} s")
    returncode, stdout, stderr = dumped
    log = stderr.decode("utf-8", errors="replace").strip().splitlines()
    assert returncode == 0, f"chromium exited {returncode}: {log[-5:]}"
    dom = stdout.decode("utf-8", errors="replace")
    assert dom.strip(), f"chromium dumped no DOM for {url}: {log[-5:]}"
    reader = _TextReader()
    reader.feed(dom)
    reader.close()
    return reader.texts


def test_asset_catalog_page_shows_the_assets(webserver: Webserver, expected: Expected) -> None:
    """``/assets`` (the catalog) lists every asset by name once the page has rendered."""
    texts = _dump_dom(f"{webserver.base_url}/assets")
    missing = sorted(name for name in expected.assets | set(SHOWN_ASSETS) if name not in texts)
    assert not missing, f"/assets rendered without {missing}"


@pytest.mark.parametrize("group", GROUPS)
def test_asset_graph_page_shows_the_group(
    webserver: Webserver, expected: Expected, group: str
) -> None:
    """The asset graph (lineage) of each group draws a node for each of its assets.

    Per group: the global lineage page (``/asset-groups``) starts with every group collapsed, so
    its DOM holds group names only.
    """
    names = expected.groups.get(group)
    assert names, f"no assets in group {group!r}: {expected.groups}"
    texts = _dump_dom(f"{webserver.base_url}/locations/{LOCATION}/asset-groups/{group}")
    missing = sorted(name for name in names if name not in texts)
    assert not missing, f"the {group} asset graph rendered without {missing}"
