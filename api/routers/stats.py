"""REST door to whole-palace statistics: counts, signal ratio, the room directory and the due count."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from api.auth import caller_of
from api.schemas import ErrorOut, ProjectOrigin
from palace.errors import InvalidInput
from palace.selectors import palace_get
from review.selectors import memory_overview

router = Router(tags=["stats"])

ERRORS: dict[int, Any] = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut}


class RoomStatsOut(Schema):
    id: int
    name: str
    kind: str
    ordinal: int
    capacity: int
    slots_used: int
    active: int
    latest_placard: str


class StatsOut(Schema):
    palace_id: int
    total: int
    by_status: dict[str, int]
    by_kind: dict[str, int]
    without_vector: int
    unslotted: int
    review_enrolled: int
    review_due: int
    pending_contradictions: int
    created_last_7_days: int
    signal_ratio: float | None
    signal_reason: str
    rooms: list[RoomStatsOut]


@router.get("", response={200: StatsOut, **ERRORS})
def stats(request: HttpRequest, palace: int | None = None, project: ProjectOrigin | None = None) -> dict[str, Any]:
    """Statistics of one palace (`palace` id or `project` origin; your personal palace when neither).
    `signal_ratio` is the share of active memories retrieved at least once, null when there are none."""
    if palace is not None and project is not None:
        raise InvalidInput("give palace or project, not both")
    caller = caller_of(request)
    target = palace_get(user=caller.user, palace_id=palace, origin=project)
    overview = memory_overview(user=caller.user, palaces=[target], rooms=True)
    s = overview.stats
    return {
        "palace_id": target.pk,
        "total": s.total,
        "by_status": s.by_status,
        "by_kind": s.by_kind,
        "without_vector": s.without_vector,
        "unslotted": s.unslotted,
        "review_enrolled": s.review_enrolled,
        "review_due": overview.reviews_due,  # the public key; `reviews_due` inside
        "pending_contradictions": s.pending_contradictions,
        "created_last_7_days": s.created_last_7_days,
        "signal_ratio": s.signal_ratio,
        "signal_reason": s.signal_reason,
        "rooms": [asdict(r) for r in overview.rooms],
    }
