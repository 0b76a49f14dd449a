"""The public names of this stage (see ``__init__.py``)."""

from .calibration import (
    Calibration as Calibration,
    Reading as Reading,
    calibrate as calibrate,
    read_answer as read_answer,
)
from .encoder import (
    EncoderOutcome as EncoderOutcome,
    TuningSettings as TuningSettings,
    read_manifest as read_manifest,
    teach_encoder as teach_encoder,
)
from .pairs import (
    TrainingQuery as TrainingQuery,
    counts as counts,
    mine_training_queries as mine_training_queries,
)
from .train import (
    ALL_BLENDS as ALL_BLENDS,
    ALL_VARIANTS as ALL_VARIANTS,
    BLENDS as BLENDS,
    HUB_TOP as HUB_TOP,
    REPORTED_METRICS as REPORTED_METRICS,
    SEED as SEED,
    VARIANTS as VARIANTS,
    Collected as Collected,
    QueryCandidates as QueryCandidates,
    Verdict as Verdict,
    blend as blend,
    collect as collect,
    examples_sha256 as examples_sha256,
    fit as fit,
    hubness as hubness,
    mean_reciprocal_rank as mean_reciprocal_rank,
    promotion as promotion,
    version_of as version_of,
)
