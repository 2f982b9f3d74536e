"""A run as its doors show it (REST, MCP, the panel's Backfill view), and the live push of its progress.

`backfill_run_view` is the one shape of a run: state, counts, the fraction done, and how its results were produced
(turns by extraction method, session summaries by method, the fallback reasons) — read from the run's own rows, so
every door labels a run the same way. `backfill_progress_publish` tells the run's owner's panel connections that it
moved (palace.events, after the commit that moved it); the panel's consumer re-reads the run and renders it.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count

from capture.models import BackfillRun, CaptureSession, CaptureTurn
from palace.events import publish

EVENT_KIND = "backfill"  # the palace.events kind the panel's consumer answers with the run's fragment
ENDED = (BackfillRun.State.DONE, BackfillRun.State.FAILED, BackfillRun.State.CANCELLED)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def backfill_run_view(*, run: BackfillRun) -> dict[str, Any]:
    """The run for a door: what it is, how far it got, and how its memories were produced (labels)."""
    counts = dict(run.counts or {})
    total = int(counts.get("turns_total") or 0)
    done = int(counts.get("turns_done") or 0)
    turns = CaptureTurn.objects.filter(session__backfill_run=run)
    by_method: Counter[str] = Counter()
    fallbacks: Counter[str] = Counter()
    rows = turns.filter(state=CaptureTurn.State.DONE).values("method", "fallback_reason").annotate(n=Count("pk"))
    for row in rows:
        by_method[row["method"] or "rules"] += row["n"]
        if row["fallback_reason"]:
            fallbacks[row["fallback_reason"]] += row["n"]
    summaries = Counter(
        dict(
            CaptureSession.objects.filter(backfill_run=run)
            .exclude(summary_method="")
            .values_list("summary_method")
            .annotate(n=Count("pk"))
        )
    )
    return {
        "id": run.pk,
        "state": run.state,
        "pause_requested": run.pause_requested,
        "progress": round(done / total, 4) if total else (1.0 if run.state == BackfillRun.State.DONE else 0.0),
        "turns_total": total,
        "turns_done": done,
        "memories": int(counts.get("memories") or 0),
        "episodes": int(counts.get("episodes") or 0),
        "facts": int(counts.get("facts") or 0),
        "sessions": int(counts.get("sessions") or 0),
        "rate": counts.get("rate"),
        "eta_seconds": counts.get("eta_seconds"),
        "sessions_skipped": dict(counts.get("sessions_skipped") or {}),
        "turns_skipped": dict(counts.get("skipped") or {}),
        "extraction": {
            "turns_by_method": dict(by_method),  # "llm" (the configured model) or "rules"
            "fallbacks": dict(fallbacks),  # why the rules ran where a model was configured
            "summaries_by_method": {str(k): v for k, v in summaries.items()},
        },
        "rules": dict(run.rules or {}),
        "estimate": dict(run.estimate or {}),
        "files": list(run.files or []),
        "error": run.error,
        "ended": run.state in ENDED,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
    }


def backfill_progress_publish(*, run: BackfillRun) -> None:
    """Tell the run owner's panel connections that the run moved, once the current transaction commits (at once
    outside one). Never raises: a missed push is repaired by the next page load."""
    run_id, user_id = run.pk, run.user_id
    transaction.on_commit(lambda: publish(kind=EVENT_KIND, payload={"run": run_id}, user_id=user_id))
