"""Celery doors over capture/processing.py: extract a session's pending turns (queued by the capture endpoint after
its commit), and the beat's replay of the turns a failed attempt left pending; and over capture/backfill: a backfill
run, acknowledged late and queued again at worker start when a dead worker left it running."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.db import connection, transaction

from capture.backfill import backfill_requeue_stale, backfill_run_process
from capture.processing import capture_pending_sessions, capture_session_process

log = logging.getLogger(__name__)

PROCESS_TASK = "capture.process"
REPLAY_TASK = "capture.replay"
BACKFILL_TASK = "capture.backfill_run"
BUSY_RETRY_S = 10  # another worker holds the session: ask again shortly, so turns it did not see are not left
BUSY_RETRIES = 6


@shared_task(name=PROCESS_TASK, ignore_result=True, bind=True, max_retries=BUSY_RETRIES)
def capture_process(self: Any, session_id: int) -> dict[str, Any]:
    result = capture_session_process(session_id=session_id)
    if result.busy:
        raise self.retry(countdown=BUSY_RETRY_S)
    log.info(
        "capture session %s: %d done, %d skipped, %d to retry, %d failed",
        session_id,
        result.done,
        result.skipped,
        result.retry,
        result.failed,
    )
    return {"done": result.done, "skipped": result.skipped, "retry": result.retry, "failed": result.failed}


@shared_task(name=REPLAY_TASK, ignore_result=True)
def capture_replay() -> dict[str, Any]:
    """Every session with pending turns, processed here, one after the other (a busy one is being processed)."""
    sessions = capture_pending_sessions()
    for session_id in sessions:
        capture_session_process(session_id=session_id)
    return {"sessions": len(sessions)}


def enqueue_capture_process(session_id: int) -> None:
    """Ask a worker to extract the session's pending turns once the current transaction commits (at once outside
    one). A broker that is down raises here, so the door can say the turns wait for the replay."""
    transaction.on_commit(lambda: capture_process.delay(session_id))


# acks_late: a run's message stays unacknowledged until it ends, so a lost worker's run is delivered again; the
# worker_ready requeue below does not wait for the broker's visibility timeout (an hour on Redis) to find it.
@shared_task(name=BACKFILL_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def backfill_run(run_id: int) -> dict[str, Any]:
    result = backfill_run_process(run_id=run_id)
    log.info(
        "backfill run %s: %s (%d turns in %d batches)", run_id, result.state or "busy", result.turns, result.batches
    )
    return {"state": result.state, "busy": result.busy, "turns": result.turns}


def enqueue_backfill_run(run_id: int) -> None:
    """Ask a worker to run (or continue) the backfill run once the current transaction commits: the doors call it
    after backfill_start and backfill_resume."""
    transaction.on_commit(lambda: backfill_run.delay(run_id))


@worker_ready.connect
def _requeue_stale_backfills(**_: object) -> None:
    """A worker that starts queues the runs a dead worker left running (their advisory lock is free); a run still
    held by a live worker is left to it, and a duplicate message finds the run done or busy and does nothing."""
    from palace import rls

    try:
        with rls.acting_as_system("worker start: stale backfill runs"):
            for run_id in backfill_requeue_stale():
                log.info("backfill run %s was left by a stopped worker: queued again", run_id)
                backfill_run.delay(run_id)
    except Exception:  # a worker must start even when the database is not there yet
        log.exception("could not look for stale backfill runs")
    finally:
        connection.close()  # the main process keeps no connection its pool's forks would share
