"""Reading a palace's entities: the list (kind filter, name/alias search, memory counts, last mentioned) and one entity
with the memories linked to it. REST and the Entities view read through here.

Palaces are resolved through palace.selectors, never here: `palace_ids` is what the caller's access check returned.
Merged entities (tombstones with `merged_into`) are left out of lists; fetched by id they still answer, so an old
link leads to the survivor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import BooleanField, Case, CharField, Count, F, Func, Q, QuerySet, Value, When
from django.db.models.expressions import OrderBy

from memory.knowledge.rules import name_key
from memory.models import Entity, Memory, MemoryEntity
from palace.errors import InvalidInput, NotFound
from palace.selectors import palaces_readable

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser | None

ORDERS = ("recent", "name", "count")  # last mentioned first; by name; most linked memories first
MAX_PAGE = 200
SEARCH_CHARS = 200


def entity_list(
    *,
    palace_ids: Sequence[int],
    kind: str | None = None,
    q: str = "",
    order: str = "recent",
    besides: int | None = None,
) -> QuerySet[Entity]:
    """The live entities of these palaces (each with its palace) with `memory_count`, filtered by kind and by `q` (a
    substring of the normalised name or of any normalised alias; prefix matches of the name come first), in
    `order`; all but `besides` when given (the choices to merge an entity into)."""
    if order not in ORDERS:
        raise InvalidInput(f"order is one of {', '.join(ORDERS)}", field="order")
    rows = Entity.objects.filter(palace_id__in=list(palace_ids), merged_into__isnull=True).select_related("palace")
    if besides is not None:
        rows = rows.exclude(pk=besides)
    if kind and "\x00" in kind:  # no kind holds NUL (PostgreSQL cannot even compare it)
        return rows.none().annotate(memory_count=Count("memory_links"))
    if kind:
        rows = rows.filter(kind=kind)
    rows = rows.annotate(memory_count=Count("memory_links"))
    ordering: list[Any] = []
    needle = name_key(q[:SEARCH_CHARS]) if q else ""
    if needle:
        # One string per row holding every alias key, so a substring of any alias matches (a unit separator keeps
        # a match from spanning two aliases).
        joined = Func(F("alias_keys"), Value("\x1f"), function="array_to_string", output_field=CharField())
        rows = rows.annotate(alias_text=joined).filter(Q(key__contains=needle) | Q(alias_text__contains=needle))
        ordering.append(_prefix_first(needle))
    if order == "name":
        ordering += ["key", "pk"]
    elif order == "count":
        ordering += [F("memory_count").desc(), "key", "pk"]
    else:
        ordering += [F("last_mentioned_at").desc(nulls_last=True), "key", "pk"]
    return rows.order_by(*ordering)


def _prefix_first(needle: str) -> OrderBy:
    """An ordering expression: entities whose name starts with the search first."""
    return Case(When(key__startswith=needle, then=Value(0)), default=Value(1), output_field=BooleanField()).asc()


def entity_get(*, user: User, entity_id: int) -> Entity:
    """One entity the user may read (with its palace and, when merged, its survivor); NotFound when it does not
    exist or is invisible."""
    row = (
        Entity.objects.filter(palace__in=palaces_readable(user=user).values("pk"), pk=entity_id)
        .select_related("palace", "merged_into")
        .annotate(memory_count=Count("memory_links"))
        .first()
    )
    if row is None:
        raise NotFound("entity not found")
    return row


@dataclass
class LinkedPage:
    items: list[Memory]
    offset: int
    next_offset: int | None


def entity_memories(*, entity: Entity, offset: int = 0, limit: int = 50) -> LinkedPage:
    """The memories linked to an entity (already resolved for reading), newest first, with their slots; one page."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit is 1..{MAX_PAGE}", field="limit")
    if offset < 0:
        raise InvalidInput("offset is 0 or more", field="offset")
    linked = MemoryEntity.objects.filter(entity=entity).values("memory_id")
    rows = list(
        Memory.objects.filter(pk__in=linked)
        .select_related("slot__room")
        .defer("embedding", "search_vector", "search_text")
        .order_by("-created_at", "-pk")[offset : offset + limit + 1]
    )
    more = len(rows) > limit
    return LinkedPage(items=rows[:limit], offset=offset, next_offset=offset + limit if more else None)


def entity_kinds(*, palace_ids: Sequence[int]) -> list[str]:
    """The kinds in use among these palaces' live entities, with the standard ones, for a filter."""
    used = set(
        Entity.objects.filter(palace_id__in=list(palace_ids), merged_into__isnull=True)
        .values_list("kind", flat=True)
        .distinct()
    )
    return [*Entity.Kind.values, *sorted(used - set(Entity.Kind.values))]
