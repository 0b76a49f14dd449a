"""The public names of this stage (see ``__init__.py``)."""

from .answers import (
    AnswerSettings as AnswerSettings,
    QueryEngine as QueryEngine,
    answer as answer,
    default_query_embedder as default_query_embedder,
    settings_from_env as settings_from_env,
)
from .candidates import (
    Candidate as Candidate,
    TermWeights as TermWeights,
    full_name as full_name,
)
from .citations import (
    quote_in as quote_in,
)
from .confidence import (
    TOP as TOP,
    ConfidenceModel as ConfidenceModel,
    choose_thresholds as choose_thresholds,
    evidence_features as evidence_features,
    feature_row as feature_row,
    fit_model as fit_model,
    model_of_no_weight as model_of_no_weight,
)
from .llm import (
    LLMSettings as LLMSettings,
)
from .questions import (
    QuestionError as QuestionError,
    parse_as_of as parse_as_of,
)
from .ranking import (
    FEATURES as FEATURES,
    DeterministicReranker as DeterministicReranker,
    LinearReranker as LinearReranker,
    RankerFileError as RankerFileError,
    candidate_features as candidate_features,
    load_ranker as load_ranker,
    save_ranker as save_ranker,
    unit_name as unit_name,
)
from .retrieval import (
    QueryEmbedder as QueryEmbedder,
    RetrievalSettings as RetrievalSettings,
)
from .vocabulary import (
    load_vocabulary as load_vocabulary,
)
