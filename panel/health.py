"""The Today health ring: the honest health report drawn as ring segments. Unknown stays unknown (grey)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from panel import sources

PARTS: dict[str, Promise] = {
    "database": _("database"),
    "migrations": _("migrations"),
    "redis": _("Redis"),
    "celery": _("workers"),
    "embedder": _("embedder"),
    "memories": _("embeddings"),
}
RADIUS = 22
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


def _state(part: dict[str, object]) -> tuple[str, str]:
    ok = part.get("ok")
    reason = str(part.get("reason", "") or "")
    if part.get("without_vector"):
        return "bad", str(_("%(n)s memories have no embedding yet") % {"n": part["without_vector"]})
    return ("ok" if ok is True else "bad" if ok is False else "unknown"), reason


def health_ring() -> Ring:
    try:
        report = sources.health_report()
    except Exception as exc:  # the ring must render even when the report itself fails
        return Ring(status="unknown", segments=[], ok=0, reason=f"{type(exc).__name__}: {exc}"[:200])
    step = CIRCUMFERENCE / len(PARTS)
    segments = []
    for i, (key, label) in enumerate(PARTS.items()):
        part = report.get(key)
        state, reason = _state(part) if isinstance(part, dict) else ("unknown", str(_("not reported")))
        segments.append(Segment(key, str(label), state, reason, dash=step - 2, offset=-i * step))
    return Ring(
        status=str(report.get("status", "unknown")), segments=segments, ok=sum(s.state == "ok" for s in segments)
    )
