"""The public names of this stage (see ``__init__.py``)."""

from .akn import (
    AknError as AknError,
    assign_eids as assign_eids,
    chapter_eid as chapter_eid,
    eid_element as eid_element,
    expression_day as expression_day,
    expression_uri as expression_uri,
    language_of as language_of,
    named_unit as named_unit,
    parent_eids as parent_eids,
    parse_uri as parse_uri,
    registered_works as registered_works,
    same_work as same_work,
    unit_eid as unit_eid,
    unit_uri as unit_uri,
    work_uri as work_uri,
)
from .amendments import (
    Instrument as Instrument,
    PartitionAmendments as PartitionAmendments,
    amend_partition as amend_partition,
    amendable_titles as amendable_titles,
    instrument_of as instrument_of,
    read_instructions as read_instructions,
)
from .documents import (
    chunk_rows as chunk_rows,
    failed_report as failed_report,
    fetch_rows as fetch_rows,
    page_records as page_records,
    parse_ledger as parse_ledger,
    parse_rows_cached as parse_rows_cached,
    prefetch_parses as prefetch_parses,
)
from .fetch import (
    USER_AGENT as USER_AGENT,
)
from .inspection import (
    KINDS as KINDS,
    inspect_pdf as inspect_pdf,
    parse_page_ranges as parse_page_ranges,
)
from .kinds import (
    Authority as Authority,
    authority_of as authority_of,
    authority_tiers as authority_tiers,
    citation_role as citation_role,
    is_case_law as is_case_law,
    kind_names as kind_names,
    kinds_asked_for as kinds_asked_for,
    load_kinds as load_kinds,
)
from .pages import (
    PdfError as PdfError,
)
from .quality import (
    CHUNKS as CHUNKS,
    DOCUMENTS as DOCUMENTS,
    PAGES as PAGES,
    RuleResult as RuleResult,
    TableSchema as TableSchema,
    set_aside_documents as set_aside_documents,
    validate as validate,
)
from .quality_process import (
    start_validator as start_validator,
    stop_validator as stop_validator,
)
from .quality_service import (
    ValidatorError as ValidatorError,
    stop_shared_validators as stop_shared_validators,
    warm_shared_validator as warm_shared_validator,
)
from .registry import (
    DOCUMENTS_YAML as DOCUMENTS_YAML,
    SEED_DOCUMENTS_YAML as SEED_DOCUMENTS_YAML,
    CuratedDerivation as CuratedDerivation,
    DocumentSpec as DocumentSpec,
    Registry as Registry,
    RegistryError as RegistryError,
    load_curated_derivations as load_curated_derivations,
    load_registry as load_registry,
    user_registry_path as user_registry_path,
)
from .unit_parts import (
    paragraph_word as paragraph_word,
    split_paragraph as split_paragraph,
    split_part as split_part,
    whole_form as whole_form,
)
from .user_documents import (
    Added as Added,
    AddError as AddError,
    add_document as add_document,
    remove_document as remove_document,
    remove_documents as remove_documents,
    user_keys as user_keys,
)
from .worklist import (
    CITED_KINDS as CITED_KINDS,
    ServedDocument as ServedDocument,
    WorkPlan as WorkPlan,
    amendment_closure as amendment_closure,
    document_fingerprint as document_fingerprint,
    plan_work as plan_work,
    work_context as work_context,
)
