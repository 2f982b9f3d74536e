"""The Celery app itself, without side effects: made when Django starts (config/apps.py), so every process — the web
server, an `atrium` command, the worker — sends tasks through the configured broker.

This is the layout Celery's Django guide gives (an app configured from the Django settings, loaded when the project
loads), split from config/celery.py because that module also prepares a worker process (configuration check,
embedded PostgreSQL, the worker's signals), which a web process must not import. Without it a `shared_task`'s
`.delay()` in a web process went to Celery's own default app (amqp on localhost) unless something else had happened to
load config.celery first: the capture endpoint's and the backfill doors' queueing depended on import order.
"""

from __future__ import annotations

from celery import Celery

app = Celery("atrium")  # made current: shared_task proxies (capture.tasks, memory.tasks) resolve to it
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
