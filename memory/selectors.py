"""Reading memories. Every read resolves palaces through palace.selectors: invisible answers like nonexistent."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from memory.models import Memory
from palace.errors import InvalidInput, NotFound
from palace.models import Palace
from palace.selectors import palaces_readable

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    User = AbstractBaseUser | AnonymousUser | None

MAX_PAGE = 200
STATUSES = tuple(Memory.Status.values)


def _visible(user: User) -> QuerySet[Memory]:
    return Memory.objects.filter(palace__in=palaces_readable(user=user).values("pk"))


def memory_get(*, user: User, memory_id: int) -> Memory:
    """One memory the user may read (with its palace and slot); NotFound when it does not exist or is invisible."""
    memory = _visible(user).select_related("palace", "slot__room").filter(pk=memory_id).first()
    if memory is None:
        raise NotFound("memory not found")
    return memory


@dataclass
class MemoryPage:
    items: list[Memory]
    next_cursor: str | None


def _encode_cursor(memory: Memory) -> str:
    raw = f"{memory.created_at.isoformat()}|{memory.pk}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, pk = raw.rsplit("|", 1)
        return datetime.fromisoformat(stamp), int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("cursor is not one this server issued", field="cursor") from exc


def memory_list(
    *,
    user: User,
    palaces: list[Palace] | None = None,
    kind: str | None = None,
    room: str | int | None = None,
    status: str | None = "active",
    cursor: str | None = None,
    limit: int = 50,
) -> MemoryPage:
    """Memories of `palaces` (default: every palace the user may read), newest first, keyset-paginated.

    The cursor is opaque ((created_at, id) of the last row), so a page costs the same at row 100,000 as at row 1:
    the `memory_palace_status_time` index serves the order and the cursor comparison. `status=None` lists every
    status. `room` is a room id or its name ("Fact Hall-2").
    """
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit is 1..{MAX_PAGE}", field="limit")
    if kind is not None and kind not in Memory.Kind.values:
        raise InvalidInput(f"kind must be one of {', '.join(Memory.Kind.values)}", field="kind")
    if status is not None and status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}", field="status")
    readable = palaces_readable(user=user)
    if palaces is not None:
        readable = readable.filter(pk__in=[p.pk for p in palaces])
    palace_ids = sorted(readable.values_list("pk", flat=True))
    qs = Memory.objects.all()
    if status is not None:
        qs = qs.filter(status=status)
    if kind is not None:
        qs = qs.filter(kind=kind)
    if room is not None:
        qs = qs.filter(slot__room_id=room) if isinstance(room, int) else qs.filter(slot__room__name=room)
    if cursor:
        stamp, pk = _decode_cursor(cursor)
        # A range on created_at the index can serve, then the tie on the same instant broken by id.
        qs = qs.filter(created_at__lte=stamp).exclude(created_at=stamp, pk__gte=pk)
    order = ("-created_at", "-id")
    if len(palace_ids) <= 1:
        rows = list(qs.filter(palace_id__in=palace_ids).select_related("slot__room").order_by(*order)[: limit + 1])
    else:
        # One index range scan per palace, merged: "palace_id IN (...) ORDER BY created_at" cannot use the
        # (palace, status, created_at) index for order and sorts every matching row (~100 ms at 100k rows).
        parts = [
            qs.filter(palace_id=pid).order_by(*order).values_list("id", "created_at")[: limit + 1] for pid in palace_ids
        ]
        merged = parts[0].union(*parts[1:], all=True).order_by(*order)[: limit + 1]
        ids = [pk for pk, _ in merged]
        by_id = Memory.objects.select_related("slot__room").in_bulk(ids)
        rows = [by_id[pk] for pk in ids]
    more = len(rows) > limit
    rows = rows[:limit]
    return MemoryPage(items=rows, next_cursor=_encode_cursor(rows[-1]) if more and rows else None)


def memory_supersede_chain(*, user: User, memory_id: int) -> list[Memory]:
    """The correction history of a memory, newest first: its successors, itself, its predecessors."""
    memory = memory_get(user=user, memory_id=memory_id)
    newer: list[Memory] = []
    cursor: Memory | None = memory
    seen = {memory.pk}
    while cursor is not None:
        cursor = Memory.objects.filter(supersedes_id=cursor.pk).first()
        if cursor is None or cursor.pk in seen:
            break
        seen.add(cursor.pk)
        newer.append(cursor)
    older: list[Memory] = []
    previous_id = memory.supersedes_id
    while previous_id is not None and previous_id not in seen:
        previous = Memory.objects.filter(pk=previous_id).first()
        if previous is None:
            break
        seen.add(previous.pk)
        older.append(previous)
        previous_id = previous.supersedes_id
    return [*reversed(newer), memory, *older]


def memory_sources(*, user: User, memory_id: int) -> list[dict[str, Any]]:
    """Every source a memory absorbed (its own first, then each merged restatement), oldest first."""
    return list(memory_get(user=user, memory_id=memory_id).sources)
