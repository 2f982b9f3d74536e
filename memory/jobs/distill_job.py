"""Distillation as a background job: a door (MCP `memory_distill`, REST `/distill/jobs`) records the request as a
DistillJob, memory/tasks.py queues it, and a Celery worker runs it here. Clustering is quadratic in a palace's
memories, and a request thread whose time limit fires is not released (api/mcp/runner.py), so the heavy part never
runs on one.

1. Start (the door, for the caller, who has already been checked for writing the palace): a `queued` row.
2. Run (the worker): claim the row with a conditional UPDATE (queued → running: a second delivery of the task finds
   nothing to do), check again that its person may still write the palace, run `distill_run` acting as them (row-level
   security sees only their palaces; the op rows name them and their token), keep the result, `done`; any error is
   `failed` with its class and a short message.
3. Read (the doors): only the person who started a job reads it, while they may read its palace; anyone else, and a
   missing id, get the same NotFound. A door may wait a moment (`distill_job_wait`) to answer small runs inline.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.jobs.distill import DistillCluster, DistillResult, distill_run
from memory.models import DistillJob
from palace import rls
from palace.actors import Actor
from palace.errors import InvalidInput, NotFound, PermissionDenied
from palace.selectors import palace_get

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from palace.models import Palace

log = logging.getLogger(__name__)

MODES = ("suggest", "apply")
INLINE_WAIT_S = 2.0  # how long a door waits for the worker before answering "queued" (small runs come back inline)
POLL_S = 0.1
_CLUSTER_FIELDS = {f.name for f in fields(DistillCluster)}


def distill_job_start(*, palace: Palace, actor: Actor, mode: str) -> DistillJob:
    """Record a distillation for the worker (memory.tasks.distill_job_queue queues it once this commits)."""
    if mode not in MODES:
        raise InvalidInput(f"mode must be suggest or apply, not {mode!r}", field="mode")
    if actor.user_id is None:
        raise InvalidInput("a distillation job is started by a person (their session or token)")
    return DistillJob.objects.create(
        palace=palace,
        user_id=actor.user_id,
        token_id=actor.token_id,
        token_label=actor.token_label[:100],
        mode=mode,
    )


def distill_job_get(*, user: AbstractBaseUser, job_id: int) -> DistillJob:
    """The job, when `user` started it and may still read its palace; NotFound alike for everyone else and for a
    job that does not exist (its existence is not told)."""
    found = DistillJob.objects.filter(pk=job_id, user_id=user.pk) if 0 < job_id < 2**63 else DistillJob.objects.none()
    job = found.select_related("palace").first()
    if job is not None:
        try:
            palace_get(user=user, palace_id=job.palace_id)
        except NotFound:
            job = None
    if job is None:
        raise NotFound(f"distillation job #{job_id} not found", field="job")
    return job


def distill_job_wait(*, job: DistillJob, seconds: float | None = None) -> DistillJob:
    """The job again once the worker has finished it, or as it is after `seconds` (default INLINE_WAIT_S). Inside a
    transaction nothing is waited for: the task is queued only when it commits."""
    wait = INLINE_WAIT_S if seconds is None else seconds
    deadline = time.monotonic() + (0 if connection.in_atomic_block else wait)
    finished = (DistillJob.State.DONE, DistillJob.State.FAILED)
    while True:
        state = DistillJob.objects.filter(pk=job.pk).values_list("state", flat=True).first()
        if state in finished or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    job.refresh_from_db(fields=["state", "result", "error", "started_at", "finished_at"])  # its palace stays loaded
    return job


def distill_job_result(job: DistillJob) -> DistillResult | None:
    """The run's result kept on a done job (None before then, or when it failed)."""
    if job.state != DistillJob.State.DONE or not job.result:
        return None
    clusters = [DistillCluster(**{k: v for k, v in c.items() if k in _CLUSTER_FIELDS}) for c in job.result["clusters"]]
    return DistillResult(mode=job.result["mode"], llm_configured=job.result["llm_configured"], clusters=clusters)


def distill_job_run(*, job_id: int) -> DistillJob | None:
    """Run a queued job (the worker's side; see the module docstring). None when there is nothing to run: the job is
    gone, or another delivery of the task has claimed it."""
    claimed = DistillJob.objects.filter(pk=job_id, state=DistillJob.State.QUEUED).update(
        state=DistillJob.State.RUNNING, started_at=timezone.now()
    )
    if not claimed:
        return None
    job = DistillJob.objects.select_related("user").get(pk=job_id)
    user = job.user
    actor = Actor.for_token(user, job.token_id, job.token_label) if job.token_id else Actor.for_user(user)
    try:
        with rls.acting_as(user):  # only what its person may see and write, as at the door
            palace = palace_get(user=user, palace_id=job.palace_id, write=True)
            result = distill_run(mode=job.mode, palace=palace, actor=actor)
    except (NotFound, PermissionDenied):  # removed from the palace, or made a viewer, since the job was started
        job.state, job.error = DistillJob.State.FAILED, "the palace is no longer one you may write"
    except Exception as exc:  # a job must end in a state its person can read, whatever went wrong
        log.exception("distillation job #%s failed", job_id)
        job.state, job.error = DistillJob.State.FAILED, f"{type(exc).__name__}: {str(exc)[:200]}"
    else:
        job.state = DistillJob.State.DONE
        job.result = _dump(result)
    job.finished_at = timezone.now()
    job.save(update_fields=["state", "error", "result", "finished_at"])
    return job


def distill_jobs_sweep(*, now: datetime | None = None) -> list[int]:
    """Fail the jobs a crashed worker left `running`: started more than ATRIUM_DISTILL_JOB_TIMEOUT_MINUTES ago (a
    live run ends well within it). Their person reads the reason at the door instead of a job running forever. The
    job has no op row of its own (the memories a run changes carry those), so none is written. Returns their ids."""
    now = now or timezone.now()
    bound = timedelta(minutes=settings.ATRIUM_DISTILL_JOB_TIMEOUT_MINUTES)
    stale = DistillJob.objects.filter(state=DistillJob.State.RUNNING, started_at__lt=now - bound)
    ids = list(stale.values_list("pk", flat=True))
    reason = (
        f"the worker stopped: still running after {settings.ATRIUM_DISTILL_JOB_TIMEOUT_MINUTES} minutes; start it again"
    )
    # The state is asked again in the UPDATE, so a job that ended meanwhile keeps its result.
    DistillJob.objects.filter(pk__in=ids, state=DistillJob.State.RUNNING).update(
        state=DistillJob.State.FAILED, error=reason, finished_at=now
    )
    if ids:
        log.warning("distillation jobs left running by a stopped worker, failed: %s", ids)
    return ids


def _dump(result: DistillResult) -> dict[str, Any]:
    return {
        "mode": result.mode,
        "llm_configured": result.llm_configured,
        "clusters": [asdict(c) for c in result.clusters],
    }
