"""REST door to the correction loop: decide a pending contradiction, read the judge's recent rulings, and read,
change and test the judge's settings (the judge settings permissions, memory.judge.config; changing and testing
with a write token). The API key is accepted, never returned: reads show a mask."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from api.auth import caller_of
from api.routers.memories import memory_out
from api.schemas import ErrorOut, MergedContent
from memory.judge import (
    adjudication_why,
    adjudications_recent,
    judge_settings_public,
    judge_settings_require,
    judge_settings_update,
    judge_test_connection,
)
from memory.lifecycle import edge_resolve
from memory.models import MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, Adjudication
from palace.selectors import palace_get

router = Router(tags=["judge"])

SOURCE = "rest"
ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}


class _Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class ResolveIn(_Strict):
    decision: Literal["keep_newer", "keep_older", "both_stand", "merge"]
    reason: str = ""
    content: MergedContent = ""


class ResolveOut(Schema):
    edge: int
    decision: str
    status: str
    newer: int
    older: int
    new_memory: dict[str, Any] | None


class AdjudicationOut(Schema):
    id: int
    palace: int
    created_at: datetime
    verdict: str
    contradiction: bool
    p_same: float | None
    p_contradiction: float | None
    similarity: float
    model_took_part: bool
    model_name: str
    elapsed_ms: int
    fallback_reason: str
    reason: str
    why: str
    new_memory: int | None
    neighbour: int | None
    new_text: str
    edge: int | None


class AdjudicationsQuery(Schema):
    palace: int | None = None
    verdict: Literal["merge", "accept", "defer"] | None = None
    model: bool | None = Field(default=None, description="true: the model took part; false: the rules ruled")
    fallback_reason: str | None = None
    limit: int = Field(default=50, ge=1, le=200)


class SettingsOut(Schema):
    enabled: bool
    active: bool
    base_url: str
    model: str
    timeout_ms: int
    api_key_set: bool
    api_key_mask: str
    merge_at: float
    accept_at: float
    contradiction_at: float
    updated_at: datetime


class SettingsIn(_Strict):
    enabled: bool
    base_url: str = ""
    model: str = ""
    timeout_ms: int = Field(default=3000, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS)
    api_key: str = Field(default="", description="Empty keeps the stored key.")
    clear_key: bool = False


class TestIn(_Strict):
    base_url: str
    model: str
    timeout_ms: int = Field(default=3000, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS)
    api_key: str = Field(
        default="", description="Empty uses the stored key, and only when base_url is the stored endpoint."
    )


class TestOut(Schema):
    reachable: bool
    model: str
    elapsed_ms: int
    error: str = Field(description="A status code or an error class; never the endpoint's reply.")
    key: Literal["typed", "stored", "none"] = Field(description="Which API key was sent.")


@router.post("/edges/{int:edge_id}/resolve", response={200: ResolveOut, **ERRORS})
def edges_resolve(request: HttpRequest, edge_id: int, payload: ResolveIn) -> dict[str, Any]:
    """Decide a pending contradiction: keep_newer | keep_older | both_stand (a reason) | merge (`content`)."""
    caller = caller_of(request)
    caller.require_write()
    result = edge_resolve(
        edge_id=edge_id,
        decision=payload.decision,
        actor=caller.actor,
        reason=payload.reason,
        content=payload.content,
        source=SOURCE,
    )
    return {
        "edge": result.edge.pk,
        "decision": result.decision,
        "status": result.edge.status,
        "newer": result.newer_id,
        "older": result.older_id,
        "new_memory": memory_out(result.new_memory) if result.new_memory is not None else None,
    }


def adjudication_out(a: Adjudication) -> dict[str, Any]:
    return {
        "id": a.pk,
        "palace": a.palace_id,
        "created_at": a.created_at,
        "verdict": a.verdict,
        "contradiction": a.contradiction,
        "p_same": a.p_same,
        "p_contradiction": a.p_contradiction,
        "similarity": a.similarity,
        "model_took_part": a.model_took_part,
        "model_name": a.model_name,
        "elapsed_ms": a.elapsed_ms,
        "fallback_reason": a.fallback_reason,
        "reason": a.reason,
        "why": adjudication_why(a),
        "new_memory": a.new_memory_id,
        "neighbour": a.neighbour_id,
        "new_text": a.new_text,
        "edge": a.edge_id,
    }


@router.get("/judge/adjudications", response={200: list[AdjudicationOut], **ERRORS})
def judge_adjudications(request: HttpRequest, filters: Query[AdjudicationsQuery]) -> list[dict[str, Any]]:
    """The judge's recent rulings in a palace (default: your personal palace), newest first."""
    caller = caller_of(request)
    palace = palace_get(user=caller.user, palace_id=filters.palace)
    rows = adjudications_recent(
        palace_ids=[palace.pk],
        verdict=filters.verdict,
        model_took_part=filters.model,
        fallback_reason=filters.fallback_reason,
        limit=filters.limit,
    )
    return [adjudication_out(a) for a in rows]


@router.get("/judge/settings", response={200: SettingsOut, **ERRORS})
def judge_settings_get(request: HttpRequest) -> dict[str, Any]:
    """The judge's settings (memory.view_judgesettings): the API key only as a mask."""
    caller = caller_of(request)
    judge_settings_require(caller.actor, change=False)
    return judge_settings_public()


@router.put("/judge/settings", response={200: SettingsOut, **ERRORS})
def judge_settings_put(request: HttpRequest, payload: SettingsIn) -> dict[str, Any]:
    """Change the judge's settings (memory.change_judgesettings, a write token). On without a key stays off; a new
    endpoint needs the key again. Takes effect at the next save."""
    caller = caller_of(request)
    caller.require_write()
    return judge_settings_update(actor=caller.actor, **payload.model_dump())


@router.post("/judge/test", response={200: TestOut, **ERRORS})
def judge_test(request: HttpRequest, payload: TestIn) -> dict[str, Any]:
    """Try the values as given (nothing is stored; memory.change_judgesettings, a write token): reachability,
    model, round trip and which key was sent."""
    caller = caller_of(request)
    caller.require_write()  # it may send the stored key: the same token scope as changing the settings
    report = judge_test_connection(actor=caller.actor, **payload.model_dump())
    return {
        "reachable": report.reachable,
        "model": report.model,
        "elapsed_ms": report.elapsed_ms,
        "error": report.error,
        "key": report.key,
    }
