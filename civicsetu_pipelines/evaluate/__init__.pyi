"""The public names of this stage (see ``__init__.py``)."""

from .report import (
    render_report as render_report,
)
from .scoring import (
    GOLDEN_JSONL as GOLDEN_JSONL,
    THRESHOLDS as THRESHOLDS,
    EvalResult as EvalResult,
    GoldenError as GoldenError,
    GoldenQuestion as GoldenQuestion,
    by_group as by_group,
    evaluate as evaluate,
    golden_sha256 as golden_sha256,
    history as history,
    load_golden as load_golden,
    record as record,
)
