"""Stage 5, evaluate: golden-set scores, metrics and the analyst report.

Modules, in the order they build on each other:

* ``metrics`` -- IR metrics (trec_eval) and ragas metrics
* ``significance`` -- bootstrap intervals over questions and paired randomization tests
* ``identity`` -- what an evaluation was measured on (served rows, ranker, model, k, golden)
* ``scoring`` -- the golden set, scoring one run, its history in Postgres
* ``splits`` -- the golden set's dev/test halves, grouped by governing provision
* ``report_data`` -- the per-question data model of the report
* ``plots`` -- the report's matplotlib figures
* ``report`` -- the HTML report (templates/), CSV and markdown
* ``render_check`` -- the headless-Chromium render check

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
