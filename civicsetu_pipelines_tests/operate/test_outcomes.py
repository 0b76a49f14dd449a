"""A partition's outcome as ``civicsetu materialize`` reads it: which rows are served."""

from __future__ import annotations

from civicsetu_pipelines.operate.runs import PartitionOutcome


def test_an_up_to_date_partition_is_served_as_a_run_one_is_and_a_failed_one_is_not() -> None:
    """``materialize --reports`` scores the store when any partition is served: an unchanged
    store (every partition up to date) is scored too, not passed over in silence."""
    assert PartitionOutcome("GUJARAT", "ok", 1.0).served
    assert PartitionOutcome("GUJARAT", "up_to_date", 0.1).served
    assert not PartitionOutcome("GUJARAT", "failed", 1.0, error="boom").served
