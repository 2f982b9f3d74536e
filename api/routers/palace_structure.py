"""REST door to the palace's structure: the room directory, slots, tours (fixed and thematic), corridor
neighbours of a memory, the refurb list, and renaming an automatically opened room.

Every route resolves the palace through palace.selectors.palace_get: a palace the caller may not see is a 404.
"""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from api.auth import caller_of
from api.pagination import MAX_OFFSET
from api.schemas import ErrorOut
from memory.models import Memory
from memory.search import (
    TOUR_MAX_STOPS,
    TOUR_MIN_STOPS,
    TOUR_PAGE_MAX,
    current_by_slot,
    edge_neighbours,
    tour_fixed,
    tour_thematic,
)
from memory.selectors import MAX_PAGE, memory_get, refurb_list, room_directory
from memory.text import scrub_inbound_text
from palace.errors import InvalidInput, NotFound
from palace.selectors import palace_get
from palace.structure import room_get, room_in, room_rename, slots_page

router = Router(tags=["palace structure"])

ERRORS: dict[int, Any] = {401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}


class RoomOut(Schema):
    id: int
    name: str
    kind: str
    ordinal: int
    capacity: int
    slots_used: int
    active: int
    latest_placard: str


class StopMemoryOut(Schema):
    id: int
    kind: str
    placard: str
    status: str
    content: str


class SlotOut(Schema):
    id: int
    coordinate: str
    room: str
    number: int
    seq: int | None
    memory: StopMemoryOut | None  # what the slot holds now (the active memory, else its latest)


class SlotPageOut(Schema):
    items: list[SlotOut]
    next_cursor: str | None


class SlotQuery(Schema):
    room: str | None = None
    cursor: str | None = None
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)


class StopOut(Schema):
    seq: int
    coordinate: str
    memory: StopMemoryOut | None


class TourOut(Schema):
    mode: str
    total: int
    theme: str
    search_mode: str
    degraded: list[str]
    note: str
    stops: list[StopOut]


class TourQuery(Schema):
    mode: Literal["fixed", "thematic"] = "fixed"
    theme: str = ""
    stops: int = Field(default=5, ge=TOUR_MIN_STOPS, le=TOUR_MAX_STOPS)
    include_closed: bool = False
    offset: int = Field(default=0, ge=0, le=MAX_OFFSET)
    limit: int = Field(default=100, ge=1, le=TOUR_PAGE_MAX)


class NeighbourOut(Schema):
    memory: StopMemoryOut
    coordinate: str | None
    hops: int
    via: str
    direction: str
    from_id: int


class NeighboursOut(Schema):
    memory: int
    hops: int
    neighbours: list[NeighbourOut]


class RefurbItemOut(Schema):
    memory: int
    coordinate: str
    placard: str
    score: float
    unique: bool
    dated: bool
    distinct_prefix: bool
    hint: str


class RefurbOut(Schema):
    scanned: bool
    reason: str
    active: int
    placarded: int
    threshold: float
    items: list[RefurbItemOut]


class RenameIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str


def _memory_out(m: Memory | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"id": m.pk, "kind": m.kind, "placard": m.placard, "status": m.status, "content": m.content}


@router.get("/{int:palace_id}/rooms", response={200: list[RoomOut], **ERRORS})
def rooms_directory(request: HttpRequest, palace_id: int) -> list[dict[str, Any]]:
    """The room directory: every room with the slots it has used, its active memories and its latest placard.
    Pick a room here, then search inside it with `room=`."""
    palace = palace_get(user=caller_of(request).user, palace_id=palace_id)
    return [vars(r) for r in room_directory(palace=palace)]


@router.patch("/{int:palace_id}/rooms/{int:room_id}", response={200: RoomOut, **ERRORS})
def rooms_rename(request: HttpRequest, palace_id: int, room_id: int, payload: RenameIn) -> dict[str, Any]:
    """Rename a room (an overflow room is opened as `<name>-2` and a person may want a better name)."""
    caller = caller_of(request)
    caller.require_write()
    palace = palace_get(user=caller.user, palace_id=palace_id, write=True)
    room = room_in(palace_ids=[palace.pk], room_id=room_id)
    if room is None:
        raise NotFound("room not found")
    # The entrance every written text takes (forged protocol tags, control characters, secrets): a room's name is
    # shown to every member's agent in coordinates and stats. palace/ sits below memory.text, so the door cleans.
    name = scrub_inbound_text(payload.name, one_line=True).text
    room_rename(palace=palace, room=room, name=name, actor=caller.actor)
    return next(vars(r) for r in room_directory(palace=palace) if r.id == room.pk)


