"""The public names of this stage (see ``__init__.py``)."""

from .canonical import (
    canonical_flat as canonical_flat,
    canonicalize as canonicalize,
)
from .errors import (
    DocumentError as DocumentError,
)
from .figures import (
    figure_png as figure_png,
)
from .files import (
    code_hash as code_hash,
    directory_lock as directory_lock,
    read_data_entries as read_data_entries,
    read_data_yaml as read_data_yaml,
    sha256_file as sha256_file,
    write_atomic as write_atomic,
)
from .jurisdictions import (
    Jurisdiction as Jurisdiction,
    Jurisdictions as Jurisdictions,
    UnknownJurisdictionError as UnknownJurisdictionError,
    jurisdiction_code as jurisdiction_code,
    load_jurisdictions as load_jurisdictions,
    name_key as name_key,
)
from .processes import (
    ended_within as ended_within,
    process_alive as process_alive,
    process_exists as process_exists,
)
from .set_aside import (
    STAGES as STAGES,
    SetAside as SetAside,
    by_document as by_document,
    contained as contained,
    set_aside_for as set_aside_for,
)
from .settings import (
    DATA_DIR as DATA_DIR,
    DEFAULT_MIRROR as DEFAULT_MIRROR,
    ENV_CELERY_BROKER_URL as ENV_CELERY_BROKER_URL,
    ENV_CROSS_ENCODER as ENV_CROSS_ENCODER,
    ENV_DATABASE_URL as ENV_DATABASE_URL,
    ENV_EF_SEARCH as ENV_EF_SEARCH,
    ENV_EMBED_BATCH_SIZE as ENV_EMBED_BATCH_SIZE,
    ENV_EMBED_DEVICE as ENV_EMBED_DEVICE,
    ENV_EMBED_DIMENSION as ENV_EMBED_DIMENSION,
    ENV_EMBED_DOCUMENT_PREFIX as ENV_EMBED_DOCUMENT_PREFIX,
    ENV_EMBED_MODEL as ENV_EMBED_MODEL,
    ENV_EMBED_QUERY_PREFIX as ENV_EMBED_QUERY_PREFIX,
    ENV_EMBED_RUNTIME as ENV_EMBED_RUNTIME,
    ENV_GOLDEN as ENV_GOLDEN,
    ENV_LLM_API_KEY as ENV_LLM_API_KEY,
    ENV_LLM_BASE_URL as ENV_LLM_BASE_URL,
    ENV_LLM_MODEL as ENV_LLM_MODEL,
    ENV_MIRROR_DIRS as ENV_MIRROR_DIRS,
    ENV_MODELS_DIR as ENV_MODELS_DIR,
    ENV_NEO4J_DATABASE as ENV_NEO4J_DATABASE,
    ENV_NEO4J_PASSWORD as ENV_NEO4J_PASSWORD,
    ENV_NEO4J_URI as ENV_NEO4J_URI,
    ENV_NEO4J_USER as ENV_NEO4J_USER,
    ENV_NEO4J_USERNAME as ENV_NEO4J_USERNAME,
    ENV_PARSE_CACHE as ENV_PARSE_CACHE,
    ENV_RANKER as ENV_RANKER,
    ENV_REINGEST_CRON as ENV_REINGEST_CRON,
    ENV_STATE_DIR as ENV_STATE_DIR,
    PACKAGE_DIR as PACKAGE_DIR,
    REPO_ROOT as REPO_ROOT,
    Settings as Settings,
    answer_env as answer_env,
    env_is_set as env_is_set,
    env_value as env_value,
    model_hub_offline as model_hub_offline,
    models_dir as models_dir,
    neo4j_configured as neo4j_configured,
    output_settings as output_settings,
    parse_cache_dir as parse_cache_dir,
    pdf_cache_dir as pdf_cache_dir,
    reports_dir as reports_dir,
    run_dir as run_dir,
)
