"""The public names of this stage (see ``__init__.py``)."""

from .gazette_watch import (
    PDF_PREFIX as PDF_PREFIX,
    REMOTE_PREFIX as REMOTE_PREFIX,
    CursorError as CursorError,
    FileInFluxError as FileInFluxError,
    WatchState as WatchState,
    change_digest as change_digest,
    changed_entries as changed_entries,
    changed_partitions as changed_partitions,
    http_client as http_client,
    registry_files_for as registry_files_for,
    remote_snapshot as remote_snapshot,
    snapshot as snapshot,
)
from .instance import (
    prepare_dagster_home as prepare_dagster_home,
)
from .runs import (
    backfill_runs as backfill_runs,
    daemon_alive as daemon_alive,
    open_instance as open_instance,
    run_job as run_job,
    run_partitions as run_partitions,
)
from .services import (
    run_until_stopped as run_until_stopped,
    session_processes as session_processes,
)
