"""A real Celery worker process (prefork, one child) runs the embedding backfill end to end, and its embedder is
loaded once per worker process: two tasks in the same child report the same pid and the same load moment.

The worker is pointed at the test database (pytest-django's `test_<name>`) and the session's Redis through the
environment; the test is transactional so the worker sees committed rows.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memory.models import Memory
from memory.tasks import embeddings_backfill_task
from ops.health import health_report
from palace.models import OpLog, Palace
from tests.fakes.memories import make_memory

BOUND_S = 60  # the deadline for the tasks, once the worker answers


def _wait_for(predicate: Any, *, until: float, log: Path) -> None:
    while time.monotonic() < until:
        if predicate():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for the worker:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_real_worker_backfills_embeddings_and_loads_the_embedder_once(
    alice: Any, worker: tuple[subprocess.Popen[bytes], str, Path]
) -> None:
    proc, name, log = worker
    started = time.monotonic()
    until = started + BOUND_S
    palace = Palace.objects.get(personal_owner=alice)
    first = [make_memory(palace, content=f"Service {i} listens on port {8000 + i}.") for i in range(3)]

    embeddings_backfill_task.delay()
    _wait_for(
        lambda: not Memory.objects.filter(pk__in=[m.pk for m in first], embedding=None).exists(), until=until, log=log
    )
    _wait_for(lambda: OpLog.objects.filter(op="embeddings.backfill").count() == 1, until=until, log=log)

    second = [make_memory(palace, content=f"Queue {i} drains every {i + 1} minutes.") for i in range(2)]
    embeddings_backfill_task.delay()
    _wait_for(lambda: OpLog.objects.filter(op="embeddings.backfill").count() == 2, until=until, log=log)

    for m in (*first, *second):
        m.refresh_from_db()
        assert m.embedding is not None
        assert m.embedding_model == "multilingual-e5-small"
    runs = list(OpLog.objects.filter(op="embeddings.backfill").order_by("pk"))
    assert [r.detail["count"] for r in runs] == [3, 2]
    pids = {r.detail["pid"] for r in runs}
    loads = {r.detail["embedder_loaded_at"] for r in runs}
    # One child process did both tasks, and it loaded the model once: the load moment did not change.
    assert len(pids) == 1 and len(loads) == 1
    (pid,) = pids
    (loaded_at,) = loads
    assert pid not in (os.getpid(), proc.pid)  # the forked pool child, not the test or the worker's main process
    assert loaded_at is not None
    print(f"two backfill tasks done end to end in {time.monotonic() - started:.1f} s")
    # The health report's ping (its own Celery app on the configured broker) finds this worker.
    celery = health_report()["celery"]
    assert celery["ok"] is True and name in celery["workers"], celery
