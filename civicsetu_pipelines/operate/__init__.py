"""Stage 6, operate: running the pipeline through a Dagster instance.

With defs/, the only package that imports dagster.

Modules, in the order they build on each other:

* ``instance`` -- the Dagster home and instance on Postgres
* ``freshness`` -- input fingerprints: skip what has not changed
* ``runs`` -- runs per jurisdiction, jobs and backfills through the instance
* ``progress`` -- what a run this process started is doing now (step n/N, its last message)
* ``retirement`` -- documents taken out of the registry, retired outside a run (no Dagster)
* ``gazette_watch`` -- snapshots of mirrors, registries and sources for the change sensor
* ``sources`` -- listing pages and drop folders watched for new PDFs, registered as data (no
  Dagster: one tick of ``civicsetu watch`` and of the sensor)
* ``services`` -- services this process starts (``dagster dev``), stopped together on any signal
* ``broker`` -- the Celery broker: a configured URL or the embedded Redis
* ``workers`` -- Celery workers for ``--executor celery`` runs, supervised and stopped together
* ``celery_app`` -- the workers' Celery app (``celery -A civicsetu_pipelines.operate.celery_app``)

The names below are what the rest of the code may use (``__init__.pyi`` lists them for the
type checker; they are imported on first use, so importing the package costs nothing). The
import contracts in ``.importlinter`` keep other packages off the modules themselves.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
