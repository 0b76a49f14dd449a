"""The shared base under every stage: settings (the one place that reads the environment),
the one canonicalization of text, the document error, atomic file writes.

Modules, in the order they build on each other:

* ``settings`` -- paths, environment variables and their defaults
* ``canonical`` -- the one canonicalization of text (NFKC, quotes, dashes, spaces)
* ``errors`` -- DocumentError: a failure that names its document
* ``set_aside`` -- a document set aside by a step, and why (the document is the unit of failure)
* ``files`` -- atomic file writes
* ``figures`` -- matplotlib figures as PNG bytes that depend only on the picture

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
