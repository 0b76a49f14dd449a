"""The legal graph of every default jurisdiction, from the parse cache: no database, no model.

Usage: .venv/bin/python bench/bench_graph.py [--titles-eval | --matters-eval] [--no-curated] [-v]
       .venv/bin/python bench/bench_graph.py --unseen PDF J KIND "TITLE" [-v]

Every default-registry document is parsed (through the parse cache of the environment:
``CIVICSETU_PARSE_CACHE``, else ``.civicsetu/storage/parse_cache``; scanned pages are OCR'd once)
and chunked as the pipeline does, then each jurisdiction's edges are built with the Act beside it,
as ``graph_edges`` builds them. Printed per jurisdiction: internal references and how many do not
resolve (the rate ``civicsetu graph stats`` shows), EXTERNAL_REFERENCE edges read from context,
and per rules document the substantive rules DERIVED_FROM an Act section (of them, how many by
the rule's title). ``-v`` lists every unresolved reference and every title derivation.

``--titles-eval``: derivations by title alone (the curated table left out) against the curated
table's labels, split into dev (Gujarat's documents, where the constants of
``graph.references.TITLE_*`` were chosen) and test (the others): derived and right, derived and
wrong, and left underived.

``--unseen PDF J KIND TITLE``: one more document, of a jurisdiction the registry does not hold
(a state the code never saw: no curated entry, no table written for it), parsed and chunked as
``documents add`` registers it (English, its pages whole) and graphed beside the Act alone.

``--matters-eval``: derivations by the Act's rule-making heads alone (``graph.matters``) for every
substantive rule, against the sections the rule's own derivation phrase ("under section N") or
the curated table name: dev (Gujarat's documents, where ``MATTER_*`` were chosen) and test (the
others): right (same top-level section), wrong, underived; and rules with no such label that a
head derives (listed with ``-v``, for a person to read).
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from civicsetu_pipelines.base import DEFAULT_MIRROR, Settings, sha256_file
from civicsetu_pipelines.graph import (
    ActTitles,
    MatterIndex,
    UnitIndex,
    build_edges,
    derivation,
    is_framing_rule,
    prescribed_matters,
)
from civicsetu_pipelines.ingest import (
    DocumentSpec,
    chunk_rows,
    load_curated_derivations,
    load_registry,
    page_records,
    parse_rows_cached,
)


def _chunks(extra: Sequence[tuple[DocumentSpec, Path]] = ()) -> dict[str, list[dict[str, Any]]]:
    registry = load_registry(include_seed=False)
    cache = Settings.from_env().parse_cache
    out = {}
    specs = [(s, DEFAULT_MIRROR / str(s.filename)) for s in registry.documents()] + list(extra)
    for spec, path in specs:
        rows, _ = parse_rows_cached(spec, path, sha256_file(path), cache)
        out[spec.key] = chunk_rows(spec, page_records(rows))[0]
    return out


def _unseen(path: Path, jurisdiction: str, kind: str, title: str) -> DocumentSpec:
    return DocumentSpec(key="unseen", title=title, jurisdiction=jurisdiction, doc_type=kind,
                        effective_date="2021-01-01", source_url=path.resolve().as_uri(),
                        filename=path.name)  # fmt: skip


def _by_title(edge: Any) -> bool:
    return bool(edge.edge_type == "DERIVED_FROM" and edge.note and "the title of" in edge.note)


def _by_matter(edge: Any) -> bool:
    return bool(edge.edge_type == "DERIVED_FROM" and edge.note and "-making head" in edge.note)


def _index(chunks: list[dict[str, Any]]) -> UnitIndex:
    return UnitIndex.from_chunks((c["label"], c["chunk_id"]) for c in chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--titles-eval", action="store_true")
    parser.add_argument("--matters-eval", action="store_true")
    parser.add_argument(
        "--no-curated",
        action="store_true",
        help="leave the curated table out (as for a state it has no entry for)",
    )
    parser.add_argument("--unseen", nargs=4, metavar=("PDF", "J", "KIND", "TITLE"))
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    registry = load_registry(include_seed=False)
    unseen = _unseen(Path(args.unseen[0]), *args.unseen[1:]) if args.unseen else None
    docs = _chunks([(unseen, Path(args.unseen[0]))] if unseen else [])
    act_key = next(s.key for s in registry.documents() if str(s.doc_type) == "act")
    doc_types = {s.key: str(s.doc_type) for s in registry.documents()}
    if unseen is not None:
        doc_types[unseen.key] = str(unseen.doc_type)
    titles = ActTitles.from_units((c["section_label"], c["title"], c["chapter"])
                                  for c in docs[act_key])  # fmt: skip
    matters = MatterIndex.build(
        prescribed_matters(docs[act_key]),
        {c["section_label"]: c["title"] or "" for c in docs[act_key] if c["unit"] == "section"},
    )
    if args.titles_eval:
        _titles_eval(docs, act_key, doc_types, titles)
        return
    if args.matters_eval:
        _matters_eval(docs, registry, matters, args.verbose)
        return
    groups = {j: [s.key for s in registry.documents(j)] for j in registry.jurisdictions()}
    if unseen is not None:
        groups = {unseen.jurisdiction: [unseen.key]}
    for jurisdiction, keys in groups.items():
        indexes = {k: _index(docs[k]) for k in keys}
        indexes.setdefault(act_key, _index(docs[act_key]))
        build = build_edges([c for k in keys for c in docs[k]], doc_types=doc_types,
                            act_key=act_key, indexes=indexes,
                            curated=() if args.no_curated else load_curated_derivations(),
                            act_titles=titles,
                            matters=matters)  # fmt: skip
        internal = sum(build.internal.values())
        context = sum(1 for e in build.edges if e.basis == "context")
        by_title = Counter(e.source_document for e in build.edges if _by_title(e))
        by_matter = Counter(e.source_document for e in build.edges if _by_matter(e))
        missing = len(build.unresolved)
        rate = missing / max(internal, 1)
        print(f"{jurisdiction}: unresolved {missing}/{internal} = {rate:.3f}, "
              f"external from context {context}")  # fmt: skip
        for key, cover in build.derivation_coverage().items():
            derived = round(cover["substantive_share"] * cover["substantive_rules"])
            print(f"    {key}: {derived}/{cover['substantive_rules']} substantive rules derived "
                  f"({by_matter[key]} edges by a rule-making head, {by_title[key]} by a section "
                  "title)")  # fmt: skip
        if args.verbose:
            for item in build.unresolved:
                print(f"    unresolved {item['document']} {item['label']}: {item['reference']}")
            for e in build.edges:
                if _by_title(e) or _by_matter(e):
                    print(f"    title {e.source_label} -> {e.target_label}: {e.evidence_phrase}"
                          f" ({e.note})")  # fmt: skip


def _titles_eval(
    docs: dict[str, list[dict[str, Any]]],
    act_key: str,
    doc_types: dict[str, str],
    titles: ActTitles,
) -> None:
    tally: dict[str, Counter[str]] = {"dev": Counter(), "test": Counter()}
    for entry in load_curated_derivations():
        half = "dev" if entry.document.startswith("gujarat") else "test"
        heads = [c for c in docs[entry.document] if c["section_label"] == entry.rule]
        found = titles.derive(heads[0]["title"]) if heads else None
        wanted = {s.split("(")[0] for s in entry.sections}
        outcome = "underived" if found is None else "right" if found[0] in wanted else "wrong"
        tally[half][outcome] += 1
        print(f"  {half} {outcome:9s} {entry.document} {entry.rule}: {heads[0]['title']!r} "
              f"-> {found[0] if found else '-'} (curated: {sorted(wanted)})")  # fmt: skip
    for half, counts in tally.items():
        print(f"{half}: {counts['right']} right, {counts['wrong']} wrong, "
              f"{counts['underived']} underived of {sum(counts.values())}")  # fmt: skip


def _matters_eval(
    docs: dict[str, list[dict[str, Any]]], registry: Any, matters: MatterIndex, verbose: bool
) -> None:
    curated = {(c.document, c.rule): c.sections for c in load_curated_derivations()}
    tally: dict[str, Counter[str]] = {"dev": Counter(), "test": Counter()}
    for spec in registry.documents():
        if str(spec.doc_type) != "rules":
            continue
        half = "dev" if spec.key.startswith("gujarat") else "test"
        heads: dict[str, dict[str, Any]] = {}
        for c in sorted(docs[spec.key], key=lambda c: int(c["ordinal"])):
            if c["unit"] == "rule":
                heads.setdefault(c["section_label"], c)
        for rule, head in heads.items():
            title = head["title"] or ""
            if is_framing_rule(title):
                continue
            own = derivation(head["text"], title)
            wanted = (
                [str(r.label) for r in own.references] if own and own.basis == "phrase"
                else list(curated.get((spec.key, rule), []))
            )  # fmt: skip
            found = matters.match(title)
            got = sorted({s for m in found[0] for s in m.sections}) if found else []
            if not wanted:
                outcome = "no label, derived" if found else "no label, underived"
            elif not found:
                outcome = "underived"
            else:
                top = {w.split("(")[0] for w in wanted}
                outcome = "right" if {g.split("(")[0] for g in got} & top else "wrong"
            tally[half][outcome] += 1
            if verbose or outcome == "wrong":
                print(f"  {half} {outcome:19s} {spec.key} {rule}: {title[:70]!r} -> {got} "
                      f"(labels: {wanted})")  # fmt: skip
    for half, counts in tally.items():
        print(f"{half}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
