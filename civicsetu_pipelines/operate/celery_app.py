"""The Celery app of the project's workers: ``celery -A civicsetu_pipelines.operate.celery_app
worker`` (what ``civicsetu workers start`` runs).

dagster-celery's step task, on the broker of :func:`broker.broker_url` with the settings of
:func:`workers.celery_settings`, which the executor of a ``--executor celery`` run uses too.
"""

from __future__ import annotations

from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_task

from civicsetu_pipelines.operate.broker import broker_url
from civicsetu_pipelines.operate.workers import celery_app_args

app = make_app(celery_app_args(broker_url()))

execute_plan = create_task(app)
