"""Stage 4, answer: questions answered from the stores with verbatim citations, or refused.

Modules, in the order they build on each other:

* ``places`` -- Indian places and jurisdiction names in a question
* ``legal_references`` -- explicit references in a question (sections, rules, forms ...)
* ``questions`` -- validation and understanding of a question (the Query)
* ``ranking`` -- candidates, rerankers and diversity
* ``retrieval`` -- references, vectors, full text, fusion and expansion: the ranked candidates
* ``citations`` -- verbatim checks and page placement of quotes
* ``llm`` -- the optional OpenAI-compatible path with verified claims
* ``verdict`` -- refusals before retrieval and the verdict on the evidence (never its order)
* ``compose`` -- quotes, citations and confidence: the answer
* ``timing`` -- per-stage timings
* ``answers`` -- the orchestrator: one question through the stages, each once

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
