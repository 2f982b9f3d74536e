"""Celery doors over capture/processing.py: extract a session's pending turns (queued by the capture endpoint after
its commit), and the beat's replay of the turns a failed attempt left pending."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import transaction

from capture.processing import capture_pending_sessions, capture_session_process

log = logging.getLogger(__name__)

PROCESS_TASK = "capture.process"
REPLAY_TASK = "capture.replay"
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
