"""Backfill: past sessions imported from transcripts (capture.importers parses them) as a run on the worker.

start.py: reading transcripts (server paths, or `(name, bytes)` uploads), the zero-cost estimate with the palace each
session goes to, storing a run's kept turns, pause and resume, the user's runs. run.py: the run itself, in batches,
crash-safe (the Celery door is capture/tasks.py: `enqueue_backfill_run` after `backfill_start` or `backfill_resume`).
progress.py: a run as the doors show it (REST, MCP, the panel) and the live push of its progress.
"""

from __future__ import annotations

from capture.backfill.progress import EVENT_KIND, backfill_progress_publish, backfill_run_view
from capture.backfill.run import RunResult, backfill_requeue_stale, backfill_run_process
from capture.backfill.start import (
    ALREADY_IMPORTED,
    LIVE_ALREADY,
    BackfillEstimate,
    SessionPlan,
    Transcripts,
    backfill_estimate,
    backfill_pause,
    backfill_read_paths,
    backfill_read_uploads,
    backfill_resume,
    backfill_run_get,
    backfill_runs,
    backfill_start,
    rules_as_dict,
)

__all__ = [
    "ALREADY_IMPORTED",
    "EVENT_KIND",
    "LIVE_ALREADY",
    "BackfillEstimate",
    "RunResult",
    "SessionPlan",
    "Transcripts",
    "backfill_estimate",
    "backfill_pause",
    "backfill_progress_publish",
    "backfill_read_paths",
    "backfill_read_uploads",
    "backfill_requeue_stale",
    "backfill_resume",
    "backfill_run_get",
    "backfill_run_process",
    "backfill_run_view",
    "backfill_runs",
    "backfill_start",
    "rules_as_dict",
]
