"""REST door to the ledger: op rows of the palaces you may read, and your own account-level rows (tokens)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from api.auth import caller_of
from api.schemas import ErrorOut, Instant, ProjectOrigin
from palace.errors import InvalidInput
from palace.selectors import OPLOG_PAGE_MAX, oplog_page, palace_get

router = Router(tags=["oplog"])

MAX_LIMIT = OPLOG_PAGE_MAX


class OpLogQuery(Schema):
    palace: int | None = None
    project: ProjectOrigin | None = None
    op: str | None = Field(default=None, description="an op name (memory.save) or a prefix ending in '.' (memory.)")
    since: Instant | None = None
    before: int | None = Field(default=None, description="only rows with a smaller id (the next page)")
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT)


class OpOut(Schema):
    id: int
    op: str
    actor_kind: str
    actor_name: str
    actor_token_label: str
    palace: int | None
    target_kind: str
    target_id: int | None
    reason: str
    detail: dict[str, Any]
    request_id: str
    created_at: datetime


class OpPageOut(Schema):
    items: list[OpOut]
    next_before: int | None


@router.get("", response={200: OpPageOut, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut})
def oplog_list(request: HttpRequest, filters: Query[OpLogQuery]) -> dict[str, Any]:
    """Newest first. Without `palace`/`project`: every palace you may read plus your own account-level rows."""
    caller = caller_of(request)
    if filters.palace is not None and filters.project is not None:
        raise InvalidInput("give palace or project, not both")
    palaces = None
    if filters.palace is not None or filters.project is not None:
        palaces = [palace_get(user=caller.user, palace_id=filters.palace, origin=filters.project)]
    page = oplog_page(
        user=caller.user,
        palaces=palaces,
        op=filters.op,
        since=filters.since,
        before=filters.before,
        limit=filters.limit,
    )
    items = [
        {
            "id": r.pk,
            "op": r.op,
            "actor_kind": r.actor_kind,
            "actor_name": r.actor_name,
            "actor_token_label": r.actor_token_label,
            "palace": r.palace_id,
            "target_kind": r.target_kind,
            "target_id": r.target_id,
            "reason": r.reason,
            "detail": r.detail,
            "request_id": r.request_id,
            "created_at": r.created_at,
        }
        for r in page.items
    ]
    return {"items": items, "next_before": page.next_before}
