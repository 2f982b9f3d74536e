"""REST door to the memory services: save (one or a batch), list, get, correct, forget, restore, report, check out
an earlier version, undo a distillation.

Palaces are addressed by `palace` (id) or `project` (a git origin, any spelling); neither means the caller's
personal palace for writes and every readable palace for the list. The acting user and token come from the
session or the bearer token; provenance source "rest" is stamped here, never taken from the request.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict

from accounts.caller import Caller
from api.auth import caller_of
from api.schemas import ErrorOut, Instant, MemoryContent, Placard, ProjectOrigin, zone_note
from memory.jobs import distill_revert
from memory.lifecycle import memory_checkout, memory_forget, memory_report, memory_restore, memory_update
from memory.models import Memory
from memory.save import MAX_BATCH_ITEMS, SaveResult, memory_save, memory_save_batch
from memory.selectors import MAX_PAGE, memory_get, memory_list, memory_successor_id
from palace.errors import InvalidInput
from palace.kinds import KindName
from palace.models import Palace
from palace.selectors import palace_get

router = Router(tags=["memories"])

SOURCE = "rest"
ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}


class _Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class EntityIn(_Strict):
    """An entity the memory is about, stated by the caller (linked with source "agent")."""

    name: str = Field(min_length=1, max_length=200)
    kind: str | None = Field(default=None, max_length=32)
    aliases: list[str] = Field(default_factory=list, max_length=20)


class EntityTagOut(Schema):
    id: int
    name: str
    kind: str
    source: str


class ItemIn(_Strict):
    content: MemoryContent
    kind: KindName = "fact"
    placard: Placard = ""
    occurred_at: Instant | None = None
    speaker: str = ""
    source_session: str = ""
    source_turn: str = ""
    source_seq: int | None = None
    importance: float | None = None
    restore: bool = False
    entities: list[EntityIn] | None = Field(default=None, max_length=20)


class SaveIn(_Strict):
    """One memory (`content`, `kind`, …) or a batch (`items`, up to 10), into `palace` or `project`."""

    palace: int | None = None
    project: ProjectOrigin | None = None
    content: MemoryContent | None = None
    kind: KindName = "fact"
    placard: Placard = ""
    occurred_at: Instant | None = None
    speaker: str = ""
    source_session: str = ""
    source_turn: str = ""
    source_seq: int | None = None
    importance: float | None = None
    restore: bool = False  # content restating a forgotten memory restores it (else: defer, nothing saved)
    entities: list[EntityIn] | None = Field(default=None, max_length=20)
    items: list[ItemIn] | None = Field(default=None, min_length=1, max_length=MAX_BATCH_ITEMS)


class MemoryOut(Schema):
    id: int
    palace: int
    kind: str
    content: str
    placard: str
    status: str
    confidence: float
    importance: float
    hit_count: int
    last_accessed_at: datetime | None
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    version: int
    supersedes: int | None
    slot: str | None
    speaker: str
    source: dict[str, Any]
    sources: list[dict[str, Any]]
    redactions: list[str]
    epitaph: str
    embedded: bool
    review_enrolled: bool


class MemoryDetailOut(MemoryOut):
    superseded_by: int | None


class SaveOut(Schema):
    disposition: str
    memory: MemoryOut | None
    merged_into: int | None
    contradicts: list[int]
    edges: list[int]
    redactions: list[str]
    degraded: list[str]
    hint: str
    forgotten: int | None = None
    restored: bool = False
    entities: list[EntityTagOut] = []
    entities_by: str = Field(default="", description="who found the mentions in the text: rules | model")
    entities_fallback: str = Field(default="", description="timeout | failed: the model did not answer, rules ran")
    entities_error: str = Field(default="", description="linking failed; the memory was saved all the same")
    entities_note: str = Field(
        default="", description="a name created beside an entity one of its aliases names: merge them if they are one"
    )
    time_zone_note: str | None = Field(
        default=None, description="which date fields had no time zone, and the zone they were read in"
    )


class ItemErrorOut(Schema):
    index: int
    error: dict[str, str]


class BatchOut(Schema):
    count: int
    failed: int
    items: list[SaveOut | ItemErrorOut]
    time_zone_note: str | None = Field(
        default=None, description="which date fields had no time zone, and the zone they were read in"
    )


class PageOut(Schema):
    items: list[MemoryOut]
    next_cursor: str | None


class ListQuery(Schema):
    palace: int | None = None
    project: ProjectOrigin | None = None
    kind: KindName | None = None
    status: Literal["active", "archived", "forgotten", "superseded", "any"] = "active"
    room: str | None = None
    cursor: str | None = None
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)


class UpdateIn(_Strict):
    content: MemoryContent
    placard: Placard | None = None
    kind: KindName | None = None
    expected_version: int | None = None
    reason: str = ""


class DistillUndoOut(Schema):
    rule: MemoryOut
    restored: list[int]


class ReasonIn(_Strict):
    reason: str = ""


class ReportIn(_Strict):
    outcome: Literal["success", "failure"]
    note: str = ""


def memory_out(m: Memory) -> dict[str, Any]:
    return {
        "id": m.pk,
        "palace": m.palace_id,
        "kind": m.kind,
        "content": m.content,
        "placard": m.placard,
        "status": m.status,
        "confidence": m.confidence,
        "importance": m.importance,
        "hit_count": m.hit_count,
        "last_accessed_at": m.last_accessed_at,
        "occurred_at": m.occurred_at,
        "created_at": m.created_at,
        "updated_at": m.updated_at,
        "version": m.version,
        "supersedes": m.supersedes_id,
        "slot": m.slot.coordinate if m.slot_id is not None and m.slot is not None else None,
        "speaker": m.speaker,
        "source": {
            "kind": m.source_kind,
            "session": m.source_session,
            "turn": m.source_turn,
            "seq": m.source_seq,
            "user_id": m.created_by_id,
            "token_id": m.created_by_token_id,
        },
        "sources": m.sources,
        "redactions": m.redactions,
        "epitaph": m.epitaph,
        "embedded": m.embedding is not None,
        "review_enrolled": m.review_enrolled,
    }


def save_out(r: SaveResult) -> dict[str, Any]:
    linked = r.entities
    return {
        "disposition": r.disposition,
        "memory": memory_out(r.memory) if r.memory is not None else None,
        "merged_into": r.merged_into,
        "contradicts": r.contradicts,
        "edges": r.edges,
        "redactions": r.redactions,
        "degraded": r.degraded,
        "hint": r.hint,
        "forgotten": r.forgotten,
        "restored": r.restored,
        "entities": [vars(t) for t in linked.tags] if linked is not None else [],
        "entities_by": linked.by if linked is not None else "",
        "entities_fallback": linked.fallback if linked is not None else "",
        "entities_error": linked.error if linked is not None else "",
        "entities_note": linked.note() if linked is not None else "",
    }


def _palace(caller: Caller, palace: int | None, project: str | None, *, write: bool) -> Palace:
    if palace is not None and project is not None:
        raise InvalidInput("give palace or project, not both")
    return palace_get(user=caller.user, palace_id=palace, origin=project, write=write)


@router.post("", response={200: SaveOut | BatchOut, 201: SaveOut, **ERRORS})
def memories_save(request: HttpRequest, payload: SaveIn) -> Status[dict[str, Any]]:
    """Save one memory, or up to 10 `items`. Each gets a disposition: accept | merge | defer | drop.

    A new row answers 201; a merge, a drop and a batch answer 200 (a batch reports per item, with `failed`).
    Content that restates a forgotten memory is deferred with nothing saved (200, `forgotten` names it, the hint
    carries its epitaph) unless `restore` is true, which restores it (200, `restored`). `importance` (0–1) wins
    over the server's rule.
    """
    caller = caller_of(request)
    caller.require_write()
    if (payload.content is None) == (payload.items is None):
        raise InvalidInput("send either content (one memory) or items (a batch), not both or neither")
    if payload.items is not None and payload.entities is not None:
        raise InvalidInput("with items, give each item its own entities")
    palace = _palace(caller, payload.palace, payload.project, write=True)
    if payload.items is not None:
        batch = memory_save_batch(
            palace=palace, actor=caller.actor, items=[i.model_dump() for i in payload.items], source=SOURCE
        )
        items = [
            save_out(r)
            if isinstance(r, SaveResult)
            else {"index": r.index, "error": {"code": r.code, "message": r.message}}
            for r in batch.items
        ]
        note = zone_note(**{f"items[{i}].occurred_at": item.occurred_at for i, item in enumerate(payload.items)})
        return Status(200, {"count": batch.count, "failed": batch.failed, "items": items, "time_zone_note": note})
    result = memory_save(
        palace=palace,
        actor=caller.actor,
        content=payload.content or "",
        kind=payload.kind,
        placard=payload.placard,
        source=SOURCE,
        occurred_at=payload.occurred_at,
        speaker=payload.speaker,
        source_session=payload.source_session,
        source_turn=payload.source_turn,
        source_seq=payload.source_seq,
        importance=payload.importance,
        restore=payload.restore,
        entities=[e.model_dump() for e in payload.entities] if payload.entities is not None else None,
    )
    created = result.disposition in ("accept", "defer") and result.forgotten is None
    note = zone_note(occurred_at=payload.occurred_at)
    return Status(201 if created else 200, {**save_out(result), "time_zone_note": note})


@router.get("", response={200: PageOut, **ERRORS})
def memories_list(request: HttpRequest, filters: Query[ListQuery]) -> dict[str, Any]:
    """Memories you may read, newest first. Pass `next_cursor` back as `cursor` for the next page."""
    caller = caller_of(request)
    palaces = None
    if filters.palace is not None or filters.project is not None:
        palaces = [_palace(caller, filters.palace, filters.project, write=False)]
    room: str | int | None = filters.room
    if filters.room is not None and filters.room.isascii() and filters.room.isdigit():  # not "²"
        room = int(filters.room)
    page = memory_list(
        user=caller.user,
        palaces=palaces,
        kind=filters.kind,
        room=room,
        status=None if filters.status == "any" else filters.status,
        cursor=filters.cursor,
        limit=filters.limit,
    )
    return {"items": [memory_out(m) for m in page.items], "next_cursor": page.next_cursor}


@router.get("/{int:memory_id}", response={200: MemoryDetailOut, **ERRORS})
def memories_get(request: HttpRequest, memory_id: int) -> dict[str, Any]:
    caller = caller_of(request)
    memory = memory_get(user=caller.user, memory_id=memory_id)
    return {**memory_out(memory), "superseded_by": memory_successor_id(memory=memory)}


def _update(request: HttpRequest, memory_id: int, payload: UpdateIn) -> Status[dict[str, Any]]:
    caller = caller_of(request)
    caller.require_write()
    memory_get(user=caller.user, memory_id=memory_id)
    new = memory_update(
        memory_id=memory_id,
        actor=caller.actor,
        content=payload.content,
        placard=payload.placard,
        kind=payload.kind,
        expected_version=payload.expected_version,
        reason=payload.reason,
        source=SOURCE,
    )
    return Status(201, memory_out(new))


@router.post("/{int:memory_id}/update", response={201: MemoryOut, **ERRORS})
def memories_update(request: HttpRequest, memory_id: int, payload: UpdateIn) -> Status[dict[str, Any]]:
    """Correct a memory: a new memory supersedes it (same slot, version + 1). Send `expected_version` to be
    told (409) when someone corrected it first. `PATCH /memories/{id}` does the same."""
    return _update(request, memory_id, payload)


@router.patch("/{int:memory_id}", response={201: MemoryOut, **ERRORS})
def memories_patch(request: HttpRequest, memory_id: int, payload: UpdateIn) -> Status[dict[str, Any]]:
    """Same as POST /memories/{id}/update."""
    return _update(request, memory_id, payload)


@router.post("/{int:memory_id}/forget", response={200: MemoryOut, **ERRORS})
def memories_forget(request: HttpRequest, memory_id: int, payload: ReasonIn) -> dict[str, Any]:
    """Soft-forget (restorable); `reason` becomes the epitaph."""
    caller = caller_of(request)
    caller.require_write()
    memory = memory_get(user=caller.user, memory_id=memory_id)
    return memory_out(memory_forget(memory_id=memory.pk, actor=caller.actor, reason=payload.reason))


@router.post("/{int:memory_id}/restore", response={200: MemoryOut, **ERRORS})
def memories_restore(request: HttpRequest, memory_id: int, payload: ReasonIn) -> dict[str, Any]:
    """Bring a forgotten or archived memory back to active."""
    caller = caller_of(request)
    caller.require_write()
    memory = memory_get(user=caller.user, memory_id=memory_id)
    return memory_out(memory_restore(memory_id=memory.pk, actor=caller.actor, reason=payload.reason))


@router.post("/{int:memory_id}/report", response={200: MemoryOut, **ERRORS})
def memories_report(request: HttpRequest, memory_id: int, payload: ReportIn) -> dict[str, Any]:
    """Report whether acting on a memory worked: success +0.05, failure −0.1 confidence."""
    caller = caller_of(request)
    caller.require_write()
    memory = memory_get(user=caller.user, memory_id=memory_id)
    return memory_out(
        memory_report(memory_id=memory.pk, actor=caller.actor, outcome=payload.outcome, note=payload.note)
    )


@router.post("/{int:memory_id}/checkout", response={201: MemoryOut, **ERRORS})
def memories_checkout(request: HttpRequest, memory_id: int, payload: ReasonIn) -> Status[dict[str, Any]]:
    """Bring back an earlier (superseded) version: a new current version with its content supersedes the current
    one; the history is kept. 409 when it is already current or the current version is forgotten."""
    caller = caller_of(request)
    caller.require_write()
    memory = memory_get(user=caller.user, memory_id=memory_id)
    new = memory_checkout(memory_id=memory.pk, actor=caller.actor, reason=payload.reason, source=SOURCE)
    return Status(201, memory_out(new))


@router.post("/{int:memory_id}/distill-undo", response={200: DistillUndoOut, **ERRORS})
def memories_distill_undo(request: HttpRequest, memory_id: int, payload: ReasonIn) -> dict[str, Any]:
    """Undo the distillation that wrote this rule: its members active again, the rule archived with the reason."""
    caller = caller_of(request)
    caller.require_write()
    memory = memory_get(user=caller.user, memory_id=memory_id)
    done = distill_revert(rule_id=memory.pk, actor=caller.actor, reason=payload.reason)
    return {"rule": memory_out(done.rule), "restored": done.restored}
