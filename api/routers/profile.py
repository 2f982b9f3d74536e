"""The standing profile and the curated profile, over REST.

- `GET /api/v1/profile.txt` (bearer token): the standing profile as plain text for a client's session-start hook —
  the same text as the MCP tool `memory_profile` and the resource `atrium://profile`: wrapped in
  `<atrium_memory_context>`, within the profile's token budget, the curated profile first (yours, then `project`'s
  when asked for).
- `/api/v1/profile/curated` (GET view, PUT edit with `expected_version`), `/history`, `/rollback`: a palace's
  curated profile with its versions (`palace` id or `project` origin; neither: your personal palace).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict

from accounts.caller import Caller
from api.auth import TokenAuth, caller_of
from api.schemas import ErrorOut, ProjectOrigin
from memory.context import (
    CURATED_HISTORY_LIMIT,
    MAX_PROFILE_CHARS,
    curated_block,
    curated_checkout,
    curated_current,
    curated_edit,
    curated_history,
    standing_profile_build,
)
from memory.models import ProfileVersion
from palace.errors import InvalidInput
from palace.models import Palace
from palace.selectors import palace_get, role_in
from review.selectors import review_due_count

router = Router(tags=["profile"])
ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}


def text_response(text: str, *, tokens: float, budget: int, header: str) -> HttpResponse:
    response = HttpResponse(text + "\n", content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "private, no-store"
    response[header] = f"{tokens:g}/{budget}"
    return response


TEXT_RESPONSE = {
    "responses": {200: {"description": "the text", "content": {"text/plain": {"schema": {"type": "string"}}}}}
}


@router.get(
    "/profile.txt",
    auth=TokenAuth(),
    response={200: str, 401: ErrorOut, 404: ErrorOut},
    openapi_extra=TEXT_RESPONSE,
)
def profile_text(request: HttpRequest, project: str | None = None) -> HttpResponse:
    """Your standing profile (personal palace): plain text for injection at session start. With `project` (or,
    without it, the token's default project), that project's curated profile follows yours (a project you are not a
    member of answers 404)."""
    caller = caller_of(request)
    palace = palace_get(user=caller.user)
    chosen = palace_get(user=caller.user, origin=project) if project else caller.default_project()
    palaces = [palace, chosen] if chosen is not None else [palace]
    profile = standing_profile_build(
        user=caller.user,
        palace_id=palace.pk,
        curated=curated_block(palaces=palaces),
        reviews_due=review_due_count(user=caller.user),
    )
    return text_response(profile.text, tokens=profile.tokens, budget=profile.budget, header="X-Atrium-Profile-Tokens")


# --- the curated profile -------------------------------------------------------------------------------------------


class _Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class CuratedVersionOut(Schema):
    version: int
    content: str
    rolled_back_from: int | None
    created_by: str
    created_at: datetime


class CuratedOut(Schema):
    palace: int
    label: str
    version: int = Field(description="0 when there is no curated profile yet")
    content: str
    can_edit: bool


class CuratedEditIn(_Strict):
    palace: int | None = None
    project: ProjectOrigin | None = None
    content: str = Field(max_length=MAX_PROFILE_CHARS)
    expected_version: int = Field(ge=0, le=2**31 - 1, description="the version you read; 0 before the first edit")
    reason: str = Field(default="", max_length=500)


class CuratedRollbackIn(_Strict):
    palace: int | None = None
    project: ProjectOrigin | None = None
    version: int = Field(ge=1, le=2**31 - 1)
    expected_version: int | None = Field(default=None, ge=0, le=2**31 - 1)
    reason: str = Field(default="", max_length=500)


def target_palace(caller: Caller, palace: int | None, project: str | None, *, write: bool) -> Palace:
    if palace is not None and project is not None:
        raise InvalidInput("give palace or project, not both")
    return palace_get(user=caller.user, palace_id=palace, origin=project, write=write)


def version_out(v: ProfileVersion) -> dict[str, Any]:
    return {
        "version": v.version,
        "content": v.content,
        "rolled_back_from": v.rolled_back_from,
        "created_by": v.created_by.get_username() if v.created_by is not None else "",
        "created_at": v.created_at,
    }


def curated_out(caller: Caller, palace: Palace) -> dict[str, Any]:
    current = curated_current(palace_id=palace.pk)
    return {
        "palace": palace.pk,
        "label": palace.label,
        "version": current.version if current is not None else 0,
        "content": current.content if current is not None else "",
        "can_edit": role_in(user=caller.user, palace=palace) in ("owner", "editor") and caller.can_write,
    }


@router.get("/profile/curated", response={200: CuratedOut, **ERRORS})
def curated_view(
    request: HttpRequest, palace: int | None = None, project: ProjectOrigin | None = None
) -> dict[str, Any]:
    """A palace's curated profile: its current text and version (members read it)."""
    caller = caller_of(request)
    return curated_out(caller, target_palace(caller, palace, project, write=False))


class CuratedHistoryQuery(Schema):
    palace: int | None = None
    project: ProjectOrigin | None = None
    limit: int = Field(default=CURATED_HISTORY_LIMIT, ge=1, le=500)


@router.get("/profile/curated/history", response={200: list[CuratedVersionOut], **ERRORS})
def curated_versions(request: HttpRequest, query: Query[CuratedHistoryQuery]) -> list[dict[str, Any]]:
    """The curated profile's versions, newest first."""
    caller = caller_of(request)
    target = target_palace(caller, query.palace, query.project, write=False)
    return [version_out(v) for v in curated_history(palace_id=target.pk, limit=query.limit)]


@router.put("/profile/curated", response={201: CuratedVersionOut, **ERRORS})
def curated_put(request: HttpRequest, payload: CuratedEditIn) -> Status[dict[str, Any]]:
    """Write a new version (writers of the palace). 409 with the current `version` when `expected_version` is
    stale: reload, merge, retry."""
    caller = caller_of(request)
    caller.require_write()
    target = target_palace(caller, payload.palace, payload.project, write=True)
    row = curated_edit(
        palace=target,
        actor=caller.actor,
        content=payload.content,
        expected_version=payload.expected_version,
        reason=payload.reason,
    )
    return Status(201, version_out(row))


@router.post("/profile/curated/rollback", response={201: CuratedVersionOut, **ERRORS})
def curated_rollback(request: HttpRequest, payload: CuratedRollbackIn) -> Status[dict[str, Any]]:
    """Restore an old version as a new one (history is never rewritten)."""
    caller = caller_of(request)
    caller.require_write()
    target = target_palace(caller, payload.palace, payload.project, write=True)
    row = curated_checkout(
        palace=target,
        actor=caller.actor,
        version=payload.version,
        expected_version=payload.expected_version,
        reason=payload.reason,
    )
    return Status(201, version_out(row))
