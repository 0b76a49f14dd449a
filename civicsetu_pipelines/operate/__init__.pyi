"""The public names of this stage (see ``__init__.py``)."""

from .broker import (
    BrokerError as BrokerError,
    EmbeddedRedis as EmbeddedRedis,
    broker_url as broker_url,
)
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
from .progress import (
    RunWatcher as RunWatcher,
)
from .retirement import (
    Retirement as Retirement,
    mirror_jurisdiction as mirror_jurisdiction,
    retire_jurisdiction_documents as retire_jurisdiction_documents,
)
from .runs import (
    PartitionOutcome as PartitionOutcome,
    RemoteExecution as RemoteExecution,
    backfill_runs as backfill_runs,
    daemon_alive as daemon_alive,
    ensure_partitions as ensure_partitions,
    fail_orphaned_runs as fail_orphaned_runs,
    open_instance as open_instance,
    run_job as run_job,
    run_partitions as run_partitions,
)
from .services import (
    run_until_stopped as run_until_stopped,
    session_processes as session_processes,
)
from .sources import (
    SEVERAL as SEVERAL,
    Pending as Pending,
    Source as Source,
    SourceError as SourceError,
    WatchLimits as WatchLimits,
    WatchTick as WatchTick,
    accept_pending as accept_pending,
    add_source as add_source,
    load_pending as load_pending,
    load_sources as load_sources,
    reject_pending as reject_pending,
    remove_source as remove_source,
    source_summaries as source_summaries,
    watch_once as watch_once,
)
from .workers import (
    WorkerRecord as WorkerRecord,
    celery_remote as celery_remote,
    log_dir as log_dir,
    ping as ping,
    read_record as read_record,
    serve_workers as serve_workers,
    stop_workers as stop_workers,
)
