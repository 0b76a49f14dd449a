"""The public names of this stage (see ``__init__.py``)."""

from .amendments import (
    amendment_edges as amendment_edges,
)
from .edges import (
    build_edges as build_edges,
    citations_of as citations_of,
    cited_from_elsewhere as cited_from_elsewhere,
    document_rows as document_rows,
    drop_document_edges as drop_document_edges,
    edge_documents as edge_documents,
    graph_stats as graph_stats,
    neighbours as neighbours,
    reference_links as reference_links,
    replace_edges as replace_edges,
    stored_act_chunks as stored_act_chunks,
    unit_labels as unit_labels,
)
from .matters import (
    Matter as Matter,
    MatterIndex as MatterIndex,
    prescribed_matters as prescribed_matters,
    top_section as top_section,
)
from .neo4j_mirror import (
    export_csv as export_csv,
    read_snapshot as read_snapshot,
    sync_to_neo4j as sync_to_neo4j,
)
from .picture import (
    render_network as render_network,
)
from .references import (
    ActTitles as ActTitles,
    UnitIndex as UnitIndex,
    derivation as derivation,
    is_framing_rule as is_framing_rule,
)
