"""REST door to facts: `POST /api/v1/facts` writes up to 50 (as MCP memory_facts' write mode), `GET /api/v1/facts`
asks what was true (`as_of`, world time) and what Atrium knew (`known_at`, record time) about one entity.

Writes go to the palace named by `palace` (id) or `project` (a git origin), else the caller's personal palace; they
need an owner or editor and a write token. Queries read every palace the caller may read, or the one named.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from api.auth import caller_of
from api.schemas import ErrorOut, Instant, ProjectOrigin, zone_note
from memory.knowledge import MAX_FACTS, FactsQueryResult, FactView, facts_query, facts_write
from memory.models import Entity
from palace.errors import InvalidInput
from palace.selectors import palace_get, palace_labels

router = Router(tags=["facts"])

ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 422: ErrorOut}


class FactsIn(Schema):
    model_config = ConfigDict(extra="forbid")

    # Entries are checked one by one by the service (a bad one is reported in `failed`, the rest are written).
    facts: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_FACTS,
        description="each: entity (name) or entityId, content, optional predicate, kind, replaces (fact id), "
        "valid_from (ISO date)",
    )
    palace: int | None = None
    project: ProjectOrigin | None = None


class FactsQueryIn(Schema):
    model_config = ConfigDict(extra="forbid")

    entity: str | None = Field(default=None, max_length=200)
    entity_id: int | None = Field(default=None, ge=1, le=2**63 - 1)
    as_of: Instant | None = None
    known_at: Instant | None = None
    include_invalid: bool = False
    palace: int | None = None
    project: ProjectOrigin | None = None


class FactEntityOut(Schema):
    id: int
    name: str
    kind: str
    palace: int
    aliases: list[str]


class FactOut(Schema):
    id: int
    entity_id: int
    predicate: str
    content: str
    valid_from: datetime | None
    valid_to: datetime | None = Field(description="as known at known_at (null: still true)")
    recorded_at: datetime
    superseded_at: datetime | None = Field(description="as known at known_at (null: not replaced then)")
    replaces: int | None
    replaced_by: int | None
    state: str = Field(description="current | ended | replaced | not_yet_valid")
    also_current: list[int] = Field(description="other current facts of the entity with the same predicate")


class WrittenOut(Schema):
    index: int
    id: int
    entity_id: int
    entity_created: bool
    replaces: int | None
    alongside: list[int] = Field(
        description="current facts of the entity with the same predicate, true beside this one; if this one "
        "replaces one, send it again with replaces=<that id> (no copy is made)"
    )
    adopted: bool = Field(description="replaces named a fact and this identical current fact became its successor")


class FailedOut(Schema):
    index: int
    reason: str
    candidates: list[FactEntityOut]


class FactsWriteOut(Schema):
    palace: int
    written: list[WrittenOut]
    failed: list[FailedOut]


class FactsQueryOut(Schema):
    entity: FactEntityOut | None
    facts: list[FactOut]
    candidates: list[FactEntityOut] = Field(description="the name is ambiguous: ask again with entity_id")
    suggestions: list[FactEntityOut] = Field(description="no entity by that name (none created): did you mean")
    as_of: datetime | None
    known_at: datetime | None
    time_zone_note: str | None = Field(
        default=None, description="which date arguments had no time zone, and the zone they were read in"
    )
    hidden: int = Field(description="ended or replaced facts not shown (include_invalid lists them)")


def _palace_ids(request: HttpRequest, palace: int | None, project: str | None) -> list[int]:
    caller = caller_of(request)
    if palace is not None and project is not None:
        raise InvalidInput("give palace or project, not both")
    if palace is None and project is None:
        return list(palace_labels(user=caller.user))
    return [palace_get(user=caller.user, palace_id=palace, origin=project).pk]


def _entity(entity: Entity) -> dict[str, Any]:
    aliases = [str(a) for a in entity.aliases or []]
    return {"id": entity.pk, "name": entity.name, "kind": entity.kind, "palace": entity.palace_id, "aliases": aliases}


def fact_dict(view: FactView) -> dict[str, Any]:
    fact = view.fact
    return {
        "id": fact.pk,
        "entity_id": fact.entity_id,
        "predicate": fact.predicate,
        "content": fact.content,
        "valid_from": fact.valid_from,
        "valid_to": view.valid_to,
        "recorded_at": fact.recorded_at,
        "superseded_at": view.superseded_at,
        "replaces": fact.replaces_id,
        "replaced_by": view.replaced_by,
        "state": view.state,
        "also_current": view.also_current,
    }


def _query_out(result: FactsQueryResult) -> dict[str, Any]:
    return {
        "entity": _entity(result.entity) if result.entity is not None else None,
        "facts": [fact_dict(v) for v in result.facts],
        "candidates": [_entity(e) for e in result.candidates],
        "suggestions": [_entity(e) for e in result.suggestions],
        "as_of": result.as_of,
        "known_at": result.known_at,
        "hidden": result.hidden,
    }


@router.post("", response={200: FactsWriteOut, **ERRORS})
def facts_post(request: HttpRequest, payload: FactsIn) -> dict[str, Any]:
    """Write up to 50 facts. `replaces` ends only the fact it names (at the new one's valid_from, or now); an
    entity named for the first time is created. Each bad entry is reported in `failed` with its reason."""
    caller = caller_of(request)
    caller.require_write()
    if payload.palace is not None and payload.project is not None:
        raise InvalidInput("give palace or project, not both")
    palace = palace_get(user=caller.user, palace_id=payload.palace, origin=payload.project, write=True)
    result = facts_write(palace=palace, actor=caller.actor, facts=payload.facts)
    return {
        "palace": palace.pk,
        "written": [
            {
                "index": w.index,
                "id": w.fact.pk,
                "entity_id": w.fact.entity_id,
                "entity_created": w.entity_created,
                "replaces": w.fact.replaces_id,
                "alongside": w.alongside,
                "adopted": w.adopted,
            }
            for w in result.written
        ],
        "failed": [
            {"index": f.index, "reason": f.reason, "candidates": [_entity(e) for e in f.candidates]}
            for f in result.failed
        ],
    }


@router.get("", response={200: FactsQueryOut, **ERRORS})
def facts_get(request: HttpRequest, params: Query[FactsQueryIn]) -> dict[str, Any]:
    """The facts of one entity (`entity` name or alias, or `entity_id`) true `as_of` a time, as Atrium knew them
    `known_at` a time; both default to now. No entity is created by asking."""
    palace_ids = _palace_ids(request, params.palace, params.project)
    result = facts_query(
        palace_ids=palace_ids,
        entity=params.entity,
        entity_id=params.entity_id,
        as_of=params.as_of,
        known_at=params.known_at,
        include_invalid=params.include_invalid,
    )
    return {**_query_out(result), "time_zone_note": zone_note(as_of=params.as_of, known_at=params.known_at)}
