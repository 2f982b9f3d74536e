"""The live handoff and the session bootstrap block over REST: `GET /api/v1/bootstrap.txt` (bearer token, for a
session-start hook), and `/api/v1/handoff` (GET current, PUT save with `expected_version`), `/history`,
`/checkout`. A handoff is the caller's own: another member of the same project never sees it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict

from api.auth import TokenAuth, caller_of
from api.routers.profile import ERRORS, TEXT_RESPONSE, target_palace, text_response
from api.schemas import ErrorOut, ProjectOrigin
from memory import context
from memory.context import (
    BOOTSTRAP_MIN_TOKEN_BUDGET,
    BOOTSTRAP_TOKEN_BUDGET,
    HANDOFF_HISTORY_LIMIT,
    MAX_DOING_CHARS,
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    HandoffInput,
    bootstrap_build,
    handoff_current,
    handoff_history,
    handoff_save,
)
from memory.models import HandoffVersion
from palace.models import Palace
from palace.selectors import palace_get

router = Router(tags=["handoff"])
Line = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]


@router.get(
    "/bootstrap.txt",
    auth=TokenAuth(),
    response={200: str, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut},
    openapi_extra=TEXT_RESPONSE,
)
def bootstrap_text(
    request: HttpRequest,
    project: str | None = None,
    budget: int = Query(BOOTSTRAP_TOKEN_BUDGET, ge=BOOTSTRAP_MIN_TOKEN_BUDGET, le=8192),
) -> HttpResponse:
    """The session bootstrap block as plain text: your handoff in the palace (`project`, else the token's default
    project, else your personal palace), the curated profiles, then recent memories, within `budget` tokens, wrapped
    like every recall."""
    caller = caller_of(request)
    personal = palace_get(user=caller.user)
    palace = palace_get(user=caller.user, origin=project) if project else (caller.default_project() or personal)
    block = bootstrap_build(actor=caller.actor, palace=palace, personal=personal, budget=budget)
    response = text_response(block.text, tokens=block.tokens, budget=block.budget, header="X-Atrium-Bootstrap-Tokens")
    response["X-Atrium-Handoff-Version"] = str(block.handoff_version)
    return response


class _Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class HandoffRestOut(Schema):
    palace: int
    label: str
    version: int = Field(description="0 when none is saved yet")
    doing: str
    next_steps: list[str]
    open_questions: list[str]
    files: list[str]
    restored_from: int | None
    created_at: datetime | None


class HandoffSaveIn(_Strict):
    palace: int | None = None
    project: ProjectOrigin | None = None
    expected_version: int = Field(ge=0, le=2**31 - 1, description="the version you loaded; 0 before the first save")
    doing: str = Field(default="", max_length=MAX_DOING_CHARS)
    next_steps: list[Line] = Field(default_factory=list, max_length=MAX_ITEMS)
    open_questions: list[Line] = Field(default_factory=list, max_length=MAX_ITEMS)
    files: list[Line] = Field(default_factory=list, max_length=MAX_ITEMS)


class HandoffCheckoutIn(_Strict):
    palace: int | None = None
    project: ProjectOrigin | None = None
    version: int = Field(ge=1, le=2**31 - 1)
    expected_version: int | None = Field(default=None, ge=0, le=2**31 - 1)
    reason: str = Field(default="", max_length=500)


class HandoffQuery(Schema):
    palace: int | None = None
    project: ProjectOrigin | None = None
    limit: int = Field(default=HANDOFF_HISTORY_LIMIT, ge=1, le=500)


def handoff_out(row: HandoffVersion | None, palace: Palace) -> dict[str, Any]:
    base = {"palace": palace.pk, "label": palace.label}
    if row is None:
        return base | {
            "version": 0,
            "doing": "",
            "next_steps": [],
            "open_questions": [],
            "files": [],
            "restored_from": None,
            "created_at": None,
        }
    return base | {
        "version": row.version,
        "doing": row.doing,
        "next_steps": list(row.next_steps),
        "open_questions": list(row.open_questions),
        "files": list(row.files),
        "restored_from": row.restored_from,
        "created_at": row.created_at,
    }


@router.get("/handoff", response={200: HandoffRestOut, **ERRORS})
def handoff_load(request: HttpRequest, where: Query[HandoffQuery]) -> dict[str, Any]:
    """Your current handoff in a palace (version 0 when none is saved)."""
    caller = caller_of(request)
    palace = target_palace(caller, where.palace, where.project, write=False)
    return handoff_out(handoff_current(palace_id=palace.pk, actor=caller.actor), palace)


@router.get("/handoff/history", response={200: list[HandoffRestOut], **ERRORS})
def handoff_versions(request: HttpRequest, where: Query[HandoffQuery]) -> list[dict[str, Any]]:
    """Your handoff's snapshots in a palace, newest first."""
    caller = caller_of(request)
    palace = target_palace(caller, where.palace, where.project, write=False)
    rows = handoff_history(palace_id=palace.pk, actor=caller.actor, limit=where.limit)
    return [handoff_out(row, palace) for row in rows]


@router.put("/handoff", response={201: HandoffRestOut, **ERRORS})
def handoff_put(request: HttpRequest, payload: HandoffSaveIn) -> Status[dict[str, Any]]:
    """Save your handoff as a new version (the prior snapshot is kept). 409 with the current `version` when
    `expected_version` is stale."""
    caller = caller_of(request)
    caller.require_write()
    palace = target_palace(caller, payload.palace, payload.project, write=True)
    data = HandoffInput(
        doing=payload.doing,
        next_steps=payload.next_steps,
        open_questions=payload.open_questions,
        files=payload.files,
    )
    row = handoff_save(palace=palace, actor=caller.actor, data=data, expected_version=payload.expected_version)
    return Status(201, handoff_out(row, palace))


@router.post("/handoff/checkout", response={201: HandoffRestOut, **ERRORS})
def handoff_checkout(request: HttpRequest, payload: HandoffCheckoutIn) -> Status[dict[str, Any]]:
    """Revert forward: a new version with an earlier snapshot's content; no snapshot is lost."""
    caller = caller_of(request)
    caller.require_write()
    palace = target_palace(caller, payload.palace, payload.project, write=True)
    row = context.handoff_checkout(
        palace=palace,
        actor=caller.actor,
        version=payload.version,
        expected_version=payload.expected_version,
        reason=payload.reason,
    )
    return Status(201, handoff_out(row, palace))
