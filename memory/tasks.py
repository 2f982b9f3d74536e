"""Celery tasks: thin doors over memory/jobs/. Queue them with the enqueue_* helpers, which wait for the
surrounding transaction to commit so a worker never looks for rows that are not there yet.

The beat schedule lives in django-celery-beat's tables (migration memory/0003_periodic_jobs), editable in the admin.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.jobs import (
    access_records_prune,
    decay_run,
    distill_job_run,
    distill_job_start,
    distill_jobs_sweep,
    distill_proposals_store,
    distill_run,
    embeddings_backfill,
)
from memory.models import DistillJob

if TYPE_CHECKING:
    from palace.actors import Actor
    from palace.models import Palace

log = logging.getLogger(__name__)

DECAY_TASK = "memory.decay"
BACKFILL_TASK = "memory.embeddings_backfill"
DISTILL_TASK = "memory.distill"
DISTILL_JOB_TASK = "memory.distill_job"
DISTILL_SWEEP_TASK = "memory.distill_jobs_sweep"
ACCESS_PRUNE_TASK = "memory.access_records_prune"


@shared_task(name=DECAY_TASK, ignore_result=True)
def decay_task(dry_run: bool = False) -> dict[str, Any]:
    result = decay_run(dry_run=dry_run)
    log.info("decay: %d candidates, %d archived", len(result.candidates), len(result.archived))
    return {"candidates": len(result.candidates), "archived": len(result.archived)}


@shared_task(name=BACKFILL_TASK, ignore_result=True)
def embeddings_backfill_task(batch_size: int = 32, limit: int | None = None) -> dict[str, Any]:
    result = embeddings_backfill(batch_size=batch_size, limit=limit)
    log.info("embedding backfill: %d embedded, %d remaining %s", result.embedded, result.remaining, result.degraded)
    return {"embedded": result.embedded, "remaining": result.remaining, "degraded": result.degraded}


@shared_task(name=DISTILL_TASK, ignore_result=True)
def distill_task(mode: str = "setting") -> dict[str, Any]:
    """`mode` "setting" (the scheduled default) reads ATRIUM_DISTILL_MODE (suggest unless set to apply)."""
    result = distill_run(mode=settings.ATRIUM_DISTILL_MODE if mode == "setting" else mode)
    # Suggestions are kept as proposals for a person to apply or reject (memory.jobs.distill), not thrown away.
    stored = distill_proposals_store(result=result) if result.mode == "suggest" else []
    log.info(
        "distill (%s): %d clusters, %d applied, %d proposed",
        result.mode,
        len(result.clusters),
        result.applied,
        len(stored),
    )
    return {"mode": result.mode, "clusters": len(result.clusters), "applied": result.applied, "proposed": len(stored)}


@shared_task(name=ACCESS_PRUNE_TASK, ignore_result=True)
def access_records_prune_task() -> dict[str, Any]:
    """The beat's daily sweep: access records older than ATRIUM_ACCESS_RECORDS_KEEP_DAYS (memory/jobs/retention.py)."""
    result = access_records_prune()
    log.info("access records: %d older than %d days deleted", result.deleted, result.keep_days)
    return {"deleted": result.deleted, "keep_days": result.keep_days}


@shared_task(name=DISTILL_SWEEP_TASK, ignore_result=True)
def distill_jobs_sweep_task() -> dict[str, Any]:
    """The beat's sweep (every 5 minutes): fail the distillation jobs a crashed worker left running."""
    return {"failed": distill_jobs_sweep()}


def enqueue_embeddings_backfill() -> None:
    """Ask a worker to embed the rows saved without a vector, once the current transaction commits."""
    transaction.on_commit(lambda: embeddings_backfill_task.delay())


@shared_task(name=DISTILL_JOB_TASK, ignore_result=True)
def distill_job_task(job_id: int) -> dict[str, Any]:
    """One person's distillation (memory_distill, REST /distill/jobs); the row keeps its state and result."""
    job = distill_job_run(job_id=job_id)
    if job is None:
        return {"job": job_id, "state": "not run (gone or already claimed)"}
    log.info("distill job #%d (%s): %s %s", job.pk, job.mode, job.state, job.error)
    return {"job": job.pk, "state": job.state}


def distill_job_queue(*, palace: Palace, actor: Actor, mode: str) -> DistillJob:
    """Record a distillation for `actor` in `palace` (already checked for writing) and ask a worker to run it, once
    the current transaction commits. An unreachable broker fails the job with the reason (never a 500)."""
    job = distill_job_start(palace=palace, actor=actor, mode=mode)

    def send() -> None:
        try:
            distill_job_task.delay(job.pk)
        except Exception as exc:  # kombu's OperationalError and whatever the transport raises
            log.warning("could not queue distill job #%d: %s", job.pk, exc)
            reason = f"the task queue (Redis) is unreachable: {type(exc).__name__}; try again later"
            DistillJob.objects.filter(pk=job.pk, state=DistillJob.State.QUEUED).update(
                state=DistillJob.State.FAILED, error=reason, finished_at=timezone.now()
            )

    transaction.on_commit(send)
    return job
