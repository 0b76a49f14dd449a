"""Where the states depart: what each jurisdiction's rules fixed for each matter the Act leaves
to them (per partition), and the divergences over all of them."""

from collections.abc import Iterator
from typing import Any

import dagster as dg

from civicsetu_pipelines.base import SetAside, by_document
from civicsetu_pipelines.defs.assets import EAGER, OWNERS, act_document_key
from civicsetu_pipelines.defs.partitions import jurisdiction_partitions
from civicsetu_pipelines.defs.resources import PostgresResource
from civicsetu_pipelines.graph import prescribed_matters, stored_act_chunks
from civicsetu_pipelines.ingest import load_registry
from civicsetu_pipelines.provisions import (
    divergences,
    load_matter_specs,
    read_provisions,
    replace_divergences,
    replace_provisions,
    stored_provisions,
)
from civicsetu_pipelines.store import record_set_asides


@dg.asset(
    name="prescribed_matters",
    group_name="out",
    automation_condition=EAGER,
    kinds={"postgres"},
    owners=OWNERS,
    deps=["graph_edges"],
)
def prescribed_matters_asset(postgres: PostgresResource) -> dg.MaterializeResult:
    """The matters the Act leaves to rules and regulations, read from its own rule- and
    regulation-making heads (sections 84(2) and 85(2)), with the sections each names."""
    with postgres.connect() as conn:
        matters = prescribed_matters(stored_act_chunks(conn, act_document_key()))
    table = ["| head | instrument | matter | sections |", "|---|---|---|---|"]
    table += [f"| {m.key} | {m.instrument} | {m.name} | {', '.join(m.sections)} |"
              for m in matters]  # fmt: skip
    return dg.MaterializeResult(
        metadata={"matters": len(matters), "heads": dg.MetadataValue.md("\n".join(table))}
    )


@dg.asset(
    partitions_def=jurisdiction_partitions,
    group_name="out",
    automation_condition=EAGER,
    kinds={"postgres"},
    owners=OWNERS,
    deps=["graph_edges"],
)
def state_provisions(
    context: dg.AssetExecutionContext, postgres: PostgresResource
) -> dg.MaterializeResult:
    """For each matter of data/matters.yaml, the rule (or regulation) of this jurisdiction that
    fills it and the value it fixes (read deterministically, with the verbatim sentence, page
    and chunk); the Act's own value, marked so, for a matter its sections fix and no rule does;
    else "not found"; replaced in Postgres (state_provisions) in one transaction."""
    jurisdiction = context.partition_key
    documents = load_registry().documents(jurisdiction)
    drafts = frozenset(s.key for s in documents if "draft" in str(s.status).lower())
    has_rules = any(str(s.doc_type) in {"rules", "regulations"} for s in documents)
    asides: list[SetAside] = []
    with postgres.connect() as conn:
        matters = prescribed_matters(stored_act_chunks(conn, act_document_key()))
        provisions = (
            read_provisions(conn, jurisdiction, load_matter_specs(), matters, drafts, asides)
            if has_rules else []
        )  # fmt: skip
        replace_provisions(conn, jurisdiction, provisions, run_id=context.run.run_id)
        record_set_asides(conn, jurisdiction, "provisions", asides)
    for aside in asides:
        context.log.error(f"{aside.document_key}: its provisions set aside: {aside.reason()}")
    if not has_rules:
        context.log.info(f"{jurisdiction}: no rules or regulations in the registry, so no "
                         "provisions to read")  # fmt: skip
    found = [p for p in provisions if p.status == "found"]
    table = ["| matter | value | rule | page | quote |", "|---|---|---|---|---|"]
    table += [f"| {p.matter} | {p.value or 'not found'} | {p.label or ''} | {p.page or ''} | "
              f"{(p.quote or '')[:160]} |" for p in provisions]  # fmt: skip
    return dg.MaterializeResult(
        metadata={
            "matters": len(provisions),
            "found": len(found),
            "from_the_act": sum(p.status == "act" for p in provisions),
            "documents_set_aside": dg.MetadataValue.json(by_document(asides)),
            "provisions": dg.MetadataValue.md("\n".join(table)),
        }  # fmt: skip
    )


@dg.asset(
    group_name="out",
    automation_condition=EAGER,
    kinds={"postgres"},
    owners=OWNERS,
    deps=["state_provisions"],
)
def state_divergences(postgres: PostgresResource) -> Iterator[dg.MaterializeResult]:
    """Per matter, every jurisdiction's value side by side, and the flags a person should read
    (a state that departs from the others, a rate left to the contract, a matter unfilled, a
    draft rule), each with the quotes it rests on; replaced in Postgres (state_divergences)."""
    with postgres.connect() as conn:
        provisions = stored_provisions(conn)
        matters = prescribed_matters(stored_act_chunks(conn, act_document_key()))
        specs = load_matter_specs()
        flags = divergences(provisions, specs, matters)
        replace_divergences(conn, flags)
    yield dg.MaterializeResult(
        metadata={"flags": len(flags), "matrix": dg.MetadataValue.md(_matrix(provisions, specs))}
    )


def _matrix(provisions: Any, specs: Any) -> str:
    """The state × matter matrix (each cell the value, or "—")."""
    states = sorted({p.jurisdiction for p in provisions})
    cells = {(p.jurisdiction, p.matter): p.value or "—" for p in provisions}
    lines = ["| matter | " + " | ".join(states) + " |", "|---|" + "---|" * len(states)]
    for spec in specs:
        lines.append(f"| {spec.name} | " + " | ".join(cells.get((s, spec.key), "—")
                                                      for s in states) + " |")  # fmt: skip
    return "\n".join(lines)