@router.get("/{int:palace_id}/slots", response={200: SlotPageOut, **ERRORS})
def slots_list(request: HttpRequest, palace_id: int, q: Query[SlotQuery]) -> dict[str, Any]:
    """Slots in tour order (optionally of one room, by name), each with what it holds now, a page at a time:
    pass `next_cursor` back as `cursor` for the next page (as GET /memories does)."""
    palace = palace_get(user=caller_of(request).user, palace_id=palace_id)
    room = room_get(palace=palace, name=q.room) if q.room else None
    slots, next_cursor = slots_page(palace=palace, room=room, cursor=q.cursor, limit=q.limit)
    current = current_by_slot([s.pk for s in slots])
    items = [
        {
            "id": s.pk,
            "coordinate": s.coordinate,
            "room": s.room.name,
            "number": s.number,
            "seq": s.tour_stop.seq if hasattr(s, "tour_stop") else None,
            "memory": _memory_out(current.get(s.pk)),
        }
        for s in slots
    ]
    return {"items": items, "next_cursor": next_cursor}


@router.get("/{int:palace_id}/tour", response={200: TourOut, **ERRORS})
def tour(request: HttpRequest, palace_id: int, q: Query[TourQuery]) -> dict[str, Any]:
    """`mode=fixed` walks the whole palace in slot order (pages with offset/limit); `mode=thematic` plans 3–7
    `stops` around `theme` (a search, then route order)."""
    caller = caller_of(request)
    palace = palace_get(user=caller.user, palace_id=palace_id)
    if q.mode == "fixed":
        result = tour_fixed(palace=palace, include_closed=q.include_closed, offset=q.offset, limit=q.limit)
    else:
        if not q.theme.strip():
            raise InvalidInput("a thematic tour needs a theme", field="theme")
        result = tour_thematic(user=caller.user, palace=palace, theme=q.theme, stops=q.stops)
    return {
        "mode": result.mode,
        "total": result.total,
        "theme": result.theme,
        "search_mode": result.search_mode,
        "degraded": result.degraded,
        "note": result.note,
        "stops": [{"seq": s.seq, "coordinate": s.coordinate, "memory": _memory_out(s.memory)} for s in result.stops],
    }


@router.get("/{int:palace_id}/neighbours/{int:memory_id}", response={200: NeighboursOut, **ERRORS})
def neighbours(request: HttpRequest, palace_id: int, memory_id: int, hops: int = 1) -> dict[str, Any]:
    """A corridor walk: memories 1–3 `hops` from this one over its edges, nearest first."""
    user = caller_of(request).user
    palace = palace_get(user=user, palace_id=palace_id)
    memory = memory_get(user=user, memory_id=memory_id)
    if memory.palace_id != palace.pk:
        raise NotFound("memory not found")
    found = edge_neighbours(memory=memory, hops=hops)
    return {
        "memory": memory.pk,
        "hops": hops,
        "neighbours": [
            {
                "memory": _memory_out(n.memory),
                "coordinate": n.memory.slot.coordinate if n.memory.slot is not None else None,
                "hops": n.hops,
                "via": n.via,
                "direction": n.direction,
                "from_id": n.from_id,
            }
            for n in found
        ],
    }


@router.get("/{int:palace_id}/refurb", response={200: RefurbOut, **ERRORS})
def refurb(request: HttpRequest, palace_id: int) -> dict[str, Any]:
    """Placards that score low (unique +0.4, dated +0.3, no 6-character prefix clash in the room +0.3), worst
    first, with rewrite hints. A palace with fewer than 8 active memories is not scanned (`scanned: false`)."""
    palace = palace_get(user=caller_of(request).user, palace_id=palace_id)
    result = refurb_list(palace=palace)
    return {
        "scanned": result.scanned,
        "reason": result.reason,
        "active": result.active,
        "placarded": result.placarded,
        "threshold": result.threshold,
        "items": [
            {
                "memory": i.memory.pk,
                "coordinate": i.coordinate,
                "placard": i.memory.placard,
                "score": i.score.score,
                "unique": i.score.unique,
                "dated": i.score.dated,
                "distinct_prefix": i.score.distinct_prefix,
                "hint": i.score.hint,
            }
            for i in result.items
        ],
    }
