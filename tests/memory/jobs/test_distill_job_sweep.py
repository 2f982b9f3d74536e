"""The beat's sweep of distillation jobs a crashed worker left running (memory.jobs.distill_jobs_sweep)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from memory import tasks
from memory.models import DistillJob
from palace.models import Palace

pytestmark = pytest.mark.django_db


def _job(palace: Palace, alice: Any, *, state: str, started_minutes_ago: float | None) -> DistillJob:
    started = None if started_minutes_ago is None else timezone.now() - timedelta(minutes=started_minutes_ago)
    return DistillJob.objects.create(palace=palace, user=alice, mode="suggest", state=state, started_at=started)


@override_settings(ATRIUM_DISTILL_JOB_TIMEOUT_MINUTES=15)
def test_a_job_running_past_the_bound_is_failed_with_a_reason_and_the_others_are_left(
    palace: Palace, alice: Any
) -> None:
    stale = _job(palace, alice, state="running", started_minutes_ago=16)
    live = _job(palace, alice, state="running", started_minutes_ago=14)  # within the bound: a live run
    queued = _job(palace, alice, state="queued", started_minutes_ago=None)
    done = _job(palace, alice, state="done", started_minutes_ago=60)

    assert tasks.distill_jobs_sweep_task.run() == {"failed": [stale.pk]}

    stale.refresh_from_db()
    assert stale.state == "failed" and stale.finished_at is not None
    assert "the worker stopped: still running after 15 minutes" in stale.error
    for job, state in ((live, "running"), (queued, "queued"), (done, "done")):
        job.refresh_from_db()
        assert (job.state, job.error, job.finished_at) == (state, "", None), job
    assert tasks.distill_jobs_sweep_task.run() == {"failed": []}  # a second sweep finds nothing


def test_the_sweep_is_on_the_beat_schedule() -> None:
    row = PeriodicTask.objects.get(name="atrium: distillation job sweep")
    assert row.task == tasks.DISTILL_SWEEP_TASK and row.enabled
    assert row.interval is not None and (row.interval.every, row.interval.period) == (5, "minutes")
