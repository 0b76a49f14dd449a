"""Stage 2, store: Postgres, embeddings and the versioned serving table.

Modules, in the order they build on each other:

* ``database`` -- connections, the embedded Postgres, migrations (sql/)
* ``embedding`` -- the embedding model (packaged, checksummed), windows, worker process
* ``onnx_model`` -- the model exported once to ONNX and run without torch
* ``legal_chunks`` -- the versioned pgvector table legal_chunks and the embedding cache
* ``catalog`` -- the document catalog, its units and stored page texts
* ``served_documents`` -- each jurisdiction's served documents with their fingerprints (the
  ledger of incremental runs)
* ``points_in_time`` -- the law of a day: units in force on a date, a unit's versions
* ``changes`` -- what changed, recorded: each run's units added, changed and ended (and the
  provision values and governing citations that moved), in ``store_changes``
* ``akn`` -- Akoma Ntoso over the store: what an AKN URI names, and the AKN 3.0 XML of each
  document and expression, validated against the schema ``cobalt`` ships

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
