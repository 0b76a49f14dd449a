"""Data-quality rules, declared once per table and validated with Great Expectations.

Each :class:`TableSchema` lists column rules; :func:`validate` turns them into a GX expectation
suite, runs it on a pandas DataFrame with an ephemeral (offline) context and returns one
:class:`RuleResult` per rule. The Dagster asset checks are generated from these same schemas.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import pandas as pd

from civicsetu_pipelines.ingest.kinds import load_kinds
from civicsetu_pipelines.ingest.unit_parts import PARAGRAPH_PATTERN, PART_PATTERN

# The numbered units' words come from the kinds (data/kinds.yaml): a kind added there labels
# its units "<Unit> N" and they pass, with no change here.
_UNIT_WORDS = "|".join(sorted({kind.unit_label for kind in load_kinds().values()}))
LABEL_PATTERN = (
    rf"^(?:(?:{_UNIT_WORDS}) \d{{1,3}}[A-Z]{{0,2}}"
    r"(?:\((?:\d{1,3}[A-Z]?|[a-z]{1,2}|[ivxlc]{1,6})\))*(?:-\((?:\d{1,3}[A-Z]?|[a-z]{1,2}|[ivxlc]{1,6})\))?"
    r"|(?:Form|Annexure|Schedule|Appendix)(?: [A-Z0-9]{1,4})?(?: \[\d+\])?"
    rf"(?:{PARAGRAPH_PATTERN})?"
    rf"|[A-Z][A-Za-z ]{{2,60}}(?:{PARAGRAPH_PATTERN})?"
    rf"|Preamble|Order|Page \d+(?: \(unassigned\))?)(?:{PART_PATTERN})?$"
)


@dataclass(frozen=True)
class Rule:
    """One expectation on a column. ``blocking`` rules stop downstream assets when they fail."""

    name: str
    column: str
    kind: str  # not_null | unique | regex | length | between | not_between
    description: str
    blocking: bool = False
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TableSchema:
    name: str
    rules: tuple[Rule, ...]


@dataclass
class RuleResult:
    rule: Rule
    success: bool
    unexpected_count: int
    examples: list[Any]


CHUNKS = TableSchema(
    "section_chunks",
    (
        Rule("unique_ids", "chunk_id", "unique", "Chunk ids are unique", blocking=True),
        Rule("ids_present", "chunk_id", "not_null", "Every chunk has an id", blocking=True),
        Rule(
            "non_empty_text",
            "text",
            "length",
            "Chunk text is non-empty and within length bounds",
            blocking=True,
            args={"min_value": 1, "max_value": 20000},
        ),
        Rule(
            "label_format",
            "label",
            "regex",
            "Labels look like 'Section 18(2)', 'Rule 9(1)(a)', 'Form A', 'Question 4'",
            blocking=True,
            args={"regex": LABEL_PATTERN},
        ),
        Rule(
            "number_format",
            "number",
            "regex",
            "Unit numbers are 1-3 digits with an optional letter suffix",
            args={"regex": r"^(?:\d{1,3}[A-Z]{0,2}|[A-Z0-9]{1,4}(?: \[\d+\])?)$"},
        ),
        Rule(
            "no_year_as_number",
            "number_int",
            "not_between",
            "No year (1800-2100) was taken for a section or rule number",
            blocking=True,
            args={"min_value": 1800, "max_value": 2100},
        ),
        Rule(
            "pages_positive",
            "page_start",
            "between",
            "Pages are 1-based",
            args={"min_value": 1, "max_value": 10000},
        ),
    ),
)

PAGES = TableSchema(
    "parsed_pages",
    (
        Rule(
            "page_numbers",
            "page",
            "between",
            "Page numbers are 1-based",
            args={"min_value": 1, "max_value": 10000},
        ),
        Rule(
            "method_known",
            "method",
            "regex",
            "Extraction method is known",
            args={"regex": r"^(?:pymupdf|pdfplumber|ocr|none)$"},
        ),
    ),
)

DOCUMENTS = TableSchema(
    "documents",
    (
        Rule(
            "coverage",
            "coverage",
            "between",
            "At least 99% of each document's body characters land in a chunk",
            args={"min_value": 0.99, "max_value": 1.0},
        ),
    ),
)


def _expectation(rule: Rule) -> Any:
    import great_expectations as gx

    e = gx.expectations
    if rule.kind == "unique":
        return e.ExpectColumnValuesToBeUnique(column=rule.column)
    if rule.kind == "not_null":
        return e.ExpectColumnValuesToNotBeNull(column=rule.column)
    if rule.kind == "regex":
        return e.ExpectColumnValuesToMatchRegex(column=rule.column, regex=rule.args["regex"])
    if rule.kind == "length":
        return e.ExpectColumnValueLengthsToBeBetween(column=rule.column, **rule.args)
    if rule.kind == "between":
        return e.ExpectColumnValuesToBeBetween(column=rule.column, **rule.args)
    if rule.kind == "not_between":
        # GX has no "not between"; a year-like number shows as a value above the upper bound
        return e.ExpectColumnValuesToBeBetween(
            column=rule.column, min_value=0, max_value=rule.args["min_value"] - 1
        )
    raise ValueError(f"unknown rule kind {rule.kind!r}")


@lru_cache(maxsize=1)
def _context() -> Any:
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def warm_up() -> None:
    """Import Great Expectations and open its context now, not at the first validation."""
    _context()


# Where validate() is answered: None in this process; a validator process's own function when
# one was started for it (quality_process.start_validator, by `civicsetu materialize`)
_ROUTE: list[Callable[[TableSchema, pd.DataFrame], list[RuleResult]]] = []


def route_validation(
    validator: Callable[[TableSchema, pd.DataFrame], list[RuleResult]] | None,
) -> None:
    """Send every :func:`validate` of this process to ``validator`` (None: back to this
    process)."""
    _ROUTE[:] = [] if validator is None else [validator]


def validate(schema: TableSchema, frame: pd.DataFrame) -> list[RuleResult]:
    """Run every rule of ``schema`` on ``frame`` with Great Expectations (by the validator
    process when one was started, else here: :func:`validate_here`)."""
    if _ROUTE:
        return _ROUTE[0](schema, frame)
    return validate_here(schema, frame)


def validate_here(schema: TableSchema, frame: pd.DataFrame) -> list[RuleResult]:
    """:func:`validate` in this process."""
    import great_expectations as gx

    context = _context()
    name = f"{schema.name}_{id(frame)}"
    source = context.data_sources.add_or_update_pandas(name)
    asset = source.add_dataframe_asset(name=name)
    batch = asset.add_batch_definition_whole_dataframe(name).get_batch(
        batch_parameters={"dataframe": frame}
    )
    suite = gx.ExpectationSuite(name=name)
    rules = [r for r in schema.rules if r.column in frame.columns]
    by_key: dict[tuple[str, str], Rule] = {}
    for rule in rules:
        expectation = suite.add_expectation(_expectation(rule))
        by_key[(expectation.expectation_type, rule.column)] = rule
    outcome = batch.validate(suite, result_format="SUMMARY")
    results = []
    for res in outcome.results:
        config = res.expectation_config
        rule = by_key[(config.type, config.kwargs["column"])]
        details = res.result or {}
        results.append(
            RuleResult(
                rule=rule,
                success=bool(res.success),
                unexpected_count=int(details.get("unexpected_count") or 0),
                examples=list(details.get("partial_unexpected_list") or [])[:10],
            )
        )
    context.data_sources.delete(name)
    return results


class KeptRows(NamedTuple):
    """What :func:`set_aside_documents` keeps and sets aside: the rows kept, each set-aside
    document's reasons, and every rule's result on the kept rows when that validation was
    already made (nothing set aside; else ``None``, and a check validates the kept rows)."""

    kept: pd.DataFrame
    reasons: dict[str, list[str]]
    results: list[RuleResult] | None


def set_aside_documents(
    schema: TableSchema, frame: pd.DataFrame, by: str = "document_key"
) -> KeptRows:
    """A defect stays in its document: the rows of the documents whose own rows pass every
    blocking rule of ``schema``, and for each document set aside, what its rows fail (the
    rule, how many rows, examples).

    One validation of the whole frame by every rule when its blocking rules pass (the usual
    case), which is also the frame's check (``results``); otherwise each document's rows are
    validated alone. A failure no single document explains (two documents' rows clashing) sets
    nothing aside: the whole frame's blocking check then fails, as before.
    """
    if frame.empty:
        return KeptRows(frame, {}, None)
    results = validate(schema, frame)
    if all(r.success for r in results if r.rule.blocking):
        return KeptRows(frame, {}, results)
    blocking = TableSchema(schema.name, tuple(r for r in schema.rules if r.blocking))
    reasons: dict[str, list[str]] = {}
    for key, rows in frame.groupby(by, sort=True):
        failed = [r for r in validate(blocking, rows.reset_index(drop=True)) if not r.success]
        if failed:
            reasons[str(key)] = [
                f"{r.rule.name} ({r.rule.description}): {r.unexpected_count} row(s), e.g. "
                + "; ".join(repr(str(x)[:80]) for x in r.examples[:3])
                for r in failed
            ]
    if not reasons:  # nothing set aside: the whole frame's results are the kept rows'
        return KeptRows(frame, {}, results)
    kept = frame[~frame[by].astype(str).isin(reasons)].reset_index(drop=True)
    return KeptRows(kept, reasons, None)
