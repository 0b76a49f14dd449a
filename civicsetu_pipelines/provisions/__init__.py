"""Stage 4, provisions: what each state fixed for each matter the Act leaves to its rules, side
by side, and where the states depart.

Modules, in the order they build on each other:

* ``values`` -- rates, periods and amounts read deterministically from a rule's words
* ``table`` -- each jurisdiction's provision per matter (from the graph and the rules), the
  divergences over all of them, and their tables in Postgres
* ``asking`` -- which matter a question asks about, and whether it asks across states

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
