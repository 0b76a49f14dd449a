"""The public names of this stage (see ``__init__.py``)."""

from .identity import (
    EvalIdentity as EvalIdentity,
    evaluation_identity as evaluation_identity,
)
from .memo import (
    ScopedMemo as ScopedMemo,
    open_memo as open_memo,
    ranking_key as ranking_key,
)
from .metrics import (
    UnitName as UnitName,
    scored_name as scored_name,
)
from .report import (
    render_report as render_report,
)
from .scoring import (
    GOLDEN_JSONL as GOLDEN_JSONL,
    THRESHOLDS as THRESHOLDS,
    EvalResult as EvalResult,
    GoldenError as GoldenError,
    GoldenQuestion as GoldenQuestion,
    by_kind_and_split as by_kind_and_split,
    by_split as by_split,
    diversity_displaced as diversity_displaced,
    evaluate as evaluate,
    golden_sha256 as golden_sha256,
    held_out as held_out,
    history as history,
    in_test_half as in_test_half,
    intervals as intervals,
    load_golden as load_golden,
    paired_changes as paired_changes,
    record as record,
    summary as summary,
    with_intervals as with_intervals,
    write_golden as write_golden,
)
from .significance import (
    ALPHA as ALPHA,
    PairedTest as PairedTest,
    bootstrap_ci as bootstrap_ci,
    paired_test as paired_test,
)
from .splits import (
    assign_splits as assign_splits,
    split_overlap as split_overlap,
)
