"""The public names of this stage (see ``__init__.py``)."""

from .akn import (
    AknDocument as AknDocument,
    Resolved as Resolved,
    akn_documents as akn_documents,
    akn_texts as akn_texts,
    document_xml as document_xml,
    export_document as export_document,
    expression_dates as expression_dates,
    fill_eids as fill_eids,
    resolve_uri as resolve_uri,
    rows_on as rows_on,
    unit_texts as unit_texts,
    unit_uris as unit_uris,
    validate_akn as validate_akn,
)
from .catalog import (
    build_catalog_rows as build_catalog_rows,
    forget_documents as forget_documents,
    read_sections as read_sections,
    read_stats as read_stats,
    record_set_asides as record_set_asides,
    replace_jurisdiction as replace_jurisdiction,
    store_pages as store_pages,
)
from .changes import (
    CHANGE_KINDS as CHANGE_KINDS,
    Change as Change,
    change_detail as change_detail,
    change_hashes as change_hashes,
    read_changes as read_changes,
    record_changes as record_changes,
    unexplained as unexplained,
)
from .database import (
    DAGSTER_DATABASE as DAGSTER_DATABASE,
    EmbeddedPostgres as EmbeddedPostgres,
    MigrationChecksumError as MigrationChecksumError,
    StoreNotReady as StoreNotReady,
    apply_migrations as apply_migrations,
    connect as connect,
    dagster_storage_url as dagster_storage_url,
    ensure_database as ensure_database,
    redact_url as redact_url,
    resolve_database_url as resolve_database_url,
    start_database_early as start_database_early,
)
from .embedders import (
    ModelWorker as ModelWorker,
    open_embedder as open_embedder,
)
from .embedding import (
    PACKAGED_MODEL as PACKAGED_MODEL,
    TAUGHT_MANIFEST as TAUGHT_MANIFEST,
    Embedder as Embedder,
    EmbeddingConfig as EmbeddingConfig,
    EvidenceDistances as EvidenceDistances,
    WindowedEmbedder as WindowedEmbedder,
    document_text as document_text,
    embedding_config_from_env as embedding_config_from_env,
    model_source as model_source,
    sha256_file as sha256_file,
    taught_manifest as taught_manifest,
    text_sha256 as text_sha256,
)
from .fingerprints import (
    served_fingerprints as served_fingerprints,
)
from .legal_chunks import (
    EXACT_SCAN_MAX_ROWS as EXACT_SCAN_MAX_ROWS,
    HNSW_INDEX as HNSW_INDEX,
    PARTIAL_INDEX_MIN_ROWS as PARTIAL_INDEX_MIN_ROWS,
    DocumentVersionInput as DocumentVersionInput,
    KnnStrategy as KnnStrategy,
    absent_terms as absent_terms,
    cache_lookup as cache_lookup,
    cache_store as cache_store,
    chunk_filters as chunk_filters,
    column_dimension as column_dimension,
    documents_served as documents_served,
    ensure_model as ensure_model,
    ensure_serving as ensure_serving,
    explain_nearest as explain_nearest,
    in_force_clause as in_force_clause,
    is_chunk_id as is_chunk_id,
    jurisdictions_served as jurisdictions_served,
    knn_query as knn_query,
    knn_statement as knn_statement,
    knn_strategy as knn_strategy,
    load_partition as load_partition,
    prepare as prepare,
    retire_documents as retire_documents,
    row_sha256 as row_sha256,
    rows_without_vectors as rows_without_vectors,
    scope_rows as scope_rows,
    served_fingerprint as served_fingerprint,
    served_on as served_on,
    set_vectors as set_vectors,
    store_setting as store_setting,
    store_stats as store_stats,
)
from .onnx_model import (
    OnnxEmbedder as OnnxEmbedder,
    ensure_onnx_model as ensure_onnx_model,
    export_pending as export_pending,
    source_fingerprint as source_fingerprint,
    verify_export as verify_export,
)
from .points_in_time import (
    unit_history as unit_history,
    units_in_force as units_in_force,
)
from .served_documents import (
    read_served as read_served,
    record_served as record_served,
    served_fingerprint_of as served_fingerprint_of,
    set_aside_keys as set_aside_keys,
)
