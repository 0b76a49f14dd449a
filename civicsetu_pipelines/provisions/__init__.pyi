"""The public names of this stage (see ``__init__.py``)."""

from .asking import (
    ACROSS_STATES as ACROSS_STATES,
    matter_asked as matter_asked,
)
from .table import (
    Flag as Flag,
    MatterSpec as MatterSpec,
    Provision as Provision,
    divergences as divergences,
    drop_document_provisions as drop_document_provisions,
    load_matter_specs as load_matter_specs,
    read_provisions as read_provisions,
    replace_divergences as replace_divergences,
    replace_provisions as replace_provisions,
    stored_divergences as stored_divergences,
    stored_provisions as stored_provisions,
)
from .values import (
    number_value as number_value,
    read_days as read_days,
    read_rate as read_rate,
    read_rupees as read_rupees,
    read_years as read_years,
)
