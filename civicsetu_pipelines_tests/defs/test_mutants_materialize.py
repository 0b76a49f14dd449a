"""A sample of the mutation corpus (``civicsetu_pipelines_tests/mutants.py``) registered as one
jurisdiction's documents and materialized together (issue 35): the partition's run succeeds;
each mutant is loaded, or failed or set aside with a reason naming it; the damaged files a user
could not have added (written past ``documents add``, as a file damaged after it was added) fail
their own rows only; an amending G.O. with no numbered paragraph applies to the rules it names;
every mutant that loaded is exported as schema-valid Akoma Ntoso with its texts verbatim, and
none that failed is.
"""

from __future__ import annotations

from pathlib import Path

from civicsetu_pipelines.store import read_stats
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.conftest import STORE_ASSETS, StoreEnv
from civicsetu_pipelines_tests.mutants import (
    Sources,
    amend_unnumbered,
    corrupt_stream,
    encrypted_empty_password,
    png_renamed,
    register_mutants,
    rotated,
    seam_doubled,
    truncated,
)

J = "GUJARAT"  # a partition of the shipped registry (partitions are fixed at import)
SAMPLE = (truncated, corrupt_stream, rotated, seam_doubled, encrypted_empty_password,
          png_renamed, amend_unnumbered)  # fmt: skip


def test_a_sample_of_mutants_materialized_together(store_env: StoreEnv, corpus_dir: Path) -> None:
    sources = Sources.from_corpus(corpus_dir)
    out = store_env.mirror.parent / "mutants"
    out.mkdir(parents=True)
    mutants = [make(out, sources) for make in SAMPLE]
    store_env.write_registry([])  # the jurisdiction's documents are the mutants alone
    registered = register_mutants(mutants, jurisdiction=J, state_dir=store_env.state_dir,
                                  force_refused=True)  # fmt: skip
    refused = {r.key: r.refusal for r in registered if r.refusal}
    assert set(refused) == {"mutant_truncated", "mutant_png_renamed"}, refused
    assert all(line and "\n" not in line for line in refused.values()), refused

    result = store_env.run_assets(
        J, (*STORE_ASSETS, "document_catalog", "graph_edges", "akn_documents")
    )
    assert result.success  # never a failed partition

    with connect(store_env.database_url) as conn:
        stats = {r["key"]: r for r in read_stats(conn) if r["jurisdiction"] == J}
        served = dict(
            conn.execute(
                "SELECT document_key, count(*) FROM legal_chunks WHERE jurisdiction = %s AND "
                "status = 'current' GROUP BY 1",
                (J,),
            ).fetchall()
        )
    keys = {r.key for r in registered}
    assert keys <= set(stats), sorted(set(keys) - set(stats))
    for key in keys:
        row = stats[key]
        if row["ingest_status"] == "ok":
            assert served.get(key, 0) > 0, key
        else:  # failed or set aside: named, with why
            assert row["error"] and key in row["error"], row
    # the files damaged past `add` fail their own rows, naming the file and the damage
    assert stats["mutant_truncated"]["ingest_status"] == "failed"
    assert "damaged (truncated or corrupt)" in stats["mutant_truncated"]["error"]
    assert "is not a PDF (it is a PNG image)" in stats["mutant_png_renamed"]["error"]
    # a doubled-glyph copy and an empty-password copy load whole
    for key in ("mutant_seam_doubled", "mutant_encrypted_empty_password", "mutant_rotated"):
        assert stats[key]["ingest_status"] == "ok" and served.get(key, 0) > 0, stats[key]
    checks = store_env.checks(result)
    applied = checks[("section_chunks", "amendments_applied")]
    problems = " ".join(applied.metadata["problems"].value)
    # the unnumbered instruction was read (its own words named) and, the rules it amends having
    # no rule 18, changes nothing: never a crash of the partition
    assert problems == (
        "mutant_amend_unnumbered: substitute_words of Rule 18(2): no such unit in force on "
        '2024-03-01 ("In sub-rule (2) of rule 18, for the word "three" the word "five" shall be '
        'substituted.")'
    ), problems
    # Akoma Ntoso: each loaded mutant's expressions exported, valid and verbatim (the blocking
    # checks passed); nothing of a failed one
    assert checks[("akn_documents", "akn_schema_valid")].passed
    assert checks[("akn_documents", "akn_texts_verbatim")].passed
    (akn,) = [m for m in result.get_asset_materialization_events()
              if m.asset_key.to_user_string() == "akn_documents"]  # fmt: skip
    exported = {e["expression"] for e in akn.materialization.metadata["expressions"].value}
    loaded = {k for k, row in stats.items() if row["ingest_status"] == "ok"}  # and the rules
    assert {k for k in keys if stats[k]["ingest_status"] == "ok"} < loaded  # the G.O. amends
    assert loaded and akn.materialization.metadata["documents"].value == len(loaded), exported
    assert akn.materialization.metadata["files"].value >= len(loaded)
