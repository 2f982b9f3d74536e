"""REST door to the entity lexicon: list a palace's entities (kind filter, name/alias search, paged by ninja's
limit/offset pagination), one entity with the memories linked to it, and the writer's corrections — merge, rename,
edit aliases (memory.knowledge.services; owners and editors only).

Palaces are addressed by `palace` (id) or `project` (a git origin) like the other routers; neither lists every
palace the caller may read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, get_type_hints

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.pagination import paginate
from pydantic import ConfigDict

from api.auth import caller_of
from api.pagination import MAX_LIMIT, MAX_OFFSET, BoundedLimitOffset
from api.schemas import ErrorOut, MemoryRowOut, ProjectOrigin, memory_row_out
from memory.knowledge import entity_aliases_edit, entity_get, entity_list, entity_memories, entity_merge, entity_rename
from memory.models import Entity
from palace.errors import InvalidInput
from palace.selectors import palace_get, palace_ids_readable

router = Router(tags=["entities"])

ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}


class _Strict(Schema):
    model_config = ConfigDict(extra="forbid")


class EntityRowOut(Schema):
    id: int
    palace: int
    name: str
    kind: str
    aliases: list[str]
    memory_count: int
    last_mentioned_at: datetime | None
    created_at: datetime
    merged_into: int | None

    # The list returns model rows (ninja paginates the queryset), the other routes entity_out's dicts.
    @staticmethod
    def resolve_palace(obj: Any) -> int:
        return int(obj["palace"] if isinstance(obj, dict) else obj.palace_id)

    @staticmethod
    def resolve_merged_into(obj: Any) -> int | None:
        return obj["merged_into"] if isinstance(obj, dict) else obj.merged_into_id


class EntityLinkedPageOut(Schema):
    items: list[MemoryRowOut]
    offset: int
    next_offset: int | None


class EntityDetailOut(EntityRowOut):
    memories: EntityLinkedPageOut


class EntityListQuery(Schema):
    palace: int | None = None
    project: ProjectOrigin | None = None
    kind: str | None = Field(default=None, max_length=32)
    q: str = Field(default="", max_length=200, description="a substring of the name or of an alias (normalised)")
    order: Literal["recent", "name", "count"] = "recent"


class EntityDetailQuery(Schema):
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT)


class EntityMergeIn(_Strict):
    into: int = Field(description="the entity that survives; this one's name, aliases, links and facts move to it")
    reason: str = Field(default="", max_length=500)


class EntityMergeOut(Schema):
    survivor: EntityRowOut
    merged: int
    moved_links: int
    dropped_links: int
    facts: int
    aliases_added: list[str]


class EntityRenameIn(_Strict):
    name: str = Field(min_length=1, max_length=200)
    reason: str = Field(default="", max_length=500)


Alias = Annotated[str, Field(min_length=1, max_length=200)]


class EntityAliasesIn(_Strict):
    add: list[Alias] = Field(default_factory=list, max_length=50)
    remove: list[Alias] = Field(default_factory=list, max_length=50)
    reason: str = Field(default="", max_length=500)


def entity_out(e: Entity) -> dict[str, Any]:
    return {
        "id": e.pk,
        "palace": e.palace_id,
        "name": e.name,
        "kind": e.kind,
        "aliases": list(e.aliases),
        "memory_count": getattr(e, "memory_count", 0),
        "last_mentioned_at": e.last_mentioned_at,
        "created_at": e.created_at,
        "merged_into": e.merged_into_id,
    }


def _annotations_resolved(view: Callable[..., Any]) -> Callable[..., Any]:
    """Evaluate the view's string annotations here: ninja's `paginate` wrapper re-reads them in its own module,
    where `Query` and this module's schemas are not defined (this module has `from __future__ import annotations`)."""
    view.__annotations__ = get_type_hints(view, include_extras=True)
    return view


@router.get("", response={200: list[EntityRowOut], **ERRORS})
@paginate(BoundedLimitOffset)
@_annotations_resolved
def entities_list(request: HttpRequest, filters: Query[EntityListQuery]) -> QuerySet[Entity]:
    """Entities of a palace (or of every palace you may read), last mentioned first, with their memory counts.
    Page with `limit` and `offset`; `count` is the total."""
    caller = caller_of(request)
    if filters.palace is not None and filters.project is not None:
        raise InvalidInput("give palace or project, not both")
    if filters.palace is not None or filters.project is not None:
        palace_ids = [palace_get(user=caller.user, palace_id=filters.palace, origin=filters.project).pk]
    else:
        palace_ids = palace_ids_readable(user=caller.user)
    return entity_list(palace_ids=palace_ids, kind=filters.kind, q=filters.q, order=filters.order)


@router.get("/{int:entity_id}", response={200: EntityDetailOut, **ERRORS})
def entities_get(request: HttpRequest, entity_id: int, page: Query[EntityDetailQuery]) -> dict[str, Any]:
    """One entity with the memories linked to it, newest first (`offset`/`limit`; `next_offset` null at the end).
    A merged entity answers with `merged_into` set and no memories of its own."""
    caller = caller_of(request)
    entity = entity_get(user=caller.user, entity_id=entity_id)
    linked = entity_memories(entity=entity, offset=page.offset, limit=page.limit)
    return {
        **entity_out(entity),
        "memories": {
            "items": [memory_row_out(m) for m in linked.items],
            "offset": linked.offset,
            "next_offset": linked.next_offset,
        },
    }


@router.post("/{int:entity_id}/merge", response={200: EntityMergeOut, **ERRORS})
def entities_merge(request: HttpRequest, entity_id: int, payload: EntityMergeIn) -> dict[str, Any]:
    """Merge this entity into `into` (same palace): aliases union (with this one's name), links moved, facts
    re-pointed; this one stays as a tombstone with `merged_into`. Owners and editors."""
    caller = caller_of(request)
    caller.require_write()
    result = entity_merge(entity_id=entity_id, into_id=payload.into, actor=caller.actor, reason=payload.reason)
    return {
        "survivor": entity_out(entity_get(user=caller.user, entity_id=result.survivor.pk)),
        "merged": result.merged.pk,
        "moved_links": result.moved_links,
        "dropped_links": result.dropped_links,
        "facts": result.facts,
        "aliases_added": result.aliases_added,
    }


@router.post("/{int:entity_id}/rename", response={200: EntityRowOut, **ERRORS})
def entities_rename(request: HttpRequest, entity_id: int, payload: EntityRenameIn) -> dict[str, Any]:
    """A new canonical name; the old one becomes an alias. 409 when another entity has that name or alias."""
    caller = caller_of(request)
    caller.require_write()
    entity_rename(entity_id=entity_id, name=payload.name, actor=caller.actor, reason=payload.reason)
    return entity_out(entity_get(user=caller.user, entity_id=entity_id))


@router.post("/{int:entity_id}/aliases", response={200: EntityRowOut, **ERRORS})
def entities_aliases(request: HttpRequest, entity_id: int, payload: EntityAliasesIn) -> dict[str, Any]:
    """Add and remove aliases. 409 when an added alias belongs to another entity; 422 when a removed one is not
    this entity's."""
    caller = caller_of(request)
    caller.require_write()
    entity_aliases_edit(
        entity_id=entity_id, actor=caller.actor, add=payload.add, remove=payload.remove, reason=payload.reason
    )
    return entity_out(entity_get(user=caller.user, entity_id=entity_id))
