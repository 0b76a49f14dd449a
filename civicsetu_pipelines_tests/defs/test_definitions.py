"""All Dagster definitions load, with the assets, checks and job the product promises."""

from __future__ import annotations

import dagster as dg
import pytest

from civicsetu_pipelines.definitions import defs
from civicsetu_pipelines.defs.partitions import add_jurisdiction_partitions
from civicsetu_pipelines.ingest.registry import load_registry


def test_definitions_load() -> None:
    repo = defs.get_repository_def()
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert {"raw_pdfs", "parsed_pages", "section_chunks", "document_structure",
            "document_catalog"} <= keys  # fmt: skip
    checks = {(k.asset_key.to_user_string(), k.name) for k in repo.asset_graph.asset_check_keys}
    for expected in [
        ("raw_pdfs", "all_documents_fetched"),
        ("parsed_pages", "all_documents_parsed"),
        ("section_chunks", "unique_ids"),
        ("section_chunks", "label_format"),
        ("section_chunks", "non_empty_text"),
        ("section_chunks", "no_year_as_number"),
        ("document_structure", "coverage"),
        ("document_structure", "sections_contiguous"),
    ]:
        assert expected in checks
    job = defs.resolve_job_def("ingest_job")
    assert job.partitions_def is not None


def test_partitions_are_the_registry_jurisdictions_added_to_the_instance() -> None:
    """Dynamic partitions: the jurisdictions are data, added to an instance from the registry
    (a new one needs no code reload); adding again adds nothing."""
    job = defs.resolve_job_def("ingest_job")
    assert isinstance(job.partitions_def, dg.DynamicPartitionsDefinition)
    with dg.DagsterInstance.ephemeral() as instance:
        assert job.partitions_def.get_partition_keys(dynamic_partitions_store=instance) == []
        added = add_jurisdiction_partitions(instance)
        assert added == load_registry().jurisdictions()
        assert {"CENTRAL", "GUJARAT", "CHANDIGARH", "KARNATAKA"} <= set(added)
        assert add_jurisdiction_partitions(instance) == []
        assert add_jurisdiction_partitions(instance, ["MIZORAM"]) == ["MIZORAM"]
        keys = job.partitions_def.get_partition_keys(dynamic_partitions_store=instance)
        assert keys == [*added, "MIZORAM"]


def test_ingest_job_ingests_and_the_evaluation_runs_after_the_partitions() -> None:
    """A jurisdiction's golden questions are not scored while partitions load (issue 40):
    golden_eval_scores stays a partitioned asset (the UI, automation) outside ingest_job, and
    the evaluation job scores every question once after the partitions."""
    ingest = {node.name for node in defs.resolve_job_def("ingest_job").graph.node_defs}
    assert {"chunk_embeddings", "legal_chunks", "graph_edges", "akn_documents"} <= ingest
    assert "golden_eval_scores" not in ingest
    assert "golden_eval_all" in {
        node.name for node in defs.resolve_job_def("evaluation_job").graph.node_defs
    }
    graph = defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey("golden_eval_scores")).partitions_def is not None


def test_blocking_checks_guard_chunks() -> None:
    repo = defs.get_repository_def()
    specs = {
        spec.key.name: spec
        for node in repo.assets_defs_by_key.values()
        for spec in node.check_specs
        if spec.asset_key == dg.AssetKey("section_chunks")
    }
    assert specs["unique_ids"].blocking
    assert specs["label_format"].blocking
    assert specs["non_empty_text"].blocking
    # the AKN export: every file valid against the AKN 3.0 schema, every unit's text verbatim
    akn = {
        spec.key.name: spec
        for node in repo.assets_defs_by_key.values()
        for spec in node.check_specs
        if spec.asset_key == dg.AssetKey("akn_documents")
    }
    assert akn["akn_schema_valid"].blocking and akn["akn_texts_verbatim"].blocking


def test_neo4j_is_left_out_of_the_job_and_says_why_when_not_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from civicsetu_pipelines.defs import build_definitions

    monkeypatch.delenv("NEO4J_URI", raising=False)
    built = build_definitions()
    job = built.resolve_job_def("ingest_job")
    names = {node.name for node in job.graph.node_defs}
    assert "graph_edges" in names and "served_documents" in names
    # an export of the whole jurisdiction is no part of a run that costs what changed
    assert "graph_export" not in names
    assert "graph_export" in {key.to_user_string() for key in built.resolve_all_asset_keys()}
    assert "neo4j_graph" not in names
    assert "NEO4J_URI is not set" in (job.description or "")
    graph = built.get_repository_def().asset_graph
    description = graph.get(dg.AssetKey("neo4j_graph")).description or ""
    assert "NEO4J_URI" in description  # the UI says how to enable it

    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:7687")
    job = build_definitions().resolve_job_def("ingest_job")
    assert "neo4j_graph" in {node.name for node in job.graph.node_defs}


def test_materializing_neo4j_graph_without_a_server_fails_clearly() -> None:
    from civicsetu_pipelines.defs.resources import Neo4jResource

    unconfigured = Neo4jResource(uri="").driver()
    with pytest.raises(dg.Failure, match="No Neo4j server is configured: set NEO4J_URI"):
        unconfigured.__enter__()


def test_readme_asset_graph_is_the_definitions_graph() -> None:
    """The README's diagram is the one drawn from the definitions (regenerate it with
    ``python -m civicsetu_pipelines.defs.diagram`` when assets change)."""
    from civicsetu_pipelines.base.settings import REPO_ROOT
    from civicsetu_pipelines.defs.diagram import asset_graph_mermaid

    readme = (REPO_ROOT / "README.md").read_text()
    drawn = asset_graph_mermaid(defs)
    assert "```mermaid\n" + drawn + "```" in readme
    assert drawn.count(" --> ") == sum(
        len(defs.resolve_asset_graph().get(k).parent_keys)
        for k in defs.resolve_asset_graph().get_all_asset_keys()
    )


def test_no_module_of_the_package_imports_itself_back() -> None:
    """The house has no import circles: no module reaches itself through the modules it imports
    (top-level and function-local imports alike), as import-linter's graph (grimp) sees them."""
    import grimp

    graph = grimp.build_graph("civicsetu_pipelines", cache_dir=None)
    circles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                circles.append(f"{module} -> {imported} -> ... -> {module}")
    assert circles == []
