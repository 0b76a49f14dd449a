"""Stage 5, rank: the ranking and the encoder learned from the corpus itself (training pairs
mined from its structure and graph, a logistic ranker over each candidate's features, chosen on
the dev half; MiniLM fine-tuned on the same pairs).

Modules, in the order they build on each other:

* ``pairs`` -- questions mined from titles, FAQ and judgment citations, derivations, lay words
* ``train`` -- candidates' features recorded through the query engine, variants fitted, the
  promotion rule
* ``calibration`` -- the confidence model of a ranking, fitted under it on the mined questions,
  its thresholds chosen on the dev half
* ``encoder`` -- the bi-encoder fine-tuned on the mined questions (passages, hard negatives),
  judged against the packaged model by vector search on the dev half

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
