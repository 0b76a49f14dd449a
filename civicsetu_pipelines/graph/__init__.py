"""Stage 3, graph: cross-references and derivations between legal units.

Modules, in the order they build on each other:

* ``references`` -- references and derivation phrases found in the text
* ``matters`` -- the matters the Act leaves to rules and regulations (its rule-making heads)
* ``edges`` -- HAS_PART, REFERENCES, DERIVED_FROM and EXTERNAL_REFERENCE edges in Postgres
* ``amendments`` -- AMENDED_BY and REPEALED_BY: the edges of dated law
* ``neo4j_mirror`` -- the Neo4j mirror and the neo4j-admin CSV export
* ``picture`` -- the network picture of a jurisdiction

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
