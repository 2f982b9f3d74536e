"""REST door to spaced review: the due queue (cues only — never the body), the due count, reveal and grade."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from api.auth import caller_of
from api.schemas import ErrorOut, ProjectOrigin
from memory.selectors import memory_get
from palace.errors import InvalidInput
from palace.selectors import palace_get
from review import selectors, services

router = Router(tags=["review"])

ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}


class QueueQuery(Schema):
    palace: int | None = None
    project: ProjectOrigin | None = None
    limit: int = Field(default=50, ge=1, le=selectors.QUEUE_MAX)


class QueueItemOut(Schema):
    """A due memory by its cues. There is deliberately no content field: recall first, then reveal."""

    memory: int
    palace: int
    kind: str
    coordinate: str
    placard: str
    due_at: datetime
    days_overdue: int
    repetitions: int


class QueueOut(Schema):
    count: int
    items: list[QueueItemOut]


class DueOut(Schema):
    due: int


class RevealOut(Schema):
    memory: int
    palace: int
    kind: str
    coordinate: str | None
    placard: str
    content: str
    due_at: datetime | None
    repetitions: int
    interval_days: int


class GradeIn(Schema):
    model_config = ConfigDict(extra="forbid")
    grade: int = Field(ge=0, le=5, description="0–5: 5 remembered, 3 hazy, 1 forgot; below 3 resets the schedule")


class CardOut(Schema):
    memory: int
    grade: int | None
    repetitions: int
    interval_days: int
    ease: float
    due_at: datetime
    last_reviewed_at: datetime | None


def _palaces(request: HttpRequest, palace: int | None, project: str | None) -> list[int] | None:
    if palace is None and project is None:
        return None
    if palace is not None and project is not None:
        raise InvalidInput("give palace or project, not both")
    return [palace_get(user=caller_of(request).user, palace_id=palace, origin=project).pk]


@router.get("/queue", response={200: QueueOut, **ERRORS})
def review_queue(request: HttpRequest, q: Query[QueueQuery]) -> dict[str, Any]:
    """Memories due for review, most overdue first: room#slot, placard and days overdue."""
    caller = caller_of(request)
    items = selectors.review_queue(user=caller.user, palace_ids=_palaces(request, q.palace, q.project), limit=q.limit)
    return {
        "count": len(items),
        "items": [
            {
                "memory": i.memory_id,
                "palace": i.palace_id,
                "kind": i.kind,
                "coordinate": i.coordinate,
                "placard": i.placard,
                "due_at": i.due_at,
                "days_overdue": i.days_overdue,
                "repetitions": i.repetitions,
            }
            for i in items
        ],
    }


@router.get("/due", response={200: DueOut, **ERRORS})
def review_due(request: HttpRequest, palace: int | None = None, project: ProjectOrigin | None = None) -> dict[str, int]:
    """How many memories are due now."""
    caller = caller_of(request)
    return {"due": selectors.review_due_count(user=caller.user, palace_ids=_palaces(request, palace, project))}


@router.post("/{int:memory_id}/reveal", response={200: RevealOut, **ERRORS})
def review_reveal(request: HttpRequest, memory_id: int) -> dict[str, Any]:
    """The body, after you have tried to recall it from the cues. Recorded as an access (a read token may)."""
    return _reveal(request, memory_id, record=True)


@router.get("/{int:memory_id}/reveal", response={200: RevealOut, **ERRORS})
def review_reveal_get(request: HttpRequest, memory_id: int) -> dict[str, Any]:
    """The body, as POST answers it, but not recorded: a GET writes nothing (kept for older clients)."""
    return _reveal(request, memory_id, record=False)


def _reveal(request: HttpRequest, memory_id: int, *, record: bool) -> dict[str, Any]:
    caller = caller_of(request)
    token_id = caller.token.pk if caller.token is not None else None
    shown = services.review_reveal(user=caller.user, memory_id=memory_id, token_id=token_id, record=record)
    m = shown.memory
    return {
        "memory": m.pk,
        "palace": m.palace_id,
        "kind": m.kind,
        "coordinate": m.slot.coordinate if m.slot is not None else None,
        "placard": m.placard,
        "content": m.content,
        "due_at": shown.due_at,
        "repetitions": shown.card.repetitions if shown.card is not None else 0,
        "interval_days": shown.card.interval_days if shown.card is not None else 0,
    }


@router.post("/{int:memory_id}/grade", response={200: CardOut, **ERRORS})
def review_grade(request: HttpRequest, memory_id: int, payload: GradeIn) -> dict[str, Any]:
    """Self-rate the recall 0–5 and advance the SM-2 schedule (1 → 6 → round(previous × ease) days)."""
    caller = caller_of(request)
    caller.require_write()
    memory = memory_get(user=caller.user, memory_id=memory_id)
    card = services.review_grade(memory_id=memory.pk, grade=payload.grade, actor=caller.actor)
    return {
        "memory": memory.pk,
        "grade": card.last_grade,
        "repetitions": card.repetitions,
        "interval_days": card.interval_days,
        "ease": card.ease,
        "due_at": card.due_at,
        "last_reviewed_at": card.last_reviewed_at,
    }
