"""The Today health ring: the honest health report drawn as ring segments. Unknown stays unknown (grey).

The report waits up to a second for Celery workers to answer a ping, and a sync view that waits blocks the ASGI
server's sync thread for everyone. So the ring shows the latest measurement (at most FRESH_SECONDS old, its time
in the tooltip) and measures again in a background thread when that one is stale; before the first measurement
the ring is grey ("measuring") and polls until it arrives.

Reasons (error text, counts) are shown to staff only, like the REST route's details; everyone sees each part's state.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db import connections
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from ops.health import health_cached

PARTS: dict[str, Promise] = {
    "database": _("database"),
    "migrations": _("migrations"),
    "redis": _("Redis"),
    "celery": _("workers"),
    "embedder": _("embedder"),
    "memories": _("embeddings"),
}
RADIUS = 22
FRESH_SECONDS = 30
KEEP_SECONDS = 3600  # an older measurement is not shown at all
CACHE_KEY = "atrium:panel:health"
LOCK_KEY = "atrium:panel:health:measuring"
# Tests measure in the request (deterministic); a server measures in the background.
MEASURE_IN_BACKGROUND = True

CIRCUMFERENCE = 2 * math.pi * RADIUS


@dataclass
class Segment:
    key: str
    label: str
    state: str  # ok | bad | unknown
    reason: str
    dash: float
    offset: float


@dataclass
class Ring:
    status: str  # ok | degraded | down | unknown
    segments: list[Segment]
    ok: int
    reason: str = ""
    measured_at: float | None = None  # epoch seconds; None while the first measurement runs


def _state(part: dict[str, object]) -> tuple[str, str]:
    ok = part.get("ok")
    reason = str(part.get("reason", "") or "")
    if part.get("without_vector"):
        return "bad", str(_("%(n)s memories have no embedding yet") % {"n": part["without_vector"]})
    return ("ok" if ok is True else "bad" if ok is False else "unknown"), reason


def measure() -> dict[str, Any]:
    """Run the health report now and keep it for the next renders."""
    try:
        report = health_cached()
    except Exception as exc:  # the ring must render even when the report itself fails
        report = {"status": "unknown", "error": f"{type(exc).__name__}: {exc}"[:200]}
    found = {"at": time.time(), "report": report}
    cache.set(CACHE_KEY, found, KEEP_SECONDS)
    return found


def _in_background() -> None:
    try:
        measure()
    finally:
        cache.delete(LOCK_KEY)
        connections.close_all()  # this thread's own connections


def _start(target: Callable[[], None]) -> None:
    threading.Thread(target=target, name="atrium-health", daemon=True).start()


def health_ring(*, detail: bool = False) -> Ring:
    """The ring; `detail` (staff) adds each part's reason to its tooltip."""
    found = cache.get(CACHE_KEY)
    if not MEASURE_IN_BACKGROUND:
        found = measure()
    elif (found is None or time.time() - found["at"] > FRESH_SECONDS) and cache.add(LOCK_KEY, 1, 60):
        _start(_in_background)  # the lock: one measurement at a time
    if found is None:
        return Ring(status="measuring", segments=[], ok=0)
    return _ring(found["report"], measured_at=found["at"], detail=detail)


def _ring(report: dict[str, Any], *, measured_at: float, detail: bool) -> Ring:
    if "error" in report:
        reason = report["error"] if detail else ""
        return Ring(status="unknown", segments=[], ok=0, reason=reason, measured_at=measured_at)
    step = CIRCUMFERENCE / len(PARTS)
    segments = []
    for i, (key, label) in enumerate(PARTS.items()):
        part = report.get(key)
        state, reason = _state(part) if isinstance(part, dict) else ("unknown", str(_("not reported")))
        segments.append(Segment(key, str(label), state, reason if detail else "", dash=step - 2, offset=-i * step))
    return Ring(
        status=str(report.get("status", "unknown")),
        segments=segments,
        ok=sum(s.state == "ok" for s in segments),
        measured_at=measured_at,
    )
