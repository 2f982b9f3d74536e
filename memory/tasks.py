"""Celery tasks: thin doors over memory/jobs/distill.py. Queue them with the enqueue_* helpers, which wait for the
surrounding transaction to commit so a worker never looks for rows that are not there yet.

The beat schedule lives in django-celery-beat's tables (migration memory/0003_periodic_jobs), editable in the admin.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction

from memory.jobs import decay_run, distill_proposals_store, distill_run, embeddings_backfill

log = logging.getLogger(__name__)

DECAY_TASK = "memory.decay"
BACKFILL_TASK = "memory.embeddings_backfill"
DISTILL_TASK = "memory.distill"


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


def enqueue_embeddings_backfill() -> None:
    """Ask a worker to embed the rows saved without a vector, once the current transaction commits."""
    transaction.on_commit(lambda: embeddings_backfill_task.delay())
